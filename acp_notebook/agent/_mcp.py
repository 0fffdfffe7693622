"""The embedded agent's MCP client: one tool call on one of the session's MCP servers.

The servers are the ``mcpServers`` of ``session/new`` (or of the resume): ``http`` (its
headers sent with every request) or ``stdio`` (the command started with its args and env,
as the SDK's stdio client does). The official MCP SDK does the talking; it is imported on the
first ``@tool`` line, so an agent that never calls a tool never loads it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import _protocol as p

__all__ = ["ToolResult", "call_tool", "server_name"]

TEXT_CAP = 64_000  # characters of one result reported in the tool call


@dataclass(frozen=True)
class ToolResult:
    """What a tool answered: its text content (joined), whether it is an error, and how many
    non-text items (images, resources) it carried."""

    text: str
    is_error: bool
    others: int = 0


def server_name(server: Any) -> str:
    return str(getattr(server, "name", "?"))


async def call_tool(server: Any, name: str, arguments: dict[str, Any]) -> ToolResult:
    """Call tool ``name`` on ``server`` (an ``McpServerHttp`` or ``McpServerStdio``); a
    server that cannot be reached is an error result, not an exception."""
    try:
        return await _call(server, name, arguments)
    except Exception as exc:
        return ToolResult(f"the MCP server {server_name(server)!r} failed: {_reason(exc)}", True)


async def _call(server: Any, name: str, arguments: dict[str, Any]) -> ToolResult:
    from contextlib import AsyncExitStack

    from mcp import Client, StdioServerParameters
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with AsyncExitStack() as stack:
        if isinstance(server, p.McpServerHttp):
            headers = {h.name: h.value for h in server.headers or []}
            http = await stack.enter_async_context(create_mcp_http_client(headers=headers))
            target: Any = streamable_http_client(server.url, http_client=http)
        elif isinstance(server, p.McpServerStdio):
            target = StdioServerParameters(
                command=server.command,
                args=list(server.args or []),
                env={e.name: e.value for e in server.env or []},
            )
        else:
            return ToolResult(f"MCP server {server_name(server)!r}: unsupported transport", True)
        client = await stack.enter_async_context(Client(target))
        result = await client.call_tool(name, arguments)
    texts: list[str] = []
    others = 0
    from mcp_types import TextContent

    for item in result.content:
        if isinstance(item, TextContent):
            texts.append(item.text)
        else:
            others += 1
    text = "\n".join(texts)
    if len(text) > TEXT_CAP:
        text = text[:TEXT_CAP] + f"\n… ({len(text) - TEXT_CAP} more characters)"
    return ToolResult(text, bool(result.is_error), others)


def _reason(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"
