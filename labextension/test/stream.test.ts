import { describe, expect, it } from 'vitest';

import {
  bufferText,
  ChunkSequencer,
  fromBase64,
  IBufferOwner,
  newToken,
  replacePrefix,
  RESET_SEQUENCE,
  toBytes
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

describe('fromBase64', () => {
  it('gives back every byte, not only UTF-8', () => {
    const bytes = fromBase64(btoa(String.fromCharCode(0x61, 0x0a, 0xff, 0xfe, 0x00, 0x1b)));
    expect(Array.from(bytes)).toEqual([0x61, 0x0a, 0xff, 0xfe, 0x00, 0x1b]);
  });

  it('gives nothing for text that is not base64', () => {
    expect(fromBase64('not base64!').byteLength).toBe(0);
  });
});
