import * as path from 'path';

import { galata } from './galata';

import { expect, test } from './shared_page';

import { ARTIFACTS, openNotebook } from './notebook';

const CREATE = [
  'from acp_notebook._widgets import AgentPanel, TerminalWidget',
  'w = TerminalWidget(command="pytest -q", cwd="/work", cols=60, rows=6, can_cancel=True)',
  'w.on_cancel(lambda t: t.feed(b"stop requested\\r\\n"))',
  'w.feed(b"\\x1b[32mok\\x1b[0m\\r\\nprogress 10%\\rprogress 100%\\r\\n")',
  'w'
].join('\n');
const SECOND_VIEW = 'display(w)';
const PANEL = ['p = AgentPanel(children=(w,), pending_count=2)', 'p.show()'].join('\n');
const EXIT = 'w.exit_status = {"exitCode": 0, "signal": None}';
const FLOOD = [
  'import threading',
  'from acp_notebook._widgets import TerminalWidget',
  'f = TerminalWidget(command="flood", cols=80, rows=10)',
  'display(f)',
  'line = b"\\x1b[33mPASSED\\x1b[0m tests/test_flood.py::test_case 0123456789 abcdefghij\\r\\n"',
  'data = line * (2**21 // len(line))',
  'def run():',
  '    for i in range(0, len(data), 1024):',
  '        f.feed(data[i : i + 1024])',
  '    f.feed(b"\\x1b[1mdone\\x1b[0m\\r\\n")',
  'threading.Thread(target=run).start()'
].join('\n');

test.describe('terminal widget', () => {
  test('xterm shows coloured bytes, the final \\r state, and late views get the backlog', async ({
    page,
    tmpPath
  }) => {
    await openNotebook(page, tmpPath, 'terminal.ipynb', [CREATE, SECOND_VIEW, PANEL, EXIT]);

    await page.notebook.runCell(0);
    const first = page.locator('.jp-OutputArea .acp-terminal').first();
    await expect(first).toHaveAttribute('data-text', 'ok\nprogress 100%');
    await expect(first.locator('.acp-terminal-command')).toHaveText('$ pytest -q');
    await expect(first.locator('.acp-exit-badge')).toHaveText('running');
    // colour reached xterm: "ok" is drawn with ANSI green (palette index 2)
    await expect(first.locator('.xterm-rows span.xterm-fg-2')).toHaveText('ok');

    // a second view rendered later must show the whole transcript, not a tail
    await page.notebook.runCell(1);
    const views = page.locator('.jp-OutputArea .acp-terminal');
    await expect(views).toHaveCount(2);
    const second = views.nth(1);
    await expect(second).toHaveAttribute('data-text', 'ok\nprogress 100%');
    const bytes = await first.getAttribute('data-bytes');
    expect(Number(bytes)).toBeGreaterThan(0);
    await expect(second).toHaveAttribute('data-bytes', bytes!);

    // the stop button reaches the kernel's on_cancel callback; both views see its output
    await first.locator('.acp-terminal-stop').click();
    await expect(first).toHaveAttribute('data-text', 'ok\nprogress 100%\nstop requested');
    await expect(second).toHaveAttribute('data-text', 'ok\nprogress 100%\nstop requested');
    // only the rows in use are shown (3 lines + the running cursor's line), not all 6
    await expect(first).toHaveAttribute('data-visible-rows', '4');

    // the side panel: a third view of the same model, and the pending badge on its tab
    await page.notebook.runCell(2);
    const panel = page.locator('#acp-notebook-panel');
    await expect(panel).toBeVisible();
    await expect(panel.locator('.acp-terminal')).toHaveAttribute(
      'data-text',
      'ok\nprogress 100%\nstop requested'
    );
    await expect(page.locator('li.lm-TabBar-tab[data-acp-badge="2"]')).toHaveCount(1);

    // the exit badge follows exit_status; the stop button goes away
    await page.notebook.runCell(3);
    await expect(first.locator('.acp-exit-badge')).toHaveText('exit 0');
    await expect(first.locator('.acp-exit-badge')).toHaveAttribute('data-state', 'ok');
    await expect(first.locator('.acp-terminal-stop')).toBeHidden();
    await expect(first).toHaveAttribute('data-visible-rows', '3'); // exited: no cursor line

    await page.screenshot({ path: path.join(ARTIFACTS, 'terminal-widget.png') });
  });

  test('2 MiB fed from a kernel thread in 1 KiB pieces arrives complete', async ({
    page,
    tmpPath
  }) => {
    await openNotebook(page, tmpPath, 'flood.ipynb', [FLOOD]);
    await page.notebook.runCell(0);
    const view = page.locator('.jp-OutputArea .acp-terminal').first();
    const line = '\x1b[33mPASSED\x1b[0m tests/test_flood.py::test_case 0123456789 abcdefghij\r\n';
    const total = Math.floor(2 ** 21 / line.length) * line.length + '\x1b[1mdone\x1b[0m\r\n'.length;
    await expect(view).toHaveAttribute('data-bytes', String(total), { timeout: 90000 });
    await expect(view).toHaveAttribute(
      'data-text',
      /\nPASSED tests\/test_flood.py::test_case 0123456789 abcdefghij\ndone$/
    );
    // 2 MiB / 64 KiB = 32 full batches, plus a few timer flushes: far below the server's limit
    expect(Number(await view.getAttribute('data-seq'))).toBeLessThan(200);
    await expect(view).toHaveAttribute('data-visible-rows', '10'); // scrolled: every row shown
    await expect(page.getByText('IOPub message rate exceeded')).toHaveCount(0);
  });

  test('the command palette opens the agent panel', async ({ page }) => {
    await page.evaluate(async () => {
      await window.jupyterapp.commands.execute('acp-notebook:show-panel');
    });
    await expect(page.locator('#acp-notebook-panel')).toBeVisible();
    await expect(page.locator('#acp-notebook-panel .acp-side-panel-placeholder')).toBeVisible();
  });
});

void galata;
