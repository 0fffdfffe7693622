"""The session state: a pure reducer over v2 ``session/update`` models.

``SessionState.apply(update)`` applies one parsed update in arrival order. It
does no I/O and never raises for well-typed input: updates it cannot use (for
example invalid base64) are reported in ``problems`` and dropped; unknown
variants are kept in ``unknown_updates`` for generic rendering.

Every append is O(1) amortised (lists and ``bytearray``s), so a long stream of
small chunks costs linear time; terminal text is converted lazily on read.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any

from .._protocol import (
    AgentMessage,
    AgentMessageChunk,
    AgentThought,
    AgentThoughtChunk,
    AvailableCommandsUpdate,
    BackgroundTerminal,
    BackgroundToolCall,
    CompactionSummaryChunk,
    CompactionUpdate,
    ConfigOptionUpdate,
    IdleStateUpdate,
    Notice,
    PlanItems,
    PlanUpdate,
    RequiresActionStateUpdate,
    RunningStateUpdate,
    SessionInfoUpdate,
    TerminalOutputChunk,
    TerminalToolCallContent,
    TerminalUpdate,
    TextContent,
    ToolCallContentChunk,
    ToolCallFields,
    ToolCallUpdate,
    UnknownPlanUpdateContent,
    UnknownSessionUpdate,
    UnknownStateUpdate,
    UsageUpdate,
    UserMessage,
    UserMessageChunk,
    is_set,
)
from ._terminal import DEFAULT_MAX_BYTES, TerminalState, patch_meta

__all__ = [
    "CompactionState",
    "MessageState",
    "PlanState",
    "SessionState",
    "ToolCallState",
    "TurnState",
    "UsageState",
]


def _block_text(block: Any) -> str:
    return block.text if isinstance(block, TextContent) else ""


_PLAIN_TEXT = frozenset({"type", "text"})
_PIECES = 1024  # small text pieces held before they are joined into one


class MessageState:
    """One user/agent/thought message, keyed by ``message_id``.

    Plain text chunks (a text block with nothing but its text) are kept as text, not as their
    models: a message of a million chunks holds its text, joined by pieces. ``content`` gives
    the blocks, each run of plain text blocks as one ``TextContent`` (their texts joined)."""

    def __init__(self, message_id: str, role: str) -> None:
        self.message_id = message_id
        self.role = role  # "user", "agent" or "thought"
        self.meta: dict[str, Any] | None = None
        self.revision = 0
        # ContentBlock models, and for each run of plain text blocks its [start, end] in `text`
        self._blocks: list[Any] = []
        self._content: list[Any] | None = None  # `content`, made on read
        self._length = 0  # len(self.text)
        self._text_parts: list[str] = []  # `text` is these joined
        self._small = 0  # how many of the last parts are single chunks' texts
        self._text = ""

    @property
    def content(self) -> list[Any]:
        """The ContentBlock models, in order; a run of plain text blocks is one ``TextContent``
        (its texts joined)."""
        content = self._content
        if content is None:
            text = self.text if any(type(b) is list for b in self._blocks) else ""
            content = self._content = [
                TextContent(text=text[b[0] : b[1]]) if type(b) is list else b for b in self._blocks
            ]
        return content

    def append(self, block: Any) -> None:
        self._add(block)
        self.revision += 1

    def append_text(self, text: str) -> None:
        """`append` of a plain text block with this text."""
        self._add_text(text)
        self.revision += 1

    def replace(self, blocks: list[Any]) -> None:
        self._blocks = []
        self._length = 0
        self._text_parts = []
        self._small = 0
        self._text = ""
        for block in blocks:
            self._add(block)
        self._content = None
        self.revision += 1

    def _add(self, block: Any) -> None:
        if type(block) is TextContent and block.model_fields_set <= _PLAIN_TEXT:
            self._add_text(block.text)
            return
        self._blocks.append(block)
        self._content = None
        self._add_part(_block_text(block))

    def _add_text(self, text: str) -> None:
        start = self._length
        self._add_part(text)
        blocks = self._blocks
        if blocks and type(blocks[-1]) is list:
            blocks[-1][1] = self._length
        else:
            blocks.append([start, self._length])
        self._content = None

    def _add_part(self, text: str) -> None:
        parts = self._text_parts
        parts.append(text)
        self._length += len(text)
        self._small += 1
        if self._small >= _PIECES:  # the last pieces as one: a few strings per long message
            joined = "".join(parts[-_PIECES:])
            del parts[-_PIECES:]
            parts.append(joined)
            self._small = 0

    @property
    def text(self) -> str:
        """The text blocks joined (other block types contribute nothing)."""
        if len(self._text) != self._length:
            self._text = "".join(self._text_parts)
            self._text_parts = [self._text]  # what is joined is held once
            self._small = 0
        return self._text

    def __repr__(self) -> str:
        return f"MessageState({self.message_id!r}, {self.role!r}, {self.text[:40]!r})"


class ToolCallState:
    """One tool call, keyed by ``tool_call_id``; each field follows the patch rules."""

    def __init__(self, tool_call_id: str) -> None:
        self.tool_call_id = tool_call_id
        self.name: str | None = None
        self.title: str | None = None
        self.kind: str | None = None
        self.status: str = "pending"
        self.content: list[Any] = []  # ToolCallContent models (terminal items are anchors)
        self.locations: list[Any] = []
        self.raw_input: Any = None
        self.raw_output: Any = None
        self.capabilities: Any = None
        self.meta: dict[str, Any] | None = None
        #: the agent left it pending or in progress when its turn ended (and not in the
        #: background): `status` was set to ``cancelled`` here, not by the agent
        self.left_open = False
        self.revision = 0

    @property
    def terminal_ids(self) -> list[str]:
        """Terminals anchored by this tool call's content, in content order."""
        return [c.terminal_id for c in self.content if isinstance(c, TerminalToolCallContent)]

    def __repr__(self) -> str:
        return f"ToolCallState({self.tool_call_id!r}, {self.title!r}, status={self.status!r})"


class PlanState:
    """One plan, keyed by ``plan_id``: ``entries`` for item plans, ``raw`` otherwise."""

    def __init__(self, plan_id: str) -> None:
        self.plan_id = plan_id
        self.type = "items"
        self.entries: list[Any] = []  # PlanEntry models
        self.raw: dict[str, Any] | None = None  # an unknown plan type, as received
        self.revision = 0

    def __repr__(self) -> str:
        return f"PlanState({self.plan_id!r}, {self.type!r}, entries={len(self.entries)})"


class CompactionState:
    def __init__(self, compaction_id: str) -> None:
        self.compaction_id = compaction_id
        self.status = "in_progress"
        self.summary: list[Any] = []
        self.error: str | None = None
        self.meta: dict[str, Any] | None = None
        self.revision = 0


class UsageState:
    def __init__(self) -> None:
        self.used: int | None = None
        self.size: int | None = None
        self.cost: Any = None  # Cost model

    @property
    def cost_text(self) -> str:
        """``0.00098 USD``: the cost without binary float noise (0.0009800000000000002 is what
        an agent's sum of prices sends), ``""`` when the agent sent none."""
        cost = self.cost
        amount = getattr(cost, "amount", None)
        if amount is None:
            return ""
        if isinstance(amount, float) and amount and abs(amount) < 1e-6:
            shown = f"{amount:.3g}"  # a tiny price keeps its digits
        elif isinstance(amount, float):
            shown = f"{round(amount, 6):f}".rstrip("0").rstrip(".") or "0"
        else:
            shown = str(amount)
        return f"{shown} {getattr(cost, 'currency', '') or ''}".strip()


class TurnState:
    """What belongs to one prompt turn.

    Entities are held by id and read from the session, so a turn always shows
    their latest state. Updates applied while the session is idle after this
    turn (background work) are shown here too, as long as this is the most
    recent turn; ``late_ids`` tells which ids were first touched that way.
    """

    def __init__(self, session: SessionState, prompt_text: str, index: int) -> None:
        self.session = session
        self.prompt_text = prompt_text
        self.index = index
        self.done = False
        self.stop_reason: str | None = None
        self.error: Any = None  # Error model when the stop reason carries one
        # Why the turn ended without an idle state (the agent exited, the connection closed,
        # the prompt was refused), or None.
        self.ended_by: str | None = None
        self._message_ids: dict[str, None] = {}
        self._tool_call_ids: dict[str, None] = {}
        self._terminal_ids: dict[str, None] = {}
        self._plan_ids: dict[str, None] = {}
        self.notices: list[Notice] = []
        self.unknown_updates: list[Any] = []
        self.late_ids: set[str] = set()
        #: terminal id -> (generation, stream offset) of every terminal when the turn began
        self.terminals_at_start: dict[str, tuple[int, int]] = {}

    # -- recording (called by the session) ---------------------------------
    def _touch(self, ids: dict[str, None], key: str) -> None:
        if key not in ids:
            ids[key] = None
            if self.done:
                self.late_ids.add(key)

    # -- views -----------------------------------------------------------
    @property
    def messages(self) -> list[MessageState]:
        store = self.session.messages
        return [store[i] for i in self._message_ids]

    @property
    def text(self) -> str:
        """The agent's message text for this turn (messages joined by a blank line)."""
        return "\n\n".join(m.text for m in self.messages if m.role == "agent" and m.text)

    @property
    def thoughts(self) -> str:
        return "\n\n".join(m.text for m in self.messages if m.role == "thought" and m.text)

    @property
    def tool_calls(self) -> dict[str, ToolCallState]:
        store = self.session.tool_calls
        return {i: store[i] for i in self._tool_call_ids}

    @property
    def terminals(self) -> dict[str, TerminalState]:
        """Terminals updated during the turn or anchored by its tool calls, and the background
        terminals it carries on (see `background`)."""
        store = self.session.terminals
        ids = dict(self._terminal_ids)
        for call in self.tool_calls.values():
            for tid in call.terminal_ids:
                ids.setdefault(tid, None)
        for kind, tid in self.background:
            if kind == "terminal":
                ids.setdefault(tid, None)
        return {i: store[i] for i in ids if i in store}

    @property
    def background(self) -> list[tuple[str, str]]:
        """The latest ``background`` snapshot's items, as ``(kind, id)`` with kind ``terminal``
        or ``tool_call``, while this is the session's most recent turn and it is done; empty
        otherwise. The most recent turn carries on what earlier turns started too: an earlier
        turn's list is empty once a later turn exists, so nobody else would show that work."""
        session = self.session
        if not self.done or session.last_turn is not self:
            return []
        return session.background_items()

    @property
    def plans(self) -> dict[str, PlanState]:
        store = self.session.plans
        return {i: store[i] for i in self._plan_ids}

    @property
    def plan(self) -> PlanState | None:
        """The plan most recently created in this turn (None when there is none)."""
        plans = list(self.plans.values())
        return plans[-1] if plans else None

    def __repr__(self) -> str:
        return (
            f"TurnState(#{self.index}, done={self.done}, stop_reason={self.stop_reason!r}, "
            f"tool_calls={len(self._tool_call_ids)})"
        )


#: The statuses of a tool call still open: closed as ``cancelled`` when its turn ends.
_LEFT_OPEN = frozenset({"pending", "in_progress"})

_TOOL_CALL_FIELDS = ("name", "title", "kind", "raw_input", "raw_output", "capabilities")
_TERMINAL_FIELDS = ("command", "cwd", "size", "capabilities")
_MESSAGE_ROLES: dict[type, str] = {
    UserMessageChunk: "user",
    AgentMessageChunk: "agent",
    AgentThoughtChunk: "thought",
    UserMessage: "user",
    AgentMessage: "agent",
    AgentThought: "thought",
}


class SessionState:
    """All state of one session, built by :meth:`apply` from ``session/update``s."""

    def __init__(
        self, session_id: str | None = None, *, terminal_max_bytes: int = DEFAULT_MAX_BYTES
    ) -> None:
        self.session_id = session_id
        self.terminal_max_bytes = terminal_max_bytes
        self.messages: dict[str, MessageState] = {}
        self.tool_calls: dict[str, ToolCallState] = {}
        self.terminals: dict[str, TerminalState] = {}
        self.plans: dict[str, PlanState] = {}
        self.compactions: dict[str, CompactionState] = {}
        self.available_commands: list[Any] = []
        self.config_options: list[Any] = []
        self.title: str | None = None
        self.updated_at: str | None = None
        self.meta: dict[str, Any] | None = None
        self.usage = UsageState()
        self.notices: list[Notice] = []
        self.unknown_updates: list[Any] = []  # UnknownSessionUpdate / UnknownStateUpdate
        self.problems: list[str] = []
        # Foreground state machine: None until the agent reports one.
        self.state: str | None = None
        self.stop_reason: str | None = None
        self.stop_error: Any = None
        self.background: list[Any] | None = None  # None: not reported
        self.turns: list[TurnState] = []
        self.revision = 0
        self._dispatch: dict[type, Callable[[Any], None]] = {
            UserMessageChunk: self._message_chunk,
            AgentMessageChunk: self._message_chunk,
            AgentThoughtChunk: self._message_chunk,
            UserMessage: self._message,
            AgentMessage: self._message,
            AgentThought: self._message,
            RunningStateUpdate: self._state,
            IdleStateUpdate: self._state,
            RequiresActionStateUpdate: self._state,
            UnknownStateUpdate: self._unknown_state,
            ToolCallUpdate: self._tool_call_update,
            ToolCallContentChunk: self._tool_call_chunk,
            TerminalUpdate: self._terminal_update,
            TerminalOutputChunk: self._terminal_chunk,
            PlanUpdate: self._plan,
            AvailableCommandsUpdate: self._commands,
            ConfigOptionUpdate: self._config,
            SessionInfoUpdate: self._info,
            UsageUpdate: self._usage,
            Notice: self._notice,
            CompactionUpdate: self._compaction,
            CompactionSummaryChunk: self._compaction_chunk,
            UnknownSessionUpdate: self._unknown,
        }

    # -- public ------------------------------------------------------------
    @property
    def busy(self) -> bool:
        """Foreground work may be going on (any state but ``idle``, once one is known)."""
        return self.state is not None and self.state != "idle"

    @property
    def current_turn(self) -> TurnState | None:
        """The open turn, if a prompt is being worked on."""
        turn = self.turns[-1] if self.turns else None
        return turn if turn is not None and not turn.done else None

    @property
    def last_turn(self) -> TurnState | None:
        return self.turns[-1] if self.turns else None

    def background_items(self) -> list[tuple[str, str]]:
        """The latest ``background`` snapshot as ``(kind, id)`` pairs (``terminal`` or
        ``tool_call``; work of an unknown type is left out), whichever turn started it."""
        out: list[tuple[str, str]] = []
        for item in self.background or []:
            if isinstance(item, BackgroundTerminal):
                key = ("terminal", item.terminal_id)
            elif isinstance(item, BackgroundToolCall):
                key = ("tool_call", item.tool_call_id)
            else:
                continue
            if key not in out:
                out.append(key)
        return out

    def begin_turn(self, prompt_text: str = "") -> TurnState:
        """Start a turn for a prompt; later updates belong to it until an idle state."""
        if self.turns and not self.turns[-1].done:
            self.turns[-1].done = True
        turn = TurnState(self, prompt_text, len(self.turns))
        # where each terminal an earlier turn started stood: this turn shows what comes after
        turn.terminals_at_start = {
            tid: (term.generation, term.total_bytes) for tid, term in self.terminals.items()
        }
        self.turns.append(turn)
        self.revision += 1
        return turn

    def end_turn(self, reason: str) -> None:
        """The running turn ended without an idle state (``reason``: "the agent exited
        (code 3)"). The session is no longer running: ``state`` becomes ``"ended"``."""
        if self.turns and not self.turns[-1].done:
            turn = self.turns[-1]
            turn.done = True
            turn.ended_by = reason
            self._close_left_open(turn)
        if self.state != "idle":
            self.state = "ended"
        self.revision += 1

    def apply(self, update: Any) -> None:
        """Apply one parsed ``SessionUpdate`` model."""
        handler = self._dispatch.get(type(update))
        if handler is None:
            self._unknown(update)
        else:
            handler(update)
        self.revision += 1

    def terminal(self, terminal_id: str) -> TerminalState:
        """The terminal with this id, created empty when first seen."""
        term = self.terminals.get(terminal_id)
        if term is None:
            term = TerminalState(terminal_id, max_bytes=self.terminal_max_bytes)
            self.terminals[terminal_id] = term
        return term

    # -- helpers --------------------------------------------------------------
    def _still_runs(self, terminal_id: str) -> bool:
        term = self.terminals.get(terminal_id)
        return term is not None and term.reported and term.exit_status is None

    def _close_left_open(self, turn: TurnState) -> None:
        """A turn ended: its tool calls still ``pending`` or ``in_progress`` are closed as
        ``cancelled`` (`ToolCallState.left_open`), but for those the agent reports as
        background work (the call, or a terminal of it) and those with a terminal whose
        command has not ended. Some agents never close a call they
        gave up (Copilot leaves a cancelled one pending); a late status from the agent wins."""
        running: set[str] = set()
        for item in self.background or ():
            running.add(getattr(item, "tool_call_id", None) or "")
            running.add(getattr(item, "terminal_id", None) or "")
        for call in turn.tool_calls.values():
            if call.status not in _LEFT_OPEN or call.tool_call_id in running:
                continue
            if running.intersection(call.terminal_ids) or any(
                self._still_runs(t) for t in call.terminal_ids
            ):
                continue  # its command has not ended: it is not "cancelled"
            call.status = "cancelled"
            call.left_open = True
            call.revision += 1

    @property
    def _turn(self) -> TurnState | None:
        """The turn that gets this update: the open one, else the most recent."""
        return self.turns[-1] if self.turns else None

    def _problem(self, message: str) -> None:
        self.problems.append(message)

    # -- messages -------------------------------------------------------------
    def _get_message(self, message_id: str, role: str) -> MessageState:
        msg = self.messages.get(message_id)
        if msg is None:
            msg = MessageState(message_id, role)
            self.messages[message_id] = msg
        turn = self._turn
        if turn is not None:
            turn._touch(turn._message_ids, message_id)
        return msg

    def apply_text_chunk(self, role: str, message_id: str, text: str) -> None:
        """``apply`` of a message chunk (``role``: user, agent or thought) whose content is a
        plain text block (``{"type": "text", "text": text}``), given as its strings."""
        msg = self.messages.get(message_id)
        turns = self.turns
        if msg is None or (turns and message_id not in turns[-1]._message_ids):
            msg = self._get_message(message_id, role)  # otherwise what it does is done already
        msg.append_text(text)
        self.revision += 1

    def _message_chunk(self, u: UserMessageChunk | AgentMessageChunk | AgentThoughtChunk) -> None:
        self._get_message(u.message_id, _MESSAGE_ROLES[type(u)]).append(u.content)

    def _message(self, u: UserMessage | AgentMessage | AgentThought) -> None:
        msg = self._get_message(u.message_id, _MESSAGE_ROLES[type(u)])
        if is_set(u, "content"):
            msg.replace(u.content or [])
        if is_set(u, "meta"):
            msg.meta = patch_meta(msg.meta, u.meta)
            msg.revision += 1

    # -- state ----------------------------------------------------------------
    def _state(self, u: RunningStateUpdate | IdleStateUpdate | RequiresActionStateUpdate) -> None:
        self.state = u.state
        self.background = list(u.background) if u.background is not None else None
        if isinstance(u, IdleStateUpdate):
            self.stop_reason = u.stop_reason
            self.stop_error = u.error
            turn = self.current_turn
            if turn is not None:
                turn.stop_reason = u.stop_reason
                turn.error = u.error
                turn.done = True
                self._close_left_open(turn)

    def _unknown_state(self, u: UnknownStateUpdate) -> None:
        state = u.tag
        # Never taken for idle: show a generic busy state until a known state arrives.
        self.state = state if isinstance(state, str) else "_unknown"
        self._unknown(u)

    # -- tool calls -----------------------------------------------------------
    def _get_tool_call(self, tool_call_id: str) -> ToolCallState:
        call = self.tool_calls.get(tool_call_id)
        if call is None:
            call = ToolCallState(tool_call_id)
            self.tool_calls[tool_call_id] = call
        turn = self._turn
        if turn is not None:
            turn._touch(turn._tool_call_ids, tool_call_id)
        return call

    def _anchor(self, call: ToolCallState, item: Any) -> None:
        if isinstance(item, TerminalToolCallContent):
            term = self.terminal(item.terminal_id)
            if call.tool_call_id not in term.tool_call_ids:
                term.tool_call_ids.append(call.tool_call_id)

    def _tool_call_update(self, u: ToolCallFields) -> None:
        call = self._get_tool_call(u.tool_call_id)
        for name in _TOOL_CALL_FIELDS:
            if is_set(u, name):
                setattr(call, name, getattr(u, name))
        if is_set(u, "status"):
            call.status = u.status if u.status is not None else "pending"
            call.left_open = False
        if is_set(u, "content"):
            call.content = list(u.content or [])
            for item in call.content:
                self._anchor(call, item)
        if is_set(u, "locations"):
            call.locations = list(u.locations or [])
        if is_set(u, "meta"):
            call.meta = patch_meta(call.meta, u.meta)
        call.revision += 1

    def _tool_call_chunk(self, u: ToolCallContentChunk) -> None:
        call = self._get_tool_call(u.tool_call_id)
        call.content.append(u.content)
        self._anchor(call, u.content)
        call.revision += 1

    # -- terminals ------------------------------------------------------------
    def _touch_terminal(self, terminal_id: str) -> TerminalState:
        term = self.terminal(terminal_id)
        term.reported = True
        turn = self._turn
        if turn is not None:
            turn._touch(turn._terminal_ids, terminal_id)
            if term.first_turn is None:
                term.first_turn = turn.index
        return term

    def _decode(self, data: str, what: str) -> bytes | None:
        try:  # what strict mode accepts, b64decode(validate=True) decodes to the same bytes
            return binascii.a2b_base64(data, strict_mode=True)
        except (binascii.Error, ValueError, TypeError):
            pass  # decoded again below, so the problem reads as it always did
        try:
            return base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError) as exc:
            self._problem(f"{what}: invalid base64 ({exc}); this update was dropped")
            return None

    def _terminal_update(self, u: TerminalUpdate) -> None:
        snapshot: bytes | None = None
        if is_set(u, "output") and u.output is not None:
            snapshot = self._decode(u.output.data, f"terminal_update for {u.terminal_id!r}")
            if snapshot is None:
                return  # the whole update is dropped, nothing half-applied
        term = self._touch_terminal(u.terminal_id)
        for name in _TERMINAL_FIELDS:
            if is_set(u, name):
                setattr(term, name, getattr(u, name))
        if is_set(u, "exit_status"):
            term.exit_status = u.exit_status
        if is_set(u, "meta"):
            term.meta = patch_meta(term.meta, u.meta)
        if is_set(u, "output"):
            term.replace(snapshot or b"")  # null clears the bytes
        term.revision += 1

    def _terminal_chunk(self, u: TerminalOutputChunk) -> None:
        self.apply_terminal_chunks(u.terminal_id, [u.data])
        self.revision -= 1  # (`apply` counts it)

    def apply_terminal_chunks(self, terminal_id: str, datas: list[str]) -> None:
        """``apply`` of a ``terminal_output_chunk`` of ``terminal_id`` with nothing else for
        each of ``datas`` (their base64, in order), given as strings (the client's hot path:
        no model made for them), in one step: one refused is dropped (its problem is added
        to ``problems``, in order), the others' bytes are appended together (what is kept
        does not depend on how the bytes were chunked)."""
        self.revision += len(datas)
        kept: list[bytes] = []
        decode = binascii.a2b_base64
        for data in datas:
            try:  # the common case of `_decode`, inline
                kept.append(decode(data, strict_mode=True))
            except (binascii.Error, ValueError, TypeError):
                decoded = self._decode(data, f"terminal_output_chunk for {terminal_id!r}")
                if decoded is not None:
                    kept.append(decoded)
        if not kept:
            return
        term = self.terminals.get(terminal_id)
        turns = self.turns
        if (
            term is None
            or not term.reported
            or (turns and terminal_id not in turns[-1]._terminal_ids)
        ):
            term = self._touch_terminal(terminal_id)  # otherwise what it does is done already
        pieces = len(kept) - kept.count(b"")
        if pieces:
            term.append(b"".join(kept) if len(kept) > 1 else kept[0], pieces)

    def apply_terminal_outputs(
        self, tool_call_id: str, metas: list[dict[str, Any]], terminal_id: str, raws: list[bytes]
    ) -> None:
        """For each ``meta`` of ``metas`` and ``raw`` of ``raws`` in turn, ``apply`` of a
        ``tool_call_update`` carrying only its id and this ``_meta``, then of a
        ``terminal_output_chunk`` of ``terminal_id`` whose data decodes to ``raw``: what a v1
        agent's terminal output in a tool call's ``_meta`` stands for (given decoded: its
        text, never base64 encoded), in one step. None of them makes a problem."""
        call = self.tool_calls.get(tool_call_id)
        turns = self.turns
        if call is None or (turns and tool_call_id not in turns[-1]._tool_call_ids):
            call = self._get_tool_call(tool_call_id)  # otherwise what it does is done already
        merged = dict(call.meta) if call.meta else {}  # `patch_meta` of each: no None in them
        for meta in metas:
            merged.update(meta)
        call.meta = merged
        call.revision += len(metas)
        term = self.terminals.get(terminal_id)  # (as in `apply_terminal_chunks`)
        if (
            term is None
            or not term.reported
            or (turns and terminal_id not in turns[-1]._terminal_ids)
        ):
            term = self._touch_terminal(terminal_id)
        pieces = len(raws) - raws.count(b"")
        if pieces:
            term.append(b"".join(raws) if len(raws) > 1 else raws[0], pieces)
        self.revision += 2 * len(metas)

    # -- plans, commands, config, info, usage, notices ------------------------------
    def _plan(self, u: PlanUpdate) -> None:
        content = u.plan
        if isinstance(content, PlanItems):
            plan = self._get_plan(content.plan_id)
            plan.type = "items"
            plan.entries = list(content.entries)
            plan.raw = None
        elif isinstance(content, UnknownPlanUpdateContent) and isinstance(content.plan_id, str):
            plan = self._get_plan(content.plan_id)
            plan.type = str(content.tag)
            plan.entries = []
            plan.raw = content.raw
        else:
            self._problem("plan_update without a planId; kept as an unknown update")
            self._unknown(u)
            return
        plan.revision += 1

    def _get_plan(self, plan_id: str) -> PlanState:
        plan = self.plans.get(plan_id)
        if plan is None:
            plan = PlanState(plan_id)
            self.plans[plan_id] = plan
        turn = self._turn
        if turn is not None:
            turn._touch(turn._plan_ids, plan_id)
        return plan

    def _commands(self, u: AvailableCommandsUpdate) -> None:
        self.available_commands = list(u.available_commands)

    def _config(self, u: ConfigOptionUpdate) -> None:
        self.config_options = list(u.config_options)

    def _info(self, u: SessionInfoUpdate) -> None:
        if is_set(u, "title"):
            self.title = u.title
        if is_set(u, "updated_at"):
            self.updated_at = u.updated_at
        if is_set(u, "meta"):
            self.meta = patch_meta(self.meta, u.meta)

    def _usage(self, u: UsageUpdate) -> None:
        self.usage.used = u.used
        self.usage.size = u.size
        if is_set(u, "cost"):
            self.usage.cost = u.cost

    def _notice(self, u: Notice) -> None:
        self.notices.append(u)
        turn = self._turn
        if turn is not None:
            turn.notices.append(u)

    def _compaction(self, u: CompactionUpdate) -> None:
        comp = self._get_compaction(u.compaction_id)
        comp.status = u.status
        if is_set(u, "summary"):
            comp.summary = list(u.summary or [])
        if is_set(u, "error"):
            comp.error = u.error
        if is_set(u, "meta"):
            comp.meta = patch_meta(comp.meta, u.meta)
        comp.revision += 1

    def _compaction_chunk(self, u: CompactionSummaryChunk) -> None:
        comp = self._get_compaction(u.compaction_id)
        comp.summary.append(u.content)
        comp.revision += 1

    def _get_compaction(self, compaction_id: str) -> CompactionState:
        comp = self.compactions.get(compaction_id)
        if comp is None:
            comp = CompactionState(compaction_id)
            self.compactions[compaction_id] = comp
        return comp

    def _unknown(self, u: Any) -> None:
        self.unknown_updates.append(u)
        turn = self._turn
        if turn is not None:
            turn.unknown_updates.append(u)
