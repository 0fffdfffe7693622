"""``session/update``: every stable ``SessionUpdate`` variant plus the unknown fallback.

:func:`parse_session_update` is the fast path used for live traffic.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Annotated, Any, Literal, cast

from pydantic import ConfigDict, Field, Tag, TypeAdapter, ValidationError

from ._base import UNKNOWN_TAG, UnknownVariant, WireModel, open_union_discriminator
from ._config import AvailableCommand, SessionConfigOption
from ._content import ContentBlock
from ._errors import Error
from ._terminal import TerminalCapabilities, TerminalExitStatus, TerminalOutput, TerminalSize
from ._tool_calls import ToolCallContent, ToolCallFields

__all__ = [
    "BACKGROUND_WORK_TYPES",
    "COMPACTION_STATUSES",
    "NOTICE_SEVERITIES",
    "PLAN_ENTRY_PRIORITIES",
    "PLAN_ENTRY_STATUSES",
    "SESSION_UPDATE_TYPES",
    "STATE_UPDATE_TYPES",
    "STOP_REASONS",
    "AgentMessage",
    "AgentMessageChunk",
    "AgentThought",
    "AgentThoughtChunk",
    "AvailableCommandsUpdate",
    "BackgroundTerminal",
    "BackgroundToolCall",
    "BackgroundWork",
    "CompactionStatus",
    "CompactionSummaryChunk",
    "CompactionUpdate",
    "ConfigOptionUpdate",
    "Cost",
    "IdleStateUpdate",
    "Notice",
    "NoticeSeverity",
    "PlanEntry",
    "PlanEntryPriority",
    "PlanEntryStatus",
    "PlanItems",
    "PlanUpdate",
    "PlanUpdateContent",
    "RequiresActionStateUpdate",
    "RunningStateUpdate",
    "SessionInfoUpdate",
    "SessionUpdate",
    "StateUpdate",
    "StopReason",
    "TerminalOutputChunk",
    "TerminalUpdate",
    "ToolCallContentChunk",
    "ToolCallUpdate",
    "UnknownBackgroundWork",
    "UnknownPlanUpdateContent",
    "UnknownSessionUpdate",
    "UnknownStateUpdate",
    "UpdateSessionNotification",
    "UsageUpdate",
    "UserMessage",
    "UserMessageChunk",
    "parse_session_update",
    "session_update_adapter",
]

StopReason = str
"""Open enum, see :data:`STOP_REASONS`; ``error`` comes with an ``error`` object."""
PlanEntryStatus = str
PlanEntryPriority = str
NoticeSeverity = str
CompactionStatus = str

STOP_REASONS = frozenset(
    {"end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled", "error"}
)
PLAN_ENTRY_STATUSES = frozenset({"pending", "in_progress", "completed", "cancelled"})
PLAN_ENTRY_PRIORITIES = frozenset({"high", "medium", "low"})
NOTICE_SEVERITIES = frozenset({"info", "warning", "error"})
COMPACTION_STATUSES = frozenset({"in_progress", "completed", "failed", "cancelled"})


# -- messages ------------------------------------------------------------------------------


class UserMessageChunk(WireModel):
    """Appends one content block to message ``message_id``."""

    session_update: Literal["user_message_chunk"] = "user_message_chunk"
    message_id: str
    content: ContentBlock


class AgentMessageChunk(WireModel):
    session_update: Literal["agent_message_chunk"] = "agent_message_chunk"
    message_id: str
    content: ContentBlock


class AgentThoughtChunk(WireModel):
    session_update: Literal["agent_thought_chunk"] = "agent_thought_chunk"
    message_id: str
    content: ContentBlock


class UserMessage(WireModel):
    """Upsert of message ``message_id``; ``content`` is a patch field (omitted/null/value)."""

    session_update: Literal["user_message"] = "user_message"
    message_id: str
    content: list[ContentBlock] | None = None


class AgentMessage(WireModel):
    session_update: Literal["agent_message"] = "agent_message"
    message_id: str
    content: list[ContentBlock] | None = None


class AgentThought(WireModel):
    session_update: Literal["agent_thought"] = "agent_thought"
    message_id: str
    content: list[ContentBlock] | None = None


# -- state ---------------------------------------------------------------------------------


class BackgroundTerminal(WireModel):
    type: Literal["terminal"] = "terminal"
    terminal_id: str


class BackgroundToolCall(WireModel):
    type: Literal["tool_call"] = "tool_call"
    tool_call_id: str


class UnknownBackgroundWork(UnknownVariant):
    tag_key = "type"


BACKGROUND_WORK_TYPES: dict[str, type[WireModel]] = {
    "terminal": BackgroundTerminal,
    "tool_call": BackgroundToolCall,
}

BackgroundWork = Annotated[
    Annotated[BackgroundTerminal, Tag("terminal")]
    | Annotated[BackgroundToolCall, Tag("tool_call")]
    | Annotated[UnknownBackgroundWork, Tag(UNKNOWN_TAG)],
    open_union_discriminator("type", "type", frozenset(BACKGROUND_WORK_TYPES)),
]


class RunningStateUpdate(WireModel):
    session_update: Literal["state_update"] = "state_update"
    state: Literal["running"] = "running"
    background: list[BackgroundWork] | None = None


class IdleStateUpdate(WireModel):
    """Ready for a new prompt. ``stop_reason`` is set when foreground work ended;
    with ``stop_reason == "error"`` the optional ``error`` describes the failure."""

    session_update: Literal["state_update"] = "state_update"
    state: Literal["idle"] = "idle"
    stop_reason: StopReason | None = None
    error: Error | None = None
    background: list[BackgroundWork] | None = None


class RequiresActionStateUpdate(WireModel):
    session_update: Literal["state_update"] = "state_update"
    state: Literal["requires_action"] = "requires_action"
    background: list[BackgroundWork] | None = None


class UnknownStateUpdate(UnknownVariant):
    """A ``state_update`` whose ``state`` this library does not know."""

    tag_key = "state"

    @property
    def session_update(self) -> str:
        return "state_update"


STATE_UPDATE_TYPES: dict[str, type[WireModel]] = {
    "running": RunningStateUpdate,
    "idle": IdleStateUpdate,
    "requires_action": RequiresActionStateUpdate,
}

StateUpdate = Annotated[
    Annotated[RunningStateUpdate, Tag("running")]
    | Annotated[IdleStateUpdate, Tag("idle")]
    | Annotated[RequiresActionStateUpdate, Tag("requires_action")]
    | Annotated[UnknownStateUpdate, Tag(UNKNOWN_TAG)],
    open_union_discriminator("state", "state", frozenset(STATE_UPDATE_TYPES)),
]


# -- tool calls and terminals --------------------------------------------------------------


class ToolCallUpdate(ToolCallFields):
    """Upsert of tool call ``tool_call_id`` (the first one creates it)."""

    session_update: Literal["tool_call_update"] = "tool_call_update"


class ToolCallContentChunk(WireModel):
    """Appends one content item to tool call ``tool_call_id``."""

    session_update: Literal["tool_call_content_chunk"] = "tool_call_content_chunk"
    tool_call_id: str
    content: ToolCallContent


class TerminalUpdate(WireModel):
    """Upsert of terminal ``terminal_id``; every other field (and ``meta``) is a patch field.

    ``output`` is a replacement snapshot of the terminal's bytes.
    """

    session_update: Literal["terminal_update"] = "terminal_update"
    terminal_id: str
    command: str | None = None
    cwd: str | None = None
    output: TerminalOutput | None = None
    exit_status: TerminalExitStatus | None = None
    size: TerminalSize | None = None
    capabilities: TerminalCapabilities | None = None


class TerminalOutputChunk(WireModel):
    """Appends bytes to terminal ``terminal_id``; ``data`` is base64, decode each chunk alone."""

    session_update: Literal["terminal_output_chunk"] = "terminal_output_chunk"
    terminal_id: str
    data: str

    def data_bytes(self) -> bytes:
        return base64.b64decode(self.data)


# -- plans, commands, config, info, usage ---------------------------------------------------


class PlanEntry(WireModel):
    content: str
    priority: PlanEntryPriority
    status: PlanEntryStatus


class PlanItems(WireModel):
    type: Literal["items"] = "items"
    plan_id: str
    entries: list[PlanEntry]


class UnknownPlanUpdateContent(UnknownVariant):
    tag_key = "type"

    @property
    def plan_id(self) -> Any:
        return self.raw.get("planId")


PlanUpdateContent = Annotated[
    Annotated[PlanItems, Tag("items")] | Annotated[UnknownPlanUpdateContent, Tag(UNKNOWN_TAG)],
    open_union_discriminator("type", "type", frozenset({"items"})),
]


class PlanUpdate(WireModel):
    """Replaces the entries of plan ``plan.plan_id``."""

    session_update: Literal["plan_update"] = "plan_update"
    plan: PlanUpdateContent


class AvailableCommandsUpdate(WireModel):
    session_update: Literal["available_commands_update"] = "available_commands_update"
    available_commands: list[AvailableCommand]


class ConfigOptionUpdate(WireModel):
    session_update: Literal["config_option_update"] = "config_option_update"
    config_options: list[SessionConfigOption]


class SessionInfoUpdate(WireModel):
    """Patch of the session's ``title`` / ``updated_at`` (omitted = unchanged, null = cleared)."""

    session_update: Literal["session_info_update"] = "session_info_update"
    title: str | None = None
    updated_at: str | None = None


class Cost(WireModel):
    amount: float
    currency: str


class UsageUpdate(WireModel):
    session_update: Literal["usage_update"] = "usage_update"
    used: int = Field(ge=0)
    size: int = Field(ge=0)
    cost: Cost | None = None


class Notice(WireModel):
    session_update: Literal["notice"] = "notice"
    severity: NoticeSeverity
    title: str = Field(min_length=1)
    description: str | None = None


class CompactionUpdate(WireModel):
    session_update: Literal["compaction_update"] = "compaction_update"
    compaction_id: str
    status: CompactionStatus
    summary: list[ContentBlock] | None = None
    error: str | None = None


class CompactionSummaryChunk(WireModel):
    session_update: Literal["compaction_summary_chunk"] = "compaction_summary_chunk"
    compaction_id: str
    content: ContentBlock


class UnknownSessionUpdate(UnknownVariant):
    """A custom (``_``-prefixed) or future session update, kept verbatim in ``raw``."""

    tag_key = "sessionUpdate"

    @property
    def session_update(self) -> Any:
        return self.raw.get("sessionUpdate")


SESSION_UPDATE_TYPES: dict[str, Any] = {
    "user_message_chunk": UserMessageChunk,
    "user_message": UserMessage,
    "agent_message_chunk": AgentMessageChunk,
    "agent_message": AgentMessage,
    "agent_thought_chunk": AgentThoughtChunk,
    "agent_thought": AgentThought,
    "state_update": StateUpdate,
    "tool_call_update": ToolCallUpdate,
    "tool_call_content_chunk": ToolCallContentChunk,
    "terminal_update": TerminalUpdate,
    "terminal_output_chunk": TerminalOutputChunk,
    "plan_update": PlanUpdate,
    "available_commands_update": AvailableCommandsUpdate,
    "config_option_update": ConfigOptionUpdate,
    "session_info_update": SessionInfoUpdate,
    "usage_update": UsageUpdate,
    "notice": Notice,
    "compaction_update": CompactionUpdate,
    "compaction_summary_chunk": CompactionSummaryChunk,
}
"""``sessionUpdate`` tag -> model (``state_update`` maps to the :data:`StateUpdate` union)."""

SessionUpdate = Annotated[
    Annotated[UserMessageChunk, Tag("user_message_chunk")]
    | Annotated[UserMessage, Tag("user_message")]
    | Annotated[AgentMessageChunk, Tag("agent_message_chunk")]
    | Annotated[AgentMessage, Tag("agent_message")]
    | Annotated[AgentThoughtChunk, Tag("agent_thought_chunk")]
    | Annotated[AgentThought, Tag("agent_thought")]
    | Annotated[StateUpdate, Tag("state_update")]
    | Annotated[ToolCallUpdate, Tag("tool_call_update")]
    | Annotated[ToolCallContentChunk, Tag("tool_call_content_chunk")]
    | Annotated[TerminalUpdate, Tag("terminal_update")]
    | Annotated[TerminalOutputChunk, Tag("terminal_output_chunk")]
    | Annotated[PlanUpdate, Tag("plan_update")]
    | Annotated[AvailableCommandsUpdate, Tag("available_commands_update")]
    | Annotated[ConfigOptionUpdate, Tag("config_option_update")]
    | Annotated[SessionInfoUpdate, Tag("session_info_update")]
    | Annotated[UsageUpdate, Tag("usage_update")]
    | Annotated[Notice, Tag("notice")]
    | Annotated[CompactionUpdate, Tag("compaction_update")]
    | Annotated[CompactionSummaryChunk, Tag("compaction_summary_chunk")]
    | Annotated[UnknownSessionUpdate, Tag(UNKNOWN_TAG)],
    open_union_discriminator("sessionUpdate", "session_update", frozenset(SESSION_UPDATE_TYPES)),
]


class UpdateSessionNotification(WireModel):
    """Params of the ``session/update`` notification."""

    session_id: str
    update: SessionUpdate


# Built on first use, as the models are (``defer_build``): not at import.
session_update_adapter: TypeAdapter[SessionUpdate] = TypeAdapter(
    SessionUpdate, config=ConfigDict(defer_build=True)
)
_validate_update = session_update_adapter.validate_python

# Per-tag validators of the plain (non-union) variants: skips the union dispatch for live
# traffic. Anything else, and any failure, goes through the adapter so errors read the same.
# Each is looked up on first use of its tag (the model is built then).
_PLAIN_MODELS: dict[str, type[WireModel]] = {
    tag: model
    for tag, model in SESSION_UPDATE_TYPES.items()
    if isinstance(model, type) and issubclass(model, WireModel)
}
_FAST_VALIDATORS: dict[str, Callable[[Any], Any]] = {}


def _fast_validator(tag: Any) -> Callable[[Any], Any] | None:
    found = _FAST_VALIDATORS.get(tag)
    if found is None:
        model = _PLAIN_MODELS.get(tag)
        if model is None:
            return None
        model.model_rebuild()  # builds a deferred model (a no-op once built)
        found = _FAST_VALIDATORS[tag] = model.__pydantic_validator__.validate_python
    return found


def parse_session_update(data: dict[str, Any]) -> SessionUpdate:
    """Parse one ``update`` object; raises ``pydantic.ValidationError`` when malformed."""
    if type(data) is dict and type(tag := data.get("sessionUpdate")) is str:
        # (a tag that is no string, a list say, is for the union to refuse: not a dict key)
        fast = _FAST_VALIDATORS.get(tag) or _fast_validator(tag)
        if fast is not None:
            try:
                return cast("SessionUpdate", fast(data))
            except ValidationError:
                pass  # re-raised below with the union's error locations
    return _validate_update(data)
