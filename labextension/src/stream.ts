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

/**
 * The view's acks (flow control, the kernel's ByteCoalescer.ack): every message received is
 * acknowledged by its seq, once per task however many came in it (the highest seq), and never
 * a seq already acknowledged. The kernel then keeps at most a window of bytes on the way to the
 * view, in messages of a capped size.
 */
export class Acknowledger {
  constructor(
    private readonly _send: (seq: number) => void,
    private readonly _defer: (run: () => void) => void = run => queueMicrotask(run)
  ) {}

  /** A message with this seq was received. */
  received(seq: number): void {
    this._seq = Math.max(this._seq, seq);
    if (this._due) {
      return;
    }
    this._due = true;
    this._defer(() => {
      this._due = false;
      if (this._seq > this._sent) {
        this._sent = this._seq;
        this._send(this._seq);
      }
    });
  }

  private _seq = 0;
  private _sent = -1; // seq 0 (a backlog before any chunk) is acknowledged too
  private _due = false;
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

/**
 * The text of a terminal's buffer read a slice of lines at a time (`read`), so that a full
 * scrollback need not be read in one task: wrapped rows joined, trailing spaces and blank lines
 * cut. It reads the buffer as it is at each slice; a caller that wrote in between starts over.
 */
export class BufferTextReader {
  constructor(term: IBufferOwner) {
    this._term = term;
  }

  /** Read up to `count` more lines; true once every line is read. */
  read(count: number): boolean {
    const buffer = this._term.buffer.active;
    const end = Math.min(buffer.length, this._next + Math.max(1, count));
    for (; this._next < end; this._next++) {
      const line = buffer.getLine(this._next);
      if (!line) {
        continue;
      }
      const text = line.translateToString(true);
      if (line.isWrapped && this._lines.length) {
        this._lines[this._lines.length - 1] += text;
      } else {
        this._lines.push(text);
      }
    }
    return this._next >= buffer.length;
  }

  /** The text read so far. */
  text(): string {
    const lines = this._lines;
    let last = lines.length;
    while (last > 0 && lines[last - 1] === '') {
      last--;
    }
    return lines.slice(0, last).join('\n');
  }

  private _term: IBufferOwner;
  private _next = 0;
  private _lines: string[] = [];
}

/** The text of a terminal's buffer: wrapped rows joined, trailing spaces and blank lines cut. */
export function bufferText(term: IBufferOwner): string {
  const reader = new BufferTextReader(term);
  reader.read(Number.MAX_SAFE_INTEGER);
  return reader.text();
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

/** The largest piece handed to xterm at once: xterm parses a piece whole, in one task. */
export const WRITE_PIECE = 16 * 1024;

/** What a WriteQueue holds: bytes, or an in-band control string (a reset) written as it is. */
export type WriteItem = Uint8Array | string;

const LF = 0x0a;
const ESC = 0x1b;
/** Written before a kept tail when the bytes dropped before it held escape sequences. */
export const SGR_RESET = '\x1b[0m';

/**
 * The bytes a terminal view has received but not yet handed to xterm, in order.
 *
 * The view hands xterm at most a piece (`WRITE_PIECE`) at a time and only a bounded amount
 * ahead of what xterm has parsed, so that no single task parses megabytes (xterm yields between
 * pieces, never inside one). When the view falls far behind a flood, `trimTo` drops the oldest
 * queued bytes that could not be on the screen or in the scrollback once the rest is written:
 * everything before the start of the last `lines` lines. Those lines alone push every older
 * row out of xterm's buffer, so what the terminal shows ends up the same, sooner; the bytes
 * are only skipped by this view (the kernel keeps the transcript).
 */
export class WriteQueue {
  /** Bytes queued (control strings not counted). */
  get pending(): number {
    return this._pending;
  }

  /** Bytes dropped by `trimTo` since the queue was made or cleared. */
  get skipped(): number {
    return this._skipped;
  }

  get empty(): boolean {
    return this._items.length === 0;
  }

  push(item: WriteItem): void {
    if (typeof item !== 'string') {
      if (item.byteLength === 0) {
        return;
      }
      this._pending += item.byteLength;
    }
    this._items.push(item);
  }

  /** Forget everything queued (the screen is about to be replaced). */
  clear(): void {
    this._items = [];
    this._offset = 0;
    this._pending = 0;
    this._skipped = 0;
  }

  /** The next thing to write: a control string whole, or at most `max` bytes (no copy). */
  take(max: number = WRITE_PIECE): WriteItem | null {
    const item = this._items[0];
    if (item === undefined) {
      return null;
    }
    if (typeof item === 'string') {
      this._items.shift();
      return item;
    }
    const end = Math.min(item.byteLength, this._offset + Math.max(1, max));
    const piece = item.subarray(this._offset, end);
    this._pending -= piece.byteLength;
    if (end === item.byteLength) {
      this._items.shift();
      this._offset = 0;
    } else {
      this._offset = end;
    }
    return piece;
  }

  /**
   * Drop the queued bytes before the start of the last `lines` lines (a line ends with "\n");
   * returns how many were dropped. Nothing is dropped unless more than `lines` line ends are
   * queued. Control strings are kept, in order. When the dropped bytes held an escape
   * sequence, the kept tail starts with an SGR reset (default colours).
   */
  trimTo(lines: number): number {
    // find the (lines + 1)-th "\n" from the end: the tail starts right after it
    let seen = 0;
    let cutItem = -1;
    let cutAt = 0;
    for (let i = this._items.length - 1; i >= 0 && cutItem < 0; i--) {
      const item = this._items[i];
      if (typeof item === 'string') {
        continue;
      }
      const start = i === 0 ? this._offset : 0;
      let at = item.byteLength - 1;
      while (at >= start) {
        const found = item.lastIndexOf(LF, at);
        if (found < start) {
          break;
        }
        seen += 1;
        if (seen > lines) {
          cutItem = i;
          cutAt = found + 1;
          break;
        }
        at = found - 1;
      }
    }
    if (cutItem < 0) {
      return 0;
    }
    let dropped = 0;
    let escapes = false;
    const kept: WriteItem[] = [];
    for (let i = 0; i < this._items.length; i++) {
      const item = this._items[i];
      const start = i === 0 ? this._offset : 0;
      if (typeof item === 'string' || i > cutItem) {
        kept.push(item);
        continue;
      }
      const end = i === cutItem ? cutAt : item.byteLength;
      const gone = item.subarray(start, end);
      dropped += gone.byteLength;
      escapes = escapes || gone.indexOf(ESC) >= 0;
      if (i === cutItem && end < item.byteLength) {
        if (escapes) {
          kept.push(SGR_RESET);
        }
        kept.push(item.subarray(end));
      } else if (i === cutItem && escapes) {
        kept.push(SGR_RESET);
      }
    }
    this._items = kept;
    this._offset = 0;
    this._pending -= dropped;
    this._skipped += dropped;
    return dropped;
  }

  private _items: WriteItem[] = [];
  private _offset = 0; // bytes of _items[0] already taken
  private _pending = 0;
  private _skipped = 0;
}
