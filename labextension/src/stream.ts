/**
 * The terminal view's byte stream, without a browser: which kernel messages to write, which to
 * drop, and when to ask for the backlog again (see acp_notebook/_widgets/_protocols.py).
 *
 * A view sends `ready` with a fresh token when it renders and whenever it sees a gap in
 * `seq`; the kernel answers with a `backlog` for that token. Until that answer arrives every
 * chunk is dropped, because the backlog covers it. After it, chunks must arrive with
 * seq = last + 1.
 */
import type { TerminalToView } from './protocol';

/** What the view does with one message. */
export type StreamStep =
  | { action: 'drop' } // another view's backlog, or bytes the screen already has
  | { action: 'resync' } // a message was lost: ask for the backlog again
  | { action: 'replace'; omitted: number } // clear the screen, then write the bytes
  | { action: 'write' }; // append the bytes

export class ChunkSequencer {
  /** The token of the backlog asked for, or null when none is awaited. */
  get waiting(): string | null {
    return this._waiting;
  }

  /** The seq of the last message written. */
  get lastSeq(): number {
    return this._lastSeq;
  }

  /** A backlog was asked for with `token`: drop chunks until it comes. */
  request(token: string): void {
    this._waiting = token;
  }

  receive(message: TerminalToView): StreamStep {
    if (message.type === 'backlog') {
      if (message.token !== this._waiting) {
        return { action: 'drop' };
      }
      this._waiting = null;
      this._lastSeq = message.seq;
      return { action: 'replace', omitted: message.omitted };
    }
    if (this._waiting !== null || message.seq <= this._lastSeq) {
      return { action: 'drop' };
    }
    if (message.seq !== this._lastSeq + 1) {
      return { action: 'resync' };
    }
    this._lastSeq = message.seq;
    return message.type === 'reset'
      ? { action: 'replace', omitted: message.omitted }
      : { action: 'write' };
  }

  private _waiting: string | null = null;
  private _lastSeq = 0;
}

/** ESC c (full reset) + erase scrollback, written in-band so queued writes stay ordered. */
export const RESET_SEQUENCE = '\x1bc\x1b[3J';

/** What a replaced screen starts with: the reset, then a dim note of the bytes not kept. */
export function replacePrefix(omitted: number): string {
  return omitted > 0
    ? `${RESET_SEQUENCE}\x1b[2m[${omitted} earlier bytes omitted]\x1b[0m\r\n`
    : RESET_SEQUENCE;
}

/** A message buffer as bytes (no copy). */
export function toBytes(buffer: ArrayBuffer | ArrayBufferView): Uint8Array {
  if (buffer instanceof ArrayBuffer) {
    return new Uint8Array(buffer);
  }
  return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
}

let tokenCounter = 0;

/** A token no other view of this page uses. */
export function newToken(): string {
  tokenCounter += 1;
  return `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}-${tokenCounter}`;
}

/** What bufferText reads of an xterm Terminal. */
export interface IBufferOwner {
  buffer: {
    active: {
      length: number;
      getLine(
        index: number
      ): { isWrapped: boolean; translateToString(trimRight: boolean): string } | undefined;
    };
  };
}

/** The text of a terminal's buffer: wrapped rows joined, trailing spaces and blank lines cut. */
export function bufferText(term: IBufferOwner): string {
  const buffer = term.buffer.active;
  const lines: string[] = [];
  for (let i = 0; i < buffer.length; i++) {
    const line = buffer.getLine(i);
    if (!line) {
      continue;
    }
    const text = line.translateToString(true);
    if (line.isWrapped && lines.length) {
      lines[lines.length - 1] += text;
    } else {
      lines.push(text);
    }
  }
  while (lines.length && lines[lines.length - 1] === '') {
    lines.pop();
  }
  return lines.join('\n');
}

/** The bytes that `b64` (base64, as the kernel sends them on a text-safe path) stands for. */
export function fromBase64(b64: string): Uint8Array {
  let binary: string;
  try {
    binary = atob(b64);
  } catch {
    return new Uint8Array(); // not base64: nothing to write, never a broken view
  }
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) {
    bytes[i] = binary.charCodeAt(i);
  }
  return bytes;
}

/** Where a person (or an operator's page) asks every terminal view for text-safe bytes. */
export const TEXT_TERMINALS_KEY = 'acp-notebook:terminal-transport';

/** True when this browser asks for text-safe terminal bytes (`localStorage`, key above). */
export function textTerminalsAsked(): boolean {
  try {
    return window.localStorage.getItem(TEXT_TERMINALS_KEY) === 'text';
  } catch {
    return false; // storage refused (a sandboxed frame): binary, the default
  }
}
