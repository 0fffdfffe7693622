from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from acp_notebook._errors import AgentExited, RpcError
from acp_notebook._process import AgentProcess, open_agent_connection

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


FAKE = str(Path(__file__).parent / "fakes" / "agent.py")
AGENT = [sys.executable, FAKE]


def _live_members(pgid: int) -> list[int]:
    """Pids of the non-zombie processes in a process group."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        state, group = fields[0], int(fields[2])
        if group == pgid and state != "Z":
            pids.append(int(entry))
    return pids


def _wait_until_gone(pgid: int, timeout: float = 20.0) -> list[int]:
    """Wait for a process group to disappear; returns the members left at the deadline."""
    deadline = time.monotonic() + timeout
    while (left := _live_members(pgid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


async def test_argv_must_be_a_list() -> None:
    with pytest.raises(TypeError):
        await AgentProcess.start(f"{sys.executable} {FAKE}")
    with pytest.raises(TypeError):
        async with open_agent_connection(b"agent"):  # type: ignore[arg-type]
            pass
    with pytest.raises(ValueError):
        await AgentProcess.start([])


async def test_round_trip_with_env_and_cwd(tmp_path: Path) -> None:
    async with open_agent_connection(AGENT, cwd=tmp_path, env={"ACP_FAKE_VAR": "hello"}) as (
        proc,
        conn,
    ):
        assert await conn.request("echo", {"x": [1, "é"]}) == {"x": [1, "é"]}
        assert await conn.request("env", {"name": "ACP_FAKE_VAR"}) == "hello"
        assert await conn.request("env", {"name": "PATH"}) == os.environ["PATH"]
        assert Path(await conn.request("cwd")).resolve() == tmp_path.resolve()
        info = await conn.request("pid")
        assert info == {"pid": proc.pid, "pgid": proc.pid}  # its own process group
        with pytest.raises(RpcError) as err:
            await conn.request("nope")
        assert err.value.code == -32601
    assert proc.returncode == 0  # closing stdin was enough


async def test_crash_mid_request_fails_pending_and_later_requests() -> None:
    async with open_agent_connection(AGENT) as (proc, conn):
        with pytest.raises(AgentExited) as first:
            await conn.request("crash")
        error = first.value
        assert error.returncode == 3 and error.signal is None
        assert "exited with code 3" in str(error)
        assert "fatal: the fake agent crashed" in str(error)
        with pytest.raises(AgentExited) as later:
            await conn.request("echo", {})
        assert later.value is error
        assert conn.closed
    assert proc.returncode == 3


async def test_killed_by_signal() -> None:
    async with open_agent_connection(AGENT) as (proc, conn):
        with pytest.raises(AgentExited) as info:
            await conn.request("kill_self")
    assert info.value.signal == "SIGKILL"
    assert info.value.returncode == -9
    assert "SIGKILL" in str(info.value)
    assert proc.exit_signal == "SIGKILL"


async def test_stderr_flood_does_not_stall() -> None:
    flood = 20 * 10**6
    async with open_agent_connection(AGENT, stderr_limit=64 * 1024) as (proc, conn):
        assert await conn.request("stderr_flood", {"bytes": flood}) == "flooded"
        assert await conn.request("echo", "still alive") == "still alive"
    await proc.exit_error()  # stderr read to its end
    tail = proc.stderr_tail()
    assert tail.endswith("END-OF-FLOOD\n")
    assert len(tail) <= 64 * 1024
    assert proc.stderr_tail(5) == "LOOD\n"
    assert proc.stderr_total_bytes >= flood


@pytest.mark.parametrize(
    ("flags", "expected_signal"),
    [(["--ignore-eof"], "SIGTERM"), (["--ignore-eof", "--ignore-term"], "SIGKILL")],
)
async def test_bounded_shutdown(flags: list[str], expected_signal: str) -> None:
    async with AgentProcess.spawn([*AGENT, *flags], grace=0.3) as proc:
        await proc.stdin.send(b'{"jsonrpc":"2.0","id":1,"method":"spawn_grandchild"}\n')
        data = b""
        while not data.endswith(b"\n"):
            data += await proc.stdout.receive()
        grandchild = json.loads(data)["result"]
        assert grandchild["pgid"] == proc.pid
    assert proc.exit_signal == expected_signal
    assert _wait_until_gone(proc.pid) == []


def test_no_orphans_after_interpreter_exit(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import json, anyio
        from acp_notebook._process import AgentProcess

        async def main():
            proc = await AgentProcess.start({[*AGENT, "--ignore-eof", "--ignore-term"]!r})
            await proc.stdin.send(b'{{"jsonrpc":"2.0","id":1,"method":"spawn_grandchild"}}\\n')
            data = b""
            while not data.endswith(b"\\n"):
                data += await proc.stdout.receive()
            grandchild = json.loads(data)["result"]
            print(json.dumps({{"pgid": proc.pid, "grandchild": grandchild}}), flush=True)
            # Leave without closing anything: the atexit hook must clean up.

        anyio.run(main)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    pgid = report["pgid"]
    assert report["grandchild"]["pgid"] == pgid
    assert _wait_until_gone(pgid) == []


async def test_spawn_rejects_missing_program(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        async with AgentProcess.spawn([str(tmp_path / "no-such-agent")]):
            pass


async def test_exit_while_idle_fails_next_request() -> None:
    async with open_agent_connection(AGENT) as (proc, conn):
        await conn.request("echo", 1)
        await proc.stdin.aclose()  # the fake exits on end of input
        await conn.wait_closed()
        with pytest.raises(AgentExited) as info:
            await conn.request("echo", 2)
    assert info.value.returncode == 0
    assert "exited with code 0" in str(info.value)
    assert isinstance(conn.close_error(), AgentExited)
