"""Method-level behaviour: initialize (v1 detection), prompt response, method table."""

from __future__ import annotations

from typing import Any

import pytest
from _schema import assert_valid
from pydantic import ValidationError

import acp_notebook._protocol as p
from acp_notebook._protocol import (
    AGENT_METHODS,
    CLIENT_METHODS,
    PROTOCOL_METHODS,
    PROTOCOL_VERSION,
    AuthMethodTerminal,
    ClientCapabilities,
    Implementation,
    InitializeRequest,
    InitializeResponse,
    Method,
    PromptRequest,
    PromptResponse,
    SessionConfigBoolean,
    SessionConfigSelect,
    SetSessionConfigOptionBooleanRequest,
    SetSessionConfigOptionIdRequest,
    SetSessionConfigOptionRequest,
    TerminalOutputChunk,
    UpdateSessionNotification,
    looks_like_v1_initialize_response,
)

V1_INITIALIZE_RESPONSE = {
    "protocolVersion": 1,
    "agentCapabilities": {"loadSession": True, "promptCapabilities": {"image": True}},
    "agentInfo": {"name": "old-agent", "version": "0.3.0"},
    "authMethods": [],
}


def test_v1_initialize_response_fails_validation() -> None:
    with pytest.raises(ValidationError, match="info"):
        InitializeResponse.from_wire(V1_INITIALIZE_RESPONSE)
    assert looks_like_v1_initialize_response(V1_INITIALIZE_RESPONSE)


@pytest.mark.parametrize(
    ("body", "v1"),
    [
        ({"protocolVersion": 2, "info": {"name": "a", "version": "1"}}, False),
        ({"protocolVersion": 1, "info": {"name": "a", "version": "1"}}, True),
        ({"agentInfo": {"name": "a", "version": "1"}}, True),
        ({"protocolVersion": 1}, True),
        ({}, False),
        ("not a dict", False),
    ],
)
def test_looks_like_v1(body: Any, v1: bool) -> None:
    assert looks_like_v1_initialize_response(body) is v1


def test_initialize_response_requires_protocol_version() -> None:
    with pytest.raises(ValidationError, match="protocolVersion"):
        InitializeResponse.from_wire({"info": {"name": "a", "version": "1"}})
    with pytest.raises(ValidationError, match="protocolVersion"):
        InitializeResponse.from_wire(
            {"protocolVersion": "2", "info": {"name": "a", "version": "1"}}
        )


def test_initialize_request_defaults_and_capabilities() -> None:
    request = InitializeRequest(
        protocol_version=PROTOCOL_VERSION,
        info=Implementation(name="acp-notebook", version="0.1.0"),
        capabilities=ClientCapabilities(),
    )
    wire = request.to_wire()
    assert wire == {
        "protocolVersion": 2,
        "info": {"name": "acp-notebook", "version": "0.1.0"},
        "capabilities": {},
    }
    assert_valid("InitializeRequest", wire)
    parsed = InitializeRequest.from_wire(
        {"protocolVersion": 2, "info": {"name": "c", "version": "1"}}
    )
    assert parsed.capabilities is None


def test_auth_method_terminal_fields() -> None:
    method = AuthMethodTerminal.from_wire(
        {
            "type": "terminal",
            "methodId": "tui",
            "name": "Log in",
            "args": ["--login"],
            "env": [{"name": "MODE", "value": "login"}],
        }
    )
    assert method.args == ["--login"]
    assert method.env is not None and method.env[0].value == "login"


@pytest.mark.parametrize("body", [{}, {"messageId": "user-1"}, {"messageId": "m", "_meta": None}])
def test_prompt_response_accepts_empty_and_message_id(body: dict[str, Any]) -> None:
    response = PromptResponse.from_wire(body)
    assert response.message_id == body.get("messageId")
    assert response.to_wire() == body


def test_prompt_response_rejects_bad_message_id() -> None:
    with pytest.raises(ValidationError, match="messageId"):
        PromptResponse.from_wire({"messageId": 5})


def test_prompt_request_needs_content() -> None:
    with pytest.raises(ValidationError, match="prompt"):
        PromptRequest.from_wire({"sessionId": "s", "prompt": []})


def test_method_table_covers_the_stable_surface() -> None:
    assert set(AGENT_METHODS) == {
        "initialize",
        "auth/login",
        "auth/logout",
        "session/new",
        "session/list",
        "session/delete",
        "session/resume",
        "session/close",
        "session/prompt",
        "session/cancel",
        "session/set_config_option",
        "terminal/cancel",
        "tool_call/cancel",
    }
    assert set(CLIENT_METHODS) == {
        "session/update",
        "session/request_permission",
        "elicitation/create",
        "elicitation/complete",
    }
    assert set(PROTOCOL_METHODS) == {"$/cancel_request"}
    assert AGENT_METHODS[Method.SESSION_CANCEL].is_notification
    assert not AGENT_METHODS[Method.SESSION_PROMPT].is_notification


def test_method_table_schema_links() -> None:
    """Each spec's params/result type carries the same ``x-method`` in the schema."""
    from _schema import schema

    defs = schema()["$defs"]
    by_method: dict[str, set[str]] = {}
    for name, node in defs.items():
        if "x-method" in node:
            by_method.setdefault(node["x-method"], set()).add(name)
    ours = {**AGENT_METHODS, **CLIENT_METHODS, **PROTOCOL_METHODS}
    for method, spec in ours.items():
        names = {
            "SetSessionConfigOptionRequest"
            if t is SetSessionConfigOptionRequest
            else "CreateElicitationRequest"
            if t is p.CreateElicitationRequest
            else t.__name__
            for t in (spec.params, spec.result)
            if t is not None
        }
        assert names <= by_method[method], (method, names, by_method[method])
    # every stable method of the schema is in our table
    assert set(by_method) == set(ours)


def test_method_spec_parses_params_and_results() -> None:
    spec = AGENT_METHODS[Method.SESSION_SET_CONFIG_OPTION]
    assert isinstance(
        spec.parse_params({"sessionId": "s", "configId": "c", "type": "id", "value": "v"}),
        SetSessionConfigOptionIdRequest,
    )
    assert isinstance(
        spec.parse_params({"sessionId": "s", "configId": "c", "type": "boolean", "value": True}),
        SetSessionConfigOptionBooleanRequest,
    )
    with pytest.raises(ValidationError, match="value"):
        spec.parse_params({"sessionId": "s", "configId": "c", "type": "boolean", "value": "yes"})
    result = spec.parse_result(
        {
            "configOptions": [
                {"type": "boolean", "configId": "c", "name": "C", "currentValue": True},
                {
                    "type": "select",
                    "configId": "m",
                    "name": "M",
                    "currentValue": "a",
                    "options": [{"value": "a", "name": "A"}],
                },
            ]
        }
    )
    assert isinstance(result.config_options[0], SessionConfigBoolean)
    assert isinstance(result.config_options[1], SessionConfigSelect)

    logout = AGENT_METHODS[Method.AUTH_LOGOUT]
    assert logout.parse_params(None).to_wire() == {}

    update = CLIENT_METHODS[Method.SESSION_UPDATE].parse_params(
        {
            "sessionId": "s",
            "update": {"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": ""},
        }
    )
    assert isinstance(update, UpdateSessionNotification)
    assert isinstance(update.update, TerminalOutputChunk)
    with pytest.raises(TypeError):
        CLIENT_METHODS[Method.SESSION_UPDATE].parse_result({})


def test_config_select_requires_options() -> None:
    with pytest.raises(ValidationError, match="options"):
        SessionConfigSelect.from_wire(
            {"type": "select", "configId": "m", "name": "M", "currentValue": "a", "options": []}
        )


def _wire_literals(path: Any) -> list[str]:
    """String constants that are a method name and integers that are a known error code,
    outside docstrings, in one source file."""
    import ast

    names = set(AGENT_METHODS) | set(CLIENT_METHODS) | set(PROTOCOL_METHODS)
    tree = ast.parse(path.read_text("utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or id(node) in docstrings:
            continue
        value = node.value
        if isinstance(value, str) and value in names:
            found.append(f"{path.name}:{node.lineno} {value!r}")
    for node in ast.walk(tree):  # -32601 is UnaryOp(USub, 32601)
        if (
            isinstance(node, ast.UnaryOp)
            and isinstance(node.op, ast.USub)
            and isinstance(node.operand, ast.Constant)
            and -node.operand.value in p.ErrorCode.KNOWN
        ):
            found.append(f"{path.name}:{node.lineno} {-node.operand.value}")
    return found


def test_the_client_and_the_embedded_agent_name_methods_and_codes_from_the_protocol() -> None:
    from pathlib import Path

    package = Path(p.__file__).parents[1]
    files = [package / "_client" / "_agent.py", *sorted((package / "agent").glob("*.py"))]
    found = [hit for path in files for hit in _wire_literals(path)]
    assert found == []
