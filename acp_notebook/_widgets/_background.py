"""The "still running" section of a turn view: its items of the ``background`` snapshots.

One row per item the snapshots ever named for the turn (``kind``: ``terminal`` or
``tool_call``): what it is, how it stands, a Stop button while it runs and advertises
``capabilities.cancel``, and the agent's error answer to a stop. The live terminal views and
tool-call parts stay where the turn view shows them; this section only lists and stops.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape as e
from typing import Any

import ipywidgets  # type: ignore[import-untyped]

from .._state import SessionState, TurnState
from ._parts import set_children, set_if_changed, visible

#: ``on_stop(kind, item_id)``: the Stop button of a background item (any thread).
BackgroundStop = Callable[[str, str], None]


def _cancellable(state: Any) -> bool:
    caps = getattr(state, "capabilities", None)
    return caps is not None and getattr(caps, "cancel", None) is not None


def describe_item(session: SessionState, kind: str, item_id: str) -> tuple[str, str, bool]:
    """``(label, status, cancellable)`` of one background item, from the session's state."""
    if kind == "terminal":
        term = session.terminals.get(item_id)
        if term is None:
            return f"terminal {item_id}", "not started", False
        # running, or the one exit label (_connection._exit): exit 0, signal SIGTERM, exited
        return f"$ {term.command or item_id}", term.exit_label, _cancellable(term)
    call = session.tool_calls.get(item_id)
    if call is None:
        return f"tool call {item_id}", "unknown", False
    return call.title or item_id, call.status, _cancellable(call)


class _Row:
    def __init__(self, kind: str, item_id: str, on_stop: BackgroundStop | None) -> None:
        self.kind = kind
        self.item_id = item_id
        self.label = ipywidgets.HTML()
        self.error = ipywidgets.HTML()
        self.stop = ipywidgets.Button(description="Stop", icon="stop", button_style="danger")
        self.stop.add_class("acp-background-stop")
        self.stop.layout.display = "none"
        if on_stop is not None:
            self.stop.on_click(lambda _b: on_stop(kind, item_id))
        self.box = ipywidgets.HBox(children=(self.label, self.stop, self.error))
        self.box.add_class("acp-background-item")

    def widgets(self) -> list[Any]:
        return [self.label, self.error, self.stop, self.box]


class BackgroundSection(ipywidgets.VBox):  # type: ignore[misc]
    """Rows of the turn's background items; :meth:`sync` on the thread that applies updates."""

    def __init__(self, on_stop: BackgroundStop | None) -> None:
        self._on_stop = on_stop
        self._head = ipywidgets.HTML()
        self.rows: dict[tuple[str, str], _Row] = {}
        self.running: list[tuple[str, str]] = []
        self._errors: dict[tuple[str, str], str] = {}
        self._reported = False  # a snapshot named an item of the turn
        super().__init__(children=(self._head,))
        self.add_class("acp-background")

    def sync(self, turn: TurnState) -> bool:
        """Bring the rows up to date; True when the section has any row to show."""
        self.running = turn.background
        self._reported = self._reported or bool(self.running)
        for key in [*self.running, *self._errors]:
            if key not in self.rows:
                self.rows[key] = _Row(*key, self._on_stop)
        # A later turn's view carries on what the snapshot still names (this turn's list is
        # empty once a later turn exists).
        later = turn.session.last_turn is not turn
        named = turn.session.background_items() if later else []
        carried = False
        for key, row in self.rows.items():
            label, status, can_stop = describe_item(turn.session, *key)
            still = key in self.running
            if not still and key in named:
                carried = True
                status = "in a later turn"
            elif not still and status == "running":
                status = "no longer reported"
            set_if_changed(
                row.label,
                "value",
                f'<span class="acp-background-label">{e(visible(label))}</span> '
                f'<span class="acp-background-status">{e(visible(status))}</span>',
            )
            row.stop.layout.display = "" if still and can_stop else "none"
            error = self._errors.get(key, "")
            set_if_changed(
                row.error,
                "value",
                f'<span class="acp-background-error">{e(visible(error))}</span>' if error else "",
            )
        count = len(self.running)
        head = f"still running: {count}" if count else ""
        if not count and self._reported:
            head = "carried on by a later turn" if carried else "background work ended"
        set_if_changed(self._head, "value", f'<div class="acp-background-head">{e(head)}</div>')
        set_children(self, (self._head, *(row.box for row in self.rows.values())))
        return bool(self.rows)

    def failed(self, kind: str, item_id: str, message: str) -> None:
        """The agent's error answer to a stop (shown on the next :meth:`sync`)."""
        self._errors[(kind, item_id)] = f"stop failed: {message}"

    def widgets(self) -> list[Any]:
        out: list[Any] = [self._head]
        for row in self.rows.values():
            out += row.widgets()
        return out
