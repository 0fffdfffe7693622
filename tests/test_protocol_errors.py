"""acp_notebook._protocol._errors: error codes and the Error object."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from acp_notebook._connection import _errors as connection_errors
from acp_notebook._protocol._errors import (
    Error,
    ErrorCode,
    SessionNotFoundErrorData,
    UnsupportedProtocolVersionErrorData,
)


def test_known_holds_exactly_the_named_codes() -> None:
    named = {v for k, v in vars(ErrorCode).items() if k.isupper() and k != "KNOWN"}
    assert named == ErrorCode.KNOWN
    assert len(named) == 9


def test_the_json_rpc_codes_agree_with_the_connection_layer() -> None:
    for name in (
        "PARSE_ERROR",
        "INVALID_REQUEST",
        "METHOD_NOT_FOUND",
        "INVALID_PARAMS",
        "INTERNAL_ERROR",
        "REQUEST_CANCELLED",
    ):
        assert getattr(ErrorCode, name) == getattr(connection_errors, name), name


def test_an_error_with_free_form_data() -> None:
    error = Error.from_wire({"code": -32000, "message": "auth", "data": [1, {"x": None}]})
    assert error.data == [1, {"x": None}]
    assert Error(code=1, message="m").to_wire() == {"code": 1, "message": "m"}
    with pytest.raises(ValidationError):
        Error.from_wire({"code": "1", "message": "m"})
    with pytest.raises(ValidationError):
        Error.from_wire({"code": 1})


def test_error_data_models() -> None:
    data = UnsupportedProtocolVersionErrorData.from_wire({"requested": 1, "supported": [2]})
    assert data.supported == [2]
    assert SessionNotFoundErrorData.from_wire({"sessionId": "s"}).session_id == "s"
    with pytest.raises(ValidationError):
        SessionNotFoundErrorData.from_wire({})
