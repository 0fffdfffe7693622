/**
 * The question form of the scenario agent (tests/oracle/scenario_agent.mjs, scenario `form`):
 * how to connect it, find a field, and fill the form as a person does (question_form.spec.ts,
 * subshells.spec.ts).
 */
import type { IJupyterLabPageFixture } from './galata';
import type { Locator } from '@playwright/test';

/** The scenario agent, found from the (editable) package, in a fresh temporary cwd. */
export const CONNECT_SCENARIOS = [
  'import os, pathlib, shutil, tempfile, acp_notebook',
  'work = tempfile.mkdtemp(prefix="acp-ui-")',
  'os.chdir(work)',
  'agent = pathlib.Path(acp_notebook.__file__).parents[1] / "tests" / "oracle" / "scenario_agent.mjs"',
  'node = shutil.which("node")',
  '%load_ext acp_notebook',
  '%acp connect --name scenarios --cwd {work} -- {node} {agent} {work}'
].join('\n');

export const CONNECTED_SCENARIOS = "acp: connected 'scenarios'";

/** The field of the form whose label reads exactly `title`. */
export function field(form: Locator, title: string): Locator {
  return form
    .locator('.acp-elicit-field')
    .filter({ has: form.page().locator('b', { hasText: new RegExp(`^${title}$`) }) });
}

/**
 * Fill the form's fields with the keyboard and the mouse (the Name field already holds "A"):
 * the answer the scenario agent then checks as `check: ok`.
 */
export async function fillDeploymentForm(
  page: IJupyterLabPageFixture,
  form: Locator
): Promise<void> {
  const name = field(form, 'Name').locator('input');
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
}
