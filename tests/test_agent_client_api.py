"""The embedded agent's acceptance criteria, driven by our high-level client API
(`connect_streams` to the agent served in memory)."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from pathlib import Path

import anyio
import pytest

from acp_notebook import Agent, PermissionHandler
from acp_notebook._protocol import RequestPermissionRequest
from tests._memory import embedded_in_memory

pytestmark = pytest.mark.anyio

HANG_GUARD = 30  # against a hung test only


def allow_once(request: RequestPermissionRequest) -> str:
    return next(o.option_id for o in request.options if o.kind == "allow_once")


def reject_once(request: RequestPermissionRequest) -> str:
    return next(o.option_id for o in request.options if o.kind == "reject_once")


def embedded(data_dir: Path, permission: PermissionHandler) -> AbstractAsyncContextManager[Agent]:
    """The embedded agent served in this process (the subprocess is tested in test_agent_e2e)."""
    return embedded_in_memory(data_dir=data_dir, permission=permission)


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


async def test_printf_exit_3_exact_bytes(tmp_path: Path, cwd: Path) -> None:
    async with embedded(tmp_path / "data", allow_once) as agent:
        session = await agent.new_session(cwd)
        turn = await session.prompt("$ printf 'a\\nb\\n'; exit 3")
        with anyio.fail_after(HANG_GUARD):
            stop = await turn.wait()
        (call,) = session.state.tool_calls.values()
        (terminal_id,) = call.terminal_ids
        terminal = session.state.terminals[terminal_id]
    assert stop == "end_turn"
    assert terminal.data == b"a\r\nb\r\n"  # the PTY maps \n to \r\n (ONLCR), as a terminal does
    assert terminal.exit_status.exit_code == 3
    assert call.status == "failed"


async def test_rejected_touch_leaves_no_file(tmp_path: Path, cwd: Path) -> None:
    async with embedded(tmp_path / "data", reject_once) as agent:
        session = await agent.new_session(cwd)
        turn = await session.prompt("$ touch x")
        with anyio.fail_after(HANG_GUARD):
            await turn.wait()
        (call,) = session.state.tool_calls.values()
    assert not (cwd / "x").exists()
    assert call.status == "failed"


async def test_cancelled_sleep_ends_within_two_seconds(tmp_path: Path, cwd: Path) -> None:
    async with embedded(tmp_path / "data", allow_once) as agent:
        session = await agent.new_session(cwd)
        turn = await session.prompt("$ sleep 30")
        with anyio.fail_after(HANG_GUARD):
            async for _ in turn.updates():
                if any(c.status == "in_progress" for c in session.state.tool_calls.values()):
                    break
        await session.cancel()
        with anyio.fail_after(2):  # the acceptance criterion itself
            stop = await turn.wait()
        (call,) = session.state.tool_calls.values()
        terminal = session.state.terminals[call.terminal_ids[0]]
    assert stop == "cancelled"
    assert terminal.exit_status.signal in ("SIGINT", "SIGKILL")
    assert call.status == "cancelled"


async def test_write_outside_cwd_is_refused(tmp_path: Path, cwd: Path) -> None:
    async with embedded(tmp_path / "data", allow_once) as agent:
        session = await agent.new_session(cwd)
        turn = await session.prompt("```file path=../escaped.txt\nowned\n```")
        with anyio.fail_after(HANG_GUARD):
            await turn.wait()
        (call,) = session.state.tool_calls.values()
    assert not (tmp_path / "escaped.txt").exists()
    assert session.permissions == []
    assert call.status == "failed"


async def test_resume_after_restart_shows_same_messages_and_bytes(
    tmp_path: Path, cwd: Path
) -> None:
    data = tmp_path / "data"
    async with embedded(data, allow_once) as agent:
        session = await agent.new_session(cwd)
        turn = await session.prompt("Hello.\n$ printf 'x\\033[1my\\n'")
        with anyio.fail_after(HANG_GUARD):
            await turn.wait()
        live_messages = {m.message_id: (m.role, m.text) for m in session.state.messages.values()}
        live_bytes = {k: t.data for k, t in session.state.terminals.items()}
        session_id = session.id
    async with embedded(data, allow_once) as agent:
        listed = await agent.list_sessions()
        resumed = await agent.resume_session(session_id, cwd, replay=True)
        messages = {m.message_id: (m.role, m.text) for m in resumed.state.messages.values()}
        replay_bytes = {k: t.data for k, t in resumed.state.terminals.items()}
    assert [s.session_id for s in listed] == [session_id]
    assert messages == live_messages
    assert replay_bytes == live_bytes
    assert list(replay_bytes.values()) == [b"x\x1b[1my\r\n"]
