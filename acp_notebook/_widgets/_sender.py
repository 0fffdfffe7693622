"""Who sent the front-end message being handled: the ``username`` in its header.

A click on a card reaches the kernel as a comm message; while its handler runs, the kernel's
current parent (``kernel.get_parent()``, per thread, so right on a subshell too) is that
message. Its header's ``username`` names the person where the front end fills it in (the
labextension gives JupyterLab's kernel connections the signed-in user's name; other clients send
their own or nothing). It is a label the client chose, not an identity the server checked:
shown beside a decision, never used to make one.
"""

from __future__ import annotations

from typing import Any

from .._protocol._visible import visible_text

#: a longer name is cut (it is shown on every card it decided)
MAX_NAME = 64
#: what the classic notebook puts in every header (its kernel.js hard-codes it): nobody's name
PLACEHOLDER = "username"


def sender() -> str:
    """The username of the message being handled, made visible, or "" (none, or no kernel)."""
    try:
        from IPython.core.getipython import get_ipython

        kernel: Any = getattr(get_ipython(), "kernel", None)
        parent = kernel.get_parent() if kernel is not None else None
    except Exception:  # no kernel, or one without get_parent: nobody to name
        return ""
    header = parent.get("header") if isinstance(parent, dict) else None
    name = header.get("username") if isinstance(header, dict) else None
    if not isinstance(name, str) or name == PLACEHOLDER:
        return ""
    name = visible_text(" ".join(name.split()))  # a hidden character becomes a longer marker
    return name if len(name) <= MAX_NAME else name[: MAX_NAME - 1] + "…"


def clicked_by(decided_by: str | None, who: str) -> str | None:
    """How a click that named its sender decided, in a card's words ("by a click from Bob",
    "from the side panel, by Bob"); None for any other answer (``who`` is already visible)."""
    if not who:
        return None
    if decided_by == "click":
        return f"by a click from {who}"
    if decided_by == "panel":
        return f"from the side panel, by {who}"
    return None
