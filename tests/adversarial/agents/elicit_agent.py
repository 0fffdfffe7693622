"""A scriptable ACP v2 agent that asks questions (``elicitation/create``), run as a subprocess.

Usage: ``python elicit_agent.py MODE WORKDIR``. Every message it receives is appended to
``WORKDIR/received.jsonl``. The question is ``$ELICIT_PARAMS`` (JSON, without ``sessionId``;
default: a form with every field type, see ``EVERY_FIELD``). After the answer it says
``answer: <the JSON result>`` in an agent message, so a test (or a cell) sees what reached it.

Modes:
  ask               asks at once, quotes the answer, goes idle (cancelled if a session/cancel
                    came, else end_turn); with WAIT_CANCEL=1, after a ``cancel`` answer it
                    waits up to 5 s for session/cancel first
  ask_twice         asks two questions in a row, then as ``ask``
  ask_after_cancel  runs until session/cancel, then asks, then goes idle (cancelled)
  ask_after_idle    goes idle first, then asks (between turns)
  url_complete      asks with ``$ELICIT_PARAMS`` and, after an accept, sends elicitation/complete
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from _wire import send, serve, update

# Importable (tests read EVERY_FIELD): the arguments only matter when run as a script.
MODE = sys.argv[1] if __name__ == "__main__" else ""
WORK = Path(sys.argv[2] if __name__ == "__main__" else ".")
RECEIVED = WORK / "received.jsonl"

EVERY_FIELD: dict[str, Any] = {
    "mode": "form",
    "message": "Tell me about the project",
    "requestedSchema": {
        "type": "object",
        "title": "Project",
        "properties": {
            "name": {"type": "string", "title": "Name", "minLength": 2, "maxLength": 20},
            "email": {"type": "string", "format": "email", "title": "Email"},
            "homepage": {"type": "string", "format": "uri"},
            "start": {"type": "string", "format": "date"},
            "meeting": {"type": "string", "format": "date-time"},
            "ratio": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.5},
            "count": {"type": "integer", "minimum": 1, "maximum": 10, "default": 3},
            "public": {"type": "boolean", "default": True, "title": "Public?"},
            "color": {"type": "string", "enum": ["red", "green"], "default": "green"},
            "size": {
                "type": "string",
                "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}],
            },
            "tags": {
                "type": "array",
                "items": {"type": "string", "enum": ["a", "b", "c"]},
                "maxItems": 2,
            },
            "langs": {
                "type": "array",
                "items": {
                    "anyOf": [
                        {"const": "py", "title": "Python"},
                        {"const": "ts", "title": "TypeScript"},
                    ]
                },
                "default": ["py"],
            },
            "future": {"type": "_geo", "precision": 3},
        },
        "required": ["name", "count", "size"],
    },
}

_answers: dict[int, dict[str, Any]] = {}
_answered = threading.Condition()
_cancelled = threading.Event()
_next_id = [100]


def say(session_id: str, text: str) -> None:
    update(
        session_id,
        {
            "sessionUpdate": "agent_message_chunk",
            "messageId": "a1",
            "content": {"type": "text", "text": text},
        },
    )


def idle(session_id: str, reason: str) -> None:
    update(session_id, {"sessionUpdate": "state_update", "state": "idle", "stopReason": reason})


def ask(session_id: str) -> dict[str, Any]:
    params = json.loads(os.environ["ELICIT_PARAMS"]) if "ELICIT_PARAMS" in os.environ else None
    params = {**(params or EVERY_FIELD), "sessionId": session_id}
    rid = _next_id[0]
    _next_id[0] += 1
    send({"jsonrpc": "2.0", "id": rid, "method": "elicitation/create", "params": params})
    with _answered:
        while rid not in _answers:
            _answered.wait()
        answer = _answers.pop(rid)
    say(session_id, "answer: " + json.dumps(answer.get("result", answer.get("error"))))
    if MODE == "url_complete" and (answer.get("result") or {}).get("action") == "accept":
        send(
            {
                "jsonrpc": "2.0",
                "method": "elicitation/complete",
                "params": {"elicitationId": params["elicitationId"]},
            }
        )
    return answer


def turn(session_id: str) -> None:
    update(session_id, {"sessionUpdate": "state_update", "state": "running"})
    say(session_id, "thinking. ")
    if MODE == "ask_after_cancel":
        _cancelled.wait(60)
        ask(session_id)
        idle(session_id, "cancelled")
        return
    if MODE == "ask_after_idle":
        idle(session_id, "end_turn")
        time.sleep(0.2)
        ask(session_id)
        return
    answer = ask(session_id)
    if MODE == "ask_twice":
        ask(session_id)
    if os.environ.get("WAIT_CANCEL") and (answer.get("result") or {}).get("action") == "cancel":
        _cancelled.wait(5)  # as a real agent does after a cancelled question: wait for the cancel
    idle(session_id, "cancelled" if _cancelled.is_set() else "end_turn")


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
        send(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {
                    "protocolVersion": 2,
                    "info": {"name": "elicit", "title": "Question agent", "version": "1.0"},
                    "capabilities": {"session": {}},
                },
            }
        )
    elif method == "session/new":
        send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "e1"}})
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
