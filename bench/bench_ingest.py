"""How fast does the client ingest ``session/update`` streams, on the paths users take?

    python bench/bench_ingest.py [--rounds 5] [--small 200000] [--large 2000]

The emitter (``bench/_emitter.py``) is a separate process writing to a real pipe. Each case is
measured for every reader, interleaved round by round, and the median of the rounds is kept:

* ``v2``: ``connect`` (the emitter as an ACP v2 agent), ``new_session``, then from
  ``session.prompt`` to ``turn.wait()`` returning: the reader, session routing, the reducer
  applying every ``terminal_output_chunk`` (base64 decoded into the terminal's buffer) and the
  turn's bookkeeping. Nobody listens. The terminal's byte count is checked against what was sent.
* ``v2 + listener``: the same with one listener subscribed as a notebook cell's ``CellRun``
  subscribes (``session.subscribe(listener, terminal_chunks=...)``: terminal chunks as a cheap
  ``TerminalChunk`` view). The listener counts what it gets; the count is checked.
* ``v2 + model lsn``: one plain ``session.subscribe(listener)``: every update, terminal chunks
  too, as a pydantic model (what every listener got before ``terminal_chunks``).
* ``v1 terminal``: the emitter speaks ACP v1, whose agents send command output in a tool call's
  ``_meta.terminal_output`` (claude-agent-acp); one ``tool_call`` opens the terminal, then
  one ``tool_call_update`` per chunk carries its text (as many characters as v2's base64).
* ``v1 term + lsn``: the same v1 lines with a listener subscribed as a cell subscribes (the
  path of a ``%%acp`` cell on a v1 agent, 12 of the 14 agents tried); the count is checked.
* ``v1 messages``: v1 ``agent_message_chunk`` lines of text (one message); the turn's text
  length is checked.
* ``bare json``: the baseline. A loop reading the v2 lines from the emitter's pipe (256 KiB
  reads, lines split), ``json.loads`` + ``base64.b64decode`` of every line.
* ``bare orjson``: the same loop with ``orjson.loads`` (when orjson is installed).

Each rate is also given as a ratio to bare json's median (lines per second; the v1 lines carry
as many data characters as the v2 ones). ``cpu`` is the median CPU time of the reading process
alone (the emitter is another process), and its ratio to bare json's (bare json's CPU seconds
over the row's): the same comparison, less at the mercy of a loaded machine's scheduler.
"""

from __future__ import annotations

import argparse
import base64
import gc
import inspect
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

import acp_notebook as acp

HERE = Path(__file__).resolve().parent
EMITTER = str(HERE / "_emitter.py")
READ = 256 * 1024

try:
    import orjson
except ImportError:  # optional baseline
    orjson = None


def make_payload(path: Path, chunk_bytes: int, count: int) -> int:
    """``count`` terminal_output_chunk lines into ``path``; returns the decoded byte count."""
    raw = os.urandom(chunk_bytes)
    datas = [base64.b64encode(raw).decode(), base64.b64encode(raw[::-1]).decode()]
    with path.open("wb") as f:
        for n in range(count):
            update = {"sessionUpdate": "terminal_output_chunk", "terminalId": "t"}
            # vary the line a little so nothing can be cached
            update["data"] = datas[n % 2]
            message = {"jsonrpc": "2.0", "method": "session/update"}
            message["params"] = {"sessionId": "s", "update": update}
            f.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
    return chunk_bytes * count


def make_v1_payloads(tmp: Path, chunk_bytes: int, count: int) -> dict[str, tuple[Path, int]]:
    """v1 lines: ``_meta`` terminal output and agent message chunks, each carrying as many
    text characters as a v2 line of ``chunk_bytes`` carries base64 (no newline: one byte a
    character); returns each payload with the bytes or characters it should yield."""
    width = len(base64.b64encode(bytes(chunk_bytes)))
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 "
    rng = random.Random(chunk_bytes)
    texts = ["".join(rng.choices(letters, k=width)) for _ in range(2)]

    def line(update: dict[str, Any]) -> bytes:
        message = {"jsonrpc": "2.0", "method": "session/update"}
        message["params"] = {"sessionId": "s", "update": update}
        return json.dumps(message, separators=(",", ":")).encode() + b"\n"

    terminal = tmp / f"v1-terminal-{chunk_bytes}.ndjson"
    with terminal.open("wb") as f:
        opening = {"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "flood"}
        opening |= {"kind": "execute", "status": "in_progress"}
        opening["_meta"] = {"terminal_info": {"terminal_id": "t"}}
        f.write(line(opening))
        for n in range(count):
            output = {"terminal_id": "t", "data": texts[n % 2]}
            update = {"sessionUpdate": "tool_call_update", "toolCallId": "c1"}
            f.write(line(update | {"_meta": {"terminal_output": output}}))
    messages = tmp / f"v1-messages-{chunk_bytes}.ndjson"
    with messages.open("wb") as f:
        for n in range(count):
            content = {"type": "text", "text": texts[n % 2]}
            f.write(line({"sessionUpdate": "agent_message_chunk", "content": content}))
    return {"v1 terminal": (terminal, width * count), "v1 messages": (messages, width * count)}


def bare_loop(payload: Path, loads: Callable[[bytes], Any]) -> tuple[float, float, int]:
    """Seconds (wall, this process's CPU) to read and decode every line from the emitter's
    pipe; bytes decoded."""
    proc = subprocess.Popen(
        [sys.executable, EMITTER, "raw", str(payload)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    fd = proc.stdout.fileno()
    b64 = base64.b64decode
    time.sleep(0.3)  # let it read its payload
    start, cpu = time.perf_counter(), time.process_time()
    proc.stdin.write(b"g")
    proc.stdin.flush()
    total = 0
    rest = b""
    while True:
        chunk = os.read(fd, READ)
        if not chunk:
            break
        lines = (rest + chunk).split(b"\n")
        rest = lines.pop()
        for line in lines:
            message = loads(line)
            total += len(b64(message["params"]["update"]["data"]))
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    proc.wait()
    return elapsed, cpu, total


async def _public(payload: Path, how: str) -> tuple[float, float, int]:
    mode = "agent1" if how.startswith("v1") else "agent"
    heard = [0, 0]  # updates, terminal chunks a listener got

    def listener(_session: Any, _update: Any) -> None:
        heard[0] += 1

    def chunk_listener(_session: Any, _chunk: Any) -> None:
        heard[1] += 1

    async with acp.connect([sys.executable, EMITTER, mode, str(payload)]) as agent:
        session = await agent.new_session(cwd=tempfile.gettempdir())
        if how.endswith("+ listener"):
            subscribe_as_a_cell(session, listener, chunk_listener)
        elif how == "v2 + model lsn":
            session.subscribe(listener)
        await anyio.sleep(0.3)  # let it read its payload
        start, cpu = time.perf_counter(), time.process_time()
        turn = await session.prompt("flood")
        await turn.wait()
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
        if how == "v1 messages":
            total = sum(len(m.text) for m in turn.state.messages)
        else:
            total = sum(t.total_bytes for t in turn.terminals.values())
    per_chunk = _CHUNK_BYTES[1 if how.startswith("v1") else 0]  # (v1: characters a line)
    if "+" in how and sum(heard) < total // max(1, per_chunk):
        raise SystemExit(f"{how}: the listener heard {heard}, fewer than the chunks")
    return elapsed, cpu, total


#: the current case's chunk size, and a v1 line's characters (the listener check counts chunks)
_CHUNK_BYTES = [1, 1]


def subscribe_as_a_cell(session: Any, listener: Any, chunk_listener: Any) -> None:
    """Subscribe as ``CellRun.attach`` does: terminal chunks as views when the API has them."""
    if "terminal_chunks" in inspect.signature(session.subscribe).parameters:
        session.subscribe(listener, terminal_chunks=chunk_listener)
    else:  # (the code before the views: every update a model)
        session.subscribe(listener)


def public_path(how: str) -> Callable[[Path], tuple[float, float, int]]:
    return lambda payload: anyio.run(_public, payload, how)


ROWS = [
    "bare json",
    "bare orjson",
    "v2",
    "v2 + listener",
    "v2 + model lsn",
    "v1 terminal",
    "v1 term + lsn",
    "v1 messages",
]


def case(label: str, chunk_bytes: int, count: int, rounds: int, tmp: Path) -> dict[str, float]:
    payload = tmp / f"payload-{chunk_bytes}.ndjson"
    expected = make_payload(payload, chunk_bytes, count)
    v1 = make_v1_payloads(tmp, chunk_bytes, count)
    _CHUNK_BYTES[:] = [chunk_bytes, len(base64.b64encode(bytes(chunk_bytes)))]
    mib = payload.stat().st_size / 2**20
    readers: dict[str, tuple[Callable[[Path], tuple[float, float, int]], Path, int]] = {
        "bare json": (lambda path: bare_loop(path, json.loads), payload, expected),
    }
    if orjson is not None:
        readers["bare orjson"] = (lambda path: bare_loop(path, orjson.loads), payload, expected)
    for how in ("v2", "v2 + listener", "v2 + model lsn"):
        readers[how] = (public_path(how), payload, expected)
    for how, (path, size) in v1.items():
        readers[how] = (public_path(how), path, size)
    path, size = v1["v1 terminal"]
    readers["v1 term + lsn"] = (public_path("v1 term + listener"), path, size)
    times: dict[str, list[float]] = {name: [] for name in readers}
    cpus: dict[str, list[float]] = {name: [] for name in readers}
    for _ in range(rounds):
        for name, (reader, path, size) in readers.items():
            gc.collect()
            elapsed, cpu, total = reader(path)
            if total != size:
                raise SystemExit(f"{name}: got {total} bytes, expected {size}")
            times[name].append(elapsed)
            cpus[name].append(cpu)
    print(f"{label}: {count} notifications, {chunk_bytes} B of data each, {mib:.1f} MiB of lines")
    base = count / statistics.median(times["bare json"])
    cpu_base = statistics.median(cpus["bare json"])
    rates: dict[str, float] = {}
    for name in ROWS:
        if name not in times:
            print(f"  {name:<15}: n/a (orjson not installed)")
            continue
        median = statistics.median(times[name])
        rate = count / median
        rates[name] = rate / base
        size = readers[name][2]
        cpu = statistics.median(cpus[name])
        print(
            f"  {name:<15}: {rate:12,.0f} msg/s  {size / median / 1e6:8.1f} MB/s  "
            f"x bare json {rate / base:.2f}  cpu {cpu:6.3f} s x bare json {cpu_base / cpu:.2f}"
            f"  (median of {rounds}; min {min(times[name]):.3f} s, max {max(times[name]):.3f} s)"
        )
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--small", type=int, default=200_000)
    parser.add_argument("--large", type=int, default=2_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        small = case("small chunks", 75, args.small, args.rounds, Path(tmp))
        large = case("large chunks", 64 * 1024, args.large, args.rounds, Path(tmp))
    print(f"load (1, 5, 15 min): {os.getloadavg()}")
    targets = (("v2", 1.0), ("v2 + listener", 1.0), ("v1 terminal", 0.8), ("v1 term + lsn", 0.8))
    for name, target in targets:
        for size, rates in (("small", small), ("large", large)):
            print(f"ingest {size}: {name} x bare json = {rates[name]:.2f} (target >= {target})")
    for size, rates in (("small", small), ("large", large)):
        print(
            f"ingest {size}: v1 messages x bare json = {rates['v1 messages']:.2f} (target >= 0.8)"
        )


if __name__ == "__main__":
    main()
