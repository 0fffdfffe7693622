"""Terminal output of a real command: embedded agent -> pipe -> client, next to its baselines.

    python bench/bench_agent_flood.py [MIB] [--rounds 5]     # default 50 MiB

The command is ``cat FILE`` of MIB MiB of test-like text lines. Measured for each reader,
interleaved round by round, median of the rounds:

* ``cat | pipe``: ``cat FILE`` with its stdout a pipe, read in 256 KiB blocks (what the machine
  moves without a terminal);
* ``raw PTY read``: ``cat FILE`` run on the slave side of a PTY (the line discipline turns
  each ``\n`` into ``\r\n``), the master read in 64 KiB blocking reads until EIO: the target's
  baseline, the same bytes the agent's command writes;
* ``embedded agent``: ``acp-notebook-agent`` as a subprocess through the public client
  (``connect``, ``new_session``, ``prompt("$ cat FILE")`` allowed by the permission handler,
  ``turn.wait()``), the reducer applying every chunk. Its byte count must equal the raw PTY
  read's and its kept tail the same bytes (``intact``). The time runs from the prompt to the
  turn's end, so it includes the permission round trip and starting the shell.

Also, ``--flood-output`` (the agent's synthetic in-process flood, no PTY) end to end.
"""

from __future__ import annotations

import argparse
import base64
import errno
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

import acp_notebook as acp
from acp_notebook._connection._process import open_agent_connection

LINE = b"\x1b[32mPASSED\x1b[0m tests/test_x.py::test_case[%06d] \xc3\xbc 0123456789 abcdefghij\n"


def make_file(path: Path, mib: float) -> None:
    size = int(mib * 2**20)
    with path.open("wb") as f:
        n = 0
        written = 0
        while written < size:
            block = b"".join(LINE % (n + i) for i in range(1000))
            f.write(block)
            written += len(block)
            n += 1000


def cat_pipe(path: Path) -> tuple[float, int, bytes]:
    start = time.perf_counter()
    proc = subprocess.Popen(["cat", str(path)], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    total = 0
    while chunk := os.read(fd, 256 * 1024):
        total += len(chunk)
    proc.wait()
    return time.perf_counter() - start, total, b""


def raw_pty(path: Path) -> tuple[float, int, bytes]:
    start = time.perf_counter()
    master, slave = os.openpty()
    proc = subprocess.Popen(["cat", str(path)], stdin=slave, stdout=slave, stderr=slave)
    os.close(slave)
    total = 0
    tail = bytearray()
    try:
        while True:
            try:
                chunk = os.read(master, 64 * 1024)
            except OSError as exc:
                if exc.errno != errno.EIO:
                    raise
                break
            if not chunk:
                break
            total += len(chunk)
            tail += chunk
            if len(tail) > 2**20:
                del tail[: len(tail) - 2**20]
    finally:
        os.close(master)
        proc.wait()
    return time.perf_counter() - start, total, bytes(tail)


def allow(request: Any) -> str | None:
    for option in request.options:
        if option.kind == "allow_once":
            return str(option.option_id)
    return None


async def _agent(path: Path, data_dir: str) -> tuple[float, int, bytes]:
    argv = [sys.executable, "-m", "acp_notebook.agent", "--data-dir", data_dir]
    async with acp.connect(argv, cwd=path.parent, permission=allow) as agent:
        session = await agent.new_session(cwd=path.parent)
        start = time.perf_counter()
        turn = await session.prompt(f"$ cat {path.name}")
        await turn.wait()
        elapsed = time.perf_counter() - start
        terms = list(turn.terminals.values())
        if len(terms) != 1:
            raise SystemExit(f"expected one terminal, got {len(terms)}: {turn.text}")
        term = terms[0]
        return elapsed, term.total_bytes, term.data[-(2**20) :]


def embedded_agent(path: Path) -> tuple[float, int, bytes]:
    with tempfile.TemporaryDirectory() as data_dir:
        return anyio.run(_agent, path, data_dir)


async def synthetic(mib: float) -> tuple[float, int, bool]:
    digest = hashlib.sha256()
    received = 0
    report: dict[str, Any] = {}
    idle = anyio.Event()

    async def on_notification(method: str, params: Any) -> None:
        nonlocal received
        update = params["update"]
        tag = update["sessionUpdate"]
        if tag == "terminal_output_chunk":
            data = base64.b64decode(update["data"])
            received += len(data)
            digest.update(data)
        elif tag == "terminal_update" and "_meta" in update:
            report.update(update["_meta"]["acpNotebook"])
        elif tag == "state_update" and update["state"] == "idle":
            idle.set()

    with tempfile.TemporaryDirectory() as tmp:
        argv = [sys.executable, "-m", "acp_notebook.agent", "--data-dir", tmp]
        argv += ["--flood-output", str(mib)]
        async with open_agent_connection(argv, notification_handler=on_notification) as (_, conn):
            info = {"name": "bench", "version": "0"}
            await conn.request("initialize", {"protocolVersion": 2, "info": info})
            session = await conn.request("session/new", {"cwd": tmp})
            prompt = [{"type": "text", "text": "flood"}]
            start = time.perf_counter()
            await conn.request(
                "session/prompt", {"sessionId": session["sessionId"], "prompt": prompt}
            )
            await idle.wait()
            elapsed = time.perf_counter() - start
    intact = received == report.get("bytes") and digest.hexdigest() == report.get("sha256")
    return elapsed, received, intact


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("mib", nargs="?", type=float, default=50.0)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    readers = {"cat | pipe": cat_pipe, "raw PTY read": raw_pty, "embedded agent": embedded_agent}
    times: dict[str, list[float]] = {name: [] for name in readers}
    sizes: dict[str, int] = {}
    intact = True
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "output.txt"
        make_file(path, args.mib)
        for _ in range(args.rounds):
            tails: dict[str, bytes] = {}
            for name, reader in readers.items():
                elapsed, total, tail = reader(path)
                times[name].append(elapsed)
                sizes[name] = total
                tails[name] = tail
            got, want = tails["embedded agent"], tails["raw PTY read"]
            n = min(len(got), len(want))
            same = n > 0 and got[-n:] == want[-n:]
            intact = intact and same and sizes["embedded agent"] == sizes["raw PTY read"]
    print(f"cat of {args.mib:g} MiB of text lines ({sizes['raw PTY read']} bytes through a PTY)")
    rates = {name: sizes[name] / statistics.median(t) / 1e6 for name, t in times.items()}
    pty = rates["raw PTY read"]
    for name, t in times.items():
        print(
            f"  {name:<15}: {rates[name]:8.1f} MB/s  x raw PTY read {rates[name] / pty:.2f}  "
            f"(median of {args.rounds}: {statistics.median(t):.3f} s)"
        )
    ratio = rates["embedded agent"] / pty
    print(f"agent PTY path: {ratio:.2f} x raw PTY read (target >= 0.70); intact={intact}")
    elapsed, received, whole = anyio.run(synthetic, args.mib)
    print(
        f"flood {args.mib:g} MiB: {received} bytes in {elapsed:.2f} s = "
        f"{received / elapsed / 1e6:.1f} MB/s end to end; intact={whole}"
    )
    if not (intact and whole):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
