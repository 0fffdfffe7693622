"""A one-tool MCP server over stdio (run by fast-agent with ``--stdio``): its tool calls are the
ones fast-agent asks permission for. Standard library only: newline-delimited JSON-RPC, the
messages of the MCP specification a tools-only server answers (``initialize``, ``ping``,
``tools/list``, ``tools/call``). fastmcp's server did the same for 1.8 CPU-s a start (its imports
and its runtime), this for a few hundredths."""

from __future__ import annotations

import json
import sys
from typing import Any

SHOUT = {
    "name": "shout",
    "description": "Upper-case a text.",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
}


def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper() + "!"


def answer(method: str, params: dict[str, Any]) -> dict[str, Any]:
    if method == "initialize":
        return {
            "protocolVersion": params["protocolVersion"],  # (the client's: it speaks it)
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "tiny", "version": "1.0.0"},
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": [SHOUT]}
    if method == "tools/call" and params.get("name") == "shout":
        text = shout(params.get("arguments", {})["text"])
        return {"content": [{"type": "text", "text": text}], "isError": False}
    raise LookupError(method)


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        if "id" not in msg or "method" not in msg:
            continue  # a notification (notifications/initialized, ...) or a response
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": msg["id"]}
        try:
            reply["result"] = answer(msg["method"], msg.get("params") or {})
        except LookupError:
            reply["error"] = {"code": -32601, "message": f"Method not found: {msg['method']}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
