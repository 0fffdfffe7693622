/**
 * The code card in a real JupyterLab: the embedded agent, connected with `--kernel-tools`,
 * calls the kernel's `run_code` tool over MCP (`@tool run_code {...}`); the code card shows the
 * code, highlighted, in the cell that owns the turn; Allow runs it in the kernel and its output
 * shows in the card (and goes back to the agent, whose tool call shows it too).
 */
import * as path from 'path';

import { expect, test } from './shared_page';

import {
  ARTIFACTS,
  BY_A_CLICK,
  cellOutput,
  FINAL_RECORD,
  LIVE_TURN,
  openNotebook
} from './notebook';

const CODE = [
  'import statistics',
  'values = [3, 1, 4, 1, 5, 9, 2, 6]',
  'mean = statistics.mean(values)  # <b>not bold</b>',
  'print(f"mean of {len(values)} values: {mean}")',
  '{"mean": mean, "max": max(values)}'
].join('\n');

/** The prompt line; a %%acp body fills in {name}, so its braces are doubled. */
const TOOL_LINE = '@tool run_code ' + JSON.stringify({ code: CODE }).replace(/[{}]/g, b => b + b);

const CONNECT = [
  'import os, sys, tempfile',
  'work = tempfile.mkdtemp(prefix="acp-ui-")',
  'os.chdir(work)',
  '%load_ext acp_notebook',
  '%acp connect --kernel-tools --name embedded --cwd {work} -- ' +
    '{sys.executable} -m acp_notebook.agent --data-dir {work}/.agent-data'
].join('\n');

const CONNECTED = "acp: connected 'embedded'";

test.describe('the code card', () => {
  test('shows the code highlighted; Allow runs it and shows its output', async ({
    page,
    tmpPath
  }) => {
    await openNotebook(page, tmpPath, 'code.ipynb', [
      CONNECT,
      `%%acp\nLet me look at the values.\n${TOOL_LINE}`,
      'print(values, mean)'
    ]);
    await page.notebook.runCell(0);
    await expect(cellOutput(page, 0)).toContainText(CONNECTED);

    await page.notebook.runCell(1, { wait: false });
    const live = cellOutput(page, 1).locator(LIVE_TURN);
    const card = live.locator('.acp-code-card');
    await expect(card).toHaveCount(1);
    await expect(card.locator('.acp-card-title')).toContainText('asks to run code in the kernel');
    const source = card.locator('pre.acp-code-source');
    await expect(source).toContainText('statistics.mean(values)');
    await expect(source).toContainText('<b>not bold</b>'); // shown as text, never as markup
    await expect(source.locator('b')).toHaveCount(0);
    expect(await source.locator('span[style]').count()).toBeGreaterThan(5); // highlighted
    await card.scrollIntoViewIfNeeded();
    await card.screenshot({ path: path.join(ARTIFACTS, 'code-card.png') });

    await card.getByRole('button', { name: 'Allow', exact: true }).click();
    const output = card.locator('pre.acp-code-output');
    await expect(output).toContainText('mean of 8 values: 3.875');
    await expect(output).toContainText("{'mean': 3.875, 'max': 9}");
    await expect(card.locator('.acp-card-decision')).toContainText(`Allowed - ${BY_A_CLICK}; ran`);
    await expect(card.getByRole('button', { name: 'Allow', exact: true })).toBeDisabled();
    await card.screenshot({ path: path.join(ARTIFACTS, 'code-card-ran.png') });

    // The agent got the output: its tool call shows it, and the turn ends.
    // the final transcript (while the turn runs, the record slot holds a running one too)
    const done = cellOutput(page, 1).locator(FINAL_RECORD);
    await expect(done).toHaveCount(1);
    await expect(done).toContainText('mean of 8 values: 3.875');
    await cellOutput(page, 1).screenshot({ path: path.join(ARTIFACTS, 'code-card-turn.png') });
    await page.notebook.runCell(2);
    await expect(cellOutput(page, 2)).toContainText('[3, 1, 4, 1, 5, 9, 2, 6] 3.875');
  });
});
