import { describe, expect, it } from 'vitest';

import { readPanelMessage, readTerminalMessage } from '../src/protocol';

describe('readTerminalMessage', () => {
  it('keeps the bytes a text-safe path sends as base64, and only a string', () => {
    expect(readTerminalMessage({ type: 'chunk', seq: 1, b64: 'YQ==' })).toEqual({
      type: 'chunk',
      seq: 1,
      b64: 'YQ=='
    });
    expect(readTerminalMessage({ type: 'chunk', seq: 1, b64: 7 })).toEqual({
      type: 'chunk',
      seq: 1
    });
  });

  it('keeps the fields of each message the kernel sends', () => {
    expect(readTerminalMessage({ type: 'chunk', seq: 3 })).toEqual({ type: 'chunk', seq: 3 });
    expect(readTerminalMessage({ type: 'reset', seq: 4, omitted: 10 })).toEqual({
      type: 'reset',
      seq: 4,
      omitted: 10
    });
    expect(readTerminalMessage({ type: 'backlog', seq: 5, token: 't', omitted: 0 })).toEqual({
      type: 'backlog',
      seq: 5,
      token: 't',
      omitted: 0
    });
  });

  it('refuses what is none of them', () => {
    for (const content of [null, 'chunk', 7, {}, { type: 'ready', token: 't' }, { type: 'x' }]) {
      expect(readTerminalMessage(content)).toBeNull();
    }
  });

  it('reads a missing or broken number as 0 (such a chunk is then dropped)', () => {
    expect(readTerminalMessage({ type: 'chunk' })).toEqual({ type: 'chunk', seq: 0 });
    expect(readTerminalMessage({ type: 'reset', seq: 'x', omitted: null })).toEqual({
      type: 'reset',
      seq: 0,
      omitted: 0
    });
  });
});

describe('readPanelMessage', () => {
  it('keeps the fields of each message the kernel sends', () => {
    expect(readPanelMessage({ type: 'scroll_to', cell_id: 'c1', model_id: 'm1' })).toEqual({
      type: 'scroll_to',
      cell_id: 'c1',
      model_id: 'm1'
    });
    expect(readPanelMessage({ type: 'copy', text: 'log' })).toEqual({ type: 'copy', text: 'log' });
    expect(readPanelMessage({ type: 'download', filename: 'a.log', text: '' })).toEqual({
      type: 'download',
      filename: 'a.log',
      text: ''
    });
  });

  it('fills missing strings with "" and refuses unknown messages', () => {
    expect(readPanelMessage({ type: 'copy' })).toEqual({ type: 'copy', text: '' });
    expect(readPanelMessage({ type: 'rendered' })).toBeNull(); // front end -> kernel only
    expect(readPanelMessage(undefined)).toBeNull();
  });
});
