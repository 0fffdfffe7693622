"""Schema-driven checks: our tags, enums and fields follow the v2 schema's ``$defs``.

Nothing here is hand-copied from the schema; a new variant, field or definition in the
schema makes one of these tests fail.
"""

from __future__ import annotations

from typing import Annotated, Any, get_args, get_origin

import pytest
from _schema import schema
from pydantic import BaseModel, Tag

import acp_notebook._protocol as p
from acp_notebook._protocol import UNKNOWN_TAG, UnknownVariant


def defs() -> dict[str, Any]:
    return schema()["$defs"]  # type: ignore[no-any-return]


def _ref_name(node: dict[str, Any]) -> str:
    ref: str = node["$ref"]
    return ref.rsplit("/", 1)[-1]


def schema_tags(def_name: str, key: str) -> set[str]:
    """The ``const`` values of tag ``key`` in the branches of an open union definition."""
    tags = set()
    for branch in defs()[def_name]["anyOf"]:
        const = branch.get("properties", {}).get(key, {}).get("const")
        if const is not None:
            tags.add(const)
    return tags


def schema_enum(def_name: str) -> set[Any]:
    return {b["const"] for b in defs()[def_name]["anyOf"] if "const" in b}


def union_members(union: Any) -> dict[str, Any]:
    """Tag -> member type of one of our ``Annotated[A | B, Discriminator]`` unions."""
    assert get_origin(union) is Annotated
    members: dict[str, Any] = {}
    for member in get_args(get_args(union)[0]):
        assert get_origin(member) is Annotated
        inner, *metadata = get_args(member)
        tags = [m.tag for m in metadata if isinstance(m, Tag)]
        assert len(tags) == 1
        # a nested union (``state_update``) keeps its own discriminator next to the Tag
        others = tuple(m for m in metadata if not isinstance(m, Tag))
        members[tags[0]] = Annotated[(inner, *others)] if others else inner
    return members


def known_tags(union: Any) -> set[str]:
    return set(union_members(union)) - {UNKNOWN_TAG}


# (our union, schema definition, tag key)
OPEN_UNIONS = [
    (p.SessionUpdate, "SessionUpdate", "sessionUpdate"),
    (p.StateUpdate, "StateUpdate", "state"),
    (p.ToolCallContent, "ToolCallContent", "type"),
    (p.RequestPermissionSubject, "RequestPermissionSubject", "type"),
    (p.RequestPermissionOutcome, "RequestPermissionOutcome", "outcome"),
    (p.ContentBlock, "ContentBlock", "type"),
    (p.DiffChange, "DiffChange", "operation"),
    (p.AuthMethod, "AuthMethod", "type"),
    (p.BackgroundWork, "BackgroundWork", "type"),
    (p.ReplayFrom, "ReplayFrom", "type"),
    (p.SessionConfigOption, "SessionConfigOption", "type"),
    (p.SetSessionConfigOptionRequest, "SetSessionConfigOptionRequest", "type"),
    (p.McpServer, "McpServer", "type"),
    (p.AvailableCommand, "AvailableCommand", "type"),
    (p.AvailableCommandInput, "AvailableCommandInput", "type"),
    (p.PlanUpdateContent, "PlanUpdateContent", "type"),
]


@pytest.mark.parametrize(("union", "def_name", "key"), OPEN_UNIONS, ids=[u[1] for u in OPEN_UNIONS])
def test_union_tags_match_schema(union: Any, def_name: str, key: str) -> None:
    expected = schema_tags(def_name, key)
    assert expected, f"no tags found for {def_name}"
    assert known_tags(union) == expected
    # the schema union is open (it has a branch without a const tag) and so is ours
    assert UNKNOWN_TAG in union_members(union)
    assert issubclass(union_members(union)[UNKNOWN_TAG], UnknownVariant)


def test_every_session_update_tag_maps_to_a_known_model() -> None:
    members = union_members(p.SessionUpdate)
    for tag in schema_tags("SessionUpdate", "sessionUpdate"):
        model = members[tag]
        if tag == "state_update":
            for state, state_model in union_members(model).items():
                if state != UNKNOWN_TAG:
                    assert state_model.model_fields["state"].default == state
                    assert state_model.model_fields["session_update"].default == tag
            continue
        assert issubclass(model, BaseModel) and not issubclass(model, UnknownVariant)
        assert model.model_fields["session_update"].default == tag
        assert p.SESSION_UPDATE_TYPES[tag] is model


@pytest.mark.parametrize(("union", "def_name", "key"), OPEN_UNIONS, ids=[u[1] for u in OPEN_UNIONS])
def test_union_tags_agree_with_model_literals(union: Any, def_name: str, key: str) -> None:
    for tag, model in union_members(union).items():
        if tag == UNKNOWN_TAG or get_origin(model) is Annotated:
            continue
        fields = [f for f in model.model_fields.values() if (f.alias or "") == key]
        assert len(fields) == 1, (model, key)
        assert fields[0].default == tag


def test_registries_match_unions() -> None:
    assert set(p.TOOL_CALL_CONTENT_TYPES) == known_tags(p.ToolCallContent)
    assert set(p.PERMISSION_SUBJECT_TYPES) == known_tags(p.RequestPermissionSubject)
    assert set(p.CONTENT_BLOCK_TYPES) == known_tags(p.ContentBlock)
    assert set(p.DIFF_CHANGE_OPERATIONS) == known_tags(p.DiffChange)
    assert set(p.AUTH_METHOD_TYPES) == known_tags(p.AuthMethod)
    assert set(p.PERMISSION_OUTCOMES) == known_tags(p.RequestPermissionOutcome)
    assert set(p.STATE_UPDATE_TYPES) == known_tags(p.StateUpdate)
    assert set(p.BACKGROUND_WORK_TYPES) == known_tags(p.BackgroundWork)
    assert set(p.CONFIG_OPTION_TYPES) == known_tags(p.SessionConfigOption)
    assert set(p.AVAILABLE_COMMAND_TYPES) == known_tags(p.AvailableCommand)
    assert set(p.SESSION_UPDATE_TYPES) == known_tags(p.SessionUpdate)


@pytest.mark.parametrize(
    ("ours", "def_name"),
    [
        (p.TOOL_KINDS, "ToolKind"),
        (p.TOOL_CALL_STATUSES, "ToolCallStatus"),
        (p.PERMISSION_OPTION_KINDS, "PermissionOptionKind"),
        (p.PLAN_ENTRY_STATUSES, "PlanEntryStatus"),
        (p.PLAN_ENTRY_PRIORITIES, "PlanEntryPriority"),
        (p.DIFF_FILE_TYPES, "DiffFileType"),
        (p.DIFF_PATCH_FORMATS, "DiffPatchFormat"),
        (p.NOTICE_SEVERITIES, "NoticeSeverity"),
        (p.COMPACTION_STATUSES, "CompactionStatus"),
        (p.ErrorCode.KNOWN, "ErrorCode"),
    ],
)
def test_open_enum_constants_match_schema(ours: frozenset[Any], def_name: str) -> None:
    assert set(ours) == schema_enum(def_name)
    # and every one of them is open: the last branch accepts any value of the base type
    assert any("const" not in b for b in defs()[def_name]["anyOf"])


def test_stop_reasons_match_schema() -> None:
    assert set(p.STOP_REASONS) == schema_tags("IdleStateUpdate", "stopReason")


# -- field-level drift -----------------------------------------------------------------------

# model -> ($defs whose properties it carries, extra wire keys such as its union tags)
MODEL_DEFS: list[tuple[type[BaseModel], list[str], set[str]]] = [
    (p.UserMessageChunk, ["ContentChunk"], {"sessionUpdate"}),
    (p.AgentMessageChunk, ["ContentChunk"], {"sessionUpdate"}),
    (p.AgentThoughtChunk, ["ContentChunk"], {"sessionUpdate"}),
    (p.UserMessage, ["UserMessage"], {"sessionUpdate"}),
    (p.AgentMessage, ["AgentMessage"], {"sessionUpdate"}),
    (p.AgentThought, ["AgentThought"], {"sessionUpdate"}),
    (p.RunningStateUpdate, ["RunningStateUpdate"], {"sessionUpdate", "state"}),
    (p.IdleStateUpdate, ["IdleStateUpdate", "ErrorStopReason"], {"sessionUpdate", "state"}),
    (p.RequiresActionStateUpdate, ["RequiresActionStateUpdate"], {"sessionUpdate", "state"}),
    (p.BackgroundTerminal, ["BackgroundTerminal"], {"type"}),
    (p.BackgroundToolCall, ["BackgroundToolCall"], {"type"}),
    (p.ToolCallUpdate, ["ToolCallUpdate"], {"sessionUpdate"}),
    (p.ToolCallFields, ["ToolCallUpdate"], set()),
    (p.ToolCallContentChunk, ["ToolCallContentChunk"], {"sessionUpdate"}),
    (p.TerminalUpdate, ["TerminalUpdate"], {"sessionUpdate"}),
    (p.TerminalOutputChunk, ["TerminalOutputChunk"], {"sessionUpdate"}),
    (p.PlanUpdate, ["PlanUpdate"], {"sessionUpdate"}),
    (p.AvailableCommandsUpdate, ["AvailableCommandsUpdate"], {"sessionUpdate"}),
    (p.ConfigOptionUpdate, ["ConfigOptionUpdate"], {"sessionUpdate"}),
    (p.SessionInfoUpdate, ["SessionInfoUpdate"], {"sessionUpdate"}),
    (p.UsageUpdate, ["UsageUpdate"], {"sessionUpdate"}),
    (p.Notice, ["Notice"], {"sessionUpdate"}),
    (p.CompactionUpdate, ["CompactionUpdate"], {"sessionUpdate"}),
    (p.CompactionSummaryChunk, ["CompactionSummaryChunk"], {"sessionUpdate"}),
    (p.UpdateSessionNotification, ["UpdateSessionNotification"], set()),
    (p.PlanItems, ["PlanItems"], {"type"}),
    (p.PlanEntry, ["PlanEntry"], set()),
    (p.Cost, ["Cost"], set()),
    (p.TerminalOutput, ["TerminalOutput"], set()),
    (p.TerminalExitStatus, ["TerminalExitStatus"], set()),
    (p.TerminalSize, ["TerminalSize"], set()),
    (p.TerminalCapabilities, ["TerminalCapabilities"], set()),
    (p.TerminalCancelCapabilities, ["TerminalCancelCapabilities"], set()),
    (p.ToolCallCapabilities, ["ToolCallCapabilities"], set()),
    (p.ToolCallCancelCapabilities, ["ToolCallCancelCapabilities"], set()),
    (p.ToolCallLocation, ["ToolCallLocation"], set()),
    (p.ContentToolCallContent, ["Content"], {"type"}),
    (p.DiffToolCallContent, ["Diff"], {"type"}),
    (p.TerminalToolCallContent, ["Terminal"], {"type"}),
    (p.DiffPatch, ["DiffPatch"], set()),
    (p.DiffAdd, ["DiffChange", "DiffPathChange"], {"operation"}),
    (p.DiffDelete, ["DiffChange", "DiffPathChange"], {"operation"}),
    (p.DiffModify, ["DiffChange", "DiffPathChange"], {"operation"}),
    (p.DiffMove, ["DiffChange", "DiffPathPairChange"], {"operation"}),
    (p.DiffCopy, ["DiffChange", "DiffPathPairChange"], {"operation"}),
    (p.TextContent, ["TextContent"], {"type"}),
    (p.ImageContent, ["ImageContent"], {"type"}),
    (p.AudioContent, ["AudioContent"], {"type"}),
    (p.ResourceLink, ["ResourceLink"], {"type"}),
    (p.EmbeddedResource, ["EmbeddedResource"], {"type"}),
    (p.TextResourceContents, ["TextResourceContents"], set()),
    (p.BlobResourceContents, ["BlobResourceContents"], set()),
    (p.Annotations, ["Annotations"], set()),
    (p.Icon, ["Icon"], set()),
    (p.ToolCallPermissionSubject, ["ToolCallPermissionSubject"], {"type"}),
    (p.CommandPermissionSubject, ["CommandPermissionSubject"], {"type"}),
    (p.PermissionOption, ["PermissionOption"], set()),
    (p.RequestPermissionRequest, ["RequestPermissionRequest"], set()),
    (p.RequestPermissionResponse, ["RequestPermissionResponse"], set()),
    (p.SelectedPermissionOutcome, ["SelectedPermissionOutcome"], {"outcome"}),
    (p.CancelledPermissionOutcome, ["CancelledPermissionOutcome"], {"outcome"}),
    (p.Implementation, ["Implementation"], set()),
    (p.ClientCapabilities, ["ClientCapabilities"], set()),
    (p.ClientAuthCapabilities, ["ClientAuthCapabilities"], set()),
    (p.TerminalAuthCapabilities, ["TerminalAuthCapabilities"], set()),
    (p.ElicitationCapabilities, ["ElicitationCapabilities"], set()),
    (p.ElicitationFormCapabilities, ["ElicitationFormCapabilities"], set()),
    (p.ElicitationUrlCapabilities, ["ElicitationUrlCapabilities"], set()),
    (p.AgentCapabilities, ["AgentCapabilities"], set()),
    (p.AgentAuthCapabilities, ["AgentAuthCapabilities"], set()),
    (p.SessionCapabilities, ["SessionCapabilities"], set()),
    (p.PromptCapabilities, ["PromptCapabilities"], set()),
    (p.PromptImageCapabilities, ["PromptImageCapabilities"], set()),
    (p.PromptAudioCapabilities, ["PromptAudioCapabilities"], set()),
    (p.PromptEmbeddedContextCapabilities, ["PromptEmbeddedContextCapabilities"], set()),
    (p.McpCapabilities, ["McpCapabilities"], set()),
    (p.McpStdioCapabilities, ["McpStdioCapabilities"], set()),
    (p.McpHttpCapabilities, ["McpHttpCapabilities"], set()),
    (p.SessionDeleteCapabilities, ["SessionDeleteCapabilities"], set()),
    (
        p.SessionAdditionalDirectoriesCapabilities,
        ["SessionAdditionalDirectoriesCapabilities"],
        set(),
    ),
    (p.AuthMethodAgent, ["AuthMethodAgent"], {"type"}),
    (p.AuthMethodTerminal, ["AuthMethodTerminal"], {"type"}),
    (p.EnvVariable, ["EnvVariable"], set()),
    (p.InitializeRequest, ["InitializeRequest"], set()),
    (p.InitializeResponse, ["InitializeResponse"], set()),
    (p.LoginAuthRequest, ["LoginAuthRequest"], set()),
    (p.LoginAuthResponse, ["LoginAuthResponse"], set()),
    (p.LogoutAuthRequest, ["LogoutAuthRequest"], set()),
    (p.LogoutAuthResponse, ["LogoutAuthResponse"], set()),
    (p.HttpHeader, ["HttpHeader"], set()),
    (p.McpServerHttp, ["McpServerHttp"], {"type"}),
    (p.McpServerStdio, ["McpServerStdio"], {"type"}),
    (p.NewSessionRequest, ["NewSessionRequest"], set()),
    (p.NewSessionResponse, ["NewSessionResponse"], set()),
    (p.SessionInfo, ["SessionInfo"], set()),
    (p.ListSessionsRequest, ["ListSessionsRequest"], set()),
    (p.ListSessionsResponse, ["ListSessionsResponse"], set()),
    (p.DeleteSessionRequest, ["DeleteSessionRequest"], set()),
    (p.DeleteSessionResponse, ["DeleteSessionResponse"], set()),
    (p.ReplayFromStart, ["ReplayFromStart"], {"type"}),
    (p.ResumeSessionRequest, ["ResumeSessionRequest"], set()),
    (p.ResumeSessionResponse, ["ResumeSessionResponse"], set()),
    (p.PromptRequest, ["PromptRequest"], set()),
    (p.PromptResponse, ["PromptResponse"], set()),
    (p.CancelSessionNotification, ["CancelSessionNotification"], set()),
    (p.CloseSessionRequest, ["CloseSessionRequest"], set()),
    (p.CloseSessionResponse, ["CloseSessionResponse"], set()),
    (p.SetSessionConfigOptionIdRequest, ["SetSessionConfigOptionRequest"], {"type", "value"}),
    (
        p.SetSessionConfigOptionBooleanRequest,
        ["SetSessionConfigOptionRequest"],
        {"type", "value"},
    ),
    (p.SetSessionConfigOptionResponse, ["SetSessionConfigOptionResponse"], set()),
    (p.SessionConfigSelect, ["SessionConfigOption", "SessionConfigSelect"], {"type"}),
    (p.SessionConfigBoolean, ["SessionConfigOption", "SessionConfigBoolean"], {"type"}),
    (p.SessionConfigSelectOption, ["SessionConfigSelectOption"], set()),
    (p.SessionConfigSelectGroup, ["SessionConfigSelectGroup"], set()),
    (p.Command, ["Command"], {"type"}),
    (p.TextCommandInput, ["TextCommandInput"], {"type"}),
    (p.CancelTerminalRequest, ["CancelTerminalRequest"], set()),
    (p.CancelTerminalResponse, ["CancelTerminalResponse"], set()),
    (p.CancelToolCallRequest, ["CancelToolCallRequest"], set()),
    (p.CancelToolCallResponse, ["CancelToolCallResponse"], set()),
    (p.CancelRequestNotification, ["CancelRequestNotification"], set()),
    (p.Error, ["Error"], set()),
    (p.UnsupportedProtocolVersionErrorData, ["UnsupportedProtocolVersionErrorData"], set()),
    (p.SessionNotFoundErrorData, ["SessionNotFoundErrorData"], set()),
]

# Required in the schema but deliberately optional here (accepted from older agents).
LENIENT_REQUIRED = {(p.PromptResponse, "messageId")}

# $defs we do not model as a class of their own, with the reason.
NOT_MODELLED = {
    # scalar aliases: plain ``str`` / ``int`` fields
    "SessionId", "ToolCallId", "MediaType", "AbsolutePath", "TerminalId", "PermissionOptionId",
    "ElicitationId", "ProtocolVersion", "AuthMethodId", "SessionConfigId", "SessionConfigValueId",
    "SessionConfigGroupId", "SessionListCursor", "MessageId", "PlanId", "CompactionId", "RequestId",
    # open string enums: ``str`` fields plus a frozenset of known values
    "ToolKind", "ToolCallStatus", "Role", "IconTheme", "DiffFileType", "DiffPatchFormat",
    "PermissionOptionKind", "SessionConfigOptionCategory", "PlanEntryPriority", "PlanEntryStatus",
    "NoticeSeverity", "CompactionStatus", "ErrorCode", "StringFormat",
    # unions modelled as Annotated unions (checked in OPEN_UNIONS) or inline unions
    "SessionUpdate", "StateUpdate", "ToolCallContent", "RequestPermissionSubject",
    "RequestPermissionOutcome", "ContentBlock", "DiffChange", "AuthMethod", "BackgroundWork",
    "ReplayFrom", "SessionConfigOption", "SetSessionConfigOptionRequest", "McpServer",
    "AvailableCommand", "AvailableCommandInput", "PlanUpdateContent", "EmbeddedResourceResource",
    "SessionConfigSelectOptions", "ErrorData",
    # shapes merged into the variant models above
    "ContentChunk", "DiffPathChange", "DiffPathPairChange", "ErrorStopReason",
    "SessionConfigSelect", "SessionConfigBoolean",
    # JSON-RPC envelopes (layer 2 works on plain dicts) and extension payloads
    "AgentRequest", "AgentResponse", "AgentNotification", "ClientRequest", "ClientResponse",
    "ClientNotification", "ExtRequest", "ExtResponse", "ExtNotification",
    # elicitation (not in our scope; unknown requests are answered -32601)
    "CreateElicitationRequest", "CreateElicitationResponse", "CompleteElicitationNotification",
    "ElicitationAcceptAction", "ElicitationContentValue", "ElicitationFormMode",
    "ElicitationPropertySchema", "ElicitationRequestScope", "ElicitationSchema",
    "ElicitationSchemaType", "ElicitationSessionScope", "ElicitationUrlMode", "EnumOption",
    "StringPropertySchema", "NumberPropertySchema", "IntegerPropertySchema",
    "BooleanPropertySchema", "MultiSelectPropertySchema", "MultiSelectItems",
    "StringMultiSelectItems", "TitledMultiSelectItems",
}  # fmt: skip


def schema_properties(def_names: list[str]) -> tuple[set[str], set[str]]:
    props: set[str] = set()
    required: set[str] = set()
    for name in def_names:
        node = defs()[name]
        props |= set(node.get("properties", {}))
        required |= set(node.get("required", []))
        for part in node.get("allOf", []):
            sub_props, sub_required = schema_properties([_ref_name(part)])
            props |= sub_props
            required |= sub_required
    return props, required


@pytest.mark.parametrize(
    ("model", "def_names", "extra"), MODEL_DEFS, ids=[m[0].__name__ for m in MODEL_DEFS]
)
def test_model_fields_match_schema(
    model: type[BaseModel], def_names: list[str], extra: set[str]
) -> None:
    props, required = schema_properties(def_names)
    ours = {(info.alias or name): info for name, info in model.model_fields.items()}
    missing = props - set(ours)
    assert not missing, f"{model.__name__} lacks schema fields {missing}"
    invented = set(ours) - props - extra - {"_meta"}
    assert not invented, f"{model.__name__} has fields not in the schema: {invented}"
    for key in required - extra:
        if (model, key) in LENIENT_REQUIRED:
            continue
        assert ours[key].is_required(), f"{model.__name__}.{key} should be required"
    for key in extra:
        assert key in ours


def test_every_schema_definition_is_modelled_or_listed() -> None:
    modelled = {name for _, names, _ in MODEL_DEFS for name in names}
    unaccounted = set(defs()) - modelled - NOT_MODELLED
    assert not unaccounted, f"new $defs in the schema: {sorted(unaccounted)}"
    stale = NOT_MODELLED - set(defs())
    assert not stale, f"listed $defs no longer in the schema: {sorted(stale)}"
