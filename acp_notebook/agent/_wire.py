"""Builders for the messages the embedded agent sends.

Each builder constructs the wire model of `acp_notebook._protocol` and returns its
``to_wire()`` dict, so everything the agent writes went through the protocol layer.
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
    kinds: dict[str, Any] = {}
    if "http" in mcp:
        kinds["http"] = p.McpHttpCapabilities()
    if "stdio" in mcp:
        kinds["stdio"] = p.McpStdioCapabilities()
    transports = p.McpCapabilities(**kinds)
    return p.InitializeResponse(
        protocol_version=protocol_version,
        info=p.Implementation(
            name="acp-notebook-agent", title="acp_notebook agent", version=version
        ),
        capabilities=p.AgentCapabilities(
            # the MCP servers it takes (``@tool`` lines call them)
            session=p.SessionCapabilities(mcp=transports) if mcp else p.SessionCapabilities()
        ),
        auth_methods=[],
    ).to_wire()


#: The embedded agent's modes: value -> (name, what it does in it). ``ask`` is where it starts.
MODES = {
    "ask": ("Ask", "asks before every command and file write"),
    "plan": ("Plan", "says what it would run and write, and does neither"),
}


def mode_options(current: str) -> list[dict[str, Any]]:
    """The session's config options: its mode (category ``mode``)."""
    choices = [
        p.SessionConfigSelectOption(value=value, name=name, description=description)
        for value, (name, description) in MODES.items()
    ]
    option = p.SessionConfigSelect(
        config_id="mode", name="Mode", category="mode", current_value=current, options=choices
    )
    return [option.to_wire()]


def notification(session_id: str, update: dict[str, Any]) -> dict[str, Any]:
    """``session/update`` params (``update`` is already in wire shape)."""
    return {"sessionId": session_id, "update": update}


def session_info(record: SessionRecord) -> dict[str, Any]:
    info = p.SessionInfo(session_id=record.session_id, cwd=record.cwd)
    if record.title is not None:
        info.title = record.title
    if record.updated_at:
        info.updated_at = record.updated_at
    return info.to_wire()


def _text_block(value: str) -> p.TextContent:
    return p.TextContent(text=value)


def text(value: str) -> dict[str, Any]:
    """A ``content`` tool-call content item holding text."""
    return p.ContentToolCallContent(content=_text_block(value)).to_wire()


def user_message(message_id: str, content: list[Any]) -> dict[str, Any]:
    return p.UserMessage.from_wire(
        {"sessionUpdate": "user_message", "messageId": message_id, "content": content}
    ).to_wire()


def agent_chunk(message_id: str, value: str) -> dict[str, Any]:
    return p.AgentMessageChunk(message_id=message_id, content=_text_block(value)).to_wire()


def state(name: str) -> dict[str, Any]:
    # Looked up here, not in a table at import: naming the models imports their module.
    if name == "running":
        return p.RunningStateUpdate().to_wire()
    if name == "requires_action":
        return p.RequiresActionStateUpdate().to_wire()
    raise KeyError(name)


def idle(stop_reason: str) -> dict[str, Any]:
    return p.IdleStateUpdate(stop_reason=stop_reason).to_wire()


def session_info_update(title: str) -> dict[str, Any]:
    return p.SessionInfoUpdate(title=title).to_wire()


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
    return p.TerminalUpdate(
        terminal_id=terminal_id,
        command=command,
        cwd=cwd,
        size=p.TerminalSize(cols=COLS, rows=ROWS),
        capabilities=p.TerminalCapabilities(cancel=p.TerminalCancelCapabilities()),
    ).to_wire()


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
    if status is None:
        exit_status = p.TerminalExitStatus()
    elif status.signal is not None:
        exit_status = p.TerminalExitStatus(signal=status.signal)
    else:
        exit_status = p.TerminalExitStatus(exit_code=status.exit_code)
    update = p.TerminalUpdate(terminal_id=terminal_id, exit_status=exit_status)
    if meta is not None:
        update.meta = meta
    return update.to_wire()


def permission_options() -> list[p.PermissionOption]:
    return [
        p.PermissionOption(option_id="allow-once", name="Allow once", kind="allow_once"),
        p.PermissionOption(option_id="allow-always", name="Always allow", kind="allow_always"),
        p.PermissionOption(option_id="reject-once", name="Reject", kind="reject_once"),
        p.PermissionOption(option_id="reject-always", name="Always reject", kind="reject_always"),
    ]


def command_permission(
    session_id: str, command: str, cwd: str, tool_call_id: str, terminal_id: str
) -> dict[str, Any]:
    first_line = command.splitlines()[0] if command else command
    shown = first_line if first_line == command else first_line + " …"
    return p.RequestPermissionRequest(
        session_id=session_id,
        title=f"Run `{shown}`?",
        subject=p.CommandPermissionSubject(
            command=command, cwd=cwd, tool_call_id=tool_call_id, terminal_id=terminal_id
        ),
        options=permission_options(),
    ).to_wire()


def tool_call_permission(session_id: str, title: str, update: dict[str, Any]) -> dict[str, Any]:
    tool = {k: v for k, v in update.items() if k != "sessionUpdate"}
    return p.RequestPermissionRequest.from_wire(
        {
            "sessionId": session_id,
            "title": title,
            "subject": {"type": "tool_call", "toolCall": tool},
            "options": [o.to_wire() for o in permission_options()],
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
