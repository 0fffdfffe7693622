"""Client agents connected to the embedded agent in memory (no subprocess).

``memory_connector(...)`` is a notebook-style connector: called with ``(permission,
elicitation, on_problem, initialize_timeout)`` it returns an async context manager yielding an
initialized `Agent` talking to an `AgentServer` served in this process::

    async with memory_connector(data_dir=tmp_path)(permission=allow) as agent: ...
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from acp_notebook import Agent, connect_streams
from acp_notebook._elicitation import ElicitationHandler
from acp_notebook._permission import PermissionHandler
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
) -> AsyncIterator[Agent]:
    """A client `Agent` connected to an embedded `AgentServer` served in memory."""
    async with (
        serve_in_memory(server, data_dir=data_dir, scenario=scenario, faults=faults) as streams,
        connect_streams(
            *streams,
            permission=permission,
            elicitation=elicitation,
            on_problem=on_problem,
            initialize_timeout=initialize_timeout,
        ) as agent,
    ):
        yield agent


def memory_connector(
    *,
    data_dir: str | os.PathLike[str] | None = None,
    scenario: Scenario | None = None,
    faults: Faults | None = None,
) -> Connector:
    """``connector(permission, elicitation, on_problem, initialize_timeout)`` (positional or
    keyword, all optional) -> an async context manager yielding an in-memory embedded agent.
    Each call serves a new `AgentServer` (on the same ``data_dir`` when one is given)."""

    def connector(
        permission: PermissionHandler | None = None,
        elicitation: ElicitationHandler | None = None,
        on_problem: Callable[..., None] | None = None,
        initialize_timeout: float | None = None,
    ) -> AbstractAsyncContextManager[Agent]:
        return embedded_in_memory(
            data_dir=data_dir,
            scenario=scenario,
            faults=faults,
            permission=permission,
            elicitation=elicitation,
            on_problem=on_problem,
            initialize_timeout=initialize_timeout,
        )

    return connector
