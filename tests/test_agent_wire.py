"""The embedded agent's wire messages: every builder's output is valid v2 ACP."""

from __future__ import annotations

import json
from typing import Any

from _schema import assert_valid

from acp_notebook import _protocol as p
from acp_notebook.agent import _wire as wire
from acp_notebook.agent._pty import ExitStatus
from acp_notebook.agent._store import SessionRecord


def test_built_messages_are_schema_valid() -> None:
    tool = wire.tool_call(
        "t",
        title="Write x",
        kind="edit",
        status="pending",
        content=[wire.text("why"), {"type": "terminal", "terminalId": "term"}],
        locations=[{"path": "/w/x"}],
        raw_input={"path": "/w/x"},
    )
    updates: list[dict[str, Any]] = [
        wire.user_message("m", [{"type": "text", "text": "x"}]),
        wire.agent_chunk("m2", "hello"),
        wire.state("running"),
        wire.state("requires_action"),
        wire.idle("cancelled"),
        wire.session_info_update("title"),
        tool,
        wire.terminal_start("term", "ls", "/w"),
        wire.terminal_chunk("term", b"\x00\xff"),
        wire.terminal_exit("term", ExitStatus(signal="SIGINT")),
        wire.terminal_exit("term", None, meta={"k": 1}),
    ]
    for update in updates:
        assert_valid("UpdateSessionNotification", wire.notification("s", update))
    assert_valid("RequestPermissionRequest", wire.command_permission("s", "ls", "/w", "t", "term"))
    assert_valid("RequestPermissionRequest", wire.tool_call_permission("s", "Write?", tool))
    assert_valid("InitializeResponse", wire.initialize_response(2, "1"))


def test_oversize_line_is_valid_json_of_the_requested_size() -> None:
    line = wire.oversize_line("s", 100_000)
    assert len(line) == 100_000
    message = json.loads(line)
    assert_valid("UpdateSessionNotification", message["params"])


def _same(built: Any, model: Any) -> None:
    """``built`` is what ``model.to_wire()`` gives, key order included (the bytes on the wire
    and in the session files)."""
    reference = model.to_wire() if isinstance(model, p.WireModel) else model
    assert json.dumps(built) == json.dumps(reference)


def test_the_directly_built_messages_are_what_the_models_give() -> None:
    # The builders write dicts so that a start imports no update model (see _wire's
    # docstring); these are the models they stand for.
    for mcp in [("http", "stdio"), ("http",), ("stdio",), ()]:
        kinds: dict[str, Any] = {}
        if "http" in mcp:
            kinds["http"] = p.McpHttpCapabilities()
        if "stdio" in mcp:
            kinds["stdio"] = p.McpStdioCapabilities()
        session = p.SessionCapabilities(mcp=p.McpCapabilities(**kinds)) if mcp else None
        capabilities = p.AgentCapabilities(session=session or p.SessionCapabilities())
        info = p.Implementation(name="acp-notebook-agent", title="acp_notebook agent", version="9")
        _same(
            wire.initialize_response(2, "9", mcp=mcp),
            p.InitializeResponse(
                protocol_version=2, info=info, capabilities=capabilities, auth_methods=[]
            ),
        )
    for current in wire.MODES:
        choices = [
            p.SessionConfigSelectOption(value=value, name=name, description=description)
            for value, (name, description) in wire.MODES.items()
        ]
        option = p.SessionConfigSelect(
            config_id="mode", name="Mode", category="mode", current_value=current, options=choices
        )
        _same(wire.mode_options(current), [option.to_wire()])
    for title, updated in [(None, ""), ("T", "2026-01-01T00:00:00Z")]:
        record = SessionRecord("s", "/w", "2025-01-01T00:00:00Z", updated, title=title)
        model = p.SessionInfo(session_id="s", cwd="/w")
        if title is not None:
            model.title = title
        if updated:
            model.updated_at = updated
        _same(wire.session_info(record), model)
    block = p.TextContent(text="hé \n")
    _same(wire.text("hé \n"), p.ContentToolCallContent(content=block))
    _same(wire.agent_chunk("m", "hé \n"), p.AgentMessageChunk(message_id="m", content=block))
    _same(wire.state("running"), p.RunningStateUpdate())
    _same(wire.state("requires_action"), p.RequiresActionStateUpdate())
    _same(wire.idle("cancelled"), p.IdleStateUpdate(stop_reason="cancelled"))
    _same(wire.session_info_update("T"), p.SessionInfoUpdate(title="T"))
    _same(
        wire.terminal_start("t", "ls -l", "/w"),
        p.TerminalUpdate(
            terminal_id="t",
            command="ls -l",
            cwd="/w",
            size=p.TerminalSize(cols=wire.COLS, rows=wire.ROWS),
            capabilities=p.TerminalCapabilities(cancel=p.TerminalCancelCapabilities()),
        ),
    )
    for status, exit_status in [
        (None, p.TerminalExitStatus()),
        (ExitStatus(signal="SIGINT"), p.TerminalExitStatus(signal="SIGINT")),
        (ExitStatus(exit_code=3), p.TerminalExitStatus(exit_code=3)),
        (ExitStatus(), p.TerminalExitStatus(exit_code=None)),
    ]:
        for meta in (None, {"k": 1}):
            update = p.TerminalUpdate(terminal_id="t", exit_status=exit_status)
            if meta is not None:
                update.meta = meta
            _same(wire.terminal_exit("t", status, meta=meta), update)
    options = [
        p.PermissionOption(option_id="allow-once", name="Allow once", kind="allow_once"),
        p.PermissionOption(option_id="allow-always", name="Always allow", kind="allow_always"),
        p.PermissionOption(option_id="reject-once", name="Reject", kind="reject_once"),
        p.PermissionOption(option_id="reject-always", name="Always reject", kind="reject_always"),
    ]
    _same(wire.permission_options(), [o.to_wire() for o in options])
    for command, shown in [("ls", "ls"), ("ls\nrm x", "ls …"), ("", "")]:
        subject = p.CommandPermissionSubject(
            command=command, cwd="/w", tool_call_id="tc", terminal_id="t"
        )
        request = p.RequestPermissionRequest(
            session_id="s", title=f"Run `{shown}`?", subject=subject, options=options
        )
        _same(wire.command_permission("s", command, "/w", "tc", "t"), request)


def test_a_user_message_carries_the_prompt_as_the_prompt_model_gives_it() -> None:
    # The server passes `[block.to_wire() for block in PromptRequest.prompt]`: the update
    # is what the UserMessage model makes of those blocks, unknown ones included.
    raw = [
        {"type": "text", "text": "x", "annotations": {"priority": 0.5}},
        {"type": "image", "data": "AAAA", "mimeType": "image/png"},
        {"type": "resource_link", "uri": "file:///w/a", "name": "a"},
        {"type": "resource", "resource": {"uri": "file:///w/b", "text": "b"}},
        {"type": "_custom", "anything": [1]},
    ]
    request = p.PromptRequest.from_wire({"sessionId": "s", "prompt": raw})
    prompt = [block.to_wire() for block in request.prompt]
    model = p.UserMessage.from_wire(
        {"sessionUpdate": "user_message", "messageId": "m", "content": prompt}
    )
    _same(wire.user_message("m", prompt), model)
