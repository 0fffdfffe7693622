"""acp_notebook._protocol._method_table: which types belong to which method."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from acp_notebook._protocol._initialize import InitializeRequest, InitializeResponse
from acp_notebook._protocol._method_table import (
    AGENT_METHODS,
    CLIENT_METHODS,
    PROTOCOL_METHODS,
    Method,
    MethodSpec,
)


def _names() -> set[str]:
    return {v for k, v in vars(Method).items() if k.isupper()}


def test_every_method_name_is_in_exactly_one_table() -> None:
    tables = [AGENT_METHODS, CLIENT_METHODS, PROTOCOL_METHODS]
    listed = [name for table in tables for name in table]
    assert len(listed) == len(set(listed))
    assert set(listed) == _names()


def test_each_table_is_keyed_by_its_specs_name() -> None:
    for table in (AGENT_METHODS, CLIENT_METHODS, PROTOCOL_METHODS):
        for name, spec in table.items():
            assert spec.name == name


def test_notifications_have_no_result() -> None:
    notifications = {
        name
        for table in (AGENT_METHODS, CLIENT_METHODS, PROTOCOL_METHODS)
        for name, spec in table.items()
        if spec.is_notification
    }
    assert notifications == {
        Method.SESSION_CANCEL,
        Method.SESSION_UPDATE,
        Method.ELICITATION_COMPLETE,
        Method.CANCEL_REQUEST,
    }
    with pytest.raises(TypeError, match="session/update is a notification"):
        CLIENT_METHODS[Method.SESSION_UPDATE].parse_result({})


def test_parse_params_and_result() -> None:
    spec = AGENT_METHODS[Method.INITIALIZE]
    params = spec.parse_params({"protocolVersion": 2, "info": {"name": "c", "version": "1"}})
    assert isinstance(params, InitializeRequest)
    result = spec.parse_result({"protocolVersion": 2, "info": {"name": "a", "version": "1"}})
    assert isinstance(result, InitializeResponse)
    with pytest.raises(ValidationError):
        spec.parse_params({"protocolVersion": 2})


def test_absent_params_read_as_an_empty_object() -> None:
    logout = AGENT_METHODS[Method.AUTH_LOGOUT]
    assert logout.parse_params(None).to_wire() == {}
    with pytest.raises(ValidationError):
        AGENT_METHODS[Method.INITIALIZE].parse_params(None)


def test_a_spec_of_a_plain_type() -> None:
    spec = MethodSpec("x/y", int, str)
    assert spec.parse_params(3) == 3
    assert spec.parse_result("ok") == "ok"
    assert not spec.is_notification
    with pytest.raises(ValidationError):
        spec.parse_params("three")
