import { describe, expect, it } from 'vitest';

import { CALL, CALL_NAME, foldKeys, IElementLike, IFoldLike } from '../src/folds';

/** A tool call as the kernel writes it: named on its row, or on its header inside a box. */
function call(name: string | null, onHeader = false): IElementLike {
  const header: IElementLike = {
    closest: () => null,
    getAttribute: attr => (attr === CALL_NAME ? name : null),
    querySelector: () => null
  };
  return {
    closest: () => null,
    getAttribute: attr => (attr === CALL_NAME && !onHeader ? name : null),
    querySelector: selectors => (onHeader && selectors === `[${CALL_NAME}]` ? header : null)
  };
}

function fold(owner: IElementLike | null): IFoldLike {
  return { open: false, closest: selectors => (selectors === CALL ? owner : null) };
}

describe('foldKeys', () => {
  it("numbers each call's folds by the call's name, and the others apart", () => {
    const a = call('read-1');
    const b = call('read-2', true);
    const keys = foldKeys([fold(a), fold(null), fold(b), fold(a), fold(null)]);
    expect(keys).toEqual(['call:read-1#0', '#0', 'call:read-2#0', 'call:read-1#1', '#1']);
  });

  it('gives the same key to a call shown as a row and as a box', () => {
    expect(foldKeys([fold(call('x'))])).toEqual(foldKeys([fold(call('x', true))]));
  });

  it('keys a name as text: one that looks like a key or markup stays apart', () => {
    const keys = foldKeys([fold(call('a#0')), fold(call('a')), fold(call('"><b>'))]);
    expect(new Set(keys).size).toBe(3);
    expect(keys[2]).toBe('call:"><b>#0');
  });

  it('gives no key to a fold of a call without a name', () => {
    expect(foldKeys([fold(call(null)), fold(null)])).toEqual([null, '#0']);
  });
});
