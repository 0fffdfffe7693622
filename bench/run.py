"""Run every benchmark in ``bench/``, one after another, then print ONE table of the headlines.

    python bench/run.py                      # all of them (a few minutes on a quiet machine)
    python bench/run.py ingest flood         # only those whose file name contains a given word
    python bench/run.py --against REV ingest # the same benchmarks on a `git worktree` of REV too
    python bench/run.py browser              # opt-in: JupyterLab in chromium (OPT_IN below)

Each ``bench_*.py`` runs as its own subprocess (so one cannot warm up or slow down another),
its output is shown as it comes, and the headline numbers are picked out of that output for
the final table: each headline's value, its baseline (measured in the same run), the ratio, the
target of issue 16 and a verdict (``met`` / ``NOT MET``). With ``--against REV`` each benchmark
runs twice, back to back, once with the package of REV (a worktree, put first on PYTHONPATH:
the agents and kernels the benchmarks start import from it too) and once with this tree; both
rows are in the table, ``REV`` first. A benchmark added later is run too; its lines
mentioning a ratio (or else its last line) go to the table. The exit status is 1 if any
benchmark failed or timed out (not when a target is not met).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
TIMEOUT = 600.0  # seconds per benchmark

# Arguments that keep each run modest.
ARGS: dict[str, list[str]] = {
    "bench_agent_flood.py": ["50"],  # MiB of a command's output through the embedded agent
    "bench_browser_flood.py": ["--rounds", "1"],  # 100 MB; JupyterLab's terminal takes ~2 min
    "bench_browser_toolcalls.py": ["--rounds", "1"],  # 1,000 tool calls, 5 runs: ~1 min
}
# Run only when named (`python bench/run.py browser`): they need chromium and ui-tests' node
# modules, and take minutes.
OPT_IN = {"bench_browser_flood.py", "bench_browser_toolcalls.py"}

# (what, value, baseline, ratio, target): target is "<= X", ">= X" or "" (no target)
Headline = tuple[str, str, str, str, str]
Extractor = Callable[[str], list[Headline]]


def _find(pattern: str, text: str) -> list[tuple[str, ...]]:
    return [m if isinstance(m, tuple) else (m,) for m in re.findall(pattern, text, re.M)]


def _plain(what: str, value: str) -> Headline:
    return (what, value, "", "", "")


def _ingest(out: str) -> list[Headline]:
    found: list[Headline] = []
    targets = {
        "v2": {"small": ">= 1.00", "large": ">= 0.95"},
        "v2 + listener": {"small": ">= 1.00", "large": ">= 1.00"},
        "v1 terminal": {"small": ">= 0.80", "large": ">= 0.80"},
        "v1 messages": {"small": ">= 0.80", "large": ">= 0.80"},
    }
    for block in re.split(r"^(?=(?:small|large) chunks: )", out, flags=re.M):
        head = re.match(r"(small|large) chunks: (\d+) notifications, (\d+) B", block)
        if head is None:
            continue
        kind = head.group(1)
        what = f"ingest {head.group(2)} x {head.group(3)} B: msg/s"
        bare = re.search(r"bare json\s*:\s*([\d,]+) msg/s\s+([\d.]+) MB/s", block)
        base = f"{bare.group(1)} (bare json)" if bare else ""
        for name in ("v2", "v2 + listener", "v2 + model lsn", "v1 terminal", "v1 messages"):
            row = re.search(
                rf"^  {re.escape(name)}\s*:\s*([\d,]+) msg/s\s+([\d.]+) MB/s\s+x bare json"
                r" ([\d.]+)",
                block,
                flags=re.M,
            )
            if row:
                target = targets[name].get(kind, "") if name in targets else ""
                found.append(
                    (
                        f"{what}, {name}",
                        f"{row.group(1)} ({row.group(2)} MB/s)",
                        base,
                        row.group(3),
                        target,
                    )
                )
    return found


def _flood(out: str) -> list[Headline]:
    found: list[Headline] = []
    pty = re.search(r"raw PTY read\s*:\s*([\d.]+) MB/s", out)
    cat = re.search(r"cat \| pipe\s*:\s*([\d.]+) MB/s", out)
    agent = re.search(r"embedded agent\s*:\s*([\d.]+) MB/s\s+x raw PTY read ([\d.]+)", out)
    intact = re.search(r"agent PTY path: .*intact=(\w+)", out)
    if pty and agent:
        base = f"{pty.group(1)} MB/s (raw PTY)" + (f"; cat|pipe {cat.group(1)}" if cat else "")
        value = f"{agent.group(1)} MB/s (intact={intact.group(1) if intact else '?'})"
        found.append(
            ("agent PTY path: cat through the agent", value, base, agent.group(2), ">= 0.70")
        )
    for mib, rate, whole in _find(r"flood ([\d.]+) MiB: .*= ([\d.]+) MB/s .*intact=(\w+)", out):
        found.append(
            _plain(f"synthetic --flood-output {mib} MiB: MB/s (intact)", f"{rate} ({whole})")
        )
    return found


def _widgets(out: str) -> list[Headline]:
    found: list[Headline] = []
    pattern = (
        r"(\d+) terminal\(s\): fed .*\n\s+kernel CPU: ([\d.]+) ms/MiB.*\n"
        r"\s+terminal messages: \d+ = [\d.]+ msg/s in all; per terminal max [\d.]+ msg/s.*\n"
        r"\s+peak 1 s window while feeding: (\d+) per terminal, (\d+) in all\n"
        r"\s+sequence numbers contiguous=(\w+); bytes equal=(\w+)"
    )
    for n, ms, per, total, contiguous, equal in _find(pattern, out):
        ok = f"seq ok={contiguous}, bytes equal={equal}"
        found.append(_plain(f"widget comm path, {n} terminal(s): kernel ms/MiB", ms))
        found.append(
            (
                f"widget comm path, {n} terminal(s): peak msg/s per terminal",
                f"{per} ({ok})",
                "30 msg/s",
                f"{float(per) / 30:.2f}",
                "<= 1.00",
            )
        )
        if n != "1":
            found.append(
                (
                    f"widget comm path, {n} terminals: peak msg/s in all",
                    total,
                    "150 msg/s",
                    f"{float(total) / 150:.2f}",
                    "<= 1.00",
                )
            )
    return found


def _notebook(out: str) -> list[Headline]:
    found: list[Headline] = []
    for ms, over in _find(r"kernel CPU per MB: ([\d.]+) ms/MB \(over idle: ([-\d.]+) ms/MB", out):
        found.append(
            (
                "kernel CPU per MB of a command's output",
                f"{ms} ms/MB (over idle {over})",
                "15 ms/MB",
                f"{float(ms) / 15:.2f}",
                "<= 1.00",
            )
        )
    pattern = (
        r"^\s+(foreground flood|\d+ terminals at once): (\d+) terminal\(s\), \d+ comm messages; "
        r"peak 1 s per terminal (\d+) msg/s, in all (\d+) msg/s; "
        r"seq contiguous=(\w+); bytes equal=(\w+)"
    )
    for label, n, per, total, contiguous, equal in _find(pattern, out):
        ok = f"seq ok={contiguous}, bytes equal={equal}"
        found.append(
            (
                f"kernel, {label}: peak comm msg/s per terminal",
                f"{per} ({ok})",
                "30 msg/s",
                f"{int(per) / 30:.2f}",
                "<= 1.00",
            )
        )
        if n != "1":
            found.append(
                (
                    f"kernel, {label}: peak comm msg/s in all",
                    total,
                    "150 msg/s",
                    f"{int(total) / 150:.2f}",
                    "<= 1.00",
                )
            )
    quiet = re.search(r"no flood\s*:\s*([\d.]+) ms", out)
    busy = re.search(r"with flood : ([\d.]+) ms", out)
    ratio = re.search(r"trivial cell ratio flood/no flood: ([\d.]+)", out)
    if quiet and busy and ratio:
        found.append(
            (
                "1+1 cell during a --bg flood",
                f"{busy.group(1)} ms",
                f"{quiet.group(1)} ms idle",
                ratio.group(1),
                "<= 1.30",
            )
        )
    alone = re.search(
        r"foreground : ([\d.]+) MB/s .*background: ([\d.]+) MB/s.*\n.*rate: ([\d.]+)", out
    )
    if alone:
        found.append(
            (
                "--bg flood, nobody running cells, x its foreground rate",
                f"{alone.group(2)} MB/s",
                f"{alone.group(1)} MB/s foreground",
                alone.group(3),
                ">= 0.90",
            )
        )
    rate = re.search(r"bg turn [\d.]+ s, ([\d.]+) MiB/s", out)
    if rate:  # what the pacing costs the flood: a figure, no target
        found.append(("--bg flood read while cells run", f"{rate.group(1)} MiB/s", "", "", ""))
    return found


def _import(out: str) -> list[Headline]:
    found: list[Headline] = []
    base = re.search(r"import ipywidgets\s*:\s*([\d.]+) ms", out)
    load = re.search(
        r"%load_ext acp_notebook\s*:\s*([\d.]+) ms\s+x import ipywidgets ([\d.]+).*agent: (\w+)",
        out,
    )
    client = re.search(r"import acp_notebook \(client API\)\s*:\s*([\d.]+) ms.*agent: (\w+)", out)
    if base and load:
        found.append(
            (
                "import: %load_ext acp_notebook",
                f"{load.group(1)} ms (agent imported: {load.group(3)})",
                f"{base.group(1)} ms (import ipywidgets)",
                load.group(2),
                "<= 1.00",
            )
        )
    if client:
        found.append(
            (
                "import: import acp_notebook (client API)",
                f"{client.group(1)} ms",
                "150 ms",
                f"{float(client.group(1)) / 150:.2f}",
                "<= 1.00",
            )
        )
    return found


def _state(out: str) -> list[Headline]:
    found: list[Headline] = []
    for label, ratio in _find(r"^\s+(one feed|\d+ B chunks)\s+[\d.]+\s+[\d.]+\s+([\d.]+)$", out):
        found.append(_plain(f"transcript {label}: ratio vs bare regex strip", ratio))
    for label, applied, parsed in _find(r"^\s+(\w+)(?: \([^)]*\))?\s+([\d,]+)\s+([\d,]+)$", out):
        found.append(_plain(f"reducer {label}: apply/s | parse+apply/s", f"{applied} | {parsed}"))
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
            found.append(_plain(what, value))
            value = f"{after.group(1)} | {after.group(2)} MiB"
            found.append(_plain("  RSS after the turn: fixed | pre-fix", value))
    return found


def _toolcalls(out: str) -> list[Headline]:
    found: list[Headline] = []
    for block in re.split(r"^(?=(?:this tree|against \S+): )", out, flags=re.M):
        head = re.match(r"(this tree|against \S+): (\d+) tool calls per turn", block)
        if head is None:
            continue
        what = f"{head.group(2)} tool calls ({head.group(1)})"
        opened = re.search(r"comm_open per turn\s*:\s*(\d+)", block)
        sent = re.search(r"comm_msg per turn\s*:\s*(\d+)", block)
        peak = re.search(r"peak comm msg/s \(1 s\)\s*:\s*(\d+) \(x server limit ([\d.]+)\)", block)
        cpu = re.search(r"kernel CPU per turn\s*:\s*([\d.]+) s", block)
        rss = re.search(r"kernel RSS, MiB\s*:\s*(.+)", block)
        flat = re.search(r"RSS after run (\d+) / after run 1: ([\d.]+)", block)
        if opened and sent and cpu:
            value = f"{opened.group(1)} | {sent.group(1)} | {cpu.group(1)} s"
            found.append(_plain(f"{what}: comm_open | comm_msg | kernel CPU", value))
        if peak:
            found.append(
                (
                    f"{what}: peak comm msg/s",
                    peak.group(1),
                    "1000 msg/s (server limit)",
                    peak.group(2),
                    "<= 1.00",
                )
            )
        if rss and flat:
            found.append(_flat(f"{what}: kernel RSS", flat, rss.group(1)))
    return found


def _browser(out: str) -> list[Headline]:
    found: list[Headline] = []
    acp = re.search(
        r"^acp \(median of \d+\): last byte ([\d.]+) s; long tasks (\d+), worst task (\d+) ms"
        r".*?; worst lag (\d+) ms.*?; last rows right (\d+/\d+)",
        out,
        re.M,
    )
    lab = re.search(
        r"^lab \(median of \d+\): last byte ([\d.]+) s; long tasks (\d+), worst task (\d+) ms"
        r".*?; worst lag (\d+) ms",
        out,
        re.M,
    )
    idle = re.search(r"^idle page .*?worst lag (\d+) ms", out, re.M)
    cpu = {
        way: re.search(rf"^{way} \(median of \d+\):.*?main thread CPU ([\d.]+) s", out, re.M)
        for way in ("acp", "lab")
    }
    if acp and lab:
        found.append(
            (
                "browser 100 MB flood: time to the last byte",
                f"{acp.group(1)} s (last rows right {acp.group(5)})",
                f"{lab.group(1)} s (JupyterLab's terminal)",
                f"{float(acp.group(1)) / float(lab.group(1)):.2f}",
                "<= 1.00",
            )
        )
        found.append(
            (
                "browser 100 MB flood: worst main-thread task (ms)",
                f"{acp.group(3)} ms ({acp.group(2)} long tasks)",
                f"200 ms (lab: {lab.group(3)} ms, {lab.group(2)} long tasks)",
                f"{int(acp.group(3)) / 200:.2f}",
                "<= 1.00",
            )
        )
        floor = f"; idle page {idle.group(1)} ms" if idle else ""
        found.append(
            (
                "browser 100 MB flood: worst event-loop lag (ms)",
                f"{acp.group(4)} ms",
                f"250 ms (lab: {lab.group(4)} ms{floor})",
                f"{int(acp.group(4)) / 250:.2f}",
                "<= 1.00",
            )
        )
    acp_cpu, lab_cpu = cpu["acp"], cpu["lab"]
    if acp_cpu and lab_cpu:
        found.append(
            (
                "browser 100 MB flood: the page's main-thread CPU (s)",
                f"{acp_cpu.group(1)} s",
                f"{lab_cpu.group(1)} s (JupyterLab's terminal)",
                f"{float(acp_cpu.group(1)) / float(lab_cpu.group(1)):.2f}",
                "",
            )
        )
    return found


def _browser_toolcalls(out: str) -> list[Headline]:
    found: list[Headline] = []
    gap = re.search(
        r"^run 1 worst frame gap (\d+) ms \(max (\d+);.*?idle page (\d+) ms\)", out, re.M
    )
    flat = re.search(
        r"^heap after run (\d+) / after run 1: ([\d.]+) .*?kernel RSS after run \d+ / after run 1: "
        r"([\d.]+)",
        out,
        re.M,
    )
    heap = re.search(r"^  tab heap after GC, MiB\s*: (.+)$", out, re.M)
    if gap:
        found.append(
            (
                "browser 1,000 tool calls: worst frame gap, run 1 (ms)",
                f"{gap.group(1)} ms (max {gap.group(2)})",
                f"500 ms (idle page {gap.group(3)} ms)",
                f"{int(gap.group(1)) / 500:.2f}",
                "<= 1.00",
            )
        )
    if flat and heap:
        found.append(_flat("browser 1,000 tool calls: tab heap", flat, heap.group(1)))
    return found


def _flat(what: str, flat: re.Match[str], values: str) -> Headline:
    """The row of a size that must stay flat over re-runs: ``flat`` matched the number of
    runs (group 1) and the last run's ratio to the first (group 2)."""
    label = f"{what} over {flat.group(1)} re-runs (MiB)"
    return (label, values.strip(), "after run 1", flat.group(2), "<= 1.10")


def _generic(out: str) -> list[Headline]:
    lines = [line.strip() for line in out.splitlines() if line.strip()]
    ratios = [line for line in lines if "ratio" in line.lower()]
    picked = ratios or lines[-1:]
    return [_plain("", line) for line in picked]


EXTRACTORS: dict[str, Extractor] = {
    "bench_ingest.py": _ingest,
    "bench_state.py": _state,
    "bench_agent_flood.py": _flood,
    "bench_widgets_terminal.py": _widgets,
    "bench_notebook.py": _notebook,
    "bench_memory.py": _memory,
    "bench_import.py": _import,
    "bench_toolcalls.py": _toolcalls,
    "bench_browser_flood.py": _browser,
    "bench_browser_toolcalls.py": _browser_toolcalls,
}


@dataclass
class Result:
    script: str
    tree: str  # "this tree" or the --against revision
    seconds: float
    status: str  # "ok", "failed (exit N)", "timed out"
    output: str
    headlines: list[Headline] = field(default_factory=list)


def discover(filters: list[str]) -> list[Path]:
    scripts = sorted(HERE.glob("bench_*.py"))
    if filters:
        return [s for s in scripts if any(f in s.name for f in filters)]
    return [s for s in scripts if s.name not in OPT_IN]


def run_one(script: Path, tree: str = "this tree", package_root: Path | None = None) -> Result:
    argv = [sys.executable, str(script), *ARGS.get(script.name, [])]
    env = dict(os.environ)
    if package_root is not None:  # the package of another revision, first on the path
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(package_root), env.get("PYTHONPATH")])
        )
    print(f"\n=== {script.name} {' '.join(argv[2:])} [{tree}]".rstrip(), flush=True)
    started = time.perf_counter()
    lines: list[str] = []
    with subprocess.Popen(
        argv,
        cwd=HERE.parent,
        env=env,
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
    result = Result(script.name, tree, time.perf_counter() - started, status, output)
    if status == "ok":
        result.headlines = EXTRACTORS.get(script.name, _generic)(output) or _generic(output)
    return result


def verdict(ratio: str, target: str) -> str:
    """``met`` or ``NOT MET`` for a ratio against ``<= X`` / ``>= X``; empty without a target."""
    found = re.fullmatch(r"(<=|>=) ([\d.]+)", target)
    if not found or not ratio:
        return ""
    value, bound = float(ratio), float(found.group(2))
    ok = value <= bound if found.group(1) == "<=" else value >= bound
    return "met" if ok else "NOT MET"


def summary(results: list[Result]) -> str:
    head = ("benchmark", "tree", "headline", "value", "baseline", "ratio", "target", "verdict")
    rows: list[tuple[str, ...]] = []
    for r in results:
        name = f"{r.script.removeprefix('bench_').removesuffix('.py')} ({r.seconds:.0f} s)"
        if r.status != "ok":
            rows.append((name, r.tree, r.status.upper(), "", "", "", "", ""))
            continue
        for i, (what, value, base, ratio, target) in enumerate(r.headlines):
            rows.append(
                (
                    name if i == 0 else "",
                    r.tree,
                    what,
                    value,
                    base,
                    ratio,
                    target,
                    verdict(ratio, target),
                )
            )
    widths = [max(len(row[i]) for row in [head, *rows]) for i in range(len(head))]
    out = ["  ".join(f"{c:<{w}}" for c, w in zip(head, widths, strict=True)).rstrip()]
    out.append("-" * (sum(widths) + 2 * (len(head) - 1)))
    for row in rows:
        out.append("  ".join(f"{c:<{w}}" for c, w in zip(row, widths, strict=True)).rstrip())
    return "\n".join(out)


def main(argv: list[str]) -> int:
    against = None
    if argv[:1] == ["--against"] and len(argv) > 1:
        against, argv = argv[1], argv[2:]
    scripts = discover(argv)
    if not scripts:
        print(f"no benchmark in {HERE} matches {argv}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    results: list[Result] = []
    with tempfile.TemporaryDirectory() as tmp:
        worktree = Path(tmp) / "against"
        if against is not None:
            subprocess.run(
                ["git", "worktree", "add", "--detach", str(worktree), against],
                cwd=HERE.parent,
                check=True,
                capture_output=True,
            )
        try:
            for script in scripts:
                if against is not None:
                    results.append(run_one(script, against, worktree))
                results.append(run_one(script))
        finally:
            if against is not None:
                subprocess.run(
                    ["git", "worktree", "remove", "--force", str(worktree)],
                    cwd=HERE.parent,
                    check=False,
                    capture_output=True,
                )
    total = time.perf_counter() - started
    print(f"\n=== summary ({len(results)} runs, {total:.0f} s, one run, side by side)")
    print(summary(results))
    return 0 if all(r.status == "ok" for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
