"""The live view of one prompt turn (one per cell), rendered from a :class:`TurnState`.

``refresh()`` may be called as often as wanted: every part keeps what it
last sent and is only touched when its content changed, so a refresh with nothing new sends
no widget message. Terminals get one :class:`TerminalWidget` each, fed only the bytes they
have not had yet (a snapshot replacement resets the widget), up to ``MAX_LIVE_TERMINALS`` per
turn; the others are listed (command, exit status) and each gets its live view when opened.
The HTML parts of tool calls and messages share one layout and one style model, and most
tool calls are rows of a shared HTML widget (`_calls`), so a long turn costs few models.

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

from .._protocol import TerminalToolCallContent
from .._state import (
    MessageState,
    TerminalPhase,
    TerminalState,
    ToolCallState,
    TurnState,
    terminal_phase,
)
from ._asking import AskCard, close_deep
from ._background import BackgroundSection
from ._calls import CallGroups, CallPart, RequestRows, Shared
from ._card import PermissionFacts, PermissionIndex, PermissionRow
from ._mode import ModeLine
from ._parts import (
    STYLE,
    content_html,
    e,
    plan_html,
    set_children,
    set_if_changed,
    tool_call_header_html,
    visible,
    visible_lines,
)
from ._terminal import TermFeed, TerminalWidget
from ._transcript import (
    CARRIED_NOTE,
    MAX_LISTED_TOOL_CALLS,
    MAX_LIVE_TERMINALS,
    STOP_WORDS,
    ModeShown,
    _elapsed,
    _exit_dict,
    _extras_html,
    _io_html,
    _markdown,
    _message_html,
    _message_visible,
    _more_calls_text,
    _not_started,
    _prompt_html,
    _short_command,
    transcript_html,
    transcript_text,
)

__all__ = ["LIVE_TEXT", "MAX_LISTED_TOOL_CALLS", "MAX_LIVE_TERMINALS", "TurnView"]

#: The widget output's ``text/plain``: empty. A front end that cannot draw the widget (nbconvert,
#: a notebook viewer) shows it, and the static transcript right after it says everything.
LIVE_TEXT = ""
#: A live terminal's header is one line (a long command ends in "…" there): a tool call's header
#: leaves out a title its live terminal shows as the command only up to this length.
LIVE_HEADER_COMMAND_CHARS = 60

TerminalCancel = Callable[[str], None]


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


#: Tool-call kinds an agent asks about (besides any call with a terminal): one that ran with no
#: card in a session holding "always allow" answers ran under them.
ASKED_KINDS = frozenset({"execute", "edit", "delete", "move"})


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
        grants: Callable[[], int] | None = None,
        on_terminal: Callable[[TerminalWidget], None] | None = None,
        text_terminals: bool = False,
        mode: Callable[[], ModeShown | None] | None = None,
    ) -> None:
        """``call_soon(fn, *args)``, when given, runs ``fn(*args)`` on the thread that applies
        updates: opening a listed terminal (a click, on the kernel's thread) reads the state
        there. Without it the terminal opens on the clicking thread. ``clock`` times the live
        footer's elapsed label (whole seconds: it changes at most once a second, on a refresh).
        ``grants()``: how many requests of the session were answered "always allow" so far (the
        agent keeps those; the finished turn says when a command ran without asking under them).
        ``on_terminal(widget)``: each live terminal widget, once made. ``text_terminals``: show
        terminals as text (:meth:`use_text_terminals`) from the start. ``mode()``: the
        session's mode and what the agent does without asking in it (`ModeShown`), read on
        each refresh while the turn runs; the turn's header shows it."""
        self.turn = turn
        self._on_terminal = on_terminal
        self._text_terminals = text_terminals
        self._grants = grants
        self._clock = clock
        self._started = clock()
        self.prompt_text = prompt_text
        self._on_cancel_terminal = on_cancel_terminal
        self._on_cancel_tool_call = on_cancel_tool_call
        self._call_soon = call_soon
        self._lock = threading.RLock()
        self._closed = False
        self._order: dict[tuple[str, str], None] = {}
        self._shared = Shared()
        self._messages: dict[str, tuple[ipywidgets.HTML, int]] = {}
        self._calls: dict[str, CallPart] = {}
        self._groups = CallGroups(self._shared)
        self._terms: dict[str, TermFeed] = {}
        self._auto_live = 0  # live terminal views made without being asked (<= the cap)
        self._opened: set[str] = set()  # listed terminals opened on demand
        self._listed: dict[str, None] = {}  # terminals past the cap, in the order first seen
        self._list: TerminalList | None = None
        self._cards: list[Any] = []  # every card, and every request shown as a row
        self._loose_cards: dict[str, Any] = {}  # those with no listed tool call, by order key
        self._rows = RequestRows(self._shared)  # the requests nobody was asked
        self._asked = PermissionIndex()  # the permission requests, by terminal and call
        self._keys: dict[str, Any] = {}  # last rendered key of each simple part
        html = self._shared.html  # (the sections share its layout and style)
        self._style = html(STYLE)
        self._prompt = html(_prompt_html(prompt_text))
        self._mode = ModeLine(mode)
        self._thoughts_html = html()
        self._thoughts = ipywidgets.Accordion(
            children=[self._thoughts_html], titles=("Thoughts",), selected_index=None
        )
        self._plan = html()
        self._timeline = ipywidgets.VBox(layout=self._shared.box_layout)
        self._terminals = ipywidgets.VBox(layout=self._shared.box_layout)
        self._extras = html()
        self._more_calls = html()  # "N more tool calls" past the cap
        self._footer = html()
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
        if (
            self._closed
            or feed is None
            or term is None
            or term.generation != feed.generation
            or feed.hidden
        ):
            return  # the next refresh creates the view, applies the snapshot or the phase
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
            self._rows.place(listed, self._calls, self._loose_cards)
            for call_id in listed:
                shown[("call", call_id)] = self._sync_call(calls[call_id])
            for key, card in self._loose_cards.items():
                shown[("card", key)] = self._rows.shown(key, card)
            set_children(self._timeline, self._timeline_children(shown))
            if turn.done:  # the groups of rows no longer shown (became boxes) are closed
                self._groups.trim()

            sections: list[Any] = [self._style, self._prompt]
            if self._mode.sync(running=not turn.done):
                sections.append(self._mode)
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
            loose = [
                self._shown(self._terms[t].widget)
                for t in terms
                if t not in anchored and t in self._terms
            ]
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

    def _timeline_children(self, shown: dict[tuple[str, str], Any]) -> list[Any]:
        """The timeline in arrival order: consecutive tool calls shown as rows share the
        widgets of `CallGroups`; the others are their own widgets."""
        children: list[Any] = []
        run: list[CallPart] = []
        self._groups.begin()
        for key in self._order:
            item = shown.get(key)
            if item is None:
                continue
            if isinstance(item, CallPart):
                if not item.boxed:
                    run.append(item)
                    continue
                item = item.box
            if run:
                children += self._groups.place(run)
                run = []
            children.append(item)
        if run:
            children += self._groups.place(run)
        return children

    def _sync_call(self, call: ToolCallState) -> CallPart:
        part = self._calls.get(call.tool_call_id)
        if part is None:
            part = self._calls[call.tool_call_id] = CallPart(call.tool_call_id, self._shared)
        rows = tuple(c.revision for c in part.cards if isinstance(c, PermissionRow))
        if part.revision == call.revision and part.rows == rows:
            return part
        part.revision = call.revision
        part.rows = rows
        part.content = list(call.content)
        part.call = call
        self._layout_call(part)
        return part

    def _layout_call(self, part: CallPart) -> None:
        """Render the call: a row of HTML, or a box when it has a card or a live terminal."""
        call = part.call
        header = ""
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
        cards = [c for c in part.cards if not isinstance(c, PermissionRow)]
        for card in cards:
            card.show_with(call)
        # Terminals without a live view (not started yet, or past the cap) share one line, at
        # the place of the first: a call with 1,000 terminals does not make 1,000 of them.
        header += "".join(c.row_html(call) for c in part.cards if isinstance(c, PermissionRow))
        body: list[Any] = []
        quiet: list[Any] = []
        quiet_at = -1
        for item in part.content:
            term_id = getattr(item, "terminal_id", None)
            is_terminal = isinstance(item, TerminalToolCallContent)
            feed = self._terms.get(term_id) if isinstance(term_id, str) else None
            if feed is not None and is_terminal:
                body.append(self._shown(feed.widget))
            elif is_terminal:
                if not quiet:
                    quiet_at = len(body)
                    body.append("")
                quiet.append(item)
            else:
                body.append(content_html(item, self._terminal_label))
        if quiet:
            body[quiet_at] = self._quiet_terminals_html(quiet)
        if call is not None:
            body.append(_io_html(call))
        if cards or any(not isinstance(piece, str) for piece in body):
            # The card comes before what it authorises (it is asked before anything runs), so
            # its buttons stay near the header however long the diff or the output grows.
            part.show_box(header, cards, body)
        else:
            part.show_row(header, body)

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
            widget = TerminalWidget(terminal_id=term_id, layout=self._shared.box_layout)
            if self._on_terminal is not None:
                self._on_terminal(widget)
            if self._on_cancel_terminal is not None:
                callback = self._on_cancel_terminal
                widget.on_cancel(lambda _w: callback(term_id))
            feed = self._terms[term_id] = TermFeed(widget)
            since = self.carried_from(term)
            if since is not None:
                # an earlier turn's command (background work this turn carries on): its output
                # before this turn is in that turn's cell; this view starts where the turn did
                feed.generation, feed.fed = term.generation, since
        widget = feed.widget
        size = term.size
        caps = term.capabilities
        phase = self.terminal_phase(term)
        note = phase.note or (CARRIED_NOTE if self.carried_from(term) is not None else "")
        if phase.state == "running" and not feed.started_at:
            feed.started_at = time.time()
        meta = (  # the header is text in the front end: hidden characters made visible
            visible(term.command or ""),
            visible(term.cwd or ""),
            size.cols if size is not None else 80,
            size.rows if size is not None else 24,
            _exit_dict(term.exit_status),
            caps is not None and getattr(caps, "cancel", None) is not None,
            phase.state,
            phase.label,
            visible_lines(note),
            feed.started_at,
        )
        if not phase.shows_bytes:
            if not feed.hidden:  # the agent's words go to the note, not the screen
                widget.replace(b"")
                feed.hidden = True
            feed.generation, feed.fed = term.generation, term.total_bytes
        elif term.generation != feed.generation or feed.hidden:
            widget.replace(term.data)
            feed.generation = term.generation
            feed.fed = term.total_bytes
            feed.hidden = False
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
                set_if_changed(widget, "phase", meta[6])
                set_if_changed(widget, "phase_label", meta[7])
                set_if_changed(widget, "note", meta[8])
                set_if_changed(widget, "started_at", meta[9])
            placed = feed.meta is not None and feed.meta[0] == meta[0]
            feed.meta = meta
            if not placed:  # a new view goes where the reference was; its command to the header
                for call_id in term.tool_call_ids:
                    part = self._calls.get(call_id)
                    if part is not None:
                        self._layout_call(part)

    def use_text_terminals(self) -> None:
        """Show every live terminal of this view as text (``TerminalWidget.text_view``), for a
        front end that cannot load the terminal model; its header and output stay current."""
        with self._lock:
            if self._text_terminals or self._closed:
                return
            self._text_terminals = True
            for part in list(self._calls.values()):
                self._layout_call(part)
        self.refresh()  # the terminals without a tool call

    @property
    def text_terminals(self) -> bool:
        return self._text_terminals

    def _shown(self, widget: TerminalWidget) -> Any:
        """What the view shows for a live terminal: itself, or its text."""
        return widget.text_view() if self._text_terminals else widget

    def carried_from(self, term: TerminalState) -> int | None:
        """The stream offset this turn shows ``term`` from, when an earlier turn started it
        (its command ran on in the background): the bytes before are that turn's, shown and
        saved in its cell, not copied into every later one (issue 25, finding 6). None for a
        terminal of this turn."""
        first = term.first_turn
        if first is None or first >= self.turn.index:
            return None
        at_start = self.turn.terminals_at_start.get(term.terminal_id)
        if at_start is None or at_start[0] != term.generation:
            return None  # a snapshot since the turn began: this turn's to show whole
        return at_start[1]

    def terminal_phase(self, term: TerminalState) -> TerminalPhase:
        """What ``term``'s header says (``_state.terminal_phase``), from the cards of this turn
        about it: one still asking means nothing ran yet; all of them refused means nothing ran.
        A turn cancelled (or a tool call of it cancelled) cuts a run."""
        calls = set(term.tool_call_ids)
        cards = self._asked.about(term.terminal_id, calls)
        known = self.turn.tool_calls
        cancelled = self.turn.stop_reason == "cancelled" or any(
            getattr(known.get(call_id), "status", None) == "cancelled" for call_id in calls
        )
        return terminal_phase(
            term,
            asking=any(card.verdict == "asking" for card in cards),
            # refused: asked and never allowed (an allowed command may have run, whatever a
            # later request about it was answered)
            refused=bool(cards) and all(card.verdict == "refused" for card in cards),
            cancelled=cancelled,
        )

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

    def footer_text(self, turn: TurnState) -> str:
        """How the turn stands, in plain words: ``working…``, ``waiting for you``,
        ``finished``, ``cancelled``, ``failed: <message>``, ``stopped: <why>``, ``ended: <why>``
        (the turn ended without its idle state: the agent exited ...). A finished turn whose
        commands or edits ran without a card, in a session holding "always allow" answers, says
        so after it (`unasked_note`)."""
        said = self._footer_state(turn)
        note = self.unasked_note(turn) if turn.done or turn.ended_by is not None else ""
        return f"{said} · {note}" if note else said

    def unasked_note(self, turn: TurnState) -> str:
        """``1 tool call ran without asking, under the 1 “always allow” answer of this session
        (%acp grants)``, or "" (no such call, or no such answer: then the agent asks nothing
        for its own reasons, its mode, which the turn cannot tell)."""
        held = self._grants() if self._grants is not None else 0
        if not held:
            return ""
        asked = [card for card in self._cards if isinstance(card, PermissionFacts)]
        asked_calls = {card.tool_call_id for card in asked}
        asked_terms = {card.terminal_id for card in asked}
        ran = sum(
            1
            for call in list(turn.tool_calls.values())
            if (call.kind in ASKED_KINDS or call.terminal_ids)
            and call.status in ("in_progress", "completed")
            and call.tool_call_id not in asked_calls
            and not asked_terms.intersection(call.terminal_ids)
        )
        if not ran:
            return ""
        calls = "1 tool call" if ran == 1 else f"{ran} tool calls"
        answers = (
            "the 1 “always allow” answer" if held == 1 else f"the {held} “always allow” answers"
        )
        return f"{calls} ran without asking, under {answers} of this session (%acp grants)"

    def _footer_state(self, turn: TurnState) -> str:
        if turn.ended_by is not None:  # the agent exited, the connection closed ...
            return visible(f"ended: {turn.ended_by}")
        if not turn.done:
            state = turn.session.state
            # v2 says so (requires_action); a v1 agent only asks: a card still asking says it
            asking = any(isinstance(c, AskCard) and not c.decided for c in self._cards)
            if state == "requires_action" or asking:
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
        if usage.cost_text:
            text += f", cost {usage.cost_text}"
        return visible(text)

    def footer_html(self, turn: TurnState, *, live: bool = False) -> str:
        """The footer; ``live``: a spinner and the time since the view was made while the turn
        runs (never in the saved transcript, which must not change from run to run)."""
        running = live and turn.ended_by is None and not turn.done
        parts = [self.footer_text(turn)]
        if running:
            parts.append(_elapsed(self._clock() - self._started))
        parts.append(self._usage_text(turn))
        html = " · ".join(e(p) for p in parts if p)
        spinner = '<span class="acp-spinner" aria-hidden="true"></span>' if running else ""
        return f'<div class="acp-footer" role="status">{spinner}{html}</div>'

    def _sync_footer(self, turn: TurnState) -> None:
        set_if_changed(self._footer, "value", self.footer_html(turn, live=True))

    # -- permission cards ----------------------------------------------------------------------
    def add_card(self, card: Any) -> None:
        """Show ``card`` with its tool call, else in arrival order (a row: on the next refresh)."""
        with self._lock:
            if self._closed:
                return
            self._cards.append(card)
            if isinstance(card, PermissionFacts):  # (not question and code cards)
                self._asked.add(card)
            if isinstance(card, PermissionRow):
                key = f"row{len(self._cards)}"
                self._order.setdefault(("card", key), None)  # its place, if it has no call
                self._rows.unplaced.append((key, card))
                return
            self.refresh()
            call_id = card.tool_call_id
            part = self._calls.get(call_id) if call_id is not None else None
            if part is not None:
                part.cards.append(card)
                self._layout_call(part)  # a box now, placed by the refresh
                self.refresh()
            else:
                key = str(len(self._cards))
                self._order.setdefault(("card", key), None)
                self._loose_cards[key] = card
                self.refresh()

    @property
    def cards(self) -> list[Any]:
        """The cards shown, and the requests shown as rows (`PermissionRow`), in order."""
        return list(self._cards)

    # -- terminals -----------------------------------------------------------------------------
    @property
    def terminal_widgets(self) -> dict[str, TerminalWidget]:
        with self._lock:
            return {tid: feed.widget for tid, feed in self._terms.items()}

    # -- static output -------------------------------------------------------------------------
    def static_items(self) -> list[tuple[str, Any]]:
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

    def call_shown_in(self, call_id: str) -> Any:
        """The widget that shows a listed tool call (its box, or the group of its row)."""
        part = self._calls.get(call_id)
        return part.shown_in if part is not None else None

    def call_cards(self, call_id: str) -> list[Any]:
        part = self._calls.get(call_id)
        return list(part.cards) if part is not None else []

    def static_text(self) -> str:
        """Deterministic plain transcript of the turn (reads the state; sends nothing)."""
        with self._lock:
            return transcript_text(self)

    def static_html(self) -> str:
        """Self-contained HTML transcript of the turn (every agent string escaped)."""
        with self._lock:
            return transcript_html(self)

    def unlisted_calls(self) -> int:
        """How many of the turn's tool calls are past the ones it lists."""
        calls = self.turn.tool_calls
        return len(calls) - len(self._listed_calls(calls))

    @property
    def mode_shown(self) -> ModeShown | None:
        """The session's mode as the turn last read it (its transcripts say it)."""
        return self._mode.shown

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
                self._mode,
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
            owned += self._groups.widgets()
            owned += self._shared.widgets()
            if self._background is not None:
                owned += [*self._background.widgets(), self._background]
            owned += [c for c in self._cards if not isinstance(c, PermissionRow)]
        for widget in owned:
            close_deep(widget)
        close_deep(self)
