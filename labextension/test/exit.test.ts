import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import {
  elapsedText,
  exitBadge,
  exitLabel,
  exitState,
  QUIET_HINT,
  QUIET_HINT_AFTER,
  terminalBadge,
  terminalNote
} from '../src/exit';

interface ICase {
  code: number | null;
  signal: string | null;
  label: string;
}

// The table acp_notebook/_connection/_exit.py is tested against too (tests/test_exit.py).
const TABLE = join(__dirname, '..', '..', 'tests', 'data', 'exit_labels.json');
const CASES: ICase[] = JSON.parse(readFileSync(TABLE, 'utf-8')).cases;

describe('exitLabel', () => {
  it('reads the shared table', () => {
    expect(CASES.length).toBeGreaterThan(5);
  });

  it.each(CASES)('code $code, signal $signal: $label', ({ code, signal, label }) => {
    expect(exitLabel(code, signal)).toBe(label);
  });
});

describe('exitBadge and exitState', () => {
  it('say running while there is no exit status', () => {
    expect(exitBadge(null)).toBe('running');
    expect(exitBadge(undefined)).toBe('running');
    expect(exitState(null)).toBe('running');
  });

  it('use the exit label once it ended', () => {
    expect(exitBadge({ exitCode: 0 })).toBe('exit 0');
    expect(exitBadge({ exitCode: null, signal: 'SIGTERM' })).toBe('signal SIGTERM');
    expect(exitBadge({})).toBe('exited');
  });

  it('colour only a plain exit 0 as ok', () => {
    expect(exitState({ exitCode: 0 })).toBe('ok');
    expect(exitState({ exitCode: 1 })).toBe('failed');
    expect(exitState({ signal: 'SIGKILL' })).toBe('failed');
    expect(exitState({ exitCode: 0, signal: 'SIGTERM' })).toBe('failed'); // the label says signal
    expect(exitState({})).toBe('failed');
  });
});

describe('terminalBadge and terminalNote', () => {
  it('says a command asked about, refused or cut is not a failure', () => {
    expect(terminalBadge('waiting', 'waiting for approval', null, 5)).toEqual({
      text: 'waiting for approval',
      state: 'idle'
    });
    expect(terminalBadge('not-run', 'not run', {}, null)).toEqual({
      text: 'not run',
      state: 'idle'
    });
    expect(terminalBadge('stopped', 'stopped', {}, null)).toEqual({
      text: 'stopped',
      state: 'idle'
    });
  });

  it('counts the time a command runs, and words an exit as before', () => {
    expect(terminalBadge('running', 'running', null, 12.7)).toEqual({
      text: 'running · 12 s',
      state: 'running'
    });
    expect(terminalBadge('', '', null, null)).toEqual({ text: 'running', state: 'running' });
    expect(terminalBadge('exited', 'exit 3', { exitCode: 3 }, 40)).toEqual({
      text: 'exit 3',
      state: 'failed'
    });
    expect(elapsedText(125)).toBe('2 min 5 s');
    expect(elapsedText(3 * 3600 + 120)).toBe('3 h 2 min');
  });

  it("shows the agent's words, else a hint for a quiet running command", () => {
    expect(terminalNote('User refused permission to run tool', {}, 0, null)).toBe(
      'User refused permission to run tool'
    );
    expect(terminalNote('', null, 0, QUIET_HINT_AFTER)).toBe(QUIET_HINT);
    expect(terminalNote('', null, 0, 1)).toBe('');
    expect(terminalNote('', null, 10, 30)).toBe('');
    expect(terminalNote('', { exitCode: 0 }, 0, 30)).toBe('');
  });
});
