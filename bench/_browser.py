"""What the browser benchmarks share: JupyterLab in chromium, measured from inside the page.

``start_server`` starts a JupyterLab server on 127.0.0.1 (a free port, a temp root, no token)
whose ``acp-notebook`` extension is a given build, its kernels importing this tree's package
(``PYTHONPATH``). ``run_driver`` runs a page-side script with node and ui-tests'
``playwright-core`` (the browser tests' own), after ``DRIVER_COMMON``: the probes installed
before the page's scripts (long tasks, a 20 ms ``setTimeout`` chain's worst lateness, the
longest gap between animation frames, long animation frames with their scripts; and, read
from ``/proc``, the CPU time of the page's renderer main thread, which the machine's load
does not inflate as it does every wall-clock time), helpers to
open a notebook and run its cells, and the two ways of asking the page where its time went:
a CPU profile (``--profile``: self time by function, and in the longest busy runs) and a Chrome
trace (``--trace``: ``trace_summary`` gives the longest tasks' breakdown; scripts by function,
style, layout, paint and GC, which a CPU profile misplaces).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
UI_NODE_MODULES = ROOT / "ui-tests" / "node_modules"
CHROMIUM = Path(os.environ.get("ACP_CHROMIUM", "/usr/bin/chromium"))
DEFAULT_BUILD = ROOT / "acp_notebook" / "labextension"
TICKS = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def missing(build: Path) -> list[str]:
    """What a browser bench needs and this machine lacks (empty: it can run)."""
    playwright = UI_NODE_MODULES / "playwright-core" / "package.json"
    return [
        what
        for what, ok in (
            (f"chromium at {CHROMIUM}", os.access(CHROMIUM, os.X_OK)),
            ("node on PATH", shutil.which("node") is not None),
            (f"{playwright} (cd ui-tests && jlpm install)", playwright.is_file()),
            (f"a build in {build}", (build / "package.json").is_file()),
        )
        if not ok
    ]


def build_entry(build: Path) -> str:
    """The build's remoteEntry file, as the page's config names the one it loaded."""
    package = json.loads((build / "package.json").read_text())
    entry: str = package["jupyterlab"]["_build"]["load"]
    return entry


def notebook(cells: list[str]) -> str:
    """An .ipynb (a Python 3 kernel) of code cells with these sources."""
    return json.dumps(
        {
            "cells": [
                {
                    "cell_type": "code",
                    "execution_count": None,
                    "metadata": {},
                    "outputs": [],
                    "source": source,
                }
                for source in cells
            ],
            "metadata": {
                "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}
            },
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )


def start_server(tmp: Path, build: Path, port: int) -> subprocess.Popen[bytes]:
    """A JupyterLab server rooted at ``tmp`` with ``build`` as its acp-notebook extension."""
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
            text = (tmp / "server.log").read_text()
            raise SystemExit(f"the server exited {proc.returncode}:\n{text}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status", timeout=2):
                return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("the server did not answer within 120 s")


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class DriverFailed(Exception):
    """The page driver (node) exited with an error; its output says why."""


def run_driver(tmp: Path, script: str, cfg: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Run ``DRIVER_COMMON + script`` with node (``cfg`` is its ``cfg``; ``chromium`` is
    added); print what it prints, yield each ``RESULT {json}`` line's object. Raises
    DriverFailed, after the results, when node fails."""
    path = tmp / "driver.js"
    path.write_text(DRIVER_COMMON + script)
    env = {**os.environ, "NODE_PATH": str(UI_NODE_MODULES)}
    proc = subprocess.Popen(
        ["node", str(path), json.dumps({"chromium": str(CHROMIUM), "clockTicks": TICKS, **cfg})],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("RESULT "):
            yield json.loads(line.removeprefix("RESULT "))
        else:
            print(line, end="", flush=True)
    code = proc.wait()
    if code:
        raise DriverFailed(f"the page driver exited with {code}")


def run_rounds(
    tmp: Path,
    build: Path,
    script: str,
    cfg: dict[str, Any],
    on_result: Callable[[dict[str, Any]], None],
) -> int:
    """Start a server on a free port with ``build``, run the driver ``script`` against it
    (``cfg`` gets ``base``), hand each result to ``on_result``, stop the server; 1 if the
    driver failed (said on stderr), else 0. Prints the load after."""
    port = free_port()
    server = start_server(tmp, build, port)
    code = 0
    try:
        for result in run_driver(tmp, script, {"base": f"http://127.0.0.1:{port}", **cfg}):
            on_result(result)
    except DriverFailed as failed:
        print(failed, file=sys.stderr)
        code = 1
    finally:
        stop_server(server)
    print(f"load after: {load()}")
    return code


def load() -> list[str]:
    """The machine's load averages (1, 5, 15 minutes), as /proc says them."""
    return Path("/proc/loadavg").read_text().split()[:3]


# The page side's shared part, run by node with ui-tests' playwright-core.
DRIVER_COMMON = r"""
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

// What --trace records: tasks, scripts, style, layout, paint, GC (no samples).
const TRACE_CATEGORIES = [
  'toplevel', 'devtools.timeline', 'v8', 'blink', 'disabled-by-default-devtools.timeline'
];

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
  // the other end of the stack: the task's entry (the frames below the root), outermost first
  const entryOf = id => {
    const chain = [];
    for (let n = byId.get(id); n; n = byId.get(parent.get(n.id))) {
      if (n.callFrame.functionName === '(root)') break;
      chain.push(name(n));
    }
    return chain.reverse().slice(0, 5).join(' > ');
  };
  const dts = profile.timeDeltas;
  const table = (from, to, top, key = keyOf) => {
    const self = new Map();
    let total = 0;
    for (let i = from; i < to; i++) {
      const ms = (dts[i + 1] || 0) / 1000;
      const k = key(profile.samples[i]);
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
  for (const [ms, a, b] of runs.slice(0, cfg.busyRuns || 6)) {
    out.push(`busy run of ${ms.toFixed(0)} ms:`, table(a, b, 12),
             '  by entry (outermost frames first):', table(a, b, 8, entryOf));
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


// Main-thread CPU seconds of each chromium renderer this driver started (by pid): a page's
// work, whatever else the machine runs (wall-clock task times grow with the machine's load).
function rendererCpu() {
  const fs = require('fs');
  const parent = new Map();
  for (const name of fs.readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(name)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
      parent.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch (e) { /* gone */ }
  }
  const ours = pid => {
    for (let p = pid; p > 1; p = parent.get(p) || 0) if (p === process.pid) return true;
    return false;
  };
  const cpu = {};
  for (const pid of parent.keys()) {
    try {
      const cmdline = ours(pid) ? fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8') : '';
      if (!cmdline.includes('--type=renderer')) continue;
      const stat = fs.readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      cpu[pid] = (Number(f[11]) + Number(f[12])) / cfg.clockTicks;
    } catch (e) { /* gone */ }
  }
  return cpu;
}

// The most main-thread CPU any renderer spent since `before` (rendererCpu()): the page's.
function cpuSince(before) {
  const now = rendererCpu();
  return Math.max(0, ...Object.keys(now).map(pid => now[pid] - (before[pid] || 0)));
}

async function launch() {
  return chromium.launch({
    executablePath: cfg.chromium,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking']
  });
}

// A fresh context and page with the probes installed.
async function newPage(browser) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
  const page = await context.newPage();
  await page.addInitScript(probe);
  page.on('pageerror', e => console.error('pageerror:', String(e)));
  return page;
}

// Open a notebook; wait for its kernel to be idle with at least `cells` cells shown.
async function openNotebook(page, path, cells) {
  await page.goto(`${cfg.base}/lab/tree/${path}?reset`);
  await appReady(page);
  await waitFor(page, n => {
    const w = window.jupyterapp.shell.currentWidget;
    const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
    return Boolean(k && k.status === 'idle' && w.content.widgets.length >= n);
  }, cells, 120000);
}

// The acp-notebook remoteEntry the page loaded (the build asked for, or not).
async function buildLoaded(page) {
  return page.evaluate(() => {
    const exts = JSON.parse(document.getElementById('jupyter-config-data').textContent)
      .federated_extensions || [];
    const ours = exts.find(e => e.name === 'acp-notebook');
    return ours ? ours.load : null;
  });
}

// Run cell `index` of the current notebook (not waiting for it to finish).
async function startCell(page, index) {
  await page.evaluate(i => {
    const app = window.jupyterapp;
    app.shell.currentWidget.content.activeCellIndex = i;
    void app.commands.execute('notebook:run-cell');
  }, index);
}

// Wait until cell `index` has run and the kernel is idle.
async function cellDone(page, index, timeout) {
  await waitFor(page, i => {
    const w = window.jupyterapp.shell.currentWidget;
    const k = w.sessionContext.session.kernel;
    return w.content.widgets[i].model.executionCount !== null && k.status === 'idle';
  }, index, timeout);
}

// The printed output of `code` run in the current notebook's kernel (not in a cell).
async function kernelRun(page, code) {
  return page.evaluate(async code => {
    const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
    const future = kernel.requestExecute({ code, silent: false, store_history: false });
    let out = '';
    future.onIOPub = msg => {
      if (msg.header.msg_type === 'stream') out += msg.content.text;
    };
    await future.done;
    return out;
  }, code);
}

// --profile and --trace around a measured stretch: start() before, stop(label) after.
async function recorder(page, label) {
  const cdp = cfg.profile ? await page.context().newCDPSession(page) : null;
  if (cdp) {
    await cdp.send('Profiler.enable');
    await cdp.send('Profiler.setSamplingInterval', { interval: 1000 });
    await cdp.send('Profiler.start');
  }
  if (cfg.trace) {
    await page.context().browser().startTracing(page, { categories: TRACE_CATEGORIES });
  }
  return async () => {
    if (cdp) {
      const { profile } = await cdp.send('Profiler.stop');
      console.log(selfTimes(profile));
      await cdp.detach();
    }
    if (cfg.trace) {
      const trace = await page.context().browser().stopTracing();
      require('fs').writeFileSync(`${cfg.trace}-${label}.json`, trace);
    }
  };
}
"""

TASKS = {"RunTask", "ThreadControllerImpl::RunTask"}


def _label(event: dict[str, Any]) -> str:
    """What a trace event did, in a few words (a script's function and place, a GC's kind)."""
    name: str = event["name"]
    data = (event.get("args") or {}).get("data") or {}
    if name == "FunctionCall":
        url = str(data.get("url", "")).rsplit("/", 1)[-1].split("?")[0]
        where = f"{url}:{data.get('lineNumber', '?')}:{data.get('columnNumber', '?')}"
        return f"FunctionCall {data.get('functionName') or '(anon)'} {where}"
    if name in ("EventDispatch", "TimerFire", "FireAnimationFrame"):
        return f"{name} {data.get('type', '')}".strip()
    return name


def _self_times(
    task: dict[str, Any], inside: list[dict[str, Any]]
) -> dict[str, tuple[float, float]]:
    """Microseconds of ``task`` spent in each kind of event (``_label``) nested in it, not
    counting the events nested in those, as (wall, CPU: 0 where the trace has no thread time);
    ``(task, untraced)`` for the rest."""
    self_time: dict[str, tuple[float, float]] = {}
    stack: list[list[Any]] = []  # [event, its children's wall time, their CPU time]

    def add(label: str, wall: float, cpu: float) -> None:
        old = self_time.get(label, (0.0, 0.0))
        self_time[label] = (old[0] + wall, old[1] + cpu)

    def close(upto: float) -> None:
        while stack and stack[-1][0]["ts"] + stack[-1][0]["dur"] <= upto:
            event, wall, cpu = stack.pop()
            add(_label(event), event["dur"] - wall, event.get("tdur", 0) - cpu)
            if stack:
                stack[-1][1] += event["dur"]
                stack[-1][2] += event.get("tdur", 0)

    covered = [0.0, 0.0]
    for e in inside:
        close(e["ts"])
        if not stack:
            covered[0] += e["dur"]
            covered[1] += e.get("tdur", 0)
        stack.append([e, 0.0, 0.0])
    close(float("inf"))
    add("(task, untraced)", task["dur"] - covered[0], task.get("tdur", 0) - covered[1])
    return self_time


def trace_summary(path: Path, top: int = 5) -> str:
    """The ``top`` longest main-thread tasks of a Chrome trace, each with where its time went
    (self time by event: scripts by function, style, layout, paint, GC)."""
    events = json.loads(path.read_bytes())
    events = events["traceEvents"] if isinstance(events, dict) else events
    mains = {
        (e["pid"], e["tid"])
        for e in events
        if e.get("ph") == "M" and (e.get("args") or {}).get("name") == "CrRendererMain"
    }
    by_thread: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for e in events:
        if e.get("ph") == "X" and (e.get("pid"), e.get("tid")) in mains and "dur" in e:
            by_thread.setdefault((e["pid"], e["tid"]), []).append(e)
    if not by_thread:
        return "trace: no renderer main thread"

    def task_time(es: list[dict[str, Any]]) -> float:
        return float(sum(e["dur"] for e in es if e["name"] in TASKS))

    # the page's renderer: the main thread that ran the most task time
    thread = max(by_thread.values(), key=task_time)
    thread.sort(key=lambda e: (e["ts"], -e["dur"]))
    outer: list[dict[str, Any]] = []
    for task in (e for e in thread if e["name"] in TASKS):
        # top-level only: a task inside a task (a nested loop) is part of it
        if outer and task["ts"] < outer[-1]["ts"] + outer[-1]["dur"]:
            continue
        outer.append(task)
    busy = sum(t["dur"] for t in outer) / 1e6
    cpu = sum(t.get("tdur", 0) for t in outer) / 1e6
    lines = [
        f"trace: {len(outer)} tasks, {busy:.1f} s busy ({cpu:.1f} s of CPU); the {top} longest:"
    ]
    # where the whole window's task time went (each task's events, self time)
    total: dict[str, tuple[float, float]] = {}
    inside_of: dict[int, list[dict[str, Any]]] = {id(t): [] for t in outer}
    k = 0
    for e in thread:
        while k < len(outer) and e["ts"] >= outer[k]["ts"] + outer[k]["dur"]:
            k += 1
        if k < len(outer) and e["ts"] >= outer[k]["ts"] and e is not outer[k]:
            inside_of[id(outer[k])].append(e)
    for t in outer:
        for label, (wall, cpu) in _self_times(t, inside_of[id(t)]).items():
            old = total.get(label, (0.0, 0.0))
            total[label] = (old[0] + wall, old[1] + cpu)
    by_cpu = sorted((t.get("tdur", 0) / 1000 for t in outer), reverse=True)[:8]
    lines.append("  the longest tasks by CPU time, ms: " + ", ".join(f"{ms:.0f}" for ms in by_cpu))
    lines.append("  all tasks, self time by event (wall, CPU):")
    for label, (wall, cpu) in sorted(total.items(), key=lambda kv: -kv[1][1])[:14]:
        lines.append(f"    {wall / 1000:8.1f} ms {cpu / 1000:8.1f} ms  {label}")
    for task in sorted(outer, key=lambda t: -t["dur"])[:top]:
        start = task["ts"]
        inside = inside_of[id(task)]
        rows = sorted(_self_times(task, inside).items(), key=lambda kv: -kv[1][0])[:8]
        at = (start - outer[0]["ts"]) / 1e6
        cpu = f" ({task['tdur'] / 1000:.0f} ms of CPU)" if "tdur" in task else ""
        lines.append(f"  task of {task['dur'] / 1000:.0f} ms{cpu}, {at:.2f} s into the trace:")
        lines += [
            f"    {wall / 1000:7.1f} ms {cpu / 1000:7.1f} ms  {label}"
            for label, (wall, cpu) in rows
            if wall >= 500
        ]
        for e in inside:  # what a long layout laid out, and who asked for it
            if e["name"] == "Layout" and e["dur"] >= 20000:
                args = e.get("args") or {}
                begin = args.get("beginData") or {}
                stack = begin.get("stackTrace") or []
                who = " < ".join(
                    f"{f.get('functionName') or '(anon)'}:{f.get('lineNumber')}" for f in stack[:4]
                )
                lines.append(
                    f"    layout of {e['dur'] / 1000:.0f} ms: {begin.get('dirtyObjects')} of "
                    f"{begin.get('totalObjects')} objects dirty {who}"
                )
    return "\n".join(lines)
