"""Jupyter widgets of acp_notebook (their front ends live in ``labextension/``)."""

from ._card import PermissionCard
from ._elicitation import ElicitationCard
from ._markdown import render_markdown
from ._panel import AgentPanel
from ._terminal import TerminalWidget
from ._turn import TurnView

__all__ = [
    "AgentPanel",
    "ElicitationCard",
    "PermissionCard",
    "TerminalWidget",
    "TurnView",
    "render_markdown",
]
