"""Live terminal widget: raw bytes go to xterm.js in the browser, coalesced in the kernel.

Its custom messages (``chunk``, ``reset`` and ``backlog`` to the views, each with one buffer
of bytes; ``ready``, ``ack`` and ``cancel`` from them, and ``input`` and ``resize`` while it
``accepts_input``) are typed in ``_protocols``; the view is ``labextension/src/terminal.ts``.
"""

from __future__ import annotations

import base64
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import ipywidgets  # type: ignore[import-untyped]
from traitlets import Bool, Dict, Float, Int, Unicode

from .._connection._exit import exit_label
from .._state import TerminalState
from ._coalesce import (
    DEFAULT_BACKLOG_LIMIT,
    DEFAULT_INTERVAL,
    DEFAULT_MAX_PENDING,
    DEFAULT_MIN_GAP,
    SHARED_BUDGET,
    ByteCoalescer,
    FlushBudget,
    Schedule,
    TimerHandle,
    thread_timer,
)
from ._protocols import TRANSPORT_ENV, ExitStatus, TerminalToView, read_terminal_message
from ._static import StaticRenderer, render_tail, terminal_transcript
from ._version import MODULE_NAME, MODULE_VERSION

CancelCallback = Callable[["TerminalWidget"], None]
InputCallback = Callable[["TerminalWidget", str], None]
ResizeCallback = Callable[["TerminalWidget", int, int], None]


#: The text view of a terminal (``TerminalWidget.text_view``) is redrawn at most this often.
TEXT_VIEW_INTERVAL = 0.5


def text_safe_default(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether terminal bytes go as base64 text: ``$ACP_NOTEBOOK_TERMINAL_TRANSPORT`` when it
    says ``text`` or ``binary``; else text behind a gateway, which the kernel sees from
    Kernel Gateway's ``KERNEL_GATEWAY=1`` or Enterprise Gateway's ``KERNEL_ID``
    (jupyter_server's relay of a gateway's websocket decodes every binary frame as UTF-8 and
    drops the kernel's connection at the first terminal chunk)."""
    chosen = environ.get(TRANSPORT_ENV, "").strip().lower()
    if chosen in ("text", "binary"):
        return chosen == "text"
    return environ.get("KERNEL_GATEWAY") == "1" or bool(environ.get("KERNEL_ID"))


def exit_badge(exit_status: ExitStatus | Mapping[str, Any] | None) -> str:
    """``running``, else the one exit label of ``exit_status`` (the ``exit_status`` trait, as
    on the wire): ``exit 0``, ``signal SIGTERM`` or ``exited`` (``_exit.exit_label``)."""
    if exit_status is None:
        return "running"
    return exit_label(exit_status.get("exitCode"), exit_status.get("signal"))


class TerminalWidget(ipywidgets.DOMWidget):  # type: ignore[misc]
    """A display-only terminal fed with raw bytes.

    ``feed`` may be called from any thread; bytes are batched (every ``interval`` seconds or at
    ``max_pending`` bytes, but never more often than every ``min_gap`` seconds, nor more often
    than their share of ``budget`` allows) into one binary message each, and kept (up to
    ``backlog_limit``) for views that render late.
    """

    _model_name = Unicode("TerminalModel").tag(sync=True)
    _model_module = Unicode(MODULE_NAME).tag(sync=True)
    _model_module_version = Unicode(MODULE_VERSION).tag(sync=True)
    _view_name = Unicode("TerminalView").tag(sync=True)
    _view_module = Unicode(MODULE_NAME).tag(sync=True)
    _view_module_version = Unicode(MODULE_VERSION).tag(sync=True)

    terminal_id = Unicode("").tag(sync=True)
    command = Unicode("").tag(sync=True)
    cwd = Unicode("").tag(sync=True)
    cols = Int(80).tag(sync=True)
    rows = Int(24).tag(sync=True)
    exit_status = Dict(default_value=None, allow_none=True).tag(sync=True)
    can_cancel = Bool(False).tag(sync=True)
    #: the views send what the user types (a sign-in terminal's PTY); an agent's terminals
    #: stay read-only
    accepts_input = Bool(False).tag(sync=True)
    #: what the header says beyond the exit status (``_state.TerminalPhase``): ``""`` (the exit
    #: status alone), ``waiting``, ``running``, ``not-run``, ``stopped`` or ``exited``; its
    #: badge words; the agent's words about a command that did not run (a line of text, never in
    #: the screen); when it was first seen running (``time.time()``, 0 unknown): the view shows
    #: the time since while no output arrived
    phase = Unicode("").tag(sync=True)
    phase_label = Unicode("").tag(sync=True)
    note = Unicode("").tag(sync=True)
    started_at = Float(0.0).tag(sync=True)
    #: the bytes go as base64 in the message (``b64``), not as a binary buffer: for a path
    #: that breaks on binary frames (:func:`text_safe_default`; a view may also ask for it)
    text_safe = Bool(False).tag(sync=True)

    def __init__(
        self,
        *,
        render_static: StaticRenderer | None = None,
        on_cancel: CancelCallback | None = None,
        interval: float = DEFAULT_INTERVAL,
        max_pending: int = DEFAULT_MAX_PENDING,
        backlog_limit: int = DEFAULT_BACKLOG_LIMIT,
        min_gap: float = DEFAULT_MIN_GAP,
        schedule: Schedule = thread_timer,
        budget: FlushBudget | None = SHARED_BUDGET,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("text_safe", text_safe_default())
        super().__init__(**kwargs)
        self._render_static: StaticRenderer = render_static or render_tail
        self._cancel_callbacks: list[CancelCallback] = []
        if on_cancel is not None:
            self._cancel_callbacks.append(on_cancel)
        self._coalescer = ByteCoalescer(
            self._send_custom,
            interval=interval,
            max_pending=max_pending,
            backlog_limit=backlog_limit,
            min_gap=min_gap,
            schedule=schedule,
            budget=budget,
        )
        self._input_callbacks: list[InputCallback] = []
        self._resize_callbacks: list[ResizeCallback] = []
        self._close_callbacks: list[CancelCallback] = []
        self._ready_callbacks: list[CancelCallback] = []
        #: the last ``ready`` said its page lacks the extension's output-area styles
        self.unstyled = False
        self._text_view: ipywidgets.HTML | None = None
        self._schedule = schedule
        self._text_lock = threading.Lock()
        self._text_at = 0.0  # when the text view was last drawn (time.monotonic())
        self._text_timer: TimerHandle | None = None  # a redraw due later
        self.on_msg(self._handle_view_msg)

    # -- bytes -------------------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        """Append raw terminal bytes (thread-safe; never decoded here)."""
        self._coalescer.feed(data)

    def replace(self, data: bytes) -> None:
        """Replace the whole transcript with an authoritative snapshot."""
        self._coalescer.replace(data)

    def flush(self) -> None:
        """Send pending bytes now (e.g. when the process exits)."""
        self._coalescer.flush()

    @property
    def data(self) -> bytes:
        """Retained bytes (everything, unless more than ``backlog_limit`` was fed)."""
        return self._coalescer.data()

    @property
    def omitted_bytes(self) -> int:
        return self._coalescer.omitted

    @property
    def seq(self) -> int:
        return self._coalescer.seq

    def close(self) -> None:
        self._coalescer.close()
        with self._text_lock:
            timer, self._text_timer = self._text_timer, None
        if timer is not None:
            timer.cancel()
        if self._text_view is not None:
            self._text_view.close()
        callbacks, self._close_callbacks = self._close_callbacks, []
        for callback in callbacks:
            callback(self)
        super().close()

    # -- cancel ------------------------------------------------------------------------------

    def on_cancel(self, callback: CancelCallback, remove: bool = False) -> None:
        """Register (or remove) a callback run when a view's stop button is pressed."""
        if remove:
            if callback in self._cancel_callbacks:
                self._cancel_callbacks.remove(callback)
        else:
            self._cancel_callbacks.append(callback)

    def on_input(self, callback: InputCallback) -> None:
        """Run ``callback(widget, data)`` with what the user typed, while ``accepts_input``."""
        self._input_callbacks.append(callback)

    def on_resize(self, callback: ResizeCallback) -> None:
        """Run ``callback(widget, cols, rows)`` when a view resizes, while ``accepts_input``."""
        self._resize_callbacks.append(callback)

    def on_ready(self, callback: CancelCallback) -> None:
        """Run ``callback(widget)`` each time a view says ``ready``: a front end with the
        labextension renders this terminal."""
        self._ready_callbacks.append(callback)

    # -- as text, for a front end without the labextension ----------------------------------

    def text_view(self) -> ipywidgets.HTML:
        """A standard HTML widget showing this terminal as text (its header and the screen's
        tail, as the saved transcript shows it), for a front end that cannot load
        ``TerminalModel`` (VS Code, Colab, nbclassic without the nbextension), where the
        terminal itself is an error box. Made once; from then on the coalesced flushes and
        header changes redraw it, at most every :data:`TEXT_VIEW_INTERVAL` seconds (the last
        change always), and no bytes go to views."""
        if self._text_view is None:
            self._text_at = time.monotonic()
            self._text_view = ipywidgets.HTML(value=self.static_bundle()["text/html"])
            self.observe(
                lambda _change: self._update_text_view(),
                names=["command", "cwd", "exit_status", "phase_label", "note"],
            )
        return self._text_view

    def _update_text_view(self, *, due: bool = False) -> None:
        """Redraw the text view now, or once the interval since the last redraw is over (a
        flood flushes 28 times a second; each redraw reads the whole backlog). ``due``: the
        timer armed for that has fired."""
        with self._text_lock:
            if due:
                self._text_timer = None
            elif self._text_timer is not None:
                return  # a redraw is already due
            view = self._text_view
            if view is None:
                return
            wait = self._text_at + TEXT_VIEW_INTERVAL - time.monotonic()
            if wait > 0 and not due:
                self._text_timer = self._schedule(wait, lambda: self._update_text_view(due=True))
                return
            self._text_at = time.monotonic()
        markup = self.static_bundle()["text/html"]
        if view.value != markup:
            view.value = markup

    def on_close(self, callback: CancelCallback) -> None:
        """Run ``callback(widget)`` once, when the widget is closed."""
        self._close_callbacks.append(callback)

    def _handle_view_msg(self, _widget: Any, content: Any, _buffers: Sequence[Any]) -> None:
        message = read_terminal_message(content)
        if message is None:
            return
        if message["type"] == "ready":
            if message.get("text"):
                self.text_safe = True
            self.unstyled = message.get("unstyled", False)
            for ready in list(self._ready_callbacks):
                ready(self)
            self._coalescer.send_backlog(message["token"], message.get("lines"))
        elif message["type"] == "ack":
            self._coalescer.ack(message["seq"])
        elif message["type"] == "input":  # never logged: it may be a password
            if self.accepts_input:
                for typed in list(self._input_callbacks):
                    typed(self, message["data"])
        elif message["type"] == "resize":
            if self.accepts_input:
                for resized in list(self._resize_callbacks):
                    resized(self, message["cols"], message["rows"])
        elif self.can_cancel and self.exit_status is None:  # "cancel"
            # Only honour a stop the agent advertised; a stale button must not send anything.
            for callback in list(self._cancel_callbacks):
                callback(self)

    def _send_custom(self, content: TerminalToView, buffers: list[bytes]) -> None:
        if self._text_view is not None:  # shown as text: no view to send bytes to
            self._update_text_view()
            return
        if self.text_safe:
            wire = dict(content)
            wire["b64"] = base64.b64encode(b"".join(buffers)).decode("ascii")
            self.send(wire, [])
        else:
            self.send(content, buffers)

    # -- static output -----------------------------------------------------------------------

    def static_bundle(self) -> dict[str, str]:
        """``text/plain`` and ``text/html`` for this terminal, deterministic, no widget view:
        the same transcript a turn saves for its terminals (``_static.terminal_transcript``)."""
        text, markup = terminal_transcript(
            command=self.command or None,
            cwd=self.cwd or None,
            exit_label=self.label,
            body=self._render_static(self.data),
            omitted_bytes=self.omitted_bytes,
            note=self.note,
        )
        return {"text/plain": text, "text/html": markup}

    @property
    def label(self) -> str:
        """The badge's words: the phase's, else ``running`` or the exit label."""
        return self.phase_label or exit_badge(self.exit_status)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle: dict[str, Any] = super()._repr_mimebundle_(**kwargs)
        bundle.update(self.static_bundle())
        return bundle

    def __repr__(self) -> str:
        return f"TerminalWidget(command={self.command!r}, status={self.label!r})"


class TermFeed:
    """A terminal widget and what a turn view has given it so far (``TurnView``)."""

    def __init__(self, widget: TerminalWidget) -> None:
        self.widget = widget
        self.generation = 0
        self.fed = 0  # stream offset (since the last snapshot) fed to the widget
        self.meta: tuple[Any, ...] | None = None
        #: the bytes are the agent's words, not output: the screen is left empty (TerminalPhase)
        self.hidden = False
        self.started_at = 0.0  # when it was first seen running (time.time()), else 0

    def take_new(self, term: TerminalState) -> None:
        """Feed the widget the bytes it has not had (same snapshot generation only)."""
        if term.total_bytes > self.fed:
            self.widget.feed(term.since(self.fed))
            self.fed = term.total_bytes
