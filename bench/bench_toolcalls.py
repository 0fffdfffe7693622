"""A turn of 1,000 tool calls in a real kernel, and the same cell re-run (issue 29).

    python bench/bench_toolcalls.py [--calls 1000] [--runs 5] [--rounds 3] [--against TREE]
    python bench/bench_toolcalls.py --rules 200 [--runs 1] [--rounds 3] [--against TREE]

A scripted agent (``tests/adversarial/agents/toolcalls_agent.py``) makes CALLS tool calls per
prompt (announced, in progress, completed with text or a diff). One ``%%acp`` cell runs it RUNS
times, as the same cell (each run closes the view of the one before).

With ``--rules N``, the case is instead N rule-approved commands: the embedded agent, and a
cell ``%%acp --allow 'true'`` whose prompt is N lines ``$ true``, so every command is a
permission request the rule decides (nobody is asked), then a terminal. Per run, counted in the
kernel (its comm's ``publish_msg``, so no message lost on iopub skews them): ``comm_open``,
``comm_msg``, their peak over any 1 s window, and the kernel's CPU (user+sys, ``/proc``) from
the cell's request to its idle; after each run, the kernel's RSS and the widget models it keeps.
Each round starts a fresh kernel; medians over ROUNDS rounds.

Run it with ``PYTHONPATH`` naming the tree to measure (an editable install imports its own
tree otherwise). ``--against TREE`` measures the package of TREE too (a checkout, e.g. a
worktree of main), in the same rounds, the two trees taking turns first: the "before" beside
the "after".
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from kernel_driver import Kernel, kernel  # noqa: E402

AGENT = ROOT / "tests" / "adversarial" / "agents" / "toolcalls_agent.py"
TICKS = os.sysconf("SC_CLK_TCK")
CELL = "bench0000001"
SERVER_MSG_LIMIT = 1000  # Jupyter Server's default iopub_msg_rate_limit (msg/s)

COUNT = """
import time as _t
import ipykernel.comm.comm as _cc
_sent = {"comm_open": [], "comm_msg": [], "comm_close": []}
_publish = _cc.BaseComm.publish_msg
def _counted(self, msg_type, *args, **kwargs):
    _sent.setdefault(msg_type, []).append(_t.monotonic())
    return _publish(self, msg_type, *args, **kwargs)
_cc.BaseComm.publish_msg = _counted
"""
TAKE = "print(len(_sent['comm_open']), len(_sent['comm_msg']), _peak()); _reset()"
HELPERS = """
def _peak():
    times = sorted(_sent["comm_open"] + _sent["comm_msg"])
    best = lo = 0
    for hi, t in enumerate(times):
        while t - times[lo] > 1.0:
            lo += 1
        best = max(best, hi - lo + 1)
    return best
def _reset():
    for v in _sent.values():
        v.clear()
def _kept():
    import gc
    from ipywidgets.widgets.widget import _instances
    gc.collect()
    status = open('/proc/self/status').read()
    rss = int(status.split('VmRSS:')[1].split()[0]) / 1024
    print(len(_instances), f"{rss:.1f}")
"""


def cpu_seconds(pid: int) -> float:
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


class Case:
    """What one round runs: the agent to connect, the cell, and what its output must say."""

    def __init__(self, calls: int, rules: int) -> None:
        self.rules = rules
        if rules:
            self.label = f"{rules} rule-approved commands per turn"
            self.cell = "%%acp --session tc --allow 'true'\n" + "$ true\n" * rules
            self.said = ("by policy --allow 'true'", rules)
        else:
            self.label = f"{calls} tool calls per turn"
            self.cell = "%%acp --session tc\ngo\n"
            self.said = (f"made {calls} tool calls", 1)
        self.calls = calls

    def connect(self, work: str) -> str:
        if self.rules:
            agent = f"{sys.executable} -m acp_notebook.agent"
            return f"%acp connect --name tc -- {agent} --data-dir {Path(work) / 'agent-data'}"
        return f"%acp connect --name tc -- {sys.executable} {AGENT} {self.calls}"


def one_round(case: Case, runs: int) -> dict[str, list[float]]:
    got: dict[str, list[float]] = {
        k: [] for k in ("open", "msg", "peak", "cpu", "rss", "models", "wall")
    }
    with tempfile.TemporaryDirectory() as work, kernel(work) as kern:
        kern.run("%load_ext acp_notebook")
        kern.run(COUNT + HELPERS)
        kern.run(case.connect(work))
        pid = kern.km.provisioner.process.pid
        models, rss = kern.run("_kept()").text().split()
        got["rss"].append(float(rss))
        got["models"].append(float(models))
        kern.run("_reset()")
        for _ in range(runs):
            before = cpu_seconds(pid)
            start = time.perf_counter()
            cell = kern.run(case.cell, cell_id=CELL)
            got["wall"].append(time.perf_counter() - start)
            got["cpu"].append(cpu_seconds(pid) - before)
            words, times = case.said
            assert cell.text().count(words) >= times, cell.text()[-2000:]
            kern.settle("tc")
            opened, sent, peak = kern.run(TAKE).text().split()
            got["open"].append(float(opened))
            got["msg"].append(float(sent))
            got["peak"].append(float(peak))
            models, rss = kern.run("_kept()").text().split()
            got["rss"].append(float(rss))
            got["models"].append(float(models))
            drain(kern)
    return got


def drain(kern: Kernel) -> None:
    while kern.pump(timeout=0.2):
        pass


def with_tree(tree: Path | None) -> str:
    """Put ``tree``'s package first on the path of the kernels started from here on (None:
    the path as given, as ``bench/run.py --against`` sets it); the old path, to restore."""
    old = os.environ.get("PYTHONPATH", "")
    if tree is not None:
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tree), old]))
    return old


def report(label: str, rounds: list[dict[str, list[float]]], case: Case, runs: int) -> None:
    def med(key: str, index: int | None = None) -> float:
        if index is None:
            return statistics.median(statistics.median(r[key]) for r in rounds)
        return statistics.median(r[key][index] for r in rounds)

    rss = [med("rss", i) for i in range(runs + 1)]
    models = [med("models", i) for i in range(runs + 1)]
    first = rss[1] - rss[0]
    later = rss[runs] - rss[1]
    growth = later / first if first > 0 else float("nan")
    print(f"{label}: {case.label}, {runs} runs of one cell, {len(rounds)} rounds")
    print(f"  comm_open per turn    : {med('open'):.0f}")
    print(f"  comm_msg per turn     : {med('msg'):.0f}")
    print(
        f"  peak comm msg/s (1 s) : {med('peak'):.0f} "
        f"(x server limit {med('peak') / SERVER_MSG_LIMIT:.2f})"
    )
    print(f"  kernel CPU per turn   : {med('cpu'):.2f} s (cell wall {med('wall'):.2f} s)")
    print("  kernel RSS, MiB       : " + " -> ".join(f"{x:.0f}" for x in rss))
    print("  live widget models    : " + " -> ".join(f"{x:.0f}" for x in models))
    print(
        f"  RSS growth runs 2-{runs} / run 1: {growth:.2f} "
        f"({later:+.1f} MiB after {first:+.1f} MiB)"
    )
    print(f"  RSS after run {runs} / after run 1: {rss[runs] / rss[1]:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--rules", type=int, default=0, help="N rule-approved commands instead")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--against", type=Path, default=None, help="another tree: the before")
    args = parser.parse_args()
    print(f"load average: {Path('/proc/loadavg').read_text().split()[:3]}")
    case = Case(args.calls, args.rules)
    trees: list[tuple[str, Path | None]] = [("this tree", None)]
    if args.against is not None:
        trees.insert(0, (f"against {args.against}", args.against.resolve()))
    results: dict[str, list[dict[str, list[float]]]] = {label: [] for label, _ in trees}
    for n in range(args.rounds):
        order = trees if n % 2 == 0 else trees[::-1]
        for label, tree in order:
            old = with_tree(tree)
            try:
                results[label].append(one_round(case, args.runs))
            finally:
                os.environ["PYTHONPATH"] = old
    for label, _tree in trees:
        report(label, results[label], case, args.runs)
    print(f"load average: {Path('/proc/loadavg').read_text().split()[:3]}")


if __name__ == "__main__":
    main()
