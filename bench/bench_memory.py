"""Memory under a terminal flood: peak RSS and RSS after the turn, next to the caps.

    python bench/bench_memory.py            # 1 x 1024 MiB and 10 x 100 MiB (a few minutes)
    python bench/bench_memory.py --mib 256  # the same with 1 x 256 MiB and 10 x 25 MiB

A small flooding agent (``tests/adversarial/agents/flood.py``, 256 KiB chunks built once) streams
the flood; each scenario runs in a fresh process, so its peak (``VmHWM`` in /proc/PID/status)
is its own:

* ``api``: ``acp_notebook.connect`` -> ``new_session`` -> ``prompt`` -> ``turn.wait()`` in a child
  process of this script;
* ``kernel``: a real ipykernel (jupyter_client): ``%acp connect`` to the agent, then a ``%%acp``
  cell; iopub is drained as a front end would (buffers are dropped on arrival).

Each runs twice, side by side: ``fixed`` (the code as it is) and ``pre-fix`` (the same code with
the old retention put back: every update kept, as ``Turn`` did before issue 10; kept where every
path still passes, ``Session._apply``, the v2 hot chunks' ``Session._apply_chunks`` and the v1
hot lines' ``Session._applied``, so the column is what keeping them costs today).

``messages``: a message flood through the public API, 200,000 chunks of 100 characters of text
(``bench/_emitter.py``), from an ACP v2 agent and from an ACP v1 one (v1 agents send messages
without ids: the client joins them): peak RSS of each, side by side.
RSS is read from /proc: ``idle`` just before the prompt (the fixed overhead: interpreter,
imports, connection), ``peak`` (VmHWM), ``after`` once the turn has ended (and, in the kernel,
after a ``gc.collect()`` cell), and after ``malloc_trim(0)`` (glibc gives freed heap back), which
tells memory still held from allocator slack. The cap is ``idle + terminals x 16 MiB x copies``:
the per-terminal cap, once in the state (``TerminalState``) and, in a kernel, once more in the
terminal widget's backlog for late views. ``conn.log`` is what the connection's diagnostic log
(its last 100 raw messages) holds of terminal base64: bounded by count, not by the caps.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

FLOOD = ROOT / "tests" / "adversarial" / "agents" / "flood.py"
EMITTER = ROOT / "bench" / "_emitter.py"
MESSAGES = 200_000  # chunks of a message flood
MESSAGE_CHARS = 100
MIB = 2**20
CHUNK = 256 * 1024  # the flooding agent's default chunk
CAP = 16 * MIB  # DEFAULT_MAX_BYTES (state) and DEFAULT_BACKLOG_LIMIT (widget backlog)

# Put the pre-fix retention back: the turn keeps every update it receives.
PRE_FIX = """
from acp_notebook._client._session import Session as _Session
_kept = []
_names = ("_apply", "_apply_chunk", "_apply_chunks", "_applied")
for _name in [n for n in _names if hasattr(_Session, n)]:
    def _keeping(self, *args, _real=getattr(_Session, _name)):
        _kept.append(args)
        return _real(self, *args)
    setattr(_Session, _name, _keeping)
"""


# Give freed heap memory back to the OS (glibc), to tell what is held from allocator slack.
TRIM = "import ctypes; ctypes.CDLL('libc.so.6').malloc_trim(0)"


def malloc_trim() -> int:
    exec(TRIM, {})
    return rss()[0]


def log_chars(log: Any) -> int:
    """Characters of terminal base64 that the connection's diagnostic log holds."""
    total = 0
    for _direction, message in log:
        params = message.get("params") if isinstance(message, dict) else None
        update = params.get("update") if isinstance(params, dict) else None
        data = update.get("data") if isinstance(update, dict) else None
        total += len(data) if isinstance(data, str) else 0
    return total


def rss(pid: int | str = "self") -> tuple[int, int]:
    """(VmRSS, VmHWM) of a process, in bytes."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0]) * 1024
    return found["VmRSS"], found["VmHWM"]


class Sampler:
    """RSS of a process sampled every 50 ms in a thread (the peak is VmHWM; this is a check)."""

    def __init__(self, pid: int | str) -> None:
        self.pid = pid
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.peak = max(self.peak, rss(self.pid)[0])
            except (FileNotFoundError, ProcessLookupError):
                return
            self._stop.wait(0.05)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


# -- one scenario through the public API (runs in a child process) --------------------------


def api_child(terminals: int, mib_each: float, pre_fix: bool, stream: str = "") -> dict[str, Any]:
    import gc

    import anyio

    if pre_fix:
        exec(PRE_FIX, {})
    import acp_notebook as acp

    async def main() -> dict[str, Any]:
        argv = [sys.executable, str(FLOOD), str(terminals), str(mib_each)]
        if stream:
            argv = [sys.executable, str(EMITTER), "agent1" if stream == "v1" else "agent"]
            argv.append(str(message_payload(stream)))
        async with acp.connect(argv) as agent:
            session = await agent.new_session()
            gc.collect()
            idle = rss()[0]
            sampler = Sampler("self")
            started = time.perf_counter()
            turn = await session.prompt("flood")
            await turn.wait()
            seconds = time.perf_counter() - started
            sampled = sampler.stop()
            received = sum(t.total_bytes for t in turn.terminals.values())
            if stream:
                received = sum(len(m.text) for m in turn.state.messages)
            gc.collect()
            after, peak = rss()
            trimmed = malloc_trim()
            return {
                "idle": idle,
                "peak": peak,
                "sampled": sampled,
                "after": after,
                "after_gc": after,
                "after_trim": trimmed,
                "log": log_chars(agent.connection.log),
                "bytes": received,
                "seconds": seconds,
            }

    return anyio.run(main)


def message_payload(stream: str) -> Path:
    """A message flood's lines (one message of ``MESSAGES`` text chunks), for ``stream`` v1 or
    v2, in a file the emitter writes (made once per run)."""
    path = Path(tempfile.gettempdir()) / f"acp-bench-messages-{stream}-{os.getpid()}.ndjson"
    if os.environ.get("ACP_BENCH_PAYLOAD_DIR"):
        path = Path(os.environ["ACP_BENCH_PAYLOAD_DIR"]) / f"messages-{stream}.ndjson"
    if path.exists():
        return path
    texts = [("abcdefghij" * 10)[:MESSAGE_CHARS], ("ABCDEFGHIJ" * 10)[:MESSAGE_CHARS]]
    with path.open("wb") as f:
        for n in range(MESSAGES):
            update: dict[str, Any] = {"sessionUpdate": "agent_message_chunk"}
            if stream == "v2":
                update["messageId"] = "m1"
            update["content"] = {"type": "text", "text": texts[n % 2]}
            message = {"jsonrpc": "2.0", "method": "session/update"}
            message["params"] = {"sessionId": "s", "update": update}
            f.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
    return path


def run_api(terminals: int, mib_each: float, pre_fix: bool, stream: str = "") -> dict[str, Any]:
    argv = [sys.executable, __file__, "--child", str(terminals), str(mib_each)]
    argv += ["--pre-fix"] if pre_fix else []
    argv += ["--stream", stream] if stream else []
    out = subprocess.run(argv, check=True, capture_output=True, text=True, cwd=ROOT).stdout
    result: dict[str, Any] = json.loads(out.splitlines()[-1])
    return result


# -- one scenario in a real kernel ---------------------------------------------------------


def run_kernel(terminals: int, mib_each: float, pre_fix: bool) -> dict[str, Any]:
    from kernel_driver import kernel

    with tempfile.TemporaryDirectory() as tmp, kernel(tmp) as kern:
        take = kern._take

        def take_light(msg: dict[str, Any]) -> None:
            msg["buffers"] = []  # as a front end that rendered them: keep nothing
            if msg["msg_type"] != "comm_msg":
                take(msg)

        kern._take = take_light  # type: ignore[method-assign]
        pid = int(kern.run("print(__import__('os').getpid())").text().strip())
        if pre_fix:
            kern.run(PRE_FIX)
        kern.run("%load_ext acp_notebook")
        agent = f"{sys.executable} {FLOOD} {terminals} {mib_each:g}"
        kern.run(f"%acp connect --name flood -- {agent}")
        kern.run("import gc; gc.collect()")
        time.sleep(0.5)
        idle = rss(pid)[0]
        sampler = Sampler(pid)
        started = time.perf_counter()
        kern.run("%%acp --session flood -o t\nflood\n")
        seconds = time.perf_counter() - started
        sampled = sampler.stop()
        time.sleep(1.0)  # the cell has ended: let the I/O thread and timers settle
        after, peak = rss(pid)
        kern.run("gc.collect()")
        after_gc = rss(pid)[0]
        kern.run(f"exec({TRIM!r})")
        after_trim = rss(pid)[0]
        code = "print(sum(x.total_bytes for x in t.terminals.values()))"
        received = int(kern.run(code).text().strip())
        code = "print(sum(len(m['params']['update'].get('data', '')) for _, m in"
        code += " t.session.agent.connection.log"
        code += " if isinstance(m, dict) and isinstance(m.get('params'), dict)))"
        logged = int(kern.run(code).text().strip() or 0)
        kern.run("%acp close --name flood")
    return {
        "idle": idle,
        "peak": peak,
        "sampled": sampled,
        "after": after,
        "after_gc": after_gc,
        "after_trim": after_trim,
        "log": logged,
        "bytes": received,
        "seconds": seconds,
    }


# -- report ---------------------------------------------------------------------------------


def mb(n: float) -> str:
    return f"{n / MIB:7.0f} MiB"


def report(
    where: str, terminals: int, mib_each: float, fixed: dict[str, Any], old: dict[str, Any]
) -> None:
    copies = 2 if where == "kernel" else 1
    flood = terminals * mib_each
    print(f"\n{where}: {terminals} terminal(s) x {mib_each:g} MiB = {flood:g} MiB of output")
    print(f"  {'':22}{'fixed':>12}{'pre-fix':>12}")
    for key, label in (
        ("idle", "idle (fixed overhead)"),
        ("peak", "peak RSS (VmHWM)"),
        ("after", "RSS after the turn"),
        ("after_gc", "... after gc.collect()"),
        ("after_trim", "... after malloc_trim"),
        ("log", "held by conn.log"),
        ("seconds", "turn wall time"),
    ):
        if key == "seconds":
            print(f"  {label:22}{fixed[key]:10.1f} s{old[key]:10.1f} s")
        else:
            print(f"  {label:22}{mb(fixed[key]):>12}{mb(old[key]):>12}")
    cap = fixed["idle"] + terminals * CAP * copies
    grown = fixed["peak"] - fixed["idle"]
    old_grown = old["peak"] - old["idle"]
    print(
        f"  cap: idle + {terminals} x 16 MiB x {copies} = {mb(cap).strip()}; "
        f"fixed peak {mb(fixed['peak']).strip()} (grew {mb(grown).strip()}, "
        f"{grown / (flood * MIB):.3f} per flooded byte) vs pre-fix peak "
        f"{mb(old['peak']).strip()} (grew {mb(old_grown).strip()}, "
        f"{old_grown / (flood * MIB):.3f} per flooded byte)"
    )
    print(
        f"  ratio peak fixed/pre-fix: {fixed['peak'] / old['peak']:.2f}; "
        f"ratio fixed peak/cap: {fixed['peak'] / cap:.2f}"
    )
    # What is held, as opposed to allocator slack: RSS once freed memory went back to the OS.
    budget = cap + fixed["log"]
    print(
        f"  held after the turn (after malloc_trim): {mb(fixed['after_trim']).strip()} vs cap + "
        f"conn.log {mb(budget).strip()}: within: {fixed['after_trim'] <= budget}; "
        f"pre-fix {mb(old['after_trim']).strip()}"
    )
    chunks = -(-int(mib_each * MIB) // CHUNK)  # the agent sends whole chunks
    for result in (fixed, old):
        if result["bytes"] != terminals * chunks * CHUNK:
            raise SystemExit(f"the flood did not arrive whole: {result['bytes']} bytes")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mib", type=float, default=1024.0, help="the single flood (MiB)")
    parser.add_argument("--only", choices=("api", "kernel"), help="run one side only")
    parser.add_argument("--child", nargs=2, metavar=("TERMINALS", "MIB"), help=argparse.SUPPRESS)
    parser.add_argument("--pre-fix", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--stream", choices=("v1", "v2"), help=argparse.SUPPRESS)
    parser.add_argument("--messages-only", action="store_true", help="only the message floods")
    args = parser.parse_args()
    if args.child:
        result = api_child(int(args.child[0]), float(args.child[1]), args.pre_fix, args.stream)
        print(json.dumps(result))
        return
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["ACP_BENCH_PAYLOAD_DIR"] = tmp
        print(f"\nmessages: {MESSAGES} chunks x {MESSAGE_CHARS} characters, one message")
        print(f"  {'':22}{'v2':>12}{'v1':>12}{'v2 pre-fix':>12}{'v1 pre-fix':>12}")
        found = {
            (stream, old): run_api(0, 0, old, stream)
            for old in (False, True)
            for stream in ("v2", "v1")
        }
        for result in found.values():
            if result["bytes"] != MESSAGES * MESSAGE_CHARS:
                raise SystemExit(f"the message flood did not arrive whole: {result['bytes']}")
        for key, label in (
            ("idle", "idle"),
            ("peak", "peak RSS (VmHWM)"),
            ("after_trim", "after malloc_trim"),
        ):
            row = "".join(
                f"{mb(found[s, o][key]):>12}" for o in (False, True) for s in ("v2", "v1")
            )
            print(f"  {label:22}{row}")
        v1, v2 = found["v1", False], found["v2", False]
        print(
            f"  v1 peak / v2 peak: {v1['peak'] / v2['peak']:.2f}; grew v1 "
            f"{mb(v1['peak'] - v1['idle']).strip()}, v2 {mb(v2['peak'] - v2['idle']).strip()}"
        )
    if args.messages_only:
        return
    scenarios = [(1, args.mib), (10, args.mib / 10)]
    print(f"flooding agent: {FLOOD.relative_to(ROOT)}; pid {os.getpid()}")
    for where, run in (("api", run_api), ("kernel", run_kernel)):
        if args.only and where != args.only:
            continue
        for terminals, mib_each in scenarios:
            fixed = run(terminals, mib_each, False)
            old = run(terminals, mib_each, True)
            report(where, terminals, mib_each, fixed, old)


if __name__ == "__main__":
    main()
