"""A fake agent that crashes mid-turn, run as a real subprocess (the exit is the point).

Usage: python client_peer.py. It answers initialize and session/new; a prompt's turn says
"working", writes a line to stderr and exits with status 7. The scripted agents for the rest
of the client tests run in memory (tests/test_client.py `FakePeer`).
"""

from __future__ import annotations

import json
import os
import sys
import time


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def update(session_id: str, body: dict) -> None:
    send(
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": session_id, "update": body},
        }
    )


def crash_mid_turn(session_id: str, prompt: list) -> None:
    update(session_id, {"sessionUpdate": "user_message", "messageId": "u1", "content": prompt})
    update(session_id, {"sessionUpdate": "state_update", "state": "running"})
    chunk = {"type": "text", "text": "working"}
    update(
        session_id, {"sessionUpdate": "agent_message_chunk", "messageId": "a1", "content": chunk}
    )
    sys.stderr.write("fatal: the fake agent fell over\n")
    sys.stderr.flush()
    time.sleep(0.05)
    os._exit(7)


for raw in sys.stdin:
    message = json.loads(raw)
    method, rid, params = message.get("method"), message.get("id"), message.get("params") or {}
    if method == "initialize":
        info = {"name": "fake", "version": "9"}
        result = {"protocolVersion": 2, "info": info, "capabilities": {"session": {}}}
        send({"jsonrpc": "2.0", "id": rid, "result": result})
    elif method == "session/new":
        send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "s1"}})
    elif method == "session/prompt":
        send({"jsonrpc": "2.0", "id": rid, "result": {"messageId": "u1"}})
        crash_mid_turn(params["sessionId"], params["prompt"])
    elif rid is not None:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "nope"}})
