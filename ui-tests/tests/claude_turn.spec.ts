/**
 * A turn of a real agent in a real JupyterLab: claude-agent-acp 0.101.0 (installed by .ci/run
 * in tests/real_agents/node) against the suite's fake Anthropic API on 127.0.0.1, started in
 * the kernel. Claude asks before a command that changes files; the card sits above the
 * terminal it authorises, names the command once, and the turn ends with the command's output.
 * The screenshots are the README's "a Claude turn" (issue 25's acceptance).
 */
import * as path from 'path';

import { expect, test } from './shared_page';

import { ARTIFACTS, LIVE_TURN, cellOutput, openNotebook } from './notebook';

const COMMAND = "printf 'compiled 3 files\\n' | tee build.log";

const SETUP = [
  'import json, os, pathlib, sys, tempfile, acp_notebook',
  'root = pathlib.Path(acp_notebook.__file__).parents[1]',
  'sys.path.insert(0, str(root))',
  'from tests.real_agents.conftest import NODE_MODULES, claude_launch, not_installed',
  'from tests.real_agents.fake_anthropic import Text, ToolUse',
  'assert not_installed() is None, not_installed()',
  "os.environ['ACP_NOTEBOOK_NODE_MODULES'] = str(NODE_MODULES)",
  '# keep the context manager: collected, it would stop the fake API with it',
  'api_cm = claude_launch(pathlib.Path(tempfile.mkdtemp(prefix="acp-ui-claude-")))',
  'launch = api_cm.__enter__()',
  `launch.api.add(ToolUse("Bash", {"command": ${JSON.stringify(COMMAND)}, "description": "Build the project"}), Text("Built: **3 files** compiled, the log is in \`build.log\`."))`,
  'options = launch.env_options()',
  '%load_ext acp_notebook',
  '%acp connect claude {options}'
].join('\n');

test.describe('a Claude turn', () => {
  test('asks with one card above its terminal, then shows what ran', async ({ page, tmpPath }) => {
    test.setTimeout(180000);
    await openNotebook(page, tmpPath, 'claude.ipynb', [SETUP, '%%acp\nBuild the project']);
    await page.notebook.runCell(0);
    await expect(cellOutput(page, 0)).toContainText("acp: connected 'claude'", {
      timeout: 60000
    });

    await page.notebook.runCell(1, { wait: false });
    const turn = cellOutput(page, 1).locator(LIVE_TURN);
    const card = turn.locator('.acp-card');
    const yes = card.getByRole('button', { name: 'Yes', exact: true });
    await expect(yes).toBeEnabled({ timeout: 60000 });
    // the box names the command once (the terminal's header), the card asks below the title
    const box = turn.locator('.acp-tool-call');
    const named = ((await box.innerText()).match(/compiled 3 files/g) ?? []).length;
    expect(named).toBe(1);
    const terminal = turn.locator('.acp-terminal');
    await expect(terminal.locator('.acp-exit-badge')).toHaveText('waiting for approval');
    // the card comes before the terminal it authorises
    const cardTop = (await card.boundingBox())!.y;
    const terminalTop = (await terminal.boundingBox())!.y;
    expect(cardTop).toBeLessThan(terminalTop);
    await turn.screenshot({ path: path.join(ARTIFACTS, 'claude-card.png') });

    await yes.click();
    await expect(turn.locator('.acp-footer')).toHaveText(/^finished/, {
      timeout: 60000
    });
    await expect(terminal.locator('.acp-exit-badge')).toHaveText('exit 0');
    await expect(terminal).toHaveAttribute('data-text', 'compiled 3 files');
    await expect(turn.locator('.acp-message-agent')).toContainText('Built: 3 files compiled');
    await expect(card).toContainText('Approved: Yes');
    await turn.screenshot({ path: path.join(ARTIFACTS, 'claude-turn.png') });
  });
});
