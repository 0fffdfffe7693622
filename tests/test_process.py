from __future__ import annotations

import ast
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from asyncio import base_subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_notebook._connection._errors import AgentExited, RpcError
from acp_notebook._connection._process import (
    SUPERVISOR,
    AgentProcess,
    _watch_fds,
    open_agent_connection,
)

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
        from acp_notebook._connection._process import AgentProcess

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


# -- the watchdog (_connection/_supervisor.py) -----------------------------------------------------

_WATCHED_PARENT = """
import json, os, sys, time, anyio
from acp_notebook._connection._process import AgentProcess

async def main():
    proc = await AgentProcess.start({argv!r})
    await proc.stdin.send(b'{{"jsonrpc":"2.0","id":1,"method":"spawn_grandchild"}}\\n')
    data = b""
    while not data.endswith(b"\\n"):
        data += await proc.stdout.receive()
    grandchild = json.loads(data)["result"]
    forked = None
    if {fork!r}:  # a child forked without exec (multiprocessing does it) outlives us
        forked = os.fork()
        if forked == 0:
            time.sleep(60)
            os._exit(0)
    report = {{"pgid": proc.pid, "supervisor": proc.supervisor_pid,
               "grandchild": grandchild, "forked": forked}}
    print(json.dumps(report), flush=True)
    time.sleep(600)  # killed here, with no chance to clean up

anyio.run(main)
"""


def _parent_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def _fd_targets(pid: int) -> dict[int, str]:
    """What each open descriptor of a process points to (one closed meanwhile is skipped)."""
    targets = {}
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(FileNotFoundError):
            targets[int(fd.name)] = os.readlink(fd)
    return targets


@pytest.mark.parametrize("fork", [False, True], ids=["plain", "with-a-forked-child"])
def test_watchdog_kills_the_group_when_its_parent_is_killed(fork: bool) -> None:
    argv = [*AGENT, "--ignore-eof", "--ignore-term"]
    script = _WATCHED_PARENT.format(argv=argv, fork=fork)
    with subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, start_new_session=True
    ) as parent:
        try:
            assert parent.stdout is not None
            report = json.loads(parent.stdout.readline())
            pgid, supervisor = report["pgid"], report["supervisor"]
            assert report["grandchild"]["pgid"] == pgid
            members = set(_live_members(pgid))
            assert members == {pgid, report["grandchild"]["pid"]}  # the watchdog is not in it
            assert _parent_of(pgid) == supervisor
            parent.kill()  # SIGKILL: no atexit, no aclose
            parent.wait()
            assert _wait_until_gone(pgid) == []
            assert _wait_until_gone(supervisor) == []
            if fork:  # it still holds the parent's descriptors, but not the watchdog's pipe
                assert _live_members(parent.pid) == [report["forked"]]
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(parent.pid, signal.SIGKILL)  # the forked child, if any


async def test_watchdog_holds_only_its_pipe_and_the_agent_not_even_that() -> None:
    async with AgentProcess.spawn(AGENT) as first, AgentProcess.spawn(AGENT) as second:
        for proc in (first, second):
            assert proc.supervisor_pid is not None
            assert set(_live_members(proc.pid)) == {proc.pid}  # it leads a group of its own
            watchdog = _fd_targets(proc.supervisor_pid)
            assert {watchdog[fd] for fd in (0, 1, 2)} == {os.devnull}  # not the agent's stdio
            (pipe,) = [t for fd, t in watchdog.items() if fd > 2]
            ours = _watch_fds[proc.supervisor_pid]
            assert pipe == f"pipe:[{os.fstat(ours).st_ino}]"  # our end is the other end
            assert os.get_inheritable(ours) is False
            assert Path(f"/proc/{proc.supervisor_pid}/cwd").resolve() == Path("/")
            # the watchdog is our child, the agent is the watchdog's, and the agent holds no
            # watchdog pipe, its own nor the other's
            assert _parent_of(proc.supervisor_pid) == os.getpid()
            assert _parent_of(proc.pid) == proc.supervisor_pid
            for other in (first, second):
                assert other.supervisor_pid is not None
                pipes = [t for fd, t in _fd_targets(other.supervisor_pid).items() if fd > 2]
                assert not set(pipes) & set(_fd_targets(proc.pid).values())
    for proc in (first, second):
        assert proc.returncode == 0  # closing stdin was enough, as before
        assert _wait_until_gone(proc.pid) == []
        assert proc.supervisor_pid is not None and not Path(f"/proc/{proc.supervisor_pid}").exists()
        assert proc.supervisor_pid not in _watch_fds


async def test_failed_exec_leaves_no_watchdog(tmp_path: Path) -> None:
    before = dict(_watch_fds)
    missing = str(tmp_path / "no-such-agent")
    with pytest.raises(FileNotFoundError) as info:
        await AgentProcess.start([missing])
    assert info.value.filename == missing
    not_executable = tmp_path / "not-executable"
    not_executable.write_text("#!/bin/sh\n")
    with pytest.raises(PermissionError):
        await AgentProcess.start([str(not_executable)])
    launchers = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            cmdline = (entry / "cmdline").read_bytes()
            if str(tmp_path).encode() in cmdline and b"_supervisor.py" in cmdline:
                launchers.append(int(entry.name))
    deadline = time.monotonic() + 20
    while launchers and time.monotonic() < deadline:
        launchers = [p for p in launchers if _live_members(p)]
        time.sleep(0.05)
    assert launchers == []
    assert _watch_fds == before  # nothing kept for the failed starts


def _imported_at_startup(*args: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-X", "importtime", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    lines = [line for line in done.stderr.splitlines() if line.startswith("import time:")]
    return {line.rsplit("|", 1)[1].strip() for line in lines[1:]}


def test_launcher_imports_nothing_but_the_signal_module() -> None:
    tree = ast.parse(Path(SUPERVISOR).read_text("utf-8"))
    imported = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    lazy = {"ctypes", "_thread", "fcntl", "termios"}  # imported in the functions that use them
    assert imported <= {"__future__", "os", "signal", "_signal", "sys", "time", *lazy}
    # what running it adds to a bare interpreter's startup (usage error: it exits at once)
    bare = _imported_at_startup("-c", "import __future__, os, sys, time")
    launcher = _imported_at_startup(SUPERVISOR)
    assert "os" in launcher and "enum" not in launcher  # not `signal`, which imports enum
    assert launcher - bare <= {"_signal"}


def test_spawn_in_pty_runs_the_argv_on_a_pty_and_a_failed_exec_leaves_nothing(
    tmp_path: Path,
) -> None:
    from acp_notebook._connection._process import spawn_in_pty

    child = spawn_in_pty(
        [sys.executable, "-c", "import os,sys; print(os.isatty(1), os.get_terminal_size())"],
        cwd=str(tmp_path),
        env=dict(os.environ),
        cols=91,
        rows=17,
    )
    try:
        assert child.process.wait(30) == 0
        out = b""
        deadline = time.monotonic() + 10
        while b"\n" not in out and time.monotonic() < deadline:
            try:
                out += os.read(child.master, 4096)
            except BlockingIOError:
                time.sleep(0.02)
        assert b"True" in out and b"columns=91, lines=17" in out
    finally:
        os.close(child.master)
        os.close(child.watch)
    with pytest.raises(FileNotFoundError):
        spawn_in_pty([str(tmp_path / "nope")], cwd=None, env=dict(os.environ), cols=80, rows=24)


async def test_a_stuck_watchdog_is_killed_after_watchdog_wait(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from acp_notebook._connection import _process

    monkeypatch.setattr(_process, "WATCHDOG_WAIT", 0.2)
    proc = await AgentProcess.start(AGENT)
    assert proc.supervisor_pid is not None
    os.kill(proc.supervisor_pid, signal.SIGSTOP)  # it can neither see the agent go nor exit
    await proc.aclose(grace=0, term_grace=0)
    assert proc.returncode == -signal.SIGKILL  # the watchdog's own end, not the agent's
    assert _wait_until_gone(proc.pid) == []


def test_read_pty_gives_bytes_then_not_yet_then_its_end() -> None:
    from acp_notebook._connection._process import NOT_YET, read_pty

    master, slave = os.openpty()
    try:
        os.set_blocking(master, False)
        assert read_pty(master, 1024) == NOT_YET  # nothing written yet
        os.write(slave, b"hello")
        data = b""
        deadline = time.monotonic() + 10
        while len(data) < 5 and time.monotonic() < deadline:
            data += read_pty(master, 1024) or b""
        assert data == b"hello"
        os.close(slave)
        slave = -1
        assert read_pty(master, 1024) is None  # EIO: nobody holds the other side
    finally:
        os.close(master)
        if slave >= 0:
            os.close(slave)


def test_a_cancel_while_asyncio_connects_the_pipes_leaves_no_agent_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Found once in a loaded full run (an Interrupt during `%acp connect`): cancelled while
    # asyncio connected the watchdog's pipes, its spawn SIGKILLed the watchdog after the
    # agent was forked, and the agent slept on, reparented, its pipes left unclosed. Here the
    # pipes connect only once the spawn was cancelled, after the agent began.
    pid_file = tmp_path / "pid"
    transport = base_subprocess.BaseSubprocessTransport
    connect_pipes = transport._connect_pipes

    cancelled = asyncio.Event()

    async def once_cancelled(self: Any, waiter: Any) -> None:
        await asyncio.wait_for(cancelled.wait(), 60)
        await connect_pipes(self, waiter)

    monkeypatch.setattr(transport, "_connect_pipes", once_cancelled)
    part = f"{pid_file}.part"
    sleeper = (
        f"import os, time; open({part!r}, 'w').write(str(os.getpid()));"
        f" os.replace({part!r}, {str(pid_file)!r}); time.sleep(1000)"
    )
    started: list[AgentProcess] = []

    async def main() -> None:
        async def start() -> None:
            started.append(await AgentProcess.start([sys.executable, "-c", sleeper]))

        async with anyio.create_task_group() as tg:
            tg.start_soon(start)
            while not pid_file.exists():  # the agent runs, its pipes not yet connected
                await anyio.sleep(0.01)
            tg.cancel_scope.cancel()
            cancelled.set()

    anyio.run(main, backend="asyncio")
    pid = int(pid_file.read_text())
    left = _live_members(pid)  # the agent's group (its own session)
    for member in left:  # (not to outlive a failure)
        os.kill(member, signal.SIGKILL)
    assert started == []  # the cancel ended the start
    assert left == []
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # and the agent reaped
