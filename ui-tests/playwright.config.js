/**
 * Galata/Playwright configuration: Debian's chromium (no browser download), no video (it would
 * need Playwright's own ffmpeg), a JupyterLab server started from jupyter_server_test_config.py,
 * and the servers of the specs that need one of their own (ACP_UI_SERVERS).
 */
const fs = require('fs');
const path = require('path');
const baseConfig = require('@jupyterlab/galata/lib/playwright-config');

const port = process.env.ACP_UI_PORT || '8899';
const artifacts = path.resolve(__dirname, '..', 'test-artifacts');
// Debian's chromium-headless-shell where installed (lighter than the full browser run headless;
// tests/test_browser.py says more and sets ACP_CHROMIUM), else its chromium
const headlessShell = '/usr/bin/chromium-headless-shell';
const chromium =
  process.env.ACP_CHROMIUM || (fs.existsSync(headlessShell) ? headlessShell : '/usr/bin/chromium');

/** `python serve.py APP ...` on `port`: a group's server (see webServer below) */
function serverCommand(app, port, args) {
  return `${process.env.ACP_UI_PYTHON || 'python3'} serve.py ${app} --config jupyter_server_test_config.py --ServerApp.port=${port} --ServerApp.port_retries=0 ${args || ''}`;
}

/** Where Playwright waits for a server to answer before the tests start */
function serverURL(app, port) {
  return `http://localhost:${port}/${app === 'nbclassic' ? 'nbclassic/tree' : 'lab'}`;
}

// ACP_UI_SERVERS: the servers of the group's specs that run against a server of their own
// (tests/test_browser.py's OWN_SERVERS: a gateway's, one with the extension disabled, the
// classic notebook's, one with real-time collaboration), a JSON list of {name, app, port, args,
// env}; each spec finds its URL in ACP_UI_URL_<NAME> (tests/own_server.ts)
const ownServers = JSON.parse(process.env.ACP_UI_SERVERS || '[]');

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
  webServer: [
    {
      // port_retries=0 (Galata's server config sets it too): a taken port fails the start
      // (tests/test_browser.py starts the group again on other ports), never a server on some
      // other port while this one is awaited
      // serve.py: `jupyter lab` without a module that costs each server 1.3 CPU-s (its doc);
      // ACP_UI_PYTHON: the Python whose Jupyter runs the tests (tests/test_browser.py sets it)
      command: serverCommand('lab', port, ''),
      url: serverURL('lab', port),
      timeout: 120000,
      reuseExistingServer: !process.env.CI
    },
    // (started one after another, each awaited; they stop when the run ends)
    ...ownServers.map(server => ({
      name: server.name,
      command: serverCommand(server.app, server.port, server.args),
      url: serverURL(server.app, server.port),
      env: server.env,
      timeout: 120000,
      reuseExistingServer: false
    }))
  ]
};
