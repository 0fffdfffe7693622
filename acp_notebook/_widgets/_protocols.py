"""The custom messages between the kernel's widgets and the labextension, as types.

Every message is a JSON object with a ``type`` naming it; terminal bytes travel as the
message's one binary buffer, never in the JSON, except on a path that cannot carry binary
frames (a gateway's relay: ``TerminalWidget.text_safe``), where they are the message's ``b64``
field (base64) and the message has no buffer. The front end's side is
``labextension/src/protocol.ts``: each ``TypedDict`` here is an interface ``I<Name>`` there
with the same fields (tests/test_widgets_protocols.py compares the two, reading the TypeScript
with the TypeScript compiler). ``read_*`` turn what a view sent (any JSON) into one of these
types, or None when it is not one of them.

Terminal (``TerminalWidget``, ``_coalesce.ByteCoalescer``)
    kernel -> views: ``chunk`` (the next bytes; ``seq`` goes up by one per message), ``reset``
    (the bytes replace the whole screen), ``backlog`` (every byte kept up to chunk ``seq``,
    answering the view that sent ``token``; ``omitted`` bytes before them were dropped).
    views -> kernel: ``ready`` (a view rendered, or saw a gap in ``seq``, and wants the
    backlog), ``ack`` (it has received every message up to ``seq``: the kernel then paces the
    flow, ``_coalesce``), ``cancel`` (the Stop button); and, only while the model
    ``accepts_input`` (a sign-in terminal; an agent's terminals never do), ``input`` (what the
    user typed, as xterm.js hands it over: never logged) and ``resize`` (the view's size in
    cells).
Side panel (``AgentPanel``)
    kernel -> front end: ``scroll_to``, ``copy``, ``download``; front end -> kernel:
    ``rendered`` (a front end with the labextension holds the panel).
"""

from __future__ import annotations

from typing import Literal, TypedDict, TypeGuard

#: ``text``, ``binary`` or ``auto`` (the default): how terminal bytes travel to the views
#: (``TerminalWidget.text_safe``). ``%config AcpMagics.terminal_transport`` sets it for the
#: kernel; it lives here, beside the messages, so that ``%load_ext`` need not import widgets.
TRANSPORT_ENV = "ACP_NOTEBOOK_TERMINAL_TRANSPORT"

__all__ = [
    "ExitStatus",
    "PanelCopy",
    "PanelDownload",
    "PanelFromFrontEnd",
    "PanelRendered",
    "PanelScrollTo",
    "PanelToFrontEnd",
    "TerminalAck",
    "TerminalBacklog",
    "TerminalCancel",
    "TerminalChunk",
    "TerminalFromView",
    "TerminalInput",
    "TerminalReady",
    "TerminalReset",
    "TerminalResize",
    "TerminalToView",
    "read_panel_message",
    "read_terminal_message",
]


#: the largest terminal size (columns or rows) a view may ask for
MAX_CELLS = 1000
#: the most lines a view may say it keeps (its scrollback and screen)
MAX_LINES = 1_000_000


# -- terminal: kernel -> views ------------------------------------------------------------------


class _Base64(TypedDict, total=False):
    """On a text-safe path: the message's bytes as base64, and no buffer."""

    b64: str


class TerminalChunk(_Base64):
    """The next bytes of the transcript (the buffer, or ``b64``)."""

    type: Literal["chunk"]
    seq: int


class TerminalReset(_Base64):
    """The bytes (the buffer) replace the whole screen; ``omitted`` earlier bytes are gone."""

    type: Literal["reset"]
    seq: int
    omitted: int


class TerminalBacklog(_Base64):
    """Every kept byte up to chunk ``seq`` (the buffer), for the view that sent ``token``."""

    type: Literal["backlog"]
    seq: int
    token: str
    omitted: int


TerminalToView = TerminalChunk | TerminalReset | TerminalBacklog


# -- terminal: views -> kernel ------------------------------------------------------------------


class _AsksText(TypedDict, total=False):
    text: bool
    unstyled: bool
    lines: int


class TerminalReady(_AsksText):
    """A view wants the backlog, answered with this ``token``; with ``text``, it asks that the
    bytes come as text from now on (its front end knows a relay on the way breaks binary); with
    ``unstyled``, the page around it lacks the extension's output-area styles (VS Code with the
    nbextension), so nothing there hides a turn's transcript while its live view shows; with
    ``lines``, the most lines it keeps (scrollback and screen): the backlog need hold no more."""

    type: Literal["ready"]
    token: str


class TerminalAck(TypedDict):
    """The view has received every message up to ``seq``: the kernel keeps at most a window
    of bytes unacknowledged (``ByteCoalescer.ack``)."""

    type: Literal["ack"]
    seq: int


class TerminalCancel(TypedDict):
    """The view's Stop button was pressed."""

    type: Literal["cancel"]


class TerminalInput(TypedDict):
    """What the user typed (``data``, a string from xterm.js), for the PTY. Never logged."""

    type: Literal["input"]
    data: str


class TerminalResize(TypedDict):
    """The view's terminal is ``cols`` x ``rows`` cells now (the PTY's window size)."""

    type: Literal["resize"]
    cols: int
    rows: int


TerminalFromView = TerminalReady | TerminalAck | TerminalCancel | TerminalInput | TerminalResize


class ExitStatus(TypedDict, total=False):
    """The terminal's synced ``exit_status`` trait (ACP's ``TerminalExitStatus`` on the wire);
    None while the command runs."""

    exitCode: int | None
    signal: str | None


# -- side panel ---------------------------------------------------------------------------------


class PanelScrollTo(TypedDict):
    """Show the notebook cell with id ``cell_id`` (else the one showing widget ``model_id``)."""

    type: Literal["scroll_to"]
    cell_id: str
    model_id: str


class PanelCopy(TypedDict):
    """Put ``text`` on the clipboard."""

    type: Literal["copy"]
    text: str


class PanelDownload(TypedDict):
    """Save ``text`` as the file ``filename``."""

    type: Literal["download"]
    filename: str
    text: str


PanelToFrontEnd = PanelScrollTo | PanelCopy | PanelDownload


class _Sidebar(TypedDict, total=False):
    sidebar: bool
    unstyled: bool


class PanelRendered(_Sidebar):
    """A front end with the labextension holds the panel. ``sidebar`` False: a front end with
    the nbextension (the classic notebook, VS Code) renders the extension's views but has no
    sidebar to show the panel in; ``unstyled``: its page lacks the extension's output-area
    styles (VS Code), as a terminal's ``ready`` may say."""

    type: Literal["rendered"]


PanelFromFrontEnd = PanelRendered


# -- reading what a view sent -------------------------------------------------------------------


def _cells(value: object) -> TypeGuard[int]:
    """A size a view may ask for: an int (not a bool or a float) from 1 to ``MAX_CELLS``."""
    return type(value) is int and 0 < value <= MAX_CELLS


def read_terminal_message(content: object) -> TerminalFromView | None:
    """``content`` as a message a terminal view sends, or None (a ``ready`` without a string
    token asks for the backlog all the same, with token "")."""
    if not isinstance(content, dict):
        return None
    kind = content.get("type")
    if kind == "ready":
        token = content.get("token")
        ready = TerminalReady(type="ready", token=token if isinstance(token, str) else "")
        if content.get("text") is True:
            ready["text"] = True
        if content.get("unstyled") is True:
            ready["unstyled"] = True
        lines = content.get("lines")
        if type(lines) is int and 0 < lines <= MAX_LINES:
            ready["lines"] = lines
        return ready
    if kind == "ack":
        seq = content.get("seq")
        if type(seq) is int and seq >= 0:
            return TerminalAck(type="ack", seq=seq)
        return None
    if kind == "cancel":
        return TerminalCancel(type="cancel")
    if kind == "input":
        data = content.get("data")
        return TerminalInput(type="input", data=data) if isinstance(data, str) else None
    if kind == "resize":
        cols, rows = content.get("cols"), content.get("rows")
        if _cells(cols) and _cells(rows):
            return TerminalResize(type="resize", cols=cols, rows=rows)
        return None
    return None


def read_panel_message(content: object) -> PanelFromFrontEnd | None:
    """``content`` as a message the side panel's front end sends, or None."""
    if isinstance(content, dict) and content.get("type") == "rendered":
        rendered = PanelRendered(type="rendered")
        if content.get("sidebar") is False:
            rendered["sidebar"] = False
        if content.get("unstyled") is True:
            rendered["unstyled"] = True
        return rendered
    return None
