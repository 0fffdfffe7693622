/**
 * The classic notebook (nbclassic) with the acp-notebook nbextension (tests/test_browser.py's
 * server "classic": nbclassic, and a Jupyter path holding this build of it). The
 * nbextension is the AMD build of the same terminal view as the labextension, which VS Code also
 * loads for local kernels: live xterm.js rows, a card in its cell, one turn shown, no error box.
 * Plain Playwright: Galata drives JupyterLab only.
 */
import * as path from 'path';

import { expect, Locator, Page, test } from '@playwright/test';

import { ARTIFACTS, connectEmbedded, notebook } from './notebook';
import { NO_OWN_SERVER, ownServer } from './own_server';

const server = ownServer('classic');
test.use({ baseURL: server });
test.skip(!server, NO_OWN_SERVER);

const COMMAND = String.raw`printf 'alpha\nbravo\ncharlie\n'`;
const CELLS = [
  connectEmbedded(),
  ["%%acp --allow 'printf *'", `$ ${COMMAND}`].join('\n'),
  ['%%acp', '$ touch approved.txt'].join('\n'),
  [
    'from acp_notebook._magics import _notebook_of',
    'nb = _notebook_of(get_ipython())',
    "print('views', nb.extension, 'unstyled', nb.unstyled)",
    "print('approved', os.path.exists('approved.txt'))"
  ].join('\n'),
  '%acp panel'
];
const ERROR_BOX =
  /Failed to load model class|Error displaying widget|Click to show javascript error|not found in module/;

/** The output area of cell `index`. */
function output(page: Page, index: number): Locator {
  return page.locator('#notebook-container .cell').nth(index).locator('.output_wrapper');
}

/** Run cell `index` through the classic notebook's own API (as Shift-Enter does). */
async function run(page: Page, index: number): Promise<void> {
  await page.evaluate(i => {
    const jupyter = (
      window as unknown as { Jupyter: { notebook: { execute_cells(c: number[]): void } } }
    ).Jupyter;
    jupyter.notebook.execute_cells([i]);
  }, index);
}

test.describe('the classic notebook with the nbextension', () => {
  test('live terminal rows, a card that works, one turn, no error box', async ({
    page,
    request
  }) => {
    test.setTimeout(240000);
    const name = `classic-${Date.now()}.ipynb`;
    const put = await request.put(`/api/contents/${name}`, {
      data: { type: 'notebook', format: 'json', content: JSON.parse(notebook(CELLS)) }
    });
    expect(put.ok()).toBe(true);
    const errors: string[] = [];
    page.on('console', message => {
      if (message.type() === 'error') {
        errors.push(message.text());
      }
    });
    await page.goto(`/nbclassic/notebooks/${name}`);
    await page.waitForFunction(
      () => {
        const nb = (
          window as unknown as { Jupyter?: { notebook?: { kernel?: { is_connected(): boolean } } } }
        ).Jupyter?.notebook;
        return nb?.kernel?.is_connected() === true;
      },
      undefined,
      { timeout: 90000 }
    );

    await run(page, 0);
    await expect(output(page, 0)).toContainText("acp: connected 'embedded'", { timeout: 90000 });

    await run(page, 1);
    const turn = output(page, 1);
    const rows = turn.locator('.acp-turn:not(.acp-turn-static) .acp-terminal .xterm-rows');
    await expect(rows).toContainText('charlie', { timeout: 60000 });
    await expect(rows).toContainText('alpha');
    // the turn ended: the live view shows, its transcript is hidden by classic.css
    await expect(turn.locator('.acp-turn-static').first()).toBeAttached({ timeout: 60000 });
    await expect(turn.locator('.acp-turn:visible')).toHaveCount(1);
    await expect(turn).not.toContainText(ERROR_BOX);
    await page.screenshot({ path: path.join(ARTIFACTS, 'classic-terminal.png') });

    await run(page, 2);
    const asked = output(page, 2);
    const allow = asked.getByRole('button', { name: 'Allow once', exact: true });
    await expect(allow).toBeEnabled({ timeout: 60000 });
    await expect(asked.locator('.acp-card:visible')).toHaveCount(1);
    await allow.click();
    // the classic notebook sends the placeholder "username" in every header: nobody is named
    const decision = asked.locator('.acp-turn:not(.acp-turn-static) .acp-card-decision');
    await expect(decision).toHaveText('Approved: Allow once - by a click', { timeout: 60000 });
    await expect(asked.locator('.acp-turn:not(.acp-turn-static) .acp-terminal')).toHaveAttribute(
      'data-run',
      /ok|exited/,
      { timeout: 60000 }
    );

    // the cells after the turn run, and the kernel learnt what this front end renders
    await run(page, 3);
    await expect(output(page, 3)).toContainText('views True unstyled False', { timeout: 60000 });
    await expect(output(page, 3)).toContainText('approved True');
    await run(page, 4);
    await expect(output(page, 4)).toContainText('cannot show it', { timeout: 60000 });
    await expect(page.locator('#notebook-container')).not.toContainText(ERROR_BOX);
    expect(errors.filter(text => ERROR_BOX.test(text))).toEqual([]);
  });
});
