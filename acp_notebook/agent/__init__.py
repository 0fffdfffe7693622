"""The embedded ACP v2 agent: ``acp-notebook-agent`` / ``python -m acp_notebook.agent``.

A real agent that needs no API key: a prompt is a small script of messages, commands (run in
a PTY after the client allows them) and file writes. See ``acp_notebook.agent.__main__``.
"""
