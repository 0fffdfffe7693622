"""claude-agent-acp 0.101.0 in v1 mode (CLAUDE_AGENT_ACP_PROTOCOL=v1), offline against the fake
Anthropic API: negotiation down, and a v1 turn through the same state."""

from __future__ import annotations

import anyio
import pytest

from acp_notebook import RequestPermissionRequest, UnsupportedProtocolVersion, connect
from tests.real_agents.conftest import CLAUDE_PACKAGE, ClaudeLaunch
from tests.real_agents.fake_anthropic import Text, ToolUse

pytestmark = pytest.mark.anyio
GUARD = 90.0  # seconds; a guard against hanging, never an assertion on speed


def v1_env(claude: ClaudeLaunch) -> dict[str, str]:
    return {**claude.env, "CLAUDE_AGENT_ACP_PROTOCOL": "v1"}


async def test_v1_mode_negotiates_down_and_a_turn_ends_on_the_prompt_answer(
    claude: ClaudeLaunch,
) -> None:
    claude.api.add(Text("Hello from v1"))
    with anyio.fail_after(GUARD):
        async with connect(claude.argv, cwd=claude.cwd, env=v1_env(claude)) as agent:
            assert agent.protocol_version == 1
            assert agent.info is not None and agent.info.name == CLAUDE_PACKAGE
            session = await agent.new_session(claude.cwd)
            turn = await session.prompt("say hello")
            assert await turn.wait() == "end_turn"
            assert turn.text == "Hello from v1"
            assert session.problems == []
    assert "say hello" in str(claude.api.agent_requests()[0].body["messages"])


async def test_v1_mode_permission_is_the_same_request_and_the_tool_call_is_shown(
    claude: ClaudeLaunch,
) -> None:
    claude.api.add(
        ToolUse("Bash", {"command": "echo hello > out.txt", "description": "Write a file"}),
        Text("I wrote out.txt"),
    )
    asked: list[RequestPermissionRequest] = []

    async def allow_once(request: RequestPermissionRequest) -> str | None:
        asked.append(request)
        return next(o.option_id for o in request.options if o.kind == "allow_once")

    with anyio.fail_after(GUARD):
        async with connect(
            claude.argv, cwd=claude.cwd, env=v1_env(claude), permission=allow_once
        ) as agent:
            session = await agent.new_session(claude.cwd)
            turn = await session.prompt("write hello to out.txt")
            assert await turn.wait() == "end_turn"
            assert turn.text.endswith("I wrote out.txt")
            calls = list(turn.tool_calls.values())
    (request,) = asked
    assert request.subject is not None and request.subject.type == "tool_call"
    assert "echo hello > out.txt" in str(request.subject.tool_call.raw_input)
    assert calls and calls[-1].status == "completed"
    assert (claude.cwd / "out.txt").read_text() == "hello\n"


async def test_v1_mode_is_refused_when_v2_is_forced(claude: ClaudeLaunch) -> None:
    with anyio.fail_after(GUARD), pytest.raises(UnsupportedProtocolVersion):
        async with connect(claude.argv, cwd=claude.cwd, env=v1_env(claude), protocol=2):
            pytest.fail("a v1 agent was accepted under protocol=2")
