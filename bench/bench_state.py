"""Benchmark of the session state layer; run ``python bench/bench_state.py``.

Prints, from one run, side by side:
* reducer throughput for small ``terminal_output_chunk`` and message chunks (updates/s);
* plain-transcript speed (MB/s) on a generated build log with colours and progress
  bars, against a bare regex strip of escape sequences over the same bytes, and the ratio.
"""

from __future__ import annotations

import base64
import random
import re
import sys
import time
from collections.abc import Callable

from acp_notebook._state import AnsiHtml, AnsiTranscript

BARE_ESCAPES = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")


def build_log(size: int, seed: int = 7) -> bytes:
    """A make/cargo/pip-like log: coloured status lines, warnings, progress bars."""
    rng = random.Random(seed)
    out: list[bytes] = []
    total = 0
    n = 0
    words = ["src", "core", "parser", "net", "util", "render", "io", "cache", "db", "api"]
    while total < size:
        n += 1
        kind = rng.random()
        path = "/".join(rng.choice(words) for _ in range(3)) + f"_{n}.cpp"
        if kind < 0.70:
            pct = n % 100
            line = f"[{pct:3d}%] \x1b[32mBuilding CXX object {path}.o\x1b[0m\n".encode()
        elif kind < 0.80:
            line = (
                f"\x1b[1m{path}:{rng.randint(1, 999)}:{rng.randint(1, 80)}: "
                f"\x1b[35mwarning: \x1b[0m\x1b[1munused variable 'x{n}'\x1b[0m "
                "[-Wunused-variable]\n"
            ).encode()
        elif kind < 0.97:
            line = f"\x1b[34m   Compiling\x1b[0m crate-{n} v0.{n % 10}.{n % 7}\n".encode()
        else:
            steps = []
            for i in range(0, 101, 5):
                bar = "█" * (i // 5) + " " * (20 - i // 5)
                steps.append(f"\r\x1b[K\x1b[36mDownloading\x1b[0m |{bar}| {i:3d}%")
            line = ("".join(steps) + "\n").encode()
        out.append(line)
        total += len(line)
    return b"".join(out)


def best_of(fn: Callable[[], object], repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def bench_transcript(data: bytes, chunk: int) -> tuple[float, float]:
    def bare() -> bytes:
        return BARE_ESCAPES.sub(b"", data)

    def ours() -> str:
        conv = AnsiTranscript()
        for i in range(0, len(data), chunk):
            conv.feed(data[i : i + chunk])
        return conv.text()

    mb = len(data) / 1e6
    return mb / best_of(bare), mb / best_of(ours)


def bench_reducer(n: int) -> list[tuple[str, float, float]]:
    """(workload, updates/s applying parsed models, updates/s parsing + applying)."""
    from acp_notebook._protocol import parse_session_update
    from acp_notebook._state import SessionState

    line = b"\x1b[32mok\x1b[0m test_%d\n"
    workloads = {
        "terminal_output_chunk (16 B)": [
            {
                "sessionUpdate": "terminal_output_chunk",
                "terminalId": "t",
                "data": base64.b64encode((line % i)[:16]).decode(),
            }
            for i in range(64)
        ],
        "agent_message_chunk (1 word)": [
            {
                "sessionUpdate": "agent_message_chunk",
                "messageId": "m",
                "content": {"type": "text", "text": f"word{i} "},
            }
            for i in range(64)
        ],
        "tool_call_content_chunk": [
            {
                "sessionUpdate": "tool_call_content_chunk",
                "toolCallId": "c",
                "content": {"type": "content", "content": {"type": "text", "text": f"x{i}"}},
            }
            for i in range(64)
        ],
    }
    results = []
    for name, raw in workloads.items():
        models = [parse_session_update(r) for r in raw]
        state = SessionState()
        start = time.perf_counter()
        for i in range(n):
            state.apply(models[i & 63])
        applied = n / (time.perf_counter() - start)
        state = SessionState()
        start = time.perf_counter()
        for i in range(n // 4):
            state.apply(parse_session_update(raw[i & 63]))
        parsed = (n // 4) / (time.perf_counter() - start)
        results.append((name, applied, parsed))
    return results


def main() -> None:
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 8_000_000
    data = build_log(size)
    lines = data.count(b"\n")
    print(f"build log: {len(data) / 1e6:.1f} MB, {lines} lines")
    print(f"{'plain transcript':<34}{'bare strip MB/s':>16}{'ours MB/s':>12}{'ratio':>8}")
    for chunk in (len(data), 65536, 4096):
        bare, ours = bench_transcript(data, chunk)
        label = "one feed" if chunk == len(data) else f"{chunk} B chunks"
        print(f"  {label:<32}{bare:>16.1f}{ours:>12.1f}{ours / bare:>8.2f}")
    mb = len(data) / 1e6

    def html() -> str:
        conv = AnsiHtml()
        conv.feed(data)
        return conv.html()

    print(f"  {'HTML (for reference), one feed':<32}{'':>16}{mb / best_of(html, 2):>12.1f}")
    print()
    print(f"{'reducer, small chunks':<34}{'apply/s':>16}{'parse+apply/s':>16}")
    for name, applied, parsed in bench_reducer(1_000_000):
        print(f"  {name:<32}{applied:>16,.0f}{parsed:>16,.0f}")


if __name__ == "__main__":
    main()
