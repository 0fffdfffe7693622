import { describe, expect, it } from 'vitest';

import {
  Acknowledger,
  BufferTextReader,
  bufferText,
  ChunkSequencer,
  fromBase64,
  IBufferOwner,
  newToken,
  replacePrefix,
  RESET_SEQUENCE,
  SGR_RESET,
  toBytes,
  WRITE_PIECE,
  WriteItem,
  WriteQueue
} from '../src/stream';

function waitingFor(token: string): ChunkSequencer {
  const stream = new ChunkSequencer();
  stream.request(token);
  return stream;
}

describe('ChunkSequencer', () => {
  it('drops chunks until the backlog it asked for, then writes the next ones', () => {
    const stream = waitingFor('t1');
    expect(stream.receive({ type: 'chunk', seq: 1 })).toEqual({ action: 'drop' });
    expect(stream.receive({ type: 'backlog', seq: 3, token: 't1', omitted: 0 })).toEqual({
      action: 'replace',
      omitted: 0
    });
    expect(stream.waiting).toBeNull();
    expect(stream.receive({ type: 'chunk', seq: 3 })).toEqual({ action: 'drop' }); // in the backlog
    expect(stream.receive({ type: 'chunk', seq: 4 })).toEqual({ action: 'write' });
    expect(stream.lastSeq).toBe(4);
  });

  it("ignores another view's backlog", () => {
    const stream = waitingFor('mine');
    expect(stream.receive({ type: 'backlog', seq: 9, token: 'theirs', omitted: 0 })).toEqual({
      action: 'drop'
    });
    expect(stream.waiting).toBe('mine');
    expect(stream.lastSeq).toBe(0);
  });

  it('asks again after a gap, and keeps dropping until the new backlog', () => {
    const stream = waitingFor('t1');
    stream.receive({ type: 'backlog', seq: 2, token: 't1', omitted: 0 });
    expect(stream.receive({ type: 'chunk', seq: 4 })).toEqual({ action: 'resync' });
    expect(stream.lastSeq).toBe(2);
    stream.request('t2');
    expect(stream.receive({ type: 'chunk', seq: 5 })).toEqual({ action: 'drop' });
    expect(stream.receive({ type: 'backlog', seq: 5, token: 't2', omitted: 7 })).toEqual({
      action: 'replace',
      omitted: 7
    });
    expect(stream.receive({ type: 'chunk', seq: 6 })).toEqual({ action: 'write' });
  });

  it('replaces the screen on a reset in sequence', () => {
    const stream = waitingFor('t');
    stream.receive({ type: 'backlog', seq: 0, token: 't', omitted: 0 });
    expect(stream.receive({ type: 'reset', seq: 1, omitted: 12 })).toEqual({
      action: 'replace',
      omitted: 12
    });
    expect(stream.lastSeq).toBe(1);
  });
});

describe('the bytes', () => {
  it('start a replaced screen with a reset, and a note only when bytes were dropped', () => {
    expect(replacePrefix(0)).toBe(RESET_SEQUENCE);
    expect(replacePrefix(42)).toBe(`${RESET_SEQUENCE}\x1b[2m[42 earlier bytes omitted]\x1b[0m\r\n`);
  });

  it('view a buffer without copying it', () => {
    const whole = new Uint8Array([1, 2, 3, 4, 5]);
    expect(Array.from(toBytes(whole.buffer))).toEqual([1, 2, 3, 4, 5]);
    const part = toBytes(new DataView(whole.buffer, 1, 3));
    expect(Array.from(part)).toEqual([2, 3, 4]);
    part[0] = 9;
    expect(whole[1]).toBe(9);
  });

  it('are asked for with tokens no two views share', () => {
    const tokens = new Set(Array.from({ length: 100 }, () => newToken()));
    expect(tokens.size).toBe(100);
  });
});

function fakeTerminal(rows: [string, boolean][]): IBufferOwner {
  return {
    buffer: {
      active: {
        length: rows.length,
        getLine: (i: number) =>
          rows[i] && {
            isWrapped: rows[i][1],
            translateToString: (trim: boolean) => (trim ? rows[i][0].trimEnd() : rows[i][0])
          }
      }
    }
  };
}

describe('bufferText', () => {
  it('joins wrapped rows, trims trailing spaces and blank lines', () => {
    const term = fakeTerminal([
      ['$ echo a very long li', false],
      ['ne   ', true],
      ['done  ', false],
      ['', false],
      ['   ', false]
    ]);
    expect(bufferText(term)).toBe('$ echo a very long line\ndone');
  });

  it('is empty for an empty screen', () => {
    expect(bufferText(fakeTerminal([['', false]]))).toBe('');
  });
});

describe('BufferTextReader', () => {
  it('reads a slice of lines per call and gives what bufferText gives', () => {
    const rows: [string, boolean][] = [];
    for (let i = 0; i < 10; i++) {
      rows.push([`line ${i}`, false], [' cont', true]);
    }
    rows.push(['', false]);
    const term = fakeTerminal(rows);
    const reader = new BufferTextReader(term);
    const calls: boolean[] = [];
    for (let done = false; !done;) {
      done = reader.read(3); // a wrapped row may land in the next slice
      calls.push(done);
    }
    expect(calls.length).toBe(Math.ceil(rows.length / 3));
    expect(reader.text()).toBe(bufferText(term));
    expect(reader.text().split('\n')[9]).toBe('line 9 cont');
  });
});

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Everything a queue hands out, as text (control strings and bytes in order). */
function drain(queue: WriteQueue, max = WRITE_PIECE): { text: string; pieces: WriteItem[] } {
  const pieces: WriteItem[] = [];
  for (let piece = queue.take(max); piece !== null; piece = queue.take(max)) {
    pieces.push(piece);
  }
  const text = pieces.map(p => (typeof p === 'string' ? p : decoder.decode(p))).join('');
  return { text, pieces };
}

function lines(from: number, to: number, colour = false): Uint8Array {
  let text = '';
  for (let i = from; i < to; i++) {
    text += colour ? `\x1b[32mrow ${i}\x1b[0m\n` : `row ${i}\n`;
  }
  return encoder.encode(text);
}

describe('WriteQueue', () => {
  it('hands out pieces of at most the size asked, in order, without copying', () => {
    const queue = new WriteQueue();
    const big = new Uint8Array(2.5 * WRITE_PIECE).fill(0x61);
    queue.push(RESET_SEQUENCE);
    queue.push(big);
    queue.push(encoder.encode('end'));
    expect(queue.pending).toBe(big.byteLength + 3);
    const { pieces } = drain(queue);
    expect(pieces[0]).toBe(RESET_SEQUENCE);
    const sizes = pieces.slice(1).map(p => (p as Uint8Array).byteLength);
    expect(sizes).toEqual([WRITE_PIECE, WRITE_PIECE, WRITE_PIECE / 2, 3]);
    expect((pieces[1] as Uint8Array).buffer).toBe(big.buffer); // a view of the message's bytes
    expect(queue.pending).toBe(0);
    expect(queue.empty).toBe(true);
    expect(queue.take()).toBeNull();
  });

  it('ignores empty bytes and forgets everything on clear', () => {
    const queue = new WriteQueue();
    queue.push(new Uint8Array());
    expect(queue.empty).toBe(true);
    queue.push(lines(0, 10));
    queue.trimTo(2);
    expect(queue.skipped).toBeGreaterThan(0);
    queue.clear();
    expect([queue.empty, queue.pending, queue.skipped]).toEqual([true, 0, 0]);
  });

  it('keeps only the last lines when trimmed, from a line start, across messages', () => {
    const queue = new WriteQueue();
    queue.push(lines(0, 50));
    queue.push(encoder.encode('row 50\nrow 5')); // a message may end inside a line
    queue.push(encoder.encode('1\nrow 52\npartial'));
    const before = queue.pending;
    const dropped = queue.trimTo(3);
    expect(dropped).toBe(decoder.decode(lines(0, 50)).length);
    expect(queue.pending).toBe(before - dropped);
    expect(queue.skipped).toBe(dropped);
    // the last three line ends and the partial line after them; no colour reset (no escape
    // was dropped)
    expect(drain(queue).text).toBe('row 50\nrow 51\nrow 52\npartial');
  });

  it('trims what was left of a message after a piece was taken', () => {
    const queue = new WriteQueue();
    queue.push(lines(0, 100));
    const first = queue.take(20) as Uint8Array;
    expect(decoder.decode(first)).toBe('row 0\nrow 1\nrow 2\nro');
    queue.trimTo(2);
    expect(drain(queue).text).toBe('row 98\nrow 99\n');
  });

  it('drops nothing when fewer line ends than asked are queued', () => {
    const queue = new WriteQueue();
    queue.push(encoder.encode('progress 10%\rprogress 20%\r'.repeat(1000)));
    queue.push(lines(0, 5));
    expect(queue.trimTo(5)).toBe(0);
    expect(queue.trimTo(4)).toBeGreaterThan(0); // the 5th line end from the last one exists
    expect(drain(queue).text).toBe(decoder.decode(lines(1, 5)));
  });

  it('resets colours before the tail when the dropped bytes held escapes', () => {
    const queue = new WriteQueue();
    queue.push(lines(0, 20, true));
    queue.push(lines(20, 22));
    queue.trimTo(2);
    const { pieces, text } = drain(queue);
    expect(pieces[0]).toBe(SGR_RESET);
    expect(text).toBe(`${SGR_RESET}row 20\nrow 21\n`);
  });

  it('keeps control strings in order: a reset stays before the kept tail', () => {
    const queue = new WriteQueue();
    queue.push(RESET_SEQUENCE);
    queue.push(lines(0, 30));
    queue.trimTo(1);
    expect(drain(queue).text).toBe(`${RESET_SEQUENCE}row 29\n`);
  });
});

describe('fromBase64', () => {
  it('gives back every byte, not only UTF-8', () => {
    const bytes = fromBase64(btoa(String.fromCharCode(0x61, 0x0a, 0xff, 0xfe, 0x00, 0x1b)));
    expect(Array.from(bytes)).toEqual([0x61, 0x0a, 0xff, 0xfe, 0x00, 0x1b]);
  });

  it('gives nothing for text that is not base64', () => {
    expect(fromBase64('not base64!').byteLength).toBe(0);
  });
});

describe('Acknowledger', () => {
  function acks(): { sent: number[]; run: () => void; ack: Acknowledger } {
    const sent: number[] = [];
    let queued: (() => void)[] = [];
    const ack = new Acknowledger(
      seq => sent.push(seq),
      fn => queued.push(fn)
    );
    const run = (): void => {
      const now = queued;
      queued = [];
      now.forEach(fn => fn());
    };
    return { sent, run, ack };
  }

  it('sends one ack per task, with the highest seq received in it', () => {
    const { sent, run, ack } = acks();
    ack.received(3);
    ack.received(5);
    ack.received(4); // out of order: 5 stays the highest
    expect(sent).toEqual([]); // nothing before the task's messages are all in
    run();
    expect(sent).toEqual([5]);
  });

  it('never acknowledges a seq twice, nor a lower one', () => {
    const { sent, run, ack } = acks();
    ack.received(0); // a backlog before any chunk
    run();
    ack.received(2);
    run();
    ack.received(1); // a stale message
    run();
    ack.received(2);
    run();
    ack.received(6);
    run();
    expect(sent).toEqual([0, 2, 6]);
  });
});
