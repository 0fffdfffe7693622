/**
 * Issue 25, finding 3, in a real JupyterLab: an agent rewrites a 2,000-line file. The prompt
 * echo folds after a few lines, the 4,000-line diff starts folded with its `+N -M` summary, and
 * the card's buttons sit within the first screen of the cell (they were about 100 screens down).
 */
import * as path from 'path';

import { expect, test } from './shared_page';

import { ARTIFACTS, LIVE_TURN, cellOutput, openNotebook } from './notebook';

const LINES = 2000;

const SETUP = [
  'import os, sys, tempfile',
  'work = tempfile.mkdtemp(prefix="acp-ui-")',
  'os.chdir(work)',
  `open("big.py", "w").write("".join(f"value_{i} = {i}\\n" for i in range(${LINES})))`,
  '%load_ext acp_notebook',
  '%acp connect --name embedded --cwd {work} -- ' +
    '{sys.executable} -m acp_notebook.agent --data-dir {work}/.agent-data'
].join('\n');

const REWRITE = [
  '%%acp',
  'Double every value.',
  '```file path=big.py',
  ...Array.from({ length: LINES }, (_, i) => `value_${i} = ${i * 2}`),
  '```'
].join('\n');

const CHECK = 'print(open("big.py").read().splitlines()[-1])';

test.describe('a large edit', () => {
  test('folds its prompt and its diff, and keeps the buttons within a screen', async ({
    page,
    tmpPath
  }) => {
    test.setTimeout(180000);
    await page.setViewportSize({ width: 1200, height: 900 });
    await openNotebook(page, tmpPath, 'big-edit.ipynb', [SETUP, REWRITE, CHECK]);
    await page.notebook.runCell(0);
    await expect(cellOutput(page, 0)).toContainText("acp: connected 'embedded'");

    await page.notebook.runCell(1, { wait: false });
    const out = cellOutput(page, 1);
    const live = out.locator(LIVE_TURN);
    const allow = live.locator('.acp-card').getByRole('button', { name: 'Allow once', exact: true });
    await expect(allow).toBeEnabled();

    // the prompt echo: a few lines, the rest folded
    const prompt = live.locator('.acp-turn-prompt');
    await expect(prompt.locator('details.acp-prompt-more summary')).toHaveText(
      /^1,99\d more lines of the prompt$/
    );
    expect((await prompt.boundingBox())!.height).toBeLessThan(300);
    // the diff: folded, its summary says what changes where
    const fold = live.locator('details.acp-diff-big');
    await expect(fold).toHaveCount(1);
    await expect(fold).not.toHaveAttribute('open', /.*/);
    // (value_0 = 0 stays as it is: every other line changes)
    const changed = LINES - 1;
    await expect(fold.locator('summary')).toContainText(`big.py (+${changed} -${changed})`);

    // the buttons within the first screen of the cell's output
    await out.scrollIntoViewIfNeeded();
    const top = (await out.boundingBox())!.y;
    const button = (await allow.boundingBox())!;
    expect(button.y + button.height - top).toBeLessThan(900);
    await page.screenshot({ path: path.join(ARTIFACTS, 'big-edit-card.png') });

    // opened, the diff scrolls in its own box: the cell does not grow by 4,000 lines
    await fold.locator('summary').click();
    await expect(fold).toHaveAttribute('open', '');
    const box = (await fold.locator('.acp-diff').boundingBox())!;
    expect(box.height).toBeLessThan(600);

    await allow.click();
    await page.notebook.waitForRun(1);
    await page.notebook.runCell(2);
    await expect(cellOutput(page, 2)).toContainText(`value_${LINES - 1} = ${(LINES - 1) * 2}`);
  });
});
