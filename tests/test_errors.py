"""_connection._errors: the connection layer's exceptions carry their facts as fields."""

from __future__ import annotations

import pickle

from acp_notebook._connection._errors import (
    METHOD_NOT_FOUND,
    AcpError,
    AgentExited,
    ConnectionClosed,
    MethodNotFound,
    RpcError,
)


def test_rpc_error_fields_str_and_wire() -> None:
    error = RpcError(-32602, "bad params", {"field": "x"})
    assert (error.code, error.message, error.data) == (-32602, "bad params", {"field": "x"})
    assert str(error) == "bad params (code -32602): {'field': 'x'}"
    assert error.to_wire() == {"code": -32602, "message": "bad params", "data": {"field": "x"}}
    bare = RpcError(1, "m")
    assert str(bare) == "m (code 1)"
    assert bare.to_wire() == {"code": 1, "message": "m"}
    assert isinstance(error, AcpError)


def test_falsy_data_is_still_sent() -> None:
    assert RpcError(1, "m", 0).to_wire() == {"code": 1, "message": "m", "data": 0}
    assert RpcError(1, "m", "").to_wire()["data"] == ""


def test_method_not_found_names_the_method_and_pickles() -> None:
    error = MethodNotFound("x/y", data=[1])
    assert error.code == METHOD_NOT_FOUND == -32601
    assert error.method == "x/y"
    assert error.message == "method not found: x/y"
    copy = pickle.loads(pickle.dumps(error))
    assert isinstance(copy, MethodNotFound)
    assert (copy.method, copy.data, copy.code) == ("x/y", [1], -32601)


def test_agent_exited_is_a_closed_connection_with_fields() -> None:
    exited = AgentExited(3, None, "starting\nboom: no key\n\n")
    assert isinstance(exited, ConnectionClosed)
    assert (exited.returncode, exited.signal) == (3, None)
    assert exited.status == "the agent exited with code 3"
    assert exited.last_stderr_line == "boom: no key"
    assert str(exited) == (
        "the agent exited with code 3; last lines of its stderr:\nstarting\nboom: no key"
    )


def test_agent_exited_by_signal_with_empty_stderr() -> None:
    killed = AgentExited(-9, "SIGKILL", "  \n")
    assert killed.status == "the agent was killed by signal SIGKILL"
    assert killed.last_stderr_line == ""
    assert str(killed) == "the agent was killed by signal SIGKILL (its stderr was empty)"


def test_agent_exited_pickles_with_its_fields() -> None:
    copy = pickle.loads(pickle.dumps(AgentExited(None, None, "tail")))
    assert (copy.returncode, copy.signal, copy.stderr_tail) == (None, None, "tail")
    assert copy.status == "the agent exited"
