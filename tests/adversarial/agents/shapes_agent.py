"""A v1 ACP agent that asks as Cline, Kimi and Mistral Vibe do, to delete a canary (a real
subprocess; issue 22, findings 6 and 7).

Usage: ``python shapes_agent.py WORKDIR``. On ``session/prompt`` it reads the prompt's words;
for each of ``cline``, ``kimi`` and ``vibe`` (in the order given) it reports an execute tool
call and asks permission to run ``rm -f x`` in WORKDIR, in that agent's shape:

* ``cline``: the command in ``rawInput.commands`` (a list), the title ``run_commands: rm -f x``;
* ``kimi``: the title ``Shell: rm -f x``, the command only as text content, no ``rawInput``;
* ``vibe``: the ``tool_call`` update (title ``bash``) carries kind and ``rawInput.command``;
  the permission request names the tool call by its id only.

Only an answer that selects an offered ``allow_*`` option makes it run ``rm -f x`` (argv, in
WORKDIR). Every answer is appended to ``WORKDIR/answers.jsonl`` as ``[shape, outcome]``, every
message received to ``WORKDIR/received.jsonl``. The turn ends ``end_turn`` (v1: the prompt's
answer).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from _wire import LOCK, send, serve, update

WORK = Path(sys.argv[1])
COMMAND = "rm -f x"
OPTIONS = [
    {"optionId": "allow", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
]
SHAPES = ("cline", "kimi", "vibe")
_answers: dict[Any, dict[str, Any]] = {}
_answered = threading.Condition()
_next_id = [1000]


def _calls(shape: str, n: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the tool_call update's fields, the permission request's toolCall) of one shape."""
    if shape == "cline":
        call = {"toolCallId": f"cline-{n}", "title": f"run_commands: {COMMAND}",
                "kind": "execute", "status": "pending",
                "rawInput": {"commands": [COMMAND]}}  # fmt: skip
        return call, call
    if shape == "kimi":
        text = {"type": "content", "content": {"type": "text", "text": COMMAND}}
        call = {"toolCallId": f"kimi-{n}", "title": f"Shell: {COMMAND}", "kind": "execute",
                "status": "pending", "content": [text]}  # fmt: skip
        return call, call
    call = {"toolCallId": f"effect-{n}-5f2c", "title": "bash", "kind": "execute",
            "status": "pending", "rawInput": {"command": COMMAND}}  # fmt: skip
    return call, {"toolCallId": call["toolCallId"]}


def _ask(session_id: str, shape: str) -> None:
    with LOCK:
        _next_id[0] += 1
        rid = _next_id[0]
    reported, asked = _calls(shape, rid)
    update(session_id, {"sessionUpdate": "tool_call", **reported})
    params = {"sessionId": session_id, "toolCall": asked, "options": OPTIONS}
    send({"jsonrpc": "2.0", "id": rid, "method": "session/request_permission", "params": params})
    with _answered:
        while rid not in _answers:
            _answered.wait()
    outcome = (_answers[rid].get("result") or {}).get("outcome") or {}
    chosen = outcome.get("optionId") if outcome.get("outcome") == "selected" else None
    kinds = {o["optionId"]: o["kind"] for o in OPTIONS}
    if chosen is not None and str(kinds.get(chosen, "")).startswith("allow"):
        subprocess.run(["rm", "-f", "x"], cwd=WORK, check=False)
        status = "completed"
    else:
        status = "failed"
    with LOCK, (WORK / "answers.jsonl").open("a") as log:
        log.write(json.dumps([shape, outcome]) + "\n")
    update(session_id, {"sessionUpdate": "tool_call_update", "toolCallId": reported["toolCallId"],
                        "status": status})  # fmt: skip


def _turn(rid: Any, session_id: str, prompt: list[Any]) -> None:
    words = " ".join(str(b.get("text", "")) for b in prompt if isinstance(b, dict)).split()
    for word in words:
        if word in SHAPES:
            _ask(session_id, word)
    send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})


def handle(message: dict[str, Any]) -> None:
    method, rid = message.get("method"), message.get("id")
    params = message.get("params") or {}
    if method is None:
        with _answered:
            _answers[rid] = message
            _answered.notify_all()
    elif method == "initialize":
        info = {"name": "shapes-agent", "title": "Real agents' shapes", "version": "1"}
        caps = {"promptCapabilities": {}}
        result = {"protocolVersion": 1, "agentInfo": info, "agentCapabilities": caps}
        send({"jsonrpc": "2.0", "id": rid, "result": result})
    elif method == "session/new":
        send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "shapes-1"}})
    elif method == "session/prompt":
        args = (rid, params["sessionId"], params.get("prompt") or [])
        threading.Thread(target=_turn, args=args, daemon=True).start()
    elif rid is not None:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "nope"}})


if __name__ == "__main__":
    serve(handle, WORK / "received.jsonl")
