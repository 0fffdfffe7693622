"""Where the suite's time goes, by test module: wall time and CPU time, printed at the end.

``--durations`` names the slowest tests, but the tests step is bound by the machine's two cores
as much as by its longest tests, so the question is which modules spend the CPU. Each phase of
each test (setup, call, teardown) is charged the CPU time its worker and everything the worker
started spent since the worker's previous phase ended; a module-scoped fixture is charged to the
phases that start and stop it. Under xdist the figures travel to the controller in the reports'
``user_properties``.

"Everything the worker started" is exact where the process may make a CPU-accounting cgroup (root
on Linux, as in CI): each pytest process moves into one of its own, and every process started
below it stays there, counted as it runs, even one that is never waited for (a browser's
renderers, a kernel's server, an orphan). Elsewhere it falls back to ``getrusage``: the process
and the children it has waited for, which misses most of a browser's CPU.

tests/conftest.py registers :class:`CostReport`; ``-p no:acp-cost`` turns it off.
"""

from __future__ import annotations

import contextlib
import os
import resource
from collections import defaultdict
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import pytest

#: how many modules the summary lists
SHOWN = 25
#: every module's figures, written at the end of a run (under the root dir; git-ignored)
TABLE = Path("test-artifacts") / "cost-by-module.tsv"
_KEY = "cpu_s"


def rusage_seconds() -> float:
    """User and system CPU of this process and of its children that have been waited for."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


#: where a CPU-accounting cgroup can be made: cgroup v1's cpuacct hierarchy (its counter in
#: nanoseconds), then cgroup v2 (``usage_usec`` in ``cpu.stat``, kept without any controller)
HIERARCHIES = (
    Path("/sys/fs/cgroup/cpuacct"),
    Path("/sys/fs/cgroup/unified"),
    Path("/sys/fs/cgroup"),
)


def _reader(group: Path) -> Callable[[], float]:
    usage = group / "cpuacct.usage"
    if usage.is_file():
        return lambda: int(usage.read_text()) / 1e9
    stat = group / "cpu.stat"

    def from_stat() -> float:
        for line in stat.read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "usage_usec":
                return int(value) / 1e6
        raise OSError(f"no usage_usec in {stat}")

    return from_stat


class Meter:
    """This process's CPU meter: a cgroup of its own where one can be made, else getrusage."""

    def __init__(self) -> None:
        self.group: Path | None = None
        self.read: Callable[[], float] = rusage_seconds
        if os.environ.get("ACP_COST_CGROUP", "1") == "0" or not hasattr(os, "geteuid"):
            return
        for hierarchy in HIERARCHIES:
            if not (hierarchy / "cgroup.procs").is_file() or not os.access(hierarchy, os.W_OK):
                continue
            group = hierarchy / f"acp-tests-{os.getpid()}"
            try:
                group.mkdir(exist_ok=True)
                read = _reader(group)
                (group / "cgroup.procs").write_text(str(os.getpid()))
                read()
            except OSError:
                with contextlib.suppress(OSError):
                    group.rmdir()
                continue
            self.group, self.read = group, read
            return

    def close(self) -> None:
        """Back to the parent group, and the group removed (unless a process is still in it)."""
        if self.group is None:
            return
        with contextlib.suppress(OSError):
            (self.group.parent / "cgroup.procs").write_text(str(os.getpid()))
            self.group.rmdir()
        self.group = None


def module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


class CostReport:
    """The plugin: charges each report its CPU (workers), sums them by module (controller)."""

    def __init__(self) -> None:
        self._meter = Meter()
        self._last = self._meter.read()
        self.wall: defaultdict[str, float] = defaultdict(float)
        self.cpu: defaultdict[str, float] = defaultdict(float)

    def pytest_collection_finish(self) -> None:
        self._last = self._meter.read()  # the tests' cost starts here, not the collection's

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: Any) -> Generator[None, Any, None]:
        outcome = yield
        report = outcome.get_result()
        now = self._meter.read()
        spent, self._last = now - self._last, now
        # a new list: the report shares the item's, which every phase would add to
        report.user_properties = [*report.user_properties, (_KEY, round(spent, 3))]

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        module = module_of(report.nodeid)
        self.wall[module] += report.duration
        self.cpu[module] += sum(float(v) for k, v in report.user_properties if k == _KEY)

    def pytest_unconfigure(self) -> None:
        self._meter.close()

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.wall or hasattr(terminalreporter.config, "workerinput"):
            return
        tr = terminalreporter
        with contextlib.suppress(OSError):
            write_table(tr.config.rootpath / TABLE, self.cpu, self.wall)
        how = "everything they started" if self._meter.group else "waited-for children only"
        tr.write_sep("=", f"cost by module (the {SHOWN} that took most CPU; {how})")
        tr.write_line(f"{'CPU s':>8} {'wall s':>8}  module")
        for module in sorted(self.cpu, key=lambda m: -self.cpu[m])[:SHOWN]:
            tr.write_line(f"{self.cpu[module]:8.1f} {self.wall[module]:8.1f}  {module}")
        tr.write_line(
            f"{sum(self.cpu.values()):8.1f} {sum(self.wall.values()):8.1f}  "
            f"all {len(self.wall)} modules"
        )


def write_table(path: Path, cpu: dict[str, float], wall: dict[str, float]) -> None:
    """Every module's CPU and wall seconds, most CPU first, tab-separated (the summary above
    shows only the first :data:`SHOWN`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [f"{cpu.get(m, 0.0):.1f}\t{wall[m]:.1f}\t{m}" for m in wall]
    rows.sort(key=lambda row: -float(row.split("\t", 1)[0]))
    path.write_text("cpu_s\twall_s\tmodule\n" + "".join(row + "\n" for row in rows))
