/**
 * Issue 25, finding 6, in a real JupyterLab: a command started by one cell runs on through the
 * next turn (tests/adversarial/agents/background_agent.py, mode "carry": claude-agent-acp's
 * shape). The later cell shows it only from where its own turn began, with a line that says so,
 * not the whole output again; the panel counts it as running and labels it running.
 */
import { expect, test } from './shared_page';

import { LIVE_TURN, cellOutput, openNotebook } from './notebook';

const CONNECT = [
  'import pathlib, sys, tempfile, acp_notebook',
  'work = tempfile.mkdtemp(prefix="acp-ui-")',
  'agent = pathlib.Path(acp_notebook.__file__).parents[1] / "tests" / "adversarial" / "agents" / "background_agent.py"',
  'python = sys.executable',
  '%load_ext acp_notebook',
  '%acp connect --name bg -- {python} {agent} carry {work}'
].join('\n');

test.describe('a command carried on by a later turn', () => {
  test('the later cell shows it from where it began; the panel says running', async ({
    page,
    tmpPath
  }) => {
    // a guard, not a sync: three cells and a background command, on a loaded CI machine
    test.setTimeout(240000);
    await openNotebook(page, tmpPath, 'carried.ipynb', [
      CONNECT,
      '%%acp\nstart the log',
      '%%acp\nhow is it going?'
    ]);
    await page.notebook.runCell(0);
    await expect(cellOutput(page, 0)).toContainText("acp: connected 'bg'");

    await page.notebook.runCell(1);
    const first = cellOutput(page, 1).locator(LIVE_TURN);
    const started = first.locator('.acp-terminal');
    await expect(started).toHaveAttribute('data-text', /^started\ntick 0/);
    await expect(started).toHaveAttribute('data-text', /tick 3/);

    await page.notebook.runCell(2);
    const later = cellOutput(page, 2).locator(LIVE_TURN);
    await expect(later.locator('.acp-footer')).toHaveText(/^finished/);
    const carried = later.locator('.acp-terminal');
    await expect(carried).toHaveCount(1);
    await expect(carried.locator('.acp-terminal-note')).toHaveText(
      'started in an earlier cell, which shows its output until this turn began'
    );
    // new output arrives here; what came before this turn began stays in the first cell
    await expect(carried).toHaveAttribute('data-text', /tick \d+/);
    const text = (await carried.getAttribute('data-text')) ?? '';
    expect(text).not.toContain('started');
    expect(text).not.toMatch(/^tick 0$/m);
    await expect(started).toHaveAttribute('data-text', /^started\ntick 0/);

    // the panel: both cells' views of the one command run, none of them "finished"
    await page.locator('li.lm-TabBar-tab[data-id="acp-notebook-panel"]').click();
    const panel = page.locator('#acp-notebook-panel');
    await expect(panel.locator('.acp-panel-section-title', { hasText: 'Terminals (' })).toHaveText(
      /^Terminals \(\d+ shown, \d+ running\)$/
    );
    const title = await panel
      .locator('.acp-panel-section-title', { hasText: 'Terminals (' })
      .innerText();
    const [, shown, running] = /(\d+) shown, (\d+) running/.exec(title)!;
    expect(Number(running)).toBe(Number(shown));
    expect(Number(running)).toBeGreaterThan(0);
    await expect(panel.locator('.acp-panel-terminal-label[data-state="finished"]')).toHaveCount(0);
  });
});
