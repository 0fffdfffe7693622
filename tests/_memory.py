"""Client agents connected to the embedded agent in memory (no subprocess).

``memory_connector(...)`` is a notebook-style connector: called with the keywords
``permission``, ``elicitation``, ``on_problem`` and ``initialize_timeout``, it returns an async
context manager yielding an initialized `Agent` talking to an `AgentServer` served in this
process::

    async with memory_connector(data_dir=tmp_path)(permission=allow) as agent: ...

``scripted_agent(handler)`` connects a client `Agent` in memory to a bare `Connection` whose
requests ``handler`` answers (initialize, session/new and session/prompt have defaults), so a
test can send the client whatever it likes through the yielded peer connection.
"""

from __future__ import annotations

import functools
import os
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from acp_notebook import Agent, connect_streams
from acp_notebook._client._elicitation import ElicitationHandler
from acp_notebook._client._permission import PermissionHandler
from acp_notebook._connection._errors import MethodNotFound
from acp_notebook._connection._jsonrpc import Connection, RequestHandler
from acp_notebook._connection._lines import memory_byte_pipe
from acp_notebook.agent import AgentServer, Scenario, serve_in_memory
from acp_notebook.agent._faults import Faults

Connector = Callable[..., AbstractAsyncContextManager[Agent]]


@asynccontextmanager
async def embedded_in_memory(
    *,
    data_dir: str | os.PathLike[str] | None = None,
    scenario: Scenario | None = None,
    faults: Faults | None = None,
    server: AgentServer | None = None,
    permission: PermissionHandler | None = None,
    elicitation: ElicitationHandler | None = None,
    on_problem: Callable[..., None] | None = None,
    initialize_timeout: float | None = None,
    client_services: bool = False,
) -> AsyncIterator[Agent]:
    """A client `Agent` connected to an embedded `AgentServer` served in memory (a v2 agent:
    ``client_services`` is accepted as the notebook passes it, and offers nothing to v2)."""
    async with (
        serve_in_memory(server, data_dir=data_dir, scenario=scenario, faults=faults) as streams,
        connect_streams(
            *streams,
            permission=permission,
            elicitation=elicitation,
            on_problem=on_problem,
            initialize_timeout=initialize_timeout,
            client_services=client_services,
        ) as agent,
    ):
        yield agent


def memory_connector(
    *,
    data_dir: str | os.PathLike[str] | None = None,
    scenario: Scenario | None = None,
    faults: Faults | None = None,
) -> Connector:
    """``connector(permission=, elicitation=, on_problem=, initialize_timeout=)`` (keywords,
    all optional) -> an async context manager yielding an in-memory embedded agent. Each call
    serves a new `AgentServer` (on the same ``data_dir`` when one is given)."""
    return functools.partial(
        embedded_in_memory, data_dir=data_dir, scenario=scenario, faults=faults
    )


DEFAULT_ANSWERS: dict[str, Any] = {
    "initialize": {"protocolVersion": 2, "info": {"name": "scripted", "version": "1"}},
    "session/new": {"sessionId": "s1"},
    "session/prompt": {"messageId": "m1"},
}


@asynccontextmanager
async def scripted_agent(
    handler: RequestHandler | None = None, **options: Any
) -> AsyncIterator[tuple[Agent, Connection]]:
    """``(agent, peer)``: a client `Agent` (``connect_streams(**options)``) and the agent-side
    `Connection` it talks to, in memory. ``handler(method, params)`` answers the client's
    requests; raising `MethodNotFound` falls back to `DEFAULT_ANSWERS`."""

    async def answer(method: str, params: Any) -> Any:
        if handler is not None:
            try:
                return await handler(method, params)
            except MethodNotFound:
                pass
        if method not in DEFAULT_ANSWERS:
            raise MethodNotFound(method)
        return DEFAULT_ANSWERS[method]

    client_send, peer_receive = memory_byte_pipe(64)
    peer_send, client_receive = memory_byte_pipe(64)
    peer = Connection(peer_receive, peer_send, name="client", request_handler=answer)
    async with peer, connect_streams(client_receive, client_send, **options) as agent:
        yield agent, peer
