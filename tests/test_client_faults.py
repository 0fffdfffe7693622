"""The client against the embedded agent's fault-injection flags, as a real subprocess.

Each test proves three things: the client survives (a later request works, or for a dead
agent every later request fails with `AgentExited`), the fault is reported clearly (in
``agent.problems``, ``session.problems`` or the exception, with the agent's stderr tail when
it died), and nothing received before the fault is lost.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

import acp_notebook as acp
from acp_notebook.agent._faults import flood_digest
from tests._schema import check_client_message

pytestmark = pytest.mark.anyio

WAIT = 30  # seconds: a generous bound for things that must happen, never a speed assertion
SCRIPT = "before the command\n$ printf 'a\\nb\\n'\nafter the command"


def allow(request: acp.RequestPermissionRequest) -> str | None:
    """Pick the first allow option offered."""
    for option in request.options:
        if str(option.kind).startswith("allow"):
            return option.option_id
    return None


def agent_argv(tmp_path: Path, *flags: str) -> list[str]:
    data = tmp_path / "agent-data"
    return [sys.executable, "-m", "acp_notebook.agent", "--data-dir", str(data), *flags]


@asynccontextmanager
async def embedded(
    tmp_path: Path, *flags: str, max_line_bytes: int = 64 * 2**20
) -> AsyncIterator[acp.Agent]:
    async with acp.connect(
        agent_argv(tmp_path, *flags),
        cwd=tmp_path,
        permission=allow,
        max_line_bytes=max_line_bytes,
    ) as agent:
        yield agent
        assert_sent_valid(agent)


def assert_sent_valid(agent: acp.Agent) -> None:
    """Everything our client sent (still in the connection log) matches the v2 schema."""
    entries = list(agent.connection.log)
    peer = {
        m["id"]: m["method"]
        for d, m in entries
        if d == "recv" and isinstance(m, dict) and "method" in m and "id" in m
    }
    for direction, message in entries:
        if direction != "send" or not isinstance(message, dict):
            continue
        if "error" in message or message.get("method") == "$/cancel_request":
            continue  # JSON-RPC-level answers (-32700) and cancels are not in the ACP $defs
        if "result" in message and message.get("id") not in peer:
            continue  # its request fell out of the bounded log
        found = check_client_message(message, peer)
        assert not found, f"invalid message from our client: {found}: {message}"


async def finish(turn: acp.Turn) -> Any:
    with anyio.fail_after(WAIT):
        return await turn.wait()


def terminal_bytes(turn: acp.Turn) -> list[bytes]:
    return [t.data for t in turn.terminals.values()]


async def run_clean_turn(session: acp.Session) -> acp.Turn:
    """The reference turn: two messages around a command whose output is ``a\\r\\nb\\r\\n``."""
    turn = await session.prompt(SCRIPT)
    assert await finish(turn) == "end_turn"
    assert "before the command" in turn.text and "after the command" in turn.text
    assert b"a\r\nb\r\n" in terminal_bytes(turn)
    assert [c.status for c in turn.tool_calls.values()] == ["completed"]
    return turn


def snapshot(turn: acp.Turn) -> tuple[str, list[bytes], list[Any]]:
    return turn.text, terminal_bytes(turn), [c.status for c in turn.tool_calls.values()]


# -- --crash-after N -------------------------------------------------------------------------


async def lines_until_first_output(tmp_path: Path) -> int:
    """In a fault-free run: how many lines the agent writes up to and including the first
    ``terminal_output_chunk`` of SCRIPT (the agent sends its messages in a fixed order)."""
    reference = tmp_path / "reference"
    reference.mkdir()
    async with embedded(reference) as agent:
        await run_clean_turn(await agent.new_session(cwd=reference))
        received = [m for d, m in agent.connection.log if d == "recv" and isinstance(m, dict)]
        assert received[0].get("id") == 0, "the log must reach back to initialize"
        for count, message in enumerate(received, start=1):
            update = (message.get("params") or {}).get("update") or {}
            if update.get("sessionUpdate") == "terminal_output_chunk":
                return count
    raise AssertionError("the reference run had no terminal output")


async def test_crash_after_n_keeps_what_arrived_and_fails_every_later_request(
    tmp_path: Path,
) -> None:
    count = await lines_until_first_output(tmp_path)
    async with embedded(tmp_path, "--crash-after", str(count)) as agent:
        session = await agent.new_session(cwd=tmp_path)
        turn = await session.prompt(SCRIPT)
        with anyio.fail_after(WAIT), pytest.raises(acp.AgentExited) as info:
            await turn.wait()
        error = info.value
        # Reported clearly: the exit code and the agent's own last words on stderr.
        assert error.returncode == 3
        assert "exited with code 3" in str(error)
        assert f"--crash-after {count}: crashing on purpose" in str(error)
        assert "crashing on purpose" in agent.stderr_tail()
        # Nothing already received is lost: the message and the output before the crash.
        assert turn.done and turn.error is error
        assert "before the command" in turn.text
        assert "after the command" not in turn.text
        # Every line the agent wrote before dying was taken in (N, counted from initialize)...
        received = [m for d, m in agent.connection.log if d == "recv" and isinstance(m, dict)]
        assert received[0].get("id") == 0 and len(received) == count
        # ...and the last of them was output: the terminal holds it (the PTY may have split
        # the output differently from the reference run, so compare as a prefix).
        (data,) = terminal_bytes(turn)
        assert data and b"a\r\nb\r\n".startswith(data)
        (decision,) = session.permissions
        assert decision.allowed
        # Every later request fails the same way, and no turn can start.
        for attempt in (
            agent.new_session(cwd=tmp_path),
            agent.list_sessions(),
            session.prompt("again"),
        ):
            with pytest.raises(acp.AgentExited) as later:
                await attempt
            assert "crashing on purpose" in str(later.value)
        assert agent.process is not None and agent.process.returncode == 3


# -- bad lines: --bad-json, --oversize-line, --bad-base64 --------------------------------------


async def test_bad_json_line_is_answered_and_reported(tmp_path: Path) -> None:
    async with embedded(tmp_path, "--bad-json") as agent:
        session = await agent.new_session(cwd=tmp_path)
        first = await run_clean_turn(session)  # the fault hit this turn too
        kept = snapshot(first)
        assert len(agent.problems) == 1
        (problem,) = agent.problems
        assert problem.kind == "unparsable" and problem.preview is not None
        assert "this is not JSON" in problem.preview
        assert str(problem).startswith("unparsable line (")
        answers = [
            m
            for d, m in agent.connection.log
            if d == "send" and isinstance(m, dict) and "error" in m
        ]
        assert [(a["id"], a["error"]["code"]) for a in answers] == [(None, -32700)]
        # A later turn works, and the first turn is untouched by the second fault.
        second = await run_clean_turn(session)
        assert len(agent.problems) == 2
        assert snapshot(first) == kept
        assert second.text == first.text
        assert not session.problems


async def test_oversize_line_is_discarded_without_buffering_it(tmp_path: Path) -> None:
    limit = 64 * 1024
    size = 4 * 2**20
    async with embedded(tmp_path, "--oversize-line", str(size), max_line_bytes=limit) as agent:
        session = await agent.new_session(cwd=tmp_path)
        first = await run_clean_turn(session)
        kept = snapshot(first)
        (problem,) = agent.problems
        assert problem.kind == "too_long" and problem.preview is None
        assert str(size) in problem.detail and str(limit) in problem.detail
        # The discarded line was an agent message: none of it leaked into the turn.
        assert "xxxx" not in first.text
        # Memory stayed bounded: the reader never held anything near the whole line.
        assert agent.connection.max_buffered < size // 4
        second = await run_clean_turn(session)
        assert len(agent.problems) == 2
        assert snapshot(first) == kept
        assert snapshot(second)[0] == kept[0]


async def test_bad_base64_chunk_is_dropped_and_reported(tmp_path: Path) -> None:
    async with embedded(tmp_path, "--bad-base64") as agent:
        session = await agent.new_session(cwd=tmp_path)
        turn = await session.prompt(SCRIPT)
        assert await finish(turn) == "end_turn"
        (problem,) = session.problems
        assert "terminal_output_chunk" in problem and "invalid base64" in problem
        faulty = [t for t in turn.terminals.values() if t.terminal_id in problem]
        assert len(faulty) == 1
        # The chunks after the bad one still arrive, and so does the exit status.
        assert faulty[0].data == b"after the bad chunk\n"
        assert faulty[0].exit_status is not None and faulty[0].exit_status.exit_code == 0
        assert sorted(terminal_bytes(turn)) == [b"a\r\nb\r\n", b"after the bad chunk\n"]
        assert "before the command" in turn.text and "after the command" in turn.text
        # The session goes on: a later turn works and reports its own bad chunk.
        await run_clean_turn(session)
        assert len(session.problems) == 2
        assert faulty[0].data == b"after the bad chunk\n"


# -- floods ----------------------------------------------------------------------------------


async def test_stderr_flood_does_not_stall_and_is_kept_bounded(tmp_path: Path) -> None:
    mib = 16
    async with embedded(tmp_path, "--flood-stderr", str(mib)) as agent:
        session = await agent.new_session(cwd=tmp_path)
        await run_clean_turn(session)  # the agent wrote 16 MiB of stderr before this turn's work
        tail = agent.stderr_tail()
        assert "stderr flood" in tail
        assert 0 < len(tail.encode()) <= 1 * 2**20  # a bounded ring buffer, not 16 MiB
        await run_clean_turn(session)
        assert not agent.problems and not session.problems


async def test_output_flood_arrives_intact(tmp_path: Path) -> None:
    total = 8 * 2**20
    async with embedded(tmp_path, "--flood-output", "8") as agent:
        session = await agent.new_session(cwd=tmp_path)
        turn = await session.prompt("flood me")
        assert await finish(turn) == "end_turn"
        (terminal,) = turn.terminals.values()
        assert len(terminal.data) == total
        digest = hashlib.sha256(terminal.data).hexdigest()
        assert digest == flood_digest(total)
        assert terminal.meta == {"acpNotebook": {"bytes": total, "sha256": digest}}
        assert terminal.exit_status is not None and terminal.exit_status.exit_code == 0
        assert f"sent {total} bytes, sha256 {digest}" in turn.text
        assert [c.status for c in turn.tool_calls.values()] == ["completed"]
        assert not agent.problems and not session.problems
        # A second flood in the same session: the first turn's bytes are still intact.
        again = await session.prompt("flood me again")
        assert await finish(again) == "end_turn"
        assert hashlib.sha256(terminal.data).hexdigest() == digest
        (second,) = again.terminals.values()
        assert second is not terminal and len(second.data) == total


# -- --hang ----------------------------------------------------------------------------------


async def test_hanging_agent_times_out_and_shuts_down(tmp_path: Path) -> None:
    with anyio.fail_after(4 * WAIT) as bound:
        async with embedded(tmp_path, "--hang") as agent:
            assert agent.info is not None  # it answered initialize, then stopped answering
            # A timeout around a request works; the request is withdrawn ($/cancel_request).
            with pytest.raises(TimeoutError), anyio.fail_after(0.5):
                await agent.new_session(cwd=tmp_path)
            # A prompt is never accepted either; the timeout leaves no turn in flight.
            session = acp.Session(agent, "sess-never-answered", str(tmp_path))
            agent.sessions[session.id] = session
            with pytest.raises(TimeoutError), anyio.fail_after(0.5):
                await session.prompt("anyone there?")
            assert session.turn is not None and session.turn.done
            with pytest.raises(acp.AcpError, match="abandoned before the agent accepted it"):
                await session.turn.wait()  # a plain error, never a stray cancellation
            with pytest.raises(TimeoutError), anyio.fail_after(0.5):
                await session.prompt("a second prompt may be tried")
            withdrawn = [
                m["id"]
                for d, m in agent.connection.log
                if d == "send"
                and isinstance(m, dict)
                and m.get("method") != "$/cancel_request"
                and m.get("method") != "initialize"
            ]
            assert len(withdrawn) == 3
            with anyio.fail_after(WAIT):
                while sorted(cancelled_ids(agent)) != sorted(withdrawn):
                    await anyio.sleep(0.02)
            assert agent.process is not None and agent.process.returncode is None
            # From here, leaving connect() must shut the agent down within a bounded time
            # (close stdin, SIGTERM, SIGKILL): tighten the outer deadline.
            bound.deadline = anyio.current_time() + WAIT
    assert agent.process.returncode is not None
    # The client is still usable: a fresh agent in the same event loop works.
    async with embedded(tmp_path) as fresh:
        await run_clean_turn(await fresh.new_session(cwd=tmp_path))


def cancelled_ids(agent: acp.Agent) -> list[Any]:
    return [
        m["params"]["requestId"]
        for d, m in agent.connection.log
        if d == "send" and isinstance(m, dict) and m.get("method") == "$/cancel_request"
    ]
