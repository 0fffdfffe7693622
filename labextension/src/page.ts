/**
 * What the page around the views is (no browser needed): the nbextension says whether the
 * output areas are the classic notebook's, whose duplicate transcripts its stylesheet hides,
 * or a page it knows nothing of (VS Code), where the kernel must show a turn once by itself.
 */

let unstyledPage = false;

/** Whether `page` (a window) is the classic notebook, whose output areas classic.css knows. */
export function isClassicNotebook(page: unknown): boolean {
  const jupyter = (page as { Jupyter?: { notebook?: unknown } } | null)?.Jupyter;
  return typeof jupyter?.notebook === 'object' && jupyter.notebook !== null;
}

/** Say that the page lacks the extension's output-area styles (the nbextension, once, outside
 * the classic notebook): every terminal's `ready` then says so. */
export function setUnstyledPage(unstyled: boolean): void {
  unstyledPage = unstyled;
}

export function pageUnstyled(): boolean {
  return unstyledPage;
}
