"""A v2 agent that leaks what it was given: it takes http MCP servers, writes every
``session/new`` request (the kernel tools' bearer token included) and its environment's
``LEAKY_SECRET`` to stderr, and exits after answering the session's first prompt, so that
the notebook shows its stderr tail.

Usage: ``python leaky_agent.py``.
"""

from __future__ import annotations

import json
import os
import sys


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    for line in sys.stdin:
        msg = json.loads(line)
        method, ident = msg.get("method"), msg.get("id")
        if method == "initialize":
            result = {
                "protocolVersion": 2,
                "info": {"name": "leaky", "version": "1"},
                "capabilities": {"session": {"mcp": {"http": {}}}},
            }
            send({"jsonrpc": "2.0", "id": ident, "result": result})
        elif method == "session/new":
            print("session/new:", json.dumps(msg["params"]), file=sys.stderr)
            print("secret:", os.environ.get("LEAKY_SECRET"), file=sys.stderr, flush=True)
            send({"jsonrpc": "2.0", "id": ident, "result": {"sessionId": "leak-1"}})
        elif method == "session/prompt":
            sys.exit(3)


if __name__ == "__main__":
    main()
