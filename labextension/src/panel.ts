/**
 * The agent side panel (sidecar pattern): a kernel-side AgentPanel model places views of its
 * children into one Lumino panel in the right sidebar as soon as its comm opens. The sidebar
 * gathers the models of every kernel (one section per notebook, the active notebook's first).
 */
import {
  DOMWidgetModel,
  DOMWidgetView,
  IBackboneModelOptions,
  ISerializers,
  WidgetModel,
  unpack_models
} from '@jupyter-widgets/base';
import type { Message } from '@lumino/messaging';
import { Panel, SplitPanel, Widget } from '@lumino/widgets';

import { acpIcon } from './icon';
import { nameConnection } from './identity';
import {
  badgeDataset,
  GoneReason,
  goneNote,
  isExpanded,
  orderSections,
  panelCaption,
  panelHeader,
  pendingTotals,
  sectionLabel,
  sectionState,
  widenedSizes
} from './inbox';
import {
  asDocumentHost,
  ICellWidgetLike,
  IDocumentContextLike,
  INotebookLike,
  ISignalLike,
  managerOf
} from './lab';
import { IPanelRendered, readPanelMessage } from './protocol';
import { panelModelDefaults } from './version';

export type { GoneReason } from './inbox';

export const PANEL_ID = 'acp-notebook-panel';
/** The width (px) the sidebar gets when the panel first opens narrower than that. */
const WIDE = 380;

/** What the side panel needs from the application shell (JupyterLab or Notebook 7). */
export interface IShellLike {
  add(widget: Widget, area?: string, options?: { rank?: number }): void;
  activateById(id: string): void;
  currentWidget?: Widget | null;
  currentChanged?: ISignalLike;
  widgets?(area?: string): Iterable<Widget>;
}

const WIDGET_VIEW_MIME = 'application/vnd.jupyter.widget-view+json';

/** A notebook cell found in the shell's main area (duck-typed: JupyterLab and Notebook 7). */
interface IFoundCell {
  host: Widget;
  notebook: INotebookLike;
  cell: ICellWidgetLike;
  index: number;
}

function outputShowsModel(cell: ICellWidgetLike | undefined, modelId: string): boolean {
  const outputs = cell?.model?.outputs;
  if (!modelId || !outputs || typeof outputs.length !== 'number') {
    return false;
  }
  for (let i = 0; i < outputs.length; i++) {
    const data = outputs.get(i)?.data ?? {};
    const view = data[WIDGET_VIEW_MIME] as { model_id?: unknown } | null | undefined;
    if (view?.model_id === modelId) {
      return true;
    }
  }
  return false;
}

/** The cell with notebook cell id `cellId`, or else the one whose output shows `modelId`. */
export function findCell(shell: IShellLike, cellId: string, modelId: string): IFoundCell | null {
  const hosts = shell.widgets ? Array.from(shell.widgets('main')) : [];
  if (shell.currentWidget && !hosts.includes(shell.currentWidget)) {
    hosts.unshift(shell.currentWidget);
  }
  let byOutput: IFoundCell | null = null;
  for (const host of hosts) {
    const notebook = asDocumentHost(host)?.content;
    const cells = notebook?.widgets;
    if (!notebook || !Array.isArray(cells)) {
      continue;
    }
    for (let index = 0; index < cells.length; index++) {
      const cell = cells[index];
      if (cellId && cell?.model?.id === cellId) {
        return { host, notebook, cell, index };
      }
      if (!byOutput && outputShowsModel(cell, modelId)) {
        byOutput = { host, notebook, cell, index };
      }
    }
  }
  return byOutput;
}

/** Put text on the clipboard (with the old execCommand path when the API is refused). */
async function copyText(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const area = document.createElement('textarea');
    area.value = text;
    area.style.position = 'fixed';
    area.style.opacity = '0';
    document.body.appendChild(area);
    area.select();
    const ok = document.execCommand('copy');
    area.remove();
    return ok;
  }
}

function downloadText(filename: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: 'text/plain' }));
  const link = document.createElement('a');
  link.href = url;
  link.download = filename || 'acp.log';
  document.body.appendChild(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

/** The nearest SplitPanel above `widget`, and its part that holds `widget`. */
function splitAbove(widget: Widget): { split: SplitPanel; child: Widget } | null {
  let child = widget;
  let up = widget.parent;
  while (up && !(up instanceof SplitPanel)) {
    child = up;
    up = up.parent;
  }
  return up ? { split: up, child } : null;
}

/** Keeps the views of one model's children in order, re-using views across updates. */
class ChildStack extends Panel {
  constructor(private _model: DOMWidgetModel) {
    super();
    this.addClass('acp-panel-children');
    void this.update_children();
    _model.on('change:children', () => void this.update_children());
  }

  async update_children(): Promise<void> {
    const children: WidgetModel[] = this._model.get('children') || [];
    const wanted = new Set(children.map(c => c.model_id));
    for (const [id, view] of this._views) {
      if (!wanted.has(id)) {
        this._views.delete(id);
        view.remove();
      }
    }
    let index = 0;
    for (const child of children) {
      let view = this._views.get(child.model_id);
      if (!view) {
        view = (await this._model.widget_manager.create_view(child, {})) as DOMWidgetView;
        this._views.set(child.model_id, view);
      }
      this.insertWidget(index, view.luminoWidget);
      index += 1;
    }
  }

  dispose(): void {
    for (const view of this._views.values()) {
      view.remove();
    }
    this._views.clear();
    super.dispose();
  }

  private _views = new Map<string, DOMWidgetView>();
}

/** The notebook (document context) a panel model's widget manager belongs to, if any. */
function contextOf(model: AgentPanelModel): IDocumentContextLike | null {
  return managerOf(model)?.context ?? null;
}

function kernelIdOf(model: AgentPanelModel): string {
  const manager = managerOf(model);
  return String(manager?.kernel?.id ?? manager?.context?.sessionContext?.session?.kernel?.id ?? '');
}

/**
 * One kernel's part of the panel: a header naming its notebook (and how many requests wait
 * there), then the views of its model's children. After a kernel restart its model is gone:
 * the views are removed and the header says so (nothing live-looking stays).
 */
export class KernelSection extends Panel {
  constructor(
    readonly model: AgentPanelModel,
    private _onToggle: (section: KernelSection) => void
  ) {
    super();
    this.addClass('acp-kernel-section');
    this._head = document.createElement('div');
    this._head.className = 'acp-kernel-section-header';
    this._head.setAttribute('role', 'button');
    this._head.tabIndex = 0;
    this._name = document.createElement('span');
    this._name.className = 'acp-kernel-section-name';
    this._state = document.createElement('span');
    this._state.className = 'acp-kernel-section-state';
    this._head.append(this._name, this._state);
    this._head.addEventListener('click', () => this._onToggle(this));
    this._head.addEventListener('keydown', event => {
      if (event.key === 'Enter' || event.key === ' ') {
        event.preventDefault();
        this._onToggle(this);
      }
    });
    this.addWidget(new Widget({ node: this._head }));
    this._stack = new ChildStack(model);
    this.addWidget(this._stack);
    this._note = new Widget();
    this._note.addClass('acp-kernel-section-note');
    this._note.hide();
    this.addWidget(this._note);
  }

  /** The notebook's path ('' when the model's widget manager has no document). */
  get path(): string {
    return String(contextOf(this.model)?.path ?? '');
  }

  get label(): string {
    return sectionLabel(this.path, kernelIdOf(this.model));
  }

  get pending(): number {
    return this.gone ? 0 : Number(this.model.get('pending_count')) || 0;
  }

  get gone(): GoneReason | null {
    return this._gone;
  }

  /** The kernel that held the model is gone: drop every live view, say so. */
  markGone(reason: GoneReason): void {
    if (this._gone) {
      return;
    }
    this._gone = reason;
    this._stack.dispose();
    this._note.node.textContent = goneNote(reason);
    this._note.show();
    this.render(true);
  }

  render(expanded: boolean, active = false): void {
    const pending = this.pending;
    this._name.textContent = this.label;
    this._name.title = this.path || this.label;
    this._state.textContent = sectionState(this._gone, pending);
    this.node.dataset.notebook = this.path;
    this.node.dataset.pending = String(pending);
    this.node.dataset.state = this._gone ? 'gone' : 'live';
    this.node.dataset.active = active ? 'true' : 'false';
    this._head.setAttribute('aria-expanded', expanded ? 'true' : 'false');
    if (!this._gone) {
      this._stack.setHidden(!expanded);
    }
  }

  dispose(): void {
    if (!this._stack.isDisposed) {
      this._stack.dispose();
    }
    super.dispose();
  }

  private _head: HTMLDivElement;
  private _name: HTMLSpanElement;
  private _state: HTMLSpanElement;
  private _stack: ChildStack;
  private _note: Widget;
  private _gone: GoneReason | null = null;
}

/**
 * The single right-sidebar panel. It gathers the panel models of every kernel that has
 * acp_notebook loaded (one section per notebook, the active notebook's first), so a request
 * waiting in another notebook is never hidden behind an "(empty)" inbox; the tab's badge
 * counts the pending requests of all of them.
 */
export class AcpSidePanel extends Panel {
  constructor() {
    super();
    this.id = PANEL_ID;
    this.addClass('acp-side-panel');
    this.title.icon = acpIcon;
    this.title.caption = 'ACP agents';
    this._header = document.createElement('div');
    this._header.className = 'acp-side-panel-header';
    const headerWidget = new Widget({ node: this._header });
    this.addWidget(headerWidget);
    this._placeholder = new Widget();
    this._placeholder.addClass('acp-side-panel-placeholder');
    this._placeholder.node.textContent =
      'No agent panel in any kernel yet. Run `%acp panel` in a notebook.';
    this.addWidget(this._placeholder);
    this._render();
  }

  /** Wide enough for session ids the first time it opens (the sidebar may start narrow:
   * Notebook 7 gives it a quarter of the window); later widths are the person's choice. */
  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    if (!this._widened) {
      this._widened = true;
      requestAnimationFrame(() => this._widen());
    }
  }

  private _widen(): void {
    const found = splitAbove(this);
    if (!found) {
      return;
    }
    const { split, child } = found;
    const sizes = widenedSizes(
      split.relativeSizes(),
      split.widgets.indexOf(child),
      split.node.getBoundingClientRect().width,
      child.node.getBoundingClientRect().width,
      WIDE
    );
    if (sizes) {
      split.setRelativeSizes(sizes);
    }
  }

  setShell(shell: IShellLike): void {
    this._shell = shell;
    shell.currentChanged?.connect(() => this._render(), this);
  }

  get sections(): readonly KernelSection[] {
    return this._sections;
  }

  attach(model: AgentPanelModel): void {
    const context = contextOf(model);
    // A new kernel of the same notebook (after a restart) replaces the old, gone section.
    for (const old of this._sections.filter(
      s => s.gone && context && contextOf(s.model) === context
    )) {
      this._remove(old);
    }
    const section = new KernelSection(model, s => this._toggle(s));
    this._sections.push(section);
    this.addWidget(section);
    model.on('change:pending_count change:title', () => this._render());
    model.on('change:_show_requests', () => this.reveal(model));
    // The widget manager marks every model not live when its kernel restarts.
    model.on('comm_live_update', () => {
      if (!model.comm_live) {
        this._gone(section, 'kernel restarted');
      }
    });
    const sessionContext = context?.sessionContext;
    sessionContext?.statusChanged?.connect((_, status) => {
      if (status === 'restarting' || status === 'autorestarting') {
        this._gone(section, 'kernel restarted');
      } else if (status === 'dead') {
        this._gone(section, 'kernel stopped');
      }
    }, section);
    sessionContext?.kernelChanged?.connect(() => this._gone(section, 'kernel changed'), section);
    context?.disposed?.connect(() => {
      if (this._sections.includes(section)) {
        this._remove(section);
      }
    }, section);
    if (Number(model.get('_show_requests')) > 0) {
      this.reveal(model);
    }
    this._render();
  }

  detach(model: AgentPanelModel): void {
    for (const section of this._sections.filter(s => s.model === model)) {
      if (!section.gone) {
        this._remove(section); // closed on purpose (`%acp panel --close`, notebook closed)
      }
    }
    this._render();
  }

  reveal(model?: AgentPanelModel): void {
    const section = this._sections.find(s => s.model === model);
    if (section) {
      this._expanded.set(section, true);
      this._render();
    }
    this._shell?.activateById(this.id);
  }

  /** Show the notebook cell of a turn (activate its notebook, scroll, flash the cell). */
  async scrollToCell(cellId: string, modelId: string): Promise<boolean> {
    if (!this._shell) {
      return false;
    }
    const found = findCell(this._shell, cellId, modelId);
    this.node.dataset.scrolled = found ? `${found.index}` : 'not-found';
    if (!found) {
      return false;
    }
    this._shell.activateById(found.host.id);
    const { notebook, cell, index } = found;
    try {
      notebook.activeCellIndex = index;
      if (typeof notebook.scrollToItem === 'function') {
        await notebook.scrollToItem(index, 'center');
      }
    } catch (err) {
      console.warn('acp: scrolling the notebook failed', err);
    }
    const node: HTMLElement | undefined = cell.node;
    node?.scrollIntoView({ block: 'center' });
    node?.classList.add('acp-flash');
    setTimeout(() => node?.classList.remove('acp-flash'), 1500);
    return true;
  }

  /** Custom messages from the kernel's panel model (see `_widgets/_panel.py`). */
  async handleMessage(content: unknown): Promise<void> {
    const message = readPanelMessage(content);
    if (message === null) {
      return;
    }
    switch (message.type) {
      case 'scroll_to':
        await this.scrollToCell(message.cell_id, message.model_id);
        return;
      case 'copy': {
        const ok = await copyText(message.text);
        this.node.dataset.copied = ok ? String(message.text.length) : 'refused';
        return;
      }
      case 'download':
        downloadText(message.filename || 'acp.log', message.text);
        this.node.dataset.downloaded = message.filename;
        return;
    }
  }

  private _gone(section: KernelSection, reason: GoneReason): void {
    if (this._sections.includes(section)) {
      section.markGone(reason);
      this._render();
    }
  }

  private _remove(section: KernelSection): void {
    this._sections = this._sections.filter(s => s !== section);
    this._expanded.delete(section);
    section.dispose();
    this._render();
  }

  private _toggle(section: KernelSection): void {
    this._expanded.set(section, !this._isExpanded(section, this._activeSection()));
    this._render();
  }

  /** The section of the active notebook (by document context, else by kernel id). */
  private _activeSection(): KernelSection | null {
    const current = asDocumentHost(this._shell?.currentWidget);
    const context = current?.context;
    const kernelId = current?.sessionContext?.session?.kernel?.id;
    const live = this._sections.filter(s => !s.gone);
    return (
      live.filter(s => context && contextOf(s.model) === context).pop() ??
      live.filter(s => kernelId && kernelIdOf(s.model) === kernelId).pop() ??
      this._sections.filter(s => context && contextOf(s.model) === context).pop() ??
      null
    );
  }

  private _isExpanded(section: KernelSection, active: KernelSection | null): boolean {
    return isExpanded(
      this._expanded.get(section),
      section === active,
      section.pending,
      this._sections.length
    );
  }

  private _render(): void {
    const active = this._activeSection();
    orderSections(this._sections, active, s => s.pending).forEach((section, i) => {
      this.insertWidget(2 + i, section);
      section.render(this._isExpanded(section, active), section === active);
    });
    const { pending, waiting } = pendingTotals(this._sections.map(s => s.pending));
    this._placeholder.setHidden(this._sections.length > 0);
    this._header.textContent = panelHeader(pending, waiting);
    this._header.dataset.pending = String(pending);
    // Keep what the shell put there (data-id, data-jptablabel): only our key changes. The
    // badge is drawn from data-acp-badge with ::before (panel.css): JupyterLab draws the
    // current side tab's border with ::after, which used to leave an empty orange pill.
    this.title.dataset = badgeDataset(this.title.dataset, pending);
    this.title.caption = panelCaption(pending);
    this.node.dataset.pending = String(pending);
    this.node.dataset.sections = String(this._sections.length);
  }

  private _shell: IShellLike | null = null;
  private _widened = false;
  private _sections: KernelSection[] = [];
  private _expanded = new Map<KernelSection, boolean>();
  private _header: HTMLDivElement;
  private _placeholder: Widget;
}

let sidePanel: AcpSidePanel | null = null;

/** The side panel, created on first use. */
export function getSidePanel(): AcpSidePanel {
  if (!sidePanel) {
    sidePanel = new AcpSidePanel();
  }
  return sidePanel;
}

/** A widget model's attributes (Backbone's hash, as @jupyter-widgets/base declares it). */
type ModelAttributes = ReturnType<DOMWidgetModel['defaults']>;

export class AgentPanelModel extends DOMWidgetModel {
  defaults(): ModelAttributes {
    return {
      ...super.defaults(),
      ...panelModelDefaults()
    };
  }

  initialize(attributes: ModelAttributes, options: IBackboneModelOptions): void {
    super.initialize(attributes, options);
    nameConnection(managerOf(this)?.kernel); // clicks on cards then say who made them
    const panel = getSidePanel();
    panel.attach(this);
    this.once('comm:close destroy', () => panel.detach(this));
    this.on('msg:custom', (content: unknown) => void panel.handleMessage(content));
    // Tells the kernel that a front end with this extension holds the panel.
    const rendered: IPanelRendered = { type: 'rendered' };
    this.send({ ...rendered }, {});
  }

  static serializers: ISerializers = {
    ...DOMWidgetModel.serializers,
    children: { deserialize: unpack_models }
  };
}

/** The same children, when the panel model itself is displayed in a cell. */
export class AgentPanelView extends DOMWidgetView {
  render(): void {
    this.el.classList.add('acp-panel-inline');
    this._stack = new ChildStack(this.model);
    Widget.attach(this._stack, this.el);
  }

  remove(): unknown {
    this._stack?.dispose();
    return super.remove();
  }

  private _stack: ChildStack | null = null;
}
