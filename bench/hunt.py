"""The flake hunt: run the kernel and browser tests N times in a row with the CPU loaded.

A race that a quiet machine hides often shows when the scheduler is slow to come back to a
process. So this keeps every core busy (``stress-ng --cpu N``, Debian's ``stress-ng``; a busy
loop per core where it is missing) and runs the selected tests ``--runs`` times (default 5),
one pytest run after another, recording each run's failures. The result is a summary in
``bench/results/hunt-<time>/summary.md`` (and ``summary.json``), with every run's log and JUnit
XML beside it, so a failure can be read later.

Usage (from the repository root)::

    python3 bench/hunt.py                       # the default selection, 5 loaded runs
    python3 bench/hunt.py --runs 2 tests/test_browser.py
    python3 bench/hunt.py -- tests/test_notebook_kernel.py   # one module, in one process
    python3 bench/hunt.py --load none           # the same runs on a quiet machine

Positional arguments (and everything after ``--``) go to pytest as the test selection; without
any, :data:`DEFAULT_SELECTION` is used: the kernel and browser tiers (every test that starts a
real kernel, the example notebooks under nbval, the Playwright suite), with no paths, so on the
test command's pytest-xdist workers. The exit code is 0 only when every run passed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The kernel and browser tiers, run as the test command runs them: no paths, so on its
#: pytest-xdist workers (tests/_tiers.py).
DEFAULT_SELECTION = ["-m", "kernel or browser"]


@dataclass
class Run:
    number: int
    exit_code: int
    seconds: float
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    failures: list[str] = field(default_factory=list)  # "test id: first line of the message"


def start_load(kind: str, cpus: int) -> list[subprocess.Popen[bytes]]:
    """Load every core: stress-ng where it is installed, else one busy loop per core."""
    if kind == "none" or cpus <= 0:
        return []
    stress = shutil.which("stress-ng")
    if kind in ("auto", "stress-ng") and stress is not None:
        return [
            subprocess.Popen(
                [stress, "--cpu", str(cpus), "--quiet"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        ]
    if kind == "stress-ng":
        raise SystemExit("stress-ng is not installed (apt-get install -y stress-ng)")
    busy = [sys.executable, "-c", "while True: pass"]
    return [subprocess.Popen(busy, start_new_session=True) for _ in range(cpus)]


def stop_load(load: list[subprocess.Popen[bytes]]) -> None:
    """End the load this script started (each by its own process group)."""
    for proc in load:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
    for proc in load:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def stop_run(proc: subprocess.Popen[bytes]) -> None:
    """Interrupt a pytest run (SIGINT, as Ctrl-C), then kill what is left of its session."""
    for sig, grace in ((signal.SIGINT, 120.0), (signal.SIGKILL, 30.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def _stop_on_sigterm() -> None:
    """SIGTERM (``kill PID``) ends the hunt like Ctrl-C: the run and the load are stopped."""

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)


def read_junit(path: Path, run: Run) -> None:
    """Counts and failures from pytest's JUnit XML (absent when pytest could not start)."""
    if not path.is_file():
        run.failures.append(f"(no JUnit report: pytest exited {run.exit_code}, see the log)")
        return
    for case in ET.parse(path).getroot().iter("testcase"):
        test_id = f"{case.get('classname', '')}::{case.get('name', '')}"
        # (a case's children may start with its properties, system-out or system-err: the
        # outcome is the first other child, if any)
        outcomes = [c for c in case if c.tag not in ("system-out", "system-err", "properties")]
        outcome = outcomes[0] if outcomes else None
        if outcome is None:
            run.passed += 1
        elif outcome.tag == "skipped":
            run.skipped += 1
        elif outcome.tag in ("failure", "error"):
            if outcome.tag == "failure":
                run.failed += 1
            else:
                run.errors += 1
            message = (outcome.get("message") or outcome.text or "").strip().splitlines()
            run.failures.append(f"{test_id} [{outcome.tag}]: {message[0] if message else ''}")


def one_run(number: int, selection: list[str], out: Path) -> Run:
    log = out / f"run-{number}.log"
    junit = out / f"run-{number}.xml"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rfE"]
    argv += [f"--junitxml={junit}", *selection]
    start = time.monotonic()
    with log.open("wb") as sink:
        # its own session, so that a stopped hunt can stop the run as a whole (SIGINT first:
        # pytest then tears its fixtures down, kernels included)
        proc = subprocess.Popen(
            argv, cwd=ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            code = proc.wait()
        except BaseException:
            stop_run(proc)
            raise
    run = Run(number, code, round(time.monotonic() - start, 1))
    read_junit(junit, run)
    return run


#: where the browser tier's groups leave what Playwright keeps of a failed test (a screenshot,
#: the page's error context), one folder per group; the next run empties it
ARTIFACTS = ROOT / "test-artifacts"


def keep_browser_failures(number: int, out: Path, artifacts: Path = ARTIFACTS) -> list[Path]:
    """Copy the Playwright output folders that hold a failed test's record (its
    ``error-context.md``) beside run ``number``'s log, before the next run empties them: a
    browser failure is read from its screenshot. The copies made."""
    kept = []
    for folder in sorted(artifacts.glob("playwright-output-*")):
        if folder.is_dir() and any(folder.rglob("error-context.md")):
            copy = out / f"run-{number}-{folder.name}"
            shutil.copytree(folder, copy, dirs_exist_ok=True)
            kept.append(copy)
    return kept


def source_version(root: Path = ROOT) -> str:
    """The commit the hunted code is at, with ``+changes`` when a tracked file differs from it
    (a result is only worth what the code it ran on; a new file not yet added is not seen), or
    ``unknown`` outside a git checkout."""

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, check=True, timeout=30
        )
        return done.stdout.strip()

    try:
        head = git("rev-parse", "--short=12", "HEAD")
        changes = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{head}+changes" if changes else head


def write_summary(
    out: Path, load: str, selection: list[str], runs: list[Run], total: int, version: str
) -> None:
    (out / "summary.json").write_text(
        json.dumps(
            {
                "version": version,
                "load": load,
                "selection": selection,
                "runs": [asdict(r) for r in runs],
            },
            indent=1,
        )
    )
    lines = [
        f"# Flake hunt: {len(runs)} of {total} runs, load: {load}",
        "",
        f"code: {version}",
        "",
        f"selection: {' '.join(selection)}",
        "",
        "| run | exit | seconds | passed | failed | errors | skipped |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in runs:
        cells = (r.number, r.exit_code, r.seconds, r.passed, r.failed, r.errors, r.skipped)
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    lines.append("")
    for r in runs:
        for failure in r.failures:
            lines.append(f"- run {r.number}: {failure}")
    if not any(r.failures for r in runs):
        lines.append("no failures")
    (out / "summary.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs in a row (default: 5)")
    parser.add_argument(
        "--load",
        choices=["auto", "stress-ng", "busy", "none"],
        default="auto",
        help="how to load the CPU (default: stress-ng if installed, else busy loops)",
    )
    parser.add_argument(
        "--cpus", type=int, default=os.cpu_count() or 2, help="workers of load (default: cores)"
    )
    parser.add_argument(
        "--out", type=Path, help="where to write (default: bench/results/hunt-TIME)"
    )
    parser.add_argument("selection", nargs="*", help="pytest arguments (default: see the module)")
    args = parser.parse_args(argv)
    _stop_on_sigterm()
    selection = args.selection or DEFAULT_SELECTION
    out = args.out or ROOT / "bench" / "results" / time.strftime("hunt-%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    version = source_version()  # before the runs: what was hunted, not what the tree became
    load = start_load(args.load, args.cpus)
    described = "none" if not load else f"{args.load} x{args.cpus}"
    runs: list[Run] = []
    try:
        for number in range(1, args.runs + 1):
            print(f"run {number}/{args.runs} ...", flush=True)
            run = one_run(number, selection, out)
            runs.append(run)
            if run.exit_code:
                for copy in keep_browser_failures(number, out):
                    print(f"kept the browser's record of a failure: {copy}", flush=True)
            print(
                f"run {number}: exit {run.exit_code}, {run.seconds} s,"
                f" {run.failed} failed, {run.errors} errors",
                flush=True,
            )
            write_summary(out, described, selection, runs, args.runs, version)
    except KeyboardInterrupt:
        print(f"stopped after {len(runs)} complete runs", flush=True)
        return 130
    finally:
        stop_load(load)
        print(f"summary: {out / 'summary.md'}")
    return 0 if runs and all(r.exit_code == 0 for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
