"""Three-state patch fields: omitted, null and value stay apart through parse and to_wire()."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from _schema import assert_valid
from hypothesis import given
from hypothesis import strategies as st

from acp_notebook._protocol import (
    AgentMessage,
    SessionInfoUpdate,
    TerminalExitStatus,
    TerminalUpdate,
    ToolCallUpdate,
    UserMessage,
    is_set,
    parse_session_update,
)

# wire key -> (field name, a concrete value)
TERMINAL_FIELDS: dict[str, tuple[str, Any]] = {
    "command": ("command", "cargo test"),
    "cwd": ("cwd", "/workspace/project"),
    "output": ("output", {"data": "cnVubmluZw0K"}),
    "exitStatus": ("exit_status", {"exitCode": 0, "signal": None}),
    "size": ("size", {"cols": 80, "rows": 24}),
    "capabilities": ("capabilities", {"cancel": {}}),
    "_meta": ("meta", {"origin": "sandbox"}),
}

TOOL_CALL_FIELDS: dict[str, tuple[str, Any]] = {
    "name": ("name", "shell"),
    "title": ("title", "Run tests"),
    "kind": ("kind", "execute"),
    "status": ("status", "in_progress"),
    "content": ("content", [{"type": "terminal", "terminalId": "t1"}]),
    "locations": ("locations", [{"path": "/p/a.py"}]),
    "rawInput": ("raw_input", {"cmd": "pytest"}),
    "rawOutput": ("raw_output", "ok"),
    "capabilities": ("capabilities", {"cancel": {}}),
    "_meta": ("meta", {"k": 1}),
}

OMIT, NULL, VALUE = "omit", "null", "value"
STATES = st.sampled_from([OMIT, NULL, VALUE])


def _build(
    base: dict[str, Any], fields: dict[str, tuple[str, Any]], states: dict[str, str]
) -> dict[str, Any]:
    payload = dict(base)
    for key, state in states.items():
        if state == NULL:
            payload[key] = None
        elif state == VALUE:
            payload[key] = copy.deepcopy(fields[key][1])
    return payload


def _check_states(model: Any, fields: dict[str, tuple[str, Any]], states: dict[str, str]) -> None:
    for key, state in states.items():
        name = fields[key][0]
        if state == OMIT:
            assert not is_set(model, name), key
            assert getattr(model, name) is None
        elif state == NULL:
            assert is_set(model, name), key
            assert getattr(model, name) is None
        else:
            assert is_set(model, name), key
            assert getattr(model, name) is not None


@given(st.fixed_dictionaries({key: STATES for key in TERMINAL_FIELDS}))
def test_terminal_update_three_states(states: dict[str, str]) -> None:
    base = {"sessionUpdate": "terminal_update", "terminalId": "term_001"}
    payload = _build(base, TERMINAL_FIELDS, states)
    update = parse_session_update(copy.deepcopy(payload))
    assert isinstance(update, TerminalUpdate)
    _check_states(update, TERMINAL_FIELDS, states)
    assert update.to_wire() == payload


@given(st.fixed_dictionaries({key: STATES for key in TOOL_CALL_FIELDS}))
def test_tool_call_update_three_states(states: dict[str, str]) -> None:
    base = {"sessionUpdate": "tool_call_update", "toolCallId": "call_001"}
    payload = _build(base, TOOL_CALL_FIELDS, states)
    update = parse_session_update(copy.deepcopy(payload))
    assert isinstance(update, ToolCallUpdate)
    # rawInput/rawOutput may legitimately hold JSON null as a value; both map to None
    _check_states(update, TOOL_CALL_FIELDS, states)
    assert update.to_wire() == payload


@pytest.mark.parametrize("states", [{"title": OMIT}, {"title": NULL}, {"title": VALUE}])
def test_session_info_update_three_states(states: dict[str, str]) -> None:
    fields = {"title": ("title", "Refactor"), "updatedAt": ("updated_at", "2026-10-08T12:00:00Z")}
    payload = _build(
        {"sessionUpdate": "session_info_update"}, fields, {**states, "updatedAt": NULL}
    )
    update = parse_session_update(copy.deepcopy(payload))
    assert isinstance(update, SessionInfoUpdate)
    _check_states(update, fields, {**states, "updatedAt": NULL})
    assert update.to_wire() == payload


@pytest.mark.parametrize("tag", ["user_message", "agent_message", "agent_thought"])
@pytest.mark.parametrize("state", [OMIT, NULL, VALUE])
def test_message_content_three_states(tag: str, state: str) -> None:
    fields = {"content": ("content", [{"type": "text", "text": "hi"}])}
    payload = _build({"sessionUpdate": tag, "messageId": "m1"}, fields, {"content": state})
    update = parse_session_update(copy.deepcopy(payload))
    _check_states(update, fields, {"content": state})
    assert update.to_wire() == payload


def test_constructor_keeps_omitted_and_null_apart() -> None:
    cleared = TerminalUpdate(terminal_id="t", exit_status=None, meta=None)
    assert cleared.to_wire() == {
        "sessionUpdate": "terminal_update",
        "terminalId": "t",
        "exitStatus": None,
        "_meta": None,
    }
    assert is_set(cleared, "exit_status") and not is_set(cleared, "output")
    assert_valid("SessionUpdate", cleared.to_wire())

    exited = TerminalUpdate(terminal_id="t", exit_status=TerminalExitStatus())
    assert exited.to_wire()["exitStatus"] == {}

    assert ToolCallUpdate(tool_call_id="c", raw_output=None).to_wire() == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c",
        "rawOutput": None,
    }
    assert UserMessage(message_id="m").to_wire() == {
        "sessionUpdate": "user_message",
        "messageId": "m",
    }
    assert AgentMessage(message_id="m", content=None).to_wire()["content"] is None


def test_exit_status_empty_object_is_a_value() -> None:
    update = parse_session_update(
        {"sessionUpdate": "terminal_update", "terminalId": "t", "exitStatus": {}}
    )
    assert isinstance(update, TerminalUpdate)
    assert is_set(update, "exit_status")
    assert update.exit_status is not None
    assert not is_set(update.exit_status, "exit_code")


def test_is_set_rejects_unknown_field_names() -> None:
    update = TerminalUpdate(terminal_id="t")
    with pytest.raises(AttributeError, match="exitStatus"):
        is_set(update, "exitStatus")
