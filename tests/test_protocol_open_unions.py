"""Open unions keep unknown variants verbatim; malformed known variants are rejected."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from _schema import assert_valid
from pydantic import TypeAdapter, ValidationError

from acp_notebook._protocol import (
    AuthMethod,
    ContentBlock,
    IdleStateUpdate,
    InitializeResponse,
    PermissionOption,
    PlanUpdate,
    RequestPermissionRequest,
    RequestPermissionResponse,
    ResumeSessionRequest,
    SetSessionConfigOptionRequest,
    TerminalUpdate,
    ToolCallUpdate,
    UnknownAuthMethod,
    UnknownAvailableCommand,
    UnknownBackgroundWork,
    UnknownContentBlock,
    UnknownDiffChange,
    UnknownMcpServer,
    UnknownPermissionOutcome,
    UnknownPermissionSubject,
    UnknownPlanUpdateContent,
    UnknownReplayFrom,
    UnknownSessionConfigOption,
    UnknownSessionUpdate,
    UnknownSetSessionConfigOptionRequest,
    UnknownStateUpdate,
    UnknownToolCallContent,
    UnknownVariant,
    UpdateSessionNotification,
    is_custom_value,
    parse_session_update,
)

CUSTOM_PAYLOAD = {"nested": {"list": [1, 2.5, None, True], "text": "ü"}, "n": None}


# (wire session update, getter of the unknown part, expected class)
UNKNOWN_IN_UPDATES: list[tuple[dict[str, Any], Any, type[UnknownVariant]]] = [
    (
        {"sessionUpdate": "_acme_progress", "percent": 40, "extra": CUSTOM_PAYLOAD},
        lambda u: u,
        UnknownSessionUpdate,
    ),
    (
        {"sessionUpdate": "plan_removed", "planId": "plan-1"},  # a future, non-custom tag
        lambda u: u,
        UnknownSessionUpdate,
    ),
    (
        {"sessionUpdate": "state_update", "state": "paused", "reason": "_user"},
        lambda u: u,
        UnknownStateUpdate,
    ),
    (
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "c1",
            "content": [{"type": "_acme_chart", "series": [1, 2, 3], "meta": CUSTOM_PAYLOAD}],
        },
        lambda u: u.content[0],
        UnknownToolCallContent,
    ),
    (
        {
            "sessionUpdate": "tool_call_content_chunk",
            "toolCallId": "c1",
            "content": {
                "type": "diff",
                "changes": [{"operation": "_chmod", "path": "/p/run.sh", "mode": "0755"}],
            },
        },
        lambda u: u.content.changes[0],
        UnknownDiffChange,
    ),
    (
        {
            "sessionUpdate": "agent_message_chunk",
            "messageId": "m1",
            "content": {"type": "_acme_math", "latex": "x^2", "extra": CUSTOM_PAYLOAD},
        },
        lambda u: u.content,
        UnknownContentBlock,
    ),
    (
        {
            "sessionUpdate": "state_update",
            "state": "idle",
            "stopReason": "end_turn",
            "background": [{"type": "_acme_job", "jobId": "j1"}],
        },
        lambda u: u.background[0],
        UnknownBackgroundWork,
    ),
    (
        {
            "sessionUpdate": "plan_update",
            "plan": {"type": "markdown", "planId": "p2", "markdown": "- [ ] step"},
        },
        lambda u: u.plan,
        UnknownPlanUpdateContent,
    ),
    (
        {
            "sessionUpdate": "available_commands_update",
            "availableCommands": [
                {"type": "_acme_macro", "name": "deploy", "description": "Deploy", "steps": 3}
            ],
        },
        lambda u: u.available_commands[0],
        UnknownAvailableCommand,
    ),
    (
        {
            "sessionUpdate": "config_option_update",
            "configOptions": [
                {"type": "_slider", "configId": "t", "name": "Temperature", "min": 0, "max": 1}
            ],
        },
        lambda u: u.config_options[0],
        UnknownSessionConfigOption,
    ),
]


@pytest.mark.parametrize(
    "case", UNKNOWN_IN_UPDATES, ids=[c[2].__name__ for c in UNKNOWN_IN_UPDATES]
)
def test_unknown_variant_in_update_is_kept_verbatim(
    case: tuple[dict[str, Any], Any, type[UnknownVariant]],
) -> None:
    payload, get_part, unknown_class = case
    assert_valid("SessionUpdate", payload)
    original = copy.deepcopy(payload)
    update = parse_session_update(payload)
    part = get_part(update)
    assert type(part) is unknown_class
    assert update.to_wire() == original
    # and inside the notification envelope
    params = {"sessionId": "s", "update": original}
    assert UpdateSessionNotification.from_wire(params).to_wire() == params


def test_unknown_keeps_raw_payload_and_tag() -> None:
    payload = {"sessionUpdate": "_acme_progress", "percent": 40, "extra": CUSTOM_PAYLOAD}
    update = parse_session_update(copy.deepcopy(payload))
    assert isinstance(update, UnknownSessionUpdate)
    assert update.raw == payload
    assert update.tag == "_acme_progress"
    assert update.session_update == "_acme_progress"
    assert update.to_wire() == payload
    assert is_custom_value(update.tag)


def test_unknown_state_reports_state_update_tag() -> None:
    update = parse_session_update({"sessionUpdate": "state_update", "state": "paused"})
    assert isinstance(update, UnknownStateUpdate)
    assert (update.session_update, update.tag) == ("state_update", "paused")


def test_unknown_variant_instance_can_be_reused_in_a_parent() -> None:
    unknown = parse_session_update({"sessionUpdate": "state_update", "state": "paused"})
    note = UpdateSessionNotification(session_id="s", update=unknown)
    assert note.update is unknown
    chart = UnknownToolCallContent(raw={"type": "_chart", "points": [1]})
    update = ToolCallUpdate(tool_call_id="c", content=[chart])
    assert update.to_wire()["content"] == [{"type": "_chart", "points": [1]}]


@pytest.mark.parametrize(
    ("type_name", "adapter_type", "payload", "unknown_class"),
    [
        (
            "AuthMethod",
            AuthMethod,
            {"type": "_oauth", "methodId": "o", "name": "OAuth", "issuer": "x"},
            UnknownAuthMethod,
        ),
        (
            "ContentBlock",
            ContentBlock,
            {"type": "video", "url": "https://x/v.mp4"},
            UnknownContentBlock,
        ),
        (
            "SetSessionConfigOptionRequest",
            SetSessionConfigOptionRequest,
            {"sessionId": "s", "configId": "t", "type": "_number", "value": 0.7},
            UnknownSetSessionConfigOptionRequest,
        ),
    ],
)
def test_other_open_unions_keep_unknown(
    type_name: str, adapter_type: Any, payload: dict[str, Any], unknown_class: type[UnknownVariant]
) -> None:
    assert_valid(type_name, payload)
    adapter: TypeAdapter[Any] = TypeAdapter(adapter_type)
    value: Any = adapter.validate_python(copy.deepcopy(payload))
    assert type(value) is unknown_class
    assert value.to_wire() == payload


def test_unknown_auth_method_in_initialize_response() -> None:
    payload = {
        "protocolVersion": 2,
        "info": {"name": "a", "version": "1"},
        "authMethods": [
            {"type": "agent", "methodId": "login", "name": "Log in"},
            {"type": "_oauth", "methodId": "oauth", "name": "OAuth", "issuer": "x"},
        ],
    }
    response = InitializeResponse.from_wire(copy.deepcopy(payload))
    assert response.auth_methods is not None
    unknown = response.auth_methods[1]
    assert isinstance(unknown, UnknownAuthMethod)
    assert (unknown.method_id, unknown.name) == ("oauth", "OAuth")
    assert response.to_wire() == payload


def test_unknown_permission_subject_and_outcome() -> None:
    request = {
        "sessionId": "s",
        "title": "Call the MCP tool?",
        "subject": {"type": "_mcp_tool", "server": "files", "tool": "rm"},
        "options": [{"optionId": "ok", "name": "OK", "kind": "_allow_for_a_day"}],
    }
    assert_valid("RequestPermissionRequest", request)
    parsed = RequestPermissionRequest.from_wire(copy.deepcopy(request))
    assert isinstance(parsed.subject, UnknownPermissionSubject)
    assert parsed.options[0].kind == "_allow_for_a_day"
    assert parsed.to_wire() == request

    response = {"outcome": {"outcome": "_deferred", "until": "tomorrow"}}
    assert_valid("RequestPermissionResponse", response)
    outcome = RequestPermissionResponse.from_wire(copy.deepcopy(response)).outcome
    assert isinstance(outcome, UnknownPermissionOutcome)
    assert outcome.tag == "_deferred"


def test_unknown_replay_from_and_mcp_server() -> None:
    payload = {
        "sessionId": "s",
        "cwd": "/p",
        "replayFrom": {"type": "message", "messageId": "m7"},
        "mcpServers": [{"type": "sse", "name": "old", "url": "https://x"}],
    }
    assert_valid("ResumeSessionRequest", payload)
    request = ResumeSessionRequest.from_wire(copy.deepcopy(payload))
    assert isinstance(request.replay_from, UnknownReplayFrom)
    assert request.mcp_servers is not None
    assert isinstance(request.mcp_servers[0], UnknownMcpServer)
    assert request.to_wire() == payload


@pytest.mark.parametrize(
    "payload",
    [
        {"sessionUpdate": "tool_call_update", "toolCallId": "c", "kind": "_acme_deploy"},
        {"sessionUpdate": "tool_call_update", "toolCallId": "c", "status": "blocked"},
        {"sessionUpdate": "state_update", "state": "idle", "stopReason": "budget_exhausted"},
        {
            "sessionUpdate": "plan_update",
            "plan": {
                "type": "items",
                "planId": "p",
                "entries": [{"content": "x", "priority": "urgent", "status": "_waiting"}],
            },
        },
        {
            "sessionUpdate": "tool_call_content_chunk",
            "toolCallId": "c",
            "content": {
                "type": "diff",
                "changes": [{"operation": "add", "path": "/p/s", "fileType": "_socket"}],
                "patch": {"format": "_unified", "text": "--- a"},
            },
        },
        {"sessionUpdate": "notice", "severity": "_debug", "title": "t"},
        {"sessionUpdate": "compaction_update", "compactionId": "c", "status": "_queued"},
    ],
)
def test_open_string_enums_keep_unknown_values(payload: dict[str, Any]) -> None:
    assert_valid("SessionUpdate", payload)
    update = parse_session_update(copy.deepcopy(payload))
    assert not isinstance(update, UnknownVariant)
    assert update.to_wire() == payload


def test_unknown_fields_of_known_models_are_kept() -> None:
    payload = {
        "sessionUpdate": "terminal_update",
        "terminalId": "t",
        "futureField": {"a": 1},
        "output": {"data": "", "encoding": "base64"},
    }
    update = parse_session_update(copy.deepcopy(payload))
    assert isinstance(update, TerminalUpdate)
    assert update.model_extra == {"futureField": {"a": 1}}
    assert update.to_wire() == payload


def test_permission_option_kind_is_open() -> None:
    option = PermissionOption(option_id="x", name="Later", kind="_snooze")
    assert option.to_wire() == {"optionId": "x", "name": "Later", "kind": "_snooze"}


# -- malformed known variants ----------------------------------------------------------------

MALFORMED: list[tuple[dict[str, Any], str]] = [
    ({"sessionUpdate": "terminal_output_chunk", "terminalId": "t"}, "data"),
    ({"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": 12}, "data"),
    ({"sessionUpdate": "tool_call_update", "toolCallId": "c", "status": 5}, "status"),
    ({"sessionUpdate": "tool_call_update", "status": "pending"}, "toolCallId"),
    (
        {"sessionUpdate": "tool_call_update", "toolCallId": "c", "content": [{"type": "diff"}]},
        "changes",
    ),
    (
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "c",
            "content": [{"type": "diff", "changes": [{"operation": "move", "path": "/b"}]}],
        },
        "oldPath",
    ),
    (
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "c",
            "locations": [{"path": "/a", "line": 0}],
        },
        "line",
    ),
    (
        {"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": {"type": "text"}},
        "text",
    ),
    (
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}},
        "messageId",
    ),
    (
        {
            "sessionUpdate": "user_message",
            "messageId": "m",
            "content": [{"type": "image", "data": "AA=="}],
        },
        "mimeType",
    ),
    ({"sessionUpdate": "state_update", "state": "idle", "stopReason": 5}, "stopReason"),
    (
        {"sessionUpdate": "terminal_update", "terminalId": "t", "size": {"cols": 0, "rows": 1}},
        "cols",
    ),
    (
        {"sessionUpdate": "terminal_update", "terminalId": "t", "exitStatus": {"exitCode": "1"}},
        "exitCode",
    ),
    ({"sessionUpdate": "terminal_update", "terminalId": "t", "output": {}}, "data"),
    ({"sessionUpdate": "usage_update", "used": -1, "size": 10}, "used"),
    ({"sessionUpdate": "notice", "severity": "info", "title": ""}, "title"),
    ({"sessionUpdate": "plan_update", "plan": {"type": "items", "entries": []}}, "planId"),
    (
        {
            "sessionUpdate": "config_option_update",
            "configOptions": [
                {"type": "boolean", "configId": "x", "name": "X", "currentValue": "yes"}
            ],
        },
        "currentValue",
    ),
    (
        {
            "sessionUpdate": "available_commands_update",
            "availableCommands": [{"type": "command", "name": "x"}],
        },
        "description",
    ),
]


@pytest.mark.parametrize(("payload", "field"), MALFORMED)
def test_malformed_known_variant_is_rejected_naming_the_field(
    payload: dict[str, Any], field: str
) -> None:
    with pytest.raises(ValidationError) as info:
        parse_session_update(payload)
    locations = [err["loc"] for err in info.value.errors()]
    assert any(field in loc for loc in locations), locations
    assert field in str(info.value)


@pytest.mark.parametrize(
    "payload",
    [
        {"terminalId": "t", "data": "AA=="},
        {"sessionUpdate": 5},
        {"sessionUpdate": None},
        ["not", "an", "object"],
        "agent_message_chunk",
    ],
)
def test_missing_or_bad_tag_is_rejected(payload: Any) -> None:
    with pytest.raises(ValidationError, match="sessionUpdate"):
        parse_session_update(payload)


def test_state_update_without_state_is_rejected() -> None:
    with pytest.raises(ValidationError, match="'state' tag is missing") as info:
        parse_session_update({"sessionUpdate": "state_update"})
    assert info.value.errors()[0]["loc"] == ("state_update",)


def test_malformed_permission_subject_is_rejected() -> None:
    payload = {
        "sessionId": "s",
        "title": "Run?",
        "subject": {"type": "command", "command": "ls"},
        "options": [{"optionId": "a", "name": "A", "kind": "allow_once"}],
    }
    with pytest.raises(ValidationError, match="cwd"):
        RequestPermissionRequest.from_wire(payload)
    with pytest.raises(ValidationError, match="optionId"):
        RequestPermissionResponse.from_wire({"outcome": {"outcome": "selected"}})
    with pytest.raises(ValidationError, match="options"):
        RequestPermissionRequest.from_wire({"sessionId": "s", "title": "t", "options": []})


def test_malformed_known_is_never_downgraded_to_unknown() -> None:
    # Same payload with an unknown tag parses; with the known tag it must fail.
    body = {"terminalId": "t"}
    assert isinstance(
        parse_session_update({"sessionUpdate": "_terminal_output_chunk", **body}),
        UnknownSessionUpdate,
    )
    with pytest.raises(ValidationError):
        parse_session_update({"sessionUpdate": "terminal_output_chunk", **body})


def test_idle_error_stop_reason_parses_error_object() -> None:
    update = parse_session_update(
        {
            "sessionUpdate": "state_update",
            "state": "idle",
            "stopReason": "error",
            "error": {"code": -32000, "message": "auth required", "data": {"hint": "login"}},
        }
    )
    assert isinstance(update, IdleStateUpdate)
    assert update.error is not None and update.error.code == -32000
    assert update.error.data == {"hint": "login"}


def test_plan_update_item_fields_typed() -> None:
    with pytest.raises(ValidationError, match="priority"):
        PlanUpdate.from_wire(
            {
                "plan": {
                    "type": "items",
                    "planId": "p",
                    "entries": [{"content": "x", "status": "pending"}],
                }
            }
        )
