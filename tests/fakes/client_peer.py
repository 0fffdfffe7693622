"""A scripted fake agent for client tests, run as a real subprocess.

Usage: python client_peer.py MODE LOGFILE. Every message it receives is appended to LOGFILE
as one JSON line, so tests can assert what our client sent.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

MODE = sys.argv[1]
LOG = sys.argv[2]
lock = threading.Lock()
next_id = [100]
answers: dict[int, dict] = {}
answered = threading.Condition()


def send(message: dict) -> None:
    with lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def update(session_id: str, body: dict) -> None:
    send(
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": session_id, "update": body},
        }
    )


def ask(params: dict) -> dict:
    rid = next_id[0]
    next_id[0] += 1
    send({"jsonrpc": "2.0", "id": rid, "method": "session/request_permission", "params": params})
    with answered:
        while rid not in answers:
            answered.wait()
        return answers.pop(rid)


OPTIONS = [
    {"optionId": "ok", "name": "Allow", "kind": "allow_once"},
    {"optionId": "no", "name": "Reject", "kind": "reject_once"},
]


def turn(session_id: str, prompt: list) -> None:
    update(session_id, {"sessionUpdate": "user_message", "messageId": "u1", "content": prompt})
    update(session_id, {"sessionUpdate": "state_update", "state": "running"})
    update(
        session_id,
        {
            "sessionUpdate": "agent_message_chunk",
            "messageId": "a1",
            "content": {"type": "text", "text": "working"},
        },
    )
    if MODE == "crash":
        sys.stderr.write("fatal: the fake agent fell over\n")
        sys.stderr.flush()
        time.sleep(0.05)
        os._exit(7)
    if MODE == "custom":
        update(session_id, {"sessionUpdate": "_acme_progress", "percent": 40, "extra": {"a": [1]}})
        update(
            session_id, {"sessionUpdate": "terminal_output_chunk", "terminalId": "t"}
        )  # malformed
    if MODE in ("permission", "permission_then_idle"):
        update(session_id, {"sessionUpdate": "state_update", "state": "requires_action"})
        params = {
            "sessionId": session_id,
            "title": "Run `make`?",
            "subject": {"type": "command", "command": "make", "cwd": "/tmp"},
            "options": OPTIONS,
        }
        if MODE == "permission_then_idle":
            rid = next_id[0]
            next_id[0] += 1
            send(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "method": "session/request_permission",
                    "params": params,
                }
            )
            time.sleep(0.2)
        else:
            ask(params)
        update(session_id, {"sessionUpdate": "state_update", "state": "running"})
    update(session_id, {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})
    if MODE == "idle_then_permission":  # asks when no turn is running any more
        params = {
            "sessionId": session_id,
            "title": "Run `late`?",
            "subject": {"type": "command", "command": "late", "cwd": "/tmp"},
            "options": OPTIONS,
        }
        send(
            {
                "jsonrpc": "2.0",
                "id": next_id[0],
                "method": "session/request_permission",
                "params": params,
            }
        )


def handle(message: dict) -> None:
    method = message.get("method")
    rid = message.get("id")
    params = message.get("params") or {}
    if method is None:  # a response to one of our requests
        with answered:
            answers[rid] = message
            answered.notify_all()
        return
    if method == "initialize":
        if MODE == "v1":
            result = {
                "protocolVersion": 1,
                "agentCapabilities": {"loadSession": True},
                "authMethods": [],
            }
        elif MODE == "claims2":
            result = {
                "protocolVersion": 2,
                "agentCapabilities": {"loadSession": True},
                "agentInfo": {"name": "old", "version": "1"},
            }
        elif MODE == "reject":
            send(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "error": {
                        "code": -32022,
                        "message": "Unsupported protocol version",
                        "data": {"requested": 2, "supported": [1]},
                    },
                }
            )
            return
        else:
            result = {
                "protocolVersion": 2,
                "info": {"name": "fake", "version": "9"},
                "capabilities": {"session": {}},
            }
            if MODE == "auth":
                result["authMethods"] = [{"type": "agent", "methodId": "token", "name": "Token"}]
        send({"jsonrpc": "2.0", "id": rid, "result": result})
    elif method == "session/new":
        if MODE == "auth":
            send(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "error": {"code": -32000, "message": "Authentication required"},
                }
            )
            return

        def commands(name: str) -> None:
            update(
                "s1",
                {
                    "sessionUpdate": "available_commands_update",
                    "availableCommands": [{"type": "command", "name": name, "description": "d"}],
                },
            )

        if MODE == "update_around_new":  # an update for the new session before its answer
            commands("early")
        send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "s1"}})
        if MODE == "update_around_new":  # and one right behind it, as real agents do
            commands("right-behind")
    elif method == "session/prompt":
        send(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {} if MODE == "empty_ack" else {"messageId": "u1"},
            }
        )
        threading.Thread(
            target=turn, args=(params["sessionId"], params["prompt"]), daemon=True
        ).start()
    elif method == "session/cancel":
        pass
    elif rid is not None:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "nope"}})


for raw in sys.stdin:
    with open(LOG, "a") as log:
        log.write(raw if raw.endswith("\n") else raw + "\n")
    handle(json.loads(raw))
