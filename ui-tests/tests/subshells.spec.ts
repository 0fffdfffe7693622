/**
 * JupyterLab 4.4+ sends widget messages over subshells of the kernel (ipykernel 7) by default
 * (`commsOverSubshells`: `perCommTarget`, what every other spec runs with). A person can change
 * that setting; clicks and form edits must reach the kernel in each mode, and the kernel must
 * read busy while the cell waits on them: `disabled` (the main shell, handled beside the
 * awaiting cell) and `perComm` (a subshell per widget model).
 */
import { expect, test } from './shared_page';

import { CONNECT_SCENARIOS, CONNECTED_SCENARIOS, field, fillDeploymentForm } from './forms';
import { BY_A_CLICK, LIVE_TURN, cellOutput, connectEmbedded, openNotebook } from './notebook';

const ASKED = ['%%acp', '$ touch approved.txt'].join('\n');
const CHECK = 'print("approved:", os.path.exists("approved.txt"))';

for (const mode of ['disabled', 'perComm']) {
  test.describe(`widget messages with commsOverSubshells ${mode}`, () => {
    test.beforeEach(async ({ page }) => {
      await page.evaluate(chosen => {
        (window as any).jupyterapp.serviceManager.kernels.commsOverSubshells = chosen;
      }, mode);
    });

    test('a click on a card runs the command, the kernel busy while it waits', async ({
      page,
      tmpPath
    }) => {
      await openNotebook(page, tmpPath, `approve-${mode}.ipynb`, [connectEmbedded(), ASKED, CHECK]);
      await page.notebook.runCell(0);
      await expect(cellOutput(page, 0)).toContainText("acp: connected 'embedded'");
      await page.notebook.runCell(1, { wait: false });
      const card = cellOutput(page, 1).locator(`${LIVE_TURN} .acp-card`);
      const allow = card.getByRole('button', { name: 'Allow once', exact: true });
      await expect(allow).toBeEnabled({ timeout: 60000 });
      await allow.click();
      await expect(card.locator('.acp-card-decision')).toContainText('Approved: Allow once');
      await page.notebook.waitForRun(1);
      await page.notebook.runCell(2);
      await expect(cellOutput(page, 2)).toContainText('approved: True');
    });

    test('a question reaches the agent', async ({ page, tmpPath }) => {
      // perComm gives every widget model a kernel subshell of its own, and ipykernel's zmq
      // context holds at most 1,023 sockets: the 20-field form (about 145 models, with the
      // turn's own) ends in "Too many open files" there. A URL question has three buttons.
      const scenario = mode === 'perComm' ? 'url' : 'form';
      await openNotebook(page, tmpPath, `ask-${mode}.ipynb`, [
        CONNECT_SCENARIOS,
        `%%acp\n${scenario}`
      ]);
      await page.notebook.runCell(0);
      await expect(cellOutput(page, 0)).toContainText(CONNECTED_SCENARIOS);
      await page.notebook.runCell(1, { wait: false });
      const live = cellOutput(page, 1).locator(LIVE_TURN);
      const form = live.locator('.jupyter-widgets.acp-elicit');
      if (scenario === 'form') {
        await expect(form.locator('.acp-elicit-field')).toHaveCount(20, { timeout: 60000 });
        await page.setViewportSize({ width: 1024, height: 2200 });
        await field(form, 'Name').locator('input').click();
        await page.keyboard.type('A');
        await fillDeploymentForm(page, form);
        await form.getByRole('button', { name: 'Submit', exact: true }).click();
      } else {
        const accept = form.getByRole('button', { name: 'Accept', exact: true });
        await expect(accept).toBeEnabled({ timeout: 60000 });
        await accept.click();
      }
      await expect(form.locator('.acp-card-decision')).toContainText(`accepted ${BY_A_CLICK}`);
      const reply = live.locator('.acp-message');
      await expect(reply).toContainText('"action":"accept"');
      if (scenario === 'form') {
        await expect(reply).toContainText('check: ok');
        await expect(reply).toContainText('"name":"Ada"');
      }
    });
  });
}
