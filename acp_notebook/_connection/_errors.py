"""Exceptions shared by the connection and process layers."""

from __future__ import annotations

from typing import Any

from ._exit import exit_sentence

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "REQUEST_CANCELLED",
    "AcpError",
    "AgentExited",
    "ConnectionClosed",
    "MethodNotFound",
    "RpcError",
]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800


class AcpError(Exception):
    """Base class of every error raised by acp_notebook."""


class RpcError(AcpError):
    """A JSON-RPC error object: received from the peer, or raised by a handler to answer one."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(code, message, data)
        self.code = code
        self.message = message
        self.data = data

    def __str__(self) -> str:
        text = f"{self.message} (code {self.code})"
        if self.data is not None:
            text += f": {self.data!r}"
        return text

    def to_wire(self) -> dict[str, Any]:
        """The ``error`` member of a JSON-RPC response."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class MethodNotFound(RpcError):
    """Raised by a handler that does not know the method (answered as ``-32601``)."""

    def __init__(self, method: str, data: Any = None) -> None:
        super().__init__(METHOD_NOT_FOUND, f"method not found: {method}", data)
        self.method = method

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.method, self.data))


class ConnectionClosed(AcpError):
    """The connection is closed: no answer will come for a request."""


class AgentExited(ConnectionClosed):
    """The agent process exited; carries its exit status and the tail of its stderr.

    ``returncode`` is the raw code (negative when killed by a signal); ``signal`` is the
    signal's name, such as ``"SIGKILL"``, or None.
    """

    def __init__(self, returncode: int | None, signal: str | None, stderr_tail: str) -> None:
        super().__init__(returncode, signal, stderr_tail)
        self.returncode = returncode
        self.signal = signal
        self.stderr_tail = stderr_tail

    @property
    def status(self) -> str:
        """How it ended, in a few words: "the agent exited with code 3" (see ``_exit``)."""
        return exit_sentence(self.returncode, self.signal)

    @property
    def last_stderr_line(self) -> str:
        """The last non-blank line the agent wrote to stderr ("" when none)."""
        lines = [line for line in self.stderr_tail.splitlines() if line.strip()]
        return lines[-1].strip() if lines else ""

    def __str__(self) -> str:
        text = self.status
        tail = self.stderr_tail.rstrip()
        if tail:
            text += "; last lines of its stderr:\n" + tail
        else:
            text += " (its stderr was empty)"
        return text
