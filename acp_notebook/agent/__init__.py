"""The embedded ACP v2 agent: ``acp-notebook-agent`` / ``python -m acp_notebook.agent``.

A real agent that needs no API key: a prompt is a small script of messages, commands (run in
a PTY after the client allows them) and file writes. See ``acp_notebook.agent.__main__``.
"""

from ._memory import ClientStreams, serve_in_memory
from ._scenario import Scenario, parse_scenario
from ._server import AgentServer
from ._store import Store

__all__ = ["AgentServer", "ClientStreams", "Scenario", "Store", "parse_scenario", "serve_in_memory"]
