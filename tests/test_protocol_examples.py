"""Realistic wire examples: each parses into the expected model, round-trips through
``to_wire()`` unchanged and is valid against the v2 JSON Schema."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from _schema import assert_valid, schema

from acp_notebook._protocol import (
    AgentMessage,
    AgentMessageChunk,
    AgentThought,
    AgentThoughtChunk,
    AvailableCommandsUpdate,
    BackgroundTerminal,
    CommandPermissionSubject,
    CompactionSummaryChunk,
    CompactionUpdate,
    ConfigOptionUpdate,
    ContentToolCallContent,
    DiffModify,
    DiffToolCallContent,
    IdleStateUpdate,
    InitializeResponse,
    Notice,
    PlanItems,
    PlanUpdate,
    RequestPermissionRequest,
    RequestPermissionResponse,
    RequiresActionStateUpdate,
    RunningStateUpdate,
    SelectedPermissionOutcome,
    SessionInfoUpdate,
    TerminalOutputChunk,
    TerminalToolCallContent,
    TerminalUpdate,
    ToolCallContentChunk,
    ToolCallPermissionSubject,
    ToolCallUpdate,
    UpdateSessionNotification,
    UsageUpdate,
    UserMessage,
    UserMessageChunk,
    parse_session_update,
)

CONFIG_GIT_PATCH = (
    "diff --git /home/user/project/src/config.json /home/user/project/src/config.json\n"
    "--- /home/user/project/src/config.json\n"
    "+++ /home/user/project/src/config.json\n"
    "@@ -1,3 +1,3 @@\n"
    ' {\n-  "debug": false\n+  "debug": true\n }\n'
)

# (wire payload, expected model) for every session update variant of the stable schema.
UPDATE_EXAMPLES: list[tuple[dict[str, Any], type]] = [
    (
        {
            "sessionUpdate": "user_message_chunk",
            "messageId": "user-1",
            "content": {"type": "text", "text": "Explain this project"},
        },
        UserMessageChunk,
    ),
    (
        {
            "sessionUpdate": "user_message",
            "messageId": "user-1",
            "content": [
                {"type": "text", "text": "Explain this project"},
                {
                    "type": "resource_link",
                    "name": "main.py",
                    "uri": "file:///home/user/project/main.py",
                    "mimeType": "text/x-python",
                    "size": 1234,
                },
                {
                    "type": "resource",
                    "resource": {
                        "uri": "file:///home/user/project/README.md",
                        "text": "# Project\n",
                        "mimeType": "text/markdown",
                    },
                },
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            ],
        },
        UserMessage,
    ),
    (
        {
            "sessionUpdate": "agent_message_chunk",
            "messageId": "assistant-1",
            "content": {"type": "text", "text": "Hello"},
        },
        AgentMessageChunk,
    ),
    (
        {
            "sessionUpdate": "agent_message",
            "messageId": "assistant-1",
            "content": [
                {
                    "type": "text",
                    "text": "Done.",
                    "annotations": {"audience": ["user"], "priority": 0.5},
                }
            ],
            "_meta": {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
        },
        AgentMessage,
    ),
    (
        {
            "sessionUpdate": "agent_thought_chunk",
            "messageId": "thought-1",
            "content": {"type": "text", "text": "Looking at the tests first"},
        },
        AgentThoughtChunk,
    ),
    (
        {"sessionUpdate": "agent_thought", "messageId": "thought-1", "content": None},
        AgentThought,
    ),
    ({"sessionUpdate": "state_update", "state": "running"}, RunningStateUpdate),
    (
        {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"},
        IdleStateUpdate,
    ),
    (
        {"sessionUpdate": "state_update", "state": "idle", "stopReason": "_term2_error"},
        IdleStateUpdate,
    ),
    (
        {
            "sessionUpdate": "state_update",
            "state": "idle",
            "stopReason": "error",
            "error": {"code": -32603, "message": "model backend unavailable"},
        },
        IdleStateUpdate,
    ),
    (
        {
            "sessionUpdate": "state_update",
            "state": "idle",
            "stopReason": "end_turn",
            "background": [
                {"type": "terminal", "terminalId": "term_001"},
                {"type": "tool_call", "toolCallId": "call_002"},
            ],
        },
        IdleStateUpdate,
    ),
    ({"sessionUpdate": "state_update", "state": "requires_action"}, RequiresActionStateUpdate),
    (
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "call_001",
            "title": "Edit config.json",
            "kind": "edit",
            "status": "in_progress",
            "content": [
                {
                    "type": "content",
                    "content": {"type": "text", "text": "Analysis complete. Found 3 issues."},
                },
                {
                    "type": "diff",
                    "changes": [
                        {
                            "operation": "modify",
                            "path": "/home/user/project/src/config.json",
                            "fileType": "text",
                            "mimeType": "application/json",
                        },
                        {
                            "operation": "move",
                            "oldPath": "/home/user/project/a.txt",
                            "path": "/home/user/project/b.txt",
                        },
                    ],
                    "patch": {"format": "git_patch", "text": CONFIG_GIT_PATCH},
                },
                {
                    "type": "diff",
                    "changes": [
                        {
                            "operation": "modify",
                            "path": "/home/user/project/assets/logo.png",
                            "fileType": "binary",
                            "mimeType": "image/png",
                        }
                    ],
                },
                {"type": "terminal", "terminalId": "term_001"},
            ],
            "locations": [{"path": "/home/user/project/src/main.py", "line": 42}],
            "rawInput": {"path": "src/config.json", "edits": [1, 2]},
            "capabilities": {"cancel": {}},
        },
        ToolCallUpdate,
    ),
    (
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "call_001",
            "status": "completed",
            "rawOutput": None,
        },
        ToolCallUpdate,
    ),
    (
        {
            "sessionUpdate": "tool_call_content_chunk",
            "toolCallId": "call_001",
            "content": {"type": "terminal", "terminalId": "term_001"},
        },
        ToolCallContentChunk,
    ),
    (
        {
            "sessionUpdate": "terminal_update",
            "terminalId": "term_001",
            "command": "cargo test",
            "cwd": "/workspace/project",
            "output": {"data": "cnVubmluZyAxMjMgdGVzdHMNCg=="},
            "exitStatus": {"exitCode": 0, "signal": None},
        },
        TerminalUpdate,
    ),
    (
        {
            "sessionUpdate": "terminal_update",
            "terminalId": "term_001",
            "exitStatus": {"signal": "SIGTERM"},
            "size": {"cols": 120, "rows": 40},
            "capabilities": {"cancel": {}},
        },
        TerminalUpdate,
    ),
    (
        {"sessionUpdate": "terminal_update", "terminalId": "term_002", "exitStatus": {}},
        TerminalUpdate,
    ),
    (
        {
            "sessionUpdate": "terminal_output_chunk",
            "terminalId": "term_001",
            "data": "cGFzc2VkDQo=",
        },
        TerminalOutputChunk,
    ),
    (
        {
            "sessionUpdate": "plan_update",
            "plan": {
                "type": "items",
                "planId": "plan-1",
                "entries": [
                    {"content": "Read the failing test", "priority": "high", "status": "completed"},
                    {"content": "Fix the parser", "priority": "medium", "status": "in_progress"},
                    {"content": "Update docs", "priority": "low", "status": "pending"},
                ],
            },
        },
        PlanUpdate,
    ),
    (
        {
            "sessionUpdate": "available_commands_update",
            "availableCommands": [
                {
                    "type": "command",
                    "name": "web",
                    "description": "Search the web",
                    "input": {"type": "text", "hint": "query to search for"},
                },
                {"type": "command", "name": "compact", "description": "Compact the context"},
            ],
        },
        AvailableCommandsUpdate,
    ),
    (
        {
            "sessionUpdate": "config_option_update",
            "configOptions": [
                {
                    "type": "select",
                    "configId": "mode",
                    "name": "Mode",
                    "category": "mode",
                    "currentValue": "ask",
                    "options": [
                        {"value": "ask", "name": "Ask", "description": "Ask before edits"},
                        {"value": "code", "name": "Code"},
                    ],
                },
                {
                    "type": "select",
                    "configId": "model",
                    "name": "Model",
                    "category": "model",
                    "currentValue": "small",
                    "options": [
                        {
                            "groupId": "fast",
                            "name": "Fast",
                            "options": [{"value": "small", "name": "Small"}],
                        }
                    ],
                },
                {
                    "type": "boolean",
                    "configId": "web",
                    "name": "Web access",
                    "currentValue": False,
                },
            ],
        },
        ConfigOptionUpdate,
    ),
    (
        {
            "sessionUpdate": "session_info_update",
            "title": "Fix the parser",
            "updatedAt": "2026-10-08T12:00:00Z",
        },
        SessionInfoUpdate,
    ),
    (
        {
            "sessionUpdate": "usage_update",
            "used": 53000,
            "size": 200000,
            "cost": {"amount": 0.42, "currency": "USD"},
        },
        UsageUpdate,
    ),
    (
        {
            "sessionUpdate": "notice",
            "severity": "warning",
            "title": "Rate limited",
            "description": "Retrying in 20 seconds",
        },
        Notice,
    ),
    (
        {
            "sessionUpdate": "compaction_update",
            "compactionId": "cmp-1",
            "status": "completed",
            "summary": [{"type": "text", "text": "We fixed the parser."}],
        },
        CompactionUpdate,
    ),
    (
        {
            "sessionUpdate": "compaction_summary_chunk",
            "compactionId": "cmp-1",
            "content": {"type": "text", "text": "We fixed"},
        },
        CompactionSummaryChunk,
    ),
]


def _ids(example: tuple[dict[str, Any], type]) -> str:
    return f"{example[0]['sessionUpdate']}-{example[1].__name__}"


@pytest.mark.parametrize("example", UPDATE_EXAMPLES, ids=[_ids(e) for e in UPDATE_EXAMPLES])
def test_update_example_round_trips(example: tuple[dict[str, Any], type]) -> None:
    payload, model = example
    assert_valid("SessionUpdate", payload)
    original = copy.deepcopy(payload)
    update = parse_session_update(payload)
    assert type(update) is model
    assert update.to_wire() == original
    assert payload == original  # parsing does not touch the input


def test_examples_cover_every_session_update_tag_of_the_schema() -> None:
    tags = {
        branch["properties"]["sessionUpdate"]["const"]
        for branch in schema()["$defs"]["SessionUpdate"]["anyOf"]
        if "const" in branch["properties"]["sessionUpdate"]
    }
    assert {payload["sessionUpdate"] for payload, _ in UPDATE_EXAMPLES} == tags


def test_notification_round_trip() -> None:
    params = {"sessionId": "session-1", "update": UPDATE_EXAMPLES[0][0]}
    note = UpdateSessionNotification.from_wire(params)
    assert note.session_id == "session-1"
    assert isinstance(note.update, UserMessageChunk)
    assert note.to_wire() == params


def test_parsed_models_expose_snake_case_fields() -> None:
    update = parse_session_update(UPDATE_EXAMPLES[12][0])
    assert isinstance(update, ToolCallUpdate)
    assert update.tool_call_id == "call_001"
    assert update.kind == "edit"
    assert update.raw_input == {"path": "src/config.json", "edits": [1, 2]}
    assert update.locations is not None and update.locations[0].line == 42
    assert update.content is not None
    first, diff, _, terminal = update.content
    assert isinstance(first, ContentToolCallContent)
    assert isinstance(diff, DiffToolCallContent)
    assert isinstance(diff.changes[0], DiffModify)
    assert diff.patch is not None and diff.patch.format == "git_patch"
    assert isinstance(terminal, TerminalToolCallContent) and terminal.terminal_id == "term_001"

    chunk = parse_session_update(
        {"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": "cGFzc2VkDQo="}
    )
    assert isinstance(chunk, TerminalOutputChunk)
    assert chunk.data_bytes() == b"passed\r\n"

    idle = parse_session_update(UPDATE_EXAMPLES[10][0])
    assert isinstance(idle, IdleStateUpdate)
    assert idle.background is not None
    assert isinstance(idle.background[0], BackgroundTerminal)


PERMISSION_EXAMPLES: list[dict[str, Any]] = [
    {
        "sessionId": "session-1",
        "title": "Run the test suite?",
        "subject": {
            "type": "command",
            "command": "cargo test",
            "cwd": "/workspace/project",
            "toolCallId": "call_001",
            "terminalId": "term_001",
        },
        "options": [
            {"optionId": "allow", "name": "Allow once", "kind": "allow_once"},
            {"optionId": "deny", "name": "Reject", "kind": "reject_once"},
        ],
    },
    {
        "sessionId": "session-1",
        "title": "Edit config.json?",
        "description": "The agent wants to turn on debug mode.",
        "subject": {
            "type": "tool_call",
            "toolCall": {
                "toolCallId": "call_002",
                "title": "Edit config.json",
                "kind": "edit",
                "status": "pending",
                "content": [
                    {
                        "type": "diff",
                        "changes": [{"operation": "modify", "path": "/p/src/config.json"}],
                        "patch": {"format": "git_patch", "text": CONFIG_GIT_PATCH},
                    }
                ],
            },
        },
        "options": [
            {"optionId": "approve", "name": "Allow", "kind": "allow_once"},
            {"optionId": "allow-folder", "name": "Allow for folder", "kind": "allow_always"},
            {"optionId": "later", "name": "Ask tomorrow", "kind": "_snooze"},
            {"optionId": "never", "name": "Never", "kind": "reject_always"},
        ],
    },
    {
        "sessionId": "session-1",
        "title": "Continue?",
        "options": [{"optionId": "yes", "name": "Yes", "kind": "allow_once"}],
    },
]


@pytest.mark.parametrize("payload", PERMISSION_EXAMPLES)
def test_permission_request_round_trips(payload: dict[str, Any]) -> None:
    assert_valid("RequestPermissionRequest", payload)
    request = RequestPermissionRequest.from_wire(payload)
    assert request.to_wire() == payload


def test_permission_subjects_parse_into_their_models() -> None:
    command = RequestPermissionRequest.from_wire(PERMISSION_EXAMPLES[0]).subject
    assert isinstance(command, CommandPermissionSubject)
    assert (command.command, command.cwd, command.terminal_id) == (
        "cargo test",
        "/workspace/project",
        "term_001",
    )
    tool = RequestPermissionRequest.from_wire(PERMISSION_EXAMPLES[1]).subject
    assert isinstance(tool, ToolCallPermissionSubject)
    assert tool.tool_call.tool_call_id == "call_002"
    assert "sessionUpdate" not in tool.to_wire()["toolCall"]
    assert RequestPermissionRequest.from_wire(PERMISSION_EXAMPLES[2]).subject is None


@pytest.mark.parametrize(
    "payload",
    [
        {"outcome": {"outcome": "selected", "optionId": "allow"}},
        {"outcome": {"outcome": "cancelled"}},
    ],
)
def test_permission_response_round_trips(payload: dict[str, Any]) -> None:
    assert_valid("RequestPermissionResponse", payload)
    assert RequestPermissionResponse.from_wire(payload).to_wire() == payload


def test_permission_response_helpers() -> None:
    selected = RequestPermissionResponse.selected("allow")
    assert isinstance(selected.outcome, SelectedPermissionOutcome)
    assert selected.to_wire() == {"outcome": {"outcome": "selected", "optionId": "allow"}}
    assert RequestPermissionResponse.cancelled().to_wire() == {"outcome": {"outcome": "cancelled"}}


def test_term2_initialize_response_example() -> None:
    payload = {
        "protocolVersion": 2,
        "info": {"name": "term2", "title": "term2", "version": "0.9.1"},
        "capabilities": {"session": {}},
    }
    assert_valid("InitializeResponse", payload)
    response = InitializeResponse.from_wire(payload)
    assert response.info.title == "term2"
    assert response.capabilities is not None and response.capabilities.session is not None
    assert response.to_wire() == payload


def test_plan_items_fields() -> None:
    update = parse_session_update(UPDATE_EXAMPLES[19][0])
    assert isinstance(update, PlanUpdate) and isinstance(update.plan, PlanItems)
    assert [e.status for e in update.plan.entries] == ["completed", "in_progress", "pending"]
