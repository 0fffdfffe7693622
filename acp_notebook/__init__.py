"""acp_notebook: Agent Client Protocol v2 agents in Jupyter.

``%load_ext acp_notebook`` registers the ``%acp`` / ``%%acp`` magics. The async client API
(``connect``, ``Agent``, ``Session``, ``Turn``) works without Jupyter.

Public names are imported on first use, so ``import acp_notebook._protocol`` (or any lower
layer) does not pull in the layers above it, and importing the package stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import _lazy

if TYPE_CHECKING:
    from ._client._agent import Agent
    from ._client._connect import connect, connect_streams
    from ._client._errors import (
        AuthenticationRequired,
        ProtocolViolation,
        TurnInProgress,
        UnsupportedProtocolVersion,
    )
    from ._client._permission import Answer, PermissionDecision, PermissionHandler
    from ._client._session import Session
    from ._client._turn import Turn
    from ._connection._errors import AcpError, AgentExited, ConnectionClosed, RpcError
    from ._protocol import RequestPermissionRequest, SessionUpdate

from ._version import __version__

_LAZY = {
    "Agent": "._client._agent",
    "AuthenticationRequired": "._client._errors",
    "ProtocolViolation": "._client._errors",
    "Session": "._client._session",
    "Turn": "._client._turn",
    "TurnInProgress": "._client._errors",
    "UnsupportedProtocolVersion": "._client._errors",
    "connect": "._client._connect",
    "connect_streams": "._client._connect",
    "AcpError": "._connection._errors",
    "AgentExited": "._connection._errors",
    "ConnectionClosed": "._connection._errors",
    "RpcError": "._connection._errors",
    "Answer": "._client._permission",
    "PermissionDecision": "._client._permission",
    "PermissionHandler": "._client._permission",
    "RequestPermissionRequest": "._protocol",
    "SessionUpdate": "._protocol",
}

__all__ = [
    "AcpError",
    "Agent",
    "AgentExited",
    "Answer",
    "AuthenticationRequired",
    "ConnectionClosed",
    "PermissionDecision",
    "PermissionHandler",
    "ProtocolViolation",
    "RequestPermissionRequest",
    "RpcError",
    "Session",
    "SessionUpdate",
    "Turn",
    "TurnInProgress",
    "UnsupportedProtocolVersion",
    "__version__",
    "connect",
    "connect_streams",
    "load_ipython_extension",
    "unload_ipython_extension",
]


__getattr__, __dir__ = _lazy.attach(__name__, _LAZY, __all__)


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext acp_notebook``: register the magics (imports the notebook layer lazily)."""
    from ._magics import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    from ._magics import unload_ipython_extension as unload

    unload(ipython)
