/**
 * A question (`elicitation/create`, form mode) in a real JupyterLab: the scenario agent on the
 * reference TypeScript SDK (tests/oracle/scenario_agent.mjs) asks a form with every field type
 * of the v2 schema; a person fills it with the keyboard and the mouse and clicks Submit; the
 * agent checks the answer against its schema and quotes it in its reply.
 */
import * as path from 'path';

import { expect, test } from './shared_page';

import { CONNECT_SCENARIOS, CONNECTED_SCENARIOS, field, fillDeploymentForm } from './forms';
import { ARTIFACTS, BY_A_CLICK, LIVE_TURN, cellOutput, openNotebook } from './notebook';

test.describe('a question form', () => {
  test('filled with the keyboard and the mouse, its answer reaches the agent', async ({
    page,
    tmpPath
  }) => {
    await openNotebook(page, tmpPath, 'question.ipynb', [CONNECT_SCENARIOS, '%%acp\nform']);
    await page.notebook.runCell(0);
    await expect(cellOutput(page, 0)).toContainText(CONNECTED_SCENARIOS);

    // The cell awaits its turn, so do not wait for it: the Submit click lets it finish.
    await page.notebook.runCell(1, { wait: false });
    const live = cellOutput(page, 1).locator(LIVE_TURN);
    const form = live.locator('.jupyter-widgets.acp-elicit');
    await expect(form).toHaveCount(1);
    await expect(form.locator('.acp-card-title')).toContainText('Fill in the deployment');
    await expect(form.locator('.acp-elicit-field')).toHaveCount(20);
    await page.setViewportSize({ width: 1024, height: 2200 });
    await form.scrollIntoViewIfNeeded();
    await form.screenshot({ path: path.join(ARTIFACTS, 'question-form.png') });

    // A name that is too short: Submit is refused in the form, with the reason on the field.
    const name = field(form, 'Name').locator('input');
    await name.click();
    await page.keyboard.type('A');
    await form.getByRole('button', { name: 'Submit', exact: true }).click();
    await expect(form).toContainText('fix the marked fields first');
    await expect(field(form, 'Name').locator('.acp-card-warning')).toBeVisible();
    await expect(field(form, 'Email').locator('.acp-card-warning')).toContainText('required');
    await form.screenshot({ path: path.join(ARTIFACTS, 'question-form-errors.png') });

    await fillDeploymentForm(page, form);
    await form.screenshot({ path: path.join(ARTIFACTS, 'question-form-filled.png') });

    await form.getByRole('button', { name: 'Submit', exact: true }).click();
    await expect(form.locator('.acp-card-decision')).toContainText(`accepted ${BY_A_CLICK}`);
    await expect(form.locator('button:enabled')).toHaveCount(0);
    // The agent checked the answer against its schema and quotes it.
    const reply = live.locator('.acp-message');
    await expect(reply).toContainText('check: ok');
    const answer = JSON.parse(
      ((await reply.textContent()) ?? '').split('answer: ')[1].split('check:')[0]
    );
    expect(answer).toEqual({
      action: 'accept',
      content: {
        name: 'Ada',
        email: 'ada@example.org',
        day: '2026-12-01',
        ratio: 1.25,
        count: 4,
        fast: true,
        color: 'blue',
        tags: ['alpha', 'gamma'],
        greeting: 'hello',
        scale: 1.5,
        retries: 3,
        verbose: true,
        size: 's',
        regions: ['eu']
      }
    });
    await expect(live.locator('.acp-footer')).toHaveText('finished');
    await page.notebook.waitForRun(1);
    await live.scrollIntoViewIfNeeded();
    await live.screenshot({ path: path.join(ARTIFACTS, 'question-answered.png') });
  });
});
