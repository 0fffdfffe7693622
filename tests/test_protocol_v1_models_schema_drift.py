"""Schema-driven checks of the v1 models (acp_notebook._protocol._v1) against the v1 schema the
pinned SDK ships (``schema/v1/schema.json``), as test_protocol_schema_drift.py does for v2.

The v2 models that v1 reuses (content blocks, plan entries, usage, ...) are checked against the
v1 definitions too: a v1 field they lack would fail here."""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest
from pydantic import BaseModel
from test_protocol_schema_drift import UNKNOWN_TAG, union_members

import acp_notebook._protocol as p
from acp_notebook._protocol import UnknownVariant
from acp_notebook._protocol import _v1 as v1
from tests._schema import SCHEMA_PATH

V1_SCHEMA = SCHEMA_PATH.parent.parent / "v1" / "schema.json"


@functools.cache
def defs() -> dict[str, Any]:
    return json.loads(V1_SCHEMA.read_text("utf-8"))["$defs"]  # type: ignore[no-any-return]


def _ref(node: dict[str, Any]) -> str:
    return str(node["$ref"]).rsplit("/", 1)[-1]


def branch_tags(def_name: str, key: str) -> set[str]:
    node = defs()[def_name]
    return {
        b["properties"][key]["const"]
        for b in node.get("oneOf", node.get("anyOf", []))
        if key in b.get("properties", {})
    }


def enum_values(def_name: str) -> set[str]:
    node = defs()[def_name]
    return {b["const"] for b in node.get("oneOf", node.get("anyOf", [])) if "const" in b}


V1_UNIONS = [
    (v1.V1SessionUpdate, "SessionUpdate", "sessionUpdate"),
    (v1.V1ToolCallContent, "ToolCallContent", "type"),
    (v1.V1SessionConfigOption, "SessionConfigOption", "type"),
    (p.ContentBlock, "ContentBlock", "type"),
    (p.RequestPermissionOutcome, "RequestPermissionOutcome", "outcome"),
]


@pytest.mark.parametrize(("union", "def_name", "key"), V1_UNIONS, ids=[u[1] for u in V1_UNIONS])
def test_union_tags_match_the_v1_schema(union: Any, def_name: str, key: str) -> None:
    members = union_members(union)
    expected = branch_tags(def_name, key)
    assert expected
    assert set(members) - {UNKNOWN_TAG} == expected
    # v1 closes these unions (oneOf); ours stay open: an unknown variant is kept, not dropped
    assert issubclass(members[UNKNOWN_TAG], UnknownVariant)


def test_every_v1_session_update_tag_has_a_model_with_that_tag() -> None:
    for tag, model in v1.SESSION_UPDATE_TYPES.items():
        assert model.model_fields["session_update"].default == tag
    assert set(v1.SESSION_UPDATE_TYPES) == branch_tags("SessionUpdate", "sessionUpdate")


def test_stop_reasons_match_the_v1_schema() -> None:
    assert set(v1.STOP_REASONS) == enum_values("StopReason")
    assert set(v1.STOP_REASONS) <= set(p.STOP_REASONS)  # each one means the same in v2


@pytest.mark.parametrize(
    ("ours", "def_name"),
    [
        (p.TOOL_KINDS, "ToolKind"),
        (p.PERMISSION_OPTION_KINDS, "PermissionOptionKind"),
        (p.PLAN_ENTRY_STATUSES, "PlanEntryStatus"),
        (p.PLAN_ENTRY_PRIORITIES, "PlanEntryPriority"),
        (p.NOTICE_SEVERITIES, "NoticeSeverity"),
        (p.COMPACTION_STATUSES, "CompactionStatus"),
    ],
)
def test_v1_enums_are_known_to_the_v2_constants(ours: frozenset[str], def_name: str) -> None:
    assert enum_values(def_name) <= set(ours)


def test_v1_tool_call_statuses_are_v2_statuses() -> None:
    assert enum_values("ToolCallStatus") <= set(p.TOOL_CALL_STATUSES)


MODEL_DEFS: list[tuple[type[BaseModel], list[str], set[str]]] = [
    (v1.V1UserMessageChunk, ["ContentChunk"], {"sessionUpdate"}),
    (v1.V1AgentMessageChunk, ["ContentChunk"], {"sessionUpdate"}),
    (v1.V1AgentThoughtChunk, ["ContentChunk"], {"sessionUpdate"}),
    (v1.V1ToolCall, ["ToolCall"], {"sessionUpdate"}),
    (v1.V1ToolCallUpdate, ["ToolCallUpdate"], {"sessionUpdate"}),
    (v1.V1ToolCallFields, ["ToolCallUpdate"], set()),
    (v1.V1Diff, ["Diff"], {"type"}),
    (p.ContentToolCallContent, ["Content"], {"type"}),
    (p.TerminalToolCallContent, ["Terminal"], {"type"}),
    (p.ToolCallLocation, ["ToolCallLocation"], set()),
    (v1.V1Plan, ["Plan"], {"sessionUpdate"}),
    (p.PlanEntry, ["PlanEntry"], set()),
    (v1.V1AvailableCommandsUpdate, ["AvailableCommandsUpdate"], {"sessionUpdate"}),
    (v1.V1AvailableCommand, ["AvailableCommand"], set()),
    (v1.V1UnstructuredCommandInput, ["UnstructuredCommandInput"], set()),
    (v1.V1CurrentModeUpdate, ["CurrentModeUpdate"], {"sessionUpdate"}),
    (v1.V1SessionMode, ["SessionMode"], set()),
    (v1.V1SessionModeState, ["SessionModeState"], set()),
    (v1.V1ConfigOptionUpdate, ["ConfigOptionUpdate"], {"sessionUpdate"}),
    (v1.V1SessionConfigSelect, ["SessionConfigOption", "SessionConfigSelect"], {"type"}),
    (v1.V1SessionConfigBoolean, ["SessionConfigOption", "SessionConfigBoolean"], {"type"}),
    (v1.V1SessionConfigSelectOption, ["SessionConfigSelectOption"], set()),
    (v1.V1SessionConfigSelectGroup, ["SessionConfigSelectGroup"], set()),
    (p.SessionInfoUpdate, ["SessionInfoUpdate"], {"sessionUpdate"}),
    (p.UsageUpdate, ["UsageUpdate"], {"sessionUpdate"}),
    (p.Cost, ["Cost"], set()),
    (p.Notice, ["Notice"], {"sessionUpdate"}),
    (p.CompactionUpdate, ["CompactionUpdate"], {"sessionUpdate"}),
    (p.CompactionSummaryChunk, ["CompactionSummaryChunk"], {"sessionUpdate"}),
    (p.TextContent, ["TextContent"], {"type"}),
    (p.ImageContent, ["ImageContent"], {"type"}),
    (p.AudioContent, ["AudioContent"], {"type"}),
    (p.ResourceLink, ["ResourceLink"], {"type"}),
    (p.EmbeddedResource, ["EmbeddedResource"], {"type"}),
    (p.TextResourceContents, ["TextResourceContents"], set()),
    (p.BlobResourceContents, ["BlobResourceContents"], set()),
    (p.Annotations, ["Annotations"], set()),
    (p.PermissionOption, ["PermissionOption"], set()),
    (p.SelectedPermissionOutcome, ["SelectedPermissionOutcome"], {"outcome"}),
    (p.RequestPermissionResponse, ["RequestPermissionResponse"], set()),
    (v1.V1RequestPermissionRequest, ["RequestPermissionRequest"], set()),
    (v1.V1PromptResponse, ["PromptResponse"], set()),
    (v1.V1InitializeResponse, ["InitializeResponse"], set()),
    (v1.V1AgentCapabilities, ["AgentCapabilities"], set()),
    (v1.V1SessionCapabilities, ["SessionCapabilities"], set()),
    (p.Implementation, ["Implementation"], set()),
    (v1.V1NewSessionResponse, ["NewSessionResponse"], set()),
    (v1.V1LoadSessionResponse, ["LoadSessionResponse"], set()),
    (v1.V1ResumeSessionResponse, ["ResumeSessionResponse"], set()),
    (v1.V1SetSessionConfigOptionResponse, ["SetSessionConfigOptionResponse"], set()),
]


def schema_properties(def_names: list[str]) -> tuple[set[str], set[str]]:
    props: set[str] = set()
    required: set[str] = set()
    for name in def_names:
        node = defs()[name]
        props |= set(node.get("properties", {}))
        required |= set(node.get("required", []))
        for part in node.get("allOf", []):
            sub_props, sub_required = schema_properties([_ref(part)])
            props |= sub_props
            required |= sub_required
    return props, required


@pytest.mark.parametrize(
    ("model", "def_names", "extra"),
    MODEL_DEFS,
    ids=[f"{m[0].__name__}-{m[1][-1]}" for m in MODEL_DEFS],
)
def test_model_fields_match_the_v1_schema(
    model: type[BaseModel], def_names: list[str], extra: set[str]
) -> None:
    props, required = schema_properties(def_names)
    ours = {(info.alias or name): info for name, info in model.model_fields.items()}
    assert not props - set(ours), f"{model.__name__} lacks v1 fields {props - set(ours)}"
    # (a reused v2 model may know fields v1 has not: they stay unset on v1 traffic)
    if model.__module__.endswith("_v1._models"):
        invented = set(ours) - props - extra - {"_meta"}
        assert not invented, f"{model.__name__} has fields not in the v1 schema: {invented}"
    for key in required - extra:
        assert ours[key].is_required(), f"{model.__name__}.{key} should be required"


def test_the_v1_requests_we_send_match_the_v1_schema() -> None:
    from jsonschema import Draft202012Validator

    def valid(name: str, instance: Any) -> list[str]:
        v = Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": defs()})
        return [e.message for e in v.iter_errors(instance)]

    assert valid("NewSessionRequest", {"cwd": "/w", "mcpServers": []}) == []
    assert valid("NewSessionRequest", {"cwd": "/w"}) != []  # (why we always send mcpServers)
    assert valid("LoadSessionRequest", {"sessionId": "s", "cwd": "/w", "mcpServers": []}) == []
    assert valid("SetSessionModeRequest", {"sessionId": "s", "modeId": "m"}) == []


def test_lenient_fields_are_the_schemas_default_on_error_fields() -> None:
    # LENIENT_FIELDS (what reads as absent when invalid) is the schema's own list, per update
    for branch in defs()["SessionUpdate"]["oneOf"]:
        tag = branch["properties"]["sessionUpdate"]["const"]
        (part,) = branch["allOf"]
        node = defs()[_ref(part)]
        expected = {
            key: "items" if prop.get("x-deserialize-skip-invalid-items") else "drop"
            for key, prop in node.get("properties", {}).items()
            if prop.get("x-deserialize-default-on-error")
        }
        if tag in v1.LENIENT_FIELDS or tag in {"tool_call", "tool_call_update", "plan"}:
            assert v1.LENIENT_FIELDS[tag] == expected, tag
        else:  # the v2 models reused as is (notice, compaction): parsed strictly
            assert set(expected) <= {"_meta", "description", "summary", "error"}, (tag, expected)


def test_response_lenient_fields_are_the_schemas_default_on_error_fields() -> None:
    for model, rules in v1.RESPONSE_LENIENT.items():
        name = model.__name__.removeprefix("V1")
        expected = {
            key: "items" if prop.get("x-deserialize-skip-invalid-items") else "drop"
            for key, prop in defs()[name].get("properties", {}).items()
            if prop.get("x-deserialize-default-on-error")
        }
        assert rules == expected, name
