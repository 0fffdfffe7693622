"""The embedded agent's wire messages: every builder's output is valid v2 ACP."""

from __future__ import annotations

import json
from typing import Any

from _schema import assert_valid

from acp_notebook.agent import _wire as wire
from acp_notebook.agent._pty import ExitStatus


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
