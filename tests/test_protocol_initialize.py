"""acp_notebook._protocol._initialize: initialize, capabilities, auth methods."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter, ValidationError

from acp_notebook._protocol._initialize import (
    PROTOCOL_VERSION,
    AuthMethod,
    AuthMethodAgent,
    AuthMethodTerminal,
    Implementation,
    InitializeRequest,
    InitializeResponse,
    UnknownAuthMethod,
    looks_like_v1_initialize_response,
)

auth_methods: TypeAdapter[object] = TypeAdapter(AuthMethod)
INFO = {"name": "a", "version": "1"}


def test_a_v2_response_parses() -> None:
    response = InitializeResponse.from_wire(
        {
            "protocolVersion": 2,
            "info": INFO,
            "capabilities": {"session": {"prompt": {"image": {}}, "delete": {}}},
        }
    )
    assert response.protocol_version == PROTOCOL_VERSION == 2
    assert response.capabilities is not None
    assert response.capabilities.session is not None
    assert response.capabilities.session.prompt is not None
    assert response.capabilities.session.prompt.image is not None
    assert response.capabilities.session.prompt.audio is None


def test_a_v1_response_fails_validation_and_is_recognised() -> None:
    v1 = {"protocolVersion": 1, "agentInfo": INFO, "agentCapabilities": {}}
    with pytest.raises(ValidationError):
        InitializeResponse.from_wire(v1)
    assert looks_like_v1_initialize_response(v1)
    assert looks_like_v1_initialize_response({"agentCapabilities": {}})
    assert looks_like_v1_initialize_response({"protocolVersion": 1, "info": INFO})


@pytest.mark.parametrize(
    "result",
    [
        {"protocolVersion": 2, "info": INFO},
        {"protocolVersion": 3, "info": INFO},
        {"protocolVersion": 2, "info": INFO, "agentInfo": INFO},  # has info: not v1
        {"protocolVersion": True, "info": INFO},  # a bool is not a version
        {"protocolVersion": "1", "info": INFO},
        None,
        [],
        "v1",
    ],
)
def test_not_v1(result: object) -> None:
    assert not looks_like_v1_initialize_response(result)


def test_the_version_is_a_uint16() -> None:
    for bad in (-1, 65536, "2"):
        with pytest.raises(ValidationError):
            InitializeRequest.from_wire({"protocolVersion": bad, "info": INFO})
    request = InitializeRequest(protocol_version=PROTOCOL_VERSION, info=Implementation(**INFO))
    assert request.to_wire() == {"protocolVersion": 2, "info": INFO}


def test_auth_method_variants() -> None:
    agent = auth_methods.validate_python({"type": "agent", "methodId": "m", "name": "Log in"})
    assert isinstance(agent, AuthMethodAgent)
    terminal = auth_methods.validate_python(
        {
            "type": "terminal",
            "methodId": "t",
            "name": "T",
            "args": ["--login"],
            "env": [{"name": "K", "value": "V"}],
        }
    )
    assert isinstance(terminal, AuthMethodTerminal)
    assert terminal.args == ["--login"]
    assert terminal.env is not None
    assert terminal.env[0].value == "V"
    future = auth_methods.validate_python({"type": "oauth", "methodId": "o", "name": "OAuth"})
    assert isinstance(future, UnknownAuthMethod)
    assert (future.method_id, future.name, future.tag) == ("o", "OAuth", "oauth")
    bare = auth_methods.validate_python({"type": "oauth"})
    assert isinstance(bare, UnknownAuthMethod)
    assert bare.method_id is None


def test_a_response_keeps_unknown_auth_methods_in_order() -> None:
    response = InitializeResponse.from_wire(
        {
            "protocolVersion": 2,
            "info": INFO,
            "authMethods": [
                {"type": "x", "methodId": "1", "name": "one"},
                {"type": "agent", "methodId": "2", "name": "two"},
            ],
        }
    )
    assert response.auth_methods is not None
    assert [type(m) for m in response.auth_methods] == [UnknownAuthMethod, AuthMethodAgent]
