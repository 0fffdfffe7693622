"""An ACP v2 agent whose every turn makes many tool calls, run as a real subprocess (the
kernel tests of a heavy turn, ``bench/bench_toolcalls.py``).

Usage: ``python toolcalls_agent.py CALLS``. Each prompt reports CALLS tool calls, one after
another, as a busy agent does: each is announced (title, kind, ``pending``, its input), goes
``in_progress``, then ``completed`` with its content: text for most, a diff for every tenth
(``edit``), a location for reads. Then one message, and idle. Nothing asks for permission and
no terminal is started: the turn's cost is the tool calls' own.
"""

from __future__ import annotations

import json
import sys
from typing import Any

OUT = sys.stdout


def send(message: dict[str, Any]) -> None:
    OUT.write(json.dumps(message) + "\n")


def update(session_id: str, body: dict[str, Any]) -> None:
    send(
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": session_id, "update": body},
        }
    )


KINDS = ("read", "search", "fetch", "think")


def call_updates(n: int) -> list[dict[str, Any]]:
    """The three updates of tool call ``n`` (the unit tests of the view replay them too)."""
    call_id = f"call-{n}"
    edit = n % 10 == 9
    kind = "edit" if edit else KINDS[n % len(KINDS)]
    path = f"src/module_{n}.py"
    announced = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": call_id,
        "title": f"{'Edit' if edit else 'Read'} {path}",
        "kind": kind,
        "status": "pending",
        "rawInput": {"path": path, "n": n},
        "locations": [{"path": path, "line": 1 + n % 50}],
    }
    running = {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "in_progress"}
    if edit:
        patch = (
            f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
            f"@@ -1,2 +1,2 @@\n-value = {n}\n+value = {n + 1}\n context\n"
        )
        content: dict[str, Any] = {
            "type": "diff",
            "changes": [{"operation": "modify", "path": path}],
            "patch": {"format": "git_patch", "text": patch},
        }
    else:
        text = f"line {n}: the quick brown fox jumps over the lazy dog"
        content = {"type": "content", "content": {"type": "text", "text": text}}
    done = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": call_id,
        "status": "completed",
        "content": [content],
        "rawOutput": {"ok": True, "bytes": 40 + n},
    }
    return [announced, running, done]


def turn(session_id: str, prompt_n: int, calls: int) -> None:
    update(
        session_id,
        {
            "sessionUpdate": "user_message",
            "messageId": f"u{prompt_n}",
            "content": [{"type": "text", "text": "go"}],
        },
    )
    update(session_id, {"sessionUpdate": "state_update", "state": "running"})
    for n in range(calls):
        for body in call_updates(n):
            update(session_id, body)
    update(
        session_id,
        {
            "sessionUpdate": "agent_message",
            "messageId": f"a{prompt_n}",
            "content": [{"type": "text", "text": f"made {calls} tool calls"}],
        },
    )
    update(session_id, {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})
    OUT.flush()


def main() -> None:
    calls = int(sys.argv[1])
    sessions = prompts = 0
    for raw in sys.stdin:
        message = json.loads(raw)
        method, rid, params = message.get("method"), message.get("id"), message.get("params") or {}
        if rid is None:
            continue
        if method == "initialize":
            result: Any = {
                "protocolVersion": 2,
                "info": {"name": "toolcalls", "title": "tool calls agent", "version": "1"},
                "capabilities": {"session": {}},
                "authMethods": [],
            }
        elif method == "session/new":
            sessions += 1
            result = {"sessionId": f"s{sessions}"}
        elif method == "session/prompt":
            prompts += 1
            send({"jsonrpc": "2.0", "id": rid, "result": {"messageId": f"u{prompts}"}})
            turn(params["sessionId"], prompts, calls)
            continue
        elif method == "session/close":
            result = {}
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": str(method)}})
            OUT.flush()
            continue
        send({"jsonrpc": "2.0", "id": rid, "result": result})
        OUT.flush()


if __name__ == "__main__":
    main()
