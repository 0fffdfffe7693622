/**
 * `%%acp` cells are prompts, not Python: their editor is switched to JupyterLab's Markdown
 * language (the mime type Markdown cells use) while the cell's first line starts with `%%acp`,
 * and back to the notebook's language when it no longer does.
 *
 * A code cell's editor takes its language from the cell model's `mimeType` (the notebook sets
 * it from the kernel's language_info; it is not saved in the file), so the simplest robust
 * hook is that attribute: no CodeMirror extension of our own, no dependency on
 * `@jupyterlab/notebook` (the notebooks are found in the shell, duck-typed: src/lab.ts).
 */
import {
  asDocumentHost,
  ICellModelLike,
  ICellWidgetLike,
  IDocumentHostLike,
  IEditorViewLike,
  ISignalLike
} from './lab';
import { IShellLike } from './panel';

/** What JupyterLab's Markdown cells use (GitHub-flavoured Markdown with math). */
export const MARKDOWN_MIME = 'text/x-ipythongfm';
const CELL_MAGIC = /^\s*%%acp(\s|$)/;

export function isAcpCell(source: string): boolean {
  return CELL_MAGIC.test(source);
}

/** The notebook's own mime type for a cell, remembered while the cell shows Markdown. */
const ownMime = new WeakMap<ICellModelLike, string>();
const watched = new WeakSet<ICellModelLike>();
const watchedNotebooks = new WeakSet<object>();
const seenHosts = new WeakSet<IDocumentHostLike>();

function sourceOf(cellModel: ICellModelLike): string {
  const shared = cellModel?.sharedModel;
  if (shared && typeof shared.getSource === 'function') {
    return String(shared.getSource());
  }
  return String(cellModel?.value?.text ?? '');
}

/** Give one cell model the language its first line asks for. */
export function applyCellLanguage(cellModel: ICellModelLike | null | undefined): void {
  if (!cellModel || cellModel.type !== 'code') {
    return;
  }
  const acp = isAcpCell(sourceOf(cellModel));
  const mime = String(cellModel.mimeType ?? '');
  if (acp && mime !== MARKDOWN_MIME) {
    ownMime.set(cellModel, mime);
    cellModel.mimeType = MARKDOWN_MIME;
  } else if (!acp && mime === MARKDOWN_MIME && ownMime.has(cellModel)) {
    cellModel.mimeType = ownMime.get(cellModel) ?? mime;
    ownMime.delete(cellModel);
  }
}

function watchCell(cellModel: ICellModelLike | undefined): void {
  if (!cellModel || watched.has(cellModel)) {
    return;
  }
  watched.add(cellModel);
  applyCellLanguage(cellModel);
  cellModel.contentChanged?.connect(() => applyCellLanguage(cellModel));
  // The notebook sets every code cell's mime type again when the kernel's language arrives.
  cellModel.mimeTypeChanged?.connect((_, change) => {
    if (change?.newValue !== MARKDOWN_MIME && isAcpCell(sourceOf(cellModel))) {
      ownMime.set(cellModel, String(change?.newValue ?? ''));
      queueMicrotask(() => applyCellLanguage(cellModel));
    }
  });
}

function watchNotebook(host: IDocumentHostLike): void {
  const cells = host?.content?.model?.cells;
  if (!cells || watchedNotebooks.has(cells)) {
    return;
  }
  watchedNotebooks.add(cells);
  for (let i = 0; i < cells.length; i++) {
    watchCell(cells.get(i));
  }
  cells.changed?.connect(() => {
    for (let i = 0; i < cells.length; i++) {
      watchCell(cells.get(i));
    }
  });
}

/** Does this CodeMirror 6 view speak Markdown (its comment syntax is HTML's)? */
function editorIsMarkdown(view: IEditorViewLike | undefined): boolean | null {
  const state = view?.state;
  if (!state || typeof state.languageDataAt !== 'function') {
    return null;
  }
  const tokens = state.languageDataAt('commentTokens', 0);
  if (!Array.isArray(tokens)) {
    return false;
  }
  return (tokens as readonly ({ block?: { open?: unknown } } | null)[]).some(
    t => t?.block?.open === '<!--'
  );
}

/**
 * The editor loads a language asynchronously for each mime type it is given, and applies them
 * in the order they load: when the notebook sets Python (not loaded yet) just before we set
 * Markdown (loaded), Python lands last. Ask such an editor to load its model's type again.
 */
function fixEditors(host: IDocumentHostLike): void {
  const cells: readonly ICellWidgetLike[] = host.content?.widgets ?? [];
  for (const cell of cells) {
    const model = cell?.model;
    if (model?.type !== 'code' || model.mimeType !== MARKDOWN_MIME) {
      continue;
    }
    const editor = cell.editor;
    const stale = editorIsMarkdown(editor?.editor) === false;
    if (stale && typeof editor?._onMimeTypeChanged === 'function') {
      editor._onMimeTypeChanged();
    }
  }
}

/** Watch every notebook of the shell's main area, now and as they open. */
export function highlightAcpCells(shell: IShellLike & { layoutModified?: ISignalLike }): void {
  const scan = () => {
    const hosts = shell.widgets ? Array.from(shell.widgets('main')) : [];
    if (shell.currentWidget && !hosts.includes(shell.currentWidget)) {
      hosts.push(shell.currentWidget);
    }
    for (const widget of hosts) {
      const host = asDocumentHost(widget);
      if (!host) {
        continue;
      }
      watchNotebook(host);
      fixEditors(host);
      if (seenHosts.has(host)) {
        continue;
      }
      seenHosts.add(host);
      // a notebook's model may arrive after its panel is added
      host.content?.modelChanged?.connect?.(() => watchNotebook(host));
      void host.context?.ready?.then?.(() => watchNotebook(host));
    }
  };
  shell.currentChanged?.connect(scan);
  shell.layoutModified?.connect?.(scan);
  scan();
  // Notebook 7 opens its notebook without a signal this sees: look again now and then (cheap:
  // a few widgets, each watched once).
  setInterval(scan, 1000);
}
