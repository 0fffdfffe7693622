"""A fast flooding ACP v2 agent, run as a real subprocess (memory tests and bench_memory).

Usage: ``python flood.py TERMINALS MIB_EACH [CHUNK_KIB]``. Each prompt opens one tool call
with TERMINALS terminals and streams MIB_EACH MiB of output into each of them, round robin, in
chunks of CHUNK_KIB KiB (default 256), then reports each terminal's exit and goes idle.
Every chunk line is built once and written as is, so the agent costs little CPU: the client
is what is measured. The total it sent is in the last terminal's ``_meta.flood.bytes``.
"""

from __future__ import annotations

import base64
import json
import sys
from typing import Any

TERMINALS = int(sys.argv[1])
MIB_EACH = float(sys.argv[2])
CHUNK = int(float(sys.argv[3]) * 1024) if len(sys.argv) > 3 else 256 * 1024
OUT = sys.stdout.buffer

_LINE = b"flood output: the quick brown fox jumps over the lazy dog 0123456789\n"


def send(message: dict[str, Any]) -> None:
    OUT.write(json.dumps(message).encode() + b"\n")
    OUT.flush()


def update(session_id: str, body: dict[str, Any]) -> None:
    send(
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": session_id, "update": body},
        }
    )


def flood(session_id: str) -> None:
    terms = [f"term-{i}" for i in range(TERMINALS)]
    update(
        session_id,
        {
            "sessionUpdate": "user_message",
            "messageId": "u1",
            "content": [{"type": "text", "text": "flood"}],
        },
    )
    update(session_id, {"sessionUpdate": "state_update", "state": "running"})
    update(
        session_id,
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "call-1",
            "title": f"flood {TERMINALS} x {MIB_EACH:g} MiB",
            "kind": "execute",
            "status": "in_progress",
            "content": [{"type": "terminal", "terminalId": t} for t in terms],
        },
    )
    for t in terms:
        update(
            session_id,
            {
                "sessionUpdate": "terminal_update",
                "terminalId": t,
                "command": f"flood {t}",
                "cwd": "/",
            },
        )
    block = (_LINE * (CHUNK // len(_LINE) + 1))[:CHUNK]
    data = base64.b64encode(block).decode("ascii")
    lines = []
    for t in terms:
        params = {
            "sessionId": session_id,
            "update": {"sessionUpdate": "terminal_output_chunk", "terminalId": t, "data": data},
        }
        lines.append(
            json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": params}).encode()
            + b"\n"
        )
    per_terminal = int(MIB_EACH * 2**20)
    sent = 0
    while sent < per_terminal:
        for line in lines:
            OUT.write(line)
        sent += CHUNK
    OUT.flush()
    for t in terms:
        meta = {"flood": {"bytes": sent}}
        update(
            session_id,
            {
                "sessionUpdate": "terminal_update",
                "terminalId": t,
                "exitStatus": {"exitCode": 0},
                "_meta": meta,
            },
        )
    update(
        session_id,
        {"sessionUpdate": "tool_call_update", "toolCallId": "call-1", "status": "completed"},
    )
    update(session_id, {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})


def main() -> None:
    sessions = 0
    for raw in sys.stdin.buffer:
        message = json.loads(raw)
        method, rid, params = message.get("method"), message.get("id"), message.get("params") or {}
        if rid is None:
            continue
        if method == "initialize":
            result: Any = {
                "protocolVersion": 2,
                "info": {"name": "flood", "title": "flood agent", "version": "1"},
                "capabilities": {"session": {}},
                "authMethods": [],
            }
        elif method == "session/new":
            sessions += 1
            result = {"sessionId": f"s{sessions}"}
        elif method == "session/prompt":
            send({"jsonrpc": "2.0", "id": rid, "result": {"messageId": "u1"}})
            flood(params["sessionId"])
            continue
        elif method == "session/close":
            result = {}
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": str(method)}})
            continue
        send({"jsonrpc": "2.0", "id": rid, "result": result})


if __name__ == "__main__":
    main()
