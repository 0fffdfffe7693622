"""A hostile ACP v2 agent that writes deep and huge JSON in the middle of a turn.

Usage: ``python deep_json_agent.py``. It answers ``initialize``, ``session/new`` and
``session/prompt`` like a well-behaved v2 agent. In its first turn it writes, between the
messages "before" and "after", the lines of `HOSTILE` (each refused by a careful client) and
one deep-but-acceptable message ("within-limit"), then goes idle with ``end_turn``. Every later
turn reports what the client answered to its deep request (id ``deep-req``) and goes idle.
"""

from __future__ import annotations

import json
import sys
from typing import Any

SESSION = "sess-deep"
DEEP_REQUEST_ID = "deep-req"


def deep_list(levels: int) -> str:
    return "[" * levels + "]" * levels


def deep_object(levels: int) -> str:
    return '{"a":' * levels + "1" + "}" * levels


def chunk(text: str, meta: str | None = None) -> str:
    """An agent_message_chunk session/update line; ``meta`` is raw JSON for its ``_meta``."""
    body = {"sessionUpdate": "agent_message_chunk", "messageId": "msg-a"}
    head = json.dumps(body)[:-1]
    if meta is not None:
        head += ',"_meta":' + meta
    content = json.dumps({"type": "text", "text": text})
    update = f'{head},"content":{content}}}'
    return (
        '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":'
        f'"{SESSION}","update":{update}}}}}'
    )


HOSTILE = [
    # the 2 KB line of the finding, as an array and as an object; and one so deep that no
    # recursion limit lets json parse it (a kernel's may be higher than 1000)
    deep_list(1000),
    deep_object(1000),
    deep_list(100_000),
    # a deep notification: JSON cannot parse it
    chunk("SHOULD-NOT-APPEAR-1", '{"d":' + deep_list(1000) + "}"),
    # parses, but deeper than the client accepts
    chunk("SHOULD-NOT-APPEAR-2", '{"d":' + deep_list(300) + "}"),
    # a huge integer and a NaN
    chunk("SHOULD-NOT-APPEAR-3", '{"n":' + "1" * 5000 + "}"),
    chunk("SHOULD-NOT-APPEAR-4", '{"n":NaN}'),
    # a deep request: the client must answer it -32700, with its id
    json.dumps({"jsonrpc": "2.0", "id": DEEP_REQUEST_ID, "method": "session/request_permission"})[
        :-1
    ]
    + ',"params":'
    + deep_list(1000)
    + "}",
]


def send_line(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def send(message: dict[str, Any]) -> None:
    send_line(json.dumps(message))


def update(body: dict[str, Any]) -> None:
    send(
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": SESSION, "update": body},
        }
    )


def text(words: str, message_id: str = "msg-a") -> None:
    update(
        {
            "sessionUpdate": "agent_message_chunk",
            "messageId": message_id,
            "content": {"type": "text", "text": words},
        }
    )


def answer(rid: Any, method: str) -> Any:
    if method == "initialize":
        return {
            "protocolVersion": 2,
            "info": {"name": "deep-json-agent", "title": "deep JSON agent", "version": "1.0"},
            "capabilities": {"session": {}},
            "authMethods": [],
        }
    if method == "session/new":
        return {"sessionId": SESSION}
    if method == "session/prompt":
        return {"messageId": f"user-{rid}"}
    return None


def main() -> None:
    turns = 0
    answers: list[dict[str, Any]] = []
    while line := sys.stdin.readline():
        message = json.loads(line)
        method, rid = message.get("method"), message.get("id")
        if method is None:
            answers.append(message)  # an answer to one of our requests (or an error)
            continue
        if rid is None:
            continue  # session/cancel and the like: this agent's turns are instant
        result = answer(rid, method)
        if result is None:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": method}})
            continue
        send({"jsonrpc": "2.0", "id": rid, "result": result})
        if method != "session/prompt":
            continue
        turns += 1
        update({"sessionUpdate": "state_update", "state": "running"})
        if turns == 1:
            text("before ")
            for hostile in HOSTILE:
                send_line(hostile)
            send_line(chunk("within-limit ", '{"d":' + deep_list(200) + "}"))
            text("after")
        else:
            seen = [
                f"{a.get('id')}:{(a.get('error') or {}).get('code')}"
                for a in answers
                if a.get("id") == DEEP_REQUEST_ID
            ]
            text(f"turn {turns}; answers to {DEEP_REQUEST_ID}: {seen}", f"msg-{turns}")
        update({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})


if __name__ == "__main__":
    main()
