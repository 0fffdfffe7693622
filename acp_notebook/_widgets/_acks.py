"""Acknowledge widget messages the kernel handles while a cell runs.

The ipywidgets front end sends one ``update`` per widget model at a time: it holds every later
edit of that model until an iopub ``status: idle`` whose parent is the update in flight
arrives. ipykernel 7 handles comm messages while an async cell (an ``%%acp`` turn) awaits, but
publishes no status for them (its ``dispatch_shell(..., concurrent=True)``): the first edit of
a form field reached the kernel, every later one stayed in the browser for good.

:func:`acknowledge_comms` wraps the kernel's ``dispatch_shell`` so that a message dispatched
that way is followed by ``idle`` (parent: that message, which releases the front end's
throttle) and then ``busy`` (parent: the running cell's request, so that the kernel still
shows busy). Messages dispatched the ordinary way keep ipykernel's own ``busy``/``idle``.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

__all__ = ["acknowledge_comms", "acknowledge_running_kernel"]

log = logging.getLogger("acp_notebook.widgets")

_MARK = "_acp_acknowledges_comms"


def acknowledge_comms(kernel: Any) -> bool:
    """Install the acknowledgements on ``kernel`` (once). False when it has no
    ``dispatch_shell`` to wrap (no kernel, or not an ipykernel)."""
    dispatch = getattr(kernel, "dispatch_shell", None)
    if dispatch is None:
        return False
    if getattr(dispatch, _MARK, False):
        return True

    @functools.wraps(dispatch)
    async def dispatch_shell(msg: Any, /, *args: Any, **kwargs: Any) -> Any:
        running = _parent(kernel)  # in a concurrent dispatch: the running cell's request
        try:
            return await dispatch(msg, *args, **kwargs)
        finally:
            if kwargs.get("concurrent"):
                _acknowledge(kernel, running)

    setattr(dispatch_shell, _MARK, True)
    kernel.dispatch_shell = dispatch_shell
    return True


def acknowledge_running_kernel() -> bool:
    """:func:`acknowledge_comms` on the IPython kernel this runs in, if any."""
    try:
        import IPython.core.getipython as getipython

        # Untyped on purpose: IPython 8 ships it without hints, IPython 9 with them.
        shell = vars(getipython)["get_ipython"]()
    except Exception:  # no IPython at all
        return False
    return acknowledge_comms(getattr(shell, "kernel", None))


def _parent(kernel: Any) -> Any:
    try:
        return kernel.get_parent("shell")
    except Exception:
        return None


def _acknowledge(kernel: Any, running: Any) -> None:
    try:
        kernel._publish_status("idle", "shell")  # parent: the comm message just handled
        if running:
            kernel._publish_status("busy", "shell", parent=running)
    except Exception:  # never let an acknowledgement break the kernel's dispatch
        log.exception("acknowledging a widget message failed")
