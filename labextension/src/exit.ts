/**
 * How a command ended, said one way: acp_notebook/_connection/_exit.py's exit_label, the same table
 * (tests/data/exit_labels.json, read by test/exit.test.ts and by tests/test_exit.py).
 * A signal wins over a code: a process killed by a signal has no exit code of its own.
 */
import type { IExitStatus } from './protocol';

/** `signal SIGKILL`, `exit 3`, or `exited` when neither is known. */
export function exitLabel(
  code: number | null | undefined,
  signal: string | null | undefined
): string {
  if (signal) {
    return `signal ${signal}`;
  }
  if (code !== null && code !== undefined) {
    return `exit ${code}`;
  }
  return 'exited';
}

/** A terminal's badge: `running` while it has no exit status, else its exit label. */
export function exitBadge(status: IExitStatus | null | undefined): string {
  if (status === null || status === undefined) {
    return 'running';
  }
  return exitLabel(status.exitCode, status.signal);
}

/** The badge's colour (its data-state): running, ok (exit 0), or failed (anything else). */
export function exitState(status: IExitStatus | null | undefined): 'running' | 'ok' | 'failed' {
  if (status === null || status === undefined) {
    return 'running';
  }
  return !status.signal && status.exitCode === 0 ? 'ok' : 'failed';
}

/** Whole seconds as the cell's footer says them (`_transcript._elapsed`): `12 s`, `3 min 5 s`. */
export function elapsedText(seconds: number): string {
  const whole = Math.max(0, Math.floor(seconds));
  if (whole < 60) {
    return `${whole} s`;
  }
  const minutes = Math.floor(whole / 60);
  if (minutes < 60) {
    return `${minutes} min ${whole % 60} s`;
  }
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/** What a terminal's badge says and how it is coloured (its data-state). */
export interface IBadge {
  text: string;
  state: 'running' | 'ok' | 'failed' | 'idle';
}

/**
 * The badge of a terminal: the kernel's phase (`_state.TerminalPhase`: `waiting` for approval,
 * `not-run` after a refusal, `stopped` by a cancel: all grey, nothing failed), else the exit
 * status; a running command shows how long it has run (`elapsed`, seconds, when known).
 */
export function terminalBadge(
  phase: string,
  label: string,
  status: IExitStatus | null | undefined,
  elapsed: number | null
): IBadge {
  if (phase === 'waiting' || phase === 'not-run' || phase === 'stopped') {
    return { text: label, state: 'idle' };
  }
  const state = exitState(status);
  const text = (phase === 'exited' && label) || exitBadge(status);
  if (state === 'running' && elapsed !== null) {
    return { text: `${text} · ${elapsedText(elapsed)}`, state };
  }
  return { text, state };
}

/** Said under a running command that has shown nothing for this many seconds. */
export const QUIET_HINT_AFTER = 3;
export const QUIET_HINT =
  'no output yet: some agents send the output of a command only when it ends';

/**
 * The line under a terminal's header: the agent's words about a command that did not run
 * (`note`), else, for a command running for a while with no byte shown, that output may come
 * only at its end (claude-agent-acp sends one snapshot when the command ends).
 */
export function terminalNote(
  note: string,
  status: IExitStatus | null | undefined,
  bytes: number,
  elapsed: number | null
): string {
  if (note) {
    return note;
  }
  const running = status === null || status === undefined;
  if (running && bytes === 0 && elapsed !== null && elapsed >= QUIET_HINT_AFTER) {
    return QUIET_HINT;
  }
  return '';
}
