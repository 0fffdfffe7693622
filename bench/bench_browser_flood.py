"""A flood of terminal output in the browser: acp's live terminal beside JupyterLab's own.

    python bench/bench_browser_flood.py [--mb 100] [--rounds 3] [--build DIR] [--only acp|lab]

Needs Debian's chromium (``/usr/bin/chromium``, or ``$ACP_CHROMIUM``) and the Playwright the
browser tests use (``ui-tests/node_modules/playwright-core``, from ``cd ui-tests && jlpm
install``); ``bench/run.py`` runs it only when asked by name (``python bench/run.py browser``).

It starts a JupyterLab server on 127.0.0.1 (a free port, a temp root, no token) whose
``acp-notebook`` extension is the build in ``--build`` (default: this tree's
``acp_notebook/labextension``; the page's loaded ``remoteEntry`` file is printed so the build
is known), and the kernels import this tree's package (``PYTHONPATH``). The same file of
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
* whether the last rows are right: the last 8 lines of the buffer up to the end line equal
  the file's.

Each round prints one line per way; then the medians, and the ratios acp / lab.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
UI_NODE_MODULES = ROOT / "ui-tests" / "node_modules"
CHROMIUM = Path(os.environ.get("ACP_CHROMIUM", "/usr/bin/chromium"))
LAST_ROWS = 8
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def notebook(work: Path, flood: Path) -> str:
    connect = "\n".join(
        [
            "import sys",
            "%load_ext acp_notebook",
            f"%acp connect --name embedded --cwd {work} -- "
            f"{{sys.executable}} -m acp_notebook.agent --data-dir {work}/.agent-data",
        ]
    )
    cell = f"%%acp --allow 'cat *'\n$ cat {flood}"
    cells = [
        {
            "cell_type": "code",
            "execution_count": None,
            "metadata": {},
            "outputs": [],
            "source": source,
        }
        for source in (connect, cell)
    ]
    return json.dumps(
        {
            "cells": cells,
            "metadata": {
                "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}
            },
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )


# The page side, run by node with ui-tests' playwright-core. One JSON line per measurement.
DRIVER = r"""
const { chromium } = require('playwright-core');
const cfg = JSON.parse(process.argv[2]);

// Installed before any of the page's scripts: long tasks from the start, probes on demand.
function probe() {
  const b = { lt: [], t0: 0, lagMax: 0, frameMax: 0, on: false };
  window.__bench = b;
  try {
    new PerformanceObserver(list => {
      for (const e of list.getEntries()) b.lt.push([e.startTime, e.duration]);
    }).observe({ type: 'longtask', buffered: true });
  } catch (e) { b.noLongtask = String(e); }
  // long animation frames, with the scripts that ran in them: what the worst ones spent
  b.loaf = [];
  const end = e => e.startTime + e.duration;
  try {
    new PerformanceObserver(list => {
      for (const e of list.getEntries()) {
        b.loaf.push({
          start: e.startTime,
          ms: Math.round(e.duration),
          blocking: Math.round(e.blockingDuration || 0),
          render: Math.round(e.renderStart ? end(e) - e.renderStart : 0),
          layout: Math.round(e.styleAndLayoutStart ? end(e) - e.styleAndLayoutStart : 0),
          scripts: (e.scripts || []).map(s => ({
            ms: Math.round(s.duration),
            invoker: s.invoker,
            fn: s.sourceFunctionName,
            src: (s.sourceURL || '').split('/').pop().split('?')[0] + ':' + s.sourceCharPosition
          })).sort((x, y) => y.ms - x.ms).slice(0, 4)
        });
      }
    }).observe({ type: 'long-animation-frame', buffered: true });
  } catch (e) { b.noLoaf = String(e); }
  b.start = () => {
    b.t0 = performance.now(); b.on = true; b.lagMax = 0; b.frameMax = 0;
    let expected = performance.now() + 20;
    const tick = () => {
      if (!b.on) return;
      const now = performance.now();
      b.lagMax = Math.max(b.lagMax, now - expected);
      expected = now + 20;
      setTimeout(tick, 20);
    };
    setTimeout(tick, 20);
    let last = performance.now();
    const frame = now => {
      if (!b.on) return;
      b.frameMax = Math.max(b.frameMax, now - last);
      last = now;
      requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);
    return b.t0;
  };
  b.stop = () => {
    b.on = false;
    const t1 = performance.now();
    const tasks = b.lt.filter(([s, d]) => s + d >= b.t0 && s <= t1).map(([, d]) => d);
    return {
      window_s: (t1 - b.t0) / 1000,
      longtasks: tasks.length,
      longtask_total_s: tasks.reduce((a, d) => a + d, 0) / 1000,
      worst_task_ms: tasks.length ? Math.max(...tasks) : 0,
      worst_lag_ms: b.lagMax,
      worst_frame_gap_ms: b.frameMax,
      worst_frames: b.loaf.filter(f => f.start + f.ms >= b.t0 && f.start <= t1)
        .sort((x, y) => y.ms - x.ms).slice(0, 3),
      no_longtask: b.noLongtask || null
    };
  };
}

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

// A CPU profile's self time by function (the top 30), and the same inside the three longest
// runs of busy samples (for --profile).
function selfTimes(profile) {
  const byId = new Map(profile.nodes.map(n => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children || []) parent.set(c, n.id);
  const name = n => {
    const f = n.callFrame;
    const file = f.url.split('/').pop().split('.')[0];
    return `${f.functionName || '(anon)'}@${file}:${f.lineNumber}:${f.columnNumber}`;
  };
  const keyOf = id => {
    const parts = [];
    for (let n = byId.get(id); n && parts.length < 4; n = byId.get(parent.get(n.id))) {
      if (n.callFrame.functionName === '(root)') break;
      parts.push(name(n));
    }
    return parts.join(' < ');
  };
  const dts = profile.timeDeltas;
  const table = (from, to, top) => {
    const self = new Map();
    let total = 0;
    for (let i = from; i < to; i++) {
      const ms = (dts[i + 1] || 0) / 1000;
      const k = keyOf(profile.samples[i]);
      self.set(k, (self.get(k) || 0) + ms);
      total += ms;
    }
    return [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, top)
      .map(([k, ms]) => {
        const share = (100 * ms / total).toFixed(1).padStart(5);
        return `  ${ms.toFixed(0).padStart(7)} ms ${share}%  ${k}`;
      })
      .join('\n');
  };
  const out = ['whole window:', table(0, profile.samples.length, 30)];
  const runs = [];
  let start = -1, ms = 0;
  for (let i = 0; i <= profile.samples.length; i++) {
    const idle = i === profile.samples.length ||
      byId.get(profile.samples[i]).callFrame.functionName === '(idle)';
    if (!idle && start < 0) { start = i; ms = 0; }
    if (!idle) ms += (dts[i + 1] || 0) / 1000;
    if (idle && start >= 0) { runs.push([ms, start, i]); start = -1; }
  }
  runs.sort((a, b) => b[0] - a[0]);
  for (const [ms, a, b] of runs.slice(0, 3)) {
    out.push(`busy run of ${ms.toFixed(0)} ms:`, table(a, b, 12));
  }
  return out.join('\n');
}

async function waitFor(page, fn, arg, timeout) {
  const handle = await page.waitForFunction(fn, arg, { polling: 100, timeout });
  return handle.jsonValue();
}

async function appReady(page) {
  await waitFor(page, () => {
    const app = window.jupyterapp;
    return Boolean(app && app.started && app.shell);
  }, null, 120000);
  await page.evaluate(async () => { await window.jupyterapp.restored; });
}

async function acpRound(page, round) {
  await page.goto(`${cfg.base}/lab/tree/${cfg.notebooks[round]}?reset`);
  await appReady(page);
  await waitFor(page, () => {
    const w = window.jupyterapp.shell.currentWidget;
    const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
    return Boolean(k && k.status === 'idle' && w.content.widgets.length >= 2);
  }, null, 120000);
  const build = await page.evaluate(() => {
    const exts = JSON.parse(document.getElementById('jupyter-config-data').textContent)
      .federated_extensions || [];
    const ours = exts.find(e => e.name === 'acp-notebook');
    return ours ? ours.load : null;
  });
  await page.evaluate(async () => {
    const app = window.jupyterapp;
    const w = app.shell.currentWidget;
    w.content.activeCellIndex = 0;
    await app.commands.execute('notebook:run-cell');
  });
  await waitFor(page, () => {
    const w = window.jupyterapp.shell.currentWidget;
    return w.content.widgets[0].node.textContent.includes('connected');
  }, null, 120000);
  const cdp = cfg.profile ? await page.context().newCDPSession(page) : null;
  if (cdp) {
    await cdp.send('Profiler.enable');
    await cdp.send('Profiler.setSamplingInterval', { interval: 1000 });
    await cdp.send('Profiler.start');
  }
  const t0 = await page.evaluate(() => {
    const t0 = window.__bench.start();
    const app = window.jupyterapp;
    const w = app.shell.currentWidget;
    w.content.activeCellIndex = 1;
    void app.commands.execute('notebook:run-cell');
    return t0;
  });
  const SEL = '.acp-turn:not(.acp-turn-static) .acp-terminal[data-phase]';
  const tEnd = await waitFor(page, ([sel, marker, endSeenSrc]) => {
    const el = document.querySelector(sel);
    if (!el || !el.__acpTerm) return 0;
    const endSeen = new Function('return ' + endSeenSrc)();
    return endSeen(el.__acpTerm, marker);
  }, [SEL, cfg.marker, endSeen.toString()], cfg.timeout);
  await waitFor(page, () => {
    const w = window.jupyterapp.shell.currentWidget;
    const k = w.sessionContext.session.kernel;
    return w.content.widgets[1].model.executionCount !== null && k.status === 'idle';
  }, null, cfg.timeout);
  const tDone = await page.evaluate(() => performance.now());
  await page.waitForTimeout(1000);
  const stats = await page.evaluate(() => window.__bench.stop());
  if (cdp) {
    const { profile } = await cdp.send('Profiler.stop');
    console.log(selfTimes(profile));
  }
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
  await page.evaluate(() => window.__bench.start());
  await page.waitForTimeout(10000);
  const stats = await page.evaluate(() => window.__bench.stop());
  return { way: 'idle', build: null, last_byte_s: 0, cell_done_s: null, rows: null,
           skipped: null, ...stats };
}

(async () => {
  const browser = await chromium.launch({
    executablePath: cfg.chromium,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking']
  });
  try {
    for (let round = 0; round < cfg.rounds; round++) {
      const order = cfg.ways.length > 1 && round % 2 ? [...cfg.ways].reverse() : cfg.ways;
      for (const way of order) {
        const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
        const page = await context.newPage();
        await page.addInitScript(probe);
        page.on('pageerror', e => console.error('pageerror:', String(e)));
        const result = way === 'acp' ? await acpRound(page, round)
          : way === 'lab' ? await labRound(page) : await idleRound(page);
        result.round = round + 1;
        console.log('RESULT ' + JSON.stringify(result));
        await context.close();
      }
    }
  } finally {
    await browser.close();
  }
})().catch(e => { console.error(e); process.exit(1); });
"""


def start_server(tmp: Path, build: Path, port: int) -> subprocess.Popen[bytes]:
    extensions = tmp / "labextensions"
    extensions.mkdir()
    (extensions / "acp-notebook").symlink_to(build.resolve())
    for sub in ("config", "runtime", "workspaces"):
        (tmp / sub).mkdir()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "JUPYTER_CONFIG_DIR": str(tmp / "config"),
        "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
    }
    config = {
        "ServerApp": {
            "ip": "127.0.0.1",
            "port": port,
            "port_retries": 0,
            "password": "",
            "disable_check_xsrf": True,
            "allow_root": True,
            "root_dir": str(tmp),
            "open_browser": False,
            "terminado_settings": {"shell_command": ["/bin/sh"]},
        },
        "IdentityProvider": {"token": ""},
        "LabServerApp": {"extra_labextensions_path": [str(extensions)]},
        "LabApp": {
            "workspaces_dir": str(tmp / "workspaces"),
            "expose_app_in_browser": True,
            "news_url": None,
        },
        "KernelManager": {"transport": "ipc"},
        "YDocExtension": {"disable_rtc": True},
    }
    (tmp / "config" / "jupyter_server_config.json").write_text(json.dumps(config))
    argv = [sys.executable, "-m", "jupyter", "lab"]
    log = (tmp / "server.log").open("wb")
    proc = subprocess.Popen(argv, cwd=tmp, env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log = (tmp / "server.log").read_text()
            raise SystemExit(f"the server exited {proc.returncode}:\n{log}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status", timeout=2):
                return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("the server did not answer within 120 s")


def fmt(result: dict[str, Any], expected: list[str]) -> str:
    if result["way"] == "idle":
        return (
            f"idle round {result['round']}: an idle page for {result['window_s']:.0f} s: long "
            f"tasks {result['longtasks']} (worst {result['worst_task_ms']:.0f} ms); worst lag "
            f"{result['worst_lag_ms']:.0f} ms; worst frame gap "
            f"{result['worst_frame_gap_ms']:.0f} ms"
        )
    rows_ok = result["rows"] == expected
    done = f", cell done {result['cell_done_s']:.1f} s" if result.get("cell_done_s") else ""
    if result.get("skipped") is not None:
        done += f", {result['skipped'] / 1e6:.1f} MB skipped by the view"
    return (
        f"{result['way']:>3} round {result['round']}: last byte {result['last_byte_s']:.1f} s"
        f"{done}; long tasks {result['longtasks']} (worst {result['worst_task_ms']:.0f} ms, "
        f"{result['longtask_total_s']:.1f} s in all); worst lag {result['worst_lag_ms']:.0f} ms; "
        f"worst frame gap {result['worst_frame_gap_ms']:.0f} ms; last rows right={rows_ok}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=100.0, help="MB of output (10^6 bytes)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--build",
        type=Path,
        default=ROOT / "acp_notebook" / "labextension",
        help="the acp-notebook labextension build to load",
    )
    parser.add_argument("--only", choices=("acp", "lab", "idle"), default=None)
    parser.add_argument(
        "--frames", action="store_true", help="print the 3 longest animation frames' scripts"
    )
    parser.add_argument(
        "--profile", action="store_true", help="print the acp page's CPU profile (self time)"
    )
    args = parser.parse_args()
    playwright = UI_NODE_MODULES / "playwright-core" / "package.json"
    missing = [
        what
        for what, ok in (
            (f"chromium at {CHROMIUM}", os.access(CHROMIUM, os.X_OK)),
            ("node on PATH", shutil.which("node") is not None),
            (f"{playwright} (cd ui-tests && jlpm install)", playwright.is_file()),
            (f"a build in {args.build}", (args.build / "package.json").is_file()),
        )
        if not ok
    ]
    if missing:
        print(f"cannot run: missing {'; '.join(missing)}", file=sys.stderr)
        return 2
    build = json.loads((args.build / "package.json").read_text())["jupyterlab"]["_build"]["load"]
    with tempfile.TemporaryDirectory(prefix="acp-bbf-", ignore_cleanup_errors=True) as name:
        tmp = Path(name)
        flood = tmp / "flood.txt"
        expected = make_flood(flood, int(args.mb * 1e6))
        size = flood.stat().st_size
        marker = "END OF FLOOD "
        work = tmp / "work"
        work.mkdir()
        names = []
        for i in range(args.rounds):
            names.append(f"flood-{i + 1}.ipynb")
            (tmp / names[-1]).write_text(notebook(work, flood))
        port = free_port()
        print(
            f"cat of {size:,} bytes ({size / 1e6:.0f} MB, {size // 75:,} lines) into a terminal, "
            f"{args.rounds} round(s); build {args.build} ({build}); "
            f"load {Path('/proc/loadavg').read_text().split()[:3]}",
            flush=True,
        )
        server = start_server(tmp, args.build, port)
        try:
            cfg = {
                "base": f"http://127.0.0.1:{port}",
                "chromium": str(CHROMIUM),
                "rounds": args.rounds,
                "ways": [args.only] if args.only else ["acp", "lab", "idle"],
                "notebooks": names,
                "flood": str(flood),
                "marker": marker,
                "lastRows": LAST_ROWS,
                "timeout": 900000,
                "profile": args.profile,
            }
            script = tmp / "driver.js"
            script.write_text(DRIVER)
            env = {**os.environ, "NODE_PATH": str(UI_NODE_MODULES)}
            proc = subprocess.Popen(
                ["node", str(script), json.dumps(cfg)],
                env=env,
                stdout=subprocess.PIPE,
                text=True,
            )
            assert proc.stdout is not None
            results: list[dict[str, Any]] = []
            for line in proc.stdout:
                if not line.startswith("RESULT "):
                    print(line, end="", flush=True)
                    continue
                result = json.loads(line.removeprefix("RESULT "))
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
                if result["rows"] is not None and result["rows"] != expected:
                    print(f"    last rows: {result['rows']!r}\n    expected:  {expected!r}")
            code = proc.wait()
        finally:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        print(f"load after: {Path('/proc/loadavg').read_text().split()[:3]}")
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
            for key in ("last_byte_s", "longtasks", "worst_task_ms", "worst_lag_ms")
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
            f"(max {med['max_lag_ms']:.0f}); last rows right {right}/{len(rs)}"
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
