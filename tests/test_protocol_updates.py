"""acp_notebook._protocol._updates: session updates and the fast parser for live traffic."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from pydantic import ValidationError

from acp_notebook._protocol._base import is_set
from acp_notebook._protocol._updates import (
    SESSION_UPDATE_TYPES,
    AgentMessage,
    AgentMessageChunk,
    IdleStateUpdate,
    PlanItems,
    PlanUpdate,
    RunningStateUpdate,
    SessionInfoUpdate,
    TerminalOutputChunk,
    TerminalUpdate,
    UnknownBackgroundWork,
    UnknownPlanUpdateContent,
    UnknownSessionUpdate,
    UnknownStateUpdate,
    UpdateSessionNotification,
    parse_session_update,
    session_update_adapter,
)

TEXT = {"type": "text", "text": "hi"}

#: one valid payload per tag (state_update once per state)
SAMPLES: list[dict[str, Any]] = [
    {"sessionUpdate": "user_message_chunk", "messageId": "m", "content": TEXT},
    {"sessionUpdate": "user_message", "messageId": "m", "content": [TEXT]},
    {"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": TEXT},
    {"sessionUpdate": "agent_message", "messageId": "m"},
    {"sessionUpdate": "agent_thought_chunk", "messageId": "m", "content": TEXT},
    {"sessionUpdate": "agent_thought", "messageId": "m", "content": None},
    {"sessionUpdate": "state_update", "state": "running"},
    {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"},
    {"sessionUpdate": "state_update", "state": "requires_action"},
    {"sessionUpdate": "tool_call_update", "toolCallId": "c", "title": "t"},
    {
        "sessionUpdate": "tool_call_content_chunk",
        "toolCallId": "c",
        "content": {"type": "terminal", "terminalId": "t"},
    },
    {"sessionUpdate": "terminal_update", "terminalId": "t", "command": "ls"},
    {"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": "aGk="},
    {
        "sessionUpdate": "plan_update",
        "plan": {
            "type": "items",
            "planId": "p",
            "entries": [{"content": "c", "priority": "high", "status": "pending"}],
        },
    },
    {"sessionUpdate": "available_commands_update", "availableCommands": []},
    {"sessionUpdate": "config_option_update", "configOptions": []},
    {"sessionUpdate": "session_info_update", "title": "T"},
    {
        "sessionUpdate": "usage_update",
        "used": 1,
        "size": 10,
        "cost": {"amount": 0.5, "currency": "USD"},
    },
    {"sessionUpdate": "notice", "severity": "warning", "title": "careful"},
    {"sessionUpdate": "compaction_update", "compactionId": "k", "status": "in_progress"},
    {"sessionUpdate": "compaction_summary_chunk", "compactionId": "k", "content": TEXT},
]


def test_the_samples_cover_every_tag() -> None:
    assert {s["sessionUpdate"] for s in SAMPLES} == set(SESSION_UPDATE_TYPES)


@pytest.mark.parametrize("payload", SAMPLES, ids=lambda s: f"{s['sessionUpdate']}")
def test_fast_path_and_union_agree_and_round_trip(payload: dict[str, Any]) -> None:
    fast = parse_session_update(payload)
    slow = session_update_adapter.validate_python(payload)
    assert type(fast) is type(slow)
    assert fast == slow
    assert fast.to_wire() == payload


@pytest.mark.parametrize(
    "bad",
    [
        {"sessionUpdate": "agent_message_chunk", "messageId": "m"},
        {"sessionUpdate": "usage_update", "used": -1, "size": 1},
        {"sessionUpdate": "notice", "severity": "info", "title": ""},
        {"sessionUpdate": "terminal_update", "terminalId": "t", "size": {"cols": 0, "rows": 1}},
    ],
)
def test_a_malformed_update_fails_with_the_unions_error(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError) as fast:
        parse_session_update(bad)
    with pytest.raises(ValidationError) as slow:
        session_update_adapter.validate_python(bad)
    assert [e["loc"] for e in fast.value.errors()] == [e["loc"] for e in slow.value.errors()]


def test_an_untagged_update_is_rejected() -> None:
    for bad in ({"messageId": "m"}, {"sessionUpdate": 7}):
        with pytest.raises(ValidationError):
            parse_session_update(bad)


def test_custom_and_future_updates_are_kept() -> None:
    payload = {"sessionUpdate": "_vendor_progress", "pct": 50}
    update = parse_session_update(payload)
    assert isinstance(update, UnknownSessionUpdate)
    assert update.session_update == "_vendor_progress"
    assert update.to_wire() == payload


def test_an_unknown_state_keeps_its_payload_and_says_state_update() -> None:
    payload = {"sessionUpdate": "state_update", "state": "sleeping"}
    update = parse_session_update(payload)
    assert isinstance(update, UnknownStateUpdate)
    assert update.session_update == "state_update"
    assert update.tag == "sleeping"
    assert update.to_wire() == payload


def test_idle_with_an_error_and_unknown_background_work() -> None:
    update = parse_session_update(
        {
            "sessionUpdate": "state_update",
            "state": "idle",
            "stopReason": "error",
            "error": {"code": -32603, "message": "boom"},
            "background": [{"type": "terminal", "terminalId": "t"}, {"type": "daemon"}],
        }
    )
    assert isinstance(update, IdleStateUpdate)
    assert update.error is not None
    assert update.error.message == "boom"
    assert update.background is not None
    assert isinstance(update.background[1], UnknownBackgroundWork)
    running = parse_session_update({"sessionUpdate": "state_update", "state": "running"})
    assert isinstance(running, RunningStateUpdate)


def test_patch_fields_tell_omitted_null_and_value() -> None:
    omitted = parse_session_update({"sessionUpdate": "agent_message", "messageId": "m"})
    cleared = parse_session_update(
        {"sessionUpdate": "agent_message", "messageId": "m", "content": None}
    )
    assert isinstance(omitted, AgentMessage)
    assert isinstance(cleared, AgentMessage)
    assert not is_set(omitted, "content")
    assert is_set(cleared, "content")
    info = parse_session_update({"sessionUpdate": "session_info_update", "updatedAt": None})
    assert isinstance(info, SessionInfoUpdate)
    assert not is_set(info, "title")
    assert is_set(info, "updated_at")
    terminal = parse_session_update({"sessionUpdate": "terminal_update", "terminalId": "t"})
    assert isinstance(terminal, TerminalUpdate)
    assert terminal.to_wire() == {"sessionUpdate": "terminal_update", "terminalId": "t"}


def test_output_chunks_decode_alone() -> None:
    raw = b"\xe2\x82"  # half of a UTF-8 character: bytes, not text
    chunk = parse_session_update(
        {
            "sessionUpdate": "terminal_output_chunk",
            "terminalId": "t",
            "data": base64.b64encode(raw).decode(),
        }
    )
    assert isinstance(chunk, TerminalOutputChunk)
    assert chunk.data_bytes() == raw


def test_an_unknown_plan_content_keeps_its_plan_id() -> None:
    update = parse_session_update(
        {"sessionUpdate": "plan_update", "plan": {"type": "graph", "planId": "p9", "nodes": []}}
    )
    assert isinstance(update, PlanUpdate)
    assert isinstance(update.plan, UnknownPlanUpdateContent)
    assert update.plan.plan_id == "p9"
    items = parse_session_update(SAMPLES[13])
    assert isinstance(items, PlanUpdate)
    assert isinstance(items.plan, PlanItems)


def test_the_notification_wraps_a_session_id_and_one_update() -> None:
    note = UpdateSessionNotification.from_wire({"sessionId": "s", "update": SAMPLES[2]})
    assert note.session_id == "s"
    assert isinstance(note.update, AgentMessageChunk)
    with pytest.raises(ValidationError):
        UpdateSessionNotification.from_wire({"update": SAMPLES[2]})
