"""An ACP v2 agent that asks to run ``rm canary`` offering no reject option (a real subprocess).

Usage: ``python deny_no_reject_agent.py WORKDIR``. On ``session/prompt`` it asks twice, one
request after the other's answer: id 100 offers only ``allow_once``, id 101 ``allow_once`` and
``allow_always``. An answer that selects an allow option makes it create ``WORKDIR/PWNED-<id>``
(a careless agent acting on it). Every message it receives is appended to
``WORKDIR/received.jsonl``. After both answers it goes idle ``end_turn``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

WORK = Path(sys.argv[1])
ASKS = {
    100: [{"optionId": "ok", "name": "Allow once", "kind": "allow_once"}],
    101: [
        {"optionId": "ok", "name": "Allow once", "kind": "allow_once"},
        {"optionId": "always", "name": "Always allow", "kind": "allow_always"},
    ],
}
_lock = threading.Lock()
_answers: dict[Any, dict[str, Any]] = {}
_answered = threading.Condition()


def send(message: dict[str, Any]) -> None:
    with _lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def update(session_id: str, body: dict[str, Any]) -> None:
    params = {"sessionId": session_id, "update": body}
    send({"jsonrpc": "2.0", "method": "session/update", "params": params})


def turn(session_id: str) -> None:
    update(session_id, {"sessionUpdate": "state_update", "state": "running"})
    for rid, options in ASKS.items():
        params = {
            "sessionId": session_id,
            "title": "Run `rm canary`?",
            "subject": {"type": "command", "command": "rm canary", "cwd": str(WORK)},
            "options": options,
        }
        method = "session/request_permission"
        send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        with _answered:
            while rid not in _answers:
                _answered.wait()
        outcome = (_answers[rid].get("result") or {}).get("outcome") or {}
        if outcome.get("outcome") == "selected":
            subprocess.run(["touch", str(WORK / f"PWNED-{rid}")], check=False)
    update(session_id, {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})


def handle(message: dict[str, Any]) -> None:
    method, rid = message.get("method"), message.get("id")
    if method is None:
        with _answered:
            _answers[rid] = message
            _answered.notify_all()
    elif method == "initialize":
        info = {"name": "deny-no-reject", "title": "Deny probe", "version": "1"}
        result = {"protocolVersion": 2, "info": info, "capabilities": {"session": {}}}
        send({"jsonrpc": "2.0", "id": rid, "result": result})
    elif method == "session/new":
        send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "d1"}})
    elif method == "session/prompt":
        send({"jsonrpc": "2.0", "id": rid, "result": {"messageId": "u1"}})
        session_id = (message.get("params") or {})["sessionId"]
        threading.Thread(target=turn, args=(session_id,), daemon=True).start()
    elif method == "session/close":
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
    elif rid is not None:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "nope"}})


def main() -> None:
    for line in sys.stdin:
        if line.strip():
            message = json.loads(line)
            with _lock, (WORK / "received.jsonl").open("a") as log:
                log.write(json.dumps(message) + "\n")
            handle(message)


if __name__ == "__main__":
    main()
