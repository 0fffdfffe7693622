"""An ACP agent that takes rich prompts, for the ``%%acp --with`` tests (a real subprocess).

Usage: ``python context_agent.py WORKDIR [v1] [embedded] [image]``: it speaks v2 (or v1 with
``v1``) and advertises the prompt capabilities named (embedded context, images). Every message
it receives is appended to ``WORKDIR/received.jsonl``; on ``session/prompt`` it says how many
blocks of each type it got, then goes idle ``end_turn``.
"""

from __future__ import annotations

import collections
import sys
import threading
from pathlib import Path
from typing import Any

from _wire import send, serve, update

WORK = Path(sys.argv[1])
FLAGS = set(sys.argv[2:])
V1 = "v1" in FLAGS


def _say(session_id: str, text: str) -> None:
    body = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
    if not V1:
        body["messageId"] = "a1"
    update(session_id, body)


def _turn(rid: Any, session_id: str, prompt: list[Any]) -> None:
    counts = collections.Counter(str(block.get("type")) for block in prompt)
    said = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()))
    if V1:
        _say(session_id, f"got {said}")
        send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})
        return
    update(session_id, {"sessionUpdate": "state_update", "state": "running"})
    _say(session_id, f"got {said}")
    update(session_id, {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})


def handle(message: dict[str, Any]) -> None:
    method, rid = message.get("method"), message.get("id")
    params = message.get("params") or {}
    if method == "initialize":
        info = {"name": "context-agent", "title": "Context probe", "version": "1"}
        if V1:
            prompt_v1 = {"embeddedContext": "embedded" in FLAGS, "image": "image" in FLAGS}
            caps = {"promptCapabilities": prompt_v1}
            result = {"protocolVersion": 1, "agentInfo": info, "agentCapabilities": caps}
        else:
            prompt_v2 = {k: {} for k, f in (("embeddedContext", "embedded"), ("image", "image"))
                         if f in FLAGS}  # fmt: skip
            caps = {"session": {"prompt": prompt_v2}}
            result = {"protocolVersion": 2, "info": info, "capabilities": caps}
        send({"jsonrpc": "2.0", "id": rid, "result": result})
    elif method == "session/new":
        send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "c1"}})
    elif method == "session/prompt":
        if not V1:
            send({"jsonrpc": "2.0", "id": rid, "result": {"messageId": "u1"}})
        args = (rid, params["sessionId"], params.get("prompt") or [])
        threading.Thread(target=_turn, args=args, daemon=True).start()
    elif method == "session/close":
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
    elif rid is not None:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "nope"}})


if __name__ == "__main__":
    serve(handle, WORK / "received.jsonl")
