"""No orphans, ever: a stubborn agent in a real kernel is gone after the kernel is.

The agent (agents/stubborn_agent.py) ignores end of input, SIGTERM, SIGHUP and SIGINT, and
has a child in its process group that ignores them too. Whether the kernel is shut down the
way Jupyter does it by default (a shutdown request, SIGTERM after 2.5 s, SIGKILL after 5 s) or
killed outright, no process of the agent's group (agent, child, supervisor) may outlive the
kernel by more than a few seconds.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from jupyter_client.manager import start_new_kernel

from tests.kernel_driver import Kernel

STUBBORN = Path(__file__).parent / "agents" / "stubborn_agent.py"
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
    km, kc = start_new_kernel(kernel_name="python3", cwd=str(work))
    k = Kernel(km, kc)
    report: dict[str, int] = {}
    try:
        k.run("%load_ext acp_notebook")
        out = k.run(f"%acp connect -- {sys.executable} {STUBBORN} {pidfile}").text()
        assert "Stubborn agent" in out, out
        report = json.loads(pidfile.read_text())
        assert report["pgid"] == report["pid"]  # its own group
        code = "import acp_notebook._notebook as n\nfor h in n.current().agents.values():\n"
        code += "    print('supervisor', h.agent.process.supervisor_pid)"
        out = k.run(code).text()
        supervisor = int(out.split("supervisor")[1])
        report["supervisor"] = supervisor
        # agent, its child and the watchdog: the group as it is while the agent runs
        group = set(live_members(report["pgid"]))
        assert group == {report["pid"], report["child"], supervisor}
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
    provisioner = k.km.provisioner
    assert provisioner is not None
    kernel_pid = provisioner.pid  # type: ignore[attr-defined]
    os.kill(kernel_pid, signal.SIGKILL)
    k.wait_for(lambda: not k.km.is_alive(), "the kernel to die")
    assert wait_all_gone(group | set(report.values()), report["pgid"]) == []
