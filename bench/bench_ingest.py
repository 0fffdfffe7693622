"""How fast does the client ingest ``session/update`` terminal output, on its public path?

    python bench/bench_ingest.py [--rounds 5] [--small 200000] [--large 2000]

The emitter (``bench/_emitter.py``) is a separate process writing to a real pipe. Each case is
measured for every reader, interleaved round by round, and the median of the rounds is kept:

* ``acp_notebook``: ``connect`` (the emitter as an ACP v2 agent), ``new_session``, then from
  ``session.prompt`` to ``turn.wait()`` returning: the reader, session routing, pydantic
  validation, the reducer applying every chunk (base64 decoded into the terminal's buffer)
  and the turn's bookkeeping. The terminal's byte count is checked against what was sent.
* ``bare json``: the baseline. A loop reading the same bytes from the emitter's pipe (256 KiB
  reads, lines split), ``json.loads`` + ``base64.b64decode`` of every line.
* ``bare orjson``: the same loop with ``orjson.loads`` (when orjson is installed).
* ``python sdk``: the Python SDK's v2 client, when installed (the SDK 0.x installed for the
  v1 tests speaks v1, which has no ``terminal_output_chunk``: then the row says so).

Each rate is also given as a ratio to bare json of the same round's median.
"""

from __future__ import annotations

import argparse
import base64
import gc
import json
import os
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


def bare_loop(payload: Path, loads: Callable[[bytes], Any]) -> tuple[float, int]:
    """Seconds to read and decode every line from the emitter's pipe; bytes decoded."""
    proc = subprocess.Popen(
        [sys.executable, EMITTER, "raw", str(payload)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    fd = proc.stdout.fileno()
    b64 = base64.b64decode
    time.sleep(0.3)  # let it read its payload
    start = time.perf_counter()
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
    elapsed = time.perf_counter() - start
    proc.wait()
    return elapsed, total


async def _public(payload: Path) -> tuple[float, int]:
    async with acp.connect([sys.executable, EMITTER, "agent", str(payload)]) as agent:
        session = await agent.new_session(cwd=tempfile.gettempdir())
        await anyio.sleep(0.3)  # let it read its payload
        start = time.perf_counter()
        turn = await session.prompt("flood")
        await turn.wait()
        elapsed = time.perf_counter() - start
        total = sum(t.total_bytes for t in turn.terminals.values())
    return elapsed, total


def public_path(payload: Path) -> tuple[float, int]:
    return anyio.run(_public, payload)


def sdk_client() -> Callable[[Path], tuple[float, int]] | None:
    """The Python SDK's v2 client, if one is installed; None otherwise (see the docstring)."""
    try:
        from importlib.metadata import version

        major = int(version("agent-client-protocol").split(".")[0])
    except Exception:
        return None
    if major < 1:
        return None  # 0.x: ACP v1 only
    return None  # a v2 SDK's client would be wired here: none is installed on this machine


def case(label: str, chunk_bytes: int, count: int, rounds: int, tmp: Path) -> dict[str, float]:
    payload = tmp / f"payload-{chunk_bytes}.ndjson"
    expected = make_payload(payload, chunk_bytes, count)
    mib = payload.stat().st_size / 2**20
    readers: dict[str, Callable[[Path], tuple[float, int]]] = {
        "bare json": lambda path: bare_loop(path, json.loads),
        "acp_notebook": public_path,
    }
    if orjson is not None:
        readers["bare orjson"] = lambda path: bare_loop(path, orjson.loads)
    sdk = sdk_client()
    if sdk is not None:
        readers["python sdk"] = sdk
    times: dict[str, list[float]] = {name: [] for name in readers}
    for _ in range(rounds):
        for name, reader in readers.items():
            gc.collect()
            elapsed, total = reader(payload)
            if total != expected:
                raise SystemExit(f"{name}: decoded {total} bytes, expected {expected}")
            times[name].append(elapsed)
    print(f"{label}: {count} notifications, {chunk_bytes} B of data each, {mib:.1f} MiB of lines")
    base = count / statistics.median(times["bare json"])
    rates: dict[str, float] = {}
    for name in ["bare json", "bare orjson", "acp_notebook", "python sdk"]:
        if name not in times:
            why = "orjson not installed" if name == "bare orjson" else "no v2 SDK installed"
            print(f"  {name:<13}: n/a ({why})")
            continue
        median = statistics.median(times[name])
        rate = count / median
        rates[name] = rate / base
        print(
            f"  {name:<13}: {rate:12,.0f} msg/s  {expected / median / 1e6:8.1f} MB/s  "
            f"x bare json {rate / base:.2f}  (median of {rounds}; "
            f"min {min(times[name]):.3f} s, max {max(times[name]):.3f} s)"
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
    print(f"ingest small: acp_notebook x bare json = {small['acp_notebook']:.2f} (target >= 1.00)")
    print(f"ingest large: acp_notebook x bare json = {large['acp_notebook']:.2f} (target >= 0.95)")


if __name__ == "__main__":
    main()
