// Unit tests of the front end's logic that needs no browser (test/*.test.ts): run by
// `jlpm test`, and from `python3 -m pytest` by tests/test_labextension.py.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    environment: 'node'
  }
});
