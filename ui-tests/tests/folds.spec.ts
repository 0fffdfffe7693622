/**
 * A fold a person opened or closed in a turn's view stays as they left it while the turn goes
 * on. The kernel sends a group of tool-call rows again whenever one of its calls changes, and
 * ipywidgets replaces an HTML widget's content whole: without src/folds.ts every fold in the
 * group went back to how the kernel wrote it.
 */
import { expect, test } from './shared_page';

import { LIVE_TURN, cellOutput, openNotebook } from './notebook';

/** Two reads shown as rows of one group (each with its input folded), a question, then both
 * reads finish: their group is sent again. */
const SCENARIO = [
  {
    update: {
      sessionUpdate: 'tool_call_update',
      toolCallId: 'read-1',
      title: 'Read first.txt',
      kind: 'read',
      status: 'in_progress',
      rawInput: { path: 'first.txt' }
    }
  },
  {
    update: {
      sessionUpdate: 'tool_call_update',
      toolCallId: 'read-2',
      title: 'Read second.txt',
      kind: 'read',
      status: 'in_progress',
      rawInput: { path: 'second.txt' }
    }
  },
  {
    permission: {
      title: 'Go on?',
      options: [
        { optionId: 'yes', name: 'Allow once', kind: 'allow_once' },
        { optionId: 'no', name: 'Reject', kind: 'reject_once' }
      ]
    }
  },
  ...['read-1', 'read-2'].map(id => ({
    update: {
      sessionUpdate: 'tool_call_update',
      toolCallId: id,
      status: 'completed',
      content: [{ type: 'content', content: { type: 'text', text: `${id} read` } }]
    }
  })),
  { stopReason: 'end_turn' }
];

const CONNECT = [
  'import json, os, sys, tempfile',
  'work = tempfile.mkdtemp(prefix="acp-ui-")',
  'os.chdir(work)',
  `open("folds.jsonl", "w").write(${JSON.stringify(
    SCENARIO.map(step => JSON.stringify(step)).join('\n')
  )})`,
  '%load_ext acp_notebook',
  '%acp connect --name scenario --cwd {work} -- {sys.executable} -m acp_notebook.agent' +
    ' --data-dir {work}/.agent-data --scenario {work}/folds.jsonl'
].join('\n');

test.describe('folds in a live turn', () => {
  test('an input someone unfolded stays unfolded when its group of rows is sent again', async ({
    page,
    tmpPath
  }) => {
    await openNotebook(page, tmpPath, 'folds.ipynb', [CONNECT, '%%acp\nread them']);
    await page.notebook.runCell(0);
    await expect(cellOutput(page, 0)).toContainText("acp: connected 'scenario'");

    await page.notebook.runCell(1, { wait: false });
    const live = cellOutput(page, 1).locator(LIVE_TURN);
    const call = (name: string) => live.locator('.acp-tool-call').filter({ hasText: name });
    const first = call('Read first.txt').locator('details');
    const second = call('Read second.txt').locator('details');
    const allow = live
      .locator('.acp-card')
      .getByRole('button', { name: 'Allow once', exact: true });
    await expect(allow).toBeEnabled();
    // both reads are rows of one group, their inputs folded as the kernel wrote them
    await expect(live.locator('.acp-tool-calls')).toHaveCount(1);
    await expect(first).toHaveCount(1);
    await expect(first).not.toHaveAttribute('open', /.*/);
    await expect(second).not.toHaveAttribute('open', /.*/);

    await first.locator('summary').click();
    await expect(first).toHaveAttribute('open', '');
    await allow.click();
    await expect(live.locator('.acp-footer')).toHaveText('finished');
    await page.notebook.waitForRun(1);

    // the group was sent again (both reads finished) ...
    await expect(call('Read first.txt')).toContainText('read-1 read');
    await expect(call('Read second.txt')).toContainText('read-2 read');
    // ... and the input someone opened is still open, the other as the kernel wrote it
    await expect(first).toHaveAttribute('open', '');
    await expect(second).not.toHaveAttribute('open', /.*/);
  });
});
