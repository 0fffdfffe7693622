"""A flood of terminal output in the browser: acp's live terminal beside JupyterLab's own.

    python bench/bench_browser_flood.py [--mb 100] [--rounds 3] [--build DIR] [--only acp|lab]

Needs Debian's chromium (``/usr/bin/chromium``, or ``$ACP_CHROMIUM``) and the Playwright the
browser tests use (``ui-tests/node_modules/playwright-core``, from ``cd ui-tests && jlpm
install``); ``bench/run.py`` runs it only when asked by name (``python bench/run.py browser``).

It starts a JupyterLab server (``_browser.start_server``) whose ``acp-notebook`` extension is
the build in ``--build`` (default: this tree's ``acp_notebook/labextension``; the page's loaded
``remoteEntry`` file is printed so the build is known), and the kernels import this tree's
package (``PYTHONPATH``). The same file of
``--mb`` MB of text lines (74-byte lines of a numbered base64 row, ending with an ``END OF
FLOOD`` line) is written once, then ``cat`` of it is measured in each round, in a fresh page,
two ways, in alternating order:

* ``acp``: a notebook whose first cell connects the embedded agent and whose second is
  ``%%acp --allow 'cat *'`` with ``$ cat FILE``: the bytes reach the cell's live terminal (the
  labextension's xterm.js view) through the kernel's widget comm;
* ``lab``: JupyterLab's own Terminal panel (jupyter_server_terminals, ``/bin/sh``), where
  ``cat FILE`` is typed.

Measured in the page, from the moment the cell is run (or the command sent) until one second
after both the last byte is in xterm's buffer and (acp) the cell has finished:

* time to the last byte: the ``END OF FLOOD`` line in the terminal's buffer (polled every
  100 ms in the page);
* main-thread long tasks (``PerformanceObserver('longtask')``, tasks over 50 ms): their count
  and the longest;
* the worst event-loop lag: a 20 ms ``setTimeout`` chain's worst lateness, and the longest gap
  between animation frames;
* the page's main-thread CPU time (its renderer's main thread, from ``/proc``): what the page
  did, which the machine's load does not inflate as it does the wall-clock times above;
* whether the last rows are right: the last 8 lines of the buffer up to the end line equal
  the file's.

Each round prints one line per way; then the medians, and the ratios acp / lab. Where the
time went: ``--frames`` (the longest animation frames' scripts), ``--profile`` (a CPU profile
of the acp page), ``--trace`` (a Chrome trace of it: its longest tasks by script, style,
layout, paint and GC).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from _browser import (
    DEFAULT_BUILD,
    build_entry,
    load,
    missing,
    notebook,
    run_rounds,
    trace_summary,
)

LAST_ROWS = 8
MARKER = "END OF FLOOD "
RAW_PER_LINE = 48  # bytes of pseudo-random data a line shows, as 64 base64 characters


def make_flood(path: Path, size: int) -> list[str]:
    """Write about ``size`` bytes of numbered lines; return the last LAST_ROWS lines."""
    per_line = 10 + 64 + 1
    lines = max(LAST_ROWS, size // per_line)
    rng = random.Random(29)
    with path.open("wb") as f:
        done = 0
        while done < lines:
            n = min(20000, lines - done)
            raw = rng.randbytes(RAW_PER_LINE * n)
            text = base64.b64encode(raw)
            f.write(
                b"".join(b"%09d %s\n" % (done + i, text[64 * i : 64 * (i + 1)]) for i in range(n))
            )
            done += n
        f.write(b"END OF FLOOD %d\n" % lines)
    with path.open("rb") as f:
        f.seek(-per_line * LAST_ROWS - 64, os.SEEK_END)
        tail = f.read().decode().splitlines()
    return tail[-LAST_ROWS:]


def flood_notebook(work: Path, flood: Path) -> str:
    connect = "\n".join(
        [
            "import sys",
            "%load_ext acp_notebook",
            f"%acp connect --name embedded --cwd {work} -- "
            f"{{sys.executable}} -m acp_notebook.agent --data-dir {work}/.agent-data",
        ]
    )
    return notebook([connect, f"%%acp --allow 'cat *'\n$ cat {flood}"])


# The page side (after _browser.DRIVER_COMMON). One RESULT line per measurement.
DRIVER = r"""
// The END line in a terminal's buffer: performance.now() then, else 0.
function endSeen(term, marker) {
  const buffer = term.buffer.active;
  for (let i = buffer.length - 1; i >= Math.max(0, buffer.length - 60); i--) {
    const line = buffer.getLine(i);
    if (line && line.translateToString(true).startsWith(marker)) return performance.now();
  }
  return 0;
}

// The LAST_ROWS lines of the buffer ending with the END line.
function lastRows(term, marker, n) {
  const buffer = term.buffer.active;
  const rows = [];
  for (let i = 0; i < buffer.length; i++) rows.push(buffer.getLine(i).translateToString(true));
  let end = rows.length - 1;
  while (end >= 0 && !rows[end].startsWith(marker)) end--;
  return end < 0 ? rows.slice(-n) : rows.slice(Math.max(0, end - n + 1), end + 1);
}

async function acpRound(page, round) {
  await openNotebook(page, cfg.notebooks[round], 2);
  const build = await buildLoaded(page);
  await startCell(page, 0);
  await waitFor(page, () => {
    const w = window.jupyterapp.shell.currentWidget;
    return w.content.widgets[0].node.textContent.includes('connected');
  }, null, 120000);
  const stop = await recorder(page, String(round + 1));
  const cpu0 = rendererCpu();
  const t0 = await page.evaluate(() => window.__bench.start());
  await startCell(page, 1);
  const SEL = '.acp-turn:not(.acp-turn-static) .acp-terminal[data-phase]';
  const tEnd = await waitFor(page, ([sel, marker, endSeenSrc]) => {
    const el = document.querySelector(sel);
    if (!el || !el.__acpTerm) return 0;
    const endSeen = new Function('return ' + endSeenSrc)();
    return endSeen(el.__acpTerm, marker);
  }, [SEL, cfg.marker, endSeen.toString()], cfg.timeout);
  await cellDone(page, 1, cfg.timeout);
  const tDone = await page.evaluate(() => performance.now());
  await page.waitForTimeout(1000);
  const stats = await page.evaluate(() => window.__bench.stop());
  stats.main_cpu_s = cpuSince(cpu0);
  await stop();
  const rows = await page.evaluate(([sel, marker, n, src]) => {
    const lastRows = new Function('return ' + src)();
    return lastRows(document.querySelector(sel).__acpTerm, marker, n);
  }, [SEL, cfg.marker, cfg.lastRows, lastRows.toString()]);
  // bytes the view skipped while far behind (data-skipped; builds before it have none)
  const skipped = await page.evaluate(sel => {
    const value = document.querySelector(sel).dataset.skipped;
    return value === undefined ? null : Number(value);
  }, SEL);
  await page.evaluate(async () => {
    await window.jupyterapp.shell.currentWidget.sessionContext.shutdown();
  });
  return { way: 'acp', build, last_byte_s: (tEnd - t0) / 1000,
           cell_done_s: (tDone - t0) / 1000, rows, skipped, ...stats };
}

async function labRound(page) {
  await page.goto(`${cfg.base}/lab?reset`);
  await appReady(page);
  await page.evaluate(async () => {
    window.__labTerm = await window.jupyterapp.commands.execute('terminal:create-new');
  });
  await waitFor(page, () => {
    const w = window.__labTerm;
    const t = w && w.content && w.content._term;
    if (!t || w.content.session.connectionStatus !== 'connected') return false;
    const buffer = t.buffer.active;
    for (let i = 0; i < buffer.length; i++) {
      if (buffer.getLine(i).translateToString(true).trim()) return true; // the prompt
    }
    return false;
  }, null, 120000);
  const cpu0 = rendererCpu();
  const t0 = await page.evaluate(cmd => {
    const t0 = window.__bench.start();
    window.__labTerm.content.session.send({ type: 'stdin', content: [cmd + '\r'] });
    return t0;
  }, `cat ${cfg.flood}`);
  const tEnd = await waitFor(page, ([marker, endSeenSrc]) => {
    const endSeen = new Function('return ' + endSeenSrc)();
    return endSeen(window.__labTerm.content._term, marker);
  }, [cfg.marker, endSeen.toString()], cfg.timeout);
  await page.waitForTimeout(1000);
  const stats = await page.evaluate(() => window.__bench.stop());
  stats.main_cpu_s = cpuSince(cpu0);
  const rows = await page.evaluate(([marker, n, src]) => {
    const lastRows = new Function('return ' + src)();
    return lastRows(window.__labTerm.content._term, marker, n);
  }, [cfg.marker, cfg.lastRows, lastRows.toString()]);
  await page.evaluate(async () => { await window.__labTerm.content.session.shutdown(); });
  return { way: 'lab', build: null, last_byte_s: (tEnd - t0) / 1000, cell_done_s: null,
           rows, skipped: null, ...stats };
}

// The noise floor: an idle JupyterLab page probed as long (10 s), under the same load.
async function idleRound(page) {
  await page.goto(`${cfg.base}/lab?reset`);
  await appReady(page);
  const cpu0 = rendererCpu();
  await page.evaluate(() => window.__bench.start());
  await page.waitForTimeout(10000);
  const stats = await page.evaluate(() => window.__bench.stop());
  stats.main_cpu_s = cpuSince(cpu0);
  return { way: 'idle', build: null, last_byte_s: 0, cell_done_s: null, rows: null,
           skipped: null, ...stats };
}

(async () => {
  const browser = await launch();
  try {
    for (let round = 0; round < cfg.rounds; round++) {
      const order = cfg.ways.length > 1 && round % 2 ? [...cfg.ways].reverse() : cfg.ways;
      for (const way of order) {
        const page = await newPage(browser);
        const result = way === 'acp' ? await acpRound(page, round)
          : way === 'lab' ? await labRound(page) : await idleRound(page);
        result.round = round + 1;
        console.log('RESULT ' + JSON.stringify(result));
        await page.context().close();
      }
    }
  } finally {
    await browser.close();
  }
})().catch(e => { console.error(e); process.exit(1); });
"""


def fmt(result: dict[str, Any], expected: list[str]) -> str:
    if result["way"] == "idle":
        return (
            f"idle round {result['round']}: an idle page for {result['window_s']:.0f} s: long "
            f"tasks {result['longtasks']} (worst {result['worst_task_ms']:.0f} ms); worst lag "
            f"{result['worst_lag_ms']:.0f} ms; worst frame gap "
            f"{result['worst_frame_gap_ms']:.0f} ms; main thread CPU {result['main_cpu_s']:.1f} s"
        )
    rows_ok = result["rows"] == expected
    done = f", cell done {result['cell_done_s']:.1f} s" if result.get("cell_done_s") else ""
    if result.get("skipped") is not None:
        done += f", {result['skipped'] / 1e6:.1f} MB skipped by the view"
    return (
        f"{result['way']:>3} round {result['round']}: last byte {result['last_byte_s']:.1f} s"
        f"{done}; long tasks {result['longtasks']} (worst {result['worst_task_ms']:.0f} ms, "
        f"{result['longtask_total_s']:.1f} s in all); worst lag {result['worst_lag_ms']:.0f} ms; "
        f"worst frame gap {result['worst_frame_gap_ms']:.0f} ms; main thread CPU "
        f"{result['main_cpu_s']:.1f} s; last rows right={rows_ok}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=100.0, help="MB of output (10^6 bytes)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--build", type=Path, default=DEFAULT_BUILD, help="the acp-notebook labextension build"
    )
    parser.add_argument("--only", choices=("acp", "lab", "idle"), default=None)
    parser.add_argument(
        "--frames", action="store_true", help="print the 3 longest animation frames' scripts"
    )
    parser.add_argument(
        "--profile", action="store_true", help="print the acp page's CPU profile (self time)"
    )
    parser.add_argument(
        "--trace",
        action="store_true",
        help="record a Chrome trace of each acp round; print its longest tasks' breakdown",
    )
    args = parser.parse_args()
    lacking = missing(args.build)
    if lacking:
        print(f"cannot run: missing {'; '.join(lacking)}", file=sys.stderr)
        return 2
    build = build_entry(args.build)
    with tempfile.TemporaryDirectory(prefix="acp-bbf-", ignore_cleanup_errors=True) as name:
        tmp = Path(name)
        flood = tmp / "flood.txt"
        expected = make_flood(flood, int(args.mb * 1e6))
        size = flood.stat().st_size
        work = tmp / "work"
        work.mkdir()
        names = []
        for i in range(args.rounds):
            names.append(f"flood-{i + 1}.ipynb")
            (tmp / names[-1]).write_text(flood_notebook(work, flood))
        print(
            f"cat of {size:,} bytes ({size / 1e6:.0f} MB, {size // 75:,} lines) into a terminal, "
            f"{args.rounds} round(s); build {args.build} ({build}); load {load()}",
            flush=True,
        )
        results: list[dict[str, Any]] = []

        def show(result: dict[str, Any]) -> None:
            results.append(result)
            if result["way"] == "acp":
                loaded = result["build"]
                print(f"  (the page loaded acp-notebook {loaded}; expected {build})")
                if loaded != build:
                    print("  WARNING: the page did not load the build asked for")
            print(fmt(result, expected), flush=True)
            if args.frames:
                for frame in result.get("worst_frames") or []:
                    print(f"    long frame: {json.dumps(frame)}")
            if args.trace and result["way"] == "acp":
                print(trace_summary(tmp / f"trace-{result['round']}.json"), flush=True)
            if result["rows"] is not None and result["rows"] != expected:
                print(f"    last rows: {result['rows']!r}\n    expected:  {expected!r}")

        cfg = {
            "rounds": args.rounds,
            "ways": [args.only] if args.only else ["acp", "lab", "idle"],
            "notebooks": names,
            "flood": str(flood),
            "marker": MARKER,
            "lastRows": LAST_ROWS,
            "timeout": 900000,
            "profile": args.profile,
            "trace": str(tmp / "trace") if args.trace else None,
        }
        code = run_rounds(tmp, args.build, DRIVER, cfg, show)
        summarise(results, expected)
        return code


def summarise(results: list[dict[str, Any]], expected: list[str]) -> None:
    by_way: dict[str, dict[str, float]] = {}
    for way in ("acp", "lab", "idle"):
        rs = [r for r in results if r["way"] == way]
        if not rs:
            continue
        med = {
            key: statistics.median(float(r[key]) for r in rs)
            for key in ("last_byte_s", "longtasks", "worst_task_ms", "worst_lag_ms", "main_cpu_s")
        }
        med["max_task_ms"] = max(float(r["worst_task_ms"]) for r in rs)
        med["max_lag_ms"] = max(float(r["worst_lag_ms"]) for r in rs)
        by_way[way] = med
        right = sum(r["rows"] == expected for r in rs)
        if way == "idle":
            print(
                f"idle page (median of {len(rs)}, the noise floor): long tasks "
                f"{med['longtasks']:.0f}, worst task {med['worst_task_ms']:.0f} ms; worst lag "
                f"{med['worst_lag_ms']:.0f} ms (max {med['max_lag_ms']:.0f})"
            )
            continue
        print(
            f"{way} (median of {len(rs)}): last byte {med['last_byte_s']:.1f} s; "
            f"long tasks {med['longtasks']:.0f}, worst task {med['worst_task_ms']:.0f} ms "
            f"(max {med['max_task_ms']:.0f}); worst lag {med['worst_lag_ms']:.0f} ms "
            f"(max {med['max_lag_ms']:.0f}); main thread CPU {med['main_cpu_s']:.1f} s; last rows "
            f"right {right}/{len(rs)}"
        )
    if "acp" in by_way and "lab" in by_way:
        acp, lab = by_way["acp"], by_way["lab"]
        print(
            f"ratio acp/lab: time to last byte {acp['last_byte_s'] / lab['last_byte_s']:.2f} "
            f"(target < 1); worst task {acp['worst_task_ms']:.0f} ms (target <= 200); "
            f"worst lag {acp['worst_lag_ms']:.0f} ms (target < 250, lab "
            f"{lab['worst_lag_ms']:.0f})"
        )


if __name__ == "__main__":
    raise SystemExit(main())
