import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { exitBadge, exitLabel, exitState } from '../src/exit';

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
