/**
 * The URL of the server a spec runs against when it needs one of its own: a gateway's, one with
 * the extension disabled, the classic notebook's, one with real-time collaboration. The spec's
 * group starts it beside the group's JupyterLab (tests/test_browser.py's OWN_SERVERS, through
 * playwright.config.js's ACP_UI_SERVERS) and names its URL in ACP_UI_URL_<NAME>. A spec sets it
 * as its base URL: `test.use({ baseURL: ownServer('gateway') })`.
 */
export function ownServer(name: string): string {
  const variable = `ACP_UI_URL_${name.toUpperCase()}`;
  const url = process.env[variable];
  if (!url) {
    throw new Error(
      `${variable} is not set: this spec needs a server of its own, which tests/test_browser.py ` +
        'starts (python3 -m pytest tests/test_browser.py)'
    );
  }
  return url;
}
