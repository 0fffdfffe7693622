/**
 * The parts of JupyterLab's objects the extension reads, duck-typed: it depends on neither
 * `@jupyterlab/notebook` nor `@jupyter-widgets/jupyterlab-manager` (JupyterLab and Notebook 7
 * both run it), so it names here exactly what it touches. Every member is optional or checked
 * before use: an object that turns out not to be a notebook is passed over, never trusted.
 */
import type { WidgetModel } from '@jupyter-widgets/base';
import type { Widget } from '@lumino/widgets';

/** A Lumino signal, as far as connecting to it goes. */
export interface ISignalLike<A = unknown> {
  connect(slot: (sender: unknown, args: A) => void, thisArg?: unknown): unknown;
}

/** A cell's model (its source, language and outputs). */
export interface ICellModelLike {
  readonly type?: string;
  readonly id?: string;
  mimeType?: string;
  readonly sharedModel?: { getSource?(): unknown };
  readonly value?: { readonly text?: unknown };
  readonly outputs?: {
    readonly length: number;
    get(index: number): { readonly data?: Readonly<Record<string, unknown>> } | undefined;
  };
  readonly contentChanged?: ISignalLike;
  readonly mimeTypeChanged?: ISignalLike<{ readonly newValue?: unknown } | undefined>;
}

/** A CodeMirror 6 view, as far as asking its language goes. */
export interface IEditorViewLike {
  readonly state?: { languageDataAt?(name: string, pos: number): unknown };
}

/** A cell's widget. */
export interface ICellWidgetLike {
  readonly model?: ICellModelLike;
  readonly node?: HTMLElement;
  readonly editor?: { readonly editor?: IEditorViewLike; _onMimeTypeChanged?(): void };
}

/** A notebook's list of cell models. */
export interface ICellListLike {
  readonly length: number;
  get(index: number): ICellModelLike | undefined;
  readonly changed?: ISignalLike;
}

/** A notebook widget (a notebook panel's content). */
export interface INotebookLike {
  readonly widgets?: readonly ICellWidgetLike[];
  readonly model?: { readonly cells?: ICellListLike } | null;
  readonly modelChanged?: ISignalLike;
  activeCellIndex?: number;
  scrollToItem?(index: number, align: string): Promise<unknown>;
}

export interface IKernelLike {
  readonly id?: string;
}

/** A notebook's session (its kernel, and the signals of its status). */
export interface ISessionContextLike {
  readonly session?: { readonly kernel?: IKernelLike | null } | null;
  readonly statusChanged?: ISignalLike<string>;
  readonly kernelChanged?: ISignalLike;
}

/** A document's context (its path, its session). */
export interface IDocumentContextLike {
  readonly path?: string;
  readonly sessionContext?: ISessionContextLike;
  readonly ready?: Promise<unknown>;
  readonly disposed?: ISignalLike;
}

/** A main-area widget: a notebook panel has a notebook as content and a document context. */
export interface IDocumentHostLike {
  readonly content?: INotebookLike;
  readonly context?: IDocumentContextLike;
  readonly sessionContext?: ISessionContextLike;
}

/** The JupyterLab widget manager behind a widget model (it knows its notebook and kernel). */
export interface IWidgetManagerLike {
  readonly context?: IDocumentContextLike;
  readonly kernel?: IKernelLike | null;
}

/** A shell widget seen as a possible document host (its members are checked where used). */
export function asDocumentHost(widget: Widget | null | undefined): IDocumentHostLike | null {
  return (widget ?? null) as IDocumentHostLike | null;
}

/** A widget model's manager seen as JupyterLab's (the interface it is typed by is narrower). */
export function managerOf(model: WidgetModel): IWidgetManagerLike | null {
  return (model.widget_manager ?? null) as IWidgetManagerLike | null;
}
