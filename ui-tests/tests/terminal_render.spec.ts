/**
 * Terminals render like a terminal: rows read back from xterm's buffer (the Terminal behind a
 * view is `node.__acpTerm`), not from screenshots alone. Bare "\n" from any agent, the embedded
 * agent's PTY output, "\r" redraws, colours, a flood's last rows, copy, and the theme.
 */
import * as path from 'path';

import { expect, test } from './shared_page';
import type { Locator } from '@playwright/test';

import { cellOutput, connectEmbedded, LIVE_TURN, openNotebook } from './notebook';

const SHOTS = '/tmp';

/** What a test reads from xterm's active buffer. */
interface IBufferRows {
  rows: string[]; // every line, untrimmed on the left, trailing spaces cut
  baseY: number;
  length: number;
  termRows: number;
}

async function bufferRows(view: Locator): Promise<IBufferRows> {
  return view.evaluate((el: any) => {
    const term = el.__acpTerm;
    const buffer = term.buffer.active;
    const rows: string[] = [];
    for (let i = 0; i < buffer.length; i++) {
      rows.push(buffer.getLine(i).translateToString(true));
    }
    while (rows.length && rows[rows.length - 1] === '') {
      rows.pop();
    }
    return { rows, baseY: buffer.baseY, length: buffer.length, termRows: term.rows };
  });
}

/** The colour attributes of the cell at (row, col) of the buffer. */
async function cellColour(view: Locator, row: number, col: number): Promise<any> {
  return view.evaluate(
    (el: any, [r, c]) => {
      const cell = el.__acpTerm.buffer.active.getLine(r).getCell(c);
      return {
        chars: cell.getChars(),
        fg: cell.getFgColor(),
        palette: cell.isFgPalette(),
        isDefault: cell.isFgDefault()
      };
    },
    [row, col]
  );
}

/** A TerminalWidget fed the way a pipe-backed agent would: bare "\n", no PTY in between. */
const PIPE = [
  'from acp_notebook._widgets import TerminalWidget',
  'w = TerminalWidget(command="pipe", cols=40, rows=6)',
  'w.feed(b"one\\ntwo\\nthree\\n")',
  'w'
].join('\n');
const PIPE_MORE = 'w.feed(b"crlf\\r\\nprogress 10%\\rprogress 100%\\n")';
const PIPE_PANEL = [
  'from acp_notebook._widgets import AgentPanel',
  'AgentPanel(children=(w,)).show()'
].join('\n');

const CONNECT = connectEmbedded();
const MULTI = String.raw`printf 'one\ntwo\nthree\n'`;
const RED = String.raw`printf '\033[31mred\033[0m plain\n'`;
const PROGRESS = String.raw`printf 'progress 10%%\rprogress 100%%\n'`;
const FLOOD = 'seq 1 20000';
const AGENT_CELL = [
  "%%acp --allow 'printf *' --allow 'seq *'",
  `$ ${MULTI}`,
  `$ ${RED}`,
  `$ ${PROGRESS}`,
  `$ ${FLOOD}`
].join('\n');

test.describe('terminals render like a terminal', () => {
  test('bare \\n from a pipe starts a new row at column 0; copy and copy-all', async ({
    page,
    tmpPath,
    context
  }) => {
    await context.grantPermissions(['clipboard-read', 'clipboard-write']);
    await openNotebook(page, tmpPath, 'pipe.ipynb', [PIPE, PIPE_MORE, PIPE_PANEL]);
    await page.notebook.runCell(0);
    const view = cellOutput(page, 0).locator('.acp-terminal');
    // no staircase: each line starts where a line starts
    await expect(view).toHaveAttribute('data-text', 'one\ntwo\nthree');
    expect((await bufferRows(view)).rows).toEqual(['one', 'two', 'three']);

    // "\r\n" is still one line end, and a "\r" redraw leaves only its final state
    await page.notebook.runCell(1);
    await expect(view).toHaveAttribute('data-text', 'one\ntwo\nthree\ncrlf\nprogress 100%');
    expect((await bufferRows(view)).rows).toEqual(['one', 'two', 'three', 'crlf', 'progress 100%']);

    // the side panel's view of the same terminal renders the same rows
    await page.notebook.runCell(2);
    const panelView = page.locator('#acp-notebook-panel .acp-terminal');
    await expect(panelView).toHaveAttribute('data-text', 'one\ntwo\nthree\ncrlf\nprogress 100%');
    expect((await bufferRows(panelView)).rows[1]).toBe('two');

    // Ctrl+C copies xterm's selection (the key is not swallowed)
    await view.evaluate((el: any) => el.__acpTerm.select(0, 1, 3)); // "two"
    await view.evaluate((el: any) => el.__acpTerm.focus());
    await page.keyboard.press('Control+c');
    await expect.poll(() => page.evaluate(() => navigator.clipboard.readText())).toBe('two');

    // the copy button copies the whole text
    const copy = view.locator('.acp-terminal-copy');
    await expect(copy).toHaveText('Copy');
    await copy.click();
    await expect(copy).toHaveText('Copied');
    await expect
      .poll(() => page.evaluate(() => navigator.clipboard.readText()))
      .toBe('one\ntwo\nthree\ncrlf\nprogress 100%');
  });

  test("the embedded agent: multi-line rows, \\r progress, colours, a flood's last rows", async ({
    page,
    tmpPath
  }) => {
    await openNotebook(page, tmpPath, 'agent.ipynb', [CONNECT, AGENT_CELL]);
    await page.notebook.runCell(0);
    await expect(cellOutput(page, 0)).toContainText("acp: connected 'embedded'");
    await page.notebook.runCell(1);
    const live = cellOutput(page, 1).locator(LIVE_TURN);
    const terminal = (command: string): Locator =>
      live
        .locator('.acp-tool-call')
        .filter({ has: page.locator('.acp-terminal-command', { hasText: command }) })
        .locator('.acp-terminal[data-phase]');

    const multi = terminal(MULTI);
    await expect(multi.locator('.acp-exit-badge')).toHaveText('exit 0');
    await expect(multi).toHaveAttribute('data-text', 'one\ntwo\nthree');
    expect((await bufferRows(multi)).rows).toEqual(['one', 'two', 'three']);

    const red = terminal(RED);
    await expect(red).toHaveAttribute('data-text', 'red plain');
    expect(await cellColour(red, 0, 0)).toEqual({
      chars: 'r',
      fg: 1, // ANSI red, palette index 1
      palette: true,
      isDefault: false
    });
    expect(await cellColour(red, 0, 4)).toMatchObject({ chars: 'p', isDefault: true });

    const progress = terminal(PROGRESS);
    await expect(progress).toHaveAttribute('data-text', 'progress 100%');
    expect((await bufferRows(progress)).rows).toEqual(['progress 100%']);

    const flood = terminal(FLOOD);
    await expect(flood.locator('.acp-exit-badge')).toHaveText('exit 0', { timeout: 60000 });
    await expect(flood).toHaveAttribute('data-text', /\n19999\n20000$/, { timeout: 60000 });
    const rows = await bufferRows(flood);
    expect(rows.rows.slice(-3)).toEqual(['19998', '19999', '20000']);
    // scrollback keeps 10,000 lines above the screen; the screen shows at most 24 rows
    expect(rows.baseY).toBe(10000);
    expect(rows.length).toBe(10000 + rows.termRows);
    await expect(flood).toHaveAttribute('data-visible-rows', String(rows.termRows));
    expect(rows.termRows).toBeLessThanOrEqual(24);

    await page.notebook.waitForRun(1);
    await page.setViewportSize({ width: 1024, height: 2400 });
    await live.scrollIntoViewIfNeeded();
    await live.screenshot({ path: path.join(SHOTS, 'acp-terminal-agent-light.png') });
    await flood.screenshot({ path: path.join(SHOTS, 'acp-terminal-flood-light.png') });
  });

  test('a tall terminal shows at most 24 rows and scrolls to its newest row', async ({
    page,
    tmpPath
  }) => {
    const tall = [
      'from acp_notebook._widgets import TerminalWidget',
      't = TerminalWidget(command="tall", cols=40, rows=40)',
      't.feed(b"".join(b"row %d\\n" % i for i in range(1, 31)))',
      't'
    ].join('\n');
    const short = [
      'from acp_notebook._widgets import TerminalWidget',
      's = TerminalWidget(command="short", cols=40, rows=40)',
      's.feed(b"just one\\n")',
      's'
    ].join('\n');
    await openNotebook(page, tmpPath, 'tall.ipynb', [tall, short]);
    await page.notebook.runCell(0);
    const view = cellOutput(page, 0).locator('.acp-terminal');
    await expect(view).toHaveAttribute('data-text', /\nrow 30$/);
    expect((await bufferRows(view)).termRows).toBe(40); // the program's screen keeps its size
    await expect(view).toHaveAttribute('data-visible-rows', '24');
    const screen = await view.evaluate((el: any) => {
      const node = el.querySelector('.acp-terminal-screen');
      const row = el.querySelector('.xterm-screen').offsetHeight / 40;
      return {
        overflow: getComputedStyle(node).overflowY,
        shownRows: node.clientHeight / row,
        atBottom: node.scrollTop + node.clientHeight >= node.scrollHeight - 1
      };
    });
    expect(screen.overflow).toBe('auto');
    expect(screen.shownRows).toBeGreaterThan(23);
    expect(screen.shownRows).toBeLessThan(25.5);
    expect(screen.atBottom).toBe(true);

    // short output still shows only the rows in use
    await page.notebook.runCell(1);
    const small = cellOutput(page, 1).locator('.acp-terminal');
    await expect(small).toHaveAttribute('data-text', 'just one');
    await expect(small).toHaveAttribute('data-visible-rows', '2');
  });

  test("the terminal follows JupyterLab's theme: light, dark, high contrast", async ({
    page,
    tmpPath
  }) => {
    const source = PIPE.replace(
      'w.feed(b"one\\ntwo\\nthree\\n")',
      'w.feed(b"plain\\n\\x1b[31mred\\x1b[0m \\x1b[32mgreen\\x1b[0m \\x1b[33myellow\\x1b[0m\\n")'
    );
    await openNotebook(page, tmpPath, 'theme.ipynb', [source]);
    await page.notebook.runCell(0);
    const view = cellOutput(page, 0).locator('.acp-terminal');
    await expect(view).toHaveAttribute('data-text', 'plain\nred green yellow');
    const colours = (): Promise<any> =>
      view.evaluate((el: any) => {
        const theme = el.__acpTerm.options.theme;
        const screen = el.querySelector('.acp-terminal-screen');
        const rows = el.querySelector('.xterm-rows');
        return {
          background: theme.background,
          foreground: theme.foreground,
          screen: getComputedStyle(screen).backgroundColor,
          text: getComputedStyle(rows).color
        };
      });

    // light (the default): not the old always-black screen
    expect(await page.theme.getTheme()).toBe('JupyterLab Light');
    const light = {
      background: 'rgb(255, 255, 255)',
      foreground: 'rgb(0, 0, 0)',
      screen: 'rgb(255, 255, 255)',
      text: 'rgb(0, 0, 0)'
    };
    await expect.poll(colours).toEqual(light);
    await view.screenshot({ path: path.join(SHOTS, 'acp-terminal-light.png') });

    // JupyterLab Dark: --jp-layout-color0 is #111, text white
    await page.theme.setDarkTheme();
    await expect.poll(colours).toEqual({
      background: 'rgb(17, 17, 17)',
      foreground: 'rgb(255, 255, 255)',
      screen: 'rgb(17, 17, 17)',
      text: 'rgb(255, 255, 255)'
    });
    await view.screenshot({ path: path.join(SHOTS, 'acp-terminal-dark.png') });

    // a view created under the dark theme starts dark
    await page.notebook.runCell(0);
    await expect.poll(colours).toMatchObject({ background: 'rgb(17, 17, 17)' });

    await page.theme.setDarkHighContrastTheme();
    await expect.poll(colours).toMatchObject({ foreground: 'rgb(255, 255, 255)' });

    await page.theme.setLightTheme();
    await expect.poll(colours).toEqual(light);
  });
});
