"""A v1 agent built on the official Python SDK, agent-client-protocol 0.12.1 (pinned in the
``test`` extra): its own models serialise what the other v1 agents here do not send. On a
prompt it reports a thought and a message in chunks without ``messageId``, a plan, an edit tool
call with a v1 diff (whole old and new texts), a mode change, and then asks permission for an
``execute`` tool call whose ``rawInput.command`` is ``rm -rf build``: allowed, it writes
``ran.txt`` in its working directory.

A prompt that starts with ``files`` uses the client's services instead (when the client offers
them): ``fs/write_text_file`` of ``notes.txt`` in the session's folder, ``fs/read_text_file``
of it, and a command in a client terminal (``terminal/create``, shown in an ``execute`` tool
call by its ``terminal`` content, ``wait_for_exit``, ``output``, ``release``), saying in a
message what each answered."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import acp
from acp.exceptions import RequestError
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
        self.cwd: dict[str, str] = {}
        self.client: Any = None  # the clientCapabilities it offered

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        self.client = kwargs.get("client_capabilities")
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
        session_id = uuid.uuid4().hex
        self.cwd[session_id] = cwd
        return NewSessionResponse(session_id=session_id, modes=modes)

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> None:
        await self.conn.session_update(session_id, acp.helpers.update_current_mode(mode_id))

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        return None

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = "".join(getattr(block, "text", "") for block in prompt)
        if text.startswith("files"):
            return await self.use_client_services(session_id)
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

    async def use_client_services(self, session_id: str) -> PromptResponse:
        h = acp.helpers
        send = self.conn.session_update
        say: list[str] = [f"offered terminal={getattr(self.client, 'terminal', None)}"]
        path = str(Path(self.cwd[session_id]) / "notes.txt")
        try:
            await self.conn.write_text_file(session_id, path, "one\ntwo\nthree\n")
            say.append("wrote notes.txt")
        except RequestError as exc:
            say.append(f"write refused ({exc.code})")
        try:
            read = await self.conn.read_text_file(session_id, path, line=2, limit=1)
            say.append(f"line 2 is {read.content.strip()!r}")
        except RequestError as exc:
            say.append(f"read refused ({exc.code})")
        try:
            made = await self.conn.create_terminal(
                session_id, "sh", args=["-c", "echo from the sdk; exit 4"]
            )
        except RequestError as exc:
            say.append(f"command refused ({exc.code})")
        else:
            tid = made.terminal_id
            await send(session_id, h.start_tool_call(
                "sh-1", "sh -c 'echo from the sdk; exit 4'", kind="execute",
                status="in_progress", content=[h.tool_terminal_ref(tid)],
            ))  # fmt: skip
            ended = await self.conn.wait_for_terminal_exit(session_id, tid)
            output = await self.conn.terminal_output(session_id, tid)
            await self.conn.release_terminal(session_id, tid)
            await send(session_id, h.update_tool_call("sh-1", status="completed"))
            say.append(f"command exit {ended.exit_code}: {output.output.strip()!r}")
        await send(session_id, h.update_agent_message_text("; ".join(say)))
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    asyncio.run(acp.run_agent(SdkAgent()))
