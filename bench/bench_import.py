"""Import time, each sample in a fresh interpreter, interleaved, median of the rounds.

    python bench/bench_import.py [--rounds 5]

* ``import ipywidgets``: the baseline, alone in a fresh interpreter (it imports IPython too);
* ``%load_ext acp_notebook``: in a fresh interpreter where an IPython ``InteractiveShell``
  exists already (as in a kernel: creating it is not timed), the magic's wall time: what the
  extension adds, ipywidgets included;
* ``import acp_notebook`` (the client API): ``import acp_notebook`` and its ``connect``
  (the package imports its public names on first use), in a fresh interpreter.

Each also says whether ``acp_notebook.agent`` (the embedded agent) was imported.

Python's bytecode cache is on for every sample, in a private directory (``PYTHONPYCACHEPREFIX``)
warmed by one untimed round: that is what an installed package costs (pip compiles its
bytecode, as it did for ipywidgets and pydantic here). This environment sets
``PYTHONDONTWRITEBYTECODE``, under which every sample compiled acp_notebook's sources (about
a third of its import time) but nobody else's. The same rows without any cache follow, for
reference (``--no-cold`` leaves them out), prefixed ``cold``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

_CWD = tempfile.gettempdir()

SNIPPETS = {
    "import ipywidgets": (
        "",
        "import ipywidgets",
    ),
    "%load_ext acp_notebook": (
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "shell = InteractiveShell.instance()\n",
        "shell.run_line_magic('load_ext', 'acp_notebook')",
    ),
    "import acp_notebook (client API)": (
        "",
        "import acp_notebook\nacp_notebook.connect",
    ),
}

TEMPLATE = """\
import sys, time
{setup}
t0, c0 = time.perf_counter(), time.process_time()
{timed}
t1, c1 = time.perf_counter(), time.process_time()
print(t1 - t0, c1 - c0, 'acp_notebook.agent' in sys.modules)
"""

Medians = dict[str, float]


def sample(setup: str, timed: str, env: dict[str, str]) -> tuple[float, float, bool]:
    """Wall and CPU seconds of ``timed``, and whether the embedded agent was imported."""
    code = TEMPLATE.format(setup=setup, timed=timed)
    out = subprocess.run(  # not from the checkout: `-c` puts the cwd first on sys.path
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=_CWD, env=env
    ).stdout.split()
    return float(out[-3]), float(out[-2]), out[-1] == "True"


def measure(rounds: int, env: dict[str, str]) -> tuple[Medians, Medians, dict[str, bool]]:
    """Median wall and CPU milliseconds of each snippet (interleaved rounds), and whether it
    imported the embedded agent."""
    wall: dict[str, list[float]] = {name: [] for name in SNIPPETS}
    cpu: dict[str, list[float]] = {name: [] for name in SNIPPETS}
    agent: dict[str, bool] = {}
    for _ in range(rounds):
        for name, (setup, timed) in SNIPPETS.items():
            seconds, cpu_seconds, imported = sample(setup, timed, env)
            wall[name].append(seconds)
            cpu[name].append(cpu_seconds)
            agent[name] = agent.get(name, False) or imported
    return (
        {name: 1000 * statistics.median(t) for name, t in wall.items()},
        {name: 1000 * statistics.median(t) for name, t in cpu.items()},
        agent,
    )


def show(median: Medians, cpu: Medians, agent: dict[str, bool], rounds: int, note: str) -> None:
    """Wall time is the figure; CPU time (this process only) is less moved by a busy machine."""
    base, cpu_base = median["import ipywidgets"], cpu["import ipywidgets"]
    for name, ms in median.items():
        print(
            f"  {note}{name:<34}: {ms:7.1f} ms  x import ipywidgets {ms / base:.2f}  "
            f"(median of {rounds}; cpu {cpu[name]:.1f} ms, x {cpu[name] / cpu_base:.2f};"
            f" imports acp_notebook.agent: {agent[name]})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--no-cold", action="store_true", help="skip the rows without bytecode")
    args = parser.parse_args()
    cache = tempfile.mkdtemp(prefix="bench-import-pyc-")
    try:
        warm = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        warm["PYTHONPYCACHEPREFIX"] = cache
        measure(1, warm)  # writes the bytecode of everything the snippets import
        median, cpu, agent = measure(args.rounds, warm)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    show(median, cpu, agent, args.rounds, "")
    base = median["import ipywidgets"]
    load = median["%load_ext acp_notebook"]
    print(
        f"import: %load_ext acp_notebook x import ipywidgets = {load / base:.2f} (target <= 1.30)"
    )
    client = median["import acp_notebook (client API)"]
    print(f"import: import acp_notebook (client API) = {client:.0f} ms (target <= 150)")
    if not args.no_cold:
        cold = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        cold.pop("PYTHONPYCACHEPREFIX", None)
        print("as this environment runs Python (no bytecode written: sources compiled each time):")
        show(*measure(args.rounds, cold), args.rounds, "cold ")


if __name__ == "__main__":
    main()
