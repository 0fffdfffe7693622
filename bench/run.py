"""Run every benchmark in ``bench/``, one after another, then print a summary of the headlines.

    python bench/run.py              # all of them (about a minute on a quiet machine)
    python bench/run.py ingest flood # only those whose file name contains a given word

Each ``bench_*.py`` runs as its own subprocess (so one cannot warm up or slow down another),
its output is shown as it comes, and the headline numbers are picked out of that output for
the final table. A benchmark added later is run too; its lines mentioning a ratio (or else its
last line) go to the table. The exit status is 1 if any benchmark failed or timed out.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
TIMEOUT = 170.0  # seconds per benchmark

# Arguments that keep each run modest (the whole suite should stay well under 3 minutes).
ARGS: dict[str, list[str]] = {
    "bench_agent_flood.py": ["50"],  # MiB through the embedded agent, end to end
}

Headline = tuple[str, str]  # (what, value)
Extractor = Callable[[str], list[Headline]]


def _find(pattern: str, text: str) -> list[tuple[str, ...]]:
    return [m if isinstance(m, tuple) else (m,) for m in re.findall(pattern, text, re.M)]


def _ingest(out: str) -> list[Headline]:
    found: list[Headline] = []
    blocks = re.split(r"^(?=\S.*notifications, )", out, flags=re.M)
    for block in blocks:
        label = re.match(r"(small|large) chunks", block)
        if label is None:
            continue
        rate = re.search(r"connection\s*:\s*([\d,]+) notifications/s", block)
        ratio = re.search(r"ratio\s*:\s*([\d.]+)", block)
        name = label.group(0)
        if rate:
            found.append((f"{name}: notifications/s", rate.group(1)))
        if ratio:
            found.append((f"{name}: ratio vs json.loads+b64decode", ratio.group(1)))
    return found


def _state(out: str) -> list[Headline]:
    found: list[Headline] = []
    for label, ratio in _find(r"^\s+(one feed|\d+ B chunks)\s+[\d.]+\s+[\d.]+\s+([\d.]+)$", out):
        found.append((f"transcript {label}: ratio vs bare regex strip", ratio))
    for label, applied, parsed in _find(r"^\s+(\w+)(?: \([^)]*\))?\s+([\d,]+)\s+([\d,]+)$", out):
        found.append((f"reducer {label}: apply/s | parse+apply/s", f"{applied} | {parsed}"))
    return found


def _flood(out: str) -> list[Headline]:
    found: list[Headline] = []
    for mib, rate, intact in _find(r"flood ([\d.]+) MiB: .*= ([\d.]+) MB/s .*intact=(\w+)", out):
        found.append((f"agent -> client, {mib} MiB: MB/s (intact)", f"{rate} ({intact})"))
    return found


def _widgets(out: str) -> list[Headline]:
    found: list[Headline] = []
    for ms, rate in _find(r"kernel CPU: ([\d.]+) ms/MiB\s+\((\d+) MiB/s\)", out):
        found.append(("terminal widget feed: kernel ms/MiB (MiB/s)", f"{ms} ({rate})"))
    for per in _find(r"\(([\d.]+) per MiB\)", out):
        found.append(("terminal widget feed: messages per MiB", per[0]))
    return found


def _notebook(out: str) -> list[Headline]:
    found: list[Headline] = []
    for mib in _find(r"^flood ([\d.]+) MiB through", out):
        found.append(("real kernel, flood of (MiB)", mib[0]))
    for ms, over, idle in _find(
        r"kernel CPU per MB: ([\d.]+) ms/MB \(over idle: ([-\d.]+) ms/MB; .*: (>?=?[\d.]+)x\)", out
    ):
        found.append(("kernel CPU ms/MB (over idle; flood/idle)", f"{ms} ({over}; {idle}x)"))
    for n, rate in _find(r"comm_msg\s*: (\d+) in [\d.]+ s = ([\d.]+) msg/s", out):
        found.append(("comm_msg to the front end: msg/s (total)", f"{rate} ({n})"))
    for peak1, peak_r in _find(
        r"peak 1 s window (\d+) msg/s.*\n.*limit: mean [\d.]+, peak 1 s ([\d.]+)", out
    ):
        found.append(("iopub peak msg/s in 1 s (ratio to 1000/s limit)", f"{peak1} ({peak_r})"))
    quiet = re.search(r"no flood\s*: ([\d.]+) ms", out)
    busy = re.search(r"with flood : ([\d.]+) ms", out)
    ratio = re.search(r"trivial cell ratio flood/no flood: ([\d.]+)", out)
    if quiet and busy and ratio:
        value = f"{quiet.group(1)} | {busy.group(1)} ({ratio.group(1)}x)"
        found.append(("1+1 cell ms: no flood | --bg flood (ratio)", value))
    return found


def _memory(out: str) -> list[Headline]:
    found: list[Headline] = []
    blocks = re.split(r"^(?=(?:api|kernel): \d+ terminal)", out, flags=re.M)
    for block in blocks:
        head = re.match(r"(api|kernel): (\d+) terminal\(s\) x ([\d.]+) MiB", block)
        peak = re.search(r"peak RSS \(VmHWM\)\s+(\d+) MiB\s+(\d+) MiB", block)
        after = re.search(r"RSS after the turn\s+(\d+) MiB\s+(\d+) MiB", block)
        cap = re.search(r"cap: .* = (\d+) MiB;", block)
        if head and peak and after and cap:
            what = f"{head.group(1)} {head.group(2)} x {head.group(3)} MiB: peak fixed | pre-fix"
            value = f"{peak.group(1)} | {peak.group(2)} MiB (cap {cap.group(1)} MiB)"
            found.append((what, value))
            value = f"{after.group(1)} | {after.group(2)} MiB"
            found.append(("  RSS after the turn: fixed | pre-fix", value))
    return found


def _generic(out: str) -> list[Headline]:
    lines = [line.strip() for line in out.splitlines() if line.strip()]
    ratios = [line for line in lines if "ratio" in line.lower()]
    picked = ratios or lines[-1:]
    return [("", line) for line in picked]


EXTRACTORS: dict[str, Extractor] = {
    "bench_ingest.py": _ingest,
    "bench_state.py": _state,
    "bench_agent_flood.py": _flood,
    "bench_widgets_terminal.py": _widgets,
    "bench_notebook.py": _notebook,
    "bench_memory.py": _memory,
}


@dataclass
class Result:
    script: str
    seconds: float
    status: str  # "ok", "failed (exit N)", "timed out"
    output: str
    headlines: list[Headline] = field(default_factory=list)


def discover(filters: list[str]) -> list[Path]:
    scripts = sorted(HERE.glob("bench_*.py"))
    if filters:
        scripts = [s for s in scripts if any(f in s.name for f in filters)]
    return scripts


def run_one(script: Path) -> Result:
    argv = [sys.executable, str(script), *ARGS.get(script.name, [])]
    print(f"\n=== {script.name} {' '.join(argv[2:])}".rstrip(), flush=True)
    started = time.perf_counter()
    lines: list[str] = []
    with subprocess.Popen(
        argv,
        cwd=HERE.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
    ) as proc:
        assert proc.stdout is not None
        deadline = started + TIMEOUT
        status = "ok"
        for line in proc.stdout:  # shown as it comes
            print(line, end="", flush=True)
            lines.append(line)
            if time.perf_counter() > deadline:
                break
        try:
            code = proc.wait(timeout=max(0.1, deadline - time.perf_counter()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            code = None
        if code is None or time.perf_counter() > deadline:
            status = f"timed out after {TIMEOUT:.0f} s"
        elif code != 0:
            status = f"failed (exit {code})"
    output = "".join(lines)
    result = Result(script.name, time.perf_counter() - started, status, output)
    if status == "ok":
        result.headlines = EXTRACTORS.get(script.name, _generic)(output) or _generic(output)
    return result


def summary(results: list[Result]) -> str:
    rows: list[tuple[str, str, str]] = []
    for r in results:
        name = f"{r.script.removeprefix('bench_').removesuffix('.py')} ({r.seconds:.1f} s)"
        if r.status != "ok":
            rows.append((name, r.status.upper(), ""))
            continue
        for i, (what, value) in enumerate(r.headlines):
            rows.append((name if i == 0 else "", what, value))
    widths = [max(len(row[i]) for row in rows) for i in range(3)] if rows else [0, 0, 0]
    out = [f"{'benchmark':<{widths[0]}}  {'headline':<{widths[1]}}  value"]
    out.append("-" * (sum(widths) + 4))
    for name, what, value in rows:
        out.append(f"{name:<{widths[0]}}  {what:<{widths[1]}}  {value}".rstrip())
    return "\n".join(out)


def main(argv: list[str]) -> int:
    scripts = discover(argv)
    if not scripts:
        print(f"no benchmark in {HERE} matches {argv}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    results = [run_one(script) for script in scripts]
    total = time.perf_counter() - started
    print(f"\n=== summary ({len(results)} benchmarks, {total:.0f} s, one run, side by side)")
    print(summary(results))
    return 0 if all(r.status == "ok" for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
