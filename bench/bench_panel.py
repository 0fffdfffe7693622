"""Widget message rate with the agent panel open while 5 sessions stream output at once.

A real kernel (driven like a front end by ``tests/kernel_driver.py``) connects the embedded
agent with ``--flood-output MIB``; five ``%%acp --bg`` cells on five sessions then flood their
terminals at the same time while the side panel shows them (second views of the same terminal
models, the inbox, the agents and the sessions). Every iopub ``comm_msg`` is counted, in total
and per second, and split into messages for the panel's own widgets and everything else.
The same run without the panel gives the baseline. Then ten sessions flood at once, side by
side with the kernel-wide terminal budget (``FlushBudget``, 150 msg/s) on and switched off.
The server's default iopub limit is 1000 messages/s (``ServerApp.iopub_msg_rate_limit``).

    python bench/bench_panel.py [MIB_PER_SESSION]      # default 16 (8 for the ten sessions)
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.kernel_driver import Kernel, kernel, new_cell_id  # noqa: E402

SESSIONS = 5
MANY_SESSIONS = 10
IOPUB_LIMIT = 1000
NO_BUDGET = "import acp_notebook._widgets._coalesce as _c\n_c.SHARED_BUDGET.rate = 1e9"


def _panel_models(k: Kernel) -> set[str]:
    roots = [c for c, s in k.models.items() if s.get("_model_name") == "AgentPanelModel"]
    found: set[str] = set()
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        current = todo.pop()
        if current in seen or current not in k.models:
            continue
        seen.add(current)
        if k.models[current].get("_model_name") != "TerminalModel":  # shared with the cells
            found.add(current)
        for child in k.models[current].get("children") or []:
            if isinstance(child, str) and child.startswith("IPY_MODEL_"):
                todo.append(child[len("IPY_MODEL_") :])
    return found


def run(
    mib: float, with_panel: bool, sessions: int = SESSIONS, budget: bool = True
) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        with kernel(str(work)) as k:
            k.run("%load_ext acp_notebook\nimport acp_notebook._sidepanel")
            if not with_panel:
                k.run("%acp panel --no-auto")
            if not budget:
                k.run(NO_BUDGET)
            k.run(
                f"%acp connect --name embedded -- {sys.executable} -m acp_notebook.agent "
                f"--data-dir {tmp}/data --flood-output {mib}"
            )
            k.comm_msgs.clear()
            start = time.monotonic()
            for i in range(sessions):
                k.run(f"%%acp --bg --allow '*' --session s{i} -o t{i}\nflood\n", new_cell_id())
            k.run(
                "import time\n"
                f"while not all(globals()[f't{{i}}'].done for i in range({sessions})):\n"
                "    time.sleep(0.05)"
            )
            # let the last throttled refreshes go out
            end = time.monotonic()
            k.wait_for(lambda: not k.pump(0.6), "iopub to go quiet")
            total = k.run(
                f"print(sum(x.total_bytes for i in range({sessions}) "
                "for x in globals()[f't{i}'].terminals.values()))"
            ).text()
            flooded = int(total.strip().splitlines()[-1])
            assert flooded >= sessions * mib * 2**20, flooded
            panel = _panel_models(k)
            msgs = [(t, m) for t, m in k.comm_msgs if t <= end + 1.0]
            per_second = Counter(int(t - start) for t, _m in msgs)
            to_panel = sum(1 for _t, m in msgs if m["content"]["comm_id"] in panel)
            elapsed = end - start
            return {
                "elapsed": elapsed,
                "messages": len(msgs),
                "panel_messages": to_panel,
                "rate": len(msgs) / elapsed,
                "peak": max(per_second.values(), default=0),
                "bytes": flooded,
                "panel_models": len(panel),
            }


def main() -> None:
    mib = float(sys.argv[1]) if len(sys.argv) > 1 else 16.0
    print(f"{SESSIONS} sessions x {mib:g} MiB of terminal output each, streamed at once")
    results = {}
    for with_panel in (False, True):
        label = "panel open" if with_panel else "no panel"
        r = run(mib, with_panel)
        results[label] = r
        print(
            f"  {label:10}: {r['messages']:5.0f} comm messages in {r['elapsed']:.1f} s = "
            f"{r['rate']:.0f}/s average, peak {r['peak']:.0f} in one second; "
            f"{r['panel_messages']:.0f} for the panel's own {r['panel_models']:.0f} models; "
            f"{r['bytes'] / 2**20:.0f} MiB delivered"
        )
    peak = results["panel open"]["peak"]
    extra = results["panel open"]["rate"] - results["no panel"]["rate"]
    print(f"panel adds {extra:.0f} messages/s on average")
    print(f"peak rate with panel: {peak:.0f}/s, ratio to the iopub limit: {peak / IOPUB_LIMIT:.3f}")
    if peak >= IOPUB_LIMIT:
        raise SystemExit(f"peak {peak:.0f}/s reaches the iopub limit {IOPUB_LIMIT}/s")

    many = max(mib / 2, 1.0)
    print(f"{MANY_SESSIONS} sessions x {many:g} MiB each, panel open, terminal budget on vs off")
    side: dict[bool, dict[str, float]] = {}
    for budget in (False, True):
        r = run(many, True, MANY_SESSIONS, budget)
        side[budget] = r
        print(
            f"  budget {'on ' if budget else 'off'}: {r['messages']:5.0f} comm messages in "
            f"{r['elapsed']:.1f} s = {r['rate']:.0f}/s average, "
            f"peak {r['peak']:.0f} in one second; {r['bytes'] / 2**20:.0f} MiB delivered"
        )
    on, off = side[True], side[False]
    print(
        f"{MANY_SESSIONS} floods: peak ratio budget on/off {on['peak'] / off['peak']:.2f}; "
        f"peak with budget, ratio to the iopub limit: {on['peak'] / IOPUB_LIMIT:.3f}; "
        f"elapsed ratio on/off {on['elapsed'] / off['elapsed']:.2f}"
    )


if __name__ == "__main__":
    main()
