/**
 * `%%acp --with` in a real JupyterLab: before the prompt goes, the cell lists what is attached
 * (name, kind, size), each summary folded in a <details> that one click opens; markup in a
 * summary shows as text.
 */
import * as path from 'path';

import { expect, test } from './shared_page';

import { ARTIFACTS, cellOutput, openNotebook } from './notebook';

const CONNECT = [
  'import os, sys, tempfile',
  'import numpy as np, pandas as pd',
  'work = tempfile.mkdtemp(prefix="acp-ui-")',
  'os.chdir(work)',
  '%load_ext acp_notebook',
  '%acp connect --name embedded --cwd {work} -- ' +
    '{sys.executable} -m acp_notebook.agent --data-dir {work}/.agent-data',
  'sales = pd.DataFrame({"units": [120, None, 143], "<b>price</b>": [9.5, 9.75, 10.0]})',
  'arr = np.arange(12.0).reshape(3, 4)'
].join('\n');

test.describe('attached context', () => {
  test('is listed before sending, each summary folded until clicked', async ({
    page,
    tmpPath
  }) => {
    await openNotebook(page, tmpPath, 'context.ipynb', [
      CONNECT,
      '%%acp --with sales,arr\nWhich month sold most?'
    ]);
    await page.notebook.runCell(0);
    await expect(cellOutput(page, 0)).toContainText("acp: connected 'embedded'");

    await page.notebook.runCell(1);
    const attached = cellOutput(page, 1).locator('.acp-attached');
    await expect(attached).toHaveCount(1);
    await expect(attached).toContainText('Attached to this prompt (sent as text):');
    const items = attached.locator('details');
    await expect(items).toHaveCount(2);
    await expect(items.nth(0).locator('summary')).toContainText(
      'sales (dataframe, pandas.DataFrame):'
    );
    await expect(items.nth(1).locator('summary')).toContainText('arr (ndarray, numpy.ndarray):');
    // folded: the summaries are not shown until clicked
    for (const i of [0, 1]) {
      expect(await items.nth(i).getAttribute('open')).toBeNull();
      await expect(items.nth(i).locator('pre')).toBeHidden();
    }
    await attached.scrollIntoViewIfNeeded();
    await attached.screenshot({ path: path.join(ARTIFACTS, 'context-attached.png') });

    await items.nth(0).locator('summary').click();
    const summary = items.nth(0).locator('pre');
    await expect(summary).toBeVisible();
    await expect(summary).toContainText('3 rows x 2 columns');
    await expect(summary).toContainText('units: float64, 1 null');
    await expect(summary).toContainText('<b>price</b>'); // markup shown as text
    await expect(attached.locator('b')).toHaveCount(0);
    await expect(items.nth(1).locator('pre')).toBeHidden(); // the other stays folded
    await attached.screenshot({ path: path.join(ARTIFACTS, 'context-attached-open.png') });
    await cellOutput(page, 1).screenshot({ path: path.join(ARTIFACTS, 'context-cell.png') });
  });
});
