/**
 * `%%acp` cells against the embedded agent, in a real JupyterLab: live turn view, xterm.js
 * terminal output, and permission cards answered by clicks.
 */
import * as path from 'path';

import { expect, test } from './shared_page';

import {
  ARTIFACTS,
  BY_A_CLICK,
  cellOutput,
  connectEmbedded,
  FINAL_RECORD,
  LIVE_TURN,
  openNotebook,
  openPath
} from './notebook';

/**
 * Connect the embedded agent with a fresh temporary cwd (also the kernel's cwd) and data dir,
 * so nothing the agent runs lands in the repository or the Jupyter root.
 */
const CONNECT = connectEmbedded();

/**
 * Three plain lines (bare \n: one row each, no staircase), green text, then a progress bar
 * redrawn with \r; the shell sees the backslashes as typed.
 */
const COMMAND =
  String.raw`printf 'one\ntwo\nthree\n'; ` +
  String.raw`printf '\033[32mgreen\033[0m\n'; ` +
  String.raw`for i in 1 2 3; do printf '\rprogress %d/3' $i; sleep 0.1; done; echo`;
const PROGRESS_CELL = [
  '%%acp',
  'Running the check with colours and a progress bar.',
  `$ ${COMMAND}`
].join('\n');

const TWO_COMMANDS = ['%%acp', '$ touch rejected.txt', '$ touch allowed.txt'].join('\n');
const CHECK_FILES = [
  'import os',
  'print(os.path.exists("rejected.txt"), os.path.exists("allowed.txt"))'
].join('\n');

const CONNECTED = "acp: connected 'embedded'";

test.describe('%%acp cell with the embedded agent', () => {
  test('Allow once runs the command: coloured xterm output, final \\r state, decided card', async ({
    page,
    tmpPath
  }) => {
    await openNotebook(page, tmpPath, 'approve.ipynb', [CONNECT, PROGRESS_CELL]);
    await page.notebook.runCell(0);
    await expect(cellOutput(page, 0)).toContainText(CONNECTED);

    // The cell awaits its turn, so do not wait for it: the click is what lets it finish.
    await page.notebook.runCell(1, { wait: false });
    const out = cellOutput(page, 1);
    const live = out.locator(LIVE_TURN);
    await expect(live.locator('.acp-turn-prompt')).toContainText('$ printf');
    const card = live.locator('.acp-card');
    await expect(card).toHaveCount(1);
    // the command once per tool call: its header names it, the card does not repeat it
    await expect(live.locator('.acp-tool-call-title')).toHaveText(COMMAND);
    await expect(card.locator('.acp-card-command')).toHaveCount(0);
    await expect(card.locator('.acp-card-title')).toContainText('this command');
    await page.screenshot({ path: path.join(ARTIFACTS, 'waiting-card.png') });
    const allow = card.getByRole('button', { name: 'Allow once', exact: true });
    await expect(allow).toBeEnabled();
    // nothing runs before the allow: the agent has not started a terminal
    await expect(live.locator('.acp-terminal[data-phase]')).toHaveCount(0);

    await allow.click();
    await expect(card.locator('.acp-card-decision')).toHaveText(
      `Approved: Allow once - ${BY_A_CLICK}`
    );
    // one button per offered option, all disabled once decided
    await expect(card.locator('button')).toHaveText([
      'Allow once',
      'Always allow',
      'Reject',
      'Always reject'
    ]);
    await expect(card.locator('button:enabled')).toHaveCount(0);

    const term = live.locator('.acp-terminal[data-phase]');
    await expect(term).toHaveCount(1);
    await expect(term.locator('.acp-exit-badge')).toHaveText('exit 0');
    // xterm's buffer holds one row per line and the final state of the \r progress bar
    await expect(term).toHaveAttribute('data-text', 'one\ntwo\nthree\ngreen\nprogress 3/3');
    await expect(term).toHaveAttribute('data-phase', 'live');
    // the colour reached xterm: "green" is drawn with ANSI green (palette index 2)
    await expect(term.locator('.xterm-rows span.xterm-fg-2')).toHaveText('green');
    await expect(live.locator('.acp-footer')).toHaveText('finished');

    // the cell ends, keeping a static transcript next to the live view
    await page.notebook.waitForRun(1);
    const transcript = out.locator(FINAL_RECORD);
    await expect(transcript).toContainText('progress 3/3');
    await expect(transcript).not.toContainText('progress 2/3');
    await expect(transcript).toContainText(`Approved: Allow once - ${BY_A_CLICK}`);
    // commands are full of $: the HTML transcript must not be typeset as LaTeX
    await expect(transcript.locator('.acp-turn-prompt')).toContainText(`$ ${COMMAND}`);
    await expect(transcript).toHaveClass(/\bmathjax_ignore\b/);
    await expect(transcript.locator('mjx-container, .MathJax')).toHaveCount(0);

    // ... but the live view is what shows while it can: the turn is not shown twice
    await expect(live).toBeVisible();
    await expect(transcript).toBeHidden();

    // tall enough for the whole turn, so the element screenshot is not clipped
    await page.setViewportSize({ width: 1024, height: 1600 });
    await live.scrollIntoViewIfNeeded();
    await live.screenshot({ path: path.join(ARTIFACTS, 'finished-turn.png') });
    // the same turn in JupyterLab Dark, for the README: the terminal follows the theme
    await page.theme.setDarkTheme();
    const screen = term.locator('.acp-terminal-screen');
    await expect
      .poll(() => screen.evaluate(el => getComputedStyle(el).backgroundColor))
      .toBe('rgb(17, 17, 17)');
    await live.screenshot({ path: path.join(ARTIFACTS, 'finished-turn-dark.png') });
    await page.theme.setLightTheme();

    // Saved and reopened without the kernel that drew it: the static transcript stands in
    // for the live view, which can no longer render (its models are gone).
    await page.notebook.save();
    await page.kernel.shutdownAll();
    // (the notebook comes back with the restored layout, so there is no Launcher to wait for)
    await page.reload({ waitForIsReady: false });
    await page.locator('#jupyterlab-splash').waitFor({ state: 'detached' });
    // (opened again when the layout did not restore it; made the current tab either way)
    await openPath(page, `${tmpPath}/approve.ipynb`);
    const reopened = cellOutput(page, 1);
    // all outputs are still there (so hiding the dead widget output is really tested): the
    // live view, the record slot (emptied at the end of the turn) and the final transcript ...
    await expect(reopened.locator('.jp-OutputArea-child')).toHaveCount(3);
    await expect(reopened.locator(FINAL_RECORD)).toBeVisible();
    await expect(reopened.locator(FINAL_RECORD)).toContainText('progress 3/3');
    await expect(reopened.locator(LIVE_TURN)).toHaveCount(0);
    await expect(reopened.getByText('Loading widget')).toBeHidden();
    await expect(reopened.getByText('Error displaying widget')).toBeHidden();
    await reopened.screenshot({ path: path.join(ARTIFACTS, 'reopened-turn.png') });
  });

  test('Reject leaves the command unrun; the next command still asks', async ({
    page,
    tmpPath
  }) => {
    await openNotebook(page, tmpPath, 'reject.ipynb', [CONNECT, TWO_COMMANDS, CHECK_FILES]);
    await page.notebook.runCell(0);
    await expect(cellOutput(page, 0)).toContainText(CONNECTED);

    await page.notebook.runCell(1, { wait: false });
    const live = cellOutput(page, 1).locator(LIVE_TURN);
    const rejectedCall = live.locator('.acp-tool-call').filter({ hasText: 'touch rejected.txt' });
    const rejectedCard = rejectedCall.locator('.acp-card');
    await expect(rejectedCall.locator('.acp-tool-call-title')).toHaveText('touch rejected.txt');
    await rejectedCard.getByRole('button', { name: 'Reject', exact: true }).click();
    await expect(rejectedCard.locator('.acp-card-decision')).toHaveText(
      `Rejected: Reject - ${BY_A_CLICK}`
    );
    await expect(rejectedCall).toContainText('rejected by the client');

    // the agent goes on to the second command, which asks again; allow it (a control: the
    // check below must be able to see a file the agent did create)
    const allowedCall = live.locator('.acp-tool-call').filter({ hasText: 'touch allowed.txt' });
    const allowedCard = allowedCall.locator('.acp-card');
    await allowedCard.getByRole('button', { name: 'Allow once', exact: true }).click();
    await expect(allowedCard.locator('.acp-card-decision')).toHaveText(
      `Approved: Allow once - ${BY_A_CLICK}`
    );
    await expect(allowedCall.locator('.acp-exit-badge')).toHaveText('exit 0');
    await expect(live.locator('.acp-footer')).toHaveText('finished');
    // the rejected command never got a terminal
    await expect(rejectedCall.locator('.acp-terminal[data-phase]')).toHaveCount(0);
    await page.notebook.waitForRun(1);
    await page.setViewportSize({ width: 1024, height: 1600 });
    await live.scrollIntoViewIfNeeded();
    await live.screenshot({ path: path.join(ARTIFACTS, 'rejected-turn.png') });

    await page.notebook.runCell(2);
    await expect(cellOutput(page, 2)).toContainText('False True');
  });
});
