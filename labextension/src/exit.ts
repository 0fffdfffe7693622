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
