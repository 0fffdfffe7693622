"""The wire half that the scripted test agents share (imported by name: each agent runs as a
script, so its own directory is on ``sys.path``).

``send`` writes one JSON-RPC message per line under `LOCK` (agents answer from several
threads); ``serve`` reads requests from stdin, appends each to the agent's received log (what a
test reads to see what our client sent) and hands it to the agent's ``handle``.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

LOCK = threading.Lock()


def send(message: dict[str, Any]) -> None:
    with LOCK:
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


def serve(handle: Callable[[dict[str, Any]], None], received: Path) -> None:
    """Until end of input: log every message to ``received``, then ``handle`` it."""
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        with LOCK, received.open("a") as log:
            log.write(json.dumps(message) + "\n")
        handle(message)
