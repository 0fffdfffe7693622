"""A scriptable hostile ACP v2 agent for tests/adversarial/test_probe.py (a real subprocess).

Usage: ``python probe_agent.py MODE WORKDIR``. Every message received is appended to
``WORKDIR/received.jsonl`` (with the agent's monotonic receive time in ``_t``); every permission
request it sends is appended to ``WORKDIR/sent.jsonl`` (with ``_t`` and ``_after_cancel``: whether
it was written after this agent had read ``session/cancel``).

Modes (what the agent does on ``session/prompt``):
  race_cancel    asks every 2 ms (ids 1000, 1001, ...; at most IN_FLIGHT unanswered) until it
                 has read session/cancel, then asks 20 more times, waits for every answer,
                 then goes idle ``cancelled``
  withdraw       asks (id 500), withdraws it ($/cancel_request), at once asks again under id 500
                 (a different command), then waits for both answers and goes idle
  other_session  asks for the *other* session (the second session/new), then idles
  after_idle     goes idle ``end_turn``, then asks at once
  big_options    asks once with 100,000 options, then idles
  ask_n          asks ASK_N times (default 2), one after the other, each after the previous
                 answer; on an allow answer it creates WORKDIR/PWNED-<id>; then waits up to
                 5 s for session/cancel and idles. ASK_COMMAND is the command asked for (a
                 template with {id}; \\uXXXX escapes are decoded, so a lone surrogate can be
                 sent); ASK_EXTRA_OPTIONS adds that many reject_once options
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

MODE = sys.argv[1]
WORK = Path(sys.argv[2])
_lock = threading.Lock()
_cancelled = threading.Event()
IN_FLIGHT = 20  # race_cancel: requests unanswered at once, at most
_answers: dict[Any, list[dict[str, Any]]] = {}
_answered = threading.Condition()
_sessions: list[str] = []
OPTIONS = [
    {"optionId": "ok", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "no", "name": "Reject", "kind": "reject_once"},
]


def send(message: dict[str, Any]) -> None:
    with _lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def update(session_id: str, body: dict[str, Any]) -> None:
    send(
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": session_id, "update": body},
        }
    )


def idle(session_id: str, reason: str) -> None:
    update(session_id, {"sessionUpdate": "state_update", "state": "idle", "stopReason": reason})


def ask(session_id: str, rid: Any, command: str, options: list[dict[str, str]] = OPTIONS) -> None:
    message = {
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
    after = _cancelled.is_set()
    send(message)
    with _lock, (WORK / "sent.jsonl").open("a") as log:
        log.write(json.dumps({"id": rid, "_t": time.monotonic(), "_after_cancel": after}) + "\n")


def wait_answers(rid: Any, count: int, timeout: float = 10) -> None:
    end = time.monotonic() + timeout
    with _answered:
        while len(_answers.get(rid, [])) < count and time.monotonic() < end:
            _answered.wait(0.1)


def act(rid: Any) -> None:
    """What a careless agent does: run the command when the answer selects an allow option."""
    wait_answers(rid, 1, timeout=3600)
    answer = (_answers.get(rid) or [{}])[0].get("result") or {}
    outcome = answer.get("outcome") or {}
    if outcome.get("outcome") == "selected" and outcome.get("optionId") == "ok":
        (WORK / f"PWNED-{rid}").touch()


def turn(session_id: str) -> None:
    update(session_id, {"sessionUpdate": "state_update", "state": "running"})
    if MODE == "ask_n":
        for n in range(int(os.environ.get("ASK_N", "2"))):
            command = os.environ.get("ASK_COMMAND", "touch PWNED-{id}").format(id=100 + n)
            command = command.encode("ascii", "backslashreplace").decode("unicode_escape")
            extra = [
                {"optionId": f"o{i}", "name": f"Option {i}", "kind": "reject_once"}
                for i in range(int(os.environ.get("ASK_EXTRA_OPTIONS", "0")))
            ]
            ask(session_id, 100 + n, command, OPTIONS + extra)
            act(100 + n)
        got = _cancelled.wait(5)
        idle(session_id, "cancelled" if got else "end_turn")
    if MODE == "race_cancel":
        rid = 1000
        extra = 0
        # Until 20 asks after reading the cancel, with at most IN_FLIGHT unanswered: requests
        # are always in flight when the cancel comes, but the client never has a backlog of
        # thousands (on a loaded machine that held its cancel back until the flood was over).
        deadline = time.monotonic() + 120
        while extra < 20 and time.monotonic() < deadline:
            if rid - IN_FLIGHT >= 1000:
                wait_answers(rid - IN_FLIGHT, 1, timeout=60)
            ask(session_id, rid, f"touch PWNED-{rid}")
            rid += 1
            time.sleep(0.002)
            if _cancelled.is_set():
                extra += 1
        for asked in range(1000, rid):  # every request answered before the turn ends
            wait_answers(asked, 1, timeout=60)
        idle(session_id, "cancelled")
    elif MODE == "withdraw":
        ask(session_id, 500, "touch PWNED-first")
        time.sleep(0.2)
        send({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 500}})
        ask(session_id, 500, "touch PWNED-second")
        wait_answers(500, 2)
        idle(session_id, "end_turn")
    elif MODE == "other_session":
        ask(_sessions[-1], 700, "touch PWNED-other")
        wait_answers(700, 1)
        idle(session_id, "end_turn")
    elif MODE == "after_idle":
        idle(session_id, "end_turn")
        ask(session_id, 800, "touch PWNED-late")
    elif MODE == "big_options":
        options = [
            {"optionId": f"o{i}", "name": f"Option {i}", "kind": "reject_once"}
            for i in range(100_000)
        ]
        ask(session_id, 900, "touch PWNED-big", options + OPTIONS)
        wait_answers(900, 1, timeout=60)
        idle(session_id, "end_turn")


def handle(message: dict[str, Any]) -> None:
    method = message.get("method")
    rid = message.get("id")
    params = message.get("params") or {}
    if method is None:
        with _answered:
            _answers.setdefault(rid, []).append(message)
            _answered.notify_all()
    elif method == "initialize":
        send(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {
                    "protocolVersion": 2,
                    "info": {"name": "probe", "title": "Probe", "version": "1"},
                    "capabilities": {"session": {}},
                },
            }
        )
    elif method == "session/new":
        _sessions.append(f"p{len(_sessions) + 1}")
        send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": _sessions[-1]}})
    elif method == "session/prompt":
        send({"jsonrpc": "2.0", "id": rid, "result": {"messageId": "u1"}})
        threading.Thread(target=turn, args=(params["sessionId"],), daemon=True).start()
    elif method == "session/cancel":
        _cancelled.set()
    elif rid is not None:
        send({"jsonrpc": "2.0", "id": rid, "result": {}})


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        with _lock, (WORK / "received.jsonl").open("a") as log:
            log.write(json.dumps({**message, "_t": time.monotonic()}) + "\n")
        handle(message)


if __name__ == "__main__":
    main()
