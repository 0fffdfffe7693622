"""A v2 ACP agent whose terminals behave as claude-agent-acp 0.101.0's do (a real subprocess;
issue 25, findings 1 and 2). The update sequence is the one recorded from that agent offline:

* it shows a terminal for the command before it asks: ``terminal_update {terminalId}``, the
  ``tool_call_update`` (``pending``, the terminal as content), ``terminal_update {command}``,
  then ``state_update requires_action`` and ``session/request_permission`` (Yes / No);
* allowed: ``state_update running``; the command's output comes only when it ends, as one
  ``output`` snapshot, then ``exitStatus {exitCode: 0}`` and ``completed``;
* refused: its tool result as the output snapshot ("User refused permission to run tool"),
  ``exitStatus {}`` (empty), ``failed``;
* ``session/cancel`` while it runs: its tool result as the output snapshot, ``exitStatus {}``,
  ``cancelled``, and the turn ends ``cancelled``.

Usage: ``python snapshot_agent.py WORKDIR [SECONDS]``: an allowed command "runs" SECONDS
(default 6) and prints ``one`` and ``two``. Every message received goes to
``WORKDIR/received.jsonl``.
"""

from __future__ import annotations

import base64
import sys
import threading
from pathlib import Path
from typing import Any

from _wire import send, serve, update

WORK = Path(sys.argv[1])
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 6.0
OPTIONS = [
    {"optionId": "allow", "name": "Yes", "kind": "allow_once"},
    {"optionId": "reject", "name": "No", "kind": "reject_once"},
]
REFUSED = "User refused permission to run tool"
CUT = "The user doesn't want to proceed with this tool use. The tool use was rejected."

_answers: dict[Any, dict[str, Any]] = {}
_answered = threading.Condition()
_cancelled = threading.Event()
_turns = [0]


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _terminal(sid: str, tid: str, **fields: Any) -> None:
    update(sid, {"sessionUpdate": "terminal_update", "terminalId": tid, **fields})


def _call(sid: str, tid: str, **fields: Any) -> None:
    update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": tid, **fields})


def _state(sid: str, state: str, **fields: Any) -> None:
    update(sid, {"sessionUpdate": "state_update", "state": state, **fields})


def _ask(sid: str, tid: str, command: str) -> bool:
    """Ask about ``command``; True when an allow option was selected."""
    _state(sid, "requires_action")
    call = {"toolCallId": tid, "title": command, "kind": "execute"}
    call["rawInput"] = {"command": command}
    params = {
        "sessionId": sid,
        "title": command,
        "subject": {"type": "tool_call", "toolCall": call},
        "options": OPTIONS,
    }
    send({"jsonrpc": "2.0", "id": tid, "method": "session/request_permission", "params": params})
    with _answered:
        while tid not in _answers:
            _answered.wait()
    outcome = (_answers[tid].get("result") or {}).get("outcome") or {}
    return outcome.get("outcome") == "selected" and outcome.get("optionId") == "allow"


def _turn(sid: str, command: str) -> None:
    _turns[0] += 1
    tid = f"toolu_{_turns[0]}"
    _state(sid, "running")
    _terminal(sid, tid)
    content = [{"type": "terminal", "terminalId": tid}]
    _call(sid, tid, title="Terminal", kind="execute", status="pending", content=content)
    _terminal(sid, tid, command=command)
    _call(sid, tid, title=command, rawInput={"command": command})
    if not _ask(sid, tid, command):
        _state(sid, "running")
        _terminal(sid, tid, output={"data": _b64(REFUSED)})
        _terminal(sid, tid, exitStatus={})
        _call(sid, tid, status="failed")
        _state(sid, "idle", stopReason="end_turn")
        return
    _state(sid, "running")
    if _cancelled.wait(SECONDS):
        _terminal(sid, tid, output={"data": _b64(CUT)})
        _terminal(sid, tid, exitStatus={})
        _call(sid, tid, status="cancelled")
        _state(sid, "idle", stopReason="cancelled")
        return
    _terminal(sid, tid, output={"data": _b64("one\ntwo")})
    _terminal(sid, tid, exitStatus={"exitCode": 0})
    _call(sid, tid, status="completed")
    _state(sid, "idle", stopReason="end_turn")


def handle(message: dict[str, Any]) -> None:
    method, rid = message.get("method"), message.get("id")
    params = message.get("params") or {}
    if method is None:
        with _answered:
            _answers[rid] = message
            _answered.notify_all()
    elif method == "initialize":
        info = {"name": "snapshot-agent", "title": "Snapshot terminals", "version": "1.0.0"}
        result = {"protocolVersion": 2, "info": info, "capabilities": {"session": {}}}
        send({"jsonrpc": "2.0", "id": rid, "result": result})
    elif method == "session/new":
        send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "s1"}})
    elif method == "session/prompt":
        _cancelled.clear()
        texts = [b.get("text") for b in params.get("prompt") or [] if b.get("type") == "text"]
        words = str(texts[0]) if texts else ""
        send({"jsonrpc": "2.0", "id": rid, "result": {"messageId": f"u{_turns[0] + 1}"}})
        command = words.strip() or "true"
        threading.Thread(target=_turn, args=(params["sessionId"], command), daemon=True).start()
    elif method == "session/cancel":
        _cancelled.set()
    elif rid is not None:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "nope"}})


if __name__ == "__main__":
    serve(handle, WORK / "received.jsonl")
