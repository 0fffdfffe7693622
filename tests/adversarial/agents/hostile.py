"""A hostile ACP v2 agent for the fail-closed tests, run as a real subprocess.

Usage: ``python hostile.py MODE WORKDIR``. Every message it receives is appended to
``WORKDIR/received.jsonl``. Whenever it asks for permission it *acts* on the answer the way a
careless agent would: if the answer selects an option whose kind (by this agent's own options)
starts with ``allow``, it creates ``WORKDIR/PWNED-<n>``. So a test proves that nothing ran by
showing that no ``PWNED-*`` file exists.

Modes:
  ask_after_cancel   runs until session/cancel, then asks (and goes idle after IDLE_DELAY s;
                     never, with IDLE_DELAY=never)
  ask_then_wait      asks at once; after the answer waits up to 5 s for session/cancel, then
                     goes idle (cancelled if a cancel came, else end_turn)
  misnamed_allow     asks with an allow_once option named "Reject" (and a reject_once "Allow")
  duplicate_ids      asks with two options sharing one id, of kinds allow_once and reject_once
  allow_always_only  asks with allow_always and reject_once only
  die_mid_turn       reports progress, writes to stderr and exits with code 3 mid-turn
  control_chars      like die_mid_turn, with ESC and U+202E in its title, version and stderr
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from _wire import send, serve, update

MODE = sys.argv[1]
WORK = Path(sys.argv[2])
RECEIVED = WORK / "received.jsonl"
IDLE_DELAY = os.environ.get("IDLE_DELAY", "0.3")

_answers: dict[int, dict[str, Any]] = {}
_answered = threading.Condition()
_cancelled = threading.Event()
_next_id = [100]
_asked = [0]


def idle(session_id: str, reason: str) -> None:
    update(session_id, {"sessionUpdate": "state_update", "state": "idle", "stopReason": reason})


OPTIONS: dict[str, list[dict[str, str]]] = {
    "misnamed_allow": [
        {"optionId": "a", "name": "Reject", "kind": "allow_once"},
        {"optionId": "r", "name": "Allow", "kind": "reject_once"},
    ],
    "duplicate_ids": [
        {"optionId": "x", "name": "Allow", "kind": "allow_once"},
        {"optionId": "x", "name": "Reject", "kind": "reject_once"},
    ],
    "allow_always_only": [
        {"optionId": "always", "name": "Always allow", "kind": "allow_always"},
        {"optionId": "no", "name": "Reject", "kind": "reject_once"},
    ],
}
DEFAULT_OPTIONS = [
    {"optionId": "ok", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "no", "name": "Reject", "kind": "reject_once"},
]


def ask_and_act(session_id: str, command: str) -> dict[str, Any]:
    """Ask to run ``command``; act on an allow answer (create a PWNED file)."""
    options = OPTIONS.get(MODE, DEFAULT_OPTIONS)
    rid = _next_id[0]
    _next_id[0] += 1
    _asked[0] += 1
    n = _asked[0]
    update(session_id, {"sessionUpdate": "state_update", "state": "requires_action"})
    send(
        {
            "jsonrpc": "2.0",
            "id": rid,
            "method": "session/request_permission",
            "params": {
                "sessionId": session_id,
                "title": f"Run `{command}`?",
                "subject": {"type": "command", "command": command, "cwd": str(WORK)},
                "options": options,
            },
        }
    )
    with _answered:
        while rid not in _answers:
            _answered.wait()
        answer = _answers.pop(rid)
    outcome = (answer.get("result") or {}).get("outcome") or {}
    chosen = outcome.get("optionId") if outcome.get("outcome") == "selected" else None
    kinds = [o["kind"] for o in options if o["optionId"] == chosen]
    if kinds and kinds[0].startswith("allow"):  # what a careless agent does: the first match
        subprocess.run(["touch", str(WORK / f"PWNED-{n}")], check=False)
    return answer


def turn(session_id: str) -> None:
    update(session_id, {"sessionUpdate": "state_update", "state": "running"})
    update(
        session_id,
        {
            "sessionUpdate": "agent_message_chunk",
            "messageId": "a1",
            "content": {"type": "text", "text": "working on it"},
        },
    )
    if MODE == "ask_after_cancel":
        _cancelled.wait(60)
        ask_and_act(session_id, "touch PWNED")
        if IDLE_DELAY != "never":
            time.sleep(float(IDLE_DELAY))
            idle(session_id, "cancelled")
        return
    if MODE == "ask_then_wait":
        ask_and_act(session_id, "touch PWNED")
        got = _cancelled.wait(5)
        idle(session_id, "cancelled" if got else "end_turn")
        return
    if MODE in ("die_mid_turn", "control_chars"):
        tail = "fatal: out of tokens\n"
        if MODE == "control_chars":
            tail = "fatal: \x1b[31mred\x1b[0m \u202eevil\u202c \x07bell\n"
        sys.stderr.write("working...\n" + tail)
        sys.stderr.flush()
        time.sleep(0.1)
        os._exit(3)
    if MODE in OPTIONS:
        ask_and_act(session_id, "touch PWNED")
        idle(session_id, "end_turn")
        return
    idle(session_id, "end_turn")


def handle(message: dict[str, Any]) -> None:
    method = message.get("method")
    rid = message.get("id")
    params = message.get("params") or {}
    if method is None:
        with _answered:
            _answers[rid] = message
            _answered.notify_all()
        return
    if method == "initialize":
        title = "Hostile agent"
        version = "6.6.6"
        if MODE == "control_chars":
            title = "Hostile \x1b[2J\x1b[31magent\u202e"
            version = "6\x1b]0;owned\x07.6"
        send(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {
                    "protocolVersion": 2,
                    "info": {"name": "hostile", "title": title, "version": version},
                    "capabilities": {"session": {}},
                },
            }
        )
    elif method == "session/new":
        send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "h1"}})
    elif method == "session/prompt":
        send({"jsonrpc": "2.0", "id": rid, "result": {"messageId": "u1"}})
        threading.Thread(target=turn, args=(params["sessionId"],), daemon=True).start()
    elif method == "session/cancel":
        _cancelled.set()
    elif method == "session/close":
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
    elif rid is not None:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "nope"}})


def main() -> None:
    serve(handle, RECEIVED)


if __name__ == "__main__":
    main()
