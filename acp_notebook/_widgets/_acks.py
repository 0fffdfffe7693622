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

JupyterLab 4.4 and later send widget messages over a subshell of their own when the kernel has
subshells (ipykernel 7). A subshell's thread handles them beside the running cell, with
ipykernel's own ``busy`` and ``idle`` (parent: the widget message), and JupyterLab shows the
kernel's status from every status message, whichever shell it is about: one click on a card
and the notebook said Idle while its cell still ran. So the cell the main shell runs is kept
(IPython's ``pre_run_cell`` and ``post_run_cell`` on the main thread), and a message a subshell
handled while it runs is followed by ``busy`` again (parent: that cell's request). A lock
orders that ``busy`` against the cell's end: once ``post_run_cell`` has cleared the cell, no
``busy`` can follow its ``idle``.
"""

from __future__ import annotations

import functools
import logging
import sys
import threading
from typing import Any

__all__ = ["acknowledge_comms", "acknowledge_running_kernel", "answer_widget_control"]

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
    main = MainCell()
    main.follow(getattr(kernel, "shell", None), kernel)

    @functools.wraps(dispatch)
    async def dispatch_shell(msg: Any, /, *args: Any, **kwargs: Any) -> Any:
        running = _parent(kernel)  # in a concurrent dispatch: the running cell's request
        try:
            return await dispatch(msg, *args, **kwargs)
        finally:
            if kwargs.get("concurrent"):
                _acknowledge(kernel, running)
            elif kwargs.get("subshell_id", args[0] if args else None) is not None:
                main.still_busy(kernel)

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


class MainCell:
    """The request of the cell the main shell runs, if one runs: set and cleared on the main
    thread, read by subshells' threads under :attr:`lock`."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.parent: Any = None

    def follow(self, shell: Any, kernel: Any) -> None:
        """Keep the main shell's cell from ``shell``'s events (nothing without a shell)."""
        events = getattr(shell, "events", None)
        if events is None:
            return

        def started(_info: Any) -> None:
            if threading.current_thread() is threading.main_thread():
                with self.lock:
                    self.parent = _parent(kernel)

        def ended(_result: Any) -> None:
            if threading.current_thread() is threading.main_thread():
                with self.lock:
                    self.parent = None

        events.register("pre_run_cell", started)
        events.register("post_run_cell", ended)

    def still_busy(self, kernel: Any) -> None:
        """After a subshell's ``idle``: ``busy`` again for the main shell's cell, if one runs."""
        with self.lock:
            if self.parent:
                try:
                    kernel._publish_status("busy", "shell", parent=self.parent)
                except Exception:  # never let an acknowledgement break the kernel's dispatch
                    log.exception("saying busy again after a subshell's message failed")


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


CONTROL_TARGET = "jupyter.widget.control"


def answer_widget_control(kernel: Any) -> bool:
    """Take a widget front end's control comm before ipywidgets is imported (``%load_ext``
    does not import it). The ipywidgets front end opens ``jupyter.widget.control`` when it
    connects to a kernel, and only if the kernel has that target then; it is how the notebook
    knows a front end that sends no cell id can answer a card (``_cells.front_end_seen``). So
    this registers the target, and the comm that opens it imports ipywidgets (whose own
    targets then replace this one) and is handed to it, as if ipywidgets had been there all
    along. False when ipywidgets is already imported (its target is there) or ``kernel`` has
    no comm manager (not an ipykernel)."""
    manager = getattr(kernel, "comm_manager", None)
    if "ipywidgets" in sys.modules or manager is None:
        return False

    def opened(control: Any, msg: Any) -> None:
        import ipywidgets  # type: ignore[import-untyped]

        ipywidgets.Widget.handle_control_comm_opened(control, msg)

    manager.register_target(CONTROL_TARGET, opened)
    return True
