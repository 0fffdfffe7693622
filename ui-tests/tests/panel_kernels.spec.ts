/**
 * The side panel across kernels: two notebooks, each with its own kernel and agent, share one
 * panel (a section per notebook, named, the active one first); the tab badge counts both; a
 * kernel restart leaves "kernel restarted" and nothing live-looking; `%%acp` cells are
 * highlighted as Markdown.
 */
import * as path from 'path';

// a page of its own for each test, not the shared one: see panel.spec.ts
import { expect, test } from './galata';
import type { Page } from '@playwright/test';

import { ARTIFACTS, openNotebook } from './notebook';

const SETUP = ['%load_ext acp_notebook', 'import sys, tempfile', 'data = tempfile.mkdtemp()'].join(
  '\n'
);
const CONNECT =
  '%acp connect --name embedded -- {sys.executable} -m acp_notebook.agent --data-dir {data}';
const WAITING = '%%acp --bg --session one\nThis one waits for you.\n$ echo from-notebook-one';
const WAITING_AGAIN = '%%acp --bg --session again\n$ echo second-request';

/** Every element of the panel lies inside it horizontally, and nothing scrolls sideways. */
async function overflow(
  page: Page
): Promise<{ scroll: number; client: number; outside: string[] }> {
  return page.evaluate(() => {
    const panel = document.getElementById('acp-notebook-panel')!;
    const right = panel.getBoundingClientRect().right;
    const outside: string[] = [];
    for (const node of Array.from(panel.querySelectorAll('*'))) {
      const box = (node as HTMLElement).getBoundingClientRect();
      // inside a box that scrolls or clips sideways (a terminal's screen): that box counts
      let clipped = false;
      for (let up = node.parentElement; up && up !== panel; up = up.parentElement) {
        if (getComputedStyle(up).overflowX !== 'visible') {
          clipped = true;
          break;
        }
      }
      if (!clipped && box.width > 0 && box.right > right + 1) {
        outside.push(`${node.tagName}.${(node as HTMLElement).className}`.slice(0, 80));
      }
    }
    return { scroll: panel.scrollWidth, client: panel.clientWidth, outside };
  });
}

test.describe('side panel across notebooks', () => {
  test('two notebooks: one inbox, named sections, a badge for both; then a kernel restart', async ({
    page,
    tmpPath
  }) => {
    test.setTimeout(240000);
    await page.setViewportSize({ width: 1400, height: 900 });
    await openNotebook(page, tmpPath, 'one.ipynb', [SETUP, CONNECT, WAITING, WAITING_AGAIN]);
    await page.notebook.runCell(0);
    await page.notebook.runCell(1);
    const panel = page.locator('#acp-notebook-panel');
    // the panel is made on connect (its tab counts requests) but does not open by itself
    await expect(panel).toBeHidden();
    await page.notebook.runCell(2);
    const tab = page.locator('li.lm-TabBar-tab[data-id="acp-notebook-panel"]');
    await expect(tab).toHaveAttribute('data-acp-badge', '1');

    // %%acp cells are Markdown in the editor; the others stay Python
    const mimes = await page.evaluate(() =>
      (window as any).jupyterapp.shell.currentWidget.content.widgets.map(
        (c: any) => c.model.mimeType
      )
    );
    expect(mimes).toEqual([
      'text/x-ipython',
      'text/x-ipython',
      'text/x-ipythongfm',
      'text/x-ipythongfm'
    ]);
    // and the editor follows: "This one waits for you." has no Python keyword token ("for")
    const prose = page.locator('.jp-Cell').nth(2).locator('.cm-line').nth(1);
    await expect(prose).toHaveText('This one waits for you.');
    await expect(prose.locator('span')).toHaveCount(0);
    const python = page.locator('.jp-Cell').nth(0).locator('.cm-line').nth(1);
    await expect(python.locator('span').first()).toHaveText('import'); // Python cells unchanged
    await page
      .locator('.jp-Cell')
      .nth(2)
      .screenshot({ path: path.join(ARTIFACTS, 'acp-cell-markdown.png') });

    await openNotebook(page, tmpPath, 'two.ipynb', [SETUP, CONNECT]);
    await page.notebook.runCell(0);
    await page.notebook.runCell(1);

    // a person clicks the tab
    await tab.click();
    await expect(panel).toBeVisible();
    const sections = panel.locator('.acp-kernel-section');
    await expect(sections).toHaveCount(2);
    // the notebook with a request waiting first, even though the other one is active (issue
    // 25, finding 9): its request is not below the active notebook's sections and log
    await expect(sections.nth(0)).toHaveAttribute('data-notebook', /one\.ipynb$/);
    await expect(sections.nth(1)).toHaveAttribute('data-notebook', /two\.ipynb$/);
    const two = panel.locator('.acp-kernel-section[data-notebook$="two.ipynb"]');
    await expect(two.locator('.acp-kernel-section-header')).toContainText('two.ipynb');
    await expect(two.locator('.acp-kernel-section-header')).toContainText('no pending requests');
    // the logs fold: the active notebook's log does not push anything down
    await expect(two.locator('.acp-panel-log')).toContainText('Protocol log');
    await expect(two.locator('.acp-panel-log .acp-panel-log-pick')).toBeHidden();
    const one = panel.locator('.acp-kernel-section[data-notebook$="one.ipynb"]');
    await expect(one.locator('.acp-kernel-section-header')).toContainText('1 pending');
    const entry = one.locator('.acp-inbox-entry');
    await expect(entry).toHaveCount(1);
    await expect(entry).toBeVisible();
    await expect(entry).toContainText('echo from-notebook-one');
    await expect(panel.locator('.acp-side-panel-header')).toContainText('1 pending');
    await expect(tab).toHaveAttribute('data-acp-badge', '1');

    // with the panel open the badge still shows its number (not an empty pill)
    const badge = await tab.evaluate(node => getComputedStyle(node, '::before').content);
    expect(badge).toBe('"1"');
    const border = await tab.evaluate(node => getComputedStyle(node, '::after').backgroundColor);
    expect(border).toBe('rgba(0, 0, 0, 0)'); // JupyterLab's own ::after, not an orange pill
    const sidebar = page.locator('#jp-right-stack');
    await sidebar.screenshot({ path: path.join(ARTIFACTS, 'panel-two-notebooks.png') });
    await page
      .locator('.jp-SideBar.jp-mod-right')
      .screenshot({ path: path.join(ARTIFACTS, 'panel-tab-badge.png') });

    // wide enough for session ids: nothing sticks out, nothing scrolls sideways
    const box = await sidebar.boundingBox();
    expect(box!.width).toBeGreaterThanOrEqual(360);
    const fit = await overflow(page);
    expect(fit.outside).toEqual([]);
    expect(fit.scroll).toBeLessThanOrEqual(fit.client);

    // collapsing a section keeps its header (and its count)
    await two.locator('.acp-kernel-section-header').click();
    await expect(two.locator('.acp-kernel-section-header')).toHaveAttribute(
      'aria-expanded',
      'false'
    );
    await expect(two.locator('.acp-panel-agents')).toBeHidden();
    await two.locator('.acp-kernel-section-header').click();
    await expect(two.locator('.acp-panel-agents')).toBeVisible();

    // answer notebook one's request from here
    await entry.getByRole('button', { name: 'Allow once', exact: true }).click();
    await expect(one.locator('.acp-kernel-section-header')).toContainText('no pending requests');
    await expect(tab).not.toHaveAttribute('data-acp-badge', /.*/);
    await expect(one.locator('.acp-panel-terminal .acp-terminal')).toHaveAttribute(
      'data-text',
      /from-notebook-one/
    );

    // back in notebook one: another request waits, the agent is alive; then its kernel restarts
    await page.notebook.activate('one.ipynb');
    await expect(sections.nth(0)).toHaveAttribute('data-notebook', /one\.ipynb$/);
    await page.notebook.runCell(3);
    await expect(one.locator('.acp-kernel-section-header')).toContainText('1 pending');
    await expect(one.locator('.acp-panel-agent-info[data-state="alive"]')).toContainText(
      'alive · pid'
    );
    await page.evaluate(() =>
      (window as any).jupyterapp.shell.currentWidget.sessionContext.restartKernel()
    );
    await expect(one).toHaveAttribute('data-state', 'gone');
    await expect(one.locator('.acp-kernel-section-header')).toContainText('kernel restarted');
    await expect(one).toContainText('pending requests and terminals are gone');
    // nothing live-looking stays: no request, no "alive · pid", no terminal, no buttons
    await expect(one.locator('.acp-inbox-entry')).toHaveCount(0);
    await expect(one).not.toContainText('alive · pid');
    await expect(one.locator('.acp-terminal')).toHaveCount(0);
    await expect(one.locator('button')).toHaveCount(0);
    await expect(one.locator('.acp-kernel-section-header')).not.toContainText('pending requests');
    await expect(tab).not.toHaveAttribute('data-acp-badge', /.*/);
    await expect(panel.locator('.acp-side-panel-header')).toHaveText('ACP agents');
    // the other notebook's kernel is untouched
    await expect(two).toHaveAttribute('data-state', 'live');
    await expect(two.locator('.acp-panel-agent-info[data-state="alive"]')).toHaveCount(1);
    await sidebar.screenshot({ path: path.join(ARTIFACTS, 'panel-kernel-restarted.png') });
  });
});
