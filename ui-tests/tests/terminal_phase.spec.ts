/**
 * Issue 25, findings 1 and 2, in a real JupyterLab: an agent that shows a terminal before it
 * asks, and sends a command's output only when it ends (tests/adversarial/agents/
 * snapshot_agent.py replays claude-agent-acp 0.101.0's updates). Nothing says "running" before
 * anything ran; a refused command says "not run" in grey, with the agent's words as a line of
 * text, not in a terminal screen; a quiet command shows how long it runs and that its output
 * may come at the end; an interrupted one says "stopped".
 */
import * as path from 'path';

import { expect, test } from './shared_page';

import { ARTIFACTS, LIVE_TURN, cellOutput, openNotebook } from './notebook';

const CONNECT = [
  'import os, pathlib, sys, tempfile, acp_notebook',
  'work = tempfile.mkdtemp(prefix="acp-ui-")',
  'agent = pathlib.Path(acp_notebook.__file__).parents[1] / "tests" / "adversarial" / "agents" / "snapshot_agent.py"',
  'python = sys.executable',
  '%load_ext acp_notebook',
  '%acp connect --name snap --cwd {work} -- {python} {agent} {work} 8',
  'print("kernel pid", os.getpid())'
].join('\n');

test.describe('terminals of an agent that sends output at the end', () => {
  test('waiting, not run, running with its time, stopped', async ({ page, tmpPath }) => {
    test.setTimeout(180000);
    await openNotebook(page, tmpPath, 'phase.ipynb', [
      CONNECT,
      '%%acp\nrm -rf data',
      '%%acp\nsleep 8; echo one; echo two',
      '%%acp\nsleep 60'
    ]);
    await page.notebook.runCell(0);
    await expect(cellOutput(page, 0)).toContainText("acp: connected 'snap'");
    const pid = /kernel pid (\d+)/.exec((await cellOutput(page, 0).textContent()) ?? '');
    const kernelPid = Number(pid![1]);

    // 1. asked about: the terminal says nothing ran; refused: "not run", the agent's words
    await page.notebook.runCell(1, { wait: false });
    const refused = cellOutput(page, 1).locator(LIVE_TURN);
    const card = refused.locator('.acp-card');
    await expect(card.getByRole('button', { name: 'No', exact: true })).toBeEnabled();
    const asked = refused.locator('.acp-terminal');
    await expect(asked.locator('.acp-exit-badge')).toHaveText('waiting for approval');
    await expect(asked).toHaveAttribute('data-run', 'waiting');
    await expect(asked.locator('.acp-terminal-screen')).toBeHidden();
    // finding 16: the tool call names its command once (the terminal's header); the card asks
    // "Run this command?" right below, and no badge repeats what a button says
    const box = refused.locator('.acp-tool-call');
    const said = ((await box.innerText()).match(/rm -rf data/g) ?? []).length;
    expect(said).toBe(1);
    await expect(card.locator('.acp-card-title')).toHaveText('🔐 Run this command?');
    await expect(card.locator('.acp-card-command')).toHaveCount(0);
    await expect(card.locator('.acp-kind-badge')).toHaveCount(0);
    await expect(card.getByRole('button', { name: 'No', exact: true })).toHaveAttribute(
      'title',
      'reject once'
    );
    await refused.screenshot({ path: path.join(ARTIFACTS, 'terminal-waiting-card.png') });
    await card.getByRole('button', { name: 'No', exact: true }).click();
    await expect(asked.locator('.acp-exit-badge')).toHaveText('not run');
    await expect(asked.locator('.acp-exit-badge')).toHaveAttribute('data-state', 'idle');
    await expect(asked.locator('.acp-terminal-note')).toHaveText(
      'User refused permission to run tool'
    );
    await expect(asked.locator('.acp-terminal-screen')).toBeHidden();
    await expect(asked).toHaveAttribute('data-bytes', '0'); // the words never reached xterm
    await refused.screenshot({ path: path.join(ARTIFACTS, 'terminal-not-run.png') });

    // 2. allowed, quiet while it runs: its time counts up, a line says why nothing shows
    await page.notebook.runCell(2, { wait: false });
    const quiet = cellOutput(page, 2).locator(LIVE_TURN);
    await quiet.getByRole('button', { name: 'Yes', exact: true }).click();
    const running = quiet.locator('.acp-terminal');
    await expect(running.locator('.acp-exit-badge')).toHaveText(/^running · \d+ s$/);
    await expect(running.locator('.acp-terminal-note')).toHaveText(
      'no output yet: some agents send the output of a command only when it ends'
    );
    await expect(running.locator('.acp-exit-badge')).toHaveText(/^running · [3-9] s$/);
    await quiet.screenshot({ path: path.join(ARTIFACTS, 'terminal-quiet-running.png') });
    await expect(running.locator('.acp-exit-badge')).toHaveText('exit 0', { timeout: 20000 });
    await expect(running).toHaveAttribute('data-text', 'one\ntwo');
    await expect(running.locator('.acp-terminal-note')).toBeHidden();

    // 3. interrupted while it runs: "stopped", the agent's words beside an empty screen
    await page.notebook.runCell(3, { wait: false });
    const cut = cellOutput(page, 3).locator(LIVE_TURN);
    await cut.getByRole('button', { name: 'Yes', exact: true }).click();
    const stopped = cut.locator('.acp-terminal');
    await expect(stopped.locator('.acp-exit-badge')).toHaveText(/^running/);
    // What Interrupt does to a local kernel. (Through the REST API, Galata's route for
    // /api/kernels fails on the interrupt's empty 204 answer.)
    process.kill(kernelPid, 'SIGINT');
    await expect(stopped.locator('.acp-exit-badge')).toHaveText('stopped');
    await expect(stopped.locator('.acp-terminal-note')).toContainText(
      "The user doesn't want to proceed"
    );
    await expect(stopped.locator('.acp-terminal-screen')).toBeHidden();
    await cut.screenshot({ path: path.join(ARTIFACTS, 'terminal-stopped.png') });
  });
});
