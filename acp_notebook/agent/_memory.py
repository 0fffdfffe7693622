"""The embedded agent served in this process, over in-memory byte pipes (for tests)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import NamedTuple

import anyio

from .._connection._lines import MemoryByteReceiveStream, MemoryByteSendStream, memory_byte_pipe
from ._faults import Faults
from ._scenario import Scenario
from ._server import AgentServer
from ._store import Store

__all__ = ["ClientStreams", "serve_in_memory"]


class ClientStreams(NamedTuple):
    """The client's ends of the pipes: ``receive`` what the agent writes, ``send`` to it."""

    receive: MemoryByteReceiveStream
    send: MemoryByteSendStream


@asynccontextmanager
async def serve_in_memory(
    server: AgentServer | None = None,
    *,
    data_dir: str | os.PathLike[str] | None = None,
    scenario: Scenario | None = None,
    faults: Faults | None = None,
    max_buffers: float = 64,
) -> AsyncIterator[ClientStreams]:
    """Run ``server`` (by default an `AgentServer` on a `Store` in ``data_dir``, a temporary
    directory when None) in a task, and yield the client's end of its pipes::

        async with serve_in_memory() as (receive, send):
            async with connect_streams(receive, send) as agent: ...

    Leaving the block stops the server (its turns and commands are cancelled). Faults that
    end or flood the process (``crash_after``, ``flood_stderr_mib``) are refused: here the
    process is the caller's.
    """
    if server is not None and (data_dir, scenario, faults) != (None, None, None):
        raise TypeError("give either a server or the options to build one, not both")
    async with AsyncExitStack() as stack:
        if server is None:
            if data_dir is None:
                data_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="acp-agent-"))
            server = AgentServer(Store(Path(data_dir)), scenario=scenario, faults=faults)
        if server.faults.crash_after is not None or server.faults.flood_stderr_mib is not None:
            raise ValueError("crash_after and flood_stderr_mib need an agent process")
        to_agent, agent_in = memory_byte_pipe(max_buffers)
        agent_out, from_agent = memory_byte_pipe(max_buffers)
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, agent_in, agent_out, name="in-memory agent")
            try:
                yield ClientStreams(from_agent, to_agent)
            finally:
                tg.cancel_scope.cancel()
