"""The tool calls of a turn's live view, at the cost of what they show.

A tool call with nothing to click or watch (no card, no live terminal: most of them) is a row
of HTML, and consecutive rows share one ``HTML`` widget, a *group* of at most `GROUP_CALLS`
calls or about `GROUP_CHARS` characters. A group's value is sent again only when a call in
it changed, and only on a refresh of the view (which the cell paces: ``_cells.REFRESH_INTERVAL``),
so a turn of 1,000 tool calls costs a few dozen models and a few messages per refresh,
whatever the rate its updates come at. A call that needs widgets of its own (a permission card
to answer, a live terminal) gets them, as a box: its header, its cards, its terminals and one
HTML slot per other piece of content. Every HTML widget of a view shares one layout and one
style model (`Shared`): ipywidgets makes both for each widget otherwise.

Only standard ipywidgets models: a front end without our extension shows every tool call.
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape
from typing import Any

import ipywidgets  # type: ignore[import-untyped]
from ipywidgets.widgets.widget_string import HTMLStyle  # type: ignore[import-untyped]

from .._state import ToolCallState
from ._card import PermissionRow
from ._parts import set_children, set_if_changed

__all__ = ["GROUP_CALLS", "GROUP_CHARS", "CallGroups", "CallPart", "RequestRows", "Shared"]

#: At most this many tool calls share one HTML widget ...
GROUP_CALLS = 25
#: ... and a group takes no more calls once its HTML is this long (a call longer than it is a
#: group of its own): a change re-sends the whole group, so a group stays small.
GROUP_CHARS = 32 * 1024


class Shared:
    """One layout and one style model for all the HTML parts of a view, one layout for all
    its tool-call boxes and live terminals (ipywidgets makes a layout model per widget, and a
    style model per HTML widget, otherwise)."""

    def __init__(self) -> None:
        self.html_layout = ipywidgets.Layout()
        self.html_style = HTMLStyle()
        self.box_layout = ipywidgets.Layout()

    def html(self, value: str = "") -> ipywidgets.HTML:
        return ipywidgets.HTML(value=value, layout=self.html_layout, style=self.html_style)

    def widgets(self) -> list[Any]:
        return [self.html_layout, self.html_style, self.box_layout]


class CallPart:
    """What the view keeps of one tool call: the state it last rendered, its cards, and either
    its row of HTML (``fragment``) or, once it needs widgets, its box."""

    def __init__(self, call_id: str, shared: Shared) -> None:
        self.call_id = call_id
        self.shared = shared
        self.revision = -1
        #: the revisions of its requests shown as HTML (`PermissionRow`) when last rendered
        self.rows: tuple[int, ...] = ()
        self.content: list[Any] = []
        self.call: ToolCallState | None = None  # the state last rendered
        self.cards: list[Any] = []
        #: the call as one row of a group (``""`` while it is shown as a box)
        self.fragment = ""
        self.header: ipywidgets.HTML | None = None  # the box's widgets, made when needed
        self.box: ipywidgets.VBox | None = None
        self.slots: list[ipywidgets.HTML] = []
        self.group: ipywidgets.HTML | None = None  # the group widget that shows its row

    @property
    def shown_in(self) -> Any:
        """The widget that shows the call: its box, or its row's group."""
        return self.box if self.boxed else self.group

    @property
    def boxed(self) -> bool:
        """Whether the call is shown with widgets of its own (not as a row of a group)."""
        return not self.fragment

    def show_row(self, header: str, body: Iterable[str]) -> None:
        """Show the call as a row: its header and its content, as HTML. The row names its call
        (``data-acp-call``): the front end keeps what a person folded in it by that name."""
        self.fragment = f'<div class="acp-tool-call" {self._named()}>{header}{"".join(body)}</div>'

    def show_fragment(self, html: str) -> None:
        """Show a row that is not a tool call (a request nobody was asked, with no call)."""
        self.fragment = html

    def show_box(self, header: str, cards: list[Any], body: list[Any]) -> ipywidgets.VBox:
        """Show the call with widgets: ``body`` holds HTML strings (each in a slot of its
        own, reused in order) and widgets (shown as they are)."""
        self.fragment = ""
        if self.header is None or self.box is None:
            self.header = self.shared.html()
            self.box = ipywidgets.VBox(layout=self.shared.box_layout)
            self.box.add_class("acp-tool-call")
        set_if_changed(self.header, "value", f"<div {self._named()}>{header}</div>")
        children: list[Any] = [self.header, *cards]
        used = 0
        for piece in body:
            if not isinstance(piece, str):
                children.append(piece)
                continue
            if not piece:
                continue
            if used == len(self.slots):
                self.slots.append(self.shared.html())
            slot = self.slots[used]
            used += 1
            set_if_changed(slot, "value", piece)
            children.append(slot)
        set_children(self.box, children)
        return self.box

    def _named(self) -> str:
        return f'data-acp-call="{escape(self.call_id, quote=True)}"'

    def html(self) -> str:
        """What the view shows of the call, as HTML (its row, or its box's HTML parts)."""
        if self.fragment:
            return self.fragment
        parts = [self.header.value] if self.header is not None else []
        for child in self.box.children if self.box is not None else ():
            if child is not self.header and isinstance(child, ipywidgets.HTML):
                parts.append(child.value)
        return "".join(parts)

    def widgets(self) -> list[Any]:
        own = [self.header, self.box] if self.header is not None else []
        return [*own, *self.slots]


class RequestRows:
    """The permission requests nobody was asked (``_card.PermissionRow``: HTML, no widget) of
    a view: the refresh after each arrived puts it with its listed tool call (its row, or the
    header of its box), else in a row of its own, at the place it arrived."""

    def __init__(self, shared: Shared) -> None:
        self._shared = shared
        #: ``(order key, row)`` of those not placed yet
        self.unplaced: list[tuple[str, Any]] = []
        self._loose: dict[str, CallPart] = {}

    def place(self, listed: list[str], parts: dict[str, CallPart], loose: dict[str, Any]) -> None:
        """Each unplaced row goes to the part of its listed call (made if need be), or into
        ``loose`` under its order key."""
        ids = set(listed) if self.unplaced else set()
        for key, row in self.unplaced:
            call_id = row.tool_call_id
            if call_id is not None and call_id in ids:
                part = parts.get(call_id)
                if part is None:
                    part = parts[call_id] = CallPart(call_id, self._shared)
                part.cards.append(row)
                part.revision = -1  # laid out again by this refresh
            else:
                loose[key] = row
        self.unplaced.clear()

    def shown(self, key: str, card: Any) -> Any:
        """What shows a card no listed tool call shows: itself, or for a row, a part of the
        call groups."""
        if not isinstance(card, PermissionRow):
            return card
        part = self._loose.get(key)
        if part is None:
            part = self._loose[key] = CallPart(key, self._shared)
        if part.rows != (card.revision,):
            part.rows = (card.revision,)
            part.show_fragment(card.row_html())
        return part


class CallGroups:
    """The HTML widgets that show runs of consecutive rows: the n-th group of the view's
    timeline is always the n-th widget, so a call that arrives only changes the last one."""

    def __init__(self, shared: Shared) -> None:
        self._shared = shared
        self._widgets: list[ipywidgets.HTML] = []
        self._keys: list[tuple[str, ...]] = []
        self._used = 0

    def begin(self) -> None:
        """Start a refresh: the groups are numbered again from the first."""
        self._used = 0

    def place(self, run: list[CallPart]) -> list[ipywidgets.HTML]:
        """The widgets that show ``run`` (consecutive rows), in order; sends only the groups
        whose calls changed."""
        placed = []
        for group in _split(run):
            key = tuple(part.fragment for part in group)
            if self._used == len(self._widgets):
                self._widgets.append(self._shared.html())
                self._keys.append(())
                self._widgets[-1].add_class("acp-tool-calls")
            index = self._used
            self._used += 1
            widget = self._widgets[index]
            if self._keys[index] != key:
                self._keys[index] = key
                set_if_changed(widget, "value", "".join(key))
            for part in group:
                part.group = widget
            placed.append(widget)
        return placed

    def trim(self) -> None:
        """Close the groups the last refresh did not use (call after the timeline no longer
        lists them): rows that became boxes (a live terminal started) leave their group empty,
        and how many did depends on when the refreshes fell; a finished turn keeps only what it
        shows, so re-running a cell leaves the same number of models each time."""
        for widget in self._widgets[self._used :]:
            widget.close()  # (not its layout and style: the view's shared ones)
        del self._widgets[self._used :], self._keys[self._used :]

    def widgets(self) -> list[Any]:
        return list(self._widgets)


def _split(run: list[CallPart]) -> list[list[CallPart]]:
    groups: list[list[CallPart]] = []
    size = 0
    for part in run:
        length = len(part.fragment)
        if not groups or len(groups[-1]) >= GROUP_CALLS or size + length > GROUP_CHARS:
            groups.append([])
            size = 0
        groups[-1].append(part)
        size += length
    return groups
