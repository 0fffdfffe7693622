"""Re-running a heavy cell frees its old view, and a heavy turn sends a bounded number of widget
messages (issue 29), in a real kernel with a real agent subprocess.

The heavy cell is a turn of 1,000 tool calls from a scripted agent
(``agents/toolcalls_agent.py``). Run five times as the same cell: every model the old view
opened is closed (``comm_close`` sent), the number of live models is the same after each run
(what a front end keeps, and what the kernel keeps: ipywidgets' registry), and no ``TurnView``
or ``CellRun`` of an earlier run is left in the kernel (a weak reference to the first view dies).
The kernel's RSS over the re-runs is measured by ``bench/bench_toolcalls.py``, not here.
"""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path
from typing import Any

from tests.kernel_driver import Kernel, acp_kernel

AGENT = Path(__file__).parent / "agents" / "toolcalls_agent.py"
CALLS = 1000
RUNS = 5
CELL = "rerun0000001"
#: Jupyter Server's default ``iopub_msg_rate_limit`` (messages per second, over 3 s windows)
SERVER_LIMIT = 1000

KEPT = """
import gc, weakref
from ipywidgets.widgets.widget import _instances
from acp_notebook._magics import _notebook_of
from acp_notebook._notebook._cells import CellRun
from acp_notebook._widgets import TurnView
_panel = _notebook_of(get_ipython()).panel
if _panel is not None:  # its rows as they stand now, not as its last timed refresh left them
    _panel.io.call(_panel.refresh)
del _panel
gc.collect()
_objects = gc.get_objects()
print(
    len(_instances),
    sum(isinstance(o, TurnView) for o in _objects),
    sum(isinstance(o, CellRun) for o in _objects),
    int(_first_view() is None) if "_first_view" in globals() else -1,
)
del _objects
"""

FIRST_VIEW = (
    "import weakref\nfrom acp_notebook._magics import _notebook_of\n"
    f"_first_view = weakref.ref(_notebook_of(get_ipython()).cells['cell:{CELL}'].view)"
)


def live(kern: Kernel) -> set[str]:
    return set(kern.models) - kern.closed


def panel_models(kern: Kernel) -> set[str]:
    """The side panel's models: its own and every model its state refers to, down."""
    todo = [c for c, s in kern.models.items() if s.get("_model_name") == "AgentPanelModel"]
    seen: set[str] = set()
    while todo:
        comm_id = todo.pop()
        if comm_id in seen or comm_id not in kern.models:
            continue
        seen.add(comm_id)
        for value in kern.models[comm_id].values():
            for ref in value if isinstance(value, list) else [value]:
                if isinstance(ref, str) and ref.startswith("IPY_MODEL_"):
                    todo.append(ref.removeprefix("IPY_MODEL_"))
    return seen


def sent_at(msg: dict[str, Any]) -> float:
    date = msg["header"]["date"]
    if isinstance(date, str):
        date = dt.datetime.fromisoformat(date.replace("Z", "+00:00"))
    return float(date.timestamp())


def peak(times: list[float], window: float) -> int:
    times = sorted(times)
    best = lo = 0
    for hi, t in enumerate(times):
        while t - times[lo] > window:
            lo += 1
        best = max(best, hi - lo + 1)
    return best


def test_rerunning_a_heavy_cell_frees_its_old_view(tmp_path: Path) -> None:
    with acp_kernel(tmp_path) as kern:
        kern.run(f"%acp connect --name tc -- {sys.executable} {AGENT} {CALLS}")
        after: list[int] = []  # live models after each run
        kept: list[list[int]] = []
        previous: set[str] = set()
        for run in range(RUNS):
            opened_before = set(kern.models)
            msgs_before = len(kern.comm_msgs)
            cell = kern.run("%%acp --session tc\ngo\n", cell_id=CELL)
            assert "made 1000 tool calls" in cell.text() + cell.html()
            kern.settle("tc")  # the agent's thread did all it had to: the view is final
            kern.run("pass")  # ... and every message it sent came before this cell's idle
            opened = set(kern.models) - opened_before
            messages = [m for _t, m in kern.comm_msgs[msgs_before:]]
            # a turn of 1,000 tool calls costs a few dozen models (it was 1,241) and a few
            # hundred messages (it was 1,522), never near the server's rate limit
            assert len(opened) <= 60, len(opened)
            assert len(opened) + len(messages) <= 600, (len(opened), len(messages))
            assert peak([sent_at(m) for m in messages], 1.0) <= SERVER_LIMIT / 5
            # the old view is gone: every model it opened is closed
            left = previous & live(kern) - panel_models(kern)  # (its session's row stays)
            assert not left, sorted(str(kern.models[c].get("_model_name")) for c in left)
            previous = opened
            after.append(len(live(kern)))
            if run == 0:
                kern.run(FIRST_VIEW)
            kept.append([int(x) for x in kern.run(KEPT).text().split()])
    assert after == [after[0]] * RUNS, after  # flat, exactly
    widgets = [k[0] for k in kept]
    assert widgets == [widgets[0]] * RUNS, widgets  # the kernel keeps no more either
    assert widgets[0] == after[0]  # and the kernel's live models are the front end's
    assert [k[1:3] for k in kept] == [[1, 1]] * RUNS  # one view and one run: the last
    assert [k[3] for k in kept[1:]] == [1] * (RUNS - 1)  # the first view was freed


def test_rerunning_a_cell_with_live_terminals_leaves_no_panel_rows(tmp_path: Path) -> None:
    """The side panel shows the live terminals of open views in rows of its own; a row of a
    view that closed must close with its layout and style models (18 were left per re-run)."""
    cell = "%%acp --allow 'true*'\n" + "".join(f"$ true {i}\n" for i in range(4))
    with acp_kernel(tmp_path) as kern:
        data = tmp_path / "data"
        kern.run(f"%acp connect -- {sys.executable} -m acp_notebook.agent --data-dir {data}")
        counts = []
        for _ in range(4):
            kern.run(cell, cell_id=CELL)
            kern.settle()
            kern.run("pass")
            counts.append(int(kern.run(KEPT).text().split()[0]))
        assert counts[1:] == [counts[1]] * 3, counts  # the first run opens the panel's rows
