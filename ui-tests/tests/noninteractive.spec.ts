/**
 * In JupyterLab (a widget front end: its widget manager opens ipywidgets' control comm), a card
 * gets no non-interactive timeout: it waits for a person, however small the default is set.
 */
import { expect, test } from './shared_page';

import { BY_A_CLICK, cellOutput, LIVE_TURN, openNotebook } from './notebook';

const CONNECT = [
  'import os, sys, tempfile',
  'work = tempfile.mkdtemp(prefix="acp-ui-")',
  'os.chdir(work)',
  'os.environ["ACP_NOTEBOOK_PERMISSION_TIMEOUT"] = "1"',
  '%load_ext acp_notebook',
  '%acp connect --name embedded --cwd {work} -- ' +
    '{sys.executable} -m acp_notebook.agent --data-dir {work}/.agent-data'
].join('\n');

test('a card in JupyterLab waits for a person, without the non-interactive timeout', async ({
  page,
  tmpPath
}) => {
  await openNotebook(page, tmpPath, 'interactive.ipynb', [CONNECT, '%%acp\n$ touch x.txt']);
  await page.notebook.runCell(0);
  await expect(cellOutput(page, 0)).toContainText("acp: connected 'embedded'");
  await page.notebook.runCell(1, { wait: false });
  const card = cellOutput(page, 1).locator(`${LIVE_TURN} .acp-card`);
  const reject = card.getByRole('button', { name: 'Reject', exact: true });
  await expect(reject).toBeEnabled();
  // Not a sync but what is tested: time passes and nothing decides the card. Three times the
  // 1 s a run without a front end would wait; a card with that timeout would show a countdown
  // at once and be cancelled within it.
  await page.waitForTimeout(3000);
  await expect(reject).toBeEnabled();
  await expect(card.locator('.acp-card-countdown')).toHaveCount(0);
  await reject.click();
  await expect(card.locator('.acp-card-decision')).toContainText(
    `Rejected: Reject - ${BY_A_CLICK}`
  );
});
