"""What loading the extension costs as a user's kernel starts: each sample a fresh kernel.

    python bench/bench_import.py [--rounds 5] [--no-cold]

Every sample starts a real ipykernel with jupyter_client (the kernel spec ``python3``, this
Python, this environment: run with ``PYTHONPATH=<tree>`` to measure a checkout), waits until it
answers ``kernel_info`` and its CPU time stops moving (what it does after starting is not the
cell's), then sends ONE ``execute_request`` as the kernel's first cell and times it until its
``execute_reply``: what the front end waits for. Rows, each in a kernel of its own:

* ``pass``: the floor, what any first cell costs;
* ``import ipywidgets``: the baseline (ipykernel has IPython, traitlets and comm already);
* ``%load_ext acp_notebook``: what a notebook's first ``%load_ext`` costs;
* ``import acp_notebook (client API)``: ``import acp_notebook`` and its ``connect``;
* ``%load_ext + the first %acp status``: for reference, what the first ``%acp`` adds (it makes
  the notebook: the client, pydantic, anyio, ipywidgets and the side panel are imported then).

A round runs every row once, in an order rotated each round; the figure is the median of the
rounds, with the kernel's own CPU time (from ``/proc``; less moved by a busy machine) beside it.
Each row also says whether the embedded agent (``acp_notebook.agent``) was imported.

Bytecode: Python keeps it in a private directory (``PYTHONPYCACHEPREFIX``), filled by one
untimed round. **warm**: every module's bytecode is there, as for an installed package, and as
a user's kernel has it after its first start: the target (``%load_ext`` <= 1.0x ``import
ipywidgets``) is on these rows. **cold** (``--no-cold`` leaves them out): acp_notebook's own
bytecode is removed and none is written (``PYTHONDONTWRITEBYTECODE``), so every sample
compiles the package's sources, as a kernel does the first time after an install that did not
compile them (or in an environment that sets ``PYTHONDONTWRITEBYTECODE``, as this one does);
everyone else's bytecode stays.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_client.manager import KernelManager

_CWD = tempfile.gettempdir()  # not the checkout: a kernel puts its cwd first on sys.path
_TICK = os.sysconf("SC_CLK_TCK")
GUARD = 120.0  # seconds: a guard against hanging, not a measurement

ROWS = {
    "pass": "pass",
    "import ipywidgets": "import ipywidgets",
    "%load_ext acp_notebook": "%load_ext acp_notebook",
    "import acp_notebook (client API)": "import acp_notebook\nacp_notebook.connect",
    "%load_ext + the first %acp status": "%load_ext acp_notebook\n%acp status",
}
_PROBE = "import sys as _s; print('acp_notebook.agent' in _s.modules)"


@dataclass
class Sample:
    wall: float  # seconds from the execute_request to its execute_reply
    cpu: float  # the kernel's CPU seconds over the same time
    agent: bool  # whether the embedded agent ended up imported


def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime + stime


def _settle(pid: int) -> None:
    """Wait until the kernel's CPU time stops moving (at most 10 s)."""
    deadline = time.monotonic() + 10
    last = _cpu(pid)
    while time.monotonic() < deadline:
        time.sleep(0.2)
        now = _cpu(pid)
        if now == last:
            return
        last = now


def _reply(kc: Any, msg_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + GUARD
    while True:
        msg = kc.get_shell_msg(timeout=max(0.1, deadline - time.monotonic()))
        if msg["parent_header"].get("msg_id") == msg_id:
            return dict(msg)


def _output(kc: Any, code: str) -> str:
    msg_id = kc.execute(code)
    _reply(kc, msg_id)
    text = []
    while True:
        msg = kc.get_iopub_msg(timeout=GUARD)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            text.append(msg["content"]["text"])
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return "".join(text)


def sample(code: str, env: dict[str, str]) -> Sample:
    km = KernelManager(kernel_name="python3")
    km.start_kernel(env=env, cwd=_CWD, stderr=subprocess.DEVNULL)
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=GUARD)
        pid = km.provisioner.pid
        _settle(pid)
        c0, t0 = _cpu(pid), time.perf_counter()
        msg_id = kc.execute(code)
        reply = _reply(kc, msg_id)
        t1, c1 = time.perf_counter(), _cpu(pid)
        content = reply["content"]
        assert isinstance(content, dict) and content["status"] == "ok", content
        agent = _output(kc, _PROBE).strip() == "True"
        return Sample(t1 - t0, c1 - c0, agent)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def measure(rounds: int, env: dict[str, str]) -> dict[str, list[Sample]]:
    """Every row once a round, the order rotated each round."""
    names = list(ROWS)
    found: dict[str, list[Sample]] = {name: [] for name in names}
    for r in range(rounds):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            found[name].append(sample(ROWS[name], env))
    return found


def show(found: dict[str, list[Sample]], note: str) -> float:
    """Print the rows; return %load_ext's ratio to ``import ipywidgets`` (wall medians)."""
    ms = {n: 1000 * statistics.median(s.wall for s in found[n]) for n in found}
    cpu = {n: 1000 * statistics.median(s.cpu for s in found[n]) for n in found}
    base, cpu_base = ms["import ipywidgets"], cpu["import ipywidgets"]
    for name in found:
        rounds = len(found[name])
        spread = ", ".join(f"{1000 * s.wall:.0f}" for s in found[name])
        print(
            f"  {note}{name:<34}: {ms[name]:7.1f} ms  x import ipywidgets {ms[name] / base:.2f}"
            f"  (median of {rounds}: {spread}; kernel cpu {cpu[name]:.1f} ms,"
            f" x {cpu[name] / cpu_base:.2f}; imports acp_notebook.agent:"
            f" {any(s.agent for s in found[name])})"
        )
    return ms["%load_ext acp_notebook"] / base


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-cold", action="store_true", help="skip the cold-bytecode rows")
    args = parser.parse_args()
    import acp_notebook  # where the kernels will import it from (PYTHONPATH)

    package = Path(acp_notebook.__file__).resolve().parent
    print(f"acp_notebook from {package}; load {Path('/proc/loadavg').read_text().strip()}")
    cache = Path(tempfile.mkdtemp(prefix="bench-import-pyc-"))
    try:
        warm = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        warm["PYTHONPYCACHEPREFIX"] = str(cache)
        measure(1, warm)  # writes the bytecode of everything the rows import
        print("warm bytecode (every module's, as after a kernel's first start):")
        ratio = show(measure(args.rounds, warm), "")
        print(f"import: %load_ext acp_notebook x import ipywidgets = {ratio:.2f} (target <= 1.00)")
        if not args.no_cold:
            shutil.rmtree(cache / package.relative_to(package.anchor), ignore_errors=True)
            cold = dict(warm, PYTHONDONTWRITEBYTECODE="1")
            print("cold bytecode (acp_notebook's sources compiled in every sample):")
            ratio = show(measure(args.rounds, cold), "cold ")
            print(f"cold: %load_ext acp_notebook x import ipywidgets = {ratio:.2f}")
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    print(f"load after: {Path('/proc/loadavg').read_text().strip()}")


if __name__ == "__main__":
    main()
