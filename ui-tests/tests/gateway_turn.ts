/**
 * The turn the gateway specs run (not a spec file: Playwright does not collect it). JupyterLab's
 * kernels run behind a gateway that tests/test_browser.py starts on 127.0.0.1, pointing the
 * server at it with --GatewayClient.url. jupyter_server's relay of gateway websockets decodes
 * every binary frame as UTF-8, so a message with buffers (a terminal's bytes) killed the
 * kernel's connection; behind a gateway the terminal's bytes travel as base64 text
 * (docs/gateway-relay.md).
 */
import { expect, test } from './galata';

import { cellOutput, connectEmbedded, FINAL_RECORD, LIVE_TURN, openNotebook } from './notebook';

// the kernel's own finding: KERNEL_GATEWAY=1 from a Kernel Gateway, KERNEL_ID from an
// Enterprise Gateway
const CONNECT = connectEmbedded([
  'from acp_notebook._widgets._terminal import text_safe_default',
  "print('behind a gateway:', text_safe_default())"
]);

const ALLOWED = ['%%acp --allow "printf *"', String.raw`$ printf 'alpha\nbravo\ncharlie\n'`].join(
  '\n'
);
const ASKED = ['%%acp', '$ touch approved.txt'].join('\n');
const AFTER = 'print("after:", os.path.exists("approved.txt"), 6 * 7)';

/** One test: an embedded agent connects, a terminal's rows read right, a card is allowed, the
 * next cell runs; `gateway` names the gateway in the test's title. */
export function gatewayTurn(gateway: string): void {
  test.describe(`behind ${gateway}`, () => {
    test('terminal rows read right, a card works, and the next cell runs', async ({
      page,
      tmpPath
    }) => {
      test.setTimeout(240000);
      await openNotebook(page, tmpPath, 'gateway.ipynb', [CONNECT, ALLOWED, ASKED, AFTER]);
      await page.notebook.runCell(0);
      await expect(cellOutput(page, 0)).toContainText('behind a gateway: True');
      await expect(cellOutput(page, 0)).toContainText("acp: connected 'embedded'");

      await page.notebook.runCell(1);
      const rows = cellOutput(page, 1).locator(`${LIVE_TURN} .acp-terminal .xterm-rows`);
      await expect(rows).toContainText('alpha');
      await expect(rows).toContainText('bravo');
      await expect(rows).toContainText('charlie');

      await page.notebook.runCell(2, { wait: false });
      const card = cellOutput(page, 2).locator(`${LIVE_TURN} .acp-card`);
      const allow = card.getByRole('button', { name: 'Allow once', exact: true });
      await expect(allow).toBeEnabled({ timeout: 60000 });
      await allow.click();
      await expect(card.locator('.acp-card-decision')).toContainText('Approved: Allow once');
      await expect(cellOutput(page, 2).locator(FINAL_RECORD)).toContainText('finished', {
        timeout: 60000
      });

      await page.notebook.runCell(3);
      await expect(cellOutput(page, 3)).toContainText('after: True 42');
    });
  });
}
