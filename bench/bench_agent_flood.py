"""End-to-end throughput of terminal output: embedded agent -> pipe -> Connection -> bytes.

Runs ``acp-notebook-agent --flood-output MIB`` as a subprocess, prompts once, and decodes every
``terminal_output_chunk`` as a client would (base64 per chunk, running sha256 and byte count).
Checks the byte count and digest against the agent's own report, then prints MB/s.

    python bench/bench_agent_flood.py [MIB]       # default 200
"""

from __future__ import annotations

import base64
import hashlib
import sys
import tempfile
import time
from typing import Any

import anyio

from acp_notebook._process import open_agent_connection


async def main(mib: float) -> None:
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
    print(
        f"flood {mib:g} MiB: {received} bytes in {elapsed:.2f} s = "
        f"{received / elapsed / 1e6:.1f} MB/s end to end; intact={intact}"
    )
    if not intact:
        raise SystemExit(1)


if __name__ == "__main__":
    anyio.run(main, float(sys.argv[1]) if len(sys.argv) > 1 else 200.0)
