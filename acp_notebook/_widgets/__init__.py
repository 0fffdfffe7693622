"""Jupyter widgets of acp_notebook (their front ends live in ``labextension/``)."""

from ._panel import AgentPanel
from ._terminal import TerminalWidget

__all__ = ["AgentPanel", "TerminalWidget"]
