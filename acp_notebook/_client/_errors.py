"""The client layer's errors (besides the connection's, in ``_connection._errors``), and the
small wire helpers the agent, its sessions and the v1 dialect share."""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter, ValidationError

from .. import _protocol as p
from .._connection._errors import AcpError
from .._version import __version__

if TYPE_CHECKING:
    from ._agent import Agent

CLIENT_NAME = "acp_notebook"


class UnsupportedProtocolVersion(AcpError):
    """The agent speaks no version we can use: it said so, answered another version, or sent
    a body that is not of the version it answered (or not of the version ``protocol`` forced)."""

    def __init__(self, message: str, *, answered: Any = None, supported: Any = None) -> None:
        super().__init__(message)
        self.answered = answered
        self.supported = supported


class AuthenticationRequired(AcpError):
    """The agent answered ``-32000``: log in with one of ``methods`` first (``agent.login``)."""

    def __init__(self, message: str, methods: Sequence[p.AuthMethod]) -> None:
        names = ", ".join(_auth_method_name(m) for m in methods) or "none advertised"
        super().__init__(f"{message} (auth methods: {names})")
        self.methods = list(methods)


class TurnInProgress(AcpError):
    """A session accepts one prompt at a time from this client."""


class ProtocolViolation(AcpError):
    """The agent sent something that does not parse as ACP v2."""


class StoppedBeforeInitialize(AcpError):
    """The agent was stopped before it answered ``initialize``: ``status`` says why (each
    subclass), ``stderr_tail`` is the end of what it wrote on stderr ("" when nothing)."""

    def __init__(self, stderr_tail: str) -> None:
        self.stderr_tail = stderr_tail
        tail = stderr_tail.rstrip()
        text = self.status
        text += f"; last lines of its stderr:\n{tail}" if tail else " (its stderr was empty)"
        super().__init__(text)

    @property
    def status(self) -> str:
        """What happened, in a few words (as `AgentExited.status`)."""
        return "the agent was stopped before it answered `initialize`"


class InitializeTimeout(StoppedBeforeInitialize, TimeoutError):
    """The agent did not answer ``initialize`` in time; it was stopped."""

    def __init__(self, seconds: float, stderr_tail: str) -> None:
        self.seconds = seconds
        super().__init__(stderr_tail)

    @property
    def status(self) -> str:
        return f"the agent did not answer `initialize` within {self.seconds:g} s and was stopped"


class NotSpeakingAcp(StoppedBeforeInitialize):
    """Before answering ``initialize`` the agent wrote ``lines`` lines that are not JSON-RPC
    (a program that is not an ACP agent, or one started without its ACP option); it was
    stopped then, without waiting for the timeout."""

    def __init__(self, lines: int, stderr_tail: str) -> None:
        self.lines = lines
        super().__init__(stderr_tail)

    @property
    def status(self) -> str:
        return (
            f"the agent was stopped after {self.lines} lines of output that is not ACP, before"
            " it answered `initialize` (is it an ACP agent, started with its ACP option?)"
        )


def _auth_method_name(method: p.AuthMethod) -> str:
    raw = method.to_wire()
    return str(raw.get("methodId") or raw.get("name") or raw)


def client_info() -> dict[str, str]:
    """This client's ``info`` (v2) or ``clientInfo`` (v1)."""
    return {"name": CLIENT_NAME, "title": "acp_notebook", "version": __version__}


def v1_client_fields(agent: Agent) -> dict[str, Any]:
    """v1's ``clientInfo`` and ``clientCapabilities``: client terminals and the client file
    system when ``client_services`` is on (``agent.services``), else nothing offered; and
    always the terminal extension (``_meta.terminal_output``): an agent that runs commands
    itself (claude-agent-acp, codex-acp) then sends their output in tool calls' ``_meta``,
    which the translator shows as display terminals. Not in ``_v1``: the ``initialize`` of
    ``protocol="auto"`` sends them to every agent, and importing the v1 layer (its models) for
    that cost each process's first connection to a v2 agent ~0.03 CPU-s."""
    offered = agent.services is not None
    return {
        "clientInfo": client_info(),
        "clientCapabilities": {
            "fs": {"readTextFile": offered, "writeTextFile": offered},
            "terminal": offered,
            "_meta": {"terminal_output": True},
        },
    }


# Made on first use: their models' protocol modules are imported then, not with the client.
@functools.cache
def elicitation_request_adapter() -> TypeAdapter[Any]:
    return TypeAdapter(p.CreateElicitationRequest)


@functools.cache
def auth_method_adapter() -> TypeAdapter[Any]:
    return TypeAdapter(p.AuthMethod)


def first_error(exc: ValidationError) -> str:
    errors = exc.errors()
    if not errors:
        return str(exc)
    first = errors[0]
    where = ".".join(str(x) for x in first.get("loc", ())) or "<root>"
    return f"{where}: {first.get('msg')}"


def absolute_cwd(cwd: str | os.PathLike[str] | None) -> str:
    return os.path.abspath(os.fspath(cwd) if cwd is not None else os.getcwd())
