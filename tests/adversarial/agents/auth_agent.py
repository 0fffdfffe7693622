"""A scriptable ACP v2 agent that needs sign-in, run as a subprocess.

Usage: ``python auth_agent.py WORKDIR``. Every message it receives is appended to
``WORKDIR/received.jsonl``. It advertises two auth methods: ``login`` (type ``agent``:
``auth/login`` signs in) and ``fake-key`` (type ``env_var``: the variable ``FAKE_KEY``).
``session/new`` answers ``-32000`` (authentication required) until ``auth/login`` with
``login`` succeeded or ``FAKE_KEY`` is set in its environment; then it works, and a prompt is
answered with ``signed in by <how>`` and idle. ``auth/login`` with another method id is an
error. A ``FAKE_KEY`` value is never echoed (a test greps the notebook for it).

``python auth_agent.py WORKDIR --hang`` also advertises ``hang`` (type ``agent``), whose
``auth/login`` prints a line that is not ACP and is never answered.

``python auth_agent.py WORKDIR --terminal`` also advertises ``terminal-login`` (type
``terminal``: run the agent with ``--login`` added, and ``AUTH_AGENT_MODE=login``). Run so,
it is the login command: it asks ``password: `` with getpass; ``open-sesame`` stores
``WORKDIR/credentials`` and exits 0 ("credentials stored"), anything else exits 1. An agent
started once the file exists is signed in ("stored credentials").
"""

from __future__ import annotations

import getpass
import os
import sys
import threading
from pathlib import Path
from typing import Any

from _wire import send, serve, update

WORK = Path(sys.argv[1] if __name__ == "__main__" else ".")
RECEIVED = WORK / "received.jsonl"
CREDENTIALS = WORK / "credentials"
TERMINAL_METHOD: dict[str, Any] = {
    "type": "terminal",
    "methodId": "terminal-login",
    "name": "Log in in a terminal",
    "description": "Asks for the password",
    "args": ["--login"],
    "env": [{"name": "AUTH_AGENT_MODE", "value": "login"}],
}

AUTH_METHODS: list[dict[str, Any]] = [
    {
        "type": "agent",
        "methodId": "login",
        "name": "Log in with a browser",
        "description": "Opens the sign-in page\u202e (fake)",
    },
    {
        "type": "env_var",
        "methodId": "fake-key",
        "name": "Fake API key",
        "description": "Set FAKE_KEY",
        "vars": [{"name": "FAKE_KEY", "label": "Fake key", "secret": True}],
    },
]

if "--terminal" in sys.argv:
    AUTH_METHODS.append(TERMINAL_METHOD)
if "--hang" in sys.argv:  # a browser login on a machine without one: never answered
    AUTH_METHODS.append({"type": "agent", "methodId": "hang", "name": "Log in (never answers)"})

_signed_in = ["env FAKE_KEY" if os.environ.get("FAKE_KEY") else ""]
if CREDENTIALS.exists():
    _signed_in[0] = "stored credentials"


def login() -> int:
    """The terminal method's login command (in a terminal: getpass needs one)."""
    print(f"Sign-in agent login (mode {os.environ.get('AUTH_AGENT_MODE')})")
    if getpass.getpass("password: ") != "open-sesame":
        print("wrong password")
        return 1
    CREDENTIALS.write_text("token-from-the-terminal\n")
    print("credentials stored")
    return 0


def turn(session_id: str) -> None:
    update(session_id, {"sessionUpdate": "state_update", "state": "running"})
    update(
        session_id,
        {
            "sessionUpdate": "agent_message_chunk",
            "messageId": "a1",
            "content": {"type": "text", "text": f"signed in by {_signed_in[0]}"},
        },
    )
    update(session_id, {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})


def handle(message: dict[str, Any]) -> None:
    method = message.get("method")
    rid = message.get("id")
    params = message.get("params") or {}
    if method == "initialize":
        result = {
            "protocolVersion": 2,
            "info": {"name": "auth", "title": "Sign-in agent", "version": "1.0"},
            "capabilities": {"session": {}},
            "authMethods": AUTH_METHODS,
        }
        send({"jsonrpc": "2.0", "id": rid, "result": result})
    elif method == "auth/login":
        if params.get("methodId") == "hang":
            sys.stdout.write("Enter the authorization code: \n")  # not ACP, as gemini does
            sys.stdout.flush()
        elif params.get("methodId") == "login":
            _signed_in[0] = "auth/login"
            send({"jsonrpc": "2.0", "id": rid, "result": {}})
        else:
            error = {"code": -32602, "message": f"cannot log in with {params.get('methodId')!r}"}
            send({"jsonrpc": "2.0", "id": rid, "error": error})
    elif method == "session/new":
        if not _signed_in[0]:
            error = {"code": -32000, "message": "Authentication required"}
            send({"jsonrpc": "2.0", "id": rid, "error": error})
        else:
            send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "s1"}})
    elif method == "session/prompt":
        send({"jsonrpc": "2.0", "id": rid, "result": {"messageId": "u1"}})
        threading.Thread(target=turn, args=(params["sessionId"],), daemon=True).start()
    elif method == "session/close":
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
    elif rid is not None and method is not None:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "nope"}})


def main() -> None:
    serve(handle, RECEIVED)


if __name__ == "__main__":
    if "--login" in sys.argv:
        sys.exit(login())
    main()
