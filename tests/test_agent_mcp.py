"""The embedded agent's MCP client: ``@tool NAME {args}`` calls the tool on every MCP server
the session was given (``session/new`` ``mcpServers``), with the official MCP SDK, and reports
each result as a tool call. The servers here are the kernel tools' real one (a dict for a
namespace), over http and through the stdio bridge."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_notebook._kernel._tools import KernelTools, mcp_entry
from acp_notebook.agent._script import Tool, parse_script
from tests._memory import embedded_in_memory

HANG_GUARD = 60  # against a hung test only


@pytest.fixture
def tools() -> Iterator[KernelTools]:
    namespace: dict[str, Any] = {"frame_rows": 120, "labels": ["a", "b"]}
    server = KernelTools(lambda: namespace)
    server.start()
    yield server
    server.stop()


def test_tool_lines_parse_with_and_without_arguments() -> None:
    steps = parse_script('look:\n@tool list_variables\n@tool inspect_variable {"name": "df"}')
    assert steps[1:] == [Tool("list_variables"), Tool("inspect_variable", {"name": "df"})]
    (bad,) = parse_script("@tool inspect_variable [1, 2]")
    assert isinstance(bad, Tool) and bad.error == "the arguments must be a JSON object"
    (broken,) = parse_script("@tool inspect_variable {nope")
    assert isinstance(broken, Tool) and broken.error and "not JSON" in broken.error
    # key=value words, for a %%acp cell (it interpolates {...}): JSON values, else text
    (words,) = parse_script("@tool notebook_history n=3 label='two words' flag=true")
    assert words == Tool("notebook_history", {"n": 3, "label": "two words", "flag": True})
    (odd,) = parse_script("@tool inspect_variable grid")
    assert isinstance(odd, Tool) and odd.error and "key=value" in odd.error


async def _prompt(tmp_path: Path, entries: list[Any], prompt: str) -> list[Any]:
    async with embedded_in_memory(data_dir=tmp_path / "data") as agent:
        caps = agent.capabilities
        assert caps and caps.session and caps.session.mcp
        assert caps.session.mcp.http is not None and caps.session.mcp.stdio is not None
        session = await agent.new_session(tmp_path, mcp_servers=entries)
        turn = await session.prompt(prompt)
        with anyio.fail_after(HANG_GUARD):
            assert await turn.wait() == "end_turn"
        return list(session.state.tool_calls.values())


def _text(call: Any) -> str:
    return "\n".join(c.content.text for c in call.content if hasattr(c, "content"))


def _entry(tools: KernelTools, shape: str) -> tuple[dict[str, Any], Any]:
    """The kernel tools' entry: http as ``mcp_entry`` makes it for the embedded agent (which
    advertises both), or the stdio bridge's as it makes it for a stdio-only agent."""
    grant = tools.issue("embedded")
    if shape == "http":
        return {
            "type": "http",
            "name": "notebook",
            "url": tools.url,
            "headers": [{"name": "Authorization", "value": f"Bearer {grant.token}"}],
        }, grant
    env = {"ACP_NOTEBOOK_MCP_URL": tools.url, "ACP_NOTEBOOK_MCP_TOKEN": grant.token}
    return {
        "type": "stdio",
        "name": "notebook",
        "command": sys.executable,
        "args": ["-m", "acp_notebook.mcp_bridge"],
        "env": [{"name": k, "value": v} for k, v in env.items()],
    }, grant


async def _entry_for_the_embedded_agent(tmp_path: Path) -> Any:
    async with embedded_in_memory(data_dir=tmp_path / "data") as agent:
        return mcp_entry(agent, "http://127.0.0.1:1/mcp", "T0KEN")


def test_mcp_entry_gives_the_embedded_agent_the_http_server(tmp_path: Path) -> None:
    entry = anyio.run(_entry_for_the_embedded_agent, tmp_path)
    assert entry["type"] == "http" and entry["headers"][0]["value"] == "Bearer T0KEN"


@pytest.mark.parametrize("shape", ["http", "stdio"])
@pytest.mark.process
def test_tool_lines_call_the_kernel_tools_and_report_the_results(
    tools: KernelTools, tmp_path: Path, shape: str
) -> None:
    entry, _grant = _entry(tools, shape)
    prompt = '@tool list_variables\n@tool inspect_variable {"name": "labels"}'
    calls = anyio.run(_prompt, tmp_path, [entry], prompt)
    assert [(c.title, c.status) for c in calls] == [
        ("notebook: list_variables", "completed"),
        ("notebook: inspect_variable", "completed"),
    ]
    assert "frame_rows: int" in _text(calls[0]) and "labels: list" in _text(calls[0])
    assert "['a', 'b']" in _text(calls[1])
    assert calls[1].raw_input == {
        "server": "notebook",
        "tool": "inspect_variable",
        "arguments": {"name": "labels"},
    }
    assert [e.tool for e in tools.events] == ["list_variables", "inspect_variable"]


def test_a_tool_error_and_a_session_without_servers_are_failed_calls(
    tools: KernelTools, tmp_path: Path
) -> None:
    entry, grant = _entry(tools, "http")
    calls = anyio.run(_prompt, tmp_path, [entry], '@tool inspect_variable {"name": "nope"}')
    assert [c.status for c in calls] == ["failed"] and "not defined" in _text(calls[0])
    calls = anyio.run(_prompt, tmp_path, [], "@tool list_variables")
    assert [c.status for c in calls] == ["failed"]
    assert "no MCP servers" in _text(calls[0])
    tools.revoke(grant)  # a token the server no longer takes
    calls = anyio.run(_prompt, tmp_path, [entry], "@tool list_variables")
    assert [c.status for c in calls] == ["failed"] and "failed" in _text(calls[0])
    assert grant.token not in json.dumps([_text(c) for c in calls])
