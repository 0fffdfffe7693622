/**
 * The agent side panel against the real embedded agent: the approval inbox across cells, the tab
 * badge, answers from the panel and from the cell, live terminals, the agent list; then the same
 * panel in Notebook 7's right sidebar.
 */
import { ChildProcess, spawn } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

// A page of its own for each test (Galata's), not the group's shared page (./shared_page.ts):
// the side panel is one per page, and in a page a previous test's kernels had used, the inbox
// once stayed empty (CI, a fresh clone: `inbox across two cells` after panel_kernels.spec.ts).
import { expect, galata, test } from './galata';

import {
  ARTIFACTS,
  executionCounts,
  LIVE_TURN,
  notebook,
  openNotebook,
  runCellInPlace
} from './notebook';

const UI_TESTS = path.resolve(__dirname, '..');

// `import acp_notebook._sidepanel` installs the panel's event subscriptions (auto-open on the
// first connect); harmless once %load_ext does it too.
const SETUP = [
  '%load_ext acp_notebook',
  'import sys, tempfile',
  'import acp_notebook._sidepanel',
  'data = tempfile.mkdtemp()'
].join('\n');
const CONNECT =
  '%acp connect --name embedded -- {sys.executable} -m acp_notebook.agent --data-dir {data}';
const CELL_A =
  '%%acp --bg --session a\nApproved from the panel.\n$ echo approved-$((6*7)) from the panel';
const CELL_B = '%%acp --bg --session b\n$ touch rejected-in-cell.txt';
const CLOSE = '%acp close --name embedded';

test.describe('agent side panel', () => {
  test.use({ autoGoto: true });

  test('inbox across two cells: badge, approve from the panel, reject in the cell, agent exits', async ({
    page,
    tmpPath
  }) => {
    await openNotebook(page, tmpPath, 'panel.ipynb', [SETUP, CONNECT, CELL_A, CELL_B, CLOSE]);
    await page.notebook.runCell(0);
    await page.notebook.runCell(1);

    // the first connect makes the panel but does not open it; a person clicks its tab
    const panel = page.locator('#acp-notebook-panel');
    const tab = page.locator('li.lm-TabBar-tab[data-id="acp-notebook-panel"]');
    await expect(tab).toHaveCount(1);
    await expect(panel).toBeHidden();
    await tab.click();
    await expect(panel).toBeVisible();
    await expect(panel.locator('.acp-panel-agent-info[data-state="alive"]')).toContainText(
      'embedded'
    );
    await expect(panel.locator('.acp-panel-agent-info')).toContainText('acp_notebook.agent');

    // 1-2: two --bg cells each ask permission; the inbox lists both, the badge says 2
    await page.notebook.runCell(2);
    await page.notebook.runCell(3);
    const entries = panel.locator('.acp-inbox-entry');
    await expect(entries).toHaveCount(2);
    await expect(page.locator('li.lm-TabBar-tab[data-acp-badge="2"]')).toHaveCount(1);
    const entryA = entries.filter({ hasText: 'session a on embedded' });
    const entryB = entries.filter({ hasText: 'session b on embedded' });
    await expect(entryA).toContainText('echo approved-$((6*7)) from the panel');
    await expect(entryB).toContainText('touch rejected-in-cell.txt');

    // "Show in notebook" finds the cell of the request
    await entryB.getByRole('button', { name: 'Show in notebook' }).click();
    await expect(panel).toHaveAttribute('data-scrolled', '3');

    // 3: approve a from the panel: the cell's card says so; the output is in the cell and the panel
    await entryA.getByRole('button', { name: 'Allow once', exact: true }).click();
    const cellA = page.locator('.jp-Notebook .jp-Cell').nth(2);
    const cardA = cellA.locator(`${LIVE_TURN} .jupyter-widgets.acp-card`);
    await expect(cardA).toContainText('from the side panel');
    await expect(cardA).toContainText('Approved');
    const terminalA = cellA.locator(`${LIVE_TURN} .acp-terminal`);
    await expect(terminalA).toHaveAttribute('data-text', /approved-42 from the panel/);
    // once the --bg turn ends, its record (hidden, in the same output) holds the terminal
    // too: an .acp-terminal not scoped to the live view names two elements
    await expect(cellA.locator('.acp-terminal')).toHaveCount(2);
    await expect(terminalA).toHaveCount(1);
    const panelTerminal = panel.locator('.acp-panel-terminal .acp-terminal');
    await expect(panelTerminal).toHaveAttribute('data-text', /approved-42 from the panel/);
    await expect(entries).toHaveCount(1);
    await expect(page.locator('li.lm-TabBar-tab[data-acp-badge="1"]')).toHaveCount(1);

    // the panel, with one inbox entry and a terminal, for the README
    await page.setViewportSize({ width: 1280, height: 900 });
    // widen the right sidebar by dragging its split handle, as a person would
    const handle = page
      .locator('#jp-main-split-panel > .lm-SplitPanel-handle:not(.lm-mod-hidden)')
      .last();
    const box = await handle.boundingBox();
    if (box) {
      await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
      await page.mouse.down();
      await page.mouse.move(box.x - 180, box.y + box.height / 2, { steps: 5 });
      await page.mouse.up();
    }
    await expect(panelTerminal).toBeInViewport();
    await panel.screenshot({ path: path.join(ARTIFACTS, 'panel.png') });

    // 4: reject b in its cell: the inbox empties, the badge goes away
    const cellB = page.locator('.jp-Notebook .jp-Cell').nth(3);
    const cardB = cellB.locator(`${LIVE_TURN} .jupyter-widgets.acp-card`);
    await cardB.getByRole('button', { name: 'Reject', exact: true }).click();
    await expect(entries).toHaveCount(0);
    await expect(page.locator('li.lm-TabBar-tab[data-acp-badge]')).toHaveCount(0);
    await expect(cardB).toContainText('Rejected');

    // the protocol log is folded; opened, it can be saved for a bug report
    const log = panel.locator('.acp-panel-log');
    await expect(log.getByRole('button', { name: 'Save' })).toBeHidden();
    await log.getByText('Protocol log', { exact: true }).click();
    await expect(log.locator('.acp-panel-log-pre')).toContainText('session/request_permission');
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      log.getByRole('button', { name: 'Save' }).click()
    ]);
    expect(download.suggestedFilename()).toMatch(/^acp-embedded-.*\.log$/);

    // 5: the agent list: alive, then exited after %acp close
    await page.notebook.runCell(4);
    await expect(panel.locator('.acp-panel-agent-info[data-state="exited"]')).toContainText(
      'embedded'
    );
    await expect(panel.locator('.acp-panel-agent-info[data-state="alive"]')).toHaveCount(0);
    await expect(page.getByText('IOPub message rate exceeded')).toHaveCount(0);
  });
});

const FLOOD_MIB = 2;
const FLOOD_CONNECT =
  '%acp connect --name embedded -- {sys.executable} -m acp_notebook.agent --data-dir {data}' +
  ` --flood-output ${FLOOD_MIB}`;
const FLOOD_CELLS = [0, 1, 2, 3, 4].map(i => `%%acp --bg --allow '*' --session s${i}\nflood ${i}`);

test.describe('agent side panel under load', () => {
  test('5 sessions streaming at once: all output arrives, iopub stays far below its limit', async ({
    page,
    tmpPath
  }) => {
    await openNotebook(page, tmpPath, 'flood5.ipynb', [SETUP, FLOOD_CONNECT, ...FLOOD_CELLS]);
    await page.notebook.runCell(0);
    await page.notebook.runCell(1);
    const panel = page.locator('#acp-notebook-panel');
    await page.evaluate(() =>
      (window as any).jupyterapp.commands.execute('acp-notebook:show-panel')
    );
    await expect(panel).toBeVisible();

    // count the kernel's comm messages per second, and the longest gap between frames
    await page.evaluate(() => {
      const w = window as any;
      const kernel = w.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
      const rate = { start: performance.now(), perSecond: {} as Record<number, number>, gap: 0 };
      w.acpRate = rate;
      kernel.iopubMessage.connect((_: any, msg: any) => {
        if (msg.header.msg_type === 'comm_msg') {
          const second = Math.floor((performance.now() - rate.start) / 1000);
          rate.perSecond[second] = (rate.perSecond[second] || 0) + 1;
        }
      });
      let last = performance.now();
      const frame = (now: number) => {
        rate.gap = Math.max(rate.gap, now - last);
        last = now;
        if (!w.acpRateStop) {
          requestAnimationFrame(frame);
        }
      };
      requestAnimationFrame(frame);
    });
    // (not Galata's runCell: its click can land on the cell above, whose output still grows)
    for (let i = 0; i < FLOOD_CELLS.length; i++) {
      await runCellInPlace(page, 2 + i);
    }
    // every cell ran once, in order
    expect(await executionCounts(page)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    const terminals = panel.locator('.acp-panel-terminal .acp-terminal');
    await expect(terminals).toHaveCount(5, { timeout: 60000 });
    const sizes = async () =>
      (
        await terminals.evaluateAll(nodes => nodes.map(n => Number(n.getAttribute('data-bytes'))))
      ).reduce((a, b) => a + b, 0);
    await expect.poll(sizes, { timeout: 120000 }).toBeGreaterThanOrEqual(5 * FLOOD_MIB * 2 ** 20);
    // the panel still answers while and after the output streams
    await page.evaluate(() =>
      (window as any).jupyterapp.commands.execute('acp-notebook:show-panel')
    );
    await expect(panel.locator('.acp-panel-session')).toHaveCount(5);
    const result = await page.evaluate(() => {
      const w = window as any;
      w.acpRateStop = true;
      const counts = Object.values(w.acpRate.perSecond) as number[];
      return {
        peak: Math.max(0, ...counts),
        total: counts.reduce((a, b) => a + b, 0),
        seconds: counts.length,
        longestFrameGapMs: Math.round(w.acpRate.gap)
      };
    });
    fs.writeFileSync(path.join(ARTIFACTS, 'panel-rate.json'), JSON.stringify(result, null, 2));
    console.log(`panel under load: ${JSON.stringify(result)}`);
    expect(result.total).toBeGreaterThan(0);
    expect(result.peak).toBeLessThan(1000); // the server's iopub_msg_rate_limit
    await expect(page.getByText('IOPub message rate exceeded')).toHaveCount(0);
  });
});

// -- Notebook 7 ------------------------------------------------------------------------------------

/**
 * Wait until the server answers; return its base URL. The server may have moved to another port
 * (port_retries) when the one asked for was taken, so the port is read from its log.
 */
async function waitForServer(server: ChildProcess, log: string[]): Promise<string> {
  const deadline = Date.now() + 90000;
  while (Date.now() < deadline) {
    if (server.exitCode !== null) {
      throw new Error(`jupyter notebook exited ${server.exitCode}:\n${log.join('')}`);
    }
    const found = /https?:\/\/(?:localhost|127\.0\.0\.1):(\d+)\//.exec(log.join(''));
    if (found) {
      const base = `http://localhost:${found[1]}`;
      try {
        const response = await fetch(`${base}/api/status`);
        if (response.ok) {
          return base;
        }
      } catch {
        // not listening yet
      }
    }
    await new Promise(resolve => setTimeout(resolve, 500));
  }
  throw new Error(`jupyter notebook did not answer:\n${log.join('')}`);
}

test.describe('Notebook 7', () => {
  test('the panel opens in the right sidebar and answers a request', async ({ browser }) => {
    const port = Number(process.env.ACP_UI_PORT || '8899') + 1;
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-nb7-'));
    fs.writeFileSync(
      path.join(root, 'panel7.ipynb'),
      notebook([SETUP, CONNECT, '%acp panel', '%%acp --bg --session n7\n$ echo notebook-$((3+4))'])
    );
    const log: string[] = [];
    // (ui-tests/serve.py: `jupyter notebook`, without what costs each server 1.7 CPU-s)
    const server = spawn(
      process.env.ACP_UI_PYTHON || 'python3',
      [
        'serve.py',
        'notebook',
        '--config',
        'jupyter_server_test_config.py',
        `--ServerApp.port=${port}`,
        '--ServerApp.port_retries=50', // another process (a kernel) may hold that port
        `--ServerApp.root_dir=${root}`,
        '--JupyterNotebookApp.expose_app_in_browser=True'
      ],
      { cwd: UI_TESTS, stdio: ['ignore', 'pipe', 'pipe'] }
    );
    server.stdout?.on('data', chunk => log.push(String(chunk)));
    server.stderr?.on('data', chunk => log.push(String(chunk)));
    const page = await browser.newPage();
    try {
      const base = await waitForServer(server, log);
      await page.goto(`${base}/notebooks/panel7.ipynb`);
      await page.waitForFunction(() => (window as any).jupyterapp?.shell?.currentWidget);
      // wait for the kernel before running everything
      await page.waitForFunction(
        () =>
          (window as any).jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel
            ?.status === 'idle',
        undefined,
        { timeout: 60000 }
      );
      await page.evaluate(() =>
        (window as any).jupyterapp.commands.execute('notebook:run-all-cells')
      );
      const panel = page.locator('#acp-notebook-panel');
      await expect(panel).toBeVisible({ timeout: 60000 });
      const entry = panel.locator('.acp-inbox-entry');
      await expect(entry).toHaveCount(1, { timeout: 60000 });
      await expect(entry).toContainText('echo notebook-$((3+4))');
      await entry.getByRole('button', { name: 'Allow once', exact: true }).click();
      await expect(entry).toHaveCount(0);
      await expect(panel.locator('.acp-panel-terminal .acp-terminal')).toHaveAttribute(
        'data-text',
        /notebook-7/
      );
      await expect(page.locator(`.jp-Cell ${LIVE_TURN} .acp-card`)).toContainText(
        'from the side panel'
      );
      await expect(panel.locator('.acp-panel-session')).toHaveCount(1);
      // the %%acp cell's editor speaks Markdown here too
      await expect
        .poll(() =>
          page.evaluate(
            () => (window as any).jupyterapp.shell.currentWidget.content.widgets[3].model.mimeType
          )
        )
        .toBe('text/x-ipythongfm');
      await page.screenshot({ path: path.join(ARTIFACTS, 'panel-notebook7.png') });
      // the panel fits its sidebar: nothing sticks out on the right, nothing scrolls sideways
      const fit = await page.evaluate(() => {
        const node = document.getElementById('acp-notebook-panel')!;
        const limit = Math.min(
          node.getBoundingClientRect().right,
          (node.parentElement ?? node).getBoundingClientRect().right,
          document.documentElement.clientWidth
        );
        const outside: string[] = [];
        for (const child of Array.from(node.querySelectorAll('*'))) {
          const box = (child as HTMLElement).getBoundingClientRect();
          // inside a box that scrolls or clips sideways (a terminal's screen): that box counts
          let clipped = false;
          for (let up = child.parentElement; up && up !== node; up = up.parentElement) {
            if (getComputedStyle(up).overflowX !== 'visible') {
              clipped = true;
              break;
            }
          }
          if (!clipped && box.width > 0 && box.right > limit + 1) {
            outside.push(`${child.tagName}.${(child as HTMLElement).className}`.slice(0, 80));
          }
        }
        return { scroll: node.scrollWidth, client: node.clientWidth, outside };
      });
      expect(fit.outside).toEqual([]);
      expect(fit.scroll).toBeLessThanOrEqual(fit.client);
      // and it opened wide enough for session ids (Notebook 7 starts it at a quarter window)
      const width = await panel.evaluate(n => n.getBoundingClientRect().width);
      expect(width).toBeGreaterThanOrEqual(360);
    } finally {
      await page.close();
      server.kill('SIGTERM');
    }
  });
});

void galata;
