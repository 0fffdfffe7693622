"""tests/_cost.py: the suite's CPU meter counts what a test starts, waited for or not."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests import _cost

ROOT = Path(__file__).resolve().parents[1]

#: run in a process of its own (its own group: the suite's process keeps the one it is in): a
#: grandchild burns 0.5 s of CPU and sleeps; the meter is read while it still runs
PROBE = """
import json, subprocess, sys, time
from tests import _cost
meter = _cost.Meter()
before = meter.read()
burn = "import time\\nend = time.process_time() + 0.5\\nwhile time.process_time() < end: pass\\n"
tail = "print('burnt', flush=True)\\ntime.sleep(30)"
child = subprocess.Popen([sys.executable, "-c", burn + tail], stdout=subprocess.PIPE, text=True)
child.stdout.readline()
counted = meter.read() - before
grouped = meter.group is not None
child.kill(); child.wait()
meter.close()
print(json.dumps({"grouped": grouped, "counted": counted, "closed": meter.group is None}))
"""


def test_without_a_cgroup_the_meter_reads_getrusage(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACP_COST_CGROUP", "0")
    meter = _cost.Meter()
    assert meter.group is None
    end = meter.read() + 0.2
    while meter.read() < end:  # this process's own CPU moves the counter
        pass


def test_a_child_never_waited_for_is_counted_while_it_runs() -> None:
    # What getrusage misses: a process still running (or reaped by someone else) when the
    # phase ends. Its burn shows in the group's counter before anyone waits for it.
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)
    if not said["grouped"]:
        pytest.skip("no CPU-accounting cgroup can be made here (not root, or no cgroupfs)")
    assert said["counted"] >= 0.5, said
    assert said["closed"], said


def test_the_table_lists_every_module_most_cpu_first(tmp_path: Path) -> None:
    table = tmp_path / "deep" / "cost.tsv"
    _cost.write_table(table, {"a.py": 1.0, "b.py": 12.5}, {"a.py": 3.0, "b.py": 2.0, "c.py": 0.5})
    lines = table.read_text().splitlines()
    assert lines == ["cpu_s\twall_s\tmodule", "12.5\t2.0\tb.py", "1.0\t3.0\ta.py", "0.0\t0.5\tc.py"]
