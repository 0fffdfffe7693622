/**
 * A question (`elicitation/create`, form mode) in a real JupyterLab: the scenario agent on the
 * reference TypeScript SDK (tests/oracle/scenario_agent.mjs) asks a form with every field type
 * of the v2 schema; a person fills it with the keyboard and the mouse and clicks Submit; the
 * agent checks the answer against its schema and quotes it in its reply.
 */
import * as path from 'path';

import { expect, test } from '@jupyterlab/galata';
import type { Locator } from '@playwright/test';

import { ARTIFACTS, LIVE_TURN, cellOutput, openNotebook } from './notebook';

/** The scenario agent, found from the (editable) package, in a fresh temporary cwd. */
const CONNECT = [
  'import os, pathlib, shutil, tempfile, acp_notebook',
  'work = tempfile.mkdtemp(prefix="acp-ui-")',
  'os.chdir(work)',
  'agent = pathlib.Path(acp_notebook.__file__).parents[1] / "tests" / "oracle" / "scenario_agent.mjs"',
  'node = shutil.which("node")',
  '%load_ext acp_notebook',
  '%acp connect --name scenarios --cwd {work} -- {node} {agent} {work}'
].join('\n');

const CONNECTED = "acp: connected 'scenarios'";

/** The field of the form whose label reads exactly `title`. */
function field(form: Locator, title: string): Locator {
  return form
    .locator('.acp-elicit-field')
    .filter({ has: form.page().locator('b', { hasText: new RegExp(`^${title}$`) }) });
}

test.describe('a question form', () => {
  test('filled with the keyboard and the mouse, its answer reaches the agent', async ({
    page,
    tmpPath
  }) => {
    await openNotebook(page, tmpPath, 'question.ipynb', [CONNECT, '%%acp\nform']);
    await page.notebook.runCell(0);
    await expect(cellOutput(page, 0)).toContainText(CONNECTED);

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

    // Typed with the keyboard, field after field (Tab leaves a number field: it commits).
    await name.click();
    await page.keyboard.type('da'); // "Ada"
    await field(form, 'Email').locator('input').click();
    await page.keyboard.type('ada@example.org');
    await field(form, 'Day').locator('input').click();
    await page.keyboard.type('2026-12-01');
    const ratio = field(form, 'Ratio').locator('input');
    await ratio.click();
    await page.keyboard.press('ControlOrMeta+a');
    await page.keyboard.type('1.25');
    await page.keyboard.press('Tab');
    const count = field(form, 'Count').locator('input');
    await count.click();
    await page.keyboard.press('ControlOrMeta+a');
    await page.keyboard.type('4');
    await page.keyboard.press('Tab');
    // ... and the mouse: a checkbox, a dropdown, two items of a multiple choice
    await field(form, 'Fast').locator('input[type="checkbox"]').click();
    await field(form, 'Color').locator('select').selectOption({ label: 'blue' });
    const tags = field(form, 'Tags').locator('select');
    await tags.locator('option', { hasText: 'alpha' }).click();
    await tags.locator('option', { hasText: 'gamma' }).click({ modifiers: ['ControlOrMeta'] });
    await form.screenshot({ path: path.join(ARTIFACTS, 'question-form-filled.png') });

    await form.getByRole('button', { name: 'Submit', exact: true }).click();
    await expect(form.locator('.acp-card-decision')).toContainText('accepted by click');
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
