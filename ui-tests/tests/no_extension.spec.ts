/**
 * JupyterLab with the acp-notebook extension disabled (tests/test_browser.py's server "plain"
 * has a page config that disables it): what VS Code, Colab or nbclassic show, since
 * none of them loads our extension. The terminal's model cannot load there, so the kernel shows
 * terminals as text, keeps the running record empty and replaces the live view with the
 * transcript when the turn ends: a readable turn, shown once, without an error box.
 */
import * as path from 'path';

import { expect, test } from './galata';
import { NO_OWN_SERVER, ownServer } from './own_server';

import { ARTIFACTS, cellOutput, connectEmbedded, openNotebook } from './notebook';

const server = ownServer('plain');
test.use({ baseURL: server });
test.skip(!server, NO_OWN_SERVER);

const CONNECT = connectEmbedded(['import time']);

/** Waits (a condition, with a guard) until the kernel has decided about the extension. */
const DECIDED = [
  'from acp_notebook._magics import _notebook_of',
  'nb = _notebook_of(get_ipython())',
  'deadline = time.monotonic() + 60',
  'while nb.extension is None and time.monotonic() < deadline:',
  '    time.sleep(0.1)',
  "print('labextension here:', nb.extension)"
].join('\n');

const COMMAND = String.raw`printf 'alpha\nbravo\n'; sleep 2; printf 'omega\n'`;
const TURN = ["%%acp --allow 'printf *' --allow 'sleep *'", `$ ${COMMAND}`].join('\n');
const ASKED = ['%%acp', '$ touch approved.txt'].join('\n');
const ERROR_BOX =
  /Failed to load model class|Error displaying widget|Click to show javascript error/;

test.describe('without the acp-notebook extension', () => {
  test('terminals read as text, a card shows once, no error box', async ({ page, tmpPath }) => {
    test.setTimeout(240000);
    await openNotebook(page, tmpPath, 'plain.ipynb', [CONNECT, DECIDED, TURN, ASKED]);
    await page.notebook.runCell(0);
    await expect(cellOutput(page, 0)).toContainText("acp: connected 'embedded'");
    await page.notebook.runCell(1);
    await expect(cellOutput(page, 1)).toContainText('labextension here: False');

    await page.notebook.runCell(2, { wait: false });
    const turn = cellOutput(page, 2);
    // while it runs: the command's output as text in the live view
    await expect(turn.locator('.acp-terminal-body').first()).toContainText('alpha');
    await expect(turn).not.toContainText(ERROR_BOX);
    await expect(turn.locator('.acp-terminal-body').first()).toContainText('omega', {
      timeout: 60000
    });
    // once it ends: the transcript took the live view's place, one turn shown
    await expect(turn.locator('.acp-turn-static')).toHaveCount(1, { timeout: 60000 });
    await expect(turn.locator('.acp-turn')).toHaveCount(1);
    await expect(turn).not.toContainText(ERROR_BOX);

    await page.notebook.runCell(3, { wait: false });
    const asked = cellOutput(page, 3);
    const allow = asked.getByRole('button', { name: 'Allow once', exact: true });
    await expect(allow).toBeEnabled({ timeout: 60000 });
    await expect(asked.locator('.acp-card')).toHaveCount(1);
    await page.screenshot({ path: path.join(ARTIFACTS, 'no-extension-card.png') });
    await allow.click();
    await expect(asked.locator('.acp-turn-static')).toHaveCount(1, { timeout: 60000 });
    await expect(asked.locator('.acp-turn')).toHaveCount(1);
    await expect(asked.locator('.acp-card')).toHaveCount(1);
    await expect(asked).toContainText('Approved: Allow once');
    await expect(asked).not.toContainText(ERROR_BOX);
    await turn.screenshot({ path: path.join(ARTIFACTS, 'no-extension-turn.png') });
  });
});
