"""An ACP v2 agent whose work goes on after the turn's idle, run as a real subprocess.

Usage: ``python background_agent.py MODE WORKDIR``. Every message it receives is appended to
``WORKDIR/received.jsonl``.

On ``session/prompt`` it starts terminal ``t1`` (``capabilities.cancel``, a 100x30 size) or,
in mode ``tool_call``, tool call ``c1`` (``capabilities.cancel``, in progress); writes one line;
goes idle (``end_turn``) with ``background`` naming the item; and then keeps working: a
terminal gets an output chunk ``tick N`` every 0.2 s (at most 300).

Modes:
  terminal   ``terminal/cancel`` answers ``{}``, the chunks stop, the terminal exits with
             SIGTERM (``exitStatus``), then an idle ``state_update`` reports ``background: []``
  refuse     ``terminal/cancel`` is answered with an error (-32603 "cannot stop t1 now");
             the terminal runs on
  tool_call  ``tool_call/cancel`` answers ``{}``, the call becomes ``failed``, then
             ``background: []``
  carry      as ``terminal``, and a later prompt starts nothing new: it answers a line and
             goes idle with ``t1`` still in ``background`` (claude-agent-acp's shape: a
             command of the first prompt runs on through the next turns)
"""

from __future__ import annotations

import base64
import sys
import threading
from pathlib import Path
from typing import Any

from _wire import send, serve, update

MODE = sys.argv[1]
WORK = Path(sys.argv[2])
RECEIVED = WORK / "received.jsonl"

_stopped = threading.Event()
_started = threading.Event()


def chunk(session_id: str, text: str) -> None:
    data = base64.b64encode(text.encode()).decode()
    update(
        session_id,
        {"sessionUpdate": "terminal_output_chunk", "terminalId": "t1", "data": data},
    )


def later_turn(session_id: str) -> None:
    update(session_id, {"sessionUpdate": "state_update", "state": "running"})
    update(
        session_id,
        {
            "sessionUpdate": "agent_message_chunk",
            "messageId": "a2",
            "content": {"type": "text", "text": "it is still running"},
        },
    )
    item = {"type": "terminal", "terminalId": "t1"}
    update(
        session_id,
        {
            "sessionUpdate": "state_update",
            "state": "idle",
            "stopReason": "end_turn",
            "background": [item],
        },
    )


def turn(session_id: str) -> None:
    if MODE == "carry" and _started.is_set():
        later_turn(session_id)
        return
    _started.set()
    update(session_id, {"sessionUpdate": "state_update", "state": "running"})
    update(
        session_id,
        {
            "sessionUpdate": "agent_message_chunk",
            "messageId": "a1",
            "content": {"type": "text", "text": "started it in the background"},
        },
    )
    if MODE == "tool_call":
        update(
            session_id,
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "c1",
                "title": "Index the repository",
                "kind": "search",
                "status": "in_progress",
                "capabilities": {"cancel": {}},
            },
        )
        item = {"type": "tool_call", "toolCallId": "c1"}
    else:
        update(
            session_id,
            {
                "sessionUpdate": "terminal_update",
                "terminalId": "t1",
                "command": "tail -f build.log",
                "cwd": str(WORK),
                "size": {"cols": 100, "rows": 30},
                "capabilities": {"cancel": {}},
            },
        )
        chunk(session_id, "started\r\n")
        item = {"type": "terminal", "terminalId": "t1"}
    update(
        session_id,
        {
            "sessionUpdate": "state_update",
            "state": "idle",
            "stopReason": "end_turn",
            "background": [item],
        },
    )
    if MODE == "tool_call":
        return
    for n in range(300):
        if _stopped.wait(0.2):
            return
        chunk(session_id, f"tick {n}\r\n")


def stop(session_id: str) -> None:
    if MODE == "tool_call":
        update(
            session_id,
            {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "failed"},
        )
    else:
        update(
            session_id,
            {
                "sessionUpdate": "terminal_update",
                "terminalId": "t1",
                "exitStatus": {"signal": "SIGTERM"},
            },
        )
    update(session_id, {"sessionUpdate": "state_update", "state": "idle", "background": []})


def handle(message: dict[str, Any]) -> None:
    method = message.get("method")
    rid = message.get("id")
    params = message.get("params") or {}
    if method == "initialize":
        send(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {
                    "protocolVersion": 2,
                    "info": {"name": "background", "version": "1.0.0"},
                    "capabilities": {"session": {}},
                },
            }
        )
    elif method == "session/new":
        send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "b1"}})
    elif method == "session/prompt":
        send({"jsonrpc": "2.0", "id": rid, "result": {"messageId": "u1"}})
        threading.Thread(target=turn, args=(params["sessionId"],), daemon=True).start()
    elif method in ("terminal/cancel", "tool_call/cancel"):
        if MODE == "refuse":
            error = {"code": -32603, "message": "cannot stop t1 now"}
            send({"jsonrpc": "2.0", "id": rid, "error": error})
            return
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
        _stopped.set()
        stop(params["sessionId"])
    elif method == "session/close":
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
    elif rid is not None:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "nope"}})


def main() -> None:
    serve(handle, RECEIVED)


if __name__ == "__main__":
    main()
