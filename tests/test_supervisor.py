"""_connection._supervisor: the launcher is a watchdog (a child subreaper on Linux) whose child
is the agent; it ends the agent's whole process tree when the kernel's end of the watch pipe
closes or the agent exits, and then exits as the agent did.

The processes are the point here, so these tests start the launcher for real, the way
``_process`` does (``python -I -S _supervisor.py WATCH_FD STATUS_FD -- ARGV``)."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from acp_notebook._connection import _supervisor

SUPERVISOR = _supervisor.__file__
pytestmark = pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")


def _alive(pid: int) -> bool:
    """Running, and not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rindex(b")") + 2 :].split()[0] != b"Z"


def _wait_gone(pid: int, deadline: float = 20.0) -> bool:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if not _alive(pid):
            return True
        time.sleep(0.02)
    return False


@dataclass
class Launched:
    process: subprocess.Popen[bytes]
    watch_w: int
    status: str  # what the launcher reported on STATUS_FD

    @property
    def agent(self) -> int:
        """The agent's pid (``A <pid>`` in the report)."""
        (pid,) = [int(line[2:]) for line in self.status.splitlines() if line.startswith("A ")]
        return pid


Launch = Callable[..., Launched]


@pytest.fixture
def launch() -> Iterator[Launch]:
    started: list[Launched] = []

    def start(*argv: str) -> Launched:
        watch_r, watch_w = os.pipe()
        status_r, status_w = os.pipe()
        process = subprocess.Popen(
            [sys.executable, "-I", "-S", SUPERVISOR, str(watch_r), str(status_w), "--", *argv],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            start_new_session=True,
            pass_fds=(watch_r, status_w),
        )
        os.close(watch_r)
        os.close(status_w)
        chunks = []
        while chunk := os.read(status_r, 512):  # ends when the agent is exec'd
            chunks.append(chunk)
        os.close(status_r)
        launched = Launched(process, watch_w, b"".join(chunks).decode())
        started.append(launched)
        return launched

    yield start
    for launched in started:
        with contextlib.suppress(OSError):  # the test may have closed it
            os.close(launched.watch_w)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(launched.process.pid, signal.SIGKILL)
        launched.process.wait()
        if launched.process.stdout:
            launched.process.stdout.close()


def _parent_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as f:
        stat = f.read()
    return int(stat[stat.rindex(b")") + 2 :].split()[1])


def test_the_agent_is_the_watchdogs_child_and_leads_its_own_session(launch: Launch) -> None:
    code = "import os; print(os.getpid(), os.getpgid(0), os.getsid(0), os.getppid())"
    launched = launch(sys.executable, "-c", code)
    out, _ = launched.process.communicate(timeout=30)
    agent = launched.agent
    assert out.decode().split() == [str(agent)] * 3 + [str(launched.process.pid)]
    assert launched.process.returncode == 0


@pytest.mark.parametrize(
    ("code", "expected"),
    [("raise SystemExit(3)", 3), ("import os; os.kill(os.getpid(), 9)", -signal.SIGKILL)],
    ids=["exit-code", "signal"],
)
def test_the_watchdog_exits_as_the_agent_did(launch: Launch, code: str, expected: int) -> None:
    launched = launch(sys.executable, "-c", code)
    assert launched.process.wait(timeout=30) == expected


def test_closing_the_watch_pipe_ends_the_agent_its_children_and_the_watchdog(
    launch: Launch,
) -> None:
    launched = launch("sh", "-c", "sleep 60 & echo $!; wait")
    watchdog = launched.process.pid
    assert launched.process.stdout is not None
    grandchild = int(launched.process.stdout.readline())
    assert _alive(watchdog)
    assert _alive(grandchild)
    assert os.getpgid(launched.agent) == launched.agent != os.getpgid(watchdog)
    os.close(launched.watch_w)
    assert launched.process.wait(timeout=30) == -signal.SIGTERM
    assert _wait_gone(grandchild)


# An agent that starts a command in a session of its own (as a PTY does) and a daemon that
# double-forks out of its session; it prints both pids, then waits (or exits with "exit").
ESCAPER = r"""
import os, subprocess, sys, time
command = subprocess.Popen(["sleep", "300"], start_new_session=True)
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.write(w, b"%d\n" % os.getpid())
        time.sleep(300)
    os._exit(0)
os.wait()
daemon = int(os.read(r, 64))
print(command.pid, daemon, flush=True)
if sys.argv[1] == "exit":
    # once the test has seen both run (it then makes the file named next): the watchdog stops
    # what an agent leaves as soon as the agent exits
    while not os.path.exists(sys.argv[2]):
        time.sleep(0.01)
    sys.exit(5)
time.sleep(300)
"""


def _escaped(launched: Launched) -> list[int]:
    """The command's and the daemon's pids, once both run outside the agent's group."""
    assert launched.process.stdout is not None
    pids = [int(p) for p in launched.process.stdout.readline().split()]
    for pid in pids:
        assert _alive(pid)
        assert os.getpgid(pid) != launched.agent  # outside the agent's group
    return pids


def test_an_agents_daemon_and_its_command_in_another_session_go_when_the_pipe_closes(
    launch: Launch,
) -> None:
    launched = launch(sys.executable, "-c", ESCAPER, "wait")
    command, daemon = _escaped(launched)
    assert _parent_of(daemon) == launched.process.pid  # reparented to the subreaper
    os.close(launched.watch_w)
    assert launched.process.wait(timeout=30) == -signal.SIGTERM
    assert _wait_gone(command)
    assert _wait_gone(daemon)


def test_what_an_exiting_agent_left_anywhere_goes_before_the_watchdog_exits(
    launch: Launch, tmp_path: Path
) -> None:
    go = tmp_path / "exit now"
    launched = launch(sys.executable, "-c", ESCAPER, "exit", str(go))
    # (the agent waits for it: an agent that exited at once had its leftovers stopped before the
    # test could see them run, a loaded CI run found)
    command, daemon = _escaped(launched)
    go.touch()
    assert launched.process.wait(timeout=30) == 5  # the agent's code, once all is gone
    assert not _alive(command)
    assert not _alive(daemon)


def test_an_agent_that_ignores_sigterm_is_killed(launch: Launch) -> None:
    code = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN);"
        " print(1, flush=True); time.sleep(60)"
    )
    launched = launch(sys.executable, "-c", code)
    assert launched.process.stdout is not None
    assert launched.process.stdout.readline() == b"1\n"  # SIGTERM is ignored from here on
    os.close(launched.watch_w)
    assert launched.process.wait(timeout=30) == -signal.SIGKILL


def test_the_watchdog_ignores_the_signals_an_agent_or_terminal_sends(launch: Launch) -> None:
    launched = launch("sleep", "60")
    watchdog = launched.process.pid
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        os.kill(watchdog, sig)
    assert _alive(watchdog) and _alive(launched.agent)
    os.killpg(launched.agent, signal.SIGTERM)  # the agent's group: the watchdog is not in it
    assert launched.process.wait(timeout=30) == -signal.SIGTERM


def test_an_exec_failure_is_reported_with_its_errno(launch: Launch) -> None:
    launched = launch("/nonexistent/agent-binary")
    assert f"E {errno.ENOENT}" in launched.status.splitlines()
    assert launched.agent > 0
    assert launched.process.wait(timeout=30) == 127


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["3", "4", "--"],
        ["3", "4", "x", "true"],
        ["a", "4", "--", "true"],
        ["3", "4", "--ctty", "true"],
    ],
    ids=["none", "no argv", "no --", "not a number", "--ctty but no --"],
)
def test_bad_arguments_print_the_usage(args: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-I", "-S", SUPERVISOR, *args], capture_output=True, timeout=30
    )
    assert done.returncode == 1
    assert _supervisor.USAGE.encode() in done.stderr


def test_remaining_sees_descendants_and_group_members_but_not_zombies() -> None:
    member = subprocess.Popen(["sleep", "60"], start_new_session=True)
    child = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        assert _supervisor.remaining(os.getpid(), member.pid) >= {member.pid, child.pid}
        assert child.pid not in (_supervisor.remaining(member.pid, member.pid) or set())
        os.kill(member.pid, signal.SIGKILL)
        assert _wait_gone(member.pid)  # a zombie until it is waited for
        assert member.pid not in (_supervisor.remaining(os.getpid(), member.pid) or set())
    finally:
        for process in (member, child):
            process.kill()
            process.wait()
