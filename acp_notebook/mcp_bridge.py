"""A stdio MCP server that forwards to the kernel's HTTP one: ``python -m acp_notebook.mcp_bridge``.

For agents that take only stdio MCP servers (``%acp connect --kernel-tools`` passes this in
``mcpServers`` then). The URL and the bearer token come from the environment
(``ACP_NOTEBOOK_MCP_URL``, ``ACP_NOTEBOOK_MCP_TOKEN``), never from the command line, where
``ps`` would show them. Both sides use the official MCP SDK: a low-level ``Server`` on
stdin/stdout whose ``tools/list`` and ``tools/call`` are answered by a ``Client`` of the
kernel's streamable HTTP endpoint, so each side negotiates its own protocol version. The
kernel's answers (errors included) are passed on as they are. The kernel is reached once, at
start: a refused token (401) or a kernel that is gone ends the bridge with status 1 and the
reason on stderr; a call refused later (the session was closed) answers an error that says so.
Nothing but MCP goes to stdout.
"""

from __future__ import annotations

import os
import sys
from contextlib import AsyncExitStack
from typing import Any

__all__ = ["ENV_TOKEN", "ENV_URL", "main", "serve"]

ENV_URL = "ACP_NOTEBOOK_MCP_URL"
ENV_TOKEN = "ACP_NOTEBOOK_MCP_TOKEN"


async def serve(url: str, token: str) -> None:
    """Serve stdio until its input ends, forwarding to ``url`` with ``token``."""
    import mcp_types as t
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(
            create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        )
        kernel = await stack.enter_async_context(
            Client(streamable_http_client(url, http_client=http))
        )

        async def list_tools(ctx: Any, params: Any) -> Any:
            return t.ListToolsResult(tools=(await kernel.list_tools()).tools)

        async def call_tool(ctx: Any, params: Any) -> Any:
            try:
                return await kernel.call_tool(params.name, dict(params.arguments or {}))
            except Exception as exc:
                text = f"the notebook's kernel tools refused or failed: {_reason(exc)}"
                content = [t.TextContent(type="text", text=text)]
                return t.CallToolResult(content=content, is_error=True)

        server = Server("notebook", on_list_tools=list_tools, on_call_tool=call_tool)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())


def _reason(exc: BaseException) -> str:
    """The innermost error of an exception group, as one line."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"


def main() -> int:
    url, token = os.environ.get(ENV_URL), os.environ.get(ENV_TOKEN)
    if not url or not token:
        print(f"acp_notebook.mcp_bridge: set {ENV_URL} and {ENV_TOKEN}", file=sys.stderr)
        return 2
    import anyio

    try:
        anyio.run(serve, url, token)
    except Exception as exc:
        print(f"acp_notebook.mcp_bridge: the kernel's server: {_reason(exc)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
