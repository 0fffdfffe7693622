/**
 * Sign-in in a terminal, in a real JupyterLab: `%acp auth terminal-login` shows the agent's
 * login command (tests/adversarial/agents/auth_agent.py --login, in a PTY in the kernel) as an
 * xterm view; a person clicks into it and types the password at its getpass prompt; the
 * login exits 0, the agent restarts with the stored credentials and the next cell works.
 */
import * as path from 'path';

import { expect, test } from './shared_page';

import { ARTIFACTS, cellOutput, openNotebook } from './notebook';

/** The auth agent with its terminal method, found from the (editable) package. */
const CONNECT = [
  'import os, pathlib, sys, tempfile, acp_notebook',
  'work = tempfile.mkdtemp(prefix="acp-ui-")',
  'os.chdir(work)',
  'agent = pathlib.Path(acp_notebook.__file__).parents[1] / "tests" / "adversarial" / "agents" / "auth_agent.py"',
  'python = sys.executable',
  '%load_ext acp_notebook',
  '%acp connect --name signin --cwd {work} -- {python} {agent} {work} --terminal'
].join('\n');

test.describe('a terminal sign-in', () => {
  test('a person types the password into the xterm view and the login completes', async ({
    page,
    tmpPath
  }) => {
    await openNotebook(page, tmpPath, 'signin.ipynb', [
      CONNECT,
      '%acp auth terminal-login',
      '%%acp\nhello',
      'from ipywidgets.widgets.widget import _instances\n' +
        "print('cols', [w.cols for w in _instances.values() if type(w).__name__ == 'TerminalWidget'])"
    ]);
    await page.notebook.runCell(0);
    await expect(cellOutput(page, 0)).toContainText("acp: connected 'signin'");

    await page.notebook.runCell(1);
    const output = cellOutput(page, 1);
    await expect(output).toContainText("'terminal-login' signs in in the terminal below");
    const terminal = output.locator('.acp-terminal');
    await expect(terminal).toHaveAttribute('data-input', 'on');
    await expect(terminal).toHaveAttribute('data-text', /password: /);
    await expect(terminal.locator('.acp-terminal-command')).toContainText('--login');

    // The person clicks into the terminal and types; JupyterLab's command-mode keys ("a",
    // "m", ...) must not fire while the terminal has the focus.
    await terminal.locator('.acp-terminal-screen').click();
    // In input mode the view fits its columns to its width, and tells the kernel (the PTY).
    // (The fit follows layout: a ResizeObserver may do it a frame after the input mode is on.)
    const columns = (): Promise<number> =>
      terminal.evaluate(el => (el as any).__acpTerm.cols as number);
    await expect.poll(columns).not.toBe(80);
    const cols = await columns();
    await page.keyboard.type('open-sesa');
    await expect(terminal).toHaveAttribute('data-input', 'on');
    await terminal.scrollIntoViewIfNeeded();
    await output.screenshot({ path: path.join(ARTIFACTS, 'sign-in-terminal-typing.png') });
    await page.keyboard.type('me');
    await page.keyboard.press('Enter');

    await expect(terminal).toHaveAttribute('data-text', /credentials stored/);
    await expect(terminal.locator('.acp-exit-badge')).toHaveText('exit 0');
    await expect(terminal).toHaveAttribute('data-input', 'off');
    await expect(output).toContainText("the login finished (exit 0); restarted 'signin'");
    await expect(output).toContainText("session 'default' is open");
    const text = (await terminal.getAttribute('data-text')) ?? '';
    expect(text).not.toContain('open-sesame'); // getpass: the password is not echoed
    await expect(page.locator('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell')).toHaveCount(4);
    await expect(
      page.locator('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-MarkdownCell')
    ).toHaveCount(0);
    await output.screenshot({ path: path.join(ARTIFACTS, 'sign-in-terminal-done.png') });

    // The restarted agent read the credentials the login stored.
    await page.notebook.runCell(2);
    await expect(cellOutput(page, 2)).toContainText('signed in by stored credentials');
    await page.notebook.runCell(3);
    await expect(cellOutput(page, 3)).toContainText(`cols [${cols}]`);
  });
});
