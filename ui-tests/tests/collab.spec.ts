/**
 * Two people on one notebook with jupyter-collaboration: the second opens the notebook the first
 * is running, each in a browser of their own (Galata's newPage, with a user of its own). A card
 * the first person's cell asks shows live for both (the second trusted the notebook, as JupyterLab
 * renders no widget in an untrusted output); the second approves it, and both cards say the decision and
 * who made it (the labextension gives each kernel connection its user's name, which the kernel
 * reads from the click's message: src/identity.ts).
 */
import * as path from 'path';

import { expect, galata, test } from './galata';
import type { IJupyterLabPageFixture } from './galata';
import { NO_OWN_SERVER, ownServer } from './own_server';

import {
  ARTIFACTS,
  cellOutput,
  connectEmbedded,
  LIVE_TURN,
  openNotebook,
  openPath
} from './notebook';

const server = ownServer('collab');
test.use({ baseURL: server });
test.skip(!server, NO_OWN_SERVER);

const CONNECT = connectEmbedded();
const ASKED = ['%%acp', '$ touch approved.txt'].join('\n');
const AFTER = "print('approved', os.path.exists('approved.txt'))";

const BOB = {
  identity: {
    username: 'bob-0001',
    name: 'Bob',
    display_name: 'Bob',
    initials: 'B',
    color: 'var(--jp-collaborator-color2)'
  },
  permissions: {}
};

/**
 * Trust the active notebook, each wait bounded (Galata's `trust` goes through the command
 * palette, and its clicks wait without a limit of their own).
 */
async function trust(page: IJupyterLabPageFixture): Promise<void> {
  let settled = false;
  const done = page
    .evaluate(() => (window as any).jupyterapp.commands.execute('notebook:trust'))
    .then(() => {
      settled = true;
    });
  await page.locator('.jp-Dialog').getByRole('button', { name: 'Trust' }).click();
  // The trust command then saves the notebook, and with collaboration on the server saves the
  // shared document too: on a loaded machine this page's save can find the file newer than it
  // knew, and JupyterLab asks (File Changed; the flake hunt, stop 43). This page's document is
  // the shared one, so overwriting writes what the server holds. (The command's promise stays
  // pending while the dialog is open.)
  const changed = page.locator('.jp-Dialog').filter({ hasText: 'File Changed' });
  await expect
    .poll(async () => settled || (await changed.count()) > 0, { timeout: 60000 })
    .toBe(true);
  if (!settled) {
    await changed.getByRole('button', { name: 'Overwrite' }).click();
  }
  await done;
  await expect(page.locator('[data-icon="ui-components:trusted"]')).toHaveCount(1);
}

test.describe('two people on one notebook', () => {
  test('one approves, both cards say it and who', async ({
    page,
    browser,
    baseURL,
    tmpPath,
    waitForApplication
  }) => {
    test.setTimeout(300000);
    await openNotebook(page, tmpPath, 'shared.ipynb', [CONNECT, ASKED, AFTER]);
    await page.notebook.runCell(0);
    await expect(cellOutput(page, 0)).toContainText("acp: connected 'embedded'");

    // the second person opens the same notebook, on the same kernel
    const { page: bob } = await galata.newPage({
      baseURL: baseURL ?? '',
      browser,
      mockUser: BOB,
      // the server's own session and kernel lists: Galata's mocks would list this page's only,
      // and the second page would start a kernel of its own for the notebook
      mockKernels: false,
      mockSessions: false,
      tmpPath,
      waitForApplication
    });
    await openPath(bob, `${tmpPath}/shared.ipynb`);
    await expect(cellOutput(bob, 0)).toContainText("acp: connected 'embedded'");
    // outputs another person's run made are untrusted here, and JupyterLab renders no widget
    // in an untrusted output: the second person trusts the notebook first (trusting it while a
    // cell runs rewrites the shared outputs under the running cell, and the first person's
    // live view can be lost to the transcript)
    await trust(bob);

    await page.notebook.runCell(1, { wait: false });
    const mine = cellOutput(page, 1).locator(LIVE_TURN).locator('.acp-card');
    const theirs = cellOutput(bob, 1).locator(LIVE_TURN).locator('.acp-card');
    const allow = { name: 'Allow once', exact: true };
    await expect(mine.getByRole('button', allow)).toBeEnabled({ timeout: 60000 });
    await expect(theirs.getByRole('button', allow)).toBeEnabled({ timeout: 60000 });
    await theirs.getByRole('button', allow).click();

    for (const card of [mine, theirs]) {
      await expect(card).toContainText('Approved: Allow once - by a click from Bob', {
        timeout: 60000
      });
      await expect(card.locator('button:enabled')).toHaveCount(0); // nothing left to click
    }
    await bob.screenshot({ path: path.join(ARTIFACTS, 'collab-second-person.png') });
    await expect(page.locator('.jp-Notebook .jp-Cell').nth(1)).not.toHaveClass(/jp-mod-running/, {
      timeout: 60000
    });
    await page.notebook.runCell(2);
    await expect(cellOutput(page, 2)).toContainText('approved True');
    await bob.close();
  });
});
