"""JSON-RPC error codes used by ACP and the ``Error`` object."""

from __future__ import annotations

from typing import Any, Final

from ._base import WireModel

__all__ = [
    "Error",
    "ErrorCode",
    "SessionNotFoundErrorData",
    "UnsupportedProtocolVersionErrorData",
]


class ErrorCode:
    """Well-known error codes (any other integer is allowed on the wire)."""

    PARSE_ERROR: Final = -32700
    INVALID_REQUEST: Final = -32600
    METHOD_NOT_FOUND: Final = -32601
    INVALID_PARAMS: Final = -32602
    INTERNAL_ERROR: Final = -32603
    REQUEST_CANCELLED: Final = -32800
    AUTH_REQUIRED: Final = -32000
    RESOURCE_NOT_FOUND: Final = -32002
    UNSUPPORTED_PROTOCOL_VERSION: Final = -32022

    KNOWN: Final = frozenset(
        {-32700, -32600, -32601, -32602, -32603, -32800, -32000, -32002, -32022}
    )


class Error(WireModel):
    """A JSON-RPC error object; ``data`` is free-form (see the ``*ErrorData`` models)."""

    code: int
    message: str
    data: Any = None


class UnsupportedProtocolVersionErrorData(WireModel):
    requested: int
    supported: list[int]


class SessionNotFoundErrorData(WireModel):
    session_id: str
