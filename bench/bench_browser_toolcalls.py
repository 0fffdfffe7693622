"""A turn of 1,000 tool calls in the browser, and the same cell re-run (issue 29).

    python bench/bench_browser_toolcalls.py [--calls 1000] [--runs 5] [--rounds 2] [--build DIR]
                                            [--frames] [--profile] [--trace]

The browser side of ``bench_toolcalls.py``: in JupyterLab in chromium (``_browser.py``: the
server, its ``--build`` of the extension, the page's probes), a notebook whose first cell
connects the same scripted agent (``tests/adversarial/agents/toolcalls_agent.py``: CALLS tool
calls per prompt, each announced, in progress, then completed) and whose second is
``%%acp --session tc`` with ``go``. The second cell is run RUNS times, as the same cell.

Measured in the page, for each run, from the moment the cell is run until one second after it
finished and its last words (``made CALLS tool calls``) are shown: main-thread long tasks
(count, the longest), the worst event-loop lag (a 20 ms ``setTimeout`` chain) and the longest
gap between animation frames. Target: no frame gap over 500 ms.

After each run, and once before the first: the tab's heap after a forced garbage collection
(CDP ``HeapProfiler.collectGarbage``, then ``Runtime.getHeapUsage``: V8's heap and Blink's,
where the DOM lives), its DOM nodes and event listeners (``Memory.getDOMCounters``: nodes not
yet swept count too), the elements in the page, and the kernel's RSS and live widget models after
``gc.collect()`` (asked of the kernel beside the cells). Target: after run RUNS, the heap and
the RSS within 10% of what they were after run 1.

Before the first run, the page is probed idle for 5 s: the noise floor of this machine's load.
Each round is a fresh page and kernel; the summary gives medians over the rounds. ``--trace``
(a Chrome trace: the longest tasks' breakdown) and ``--profile`` (a CPU profile) record one run
of each round (``--record-run``, the first by default).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from _browser import (
    DEFAULT_BUILD,
    ROOT,
    build_entry,
    load,
    missing,
    notebook,
    run_rounds,
    trace_summary,
)

AGENT = ROOT / "tests" / "adversarial" / "agents" / "toolcalls_agent.py"
FRAME_GAP_TARGET_MS = 500.0
FLAT_TARGET = 1.10

# Asked of the kernel after each run: its live widget models and its RSS (MiB), after a GC.
KEPT = """
import gc as _gc
from ipywidgets.widgets.widget import _instances as _models
_gc.collect()
_status = open('/proc/self/status').read()
print(len(_models), int(_status.split('VmRSS:')[1].split()[0]) / 1024)
"""

# The page side (after _browser.DRIVER_COMMON). One RESULT line per run (run 0: before any).
DRIVER = r"""
// What a run leaves: the tab's heap after a forced GC, its DOM, the kernel's RSS and models.
async function kept(page, cdp) {
  await cdp.send('HeapProfiler.collectGarbage');
  await cdp.send('HeapProfiler.collectGarbage');
  const heap = await cdp.send('Runtime.getHeapUsage');
  const dom = await cdp.send('Memory.getDOMCounters');
  const attached = await page.evaluate(() => document.getElementsByTagName('*').length);
  const [models, rss] = (await kernelRun(page, cfg.kept)).trim().split(/\s+/).map(Number);
  return { heap_mb: (heap.usedSize + (heap.embedderHeapUsedSize || 0)) / 2 ** 20,
           js_mb: heap.usedSize / 2 ** 20, blink_mb: (heap.embedderHeapUsedSize || 0) / 2 ** 20,
           dom_nodes: dom.nodes,
           listeners: dom.jsEventListeners, elements: attached, kernel_rss_mb: rss,
           models };
}

async function round(page, n) {
  await openNotebook(page, cfg.notebooks[n], 2);
  const build = await buildLoaded(page);
  const cdp = await page.context().newCDPSession(page);
  await startCell(page, 0);
  await waitFor(page, () => {
    const w = window.jupyterapp.shell.currentWidget;
    return w.content.widgets[0].node.textContent.includes('connected');
  }, null, 120000);
  await cellDone(page, 0, 120000);
  await page.evaluate(() => window.__bench.start());
  await page.waitForTimeout(cfg.idleMs);
  const idle = await page.evaluate(() => window.__bench.stop());
  console.log('RESULT ' + JSON.stringify({ round: n + 1, run: 0, build, ...idle,
                                           ...await kept(page, cdp) }));
  for (let run = 1; run <= cfg.runs; run++) {
    const before = await page.evaluate(() =>
      window.jupyterapp.shell.currentWidget.content.widgets[1].model.executionCount);
    const stop = run === cfg.recordRun ? await recorder(page, String(n + 1)) : null;
    const t0 = await page.evaluate(() => window.__bench.start());
    await startCell(page, 1);
    const tDone = await waitFor(page, ([before, words]) => {
      const w = window.jupyterapp.shell.currentWidget;
      const cell = w.content.widgets[1];
      const count = cell.model.executionCount;
      const done = count !== null && count !== before &&
        w.sessionContext.session.kernel.status === 'idle' &&
        cell.node.textContent.includes(words);
      return done ? performance.now() : 0;
    }, [before, cfg.words], cfg.timeout);
    await page.waitForTimeout(1000);
    const stats = await page.evaluate(() => window.__bench.stop());
    if (stop) await stop();
    console.log('RESULT ' + JSON.stringify({ round: n + 1, run, build, cell_s: (tDone - t0) / 1000,
                                             ...stats, ...await kept(page, cdp) }));
  }
  await page.evaluate(async () => {
    await window.jupyterapp.shell.currentWidget.sessionContext.shutdown();
  });
}

(async () => {
  const browser = await launch();
  try {
    for (let n = 0; n < cfg.rounds; n++) {
      const page = await newPage(browser);
      await round(page, n);
      await page.context().close();
    }
  } finally {
    await browser.close();
  }
})().catch(e => { console.error(e); process.exit(1); });
"""


def toolcalls_notebook(calls: int) -> str:
    connect = "\n".join(
        [
            "import sys",
            "%load_ext acp_notebook",
            f"%acp connect --name tc -- {{sys.executable}} {AGENT} {calls}",
        ]
    )
    return notebook([connect, "%%acp --session tc\ngo\n"])


def fmt(r: dict[str, Any]) -> str:
    kept = (
        f"heap {r['heap_mb']:.1f} MiB (JS {r['js_mb']:.1f}, DOM {r['blink_mb']:.1f}), "
        f"{r['dom_nodes']:,} DOM nodes ({r['elements']:,} elements "
        f"in the page), {r['listeners']:,} listeners; kernel RSS {r['kernel_rss_mb']:.0f} MiB, "
        f"{r['models']:.0f} models"
    )
    if r["run"] == 0:
        return (
            f"round {r['round']} before run 1: idle page {r['window_s']:.0f} s: worst task "
            f"{r['worst_task_ms']:.0f} ms, worst lag {r['worst_lag_ms']:.0f} ms, worst frame gap "
            f"{r['worst_frame_gap_ms']:.0f} ms; {kept}"
        )
    return (
        f"round {r['round']} run {r['run']}: cell {r['cell_s']:.1f} s; long tasks "
        f"{r['longtasks']} (worst {r['worst_task_ms']:.0f} ms, {r['longtask_total_s']:.1f} s in "
        f"all); worst lag {r['worst_lag_ms']:.0f} ms; worst frame gap "
        f"{r['worst_frame_gap_ms']:.0f} ms; then {kept}"
    )


def summarise(results: list[dict[str, Any]], calls: int, runs: int) -> None:
    def series(key: str, first: int = 0) -> list[float]:
        """The median of ``key`` over the rounds, for each run from ``first`` on."""
        return [
            statistics.median(float(r[key]) for r in results if r["run"] == run)
            for run in range(first, runs + 1)
            if any(r["run"] == run for r in results)
        ]

    rounds = len([r for r in results if r["run"] == 0])
    if not rounds or len(series("heap_mb")) < runs + 1:
        print("summary: not every run finished")
        return
    print(f"{calls} tool calls per turn, {runs} runs of one cell, median of {rounds} round(s):")
    for key, what in (
        ("cell_s", "cell time, s"),
        ("worst_frame_gap_ms", "worst frame gap, ms"),
        ("worst_task_ms", "worst long task, ms"),
        ("worst_lag_ms", "worst event-loop lag, ms"),
    ):
        values = series(key, 1)
        print(f"  {what:<27}: " + " | ".join(f"{v:.1f}" for v in values))
    for key, what in (
        ("heap_mb", "tab heap after GC, MiB"),
        ("js_mb", "  of it JS (V8), MiB"),
        ("blink_mb", "  of it DOM (Blink), MiB"),
        ("dom_nodes", "DOM nodes"),
        ("elements", "elements in the page"),
        ("listeners", "event listeners"),
        ("kernel_rss_mb", "kernel RSS, MiB"),
        ("models", "kernel widget models"),
    ):
        print(f"  {what:<27}: " + " -> ".join(f"{v:,.1f}" for v in series(key)))
    idle = series("worst_frame_gap_ms")[0]
    gap = max(float(r["worst_frame_gap_ms"]) for r in results if r["run"] == 1)
    first = series("worst_frame_gap_ms", 1)[0]
    heap, rss = series("heap_mb"), series("kernel_rss_mb")
    print(
        f"run 1 worst frame gap {first:.0f} ms (max {gap:.0f}; target <= "
        f"{FRAME_GAP_TARGET_MS:.0f}; idle page {idle:.0f} ms)"
    )
    print(
        f"heap after run {runs} / after run 1: {heap[runs] / heap[1]:.3f} (target <= "
        f"{FLAT_TARGET:.2f}); kernel RSS after run {runs} / after run 1: "
        f"{rss[runs] / rss[1]:.3f} (target <= {FLAT_TARGET:.2f})"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--build", type=Path, default=DEFAULT_BUILD, help="the acp-notebook labextension build"
    )
    parser.add_argument(
        "--frames", action="store_true", help="print each run's 3 longest animation frames"
    )
    parser.add_argument(
        "--profile", action="store_true", help="print a run's CPU profile (self time)"
    )
    parser.add_argument(
        "--trace", action="store_true", help="record a Chrome trace of a run; its longest tasks"
    )
    parser.add_argument(
        "--record-run", type=int, default=1, help="the run --profile and --trace record"
    )
    args = parser.parse_args()
    lacking = missing(args.build)
    if lacking:
        print(f"cannot run: missing {'; '.join(lacking)}", file=sys.stderr)
        return 2
    build = build_entry(args.build)
    with tempfile.TemporaryDirectory(prefix="acp-bbt-", ignore_cleanup_errors=True) as name:
        tmp = Path(name)
        names = []
        for i in range(args.rounds):
            names.append(f"toolcalls-{i + 1}.ipynb")
            (tmp / names[-1]).write_text(toolcalls_notebook(args.calls))
        print(
            f"{args.calls} tool calls per turn, {args.runs} runs, {args.rounds} round(s); build "
            f"{args.build} ({build}); load {load()}",
            flush=True,
        )
        results: list[dict[str, Any]] = []

        def show(result: dict[str, Any]) -> None:
            results.append(result)
            if result["run"] == 0 and result["build"] != build:
                print(f"  WARNING: the page loaded {result['build']}, not {build}")
            print(fmt(result), flush=True)
            if args.frames:
                for frame in result.get("worst_frames") or []:
                    print(f"    long frame: {json.dumps(frame)}")
            if args.trace and result["run"] == args.record_run:
                print(trace_summary(tmp / f"trace-{result['round']}.json"), flush=True)

        cfg = {
            "rounds": args.rounds,
            "runs": args.runs,
            "notebooks": names,
            "words": f"made {args.calls} tool calls",
            "kept": KEPT,
            "idleMs": 5000,
            "timeout": 900000,
            "profile": args.profile,
            "trace": str(tmp / "trace") if args.trace else None,
            "recordRun": args.record_run,
        }
        code = run_rounds(tmp, args.build, DRIVER, cfg, show)
        summarise(results, args.calls, args.runs)
        return code


if __name__ == "__main__":
    raise SystemExit(main())
