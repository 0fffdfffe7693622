"""The separate process that writes ingest benchmark traffic into a real pipe (its stdout).

    python _emitter.py agent PAYLOAD_FILE   # a minimal ACP v2 agent: each prompt writes the file
    python _emitter.py agent1 PAYLOAD_FILE  # the same agent speaking ACP v1
    python _emitter.py raw PAYLOAD_FILE     # no protocol: writes the file once a byte is read

The payload (``session/update`` lines built once by ``bench_ingest.py``) is read into memory
before anything is asked of it, then written in 1 MiB pieces, so the emitter costs the reader
nothing but the pipe: the reader is what is measured. In agent mode the prompt's answer comes
first and an idle ``state_update`` last, for the session the client opened. In v1 (agent1 mode)
the prompt's answer (its ``stopReason``) comes last: v1 answers a prompt at the end of the turn.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

PIECE = 1 << 20


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view[:PIECE])
        view = view[written:]


def send(message: dict[str, Any]) -> None:
    write_all(1, json.dumps(message, separators=(",", ":")).encode() + b"\n")


def agent(payload: bytes, version: int = 2) -> None:
    for raw in sys.stdin.buffer:
        message = json.loads(raw)
        method, rid = message.get("method"), message.get("id")
        if rid is None:
            continue
        if method == "initialize" and version == 1:
            result = {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}
        elif method == "session/prompt" and version == 1:
            write_all(1, payload)
            send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})
            continue
        elif method == "initialize":
            info = {"name": "emitter", "title": "bench emitter", "version": "1"}
            result: Any = {"protocolVersion": 2, "info": info, "capabilities": {"session": {}}}
        elif method == "session/new":
            result = {"sessionId": "s"}  # the payload's lines name session "s"
        elif method == "session/prompt":
            send({"jsonrpc": "2.0", "id": rid, "result": {"messageId": "u1"}})
            write_all(1, payload)
            idle = {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}
            send(
                {
                    "jsonrpc": "2.0",
                    "method": "session/update",
                    "params": {"sessionId": "s", "update": idle},
                }
            )
            continue
        else:
            result = {}
        send({"jsonrpc": "2.0", "id": rid, "result": result})


def main() -> None:
    mode, path = sys.argv[1], sys.argv[2]
    with open(path, "rb") as f:
        payload = f.read()
    if mode in ("agent", "agent1"):
        agent(payload, 1 if mode == "agent1" else 2)
    else:
        sys.stdin.buffer.read(1)
        write_all(1, payload)


if __name__ == "__main__":
    main()
