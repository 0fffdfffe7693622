/**
 * What the specs use of Galata, imported from the modules that define it rather than from
 * '@jupyterlab/galata': that package's index also loads Galata's benchmark reporter, and with it
 * @stdlib/stats and vega, which no spec uses: 0.8 of the 1.3 CPU-seconds that loading the index
 * costs, paid by Playwright's runner (it loads the spec files to list their tests) and again by
 * each worker. Specs import Galata from here (tests/test_browser.py checks).
 */
export { expect } from '@playwright/test';
export { test } from '@jupyterlab/galata/lib/fixtures';
export { galata } from '@jupyterlab/galata/lib/galata';
export type { IJupyterLabPageFixture } from '@jupyterlab/galata/lib/jupyterlabpage';
