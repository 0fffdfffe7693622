"""How fast does a Connection ingest ``session/update`` notifications?

Feeds ``terminal_output_chunk`` notifications through an in-memory byte pipe into a
`Connection` whose notification handler parses the update (with
``acp_notebook._protocol.parse_session_update`` when importable) and base64-decodes the data.
Side by side, a bare loop of ``json.loads`` + ``base64.b64decode`` over the same lines.

Run: ``python bench/bench_ingest.py``
"""

from __future__ import annotations

import base64
import gc
import json
import os
import time
from collections.abc import Callable
from typing import Any

import anyio

from acp_notebook._jsonrpc import Connection
from acp_notebook._lines import memory_byte_pipe

_parse: Callable[[dict[str, Any]], Any] | None
try:
    from acp_notebook._protocol import parse_session_update as _parse
except ImportError:  # the protocol layer is not there yet
    _parse = None

PARSER = "parse_session_update" if _parse is not None else "base64 only (no protocol layer)"


def _decode_update(update: dict[str, Any]) -> bytes:
    if _parse is not None:
        model = _parse(update)
        data: str = model.data
    else:
        data = update["data"]
    return base64.b64decode(data)


def make_payload(chunk_bytes: int, count: int) -> tuple[bytes, list[bytes]]:
    raw = os.urandom(chunk_bytes)
    data = base64.b64encode(raw).decode()
    lines = []
    for n in range(count):
        message = {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {
                "sessionId": "s",
                "update": {
                    "sessionUpdate": "terminal_output_chunk",
                    "terminalId": "t",
                    # vary the line a little so nothing can be cached
                    "data": data if n % 2 else base64.b64encode(raw[::-1]).decode(),
                },
            },
        }
        lines.append(json.dumps(message, separators=(",", ":")).encode() + b"\n")
    return b"".join(lines), lines


def bare_loop(lines: list[bytes]) -> float:
    start = time.perf_counter()
    total = 0
    for line in lines:
        message = json.loads(line)
        total += len(base64.b64decode(message["params"]["update"]["data"]))
    elapsed = time.perf_counter() - start
    assert total > 0
    return elapsed


async def through_connection(payload: bytes, count: int) -> float:
    to_conn, conn_in = memory_byte_pipe(8)
    conn_out, from_conn = memory_byte_pipe(8)
    seen = 0
    decoded = 0
    done = anyio.Event()

    async def on_notification(method: str, params: Any) -> None:
        nonlocal seen, decoded
        decoded += len(_decode_update(params["update"]))
        seen += 1
        if seen == count:
            done.set()

    conn = Connection(conn_in, conn_out, notification_handler=on_notification)
    piece = 1 << 20  # the writer hands over 1 MiB at a time, like a busy pipe
    async with conn:
        start = time.perf_counter()
        for offset in range(0, len(payload), piece):
            await to_conn.send(payload[offset : offset + piece])
        await done.wait()
        elapsed = time.perf_counter() - start
    await to_conn.aclose()
    await from_conn.aclose()
    assert decoded > 0
    return elapsed


def best_of(runs: int, fn: Callable[[], float]) -> float:
    times = []
    for _ in range(runs):
        gc.collect()
        times.append(fn())
    return min(times)


def case(label: str, chunk_bytes: int, count: int, runs: int = 3) -> float:
    payload, lines = make_payload(chunk_bytes, count)
    bare = best_of(runs, lambda: bare_loop(lines))
    conn = best_of(runs, lambda: anyio.run(through_connection, payload, count))
    bare_rate = count / bare
    conn_rate = count / conn
    ratio = conn_rate / bare_rate
    line_len = len(lines[0])
    mib = len(payload) / 2**20
    print(f"{label}: {count} notifications, {line_len} bytes/line, {mib:.1f} MiB")
    print(f"  connection  : {conn_rate:12,.0f} notifications/s  ({mib / conn:8.1f} MiB/s)")
    print(f"  bare loop   : {bare_rate:12,.0f} notifications/s  ({mib / bare:8.1f} MiB/s)")
    print(f"  ratio       : {ratio:.2f}")
    return conn_rate


def main() -> None:
    print(f"handler parses updates with: {PARSER}")
    small = case("small chunks (~100 B of data)", 75, 200_000)
    case("large chunks (64 KiB of data)", 64 * 1024, 2_000)
    verdict = "ok" if small >= 100_000 else "BELOW TARGET"
    print(f"small-chunk target >= 100,000 notifications/s: {verdict}")


if __name__ == "__main__":
    main()
