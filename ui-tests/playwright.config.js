/**
 * Galata/Playwright configuration: Debian's chromium (no browser download), no video (it would
 * need Playwright's own ffmpeg), a JupyterLab server started from jupyter_server_test_config.py.
 */
const fs = require('fs');
const path = require('path');
const baseConfig = require('@jupyterlab/galata/lib/playwright-config');

const port = process.env.ACP_UI_PORT || '8899';
// ACP_UI_APP=nbclassic: the classic notebook instead of JupyterLab (tests/test_browser.py's
// group "classic", whose specs use Playwright without Galata)
const classic = process.env.ACP_UI_APP === 'nbclassic';
const app = classic ? 'nbclassic' : 'lab';
const artifacts = path.resolve(__dirname, '..', 'test-artifacts');
// Debian's chromium-headless-shell where installed (lighter than the full browser run headless;
// tests/test_browser.py says more and sets ACP_CHROMIUM), else its chromium
const headlessShell = '/usr/bin/chromium-headless-shell';
const chromium =
  process.env.ACP_CHROMIUM || (fs.existsSync(headlessShell) ? headlessShell : '/usr/bin/chromium');

module.exports = {
  ...baseConfig,
  reporter: [['list']],
  timeout: 120000,
  expect: { timeout: 30000 },
  retries: 0,
  workers: 1,
  outputDir: path.join(artifacts, process.env.ACP_UI_OUTPUT || 'playwright-output'),
  use: {
    ...baseConfig.use,
    baseURL: `http://localhost:${port}`,
    trace: 'off',
    reducedMotion: 'reduce',
    // a click or fill that cannot happen fails after a minute, naming its line, rather than
    // spending what is left of the test's time (Playwright's default is no limit)
    actionTimeout: 60000,
    video: 'off',
    screenshot: 'only-on-failure',
    launchOptions: {
      executablePath: chromium,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking']
    }
  },
  webServer: {
    // port_retries=0 (Galata's server config sets it too): a taken port fails the start
    // (tests/test_browser.py starts the group again on another port), never a server on some
    // other port while this one is awaited
    // ACP_UI_SERVER_ARGS: more options for a group's server (the gateway group's
    // --GatewayClient.url and token)
    // serve.py: `jupyter ${app}` without a module that costs each server 1.3 CPU-s (its doc);
    // ACP_UI_PYTHON: the Python whose Jupyter runs the tests (tests/test_browser.py sets it)
    command: `${process.env.ACP_UI_PYTHON || 'python3'} serve.py ${app} --config jupyter_server_test_config.py --ServerApp.port=${port} --ServerApp.port_retries=0 ${process.env.ACP_UI_SERVER_ARGS || ''}`,
    url: `http://localhost:${port}/${classic ? 'nbclassic/tree' : 'lab'}`,
    timeout: 120000,
    reuseExistingServer: !process.env.CI
  }
};
