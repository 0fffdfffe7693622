/**
 * Live terminal view: raw bytes from the kernel go straight into xterm.js.
 *
 * Read-only, unless the model `accepts_input` (a sign-in terminal, whose command runs in a PTY
 * in the kernel): then what the user types goes to the kernel as `input` messages, and the
 * view fits its columns to its width and reports its size as `resize` messages. Agents'
 * terminals never accept input. Typed data is never logged.
 *
 * Its messages are typed in protocol.ts; which of them it writes, drops or answers with a new
 * backlog request is stream.ts (ChunkSequencer), the badge's words exit.ts.
 */
import { DOMWidgetModel, DOMWidgetView, ISerializers } from '@jupyter-widgets/base';
import type { ITheme, Terminal } from '@xterm/xterm';

import { exitState, terminalBadge, terminalNote } from './exit';
import {
  IExitStatus,
  ITerminalAck,
  ITerminalCancel,
  ITerminalInput,
  ITerminalReady,
  ITerminalResize,
  readTerminalMessage
} from './protocol';
import {
  Acknowledger,
  BufferTextReader,
  bufferText,
  ChunkSequencer,
  fromBase64,
  newToken,
  replacePrefix,
  textTerminalsAsked,
  toBytes,
  WRITE_PIECE,
  WriteQueue
} from './stream';
import { pageUnstyled } from './page';
import { MODULE_NAME, MODULE_VERSION } from './version';

/** How long the test hooks (data-* attributes) wait after the last write. */
const HOOK_DELAY_MS = 30;
/**
 * While output keeps coming, the hooks are refreshed at most this often, and never more than
 * one tenth of the time (reading a full scrollback is not free).
 */
const HOOK_INTERVAL_MS = 250;
const HOOK_SHARE = 0.1;
/** The hooks read xterm's buffer in tasks of about this long (a full scrollback takes a few). */
const HOOK_SLICE_MS = 8;
const HOOK_LINES_PER_CHECK = 200;
/** Bytes handed to xterm and not yet parsed, at most (xterm parses in ~12 ms slices). */
const WRITE_AHEAD = 4 * WRITE_PIECE;
/**
 * Bytes xterm is handed per budget, at most: what it parses in a few milliseconds. A flood
 * faster than that queues up; the page keeps its frames.
 */
const FRAME_BUDGET = 8 * WRITE_PIECE;
/**
 * The budget is given again at an animation frame at least this long (ms) after the last (every
 * other frame at 60 Hz): a flood is drawn some 30 times a second, not at every frame, for each
 * drawing costs the page a layout, a paint and a compositing update whatever the bytes (about
 * as much main-thread time as xterm's parsing of the budget).
 */
const FRAME_INTERVAL_MS = 25;
/** Where no frame comes (a hidden tab), the budget is given again after this long. */
const FRAME_FALLBACK_MS = 100;
/** A hidden view writes what it kept once no byte came for this long (ms). */
const HIDDEN_CATCH_UP_MS = 300;
/**
 * Queued bytes past which the view is far behind: it then skips what cannot stay in the
 * buffer (WriteQueue.trimTo), so a flood costs this view the tail it shows, not every byte.
 */
const FAR_BEHIND = 1024 * 1024;
/** A short command's screen shrinks to its output, but never below this many rows. */
const MIN_VISIBLE_ROWS = 2;
/** A tall terminal shows at most this many rows at once; the rest scrolls. */
export const MAX_VISIBLE_ROWS = 24;
/** Lines kept above the screen, reachable by scrolling. */
const SCROLLBACK = 10000;
/** How long the copy button says "Copied". */
const COPIED_MS = 1500;
/** An input terminal fitted to its width keeps at least, and at most, this many columns. */
const MIN_INPUT_COLS = 20;
const MAX_INPUT_COLS = 250;

/** ANSI colours that stay readable on a light background; dark themes use xterm's defaults. */
const LIGHT_ANSI: ITheme = {
  black: '#3e424d',
  red: '#e75c58',
  green: '#00a250',
  yellow: '#b27d12',
  blue: '#208ffb',
  magenta: '#d160c4',
  cyan: '#258f8f',
  white: '#a1a6b2',
  brightBlack: '#282c36',
  brightRed: '#b22b31',
  brightGreen: '#007427',
  brightYellow: '#8a6000',
  brightBlue: '#0065ca',
  brightMagenta: '#a03196',
  brightCyan: '#1d7070',
  brightWhite: '#6f737d'
};

/** A CSS colour (possibly a `var(...)`) resolved against the page's current theme. */
function resolveColor(value: string, fallback: string): string {
  const probe = document.createElement('span');
  probe.style.display = 'none';
  probe.style.color = fallback;
  probe.style.color = value;
  document.body.appendChild(probe);
  const color = getComputedStyle(probe).color;
  probe.remove();
  return color || fallback;
}

/**
 * The xterm theme for JupyterLab's current theme (light, dark, high contrast): background and
 * text from the theme's variables, so a terminal looks like the outputs around it.
 */
export function jupyterTheme(): ITheme {
  const light = document.body.dataset.jpThemeLight !== 'false';
  const background = resolveColor('var(--jp-layout-color0)', light ? '#ffffff' : '#111111');
  const foreground = resolveColor('var(--jp-content-font-color0)', light ? '#000000' : '#ffffff');
  return {
    ...(light ? LIGHT_ANSI : {}),
    background,
    foreground,
    cursor: foreground,
    cursorAccent: background,
    selectionBackground: light ? 'rgba(0, 100, 200, 0.25)' : 'rgba(120, 170, 255, 0.35)'
  };
}

/** Put text on the clipboard: the async API, or the old execCommand route where it is missing. */
export async function copyText(text: string): Promise<boolean> {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    // fall through: a page without clipboard permission may still allow execCommand
  }
  const area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.style.position = 'fixed';
  area.style.opacity = '0';
  document.body.appendChild(area);
  area.select();
  let ok = false;
  try {
    ok = document.execCommand('copy');
  } catch {
    ok = false;
  }
  area.remove();
  return ok;
}

export class TerminalModel extends DOMWidgetModel {
  defaults(): ReturnType<DOMWidgetModel['defaults']> {
    return {
      ...super.defaults(),
      _model_name: 'TerminalModel',
      _model_module: MODULE_NAME,
      _model_module_version: MODULE_VERSION,
      _view_name: 'TerminalView',
      _view_module: MODULE_NAME,
      _view_module_version: MODULE_VERSION,
      terminal_id: '',
      command: '',
      cwd: '',
      cols: 80,
      rows: 24,
      exit_status: null,
      can_cancel: false,
      accepts_input: false,
      phase: '',
      phase_label: '',
      note: '',
      started_at: 0
    };
  }

  static serializers: ISerializers = {
    ...DOMWidgetModel.serializers
  };
}

export class TerminalView extends DOMWidgetView {
  private _term: Terminal | null = null;
  private _screen: HTMLDivElement | null = null;
  private _commandEl: HTMLElement | null = null;
  private _cwdEl: HTMLElement | null = null;
  private _badgeEl: HTMLElement | null = null;
  private _noteEl: HTMLElement | null = null;
  private _clock: number | null = null;
  private _stopButton: HTMLButtonElement | null = null;
  private _copyButton: HTMLButtonElement | null = null;
  private _copiedTimer: number | null = null;
  private _themeObserver: MutationObserver | null = null;
  private _themeTimer: number | null = null;
  private _stream = new ChunkSequencer();
  private _bytes = 0;
  private _queue = new WriteQueue();
  private _inFlight = 0; // bytes handed to xterm whose write callback has not come yet
  private _budget = FRAME_BUDGET; // bytes xterm may still be handed before the next budget
  private _budgetAt = 0; // performance.now() when the budget was last given
  private _frame: number | null = null; // the animation frame that gives the budget again
  private _frameTimer: number | null = null; // ... or the timer, where no frame comes
  private _trimAt = FAR_BEHIND; // queued bytes at which the next trim is tried
  private _hookTimer: number | null = null;
  private _hookRun = 0; // bumped by each write: a hook reading the buffer then starts over
  private _lastHookAt = 0;
  private _hookCost = 0; // ms the last hook spent reading the buffer
  private _stopping = false;
  private _resizeObserver: ResizeObserver | null = null;
  /**
   * True while the view is not displayed (a closed side panel or panel section, a detached
   * cell): xterm is then handed nothing while bytes keep coming, and the queue keeps only what
   * stays in the scrollback (WriteQueue.trimTo). Once they pause for HIDDEN_CATCH_UP_MS (or
   * the view is shown) xterm gets that tail. A hidden view used to parse every byte, and its
   * renderer, which cannot measure glyphs in a box without a size, forced a layout per cell
   * whenever the buffer scrolled: a flood cost the page's hidden panel view more than the
   * cell's.
   */
  private _hidden = false;
  private _catchingUp = false; // a hidden view writing its queue, its bytes having paused
  private _catchUpTimer: number | null = null;
  /**
   * Acks every message received (once per task): the kernel then keeps at most a window of
   * bytes on the way here, in messages of a capped size, so a flood never lands as megabytes
   * in one task. Received is enough (the queue and its trimming follow xterm's pace); a view
   * that stops acking only makes the kernel wait a moment, then send as before.
   */
  private _acks = new Acknowledger(seq => {
    if (this._term) {
      const ack: ITerminalAck = { type: 'ack', seq };
      this.send(ack);
    }
  });

  async render(): Promise<void> {
    this.el.classList.add('acp-terminal');
    this.el.appendChild(this._buildHeader());
    // The agent's words about a command that did not run, or a hint while one runs quietly:
    // text, never in the screen.
    this._noteEl = document.createElement('div');
    this._noteEl.className = 'acp-terminal-note';
    this.el.appendChild(this._noteEl);
    this._screen = document.createElement('div');
    this._screen.className = 'acp-terminal-screen';
    this.el.appendChild(this._screen);
    this._updateHeader();

    this.listenTo(this.model, 'msg:custom', this._onMessage);
    this.listenTo(
      this.model,
      'change:command change:cwd change:exit_status change:can_cancel change:phase ' +
        'change:phase_label change:note change:started_at',
      this._updateHeader
    );
    this.listenTo(this.model, 'change:exit_status', this._fitHeight);
    this.listenTo(this.model, 'change:cols change:rows', this._resize);
    this.listenTo(this.model, 'change:accepts_input change:exit_status', this._updateInput);

    const { Terminal } = await import('@xterm/xterm');
    const term = new Terminal({
      cols: this._cols(),
      rows: this._rows(),
      disableStdin: true,
      // A bare "\n" starts a new line, as on a terminal with ONLCR: agent-owned terminals may
      // be fed from pipes, not a PTY. "\r\n" and "\r" redraws are unchanged.
      convertEol: true,
      cursorBlink: false,
      scrollback: SCROLLBACK,
      fontSize: 13,
      theme: jupyterTheme()
    });
    this._term = term;
    // Typed keys go to the kernel only while the model accepts input (and nothing is logged).
    term.onData(data => {
      if (this._acceptsInput()) {
        const input: ITerminalInput = { type: 'input', data };
        this.send(input);
      }
    });
    term.onResize(({ cols, rows }) => {
      if (this._acceptsInput()) {
        const resize: ITerminalResize = { type: 'resize', cols, rows };
        this.send(resize);
      }
    });
    // Ctrl/Cmd+C with a selection copies it (xterm would otherwise take the key).
    term.attachCustomKeyEventHandler(event => {
      if (
        event.type === 'keydown' &&
        (event.ctrlKey || event.metaKey) &&
        !event.altKey &&
        event.key.toLowerCase() === 'c' &&
        term.hasSelection()
      ) {
        void copyText(term.getSelection());
        event.stopPropagation();
        return false;
      }
      return true;
    });
    // For browser tests: the Terminal behind this view, reachable from its node.
    Object.defineProperty(this.el, '__acpTerm', {
      value: term,
      configurable: true,
      enumerable: false
    });
    this._applyTheme();
    this._themeObserver = new MutationObserver(() => this._onThemeChange());
    this._themeObserver.observe(document.body, {
      attributes: true,
      attributeFilter: ['data-jp-theme-light', 'data-jp-theme-name']
    });
    void this.displayed.then(() => {
      if (this._term && this._resizeObserver === null) {
        // Whether the view is shown, and its size: xterm is opened the first time it is shown
        // (a view first laid out while hidden, in a closed panel section or a scrolled-away
        // cell, has no size yet) and fitted again whenever its size changes.
        this._resizeObserver = new ResizeObserver(entries => {
          const box = entries[entries.length - 1].contentRect;
          const hidden = box.width === 0 && box.height === 0;
          if (!hidden) {
            this._open();
          }
          this._setHidden(hidden);
          this._fitWidth();
          this._fitHeight();
        });
        this._resizeObserver.observe(this.el);
      }
    });
    // xterm parses writes made before open(); the backlog request need not wait.
    this._requestBacklog();
  }

  /**
   * Open xterm in the screen, once the view is shown. Until then xterm has no renderer: it
   * parses what it is given into its buffer (what the copy button and the test hooks read),
   * and draws nothing. (A renderer in a box without a size cannot measure its glyphs and
   * forces a layout for each cell it draws.)
   */
  private _open(): void {
    const term = this._term;
    const screen = this._screen;
    if (!term || !screen || term.element || !screen.isConnected) {
      return;
    }
    term.open(screen);
    this._updateInput();
    this._fitHeight();
  }

  remove(): unknown {
    for (const timer of [
      this._hookTimer,
      this._copiedTimer,
      this._themeTimer,
      this._catchUpTimer
    ]) {
      if (timer !== null) {
        window.clearTimeout(timer);
      }
    }
    this._setClock(false);
    this._themeObserver?.disconnect();
    this._themeObserver = null;
    this._resizeObserver?.disconnect();
    this._resizeObserver = null;
    this._queue.clear();
    this._hookRun += 1;
    this._cancelFrame();
    this._term?.dispose();
    this._term = null;
    return super.remove();
  }

  /** Follow JupyterLab's theme: xterm's colours and the padding around the screen. */
  private _applyTheme(): void {
    if (!this._term) {
      return;
    }
    const theme = jupyterTheme();
    this._term.options.theme = theme;
    if (this._screen) {
      this._screen.style.background = theme.background ?? '';
    }
  }

  /** JupyterLab flips body attributes once the new theme's CSS is in; check again shortly. */
  private _onThemeChange(): void {
    this._applyTheme();
    if (this._themeTimer !== null) {
      window.clearTimeout(this._themeTimer);
    }
    this._themeTimer = window.setTimeout(() => {
      this._themeTimer = null;
      this._applyTheme();
    }, 300);
  }

  private async _copyAll(): Promise<void> {
    if (!this._term || !this._copyButton) {
      return;
    }
    const ok = await copyText(bufferText(this._term));
    const button = this._copyButton;
    button.textContent = ok ? 'Copied' : 'Copy failed';
    if (this._copiedTimer !== null) {
      window.clearTimeout(this._copiedTimer);
    }
    this._copiedTimer = window.setTimeout(() => {
      this._copiedTimer = null;
      button.textContent = 'Copy';
    }, COPIED_MS);
  }

  private _cols(): number {
    return Math.max(1, Number(this.model.get('cols')) || 80);
  }

  private _rows(): number {
    return Math.max(1, Number(this.model.get('rows')) || 24);
  }

  private _resize(): void {
    this._term?.resize(this._cols(), this._rows());
    this._fitHeight();
  }

  private _acceptsInput(): boolean {
    const status = this.model.get('exit_status');
    return Boolean(this.model.get('accepts_input')) && (status === null || status === undefined);
  }

  /** Switch between read-only and input mode (the cursor blinks, keys go to the kernel). */
  private _updateInput(): void {
    const accepts = this._acceptsInput();
    this.el.classList.toggle('acp-terminal-input', accepts);
    this.el.dataset.input = accepts ? 'on' : 'off';
    if (this._term) {
      this._term.options.disableStdin = !accepts;
      this._term.options.cursorBlink = accepts;
    }
    if (accepts) {
      this._fitWidth();
    } else {
      this._term?.blur(); // an ended sign-in shows no cursor waiting for keys
    }
  }

  /**
   * In input mode, as many columns as fit the view's width (a login command then wraps its
   * lines where the user sees them end); the new size reaches the kernel through onResize.
   */
  private _fitWidth(): void {
    const term = this._term;
    const screen = this._screen;
    const inner = screen?.querySelector('.xterm-screen') as HTMLElement | null;
    if (!this._acceptsInput() || !term || !screen || !inner || !inner.offsetWidth) {
      return;
    }
    const style = getComputedStyle(screen);
    const padding = parseFloat(style.paddingLeft) + parseFloat(style.paddingRight) || 0;
    const cell = inner.offsetWidth / term.cols;
    const cols = Math.floor((screen.clientWidth - padding) / cell);
    const fitted = Math.max(MIN_INPUT_COLS, Math.min(MAX_INPUT_COLS, cols));
    if (Number.isFinite(fitted) && fitted !== term.cols) {
      term.resize(fitted, term.rows);
    }
  }

  /**
   * Show only the rows in use: a two-line command should not sit above twenty empty rows.
   * Only the visible height changes (xterm keeps its full size, so cursor movement and
   * full-screen programs behave as on a real terminal of that size); once the output has
   * scrolled, or a program switched to the alternate screen, every row is shown.
   */
  private _fitHeight(): void {
    const term = this._term;
    const screen = this._screen;
    const inner = screen?.querySelector('.xterm-screen') as HTMLElement | null;
    if (!term || !screen || !inner || !inner.offsetHeight) {
      return;
    }
    const rows = term.rows;
    const buffer = term.buffer.active;
    let used = rows;
    if (buffer.type === 'normal' && buffer.baseY === 0) {
      const exited = this.model.get('exit_status') !== null;
      // While the command runs, its cursor line counts (more output will land there).
      let last = exited ? -1 : buffer.cursorY;
      for (let i = rows - 1; i > last; i--) {
        const line = buffer.getLine(i);
        if (line && line.translateToString(true) !== '') {
          last = i;
          break;
        }
      }
      used = Math.min(rows, Math.max(MIN_VISIBLE_ROWS, last + 1));
    }
    const style = getComputedStyle(screen);
    const padding = parseFloat(style.paddingTop) + parseFloat(style.paddingBottom) || 0;
    // A narrow view scrolls sideways: keep room for that scrollbar below the last row.
    const scrollbar = Math.max(0, screen.offsetHeight - screen.clientHeight);
    const cell = inner.offsetHeight / rows;
    // A terminal taller than MAX_VISIBLE_ROWS shows that many rows and scrolls the rest.
    const shown = Math.min(used, MAX_VISIBLE_ROWS);
    // Follow the newest rows unless the reader scrolled up (a screen that did not scroll yet
    // follows).
    const following =
      screen.style.overflowY !== 'auto' ||
      screen.scrollTop + screen.clientHeight >= screen.scrollHeight - cell;
    screen.style.maxHeight =
      shown >= rows ? '' : `${Math.ceil(cell * shown + padding + scrollbar)}px`;
    screen.style.overflowY = used > shown ? 'auto' : '';
    if (used > shown && following) {
      screen.scrollTop = screen.scrollHeight; // keep the newest rows in view
    }
    this.el.dataset.visibleRows = String(shown);
  }

  private _buildHeader(): HTMLElement {
    const header = document.createElement('div');
    header.className = 'acp-terminal-header';
    this._commandEl = document.createElement('code');
    this._commandEl.className = 'acp-terminal-command';
    this._cwdEl = document.createElement('span');
    this._cwdEl.className = 'acp-terminal-cwd';
    this._badgeEl = document.createElement('span');
    this._badgeEl.className = 'acp-exit-badge';
    this._stopButton = document.createElement('button');
    this._stopButton.className = 'acp-terminal-stop jp-mod-styled jp-mod-warn';
    this._stopButton.textContent = 'Stop';
    this._stopButton.title = 'Cancel this command';
    this._stopButton.addEventListener('click', () => {
      this._stopping = true;
      const cancel: ITerminalCancel = { type: 'cancel' };
      this.send(cancel);
      this._updateHeader();
    });
    this._copyButton = document.createElement('button');
    this._copyButton.className = 'acp-terminal-copy';
    this._copyButton.textContent = 'Copy';
    this._copyButton.title = "Copy this terminal's whole text";
    this._copyButton.addEventListener('click', () => void this._copyAll());
    header.append(this._commandEl, this._cwdEl, this._badgeEl, this._copyButton, this._stopButton);
    return header;
  }

  private _updateHeader(): void {
    const command: string = this.model.get('command') || '';
    const cwd: string = this.model.get('cwd') || '';
    const status: IExitStatus | null = this.model.get('exit_status');
    if (this._commandEl) {
      this._commandEl.textContent = `$ ${command}`;
      this._commandEl.title = command;
    }
    if (this._cwdEl) {
      this._cwdEl.textContent = cwd ? `in ${cwd}` : '';
    }
    const phase: string = this.model.get('phase') || '';
    const startedAt = Number(this.model.get('started_at')) || 0;
    const running = exitState(status) === 'running' && (phase === '' || phase === 'running');
    const elapsed = running && startedAt > 0 ? Math.max(0, Date.now() / 1000 - startedAt) : null;
    const badge = terminalBadge(phase, this.model.get('phase_label') || '', status, elapsed);
    if (this._badgeEl) {
      this._badgeEl.textContent = badge.text;
      this._badgeEl.dataset.state = badge.state;
    }
    this.el.dataset.run = phase || exitState(status);
    const note = terminalNote(this.model.get('note') || '', status, this._bytes, elapsed);
    if (this._noteEl) {
      this._noteEl.textContent = note;
      this._noteEl.style.display = note ? '' : 'none';
    }
    // the time it runs, once a second, while it runs
    this._setClock(elapsed !== null);
    if (this._stopButton) {
      const running = status === null || status === undefined;
      const show = Boolean(this.model.get('can_cancel')) && running;
      this._stopButton.style.display = show ? '' : 'none';
      this._stopButton.disabled = this._stopping;
      this._stopButton.textContent = this._stopping ? 'Stopping…' : 'Stop';
    }
  }

  private _setClock(on: boolean): void {
    if (on && this._clock === null) {
      this._clock = window.setInterval(() => this._updateHeader(), 1000);
    } else if (!on && this._clock !== null) {
      window.clearInterval(this._clock);
      this._clock = null;
    }
  }

  private _requestBacklog(): void {
    const ready: ITerminalReady = {
      type: 'ready',
      token: newToken(),
      lines: SCROLLBACK + (this._term?.rows ?? this._rows())
    };
    if (textTerminalsAsked()) {
      ready.text = true;
    }
    if (pageUnstyled()) {
      ready.unstyled = true;
    }
    this._stream.request(ready.token);
    this.el.dataset.phase = 'waiting';
    this.send(ready);
  }

  private _onMessage(
    content: unknown,
    buffers: (ArrayBuffer | ArrayBufferView)[] | undefined
  ): void {
    const message = readTerminalMessage(content);
    if (!this._term || message === null) {
      return;
    }
    this._acks.received(message.seq);
    const data =
      message.b64 !== undefined
        ? fromBase64(message.b64)
        : buffers && buffers.length
          ? toBytes(buffers[0])
          : new Uint8Array();
    const step = this._stream.receive(message);
    switch (step.action) {
      case 'drop':
        return;
      case 'resync':
        this._requestBacklog();
        return;
      case 'replace':
        this.el.dataset.phase = 'live';
        // the command's output so far: what the backlog left out (too old to be kept) too
        this._bytes = step.omitted;
        // what is still queued would be cleared by the reset: never written
        this._queue.clear();
        this._trimAt = FAR_BEHIND;
        this._write(replacePrefix(step.omitted));
        this._write(data);
        return;
      case 'write':
        this._write(data);
        return;
    }
  }

  /** Queue bytes (or a control string) for xterm, and hand it what it can take now. */
  private _write(data: Uint8Array | string): void {
    if (!this._term) {
      return;
    }
    if (typeof data !== 'string') {
      this._bytes += data.byteLength;
    }
    this._queue.push(data);
    this._hookRun += 1;
    if (this._hidden) {
      this._awaitPause(); // more came: hold it until the bytes pause
    }
    if (this._queue.pending >= this._trimAt) {
      this._queue.trimTo(SCROLLBACK + this._term.rows);
      // not enough line ends queued to trim: try again once as much more has come
      this._trimAt = Math.max(FAR_BEHIND, this._queue.pending + FAR_BEHIND);
    }
    this._pump();
  }

  /** The view was hidden or shown: hold xterm's writes, or give it the tail that was kept. */
  private _setHidden(hidden: boolean): void {
    if (hidden === this._hidden) {
      return;
    }
    this._hidden = hidden;
    if (hidden) {
      this._awaitPause();
    } else {
      this._resume();
    }
  }

  /** Hidden: write the queue once no byte came for HIDDEN_CATCH_UP_MS. */
  private _awaitPause(): void {
    this._catchingUp = false;
    if (this._catchUpTimer !== null) {
      window.clearTimeout(this._catchUpTimer);
    }
    this._catchUpTimer = window.setTimeout(() => {
      this._catchUpTimer = null;
      if (this._hidden) {
        this._catchingUp = true;
        this._resume();
      }
    }, HIDDEN_CATCH_UP_MS);
  }

  /** Write the queue again, from the start of what can stay in the scrollback. */
  private _resume(): void {
    if (!this._term) {
      return;
    }
    this._queue.trimTo(SCROLLBACK + this._term.rows);
    this._trimAt = Math.max(FAR_BEHIND, this._queue.pending + FAR_BEHIND);
    this._pump();
  }

  /**
   * Hand xterm pieces of the queue while less than WRITE_AHEAD of them is unparsed and this
   * frame's budget lasts. Each piece's write callback hands the next, so xterm never holds
   * more than that: it parses a piece per step, yields between its ~12 ms slices, and gets
   * at most FRAME_BUDGET bytes a frame; the page stays responsive whatever comes in.
   */
  private _pump(): void {
    const term = this._term;
    if (!term || (this._hidden && !this._catchingUp)) {
      return;
    }
    while (this._inFlight < WRITE_AHEAD && this._budget > 0) {
      const piece = this._queue.take(Math.min(WRITE_PIECE, this._budget));
      if (piece === null) {
        break;
      }
      const size = typeof piece === 'string' ? piece.length : piece.byteLength;
      this._inFlight += size;
      this._budget -= size;
      term.write(piece, () => {
        this._inFlight -= size;
        this._pump();
      });
    }
    if (this._queue.pending < this._trimAt - FAR_BEHIND) {
      this._trimAt = FAR_BEHIND;
    }
    if (!this._queue.empty && this._budget <= 0) {
      this._awaitFrame();
    }
    if (this._inFlight === 0 && this._queue.empty) {
      this._scheduleHooks();
    }
  }

  /**
   * Give the budget again at the first animation frame FRAME_INTERVAL_MS after the last one
   * (or after FRAME_FALLBACK_MS, where no frame comes).
   */
  private _awaitFrame(): void {
    if (this._frame !== null || this._frameTimer !== null) {
      return;
    }
    const next = (now: number): void => {
      this._cancelFrame();
      if (now - this._budgetAt < FRAME_INTERVAL_MS) {
        this._awaitFrame(); // too soon after the last: the frame after this one
        return;
      }
      this._budgetAt = now;
      this._budget = FRAME_BUDGET;
      this._pump();
    };
    this._frame = window.requestAnimationFrame(next);
    this._frameTimer = window.setTimeout(() => next(performance.now()), FRAME_FALLBACK_MS);
  }

  private _cancelFrame(): void {
    if (this._frame !== null) {
      window.cancelAnimationFrame(this._frame);
      this._frame = null;
    }
    if (this._frameTimer !== null) {
      window.clearTimeout(this._frameTimer);
      this._frameTimer = null;
    }
  }

  /**
   * Expose what xterm shows as data-* attributes, for browser tests: once the queue is
   * written, after a short quiet time, and while output keeps coming at most every
   * HOOK_INTERVAL_MS.
   */
  private _scheduleHooks(): void {
    if (this._hookTimer !== null) {
      window.clearTimeout(this._hookTimer);
    }
    const interval = Math.max(HOOK_INTERVAL_MS, this._hookCost / HOOK_SHARE);
    const due = Math.max(HOOK_DELAY_MS, this._lastHookAt + interval - Date.now());
    this._hookTimer = window.setTimeout(() => {
      this._hookTimer = null;
      this._lastHookAt = Date.now();
      this._fitHeight();
      this._updateHooks();
    }, due);
  }

  /**
   * Read xterm's buffer into data-text a few thousand lines per task (a full scrollback is
   * ten thousand), then set the attributes together. A write in between starts it over later.
   */
  private _updateHooks(): void {
    const term = this._term;
    if (!term) {
      return;
    }
    const run = this._hookRun;
    const reader = new BufferTextReader(term);
    let cost = 0;
    const step = (): void => {
      if (this._term !== term || run !== this._hookRun) {
        return; // disposed, or more was written: the next hook reads it
      }
      const started = performance.now();
      let done = false;
      while (!done && performance.now() - started < HOOK_SLICE_MS) {
        done = reader.read(HOOK_LINES_PER_CHECK);
      }
      cost += performance.now() - started;
      this._hookCost = cost;
      if (!done) {
        window.setTimeout(step, 0);
        return;
      }
      this.el.dataset.seq = String(this._stream.lastSeq);
      this.el.dataset.bytes = String(this._bytes);
      this.el.dataset.skipped = String(this._queue.skipped);
      const set = performance.now();
      this.el.dataset.text = reader.text();
      this._hookCost = cost + performance.now() - set;
    };
    step();
  }
}
