/**
 * The code card in a real JupyterLab: the agent's `run_code` (here asked from a thread in the
 * kernel with `_kernel_code.request_code`, as the kernel tools' MCP server asks it) shows the
 * code, highlighted, in the cell that owns the turn; Allow runs it in the kernel and its output
 * shows in the card. The turn is held open by a permission card (`$ echo held`).
 */
import * as path from 'path';

import { expect, test } from '@jupyterlab/galata';

import { ARTIFACTS, cellOutput, openNotebook } from './notebook';

const CODE = [
  'import statistics',
  'values = [3, 1, 4, 1, 5, 9, 2, 6]',
  'mean = statistics.mean(values)  # <b>not bold</b>',
  'print(f"mean of {len(values)} values: {mean}")',
  '{"mean": mean, "max": max(values)}'
].join('\n');

const CONNECT = [
  'import os, sys, tempfile, threading',
  'work = tempfile.mkdtemp(prefix="acp-ui-")',
  'os.chdir(work)',
  '%load_ext acp_notebook',
  '%acp connect --name embedded --cwd {work} -- ' +
    '{sys.executable} -m acp_notebook.agent --data-dir {work}/.agent-data',
  'from acp_notebook._kernel_code import request_code',
  "nb = get_ipython().magics_manager.registry['AcpMagics'].notebook",
  'asked = {}',
  'def started(run):',
  '    sid = run.session.id',
  `    threading.Thread(target=lambda: asked.setdefault("f", request_code(nb, sid, ${JSON.stringify(CODE)}))).start()`,
  "nb.events.subscribe('turn_started', started)"
].join('\n');

const CONNECTED = "acp: connected 'embedded'";

test.describe('the code card', () => {
  test('shows the code highlighted; Allow runs it and shows its output', async ({
    page,
    tmpPath
  }) => {
    await openNotebook(page, tmpPath, 'code.ipynb', [
      CONNECT,
      '%%acp\nLet me look at the values.\n$ echo held',
      'print(values, asked["f"].result(30).reason)'
    ]);
    await page.notebook.runCell(0);
    await expect(cellOutput(page, 0)).toContainText(CONNECTED);

    await page.notebook.runCell(1, { wait: false });
    const live = cellOutput(page, 1).locator('.acp-turn:not(.acp-turn-static)');
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
    await expect(card.locator('.acp-card-decision')).toContainText('Allowed - by a click; ran');
    await expect(card.getByRole('button', { name: 'Allow', exact: true })).toBeDisabled();
    await card.screenshot({ path: path.join(ARTIFACTS, 'code-card-ran.png') });

    // End the turn: reject the command that held it open.
    const permission = live.locator('.acp-card:not(.acp-code-card)');
    await permission.getByRole('button', { name: 'Reject', exact: true }).click();
    await expect(cellOutput(page, 1).locator('.acp-turn-static')).toHaveCount(1);
    await page.notebook.runCell(2);
    await expect(cellOutput(page, 2)).toContainText('[3, 1, 4, 1, 5, 9, 2, 6] allowed');
  });
});
