"""Jupyter widgets of acp_notebook (their front ends live in ``labextension/``).

The names are imported on first use (PEP 562): ``%load_ext`` needs only ``_acks`` and
``_protocols`` of this package, and ipywidgets is imported with the first widget a cell shows.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
