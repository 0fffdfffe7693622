/**
 * The agent side panel (sidecar pattern): a kernel-side AgentPanel model places views of its
 * children into one Lumino panel in the right sidebar as soon as its comm opens. The sidebar
 * shows the model that belongs to the active notebook's kernel (else the newest one).
 */
import {
  DOMWidgetModel,
  DOMWidgetView,
  ISerializers,
  WidgetModel,
  unpack_models
} from '@jupyter-widgets/base';
import { Panel, Widget } from '@lumino/widgets';

import { acpIcon } from './icon';
import { MODULE_NAME, MODULE_VERSION } from './version';

export const PANEL_ID = 'acp-notebook-panel';

/** What the side panel needs from the application shell (JupyterLab or Notebook 7). */
export interface IShellLike {
  add(widget: Widget, area?: string, options?: any): void;
  activateById(id: string): void;
  currentWidget?: Widget | null;
  currentChanged?: { connect(fn: () => void, thisArg?: any): void };
  widgets?(area?: string): Iterable<Widget>;
}

const WIDGET_VIEW_MIME = 'application/vnd.jupyter.widget-view+json';

/** A notebook cell found in the shell's main area (duck-typed: JupyterLab and Notebook 7). */
interface IFoundCell {
  host: Widget;
  notebook: any;
  cell: any;
  index: number;
}

function outputShowsModel(cell: any, modelId: string): boolean {
  const outputs = cell?.model?.outputs;
  if (!modelId || !outputs || typeof outputs.length !== 'number') {
    return false;
  }
  for (let i = 0; i < outputs.length; i++) {
    const data = outputs.get(i)?.data ?? {};
    if ((data[WIDGET_VIEW_MIME] as any)?.model_id === modelId) {
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
    const notebook = (host as any).content;
    const cells: any[] | undefined = notebook?.widgets;
    if (!Array.isArray(cells)) {
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

/** The single right-sidebar panel. */
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
      'No agent panel in this kernel yet. Run `%acp panel` in a notebook.';
    this.addWidget(this._placeholder);
    this._render();
  }

  setShell(shell: IShellLike): void {
    this._shell = shell;
    shell.currentChanged?.connect(() => this._select(), this);
  }

  attach(model: AgentPanelModel): void {
    this._models.push(model);
    model.on('change:pending_count change:title', () => this._render());
    model.on('change:_show_requests', () => this.reveal(model));
    this._select(model);
    if (Number(model.get('_show_requests')) > 0) {
      this.reveal(model);
    }
  }

  detach(model: AgentPanelModel): void {
    this._models = this._models.filter(m => m !== model);
    this._stacks.get(model)?.dispose();
    this._stacks.delete(model);
    if (this._current === model) {
      this._current = null;
      this._select();
    }
  }

  reveal(model?: AgentPanelModel): void {
    if (model) {
      this._select(model);
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
    const node: HTMLElement | undefined = cell?.node;
    node?.scrollIntoView({ block: 'center' });
    node?.classList.add('acp-flash');
    setTimeout(() => node?.classList.remove('acp-flash'), 1500);
    return true;
  }

  /** Custom messages from the kernel's panel model (see `_widgets/_panel.py`). */
  async handleMessage(content: any): Promise<void> {
    const kind = content?.type;
    if (kind === 'scroll_to') {
      await this.scrollToCell(String(content.cell_id || ''), String(content.model_id || ''));
    } else if (kind === 'copy') {
      const ok = await copyText(String(content.text ?? ''));
      this.node.dataset.copied = ok ? String(String(content.text ?? '').length) : 'refused';
    } else if (kind === 'download') {
      downloadText(String(content.filename || 'acp.log'), String(content.text ?? ''));
      this.node.dataset.downloaded = String(content.filename || '');
    }
  }

  /** Pick the model of the active notebook's kernel; `preferred` wins when no kernel matches. */
  private _select(preferred?: AgentPanelModel): void {
    const kernelId = (this._shell?.currentWidget as any)?.sessionContext?.session?.kernel?.id;
    const ofKernel = this._models.filter(
      m => kernelId && (m.widget_manager as any)?.kernel?.id === kernelId
    );
    const next =
      ofKernel[ofKernel.length - 1] ??
      preferred ??
      (this._current && this._models.includes(this._current) ? this._current : null) ??
      this._models[this._models.length - 1] ??
      null;
    if (next !== this._current) {
      if (this._current) {
        this._stacks.get(this._current)?.hide();
      }
      this._current = next;
      if (next) {
        let stack = this._stacks.get(next);
        if (!stack) {
          stack = new ChildStack(next);
          this._stacks.set(next, stack);
          this.addWidget(stack);
        }
        stack.show();
      }
    }
    this._render();
  }

  private _render(): void {
    const model = this._current;
    const pending = model ? Number(model.get('pending_count')) || 0 : 0;
    this._placeholder.setHidden(model !== null);
    this._header.textContent = model ? String(model.get('title') || 'ACP agents') : 'ACP agents';
    this._header.dataset.pending = String(pending);
    const dataset: Record<string, string> = {};
    if (pending > 0) {
      dataset['acp-pending'] = String(pending);
    }
    this.title.dataset = dataset;
    this.title.caption = pending > 0 ? `ACP agents (${pending} pending)` : 'ACP agents';
    this.node.dataset.pending = String(pending);
  }

  private _shell: IShellLike | null = null;
  private _models: AgentPanelModel[] = [];
  private _stacks = new Map<AgentPanelModel, ChildStack>();
  private _current: AgentPanelModel | null = null;
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

export class AgentPanelModel extends DOMWidgetModel {
  defaults(): any {
    return {
      ...super.defaults(),
      _model_name: 'AgentPanelModel',
      _model_module: MODULE_NAME,
      _model_module_version: MODULE_VERSION,
      _view_name: 'AgentPanelView',
      _view_module: MODULE_NAME,
      _view_module_version: MODULE_VERSION,
      children: [],
      title: 'ACP agents',
      pending_count: 0,
      _show_requests: 0
    };
  }

  initialize(attributes: any, options: any): void {
    super.initialize(attributes, options);
    const panel = getSidePanel();
    panel.attach(this);
    this.once('comm:close destroy', () => panel.detach(this));
    this.on('msg:custom', (content: any) => void panel.handleMessage(content));
    // Tells the kernel that a front end with this extension holds the panel.
    this.send({ type: 'rendered' }, {});
  }

  static serializers: ISerializers = {
    ...DOMWidgetModel.serializers,
    children: { deserialize: unpack_models as any }
  };
}

/** The same children, when the panel model itself is displayed in a cell. */
export class AgentPanelView extends DOMWidgetView {
  render(): void {
    this.el.classList.add('acp-panel-inline');
    this._stack = new ChildStack(this.model);
    Widget.attach(this._stack, this.el);
  }

  remove(): any {
    this._stack?.dispose();
    return super.remove();
  }

  private _stack: ChildStack | null = null;
}
