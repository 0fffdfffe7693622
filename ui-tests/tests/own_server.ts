/**
 * The URL of the server a spec runs against when it needs one of its own: a gateway's, one with
 * the extension disabled, the classic notebook's, one with real-time collaboration. The spec's
 * group starts it beside the group's JupyterLab (tests/test_browser.py's OWN_SERVERS, through
 * playwright.config.js's ACP_UI_SERVERS) and names its URL in ACP_UI_URL_<NAME>. A spec sets it
 * as its base URL, and is skipped where nobody started it (`jlpm playwright test` by hand; under
 * tests/test_browser.py a skipped test fails the group):
 *
 *     const server = ownServer('gateway');
 *     test.use({ baseURL: server });
 *     test.skip(!server, NO_OWN_SERVER);
 */
export function ownServer(name: string): string | undefined {
  return process.env[`ACP_UI_URL_${name.toUpperCase()}`] || undefined;
}

/** Why a spec whose server nobody started is skipped */
export const NO_OWN_SERVER =
  'needs a server of its own, which tests/test_browser.py starts (python3 -m pytest tests/test_browser.py)';
