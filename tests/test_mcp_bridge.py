"""The stdio bridge (``python -m acp_notebook.mcp_bridge``) to the kernel's MCP server: driven
by the official MCP SDK's stdio client, as an agent that only takes stdio servers would."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import anyio
import pytest

from acp_notebook._kernel._tools import TOOL_NAMES, KernelTools


@dataclass
class _Session:
    id: str
    closed: bool = False


@pytest.fixture
def tools() -> Iterator[KernelTools]:
    namespace: dict[str, Any] = {"greeting": "hello"}
    server = KernelTools(lambda: namespace)
    server.start()
    yield server
    server.stop()


async def _through_bridge(env: dict[str, str], name: str, args: dict[str, Any]) -> Any:
    import sys

    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "acp_notebook.mcp_bridge"], env=env
    )
    async with Client(params) as client:
        listed = await client.list_tools()
        return [tool.name for tool in listed.tools], await client.call_tool(name, args)


def test_the_stdio_bridge_forwards_to_the_kernel_with_the_token_from_its_env(
    tools: KernelTools,
) -> None:
    grant = tools.issue("codex")
    tools.bind(grant, _Session("s-3"))  # type: ignore[arg-type]
    env = {"ACP_NOTEBOOK_MCP_URL": tools.url, "ACP_NOTEBOOK_MCP_TOKEN": grant.token}
    names, result = anyio.run(_through_bridge, env, "inspect_variable", {"name": "greeting"})
    assert sorted(names) == sorted(TOOL_NAMES)
    assert not result.is_error and "hello" in result.content[0].text
    assert [(e.kind, e.tool, e.session_id) for e in tools.events] == [
        ("call", "inspect_variable", "s-3")
    ]


def test_the_stdio_bridge_with_a_wrong_token_exits_and_says_why(tools: KernelTools) -> None:
    import subprocess
    import sys

    env = {"ACP_NOTEBOOK_MCP_URL": tools.url, "ACP_NOTEBOOK_MCP_TOKEN": "wrong", "PATH": ""}
    done = subprocess.run(
        [sys.executable, "-m", "acp_notebook.mcp_bridge"],
        input=b"",
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 1 and done.stdout == b""
    assert b"kernel's server" in done.stderr and b"wrong" not in done.stderr
    # (the SDK's client probes, then falls back to the initialize handshake: two requests)
    assert tools.events and {e.detail for e in tools.events} == {"an unknown token"}
    done = subprocess.run(
        [sys.executable, "-m", "acp_notebook.mcp_bridge"], capture_output=True, env={}, timeout=60
    )
    assert done.returncode == 2 and b"ACP_NOTEBOOK_MCP_TOKEN" in done.stderr


async def _call_after_close(env: dict[str, str], session: _Session) -> Any:
    import sys

    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "acp_notebook.mcp_bridge"], env=env
    )
    async with Client(params) as client:
        first = await client.call_tool("inspect_variable", {"name": "greeting"})
        session.closed = True
        return first, await client.call_tool("inspect_variable", {"name": "greeting"})


def test_a_call_through_the_bridge_after_the_session_closed_is_refused(
    tools: KernelTools,
) -> None:
    session = _Session("s-4")
    grant = tools.issue("codex")
    tools.bind(grant, session)  # type: ignore[arg-type]
    env = {"ACP_NOTEBOOK_MCP_URL": tools.url, "ACP_NOTEBOOK_MCP_TOKEN": grant.token}
    first, second = anyio.run(_call_after_close, env, session)
    assert not first.is_error and "hello" in first.content[0].text
    assert second.is_error and "hello" not in second.content[0].text
    assert "refused or failed" in second.content[0].text
    assert [e.kind for e in tools.events] == ["call", "refused"]
    assert tools.events[-1].detail == "the session was closed"
