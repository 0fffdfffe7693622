/**
 * Galata's `test`, with one JupyterLab page for all the tests a Playwright worker runs (a group
 * of tests/test_browser.py runs its spec files on one worker) instead of a page load per test.
 *
 * A page load costs about 5 CPU-seconds of Chromium and Playwright (JupyterLab starting in the
 * page), more than most tests' own work. What a test needs of a fresh page is a fresh notebook,
 * which it opens itself (`openNotebook`, a new file in the test's own `tmpPath`); what else a
 * test leaves behind is put back after it, so the next one starts as on a fresh page:
 *
 * - every tab in the main area is closed unsaved (no "save?" dialog: the files are the test's),
 *   which leaves the Launcher that a page starts with;
 * - every session, kernel and terminal of the server is shut down (a group's server is its own;
 *   Galata's own page fixture shuts down those the test started);
 * - the file browser at the server's root (where the page started), the right sidebar
 *   collapsed, the light theme, the kernel manager's subshell switch as the page started;
 * - the viewport the configuration gives (tests resize it), before the next test;
 * - no permission granted (a test that reads the clipboard grants it to the `context` it is
 *   given: this page's);
 * - no dialog left open.
 *
 * A failed test ends its worker (Playwright starts a new one, with a new browser), so a page
 * is never shared past a failure. Specs import `test` and `expect` from here instead of
 * Galata; specs that need pages of their own (two users, another server) use Galata's (from
 * ./galata.ts, as everything of Galata).
 */
import { expect, galata, test as base } from './galata';
import type { IJupyterLabPageFixture } from './galata';
import type { APIRequestContext, Browser, BrowserContext } from '@playwright/test';

export { expect };

/** this worker's browser context (made by its first test) and its page (by the first that asks) */
let context: BrowserContext | undefined;
let shared: { page: IJupyterLabPageFixture; subshells: unknown } | undefined;

/** the context options the configuration gives, and the base URL */
async function sharedContext(
  browser: Browser,
  baseURL: string | undefined,
  viewport: { width: number; height: number } | null
): Promise<BrowserContext> {
  context ??= await browser.newContext({ baseURL, viewport, reducedMotion: 'reduce' });
  return context;
}

/** Shut down every session, kernel and terminal the group's server runs. */
async function stopRunners(request: APIRequestContext): Promise<void> {
  const running = async (kind: string) => {
    const listed = await request.get(`/api/${kind}`);
    expect(listed.ok(), `GET /api/${kind}`).toBe(true);
    return (await listed.json()) as { id?: string; name?: string }[];
  };
  for (const kind of ['sessions', 'kernels', 'terminals']) {
    // asked again until none is left: a DELETE can fail while a kernel restarts
    await expect
      .poll(
        async () => {
          for (const runner of await running(kind)) {
            await request.delete(`/api/${kind}/${kind === 'terminals' ? runner.name : runner.id}`);
          }
          return running(kind);
        },
        { message: `every one of /api/${kind} shut down` }
      )
      .toEqual([]);
  }
}

/** Put the page back as it started (see the module's doc). */
async function tidy(page: IJupyterLabPageFixture, subshells: unknown): Promise<void> {
  const dialogs = page.locator('.jp-Dialog');
  while ((await dialogs.count()) > 0) {
    await page.keyboard.press('Escape');
    await expect(dialogs).toHaveCount(0);
  }
  await page.evaluate(async chosen => {
    const app = (window as any).jupyterapp;
    await app.restored;
    app.shell.collapseRight();
    app.serviceManager.kernels.commsOverSubshells = chosen;
  }, subshells);
  // Every tab closed but one Launcher (JupyterLab opens one in an empty main area by itself),
  // again until that is what is left: after a reload in the test, the restored layout may
  // still be opening a tab.
  await expect
    .poll(() =>
      page.evaluate(() => {
        const app = (window as any).jupyterapp;
        const widgets = Array.from(app.shell.widgets('main')) as any[];
        const kept = widgets.find(widget => widget.title.label === 'Launcher');
        for (const widget of widgets) {
          if (widget !== kept) {
            if (widget.context?.model) {
              widget.context.model.dirty = false;
            }
            widget.dispose();
          }
        }
        return (Array.from(app.shell.widgets('main')) as any[]).map(widget => widget.title.label);
      })
    )
    .toEqual(['Launcher']);
  // The file browser follows a reload into the test's tmpPath, removed after the test (it would
  // then say "Directory not found" in a dialog): back to the root, again until it is there
  // (the layout a reload restores may move it after the first time).
  await expect
    .poll(async () => {
      await page.evaluate(() =>
        (window as any).jupyterapp.commands.execute('filebrowser:go-to-path', {
          path: '',
          dontShowBrowser: true
        })
      );
      return page.filebrowser.getCurrentDirectory();
    })
    .toBe('');
  if ((await page.theme.getTheme()) !== 'JupyterLab Light') {
    await page.theme.setLightTheme();
  }
}

export const test = base.extend<
  { context: BrowserContext; page: IJupyterLabPageFixture },
  { sharedPageEnd: void }
>({
  context: async ({ baseURL, browser, viewport }, use) => {
    const shared = await sharedContext(browser, baseURL, viewport);
    await use(shared);
    await shared.clearPermissions();
  },
  page: async (
    {
      appPath,
      baseURL,
      context,
      mockConfig,
      mockSettings,
      mockState,
      mockUser,
      request,
      tmpPath,
      viewport,
      waitForApplication
    },
    use
  ) => {
    // (tmpPath, asked for here, is removed after this fixture's end: the tabs on its files close
    // first)
    void tmpPath;
    if (shared === undefined) {
      const page = await galata.initTestPage(
        appPath,
        false,
        baseURL!,
        mockConfig,
        mockSettings,
        mockState,
        mockUser,
        await context.newPage(),
        null,
        null,
        '',
        waitForApplication,
        null,
        true
      );
      // JupyterLab with no tree path: the file browser at the server's root (each test's files
      // are in its own tmpPath, which it names)
      await page.goto('?reset');
      const subshells = await page.evaluate(
        () => (window as any).jupyterapp.serviceManager.kernels.commsOverSubshells
      );
      shared = { page, subshells };
    } else if (viewport) {
      await shared.page.setViewportSize(viewport);
    }
    await use(shared.page);
    await tidy(shared.page, shared.subshells);
    await stopRunners(request);
  },
  sharedPageEnd: [
    // eslint-disable-next-line no-empty-pattern
    async ({}, use) => {
      await use();
      await context?.close();
      context = shared = undefined;
    },
    { scope: 'worker', auto: true }
  ]
});
