"""acp_notebook._supervisor: the launcher execs the agent (same pid) and leaves a watchdog that
ends the agent's whole process group when the kernel's end of the watch pipe closes.

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

import pytest

from acp_notebook import _supervisor

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


def _watchdog_pid(status: str) -> int:
    word, _, pid = status.strip().partition(" ")
    assert word == "W", status
    return int(pid)


def test_the_agent_is_the_launchers_pid_and_leads_its_group(launch: Launch) -> None:
    code = "import os; print(os.getpid(), os.getpgid(0), os.getsid(0))"
    launched = launch(sys.executable, "-c", code)
    assert launched.status.startswith("W ")
    out, _ = launched.process.communicate(timeout=30)
    assert out.decode().split() == [str(launched.process.pid)] * 3
    assert launched.process.returncode == 0


def test_closing_the_watch_pipe_ends_the_agent_its_children_and_the_watchdog(
    launch: Launch,
) -> None:
    launched = launch("sh", "-c", "sleep 60 & echo $!; wait")
    watchdog = _watchdog_pid(launched.status)
    assert launched.process.stdout is not None
    grandchild = int(launched.process.stdout.readline())
    assert _alive(watchdog)
    assert _alive(grandchild)
    assert os.getpgid(watchdog) == launched.process.pid  # it stays in the agent's group
    os.close(launched.watch_w)
    assert launched.process.wait(timeout=30) == -signal.SIGTERM
    assert _wait_gone(grandchild)
    assert _wait_gone(watchdog)


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


def test_the_watchdog_ignores_signals_sent_to_the_group(launch: Launch) -> None:
    launched = launch("sleep", "60")
    watchdog = _watchdog_pid(launched.status)
    os.killpg(launched.process.pid, signal.SIGTERM)  # what an agent or terminal might do
    assert launched.process.wait(timeout=30) == -signal.SIGTERM
    assert _alive(watchdog)  # still watching: the group id stays taken
    os.close(launched.watch_w)
    assert _wait_gone(watchdog)


def test_an_exec_failure_is_reported_with_its_errno(launch: Launch) -> None:
    launched = launch("/nonexistent/agent-binary")
    lines = launched.status.splitlines()
    assert lines[0].startswith("W ")
    assert lines[1] == f"E {errno.ENOENT}"
    assert launched.process.wait(timeout=30) == 127


@pytest.mark.parametrize(
    "args",
    [[], ["3", "4", "--"], ["3", "4", "x", "true"], ["a", "4", "--", "true"]],
    ids=["none", "no argv", "no --", "not a number"],
)
def test_bad_arguments_print_the_usage(args: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-I", "-S", SUPERVISOR, *args], capture_output=True, timeout=30
    )
    assert done.returncode == 1
    assert b"usage: _supervisor.py WATCH_FD STATUS_FD -- ARGV..." in done.stderr


def test_others_alive_sees_a_live_member_but_not_a_zombie() -> None:
    child = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        assert _supervisor.others_alive(child.pid)
        os.kill(child.pid, signal.SIGKILL)
        assert _wait_gone(child.pid)  # a zombie until it is waited for
        assert not _supervisor.others_alive(child.pid)
    finally:
        child.kill()
        child.wait()
