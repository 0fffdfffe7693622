"""Builders for the messages the embedded agent sends.

Most builders write the wire dict directly: it is what the protocol model's ``to_wire()``
gives, key for key and in the same order (tests/test_agent_wire.py builds each message both
ways and compares the JSON), without importing the update models or building their
serialisers when the agent starts (each start paid for them; the test suite starts the agent
hundreds of times, a user at every ``%acp connect``). The builders whose content the agent
composes from parts (a tool call, a tool call's permission) still validate it with the
protocol model, and every builder's output is checked against the v2 schema in the tests.
"""

from __future__ import annotations

import binascii
import json
from typing import Any

from .. import _protocol as p
from ._pty import ExitStatus
from ._store import SessionRecord

__all__ = [
    "LIST_PAGE",
    "agent_chunk",
    "command_permission",
    "idle",
    "initialize_response",
    "notification",
    "oversize_line",
    "permission_options",
    "session_info",
    "session_info_update",
    "state",
    "terminal_chunk",
    "terminal_exit",
    "terminal_start",
    "text",
    "tool_call",
    "tool_call_permission",
    "user_message",
]

LIST_PAGE = 50


def initialize_response(
    protocol_version: int, version: str, *, mcp: tuple[str, ...] = ("http", "stdio")
) -> dict[str, Any]:
    """The ``initialize`` answer; ``mcp``: the MCP server transports it advertises."""
    # (the order of ``McpCapabilities``' fields: stdio, then http)
    transports: dict[str, Any] = {kind: {} for kind in ("stdio", "http") if kind in mcp}
    # the MCP servers it takes (``@tool`` lines call them)
    session: dict[str, Any] = {"mcp": transports} if mcp else {}
    return {
        "protocolVersion": protocol_version,
        "info": {"name": "acp-notebook-agent", "title": "acp_notebook agent", "version": version},
        "capabilities": {"session": session},
        "authMethods": [],
    }


#: The embedded agent's modes: value -> (name, what it does in it). ``ask`` is where it starts.
MODES = {
    "ask": ("Ask", "asks before every command and file write"),
    "plan": ("Plan", "says what it would run and write, and does neither"),
}


def mode_options(current: str) -> list[dict[str, Any]]:
    """The session's config options: its mode (category ``mode``)."""
    choices = [
        {"value": value, "name": name, "description": description}
        for value, (name, description) in MODES.items()
    ]
    option = {
        "type": "select",
        "configId": "mode",
        "name": "Mode",
        "category": "mode",
        "currentValue": current,
        "options": choices,
    }
    return [option]


def notification(session_id: str, update: dict[str, Any]) -> dict[str, Any]:
    """``session/update`` params (``update`` is already in wire shape)."""
    return {"sessionId": session_id, "update": update}


def session_info(record: SessionRecord) -> dict[str, Any]:
    info: dict[str, Any] = {"sessionId": record.session_id, "cwd": record.cwd}
    if record.title is not None:
        info["title"] = record.title
    if record.updated_at:
        info["updatedAt"] = record.updated_at
    return info


def _text_block(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def text(value: str) -> dict[str, Any]:
    """A ``content`` tool-call content item holding text."""
    return {"type": "content", "content": _text_block(value)}


def user_message(message_id: str, content: list[dict[str, Any]]) -> dict[str, Any]:
    """``content``: the prompt's blocks as the ``PromptRequest`` model gave them back
    (validated, in wire shape)."""
    return {"sessionUpdate": "user_message", "messageId": message_id, "content": content}


def agent_chunk(message_id: str, value: str) -> dict[str, Any]:
    return {
        "sessionUpdate": "agent_message_chunk",
        "messageId": message_id,
        "content": _text_block(value),
    }


_STATES = frozenset({"running", "requires_action"})


def state(name: str) -> dict[str, Any]:
    if name not in _STATES:
        raise KeyError(name)
    return {"sessionUpdate": "state_update", "state": name}


def idle(stop_reason: str) -> dict[str, Any]:
    return {"sessionUpdate": "state_update", "state": "idle", "stopReason": stop_reason}


def session_info_update(title: str) -> dict[str, Any]:
    return {"sessionUpdate": "session_info_update", "title": title}


def tool_call(
    tool_call_id: str,
    *,
    title: str | None = None,
    kind: str | None = None,
    status: str | None = None,
    content: list[dict[str, Any]] | None = None,
    locations: list[dict[str, Any]] | None = None,
    raw_input: Any = None,
) -> dict[str, Any]:
    """A ``tool_call_update`` carrying only the given fields (omitted ones stay unchanged)."""
    update: dict[str, Any] = {"sessionUpdate": "tool_call_update", "toolCallId": tool_call_id}
    for name, value in (
        ("title", title),
        ("kind", kind),
        ("status", status),
        ("content", content),
        ("locations", locations),
        ("rawInput", raw_input),
    ):
        if value is not None:
            update[name] = value
    return p.ToolCallUpdate.from_wire(update).to_wire()


COLS = 80
ROWS = 24


def terminal_start(terminal_id: str, command: str, cwd: str) -> dict[str, Any]:
    return {
        "sessionUpdate": "terminal_update",
        "terminalId": terminal_id,
        "command": command,
        "cwd": cwd,
        "size": {"cols": COLS, "rows": ROWS},
        "capabilities": {"cancel": {}},
    }


def terminal_chunk(terminal_id: str, data: bytes) -> dict[str, Any]:
    # What ``p.TerminalOutputChunk(...).to_wire()`` gives, built directly: it is sent for every
    # batch of a command's output (tests/test_agent_wire.py checks they are the same).
    return {
        "sessionUpdate": "terminal_output_chunk",
        "terminalId": terminal_id,
        "data": binascii.b2a_base64(data, newline=False).decode("ascii"),
    }


class ChunkLines:
    """One terminal's output chunks for one session, encoded without a JSON encoder.

    ``lines(data)`` returns ``(update, encoded, line)``: the update (`terminal_chunk`), its
    compact JSON (for the session file) and the whole ``session/update`` line, exactly what
    ``Connection.notify`` would write (tests/test_agent_wire.py checks it byte for byte).
    Encoding a batch of output twice with ``json.dumps`` (the line, the file) cost more than
    reading it from the PTY; base64 needs no escaping, the ids are encoded once here.
    """

    def __init__(self, session_id: str, terminal_id: str) -> None:
        self.terminal_id = terminal_id
        tid = json.dumps(terminal_id, ensure_ascii=False).encode("utf-8")
        sid = json.dumps(session_id, ensure_ascii=False).encode("utf-8")
        self._update_head = b'{"sessionUpdate":"terminal_output_chunk","terminalId":' + tid
        self._update_head += b',"data":"'
        self._line_head = b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":'
        self._line_head += sid + b',"update":'

    def __call__(self, data: bytes) -> tuple[dict[str, Any], bytes, bytes]:
        b64 = binascii.b2a_base64(data, newline=False)
        encoded = self._update_head + b64 + b'"}'
        update = {
            "sessionUpdate": "terminal_output_chunk",
            "terminalId": self.terminal_id,
            "data": b64.decode("ascii"),
        }
        return update, encoded, self._line_head + encoded + b"}}\n"


def terminal_exit(
    terminal_id: str, status: ExitStatus | None, *, meta: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The final ``terminal_update``: ``status`` None means "exited, details unknown"."""
    exit_status: dict[str, Any]
    if status is None:
        exit_status = {}
    elif status.signal is not None:
        exit_status = {"signal": status.signal}
    else:
        exit_status = {"exitCode": status.exit_code}
    update: dict[str, Any] = {"sessionUpdate": "terminal_update"}
    if meta is not None:
        update["_meta"] = meta  # (``_meta`` is the models' first field)
    update["terminalId"] = terminal_id
    update["exitStatus"] = exit_status
    return update


def permission_options() -> list[dict[str, Any]]:
    """The options of every permission request, in wire shape (``PermissionOption``)."""
    return [
        {"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
        {"optionId": "allow-always", "name": "Always allow", "kind": "allow_always"},
        {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"},
        {"optionId": "reject-always", "name": "Always reject", "kind": "reject_always"},
    ]


def command_permission(
    session_id: str, command: str, cwd: str, tool_call_id: str, terminal_id: str
) -> dict[str, Any]:
    first_line = command.splitlines()[0] if command else command
    shown = first_line if first_line == command else first_line + " …"
    return {
        "sessionId": session_id,
        "title": f"Run `{shown}`?",
        "subject": {
            "type": "command",
            "command": command,
            "cwd": cwd,
            "toolCallId": tool_call_id,
            "terminalId": terminal_id,
        },
        "options": permission_options(),
    }


def tool_call_permission(session_id: str, title: str, update: dict[str, Any]) -> dict[str, Any]:
    tool = {k: v for k, v in update.items() if k != "sessionUpdate"}
    return p.RequestPermissionRequest.from_wire(
        {
            "sessionId": session_id,
            "title": title,
            "subject": {"type": "tool_call", "toolCall": tool},
            "options": permission_options(),
        }
    ).to_wire()


def oversize_line(session_id: str, size: int) -> bytes:
    """A valid ``session/update`` line of at least ``size`` bytes (without the newline)."""

    def build(padding: int) -> bytes:
        message = {
            "jsonrpc": "2.0",
            "method": p.Method.SESSION_UPDATE,
            "params": notification(session_id, agent_chunk("msg-oversize", "x" * padding)),
        }
        return json.dumps(message, separators=(",", ":")).encode("utf-8")

    overhead = len(build(0))
    return build(max(0, size - overhead))
