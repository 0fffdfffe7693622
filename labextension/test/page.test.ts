import { describe, expect, it } from 'vitest';

import { isClassicNotebook, pageUnstyled, setUnstyledPage } from '../src/page';

describe('the page around the views', () => {
  it('is the classic notebook only where Jupyter.notebook is an object', () => {
    expect(isClassicNotebook({ Jupyter: { notebook: {} } })).toBe(true);
    for (const page of [
      {},
      null,
      undefined,
      { Jupyter: {} },
      { Jupyter: { notebook: null } },
      { Jupyter: { notebook: 'x' } },
      { jupyterapp: {} }
    ]) {
      expect(isClassicNotebook(page)).toBe(false);
    }
  });

  it('is styled until the nbextension says otherwise', () => {
    expect(pageUnstyled()).toBe(false);
    setUnstyledPage(true);
    expect(pageUnstyled()).toBe(true);
    setUnstyledPage(false);
    expect(pageUnstyled()).toBe(false);
  });
});
