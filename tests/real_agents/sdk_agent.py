"""A v1 agent built on the official Python SDK, agent-client-protocol 0.12.1 (pinned in the
``test`` extra): its own models serialise what the other v1 agents here do not send. On a
prompt it reports a thought and a message in chunks without ``messageId``, a plan, an edit tool
call with a v1 diff (whole old and new texts), a mode change, and then asks permission for an
``execute`` tool call whose ``rawInput.command`` is ``rm -rf build``: allowed, it writes
``ran.txt`` in its working directory."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import acp
from acp.schema import (
    AgentCapabilities,
    InitializeResponse,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    SessionMode,
    SessionModeState,
    ToolCallUpdate,
)


class SdkAgent:
    def __init__(self) -> None:
        self.conn: Any = None

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=acp.PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(load_session=False),
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        modes = SessionModeState(
            current_mode_id="ask",
            available_modes=[
                SessionMode(id="ask", name="Ask"),
                SessionMode(id="code", name="Code"),
            ],
        )
        return NewSessionResponse(session_id=uuid.uuid4().hex, modes=modes)

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> None:
        await self.conn.session_update(session_id, acp.helpers.update_current_mode(mode_id))

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        return None

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        h = acp.helpers
        send = self.conn.session_update
        await send(session_id, h.update_agent_thought_text("Thinking "))
        await send(session_id, h.update_agent_thought_text("it over."))
        await send(session_id, h.update_agent_message_text("I will edit "))
        await send(session_id, h.update_agent_message_text("notes.txt."))
        await send(session_id, h.update_plan([
            h.plan_entry("edit notes.txt", priority="high", status="in_progress"),
            h.plan_entry("clean the build", status="pending"),
        ]))  # fmt: skip
        diff = h.tool_diff_content("/work/notes.txt", "one\nTWO\n", "one\ntwo\n")
        await send(session_id, h.start_tool_call(
            "edit-1", "Edit notes.txt", kind="edit", status="in_progress", content=[diff]
        ))  # fmt: skip
        await send(session_id, h.update_tool_call("edit-1", status="completed"))
        await send(session_id, h.update_current_mode("code"))
        call = ToolCallUpdate(
            tool_call_id="run-1",
            title="Run a shell command",
            kind="execute",
            status="pending",
            raw_input={"command": "rm -rf build"},
        )
        await send(session_id, h.start_tool_call(
            "run-1", "Run a shell command", kind="execute", status="pending",
            raw_input={"command": "rm -rf build"},
        ))  # fmt: skip
        options = [
            PermissionOption(option_id="yes", name="Run it", kind="allow_once"),
            PermissionOption(option_id="no", name="Skip", kind="reject_once"),
        ]
        answer = await self.conn.request_permission(session_id, call, options)
        outcome = answer.outcome
        allowed = getattr(outcome, "option_id", None) == "yes"
        if allowed:
            Path("ran.txt").write_text("rm -rf build\n")
        await send(session_id, h.update_tool_call(
            "run-1", status="completed" if allowed else "failed"
        ))  # fmt: skip
        await send(session_id, h.update_plan([
            h.plan_entry("edit notes.txt", priority="high", status="completed"),
            h.plan_entry("clean the build", status="completed" if allowed else "pending"),
        ]))  # fmt: skip
        await send(session_id, h.update_agent_message_text("Done."))
        cancelled = getattr(outcome, "outcome", None) == "cancelled"
        return PromptResponse(stop_reason="cancelled" if cancelled else "end_turn")


if __name__ == "__main__":
    asyncio.run(acp.run_agent(SdkAgent()))
