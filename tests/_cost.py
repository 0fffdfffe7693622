"""Where the suite's time goes, by test module: wall time and CPU time, printed at the end.

``--durations`` names the slowest tests, but the tests step is bound by the machine's two cores
as much as by its longest tests, so the question is which modules spend the CPU. Each phase of
each test (setup, call, teardown) is charged the CPU time its worker and the worker's finished
children (kernels, agents, servers, browsers: counted once they are waited for) spent since the
worker's previous phase ended; a module-scoped fixture is charged to the phases that start and
stop it. Under xdist the figures travel to the controller in the reports' ``user_properties``.

tests/conftest.py registers :class:`CostReport`; ``-p no:acp-cost`` turns it off.
"""

from __future__ import annotations

import resource
from collections import defaultdict
from collections.abc import Generator
from typing import Any

import pytest

#: how many modules the summary lists
SHOWN = 25
_KEY = "cpu_s"


def cpu_seconds() -> float:
    """User and system CPU of this process and of its children that have been waited for."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


def module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


class CostReport:
    """The plugin: charges each report its CPU (workers), sums them by module (controller)."""

    def __init__(self) -> None:
        self._last = cpu_seconds()
        self.wall: defaultdict[str, float] = defaultdict(float)
        self.cpu: defaultdict[str, float] = defaultdict(float)

    def pytest_collection_finish(self) -> None:
        self._last = cpu_seconds()  # the tests' cost starts here, not the collection's

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: Any) -> Generator[None, Any, None]:
        outcome = yield
        report = outcome.get_result()
        now = cpu_seconds()
        spent, self._last = now - self._last, now
        # a new list: the report shares the item's, which every phase would add to
        report.user_properties = [*report.user_properties, (_KEY, round(spent, 3))]

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        module = module_of(report.nodeid)
        self.wall[module] += report.duration
        self.cpu[module] += sum(float(v) for k, v in report.user_properties if k == _KEY)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.wall or hasattr(terminalreporter.config, "workerinput"):
            return
        tr = terminalreporter
        tr.write_sep("=", f"cost by module (the {SHOWN} that took most CPU)")
        tr.write_line(f"{'CPU s':>8} {'wall s':>8}  module")
        for module in sorted(self.cpu, key=lambda m: -self.cpu[m])[:SHOWN]:
            tr.write_line(f"{self.cpu[module]:8.1f} {self.wall[module]:8.1f}  {module}")
        tr.write_line(
            f"{sum(self.cpu.values()):8.1f} {sum(self.wall.values()):8.1f}  "
            f"all {len(self.wall)} modules"
        )
