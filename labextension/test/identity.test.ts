import { describe, expect, it } from 'vitest';

import { identityName, MAX_NAME, nameConnection, setUserName } from '../src/identity';

describe('the name kernel messages carry', () => {
  it('is the display name, else the name, else the username', () => {
    expect(identityName({ display_name: ' Ada  L. ', name: 'ada', username: 'u1' })).toBe('Ada L.');
    expect(identityName({ display_name: '', name: 'ada', username: 'u1' })).toBe('ada');
    expect(identityName({ display_name: 7, name: ' ', username: 'u1' })).toBe('u1');
    for (const identity of [null, undefined, {}, { username: '' }, 'x']) {
      expect(identityName(identity)).toBe('');
    }
    expect(identityName({ name: 'x'.repeat(200) })).toHaveLength(MAX_NAME);
  });

  it('names a nameless connection once the user is known, and no other', () => {
    const early = { _username: '' };
    expect(nameConnection(early)).toBe(false); // nobody known yet: it waits
    setUserName('Bob');
    expect(early._username).toBe('Bob');

    const later = { _username: '' };
    expect(nameConnection(later)).toBe(true);
    expect(later._username).toBe('Bob');

    const named = { _username: 'alice' };
    const other = { username: '' };
    expect(nameConnection(named)).toBe(false);
    expect(nameConnection(other)).toBe(false);
    expect(nameConnection(null)).toBe(false);
    expect(named._username).toBe('alice');
    expect(other).toEqual({ username: '' });
  });
});
