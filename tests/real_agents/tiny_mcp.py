"""A one-tool MCP server (run by fast-agent with ``--stdio``, in fast-agent's own venv, which has
``fastmcp``): its tool calls are the ones fast-agent asks permission for."""

from fastmcp import FastMCP

server = FastMCP("tiny")


@server.tool()
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper() + "!"


server.run()
