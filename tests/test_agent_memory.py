"""The transport seam: `connect_streams` over in-memory pipes, the embedded agent served in
this process (`acp_notebook.agent.serve_in_memory`), and the tests' `memory_connector`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_notebook import AgentExited, ConnectionClosed, connect_streams
from acp_notebook._client._connect import NOISE_LIMIT
from acp_notebook._client._errors import InitializeTimeout, NotSpeakingAcp
from acp_notebook._connection._jsonrpc import Connection
from acp_notebook._connection._lines import memory_byte_pipe
from acp_notebook._protocol import RequestPermissionRequest
from acp_notebook.agent import AgentServer, Store, serve_in_memory
from acp_notebook.agent._faults import Faults
from tests._memory import embedded_in_memory, memory_connector

pytestmark = pytest.mark.anyio

HANG_GUARD = 30  # against a hung test only


def allow_once(request: RequestPermissionRequest) -> str:
    return next(o.option_id for o in request.options if o.kind == "allow_once")


async def test_a_client_talks_to_the_embedded_agent_in_memory(tmp_path: Path) -> None:
    async with (
        serve_in_memory(data_dir=tmp_path) as (receive, send),
        connect_streams(receive, send) as agent,
    ):
        assert agent.process is None
        assert agent.info is not None and agent.info.name == "acp-notebook-agent"
        session = await agent.new_session(tmp_path)
        turn = await session.prompt("hello there")
        with anyio.fail_after(HANG_GUARD):
            assert await turn.wait() == "end_turn"
        assert "hello there" in turn.text
    # The server kept the session in its store, as the subprocess does.
    assert [r.session_id for r in Store(tmp_path).list()] == [session.id]


@pytest.mark.process
async def test_the_connector_runs_an_approved_command_in_memory(tmp_path: Path) -> None:
    connector = memory_connector(data_dir=tmp_path / "data")
    async with connector(permission=allow_once, initialize_timeout=10) as agent:
        session = await agent.new_session(tmp_path)
        turn = await session.prompt("$ printf in-memory")
        with anyio.fail_after(HANG_GUARD):
            assert await turn.wait() == "end_turn"
        (terminal,) = session.state.terminals.values()
        assert terminal.data == b"in-memory"
        (decision,) = session.permissions
        assert decision.option_id is not None and decision.option_id.startswith("allow")


async def test_connection_problems_reach_on_problem_in_memory(tmp_path: Path) -> None:
    seen: list[Any] = []
    async with embedded_in_memory(faults=Faults(bad_json=True), on_problem=seen.append) as agent:
        session = await agent.new_session(tmp_path)
        turn = await session.prompt("hi")
        with anyio.fail_after(HANG_GUARD):
            await turn.wait()
    assert len(seen) == 1 and seen == agent.problems
    assert "unparsable line" in str(seen[0])


async def test_a_peer_that_never_answers_initialize_times_out() -> None:
    to_peer, peer_reads = memory_byte_pipe(64)  # nobody ever reads what the client writes
    peer_writes, from_peer = memory_byte_pipe(64)
    async with peer_reads, peer_writes:
        with pytest.raises(InitializeTimeout) as caught:
            async with connect_streams(from_peer, to_peer, initialize_timeout=0.2):
                pytest.fail("initialize cannot have succeeded")
    assert caught.value.seconds == 0.2
    assert caught.value.stderr_tail == ""


@pytest.mark.parametrize("lines", [NOISE_LIMIT - 1, NOISE_LIMIT])
async def test_a_peer_that_writes_prose_instead_of_json_rpc_is_stopped_at_once(lines: int) -> None:
    # Issue 25, finding 20: a program that is not an ACP agent (or one started without its ACP
    # option) writes prose on stdout; after NOISE_LIMIT such lines the client stops waiting,
    # long before the initialize timeout. Fewer lines (a stray banner) wait for the answer.
    to_peer, peer_reads = memory_byte_pipe(64)
    peer_writes, from_peer = memory_byte_pipe(64)
    async with peer_reads, peer_writes:
        for n in range(lines):
            await peer_writes.send(f"Welcome to the tool, line {n}\n".encode())
        expected = NotSpeakingAcp if lines >= NOISE_LIMIT else InitializeTimeout
        with anyio.fail_after(HANG_GUARD), pytest.raises(expected) as caught:
            async with connect_streams(from_peer, to_peer, initialize_timeout=1.0):
                pytest.fail("initialize cannot have succeeded")
    if lines >= NOISE_LIMIT:
        assert isinstance(caught.value, NotSpeakingAcp) and caught.value.lines == NOISE_LIMIT
        assert "is it an ACP agent" in caught.value.status


async def test_a_turn_fails_when_the_peer_closes_its_stream(tmp_path: Path) -> None:
    client_send, peer_receive = memory_byte_pipe(64)
    peer_send, client_receive = memory_byte_pipe(64)
    peer = Connection(peer_receive, peer_send, name="client")
    prompted = anyio.Event()

    async def answer(method: str, params: Any) -> Any:
        if method == "initialize":
            return {"protocolVersion": 2, "info": {"name": "peer", "version": "1"}}
        if method == "session/new":
            return {"sessionId": "s1"}
        prompted.set()
        return {"messageId": "m1"}

    peer.set_request_handler(answer)
    async with peer, connect_streams(client_receive, client_send) as agent:
        session = await agent.new_session(tmp_path)
        turn = await session.prompt("go")
        await prompted.wait()
        await peer_send.aclose()  # the agent goes away mid-turn
        with anyio.fail_after(HANG_GUARD), pytest.raises(ConnectionClosed) as caught:
            await turn.wait()
        assert not isinstance(caught.value, AgentExited)  # no process: no exit status


async def test_faults_that_end_the_process_are_refused_in_memory(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="crash_after"):
        async with serve_in_memory(faults=Faults(crash_after=3)):
            pytest.fail("served a fault that would kill the test process")
    server = AgentServer(Store(tmp_path))
    with pytest.raises(TypeError):
        async with serve_in_memory(server, data_dir=tmp_path):
            pytest.fail("took both a server and the options to build one")
