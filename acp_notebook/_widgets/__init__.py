"""Jupyter widgets of acp_notebook (their front ends live in ``labextension/``).

The names are imported on first use (PEP 562): ``%load_ext`` needs only ``_acks`` and
``_protocols`` of this package, and ipywidgets is imported with the first widget a cell shows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import _lazy

if TYPE_CHECKING:
    from ._card import PermissionCard
    from ._elicitation import ElicitationCard
    from ._markdown import render_markdown
    from ._panel import AgentPanel
    from ._terminal import TerminalWidget
    from ._turn import TurnView

_LAZY = {
    "AgentPanel": "._panel",
    "ElicitationCard": "._elicitation",
    "PermissionCard": "._card",
    "TerminalWidget": "._terminal",
    "TurnView": "._turn",
    "render_markdown": "._markdown",
}

__all__ = [
    "AgentPanel",
    "ElicitationCard",
    "PermissionCard",
    "TerminalWidget",
    "TurnView",
    "render_markdown",
]


__getattr__, __dir__ = _lazy.attach(__name__, _LAZY, __all__)
