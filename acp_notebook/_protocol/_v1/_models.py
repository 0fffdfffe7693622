"""ACP v1 wire models, from the v1 schema the pinned SDK ships (``schema/v1/schema.json``).

Same style as the v2 models: `WireModel` objects, open unions with an ``Unknown*`` member (the
stable v1 schema closes its unions with ``oneOf``; we keep unknown variants all the same), and
patch fields (``ToolCallUpdate``) whose omitted / ``null`` / value states stay distinct
(`is_set`). Shapes that v1 and v2 share (content blocks, plan entries, locations, permission
options, usage, notices, session info, compaction) reuse the v2 models;
``tests/test_protocol_v1_schema_drift.py`` checks them against the v1 definitions too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar, cast

from pydantic import ConfigDict, Field, Tag, TypeAdapter, ValidationError

from .._base import UNKNOWN_TAG, UnknownVariant, WireModel, open_union_discriminator
from .._content import ContentBlock
from .._initialize import Implementation
from .._permission import PermissionOption
from .._tool_calls import ContentToolCallContent, TerminalToolCallContent, ToolCallLocation
from .._updates import (
    CompactionSummaryChunk,
    CompactionUpdate,
    Notice,
    PlanEntry,
    SessionInfoUpdate,
    UnknownSessionUpdate,
    UsageUpdate,
)

__all__ = [
    "LENIENT_FIELDS",
    "PROTOCOL_VERSION",
    "RESPONSE_LENIENT",
    "SESSION_UPDATE_TYPES",
    "STOP_REASONS",
    "TOOL_CALL_CONTENT_TYPES",
    "V1AgentCapabilities",
    "V1AgentMessageChunk",
    "V1AgentThoughtChunk",
    "V1AvailableCommand",
    "V1AvailableCommandsUpdate",
    "V1ConfigOptionUpdate",
    "V1CurrentModeUpdate",
    "V1Diff",
    "V1InitializeResponse",
    "V1LoadSessionResponse",
    "V1NewSessionResponse",
    "V1Plan",
    "V1PromptResponse",
    "V1RequestPermissionRequest",
    "V1ResumeSessionResponse",
    "V1SessionCapabilities",
    "V1SessionConfigBoolean",
    "V1SessionConfigOption",
    "V1SessionConfigSelect",
    "V1SessionConfigSelectGroup",
    "V1SessionConfigSelectOption",
    "V1SessionMode",
    "V1SessionModeState",
    "V1SessionUpdate",
    "V1SetSessionConfigOptionResponse",
    "V1ToolCall",
    "V1ToolCallContent",
    "V1ToolCallFields",
    "V1ToolCallUpdate",
    "V1UnknownConfigOption",
    "V1UnknownToolCallContent",
    "V1UnstructuredCommandInput",
    "V1UserMessageChunk",
    "parse_v1_permission_request",
    "parse_v1_response",
    "parse_v1_session_update",
    "parse_v1_session_update_lenient",
    "repair",
]

PROTOCOL_VERSION = 1

STOP_REASONS = frozenset({"end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"})


# -- messages ------------------------------------------------------------------------------


class _V1ContentChunk(WireModel):
    """One content block of a message. ``message_id`` is optional in v1 (older agents send
    none); a change of id starts a new message."""

    content: ContentBlock
    message_id: str | None = None


class V1UserMessageChunk(_V1ContentChunk):
    session_update: Literal["user_message_chunk"] = "user_message_chunk"


class V1AgentMessageChunk(_V1ContentChunk):
    session_update: Literal["agent_message_chunk"] = "agent_message_chunk"


class V1AgentThoughtChunk(_V1ContentChunk):
    session_update: Literal["agent_thought_chunk"] = "agent_thought_chunk"


# -- tool calls ----------------------------------------------------------------------------


class V1Diff(WireModel):
    """A whole-file diff: ``old_text`` omitted or ``null`` for a new file."""

    type: Literal["diff"] = "diff"
    path: str
    old_text: str | None = None
    new_text: str


class V1UnknownToolCallContent(UnknownVariant):
    tag_key = "type"


TOOL_CALL_CONTENT_TYPES: dict[str, type[WireModel]] = {
    "content": ContentToolCallContent,
    "diff": V1Diff,
    "terminal": TerminalToolCallContent,
}

V1ToolCallContent = Annotated[
    Annotated[ContentToolCallContent, Tag("content")]
    | Annotated[V1Diff, Tag("diff")]
    | Annotated[TerminalToolCallContent, Tag("terminal")]
    | Annotated[V1UnknownToolCallContent, Tag(UNKNOWN_TAG)],
    open_union_discriminator("type", "type", frozenset(TOOL_CALL_CONTENT_TYPES)),
]


class V1ToolCallFields(WireModel):
    """v1 ``ToolCallUpdate`` without a tag (also the ``toolCall`` of a permission request):
    every field but ``tool_call_id`` is a patch field."""

    tool_call_id: str
    title: str | None = None
    name: str | None = None
    kind: str | None = None
    status: str | None = None
    content: list[V1ToolCallContent] | None = None
    locations: list[ToolCallLocation] | None = None
    raw_input: Any = None
    raw_output: Any = None


class V1ToolCall(WireModel):
    """A new tool call (``title`` required); fields it leaves out take their defaults."""

    session_update: Literal["tool_call"] = "tool_call"
    tool_call_id: str
    title: str
    name: str | None = None
    kind: str | None = None
    status: str | None = None
    content: list[V1ToolCallContent] | None = None
    locations: list[ToolCallLocation] | None = None
    raw_input: Any = None
    raw_output: Any = None


class V1ToolCallUpdate(V1ToolCallFields):
    session_update: Literal["tool_call_update"] = "tool_call_update"


# -- plan, commands, modes, config ---------------------------------------------------------


class V1Plan(WireModel):
    """The session's one plan, replaced whole by each update."""

    session_update: Literal["plan"] = "plan"
    entries: list[PlanEntry]


class V1UnstructuredCommandInput(WireModel):
    hint: str


class V1AvailableCommand(WireModel):
    name: str
    description: str
    input: V1UnstructuredCommandInput | None = None


class V1AvailableCommandsUpdate(WireModel):
    session_update: Literal["available_commands_update"] = "available_commands_update"
    available_commands: list[V1AvailableCommand]


class V1CurrentModeUpdate(WireModel):
    session_update: Literal["current_mode_update"] = "current_mode_update"
    current_mode_id: str


class V1SessionMode(WireModel):
    id: str
    name: str
    description: str | None = None


class V1SessionModeState(WireModel):
    current_mode_id: str
    available_modes: list[V1SessionMode]


class V1SessionConfigSelectOption(WireModel):
    value: str
    name: str
    description: str | None = None


class V1SessionConfigSelectGroup(WireModel):
    group: str
    name: str
    options: list[V1SessionConfigSelectOption]


class _V1ConfigOptionBase(WireModel):
    id: str
    name: str
    description: str | None = None
    category: str | None = None


class V1SessionConfigSelect(_V1ConfigOptionBase):
    type: Literal["select"] = "select"
    current_value: str
    options: list[V1SessionConfigSelectOption] | list[V1SessionConfigSelectGroup]


class V1SessionConfigBoolean(_V1ConfigOptionBase):
    type: Literal["boolean"] = "boolean"
    current_value: bool


class V1UnknownConfigOption(UnknownVariant):
    tag_key = "type"


V1SessionConfigOption = Annotated[
    Annotated[V1SessionConfigSelect, Tag("select")]
    | Annotated[V1SessionConfigBoolean, Tag("boolean")]
    | Annotated[V1UnknownConfigOption, Tag(UNKNOWN_TAG)],
    open_union_discriminator("type", "type", frozenset({"select", "boolean"})),
]


class V1ConfigOptionUpdate(WireModel):
    session_update: Literal["config_option_update"] = "config_option_update"
    config_options: list[V1SessionConfigOption]


# -- the union -------------------------------------------------------------------------------

SESSION_UPDATE_TYPES: dict[str, type[WireModel]] = {
    "user_message_chunk": V1UserMessageChunk,
    "agent_message_chunk": V1AgentMessageChunk,
    "agent_thought_chunk": V1AgentThoughtChunk,
    "tool_call": V1ToolCall,
    "tool_call_update": V1ToolCallUpdate,
    "plan": V1Plan,
    "available_commands_update": V1AvailableCommandsUpdate,
    "current_mode_update": V1CurrentModeUpdate,
    "config_option_update": V1ConfigOptionUpdate,
    "session_info_update": SessionInfoUpdate,
    "usage_update": UsageUpdate,
    "notice": Notice,
    "compaction_update": CompactionUpdate,
    "compaction_summary_chunk": CompactionSummaryChunk,
}
"""``sessionUpdate`` tag -> model; the last five are the v2 models (same shape in v1)."""

V1SessionUpdate = Annotated[
    Annotated[V1UserMessageChunk, Tag("user_message_chunk")]
    | Annotated[V1AgentMessageChunk, Tag("agent_message_chunk")]
    | Annotated[V1AgentThoughtChunk, Tag("agent_thought_chunk")]
    | Annotated[V1ToolCall, Tag("tool_call")]
    | Annotated[V1ToolCallUpdate, Tag("tool_call_update")]
    | Annotated[V1Plan, Tag("plan")]
    | Annotated[V1AvailableCommandsUpdate, Tag("available_commands_update")]
    | Annotated[V1CurrentModeUpdate, Tag("current_mode_update")]
    | Annotated[V1ConfigOptionUpdate, Tag("config_option_update")]
    | Annotated[SessionInfoUpdate, Tag("session_info_update")]
    | Annotated[UsageUpdate, Tag("usage_update")]
    | Annotated[Notice, Tag("notice")]
    | Annotated[CompactionUpdate, Tag("compaction_update")]
    | Annotated[CompactionSummaryChunk, Tag("compaction_summary_chunk")]
    | Annotated[UnknownSessionUpdate, Tag(UNKNOWN_TAG)],
    open_union_discriminator("sessionUpdate", "session_update", frozenset(SESSION_UPDATE_TYPES)),
]

_TOOL_CALL_LENIENT = {
    "name": "drop",
    "kind": "drop",
    "status": "drop",
    "title": "drop",
    "content": "items",
    "locations": "items",
    "rawInput": "drop",
    "rawOutput": "drop",
    "_meta": "drop",
}
_CHUNK_LENIENT = {"messageId": "drop", "_meta": "drop"}
LENIENT_FIELDS: dict[str, dict[str, str]] = {
    "user_message_chunk": _CHUNK_LENIENT,
    "agent_message_chunk": _CHUNK_LENIENT,
    "agent_thought_chunk": _CHUNK_LENIENT,
    "tool_call": {k: v for k, v in _TOOL_CALL_LENIENT.items() if k != "title"},
    "tool_call_update": _TOOL_CALL_LENIENT,
    "plan": {"entries": "items", "_meta": "drop"},
    "available_commands_update": {"availableCommands": "items", "_meta": "drop"},
    "current_mode_update": {"_meta": "drop"},
    "config_option_update": {"configOptions": "items", "_meta": "drop"},
    "session_info_update": {"title": "drop", "updatedAt": "drop", "_meta": "drop"},
    "usage_update": {"cost": "drop", "_meta": "drop"},
}
"""The v1 schema's ``x-deserialize-default-on-error`` fields of each update (wire names): an
invalid value reads as absent ("drop"); for ``x-deserialize-skip-invalid-items`` lists an
invalid item is left out ("items")."""

# Built on first use, as the models are (``defer_build``): not at import.
_adapter: TypeAdapter[V1SessionUpdate] = TypeAdapter(
    V1SessionUpdate, config=ConfigDict(defer_build=True)
)
# Per-tag validators, each made on the first use of its tag (the model is built then).
_FAST: dict[str, Callable[[Any], Any]] = {}


def _fast_validator(tag: Any) -> Callable[[Any], Any] | None:
    found = _FAST.get(tag) if type(tag) is str else None
    if found is None:
        model = SESSION_UPDATE_TYPES.get(tag) if type(tag) is str else None
        if model is None:
            return None
        model.model_rebuild()  # builds a deferred model (a no-op once built)
        found = _FAST[tag] = model.__pydantic_validator__.validate_python
    return found


def parse_v1_session_update(data: Any) -> V1SessionUpdate:
    """Parse one v1 ``update`` object; raises ``pydantic.ValidationError`` when malformed."""
    if type(data) is dict:
        fast = _fast_validator(data.get("sessionUpdate"))
        if fast is not None:
            try:
                return cast("V1SessionUpdate", fast(data))
            except ValidationError:
                pass  # re-raised below with the union's error locations
    return _adapter.validate_python(data)


# -- requests and responses --------------------------------------------------------------


class V1RequestPermissionRequest(WireModel):
    """Params of v1 ``session/request_permission``: about one tool call, always."""

    session_id: str
    tool_call: V1ToolCallFields
    options: list[PermissionOption] = Field(min_length=1)


class V1PromptResponse(WireModel):
    """The end of a v1 turn (``usage`` of the unstable schema is kept as an extra field)."""

    stop_reason: str


class V1SessionCapabilities(WireModel):
    list: dict[str, Any] | None = None
    delete: dict[str, Any] | None = None
    additional_directories: dict[str, Any] | None = None
    resume: dict[str, Any] | None = None
    close: dict[str, Any] | None = None


class V1AgentCapabilities(WireModel):
    load_session: bool | None = None
    prompt_capabilities: dict[str, Any] | None = None
    mcp_capabilities: dict[str, Any] | None = None
    session_capabilities: V1SessionCapabilities | None = None
    auth: dict[str, Any] | None = None


class V1InitializeResponse(WireModel):
    protocol_version: int = Field(ge=0, le=65535)
    agent_capabilities: V1AgentCapabilities | None = None
    auth_methods: list[dict[str, Any]] | None = None
    agent_info: Implementation | None = None


class V1NewSessionResponse(WireModel):
    session_id: str
    modes: V1SessionModeState | None = None
    config_options: list[V1SessionConfigOption] | None = None


class V1LoadSessionResponse(WireModel):
    modes: V1SessionModeState | None = None
    config_options: list[V1SessionConfigOption] | None = None


class V1ResumeSessionResponse(V1LoadSessionResponse):
    pass


class V1SetSessionConfigOptionResponse(WireModel):
    config_options: list[V1SessionConfigOption]


def repair(
    validate: Callable[[Any], Any], data: dict[str, Any], rules: dict[str, str]
) -> tuple[Any, list[str]]:
    """``validate(data)``, leaving out what the v1 schema reads as absent when invalid (see
    `LENIENT_FIELDS`): returns the result and what was left out. Raises ``ValidationError``
    when something else is wrong."""
    fixed = dict(data)
    notes: list[str] = []
    for _ in range(50):
        try:
            return validate(fixed), notes
        except ValidationError as exc:
            drop: set[str] = set()
            items: dict[str, set[int]] = {}
            for error in exc.errors():
                loc = error.get("loc", ())
                key = loc[0] if loc else None
                rule = rules.get(key) if isinstance(key, str) else None
                if rule is None or key not in fixed:
                    raise
                value = fixed[key]
                if rule == "items" and isinstance(value, list) and len(loc) > 1:
                    index = loc[1]
                    if isinstance(index, int):
                        items.setdefault(key, set()).add(index)
                        continue
                drop.add(key)
            for key in drop:
                del fixed[key]
                notes.append(f"invalid {key!r} left out")
            for key, bad in items.items():
                if key in fixed:
                    fixed[key] = [v for i, v in enumerate(fixed[key]) if i not in bad]
                    notes.append(f"{len(bad)} invalid item(s) of {key!r} left out")
    raise AssertionError("unreachable: every round removes something")  # pragma: no cover


def parse_v1_session_update_lenient(data: Any) -> tuple[V1SessionUpdate, list[str]]:
    """`parse_v1_session_update`, reading invalid default-on-error fields as absent as the v1
    schema says: returns the update and what was left out (to be reported)."""
    try:
        return parse_v1_session_update(data), []
    except ValidationError:
        tag = data.get("sessionUpdate") if type(data) is dict else None
        rules = LENIENT_FIELDS.get(tag) if isinstance(tag, str) else None
        if rules is None:
            raise
        model = SESSION_UPDATE_TYPES[str(tag)]
        update, notes = repair(model.model_validate, data, rules)
        return cast("V1SessionUpdate", update), notes


def parse_v1_permission_request(data: Any) -> tuple[V1RequestPermissionRequest, list[str]]:
    """A v1 ``session/request_permission``, its ``toolCall`` read as leniently as a
    ``tool_call_update`` (its options never are: an unclear option is no answer)."""
    notes: list[str] = []
    if type(data) is dict and type(data.get("toolCall")) is dict:
        try:
            V1ToolCallFields.model_validate(data["toolCall"])
        except ValidationError:
            call, notes = repair(
                V1ToolCallFields.model_validate, data["toolCall"], _TOOL_CALL_LENIENT
            )
            data = {**data, "toolCall": call.to_wire()}
    return V1RequestPermissionRequest.model_validate(data), notes


_SESSION_SETUP_LENIENT = {"modes": "drop", "configOptions": "items", "_meta": "drop"}
RESPONSE_LENIENT: dict[type[WireModel], dict[str, str]] = {
    V1InitializeResponse: {
        "agentCapabilities": "drop",
        "authMethods": "items",
        "agentInfo": "drop",
        "_meta": "drop",
    },
    V1NewSessionResponse: _SESSION_SETUP_LENIENT,
    V1LoadSessionResponse: _SESSION_SETUP_LENIENT,
    V1ResumeSessionResponse: _SESSION_SETUP_LENIENT,
    V1PromptResponse: {"_meta": "drop"},
    V1SetSessionConfigOptionResponse: {"configOptions": "items", "_meta": "drop"},
}
"""`LENIENT_FIELDS` for the answers the client reads."""


_M = TypeVar("_M", bound=WireModel)


def parse_v1_response(model: type[_M], data: Any) -> tuple[_M, list[str]]:
    """``model.model_validate(data)``, its default-on-error fields read as absent when invalid
    (`RESPONSE_LENIENT`): returns the answer and what was left out."""
    try:
        return model.model_validate(data), []
    except ValidationError:
        rules = RESPONSE_LENIENT.get(model)
        if rules is None or type(data) is not dict:
            raise
        parsed, notes = repair(model.model_validate, data, rules)
        return cast("_M", parsed), notes
