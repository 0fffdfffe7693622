/**
 * Helpers shared by the browser tests (not a spec file: Playwright does not collect it).
 */
import * as path from 'path';

import type { IJupyterLabPageFixture } from './galata';
import type { Locator, Page } from '@playwright/test';

/**
 * Galata waits at most 15 s for a condition it is given no limit for: JupyterLab's start
 * (`waitForAppStarted`, the Launcher tab becoming active), a file listed in the file browser. In
 * a loaded CI run (four pytest workers beside two browsers) JupyterLab took longer to start and
 * two specs failed before their first line ("Timed out waiting for condition to be fulfilled").
 * Those waits get 90 s instead (a test has 120 s): still a condition, never a sleep. Every spec
 * imports this module, so the limit is set before any of Galata's fixtures runs.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const galataUtils = require('@jupyterlab/galata/lib/utils') as {
  waitForCondition: (fn: () => boolean | Promise<boolean>, timeout?: number) => Promise<void>;
};
const galataWait = galataUtils.waitForCondition;
galataUtils.waitForCondition = (fn, timeout) => galataWait(fn, timeout ?? 90000);

/**
 * Galata's `runCell` (and `runCellByCell`, `run`) waits for the cell by polling forever: for the
 * status bar's "Idle" with no limit, then for the cell's execution count with no limit at all.
 * A cell that never finishes then costs the whole test's timeout, and the report names no line.
 * The same wait, bounded: a cell gets `RUN_LIMIT` ms, then fails saying which cell it was.
 */
export const RUN_LIMIT = 150000;
// eslint-disable-next-line @typescript-eslint/no-require-imports
const galataNotebook = require('@jupyterlab/galata/lib/helpers/notebook') as {
  NotebookHelper: {
    prototype: { waitForRun(this: { page: Page }, cellIndex?: number): Promise<void> };
  };
};
galataNotebook.NotebookHelper.prototype.waitForRun = async function (cellIndex?: number) {
  const started = Date.now();
  await this.page.locator('#jp-main-statusbar >> text=Idle').waitFor({ timeout: RUN_LIMIT });
  const executed = (index: number | undefined) =>
    (
      window as unknown as { galata: { haveBeenExecuted(i?: number): boolean } }
    ).galata.haveBeenExecuted(index);
  // polled in the page (not a round trip to it every few milliseconds: that cost the browser
  // and the test runner CPU that a loaded run does not have)
  const left = Math.max(1, RUN_LIMIT - (Date.now() - started));
  await this.page
    .waitForFunction(executed, cellIndex, { polling: 50, timeout: left })
    .catch((error: unknown) => {
      throw new Error(
        `cell ${cellIndex ?? '(all)'} did not finish within ${RUN_LIMIT / 1000} s: ${String(error)}`
      );
    });
};

/**
 * Run cell `index` and wait for it, without a click or a key press. Galata's `runCell` clicks the
 * cell's top left corner, then presses Shift+Enter. While the output of a cell above it still
 * grows (a terminal streaming), the cell can move down between the click's aim and the click,
 * which then lands on the cell above: most likely why, in a CI run, the cell above ran a second
 * time (one execution count too many) and this one never ran. Here the cell is made active in the
 * page and run by the notebook's `notebook:run-cell` command. Galata's `runCell` stays in use
 * wherever no output above the cell grows while it runs.
 */
export async function runCellInPlace(page: IJupyterLabPageFixture, index: number): Promise<void> {
  await page.evaluate(i => {
    const w = window as unknown as {
      galata: { resetExecutionCount(i: number): void };
      jupyterapp: {
        shell: { currentWidget: { content: { activeCellIndex: number } } };
        commands: { execute(id: string): Promise<unknown> };
      };
    };
    w.galata.resetExecutionCount(i);
    w.jupyterapp.shell.currentWidget.content.activeCellIndex = i;
    // not awaited: the command settles when the cell has run, which waitForRun waits for
    void w.jupyterapp.commands.execute('notebook:run-cell');
  }, index);
  await page.notebook.waitForRun(index);
}

/** The execution counts of the active notebook's cells (null for a cell not run). */
export async function executionCounts(page: IJupyterLabPageFixture): Promise<(number | null)[]> {
  return page.evaluate(() => {
    const w = window as unknown as {
      jupyterapp: {
        shell: {
          currentWidget: {
            content: { widgets: readonly { model: { executionCount?: number | null } }[] };
          };
        };
      };
    };
    return w.jupyterapp.shell.currentWidget.content.widgets.map(
      cell => cell.model.executionCount ?? null
    );
  });
}

/** Where screenshots go (git-ignored; `docs/images/` holds the committed copy). */
export const ARTIFACTS = path.resolve(__dirname, '..', '..', 'test-artifacts');

/**
 * How a card says a click decided it in these tests: Galata's mock user is "jovyan", and the
 * labextension gives the kernel connection the signed-in user's name (src/identity.ts).
 */
export const BY_A_CLICK = 'by a click from jovyan';

/** A notebook file whose cells are the given sources (uploaded, not typed, so no autoclose). */
export function notebook(sources: string[]): string {
  return JSON.stringify({
    cells: sources.map(source => ({
      cell_type: 'code',
      execution_count: null,
      metadata: {},
      outputs: [],
      source
    })),
    metadata: {
      kernelspec: { display_name: 'Python 3', language: 'python', name: 'python3' }
    },
    nbformat: 4,
    nbformat_minor: 5
  });
}

/** Upload a notebook made of `sources` into the test's directory and open it. */
export async function openNotebook(
  page: IJupyterLabPageFixture,
  tmpPath: string,
  name: string,
  sources: string[]
): Promise<void> {
  await page.contents.uploadContent(notebook(sources), 'text', `${tmpPath}/${name}`);
  await openPath(page, `${tmpPath}/${name}`);
}

/**
 * Open a notebook by its path through the document manager and make it the current tab.
 * (Galata's `openByPath` double-clicks it in the file browser, which first waits up to 15 s for
 * a file uploaded behind the browser's back to be listed: a flake on a loaded machine.)
 */
export async function openPath(page: IJupyterLabPageFixture, filePath: string): Promise<void> {
  await page.evaluate(async where => {
    const app = (window as any).jupyterapp;
    await app.commands.execute('docmanager:open', { path: where });
  }, filePath);
  const name = path.basename(filePath);
  // the tab galata's `activate` clicks (it gives up at once when there is none yet)
  await page.getByRole('main').getByRole('tab', { name }).waitFor();
  await page.notebook.activate(name);
}

/** The output area of code cell `index` of the active notebook. */
export function cellOutput(page: IJupyterLabPageFixture, index: number): Locator {
  return page
    .locator('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell')
    .nth(index)
    .locator('.jp-OutputArea');
}

/**
 * Inside a `%%acp` cell's output: its live turn view (the widgets). The cell's output also holds
 * the turn's saved record (`.acp-turn-static`, hidden while the live view can render) with the
 * same classes inside (`.acp-terminal`, `.acp-card`, ...), so a locator for a live element
 * starts here or it may name two elements.
 */
export const LIVE_TURN = '.acp-turn:not(.acp-turn-static)';

/**
 * Inside a `%%acp` cell's output: the turn's final transcript. While the turn runs, the record
 * slot (`.acp-static-running`) holds a transcript too; this names the final one only.
 */
export const FINAL_RECORD = '.acp-turn-static:not(.acp-static-running *)';

/** Inside a `%%acp` cell's output: the transcript saved while the turn still ran. */
export const RUNNING_RECORD = '.acp-static-running .acp-turn-static';

/**
 * A cell that connects the embedded agent with a fresh temporary cwd (also the kernel's cwd)
 * and data dir, so nothing the agent runs lands in the repository or the Jupyter root;
 * `before` runs after the chdir, before `%load_ext`.
 */
export function connectEmbedded(before: string[] = []): string {
  return [
    'import os, sys, tempfile',
    'work = tempfile.mkdtemp(prefix="acp-ui-")',
    'os.chdir(work)',
    ...before,
    '%load_ext acp_notebook',
    '%acp connect --name embedded --cwd {work} -- ' +
      '{sys.executable} -m acp_notebook.agent --data-dir {work}/.agent-data'
  ].join('\n');
}
