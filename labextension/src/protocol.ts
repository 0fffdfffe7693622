/**
 * The custom messages between the kernel's widgets and these views, as types. The kernel's
 * side is acp_notebook/_widgets/_protocols.py: each interface `IName` here is the TypedDict
 * `Name` there, with the same fields (tests/test_widgets_protocols.py compares the two with the
 * TypeScript compiler's parser). Terminal bytes travel as the message's one buffer.
 */

// -- terminal: kernel -> views ----------------------------------------------------------------

/** The next bytes of the transcript (the buffer); `seq` goes up by one per message. */
export interface ITerminalChunk {
  type: 'chunk';
  seq: number;
  /** the bytes as base64, instead of the buffer (the model's `text_safe`: behind a gateway) */
  b64?: string;
}

/** The bytes (the buffer) replace the whole screen; `omitted` earlier bytes are gone. */
export interface ITerminalReset {
  type: 'reset';
  seq: number;
  omitted: number;
  b64?: string;
}

/** Every kept byte up to chunk `seq` (the buffer), for the view that sent `token`. */
export interface ITerminalBacklog {
  type: 'backlog';
  seq: number;
  token: string;
  omitted: number;
  b64?: string;
}

export type TerminalToView = ITerminalChunk | ITerminalReset | ITerminalBacklog;

// -- terminal: views -> kernel ----------------------------------------------------------------

/**
 * This view wants the backlog, answered with `token`; with `text`, the bytes come as base64
 * text from now on (a relay on the way breaks binary frames).
 */
export interface ITerminalReady {
  type: 'ready';
  token: string;
  text?: boolean;
  /** The page around the view lacks this extension's output-area styles (VS Code with the
   * nbextension): nothing hides the turn's transcript while its live view shows. */
  unstyled?: boolean;
  /** The most lines the view keeps (scrollback and screen): the backlog need hold no more. */
  lines?: number;
}

/**
 * This view has received every message up to `seq`: the kernel then keeps at most a window of
 * bytes unacknowledged, in messages of a capped size (its ByteCoalescer.ack).
 */
export interface ITerminalAck {
  type: 'ack';
  seq: number;
}

/** The Stop button was pressed. */
export interface ITerminalCancel {
  type: 'cancel';
}

/**
 * What the user typed (`data`, as xterm.js hands it over), for the kernel's PTY; sent only
 * while the model `accepts_input` (a sign-in terminal). Never logged: it may be a password.
 */
export interface ITerminalInput {
  type: 'input';
  data: string;
}

/** This view's terminal is `cols` x `rows` cells now (the PTY's window size). */
export interface ITerminalResize {
  type: 'resize';
  cols: number;
  rows: number;
}

export type TerminalFromView =
  ITerminalReady | ITerminalAck | ITerminalCancel | ITerminalInput | ITerminalResize;

/** The terminal's synced `exit_status` (ACP's TerminalExitStatus); null while it runs. */
export interface IExitStatus {
  exitCode?: number | null;
  signal?: string | null;
}

// -- side panel -------------------------------------------------------------------------------

/** Show the notebook cell with id `cell_id` (else the one showing widget `model_id`). */
export interface IPanelScrollTo {
  type: 'scroll_to';
  cell_id: string;
  model_id: string;
}

/** Put `text` on the clipboard. */
export interface IPanelCopy {
  type: 'copy';
  text: string;
}

/** Save `text` as the file `filename`. */
export interface IPanelDownload {
  type: 'download';
  filename: string;
  text: string;
}

export type PanelToFrontEnd = IPanelScrollTo | IPanelCopy | IPanelDownload;

/** A front end with this extension holds the panel; `sidebar: false`: it renders this
 * extension's views but has no side panel to show it in (the nbextension); `unstyled`: its page
 * lacks the extension's output-area styles (VS Code), as a terminal's `ready` says. */
export interface IPanelRendered {
  type: 'rendered';
  sidebar?: boolean;
  unstyled?: boolean;
}

export type PanelFromFrontEnd = IPanelRendered;

// -- reading what the kernel sent -------------------------------------------------------------

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

function count(value: unknown): number {
  const n = Number(value);
  return Number.isFinite(n) ? n : 0;
}

/** `content` as a terminal message from the kernel, or null when it is none of them. */
export function readTerminalMessage(content: unknown): TerminalToView | null {
  if (!isObject(content)) {
    return null;
  }
  const seq = count(content.seq);
  const text = typeof content.b64 === 'string' ? { b64: content.b64 } : {};
  switch (content.type) {
    case 'chunk':
      return { type: 'chunk', seq, ...text };
    case 'reset':
      return { type: 'reset', seq, omitted: count(content.omitted), ...text };
    case 'backlog':
      return {
        type: 'backlog',
        seq,
        token: String(content.token ?? ''),
        omitted: count(content.omitted),
        ...text
      };
    default:
      return null;
  }
}

/** `content` as a side-panel message from the kernel, or null when it is none of them. */
export function readPanelMessage(content: unknown): PanelToFrontEnd | null {
  if (!isObject(content)) {
    return null;
  }
  const text = (value: unknown): string =>
    value === undefined || value === null ? '' : String(value);
  switch (content.type) {
    case 'scroll_to':
      return {
        type: 'scroll_to',
        cell_id: text(content.cell_id),
        model_id: text(content.model_id)
      };
    case 'copy':
      return { type: 'copy', text: text(content.text) };
    case 'download':
      return { type: 'download', filename: text(content.filename), text: text(content.text) };
    default:
      return null;
  }
}
