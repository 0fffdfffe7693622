"""``AskCard``: what every card that asks a person shares. Permission cards, question forms and
code cards are its three kinds.

A card holds a request and a callback, never the decision. It reports one answer, once: a
click, the countdown's end (``timeout``), or its own closing while the request is open
(``closed``: the kind's fail-closed answer). Its owner then pushes the outcome (``mark_*``),
which disables it and shows the decision line. Any thread may call its methods: the lock
guards its state, and every field the click path touches exists before the first button does
(a front end may click a button the moment its model is announced).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, ClassVar

import ipywidgets  # type: ignore[import-untyped]

from ._parts import e, start_countdown

log = logging.getLogger("acp_notebook.widgets")


def close_deep(widget: Any) -> None:
    """Close a widget and the layout/style models ipywidgets made for it."""
    for name in ("layout", "style"):
        child = getattr(widget, name, None)
        if isinstance(child, ipywidgets.Widget):
            child.close()
    widget.close()


ANSWER_SENT = '<span class="acp-card-status">answer sent…</span>'
NOT_SENT = '<span class="acp-card-warning">the answer could not be sent</span>'


class AskCard(ipywidgets.VBox):  # type: ignore[misc]
    """The base of the cards that ask; a kind sets ``kind``, calls ``_begin_asking`` first in
    its constructor, and says how to disable itself, what it owns, and its fail-closed answer.
    """

    #: "permission", "question" or "code": in log lines and thread names
    kind: ClassVar[str] = "request"

    def _begin_asking(self) -> None:
        """Make the state the click path needs (before any button exists)."""
        self._lock = threading.RLock()
        self._chosen = False  # an answer was reported (or the card closed quietly)
        self._stop = threading.Event()  # ends the countdown
        self._timer: threading.Thread | None = None
        self._status = ipywidgets.HTML(value="")

    # -- what a kind says -----------------------------------------------------------------
    @property
    def decided(self) -> bool:
        """The owner pushed the outcome."""
        raise NotImplementedError

    def _disable(self) -> None:
        """Disable every input (under the lock)."""
        raise NotImplementedError

    def _answer_closed(self) -> None:
        """Report the kind's fail-closed answer, by ``closed``."""
        raise NotImplementedError

    def _owned(self) -> list[Any]:
        """The widgets the card made, closed with it."""
        raise NotImplementedError

    # -- the one answer -------------------------------------------------------------------
    @property
    def status_html(self) -> str:
        return str(self._status.value)

    def _report_once(self, report: Callable[[], None], by: str) -> None:
        """Call ``report`` (the owner's callback) unless an answer went already; then, unless
        the card is closing, disable it and say the answer is on its way."""
        with self._lock:
            if self._chosen or self.decided:
                return
            self._chosen = True
            self._stop.set()
        status = ANSWER_SENT
        try:  # report first: the answer must reach the owner even if updating the card fails
            report()
        except Exception:  # the owner's bug must not break the comm handler or the timer
            log.exception("%s card callback failed", self.kind)
            status = NOT_SENT
        if by == "closed":
            return
        try:
            with self._lock:
                if not self.decided:  # the outcome may have been pushed already
                    self._disable()
                    self._status.value = status
        except Exception:
            log.exception("updating the %s card failed", self.kind)

    def _show_decision(self, line_html: str) -> None:
        """The owner's outcome (call under the lock, after recording it): disable, show."""
        self._stop.set()
        if self._status.comm is None:
            return  # closed already
        with self.hold_sync():
            self._disable()
            self._status.value = line_html

    @staticmethod
    def decision_html(line: str) -> str:
        return f'<span class="acp-card-decision"><b>{e(line)}</b></span>'

    def _start_countdown(self, timeout: float, on_expire: Callable[[], None]) -> None:
        """Count down on the status line; at zero, ``on_expire`` (the kind's ``timeout``)."""
        self._timer = start_countdown(
            timeout,
            lock=self._lock,
            stop=self._stop,
            status=self._status,
            on_expire=on_expire,
            name=f"acp-{self.kind}-countdown",
        )

    # -- lifetime ---------------------------------------------------------------------------
    def close_quietly(self) -> None:
        """Close without reporting anything: the owner settles the request itself."""
        with self._lock:
            self._chosen = True
        self.close()

    def close(self) -> None:
        """Close the card and what it made; an open request fails closed first."""
        with self._lock:
            still_open = not self._chosen and not self.decided
        if still_open:
            self._answer_closed()
        self._stop.set()
        for child in self._owned():
            close_deep(child)
        for name in ("layout", "style"):
            model = getattr(self, name, None)
            if isinstance(model, ipywidgets.Widget):
                model.close()
        super().close()
