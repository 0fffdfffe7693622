/**
 * Helpers shared by the browser tests (not a spec file: Playwright does not collect it).
 */
import * as path from 'path';

import type { IJupyterLabPageFixture } from '@jupyterlab/galata';
import type { Locator } from '@playwright/test';

/** Where screenshots go (git-ignored; `docs/images/` holds the committed copy). */
export const ARTIFACTS = path.resolve(__dirname, '..', '..', 'test-artifacts');

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
  await page.notebook.openByPath(`${tmpPath}/${name}`);
  await page.notebook.activate(name);
}

/** The output area of code cell `index` of the active notebook. */
export function cellOutput(page: IJupyterLabPageFixture, index: number): Locator {
  return page.locator('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell')
    .nth(index)
    .locator('.jp-OutputArea');
}
