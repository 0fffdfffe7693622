"""The live view of one prompt turn (one per cell), rendered from a :class:`TurnState`.

``refresh()`` may be called as often as wanted: every part keeps what it
last sent and is only touched when its content changed, so a refresh with nothing new sends
no widget message. Terminals get one :class:`TerminalWidget` each, fed only the bytes they
have not had yet (a snapshot replacement resets the widget), up to ``MAX_LIVE_TERMINALS`` per
turn; the others are listed (command, exit status) and each gets its live view when opened.
The HTML parts of tool calls and messages share one layout and one style model, and a tool
call's input/output part exists only once it has some, so a long turn costs few models.

``refresh()`` (and ``add_card``, which refreshes) *reads* the session state, so call it on
the thread that applies updates (the bridge's IO thread) or while holding whatever lock guards
the state; the view's own lock only serialises its widget updates.

The order of messages and tool calls is the order in which the view first saw them. Call
:meth:`TurnView.note_update` from the session listener for the exact arrival order even when
``refresh()`` is throttled; without it, things first seen in the same refresh are ordered
messages first, then tool calls.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import ipywidgets  # type: ignore[import-untyped]
from ipywidgets.widgets.widget_string import HTMLStyle  # type: ignore[import-untyped]

from .._protocol import TerminalToolCallContent
from .._state import MessageState, TerminalState, ToolCallState, TurnState
from ._background import BackgroundSection
from ._card import PermissionCard, close_deep
from ._markdown import render_markdown
from ._parts import (
    NO_MATH,
    STYLE,
    block_html,
    content_html,
    content_text,
    e,
    generic_html,
    generic_text,
    plan_html,
    plan_text,
    set_children,
    set_if_changed,
    tool_call_header_html,
    tool_call_header_text,
    visible,
    visible_lines,
    visible_prose,
    wire,
)
from ._static import STATIC_TERMINAL_BYTES, cap_tail, render_tail
from ._static import terminal_transcript as static_terminal_transcript
from ._terminal import TerminalWidget

__all__ = ["LIVE_TEXT", "MAX_LISTED_TOOL_CALLS", "MAX_LIVE_TERMINALS", "TurnView"]

#: The widget output's ``text/plain``: empty. A front end that cannot draw the widget (nbconvert,
#: a notebook viewer) shows it, and the static transcript right after it says everything.
LIVE_TEXT = ""
#: How a turn's end reads, by stop reason (any other reason: ``stopped: <reason>``).
STOP_WORDS = {
    "end_turn": "finished",
    "cancelled": "cancelled",
    "max_tokens": "stopped: the reply reached its token limit",
    "max_turn_requests": "stopped: the turn reached its limit of model requests",
    "refusal": "stopped: the agent refused",
    "error": "failed",
}
#: A turn shows at most this many live terminal views on its own; the others are listed (command,
#: exit status) and each opens on demand. Their bytes stay in the turn's state either way (``-o``).
MAX_LIVE_TERMINALS = 32
#: Static transcripts name (command, exit status) at most this many terminals past the ones
#: whose output they keep, then count the rest.
STATIC_LISTED_TERMINALS = 200
#: A turn lists at most this many tool calls (the first ones, in arrival order), live and in the
#: saved notebook; the others are counted on one line ("N more tool calls"), updated in place.
#: Each listed call costs a few widget models and its HTML: 10,000 calls in one turn must not
#: make 30,000 models. The turn's state keeps every call either way (``-o``).
MAX_LISTED_TOOL_CALLS = 300
#: A listed terminal's command is cut to this many characters in a label.
LABEL_COMMAND_CHARS = 200
#: A live terminal's header is one line (a long command ends in "…" there): a tool call's header
#: leaves out a title its live terminal shows as the command only up to this length.
LIVE_HEADER_COMMAND_CHARS = 60

TerminalCancel = Callable[[str], None]


def _prompt_html(prompt: str) -> str:
    return f'<div class="acp-turn-prompt">{e(visible_lines(prompt))}</div>'


def _prompt_text(prompt: str) -> list[str]:
    return [f"> {line}" for line in visible_lines(prompt).splitlines() or [""]]


def _markdown(text: str) -> str:
    """Agent Markdown with hidden characters made visible first (joiners kept: see _visible)."""
    return render_markdown(visible_prose(text))


def _message_html(msg: MessageState) -> str:
    parts = [_markdown(msg.text)] if msg.text else []
    parts += [block_html(b) for b in msg.content if getattr(b, "type", None) != "text"]
    body = "".join(parts)
    if msg.role == "user":
        return f'<div class="acp-message acp-message-user"><b>user:</b>{body}</div>'
    return f'<div class="acp-message acp-message-{e(msg.role)}">{body}</div>'


def _message_visible(msg: MessageState) -> bool:
    return bool(msg.text) or any(getattr(b, "type", None) != "text" for b in msg.content)


def _io_html(call: ToolCallState) -> str:
    parts = []
    if call.raw_input is not None:
        parts.append(generic_html(call.raw_input, "input"))
    if call.raw_output is not None:
        parts.append(generic_html(call.raw_output, "output"))
    return "".join(parts)


def _extras_html(turn: TurnState) -> str:
    """Notices and updates this library does not know (shown generically, escaped)."""
    parts = []
    for notice in turn.notices:
        description = f": {e(visible_lines(notice.description))}" if notice.description else ""
        severity = e(visible(str(notice.severity)))
        parts.append(
            f'<div class="acp-notice acp-notice-{severity}">'
            f"<b>{severity}</b> {e(visible(notice.title))}{description}</div>"
        )
    for update in turn.unknown_updates:
        payload = wire(update)
        tag = payload.get("sessionUpdate", "?") if isinstance(payload, dict) else "?"
        parts.append(generic_html(payload, f"update: {tag}"))
    return "".join(parts)


def _more_calls_text(count: int) -> str:
    word = "tool call" if count == 1 else "tool calls"
    return (
        f"… {count:,} more {word} not listed (a turn lists the first {MAX_LISTED_TOOL_CALLS};"
        " `-o` keeps them all)"
    )


def _not_started(_terminal_id: str) -> str:
    return "not started"


def _exit_dict(status: Any) -> dict[str, Any] | None:
    if status is None:
        return None
    payload = wire(status)
    return dict(payload) if isinstance(payload, dict) else {}


#: What a static terminal's note says keeps the lines the notebook does not.
TURN_KEEPS = "the live view and `-o` keep them"


def _terminal_body(term: TerminalState) -> tuple[str, str]:
    """The end of a terminal's output as ``(text, html)``: :func:`_static.render_tail`, or the
    state's own (incrementally kept) conversion when the output is short enough."""
    if term.total_bytes - term.omitted_bytes > STATIC_TERMINAL_BYTES:
        return render_tail(term.data, keeps=TURN_KEEPS)
    text, markup = term.text, term.html
    if term.omitted_bytes:  # both start with the state's note, on a line of its own
        text, markup = text.partition("\n")[2], markup.partition("\n")[2]
    return cap_tail(text, markup, keeps=TURN_KEEPS)


def _short_command(term: TerminalState) -> str:
    command = visible(term.command or "")
    if len(command) > LABEL_COMMAND_CHARS:
        command = command[:LABEL_COMMAND_CHARS] + "…"
    return command


def _elapsed(seconds: float) -> str:
    whole = max(0, int(seconds))
    if whole < 60:
        return f"{whole} s"
    minutes, rest = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {rest} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def terminal_transcript(term: TerminalState, *, body: bool = True) -> tuple[str, str]:
    """Deterministic ``(text, html)`` of a terminal (:func:`_static.terminal_transcript`):
    header, the end of its output (at most ``STATIC_LINES`` lines / ``STATIC_BYTES``; the live
    view and ``term.data`` keep it all), the exit state. Without ``body``: the header (command
    cut to ``LABEL_COMMAND_CHARS``) and the exit state only."""
    command = term.command
    if command is not None and not body:
        command = _short_command(term)  # made visible already: visible() leaves it as it is
    return static_terminal_transcript(
        command=command,
        cwd=term.cwd,
        exit_label=term.exit_label,
        body=_terminal_body(term) if body else None,
        omitted_bytes=term.omitted_bytes,
    )


def _says(term: TerminalState, call: ToolCallState, shown: _StaticTerminals) -> bool:
    """The terminal just shown (with its whole command: it kept its output) shows the call's
    title as its command."""
    title = visible(call.title or "")
    whole = shown.seen <= MAX_LIVE_TERMINALS
    return bool(title) and whole and term.command is not None and visible(term.command) == title


class _StaticTerminals:
    """Which terminals a static transcript shows, in the order it meets them: the output of
    the first ``MAX_LIVE_TERMINALS``, then the header and exit state of the next
    ``STATIC_LISTED_TERMINALS``, then only a count (``-o`` keeps every byte)."""

    def __init__(self) -> None:
        self.seen = 0

    def next(self, term: TerminalState) -> tuple[str, str] | None:
        self.seen += 1
        if self.seen > MAX_LIVE_TERMINALS + STATIC_LISTED_TERMINALS:
            return None
        return terminal_transcript(term, body=self.seen <= MAX_LIVE_TERMINALS)

    def notes(self) -> list[str]:
        """What was left out, as lines for the end of the transcript."""
        notes = []
        no_output = self.seen - MAX_LIVE_TERMINALS
        if no_output > 0:
            notes.append(
                f"… the output of {no_output:,} more terminals not saved in the notebook "
                f"(it keeps the output of {MAX_LIVE_TERMINALS} per turn; `-o` keeps all)"
            )
        left_out = no_output - STATIC_LISTED_TERMINALS
        if left_out > 0:
            notes.append(
                f"… and {left_out:,} more terminals not saved in the notebook, commands "
                "included (`-o` keeps them)"
            )
        return notes


class _TermFeed:
    """A terminal widget and what it has been given so far."""

    def __init__(self, widget: TerminalWidget) -> None:
        self.widget = widget
        self.generation = 0
        self.fed = 0  # stream offset (since the last snapshot) fed to the widget
        self.meta: tuple[Any, ...] | None = None

    def take_new(self, term: TerminalState) -> None:
        """Feed the widget the bytes it has not had (same snapshot generation only)."""
        if term.total_bytes > self.fed:
            self.widget.feed(term.since(self.fed))
            self.fed = term.total_bytes


class _Shared:
    """One layout and one style model for all the HTML parts of a view, one layout for all
    its tool-call boxes (ipywidgets makes two models per HTML widget otherwise)."""

    def __init__(self) -> None:
        self.html_layout = ipywidgets.Layout()
        self.html_style = HTMLStyle()
        self.box_layout = ipywidgets.Layout()

    def html(self) -> ipywidgets.HTML:
        return ipywidgets.HTML(layout=self.html_layout, style=self.html_style)

    def widgets(self) -> list[Any]:
        return [self.html_layout, self.html_style, self.box_layout]


class _CallPart:
    def __init__(self, call_id: str, shared: _Shared) -> None:
        self.call_id = call_id
        self.shared = shared
        self.header = shared.html()
        self.io: ipywidgets.HTML | None = None  # made when the call has input or output
        self.box = ipywidgets.VBox(layout=shared.box_layout)
        self.box.add_class("acp-tool-call")
        self.slots: dict[int, ipywidgets.HTML] = {}
        self.revision = -1
        self.content: list[Any] = []
        self.call: ToolCallState | None = None  # the state last rendered
        self.cards: list[PermissionCard] = []

    def set_io(self, value: str) -> None:
        if self.io is None and value:
            self.io = self.shared.html()
        if self.io is not None:
            set_if_changed(self.io, "value", value)

    def widgets(self) -> list[Any]:
        io = [self.io] if self.io is not None else []
        return [self.header, *io, self.box, *self.slots.values()]


class TerminalList(ipywidgets.VBox):  # type: ignore[misc]
    """The terminals of a turn past its live views: one line each (command, exit status) in a
    list box, and a button that opens the one picked. A fixed number of models, however many
    terminals it lists."""

    def __init__(self, on_open: Callable[[str], None]) -> None:
        self.summary = ipywidgets.HTML()
        self.picker = ipywidgets.Select(options=[], rows=8, layout=ipywidgets.Layout(width="95%"))
        self.open_button = ipywidgets.Button(description="open", icon="terminal")
        self.open_button.on_click(lambda _b: self._open(on_open))
        super().__init__(children=[self.summary, self.picker, self.open_button])
        self.add_class("acp-terminal-list")
        self.key: Any = None

    def _open(self, on_open: Callable[[str], None]) -> None:
        value = self.picker.value
        if isinstance(value, str):
            on_open(value)

    def show(self, rows: list[tuple[str, str]]) -> None:
        """``rows``: ``(label, terminal id)`` of every terminal listed, in order."""
        count = len(rows)
        word = "terminal" if count == 1 else "terminals"
        set_if_changed(
            self.summary,
            "value",
            f'<div class="acp-terminal-list-summary"><b>{count:,} more {word}</b> not shown '
            f"live (a turn shows {MAX_LIVE_TERMINALS} live terminal views); pick one and "
            "press open to see it. Their output is kept either way (<code>-o</code>).</div>",
        )
        options = tuple(rows)
        if tuple(self.picker.options) != options:
            value = self.picker.value
            with self.hold_sync():
                self.picker.options = options
                if options:  # keep the pick, else pick the first: "open" always opens one
                    kept = value in {tid for _, tid in options}
                    self.picker.value = value if kept else options[0][1]

    def widgets(self) -> list[Any]:
        return [self.summary, self.picker, self.open_button]


class TurnView(ipywidgets.VBox):  # type: ignore[misc]
    """Live view of one turn; see the module docstring for the threading and caching rules."""

    def __init__(
        self,
        turn: TurnState,
        prompt_text: str,
        *,
        on_cancel_terminal: TerminalCancel | None = None,
        on_cancel_tool_call: TerminalCancel | None = None,
        call_soon: Callable[..., Any] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``call_soon(fn, *args)``, when given, runs ``fn(*args)`` on the thread that applies
        updates: opening a listed terminal (a click, on the kernel's thread) reads the state
        there. Without it the terminal opens on the clicking thread. ``clock`` times the live
        footer's elapsed label (whole seconds: it changes at most once a second, on a refresh)."""
        self.turn = turn
        self._clock = clock
        self._started = clock()
        self.prompt_text = prompt_text
        self._on_cancel_terminal = on_cancel_terminal
        self._on_cancel_tool_call = on_cancel_tool_call
        self._call_soon = call_soon
        self._lock = threading.RLock()
        self._closed = False
        self._order: dict[tuple[str, str], None] = {}
        self._shared = _Shared()
        self._messages: dict[str, tuple[ipywidgets.HTML, int]] = {}
        self._calls: dict[str, _CallPart] = {}
        self._terms: dict[str, _TermFeed] = {}
        self._auto_live = 0  # live terminal views made without being asked (<= the cap)
        self._opened: set[str] = set()  # listed terminals opened on demand
        self._listed: dict[str, None] = {}  # terminals past the cap, in the order first seen
        self._list: TerminalList | None = None
        self._cards: list[PermissionCard] = []
        self._loose_cards: dict[str, PermissionCard] = {}
        self._keys: dict[str, Any] = {}  # last rendered key of each simple part
        self._style = ipywidgets.HTML(value=STYLE)
        self._prompt = ipywidgets.HTML(value=_prompt_html(prompt_text))
        self._thoughts_html = ipywidgets.HTML()
        self._thoughts = ipywidgets.Accordion(
            children=[self._thoughts_html], titles=("Thoughts",), selected_index=None
        )
        self._plan = ipywidgets.HTML()
        self._timeline = ipywidgets.VBox()
        self._terminals = ipywidgets.VBox()
        self._extras = ipywidgets.HTML()
        self._more_calls = ipywidgets.HTML()  # "N more tool calls" past the cap
        self._footer = ipywidgets.HTML()
        self._background: BackgroundSection | None = None  # made on the first snapshot
        super().__init__(children=(self._style, self._prompt))
        self.add_class("acp-turn")
        self.refresh()

    # -- ordering ------------------------------------------------------------------------------
    def note_update(self, update: Any) -> None:
        """Record the arrival order of a message or tool call, and pass new terminal bytes
        straight to a terminal view that already exists (its coalescer batches them, so they
        leave within tens of milliseconds instead of waiting for the next refresh)."""
        with self._lock:
            message_id = getattr(update, "message_id", None)
            if isinstance(message_id, str):
                self._order.setdefault(("message", message_id), None)
            call_id = getattr(update, "tool_call_id", None)
            if isinstance(call_id, str):
                self._order.setdefault(("call", call_id), None)
            if getattr(update, "session_update", None) == "terminal_output_chunk":
                self._feed_new_bytes(str(getattr(update, "terminal_id", "")))

    def _feed_new_bytes(self, term_id: str) -> None:
        feed = self._terms.get(term_id)
        term = self.turn.session.terminals.get(term_id)  # a fed view means it is this turn's
        if self._closed or feed is None or term is None or term.generation != feed.generation:
            return  # the next refresh creates the view or applies the snapshot
        feed.take_new(term)

    # -- refresh -------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Bring every part up to date with the state; sends only what changed."""
        with self._lock:
            if self._closed:
                return
            turn = self.turn
            messages, calls = self._note_state(turn)
            terms = turn.terminals
            for term_id, term in terms.items():
                if term.reported:  # a terminal only referenced (not started yet) gets no view
                    if self._live(term_id):
                        self._sync_terminal(term_id, term)
                    else:
                        self._list_terminal(term_id, term)
            shown: dict[tuple[str, str], Any] = {}
            for msg in messages:
                if self._shows(msg):
                    shown[("message", msg.message_id)] = self._sync_message(msg)
            listed = self._listed_calls(calls)
            for call_id in listed:
                shown[("call", call_id)] = self._sync_call(calls[call_id]).box
            for key, card in self._loose_cards.items():
                shown[("card", key)] = card
            set_children(self._timeline, (shown[k] for k in self._order if k in shown))

            sections: list[Any] = [self._style, self._prompt]
            if self._sync_thoughts(turn):
                sections.append(self._thoughts)
            if self._sync_plan(turn):
                sections.append(self._plan)
            sections.append(self._timeline)
            more = len(calls) - len(listed)
            set_if_changed(
                self._more_calls,
                "value",
                f'<div class="acp-omitted">{e(_more_calls_text(more))}</div>' if more else "",
            )
            if more:
                sections.append(self._more_calls)
            anchored = {tid for cid in listed for tid in calls[cid].terminal_ids}
            loose = [self._terms[t].widget for t in terms if t not in anchored and t in self._terms]
            set_children(self._terminals, loose)
            if loose:
                sections.append(self._terminals)
            if self._sync_list(terms):
                sections.append(self._list)
            if self._sync_extras(turn):
                sections.append(self._extras)
            if self._sync_background(turn):
                sections.append(self._background)
            self._sync_footer(turn)
            sections.append(self._footer)
            set_children(self, sections)

    def _note_state(self, turn: TurnState) -> tuple[list[MessageState], dict[str, ToolCallState]]:
        """Messages (no thoughts) and tool calls; first-seen ones join the order."""
        messages = [m for m in turn.messages if m.role != "thought"]
        calls = turn.tool_calls
        for msg in messages:
            self._order.setdefault(("message", msg.message_id), None)
        for call_id in calls:
            self._order.setdefault(("call", call_id), None)
        return messages, calls

    def _listed_calls(self, calls: dict[str, ToolCallState]) -> list[str]:
        """The ids of the tool calls this view lists: the first `MAX_LISTED_TOOL_CALLS` in
        arrival order (the same ones live and in the static transcripts)."""
        listed: list[str] = []
        for kind, key in self._order:
            if kind == "call" and key in calls:
                listed.append(key)
                if len(listed) >= MAX_LISTED_TOOL_CALLS:
                    break
        return listed

    def _shows(self, msg: MessageState) -> bool:
        """Messages with content, except the agent's echo of this turn's prompt."""
        if msg.role == "user" and msg.text.strip() == self.prompt_text.strip():
            return False
        return _message_visible(msg)

    def _once(self, name: str, key: Any) -> bool:
        """True (and remember ``key``) when part ``name`` must be re-rendered."""
        if self._keys.get(name, self) == key:
            return False
        self._keys[name] = key
        return True

    def _sync_message(self, msg: MessageState) -> ipywidgets.HTML:
        entry = self._messages.get(msg.message_id)
        if entry is None:
            widget = self._shared.html()
            entry = (widget, -1)
        widget, revision = entry
        if revision != msg.revision:
            set_if_changed(widget, "value", _message_html(msg))
            self._messages[msg.message_id] = (widget, msg.revision)
        return widget

    def _sync_call(self, call: ToolCallState) -> _CallPart:
        part = self._calls.get(call.tool_call_id)
        if part is None:
            part = self._calls[call.tool_call_id] = _CallPart(call.tool_call_id, self._shared)
        if part.revision == call.revision:
            return part
        part.revision = call.revision
        part.content = list(call.content)
        part.call = call
        part.set_io(_io_html(call))
        self._layout_call(part)
        return part

    def _layout_call(self, part: _CallPart) -> None:
        call = part.call
        if call is not None:
            # A live terminal of this call whose header shows the call's title as its whole
            # command says it: the call's header does not say it again.
            live = [
                self._terms[tid].widget.command for tid in call.terminal_ids if tid in self._terms
            ]
            title = visible(call.title or "")
            header = tool_call_header_html(
                call.title,
                call.kind,
                call.status,
                call.locations,
                with_title=not (
                    title and title in live and len(title) <= LIVE_HEADER_COMMAND_CHARS
                ),
            )
            set_if_changed(part.header, "value", header)
        for card in part.cards:
            card.show_with(call)
        children: list[Any] = [part.header]
        # Terminals without a live view (not started yet, or past the cap) share one slot, at
        # the place of the first: a call with 1,000 terminals does not make 1,000 models.
        quiet: list[Any] = []
        quiet_slot: ipywidgets.HTML | None = None
        for index, item in enumerate(part.content):
            term_id = getattr(item, "terminal_id", None)
            is_terminal = isinstance(item, TerminalToolCallContent)
            feed = self._terms.get(term_id) if isinstance(term_id, str) else None
            if feed is not None and is_terminal:
                children.append(feed.widget)
                continue
            if is_terminal and quiet:
                quiet.append(item)
                continue
            slot = part.slots.get(index)
            if slot is None:
                slot = part.slots[index] = self._shared.html()
            if is_terminal:
                quiet, quiet_slot = [item], slot
            else:
                set_if_changed(slot, "value", content_html(item, self._terminal_label))
            children.append(slot)
        if quiet_slot is not None:
            set_if_changed(quiet_slot, "value", self._quiet_terminals_html(quiet))
        if part.io is not None and part.io.value:
            children.append(part.io)
        children += part.cards
        set_children(part.box, children)

    # -- the live terminal cap ------------------------------------------------------------------
    def _live(self, term_id: str) -> bool:
        """Whether a started terminal has (or now gets) a live view: the first
        ``MAX_LIVE_TERMINALS`` do, and those opened from the list."""
        if term_id in self._terms or term_id in self._opened:
            return True
        if self._auto_live < MAX_LIVE_TERMINALS:
            self._auto_live += 1
            return True
        return False

    def _list_terminal(self, term_id: str, term: TerminalState) -> None:
        if term_id in self._listed:
            return
        self._listed[term_id] = None
        for call_id in term.tool_call_ids:  # its tool call says where it went
            part = self._calls.get(call_id)
            if part is not None:
                self._layout_call(part)

    def _quiet_terminals_html(self, items: list[Any]) -> str:
        """One tool call's terminals that have no live view, in one line."""
        if len(items) == 1:
            return content_html(items[0], self._terminal_label)
        listed = sum(1 for i in items if i.terminal_id in self._listed)
        parts = []
        if listed:
            parts.append(f"{listed:,} not shown live (open them from the list of terminals below)")
        if len(items) > listed:
            parts.append(f"{len(items) - listed:,} not started")
        return (
            f'<div class="acp-terminal-ref">{len(items):,} terminals: {e("; ".join(parts))}</div>'
        )

    def _terminal_label(self, term_id: str) -> str:
        if term_id in self._listed and term_id not in self._terms:
            return "not shown live (open it from the list of terminals below)"
        return _not_started(term_id)

    def _sync_list(self, terms: dict[str, TerminalState]) -> bool:
        """Update the list of terminals past the cap; True when it has any."""
        waiting = [
            (index, t) for index, t in enumerate(self._listed, 1) if t not in self._terms
        ]  # numbered in the order they were listed, so a number stays with its terminal
        waiting = [(index, t) for index, t in waiting if t in terms]
        if not waiting:
            return False
        if self._list is None:
            self._list = TerminalList(self.open_terminal)
        rows = []
        for index, term_id in waiting:
            term = terms[term_id]
            command = f"$ {_short_command(term)}" if term.command is not None else "$"
            rows.append((f"#{index}  {command}  ·  {visible(term.exit_label)}", term_id))
        self._list.show(rows)
        return True

    @property
    def terminal_list(self) -> TerminalList | None:
        """The list of terminals past the cap (None until there is one)."""
        return self._list

    def open_terminal(self, term_id: str) -> None:
        """Give a listed terminal its live view (it gets every byte the state kept)."""
        if self._call_soon is not None:
            self._call_soon(self._open_terminal, term_id)
        else:
            self._open_terminal(term_id)

    def _open_terminal(self, term_id: str) -> None:
        with self._lock:
            if self._closed or term_id not in self._listed:
                return
            self._opened.add(term_id)
            self.refresh()

    def _sync_terminal(self, term_id: str, term: TerminalState) -> None:
        feed = self._terms.get(term_id)
        if feed is None:
            widget = TerminalWidget(terminal_id=term_id)
            if self._on_cancel_terminal is not None:
                callback = self._on_cancel_terminal
                widget.on_cancel(lambda _w: callback(term_id))
            feed = self._terms[term_id] = _TermFeed(widget)
        widget = feed.widget
        size = term.size
        caps = term.capabilities
        meta = (  # the header is text in the front end: hidden characters made visible
            visible(term.command or ""),
            visible(term.cwd or ""),
            size.cols if size is not None else 80,
            size.rows if size is not None else 24,
            _exit_dict(term.exit_status),
            caps is not None and getattr(caps, "cancel", None) is not None,
        )
        if term.generation != feed.generation:
            widget.replace(term.data)
            feed.generation = term.generation
            feed.fed = term.total_bytes
        else:
            feed.take_new(term)
        if meta != feed.meta:
            exited_now = meta[4] is not None and (feed.meta is None or feed.meta[4] is None)
            if exited_now:
                widget.flush()  # the last bytes go out before the exit badge does
            with widget.hold_sync():
                set_if_changed(widget, "command", meta[0])
                set_if_changed(widget, "cwd", meta[1])
                set_if_changed(widget, "cols", meta[2])
                set_if_changed(widget, "rows", meta[3])
                set_if_changed(widget, "exit_status", meta[4])
                set_if_changed(widget, "can_cancel", meta[5])
            placed = feed.meta is not None and feed.meta[0] == meta[0]
            feed.meta = meta
            if not placed:  # a new view goes where the reference was; its command to the header
                for call_id in term.tool_call_ids:
                    part = self._calls.get(call_id)
                    if part is not None:
                        self._layout_call(part)

    # -- background work -----------------------------------------------------------------------
    def _sync_background(self, turn: TurnState) -> bool:
        if self._background is None:
            if not turn.background:
                return False
            self._background = BackgroundSection(self._stop_background)
        return self._background.sync(turn)

    def _stop_background(self, kind: str, item_id: str) -> None:
        callback = self._on_cancel_terminal if kind == "terminal" else self._on_cancel_tool_call
        if callback is not None:
            callback(item_id)

    @property
    def background(self) -> BackgroundSection | None:
        """The "still running" section (None until a snapshot named an item of this turn)."""
        return self._background

    @property
    def background_running(self) -> bool:
        """Whether the latest snapshot still names items of this turn."""
        return bool(self.turn.background)

    def stop_failed(self, kind: str, item_id: str, message: str) -> None:
        """The agent answered a stop (``terminal/cancel``, ``tool_call/cancel``) with an
        error: show it on the item (thread that applies updates)."""
        with self._lock:
            if self._closed:
                return
            if self._background is None:
                self._background = BackgroundSection(self._stop_background)
            self._background.failed(kind, item_id, message)
            self.refresh()

    def _sync_thoughts(self, turn: TurnState) -> bool:
        thoughts = [m for m in turn.messages if m.role == "thought"]
        key = tuple((m.message_id, m.revision) for m in thoughts)
        if self._once("thoughts", key):
            text = turn.thoughts
            set_if_changed(self._thoughts_html, "value", _markdown(text) if text else "")
        return bool(self._thoughts_html.value)

    def _sync_plan(self, turn: TurnState) -> bool:
        plan = turn.plan
        key = None if plan is None else (plan.plan_id, plan.revision)
        if self._once("plan", key):
            set_if_changed(self._plan, "value", plan_html(plan) if plan is not None else "")
        return plan is not None

    def _sync_extras(self, turn: TurnState) -> bool:
        key = (len(turn.notices), len(turn.unknown_updates))
        if self._once("extras", key):
            set_if_changed(self._extras, "value", _extras_html(turn))
        return key != (0, 0)

    def _footer_text(self, turn: TurnState) -> str:
        """How the turn stands, in plain words: ``working…``, ``waiting for you``,
        ``finished``, ``cancelled``, ``failed: <message>``, ``stopped: <why>``, ``ended: <why>``
        (the turn ended without its idle state: the agent exited ...)."""
        if turn.ended_by is not None:  # the agent exited, the connection closed ...
            return visible(f"ended: {turn.ended_by}")
        if not turn.done:
            state = turn.session.state
            if state == "requires_action":
                return "waiting for you"
            if state in (None, "", "running", "idle"):
                return "working…"
            return visible(f"working… ({state})")
        error = turn.error
        if error is not None:
            message = getattr(error, "message", None)
            return visible(f"failed: {message if isinstance(message, str) else error}")
        reason = turn.stop_reason
        if reason is None:
            return "finished"
        return visible(STOP_WORDS.get(str(reason), f"stopped: {reason}"))

    def _usage_text(self, turn: TurnState) -> str:
        usage = turn.session.usage
        if usage.used is None or usage.size is None:
            return ""
        text = f"context: {usage.used} / {usage.size} tokens"
        cost = usage.cost
        if cost is not None:
            text += f", cost {cost.amount} {cost.currency}"
        return visible(text)

    def _footer_html(self, turn: TurnState, *, live: bool = False) -> str:
        """The footer; ``live``: a spinner and the time since the view was made while the turn
        runs (never in the saved transcript, which must not change from run to run)."""
        running = live and turn.ended_by is None and not turn.done
        parts = [self._footer_text(turn)]
        if running:
            parts.append(_elapsed(self._clock() - self._started))
        parts.append(self._usage_text(turn))
        html = " · ".join(e(p) for p in parts if p)
        spinner = '<span class="acp-spinner" aria-hidden="true"></span>' if running else ""
        return f'<div class="acp-footer" role="status">{spinner}{html}</div>'

    def _sync_footer(self, turn: TurnState) -> None:
        set_if_changed(self._footer, "value", self._footer_html(turn, live=True))

    # -- permission cards ----------------------------------------------------------------------
    def add_card(self, card: PermissionCard) -> None:
        """Show ``card`` with the tool call it is about, else in arrival order."""
        with self._lock:
            if self._closed:
                return
            self._cards.append(card)
            self.refresh()
            call_id = card.tool_call_id
            part = self._calls.get(call_id) if call_id is not None else None
            if part is not None:
                part.cards.append(card)
                self._layout_call(part)
            else:
                key = str(len(self._cards))
                self._order.setdefault(("card", key), None)
                self._loose_cards[key] = card
                self.refresh()

    @property
    def cards(self) -> list[PermissionCard]:
        return list(self._cards)

    # -- terminals -----------------------------------------------------------------------------
    @property
    def terminal_widgets(self) -> dict[str, TerminalWidget]:
        with self._lock:
            return {tid: feed.widget for tid, feed in self._terms.items()}

    # -- static output -------------------------------------------------------------------------
    def _static_items(self) -> list[tuple[str, Any]]:
        turn = self.turn
        message_list, calls = self._note_state(turn)
        messages = {m.message_id: m for m in message_list}
        listed = set(self._listed_calls(calls))
        items: list[tuple[str, Any]] = []
        for kind, key in self._order:
            if kind == "message" and key in messages and self._shows(messages[key]):
                items.append(("message", messages[key]))
            elif kind == "call" and key in listed:
                items.append(("call", calls[key]))
            elif kind == "card" and key in self._loose_cards:
                items.append(("card", self._loose_cards[key]))
        return items

    def _call_cards(self, call_id: str) -> list[PermissionCard]:
        part = self._calls.get(call_id)
        return list(part.cards) if part is not None else []

    def static_text(self) -> str:
        """Deterministic plain transcript of the turn (reads the state; sends nothing)."""
        with self._lock:
            turn = self.turn
            lines = _prompt_text(self.prompt_text)
            plan = turn.plan
            if plan is not None:
                lines += ["", *plan_text(plan)]
            terms = turn.terminals
            anchored: set[str] = set()
            shown = _StaticTerminals()
            for kind, item in self._static_items():
                lines.append("")
                if kind == "message":
                    prefix = "user: " if item.role == "user" else ""
                    lines.append(prefix + visible_prose(item.text))
                elif kind == "card":
                    lines += item.transcript_text()
                else:
                    lines += self._call_text(item, terms, anchored, shown)
            for term_id, term in terms.items():
                if term_id not in anchored and term.reported:
                    transcript = shown.next(term)
                    if transcript is not None:
                        lines += ["", transcript[0]]
            more = len(turn.tool_calls) - len(self._listed_calls(turn.tool_calls))
            if more:
                lines += ["", _more_calls_text(more)]
            for note in shown.notes():
                lines += ["", note]
            for notice in turn.notices:
                lines += ["", visible(f"{notice.severity}: {notice.title}")]
            for update in turn.unknown_updates:
                lines += ["", "update: " + generic_text(wire(update))]
            lines += ["", self._footer_text(turn)]
            return "\n".join(lines)

    def _call_text(
        self,
        call: ToolCallState,
        terms: dict[str, TerminalState],
        anchored: set[str],
        shown: _StaticTerminals,
    ) -> list[str]:
        lines: list[str] = []
        says_title = False  # a terminal below shows the call's title as its whole command
        for item in call.content:
            term_id = getattr(item, "terminal_id", None)
            if getattr(item, "type", None) == "terminal" and isinstance(term_id, str):
                term = terms.get(term_id)
                if term is not None and term.reported and term_id not in anchored:
                    anchored.add(term_id)
                    transcript = shown.next(term)
                    if transcript is not None:
                        says_title |= _says(term, call, shown)
                        lines += [f"  {line}" for line in transcript[0].split("\n")]
                continue
            lines += [f"  {line}" for line in content_text(item)]
        for card in self._call_cards(call.tool_call_id):
            lines += [f"  {line}" for line in card.transcript_text(call)]
        head = tool_call_header_text(
            call.title, call.kind, call.status, call.locations, with_title=not says_title
        )
        return head + lines

    def static_html(self) -> str:
        """Self-contained HTML transcript of the turn (every agent string escaped)."""
        with self._lock:
            turn = self.turn
            # NO_MATH: JupyterLab and nbconvert typeset $...$ in HTML outputs (commands have $).
            out = [STYLE, f'<div class="acp-turn acp-turn-static {NO_MATH}">']
            out.append(_prompt_html(self.prompt_text))
            if turn.thoughts:
                out.append(
                    f"<details><summary>Thoughts</summary>{_markdown(turn.thoughts)}</details>"
                )
            plan = turn.plan
            if plan is not None:
                out.append(plan_html(plan))
            terms = turn.terminals
            anchored: set[str] = set()
            shown = _StaticTerminals()
            for kind, item in self._static_items():
                if kind == "message":
                    out.append(_message_html(item))
                elif kind == "card":
                    out.append(item.transcript_html())
                else:
                    out.append(self._call_html(item, terms, anchored, shown))
            for term_id, term in terms.items():
                if term_id not in anchored and term.reported:
                    transcript = shown.next(term)
                    if transcript is not None:
                        out.append(transcript[1])
            more = len(turn.tool_calls) - len(self._listed_calls(turn.tool_calls))
            if more:
                out.append(f'<div class="acp-omitted">{e(_more_calls_text(more))}</div>')
            for note in shown.notes():
                out.append(f'<div class="acp-omitted">{e(note)}</div>')
            out.append(_extras_html(turn))
            out.append(self._footer_html(turn))
            out.append("</div>")
            return "".join(out)

    def _call_html(
        self,
        call: ToolCallState,
        terms: dict[str, TerminalState],
        anchored: set[str],
        shown: _StaticTerminals,
    ) -> str:
        out: list[str] = []
        says_title = False  # as in _call_text
        for item in call.content:
            term_id = getattr(item, "terminal_id", None)
            if getattr(item, "type", None) == "terminal" and isinstance(term_id, str):
                term = terms.get(term_id)
                if term is not None and term.reported and term_id not in anchored:
                    anchored.add(term_id)
                    transcript = shown.next(term)
                    if transcript is not None:
                        says_title |= _says(term, call, shown)
                        out.append(transcript[1])
                    continue
                if term is not None and term.reported:
                    continue
            out.append(content_html(item, _not_started))
        out.append(_io_html(call))
        out += [card.transcript_html(call) for card in self._call_cards(call.tool_call_id)]
        out.append("</div>")
        head = tool_call_header_html(
            call.title, call.kind, call.status, call.locations, with_title=not says_title
        )
        return (
            '<div class="acp-tool-call" style="border-left:3px solid #ccc;padding-left:6px;'
            f'margin:4px 0">{head}{"".join(out)}'
        )

    def static_bundle(self) -> dict[str, str]:
        """``text/plain`` and ``text/html`` transcripts, for display at the end of the turn."""
        return {"text/plain": self.static_text(), "text/html": self.static_html()}

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any] | None:
        bundle: dict[str, Any] | None = super()._repr_mimebundle_(**kwargs)
        if bundle is not None:
            bundle["text/plain"] = LIVE_TEXT
        return bundle

    def __repr__(self) -> str:
        return f"<TurnView {visible(self.prompt_text)[:40]!r}>"

    # -- lifetime ------------------------------------------------------------------------------
    def close_all(self) -> None:
        """Close every widget model this view created, its terminals and its cards.

        An undecided card fails closed (its callback gets ``None``)."""
        with self._lock:
            self._closed = True
            owned: list[Any] = [
                self._style,
                self._prompt,
                self._thoughts_html,
                self._thoughts,
                self._plan,
                self._timeline,
                self._terminals,
                self._extras,
                self._more_calls,
                self._footer,
            ]
            owned += [w for w, _ in self._messages.values()]
            for part in self._calls.values():
                owned += part.widgets()
            owned += [feed.widget for feed in self._terms.values()]
            if self._list is not None:
                owned += [*self._list.widgets(), self._list]
            owned += self._shared.widgets()
            if self._background is not None:
                owned += [*self._background.widgets(), self._background]
            owned += self._cards
        for widget in owned:
            close_deep(widget)
        close_deep(self)
