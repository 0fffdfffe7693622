"""No orphans, ever: what an agent started in a real kernel is gone after the kernel is.

The agent (agents/stubborn_agent.py) ignores end of input, SIGTERM, SIGHUP and SIGINT, and
has a child in its process group that ignores them too. Whether the kernel is shut down the
way Jupyter does it by default (a shutdown request, SIGTERM after 2.5 s, SIGKILL after 5 s) or
killed outright, no process of the agent's group (agent, child) nor its watchdog may outlive
the kernel by more than a few seconds.

Whatever the process tree (finding 16 of issue 22): a command the embedded agent runs in its
PTY (a session of its own) from a ``--bg`` cell, and a daemon an agent double-forks out of its
session (agents/daemon_agent.py, the way Cline leaves one), are gone after ``kill -9`` of the
kernel, and the daemon after ``%acp close`` too.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.kernel_driver import Kernel, start_kernel

STUBBORN = Path(__file__).parent / "agents" / "stubborn_agent.py"
DAEMON = Path(__file__).parent / "agents" / "daemon_agent.py"
GONE_WITHIN = 10.0  # seconds after the kernel is gone; a bound, not a speed assertion


def live_members(pgid: int) -> list[int]:
    """Pids of the non-zombie processes in a process group."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            pids.append(int(entry))
    return pids


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2 :].split()[0] != "Z"


def parent_of(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rindex(")") + 2 :].split()[1])


EMBEDDED_PID = (
    "import acp_notebook._notebook._owner as n\n"
    "print(n.current().agents['embedded'].agent.process.pid)"
)


def find_command(argv: list[str]) -> int | None:
    """The pid of the live process whose command line is ``argv``, if there is one."""
    wanted = "\0".join(argv).encode() + b"\0"
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if Path(f"/proc/{entry}/cmdline").read_bytes() == wanted and alive(int(entry)):
                    return int(entry)
            except OSError:
                continue
    return None


def kill_9(k: Kernel) -> None:
    """SIGKILL the kernel (no atexit, no shutdown of its agents) and wait until it is dead."""
    provisioner = k.km.provisioner
    assert provisioner is not None
    os.kill(provisioner.pid, signal.SIGKILL)  # type: ignore[attr-defined]
    k.wait_for(lambda: not k.km.is_alive(), "the kernel to die")


def wait_all_gone(pids: set[int], pgid: int, timeout: float = GONE_WITHIN) -> list[int]:
    """Wait until none of ``pids`` and no member of ``pgid`` is alive; return the survivors."""
    deadline = time.monotonic() + timeout
    while True:
        left = sorted({p for p in pids if alive(p)} | set(live_members(pgid)))
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


@pytest.fixture
def stubborn_kernel(tmp_path: Path) -> Iterator[tuple[Kernel, dict[str, int], set[int]]]:
    """A kernel with the stubborn agent connected: (kernel, the agent's report, its group)."""
    work = tmp_path / "work"
    work.mkdir()
    pidfile = tmp_path / "stubborn.json"
    km, kc = start_kernel(str(work))
    k = Kernel(km, kc)
    report: dict[str, int] = {}
    try:
        k.run("%load_ext acp_notebook")
        out = k.run(f"%acp connect -- {sys.executable} {STUBBORN} {pidfile}").text()
        assert "Stubborn agent" in out, out
        report = json.loads(pidfile.read_text())
        assert report["pgid"] == report["pid"]  # its own group
        code = "import acp_notebook._notebook._owner as n\nfor h in n.current().agents.values():\n"
        code += "    print('supervisor', h.agent.process.supervisor_pid)"
        out = k.run(code).text()
        supervisor = int(out.split("supervisor")[1])
        report["supervisor"] = supervisor
        # the agent and its child: the group as it is while the agent runs; the watchdog is
        # the agent's parent, outside the group
        group = set(live_members(report["pgid"]))
        assert group == {report["pid"], report["child"]}
        assert parent_of(report["pid"]) == supervisor
        yield k, report, group
    finally:
        kc.stop_channels()
        if km.is_alive():
            km.shutdown_kernel(now=True)
        else:  # killed or shut down by the test: release its sockets all the same
            km.cleanup_resources()
        if "pgid" in report and live_members(report["pgid"]):  # never leave them behind
            os.killpg(report["pgid"], signal.SIGKILL)


def test_graceful_shutdown_leaves_no_orphan(
    stubborn_kernel: tuple[Kernel, dict[str, int], set[int]],
) -> None:
    k, report, group = stubborn_kernel
    k.km.shutdown_kernel()  # jupyter_client's defaults (now=False)
    assert not k.km.is_alive()
    assert wait_all_gone(group | set(report.values()), report["pgid"]) == []


def test_kill_9_of_the_kernel_leaves_no_orphan(
    stubborn_kernel: tuple[Kernel, dict[str, int], set[int]],
) -> None:
    k, report, group = stubborn_kernel
    kill_9(k)
    assert wait_all_gone(group | set(report.values()), report["pgid"]) == []


@contextmanager
def started_kernel(tmp_path: Path, leftovers: list[int]) -> Iterator[Kernel]:
    """A kernel in tmp_path/work with acp_notebook loaded; ``leftovers`` (pids the test
    appends) are SIGKILLed at the end whatever happened, so a failure leaves nothing."""
    work = tmp_path / "work"
    work.mkdir()
    km, kc = start_kernel(str(work))
    k = Kernel(km, kc)
    try:
        k.run("%load_ext acp_notebook")
        yield k
    finally:
        kc.stop_channels()
        if km.is_alive():
            km.shutdown_kernel(now=True)
        else:
            km.cleanup_resources()
        for pid in leftovers:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_bg_command_in_the_embedded_agents_pty_goes_with_kill_9_of_the_kernel(
    tmp_path: Path,
) -> None:
    """The issue's acceptance test: the PTY command leads a session of its own."""
    leftovers: list[int] = []
    with started_kernel(tmp_path, leftovers) as k:
        k.run("%acp connect")
        seconds = f"{300 + random.random():.6f}"  # the command's cmdline says it is ours
        k.run(f"%%acp --bg --allow 'sleep *'\n$ sleep {seconds}\n")
        command = k.wait_for(lambda: find_command(["sleep", seconds]), "the command to run")
        leftovers.append(command)
        agent = int(k.run(EMBEDDED_PID).text().strip())
        assert os.getsid(command) not in (os.getsid(agent), agent)  # a session of its own
        kill_9(k)
        assert wait_all_gone({command}, command) == []


@pytest.mark.parametrize("end", ["%acp close", "kill -9"])
def test_a_daemon_the_agent_double_forked_goes_with_it(tmp_path: Path, end: str) -> None:
    leftovers: list[int] = []
    with started_kernel(tmp_path, leftovers) as k:
        pidfile = tmp_path / "daemon.json"
        out = k.run(f"%acp connect -- {sys.executable} {DAEMON} {pidfile}").text()
        assert "Daemon agent" in out, out
        report = json.loads(pidfile.read_text())
        daemon = report["daemon"]
        leftovers += [daemon, report["pid"]]
        assert alive(daemon)
        assert os.getpgid(daemon) != report["pgid"]  # outside the agent's group and session
        if end == "kill -9":
            kill_9(k)
        else:
            k.run("%acp close")
            assert not alive(report["pid"])  # the agent exited at end of input
        assert wait_all_gone({daemon}, daemon) == []
