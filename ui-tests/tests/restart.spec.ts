/**
 * A kernel restart, or a kernel gone mid-turn, in a real JupyterLab: every live turn view falls
 * back to its static transcript (no broken-link icons, no live-looking buttons), and a turn cut
 * short leaves a readable record in the saved notebook.
 */
import * as path from 'path';

import { expect, test } from './shared_page';
import type { IJupyterLabPageFixture } from './galata';

import {
  ARTIFACTS,
  cellOutput,
  connectEmbedded,
  FINAL_RECORD,
  LIVE_TURN,
  openNotebook,
  openPath,
  RUNNING_RECORD
} from './notebook';

/** As in acp_cell.spec.ts: the embedded agent in a fresh temporary cwd and data dir. */
const CONNECT = connectEmbedded();
const CONNECTED = "acp: connected 'embedded'";

/** Restart the active notebook's kernel as a person does: the command, then "Restart". */
async function restartKernel(page: IJupyterLabPageFixture): Promise<void> {
  // not awaited (in the page either): the command resolves only once the dialog is answered
  // and the kernel is back
  await page.evaluate(() => {
    void (window as any).jupyterapp.commands.execute('notebook:restart-kernel');
  });
  const dialog = page.locator('.jp-Dialog');
  await expect(dialog).toContainText('Restart');
  await dialog.locator('button.jp-mod-accept').click();
  await expect(dialog).toHaveCount(0);
  // (what follows a restart is checked on the views: JupyterLab marks their models not live)
}

/** Nothing in this output looks live or broken: what a kernel restart must leave. */
async function expectNothingLive(out: ReturnType<typeof cellOutput>): Promise<void> {
  // ipywidgets marks a view whose model lost its kernel with this class (a broken-link icon)
  const broken = out.locator('.jupyter-widgets-disconnected');
  await expect(broken.filter({ visible: true })).toHaveCount(0);
  await expect(out.getByRole('button', { name: 'Allow once', exact: true })).toHaveCount(0);
  await expect(out.locator('button:enabled').filter({ visible: true })).toHaveCount(0);
  await expect(out.getByText('Error displaying widget')).toBeHidden();
  await expect(out.locator(LIVE_TURN).filter({ visible: true })).toHaveCount(0);
}

test.describe('kernel restarts and crashes', () => {
  test('a restart replaces live turn views with their static transcripts', async ({
    page,
    tmpPath
  }) => {
    const PENDING = ['%%acp', 'Make a marker file.', '$ touch marker.txt'].join('\n');
    const DONE = ['%%acp --allow "echo *"', '$ echo finished-before-restart'].join('\n');
    await openNotebook(page, tmpPath, 'restart.ipynb', [CONNECT, DONE, PENDING]);
    await page.notebook.runCell(0);
    await expect(cellOutput(page, 0)).toContainText(CONNECTED);
    await page.notebook.runCell(1);
    const done = cellOutput(page, 1);
    await expect(done.locator(`${LIVE_TURN} .acp-exit-badge`)).toHaveText('exit 0');

    // a turn waiting for a click: its Allow once button is live
    await page.notebook.runCell(2, { wait: false });
    const pending = cellOutput(page, 2);
    const live = pending.locator(LIVE_TURN);
    const allow = live.getByRole('button', { name: 'Allow once', exact: true });
    await expect(allow).toBeEnabled();
    // its record is written as the turn goes (at most every few seconds): let it hold the card
    await expect(pending.locator('.acp-static-running')).toContainText('Allow once', {
      timeout: 20000
    });

    await restartKernel(page);

    // the finished turn: its final transcript, nothing else
    await expectNothingLive(done);
    await expect(done.locator('.acp-turn-static').filter({ visible: true })).toHaveCount(1);
    await expect(done.locator(FINAL_RECORD)).toContainText('finished-before-restart');
    await expect(done).not.toContainText('Still running when this was saved');

    // the turn cut short: what it had shown, marked as cut short, and no live button
    await expectNothingLive(pending);
    const record = pending.locator('.acp-turn-static').filter({ visible: true });
    await expect(record).toHaveCount(1);
    await expect(record.locator('.acp-turn-prompt')).toContainText('$ touch marker.txt');
    await expect(pending).toContainText('Still running when this was saved');
    // the card as it was, in words: no button (checked above)
    await expect(record.locator('.acp-card').first()).toContainText('Allow once');

    await page.setViewportSize({ width: 1024, height: 1400 });
    await page.screenshot({ path: '/tmp/acp-restart-view.png', fullPage: true });
    await pending.screenshot({ path: path.join(ARTIFACTS, 'restart-pending.png') });
    await done.screenshot({ path: '/tmp/acp-restart-done.png' });
  });

  test('a turn saved while it runs, then its kernel gone, reopens as a readable record', async ({
    page,
    tmpPath
  }) => {
    const LONG = [
      "%%acp --allow 'printf *' --allow 'sleep *'",
      String.raw`$ printf 'out-%s\n' first`,
      '$ sleep 30'
    ].join('\n');
    await openNotebook(page, tmpPath, 'interrupted.ipynb', [CONNECT, LONG]);
    await page.notebook.runCell(0);
    await expect(cellOutput(page, 0)).toContainText(CONNECTED);
    await page.notebook.runCell(1, { wait: false });
    const out = cellOutput(page, 1);
    const live = out.locator(LIVE_TURN);
    await expect(live.locator('.acp-terminal[data-phase]')).toHaveCount(2);
    await expect(live.locator('.acp-exit-badge').first()).toHaveText('exit 0');
    // the transcript is written as the turn goes (at most every few seconds): wait for the
    // saved record to hold the first command's output (not its command line) before saving
    await expect(out.locator(RUNNING_RECORD)).toContainText('out-first', {
      timeout: 20000
    });

    await page.notebook.save();
    await page.kernel.shutdownAll(); // the kernel is gone before the turn ends
    await page.reload({ waitForIsReady: false });
    await page.locator('#jupyterlab-splash').waitFor({ state: 'detached' });
    // (opened again when the layout did not restore it; made the current tab either way)
    await openPath(page, `${tmpPath}/interrupted.ipynb`);
    const reopened = cellOutput(page, 1);
    await expect(reopened.locator('.acp-turn-static').filter({ visible: true })).toHaveCount(1);
    await expect(reopened).toContainText('Still running when this was saved');
    await expect(reopened).toContainText('out-first');
    await expect(reopened.locator('.acp-turn-prompt').filter({ visible: true })).toContainText(
      '$ sleep 30'
    );
    await expectNothingLive(reopened);
    await expect(reopened.getByText('Loading widget')).toBeHidden();
    await reopened.screenshot({ path: '/tmp/acp-reopened-interrupted.png' });
  });
});
