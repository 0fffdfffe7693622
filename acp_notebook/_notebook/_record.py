"""A ``%%acp`` cell's saved record of its turn, written as the turn goes.

The live view (widgets) lives only as long as its kernel; the record is plain text and HTML
saved in the notebook, so a turn cut short by a kernel restart or crash still reads right:

* Right after its live view the cell shows an empty *slot*: a display with a display_id.
  While the turn runs the slot is updated (``update_display_data``) with the transcript so
  far, headed by :data:`RUNNING_NOTE`; at most every :data:`SNAPSHOT_INTERVAL` seconds, and
  only after something changed.
* When the cell's turn ends, the final transcript is displayed as a new output and the slot
  is emptied again. A notebook saved at any moment holds one readable record of the turn.
* A ``--bg`` turn outlives its cell: its slot gets the final transcript itself.

The slot ends empty, rather than holding the final transcript, because nbval ignores
``update_display_data``: with an empty slot at both ends, what nbval sees and what JupyterLab
or nbclient save are the same outputs.

Everything is sent from the kernel's main thread, from a task started in the cell (so its
messages carry the cell's parent header); the transcript is computed on the I/O thread, which
owns the turn's state. The front end shows the record only when the live view cannot render
(see ``labextension/style/base.css``).
"""

from __future__ import annotations

import asyncio
import html
import logging
import time
import uuid
from collections.abc import Callable
from typing import Any

import IPython.display as _display

from ._cells import CellRun

log = logging.getLogger("acp_notebook.record")

display: Any = vars(_display)["display"]
update_display: Any = vars(_display)["update_display"]

#: The transcript in the slot is refreshed at most this often (seconds) while the turn runs.
SNAPSHOT_INTERVAL = 2.0
#: What heads a transcript saved while its turn was still running.
RUNNING_NOTE = (
    "Still running when this was saved: cut short if the kernel restarted or stopped"
    " before the turn ended."
)
SLOT_CLASS = "acp-static-slot"
RUNNING_CLASS = "acp-static-running"
_NOTE_STYLE = (
    "border-left:3px solid #e0a000;padding:2px 6px;margin:2px 0;font-weight:bold;"
    "font-family:var(--jp-ui-font-family,sans-serif)"
)


def slot_bundle() -> dict[str, str]:
    """The empty slot (what a finished turn leaves in it)."""
    return {"text/plain": "", "text/html": f'<div class="{SLOT_CLASS}"></div>'}


def running_bundle(bundle: dict[str, str]) -> dict[str, str]:
    """A transcript taken while its turn runs, headed by :data:`RUNNING_NOTE`."""
    note = f'<div class="acp-static-note" style="{_NOTE_STYLE}">{html.escape(RUNNING_NOTE)}</div>'
    return {
        "text/plain": f"[{RUNNING_NOTE}]\n\n{bundle['text/plain']}",
        "text/html": f'<div class="{SLOT_CLASS} {RUNNING_CLASS}">{note}{bundle["text/html"]}</div>',
    }


async def _bundle_of(run: CellRun) -> dict[str, str]:
    bundle: dict[str, str] = run.view.static_bundle()  # I/O thread: the state is read there
    return bundle


class Record:
    """The slot of one cell's turn and the task that keeps it fresh (main thread only)."""

    def __init__(
        self, run: CellRun, *, bg: bool = False, plain: Callable[[], bool] | None = None
    ) -> None:
        """``plain()``: the front end lacks the labextension (nothing hides the slot while the
        live view shows): the slot then stays empty, and the transcript replaces the view."""
        self.run = run
        self._plain = plain
        self.bg = bg  # the turn outlives its cell: the slot gets the final transcript
        self.display_id = uuid.uuid4().hex
        self.updates = 0  # update_display_data messages sent (for tests and measurements)
        self._seen = -1  # run.changes when the slot was last written
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        display(slot_bundle(), raw=True, display_id=self.display_id)

    def start(self) -> None:
        """Keep the slot fresh from a task of the running loop (the cell's coroutine)."""
        self._task = asyncio.ensure_future(self._keep_fresh())

    async def _keep_fresh(self) -> None:
        done = self.run.done
        try:
            while done is not None and not done.done():
                await self.snapshot()
                await asyncio.sleep(SNAPSHOT_INTERVAL)
            if self.bg and not self._closed:  # its cell has returned: the slot keeps the end
                self._closed = True
                bundle = await asyncio.wrap_future(self.run.io.submit(_bundle_of, self.run))
                self._write(bundle)
                self.run.io.call(lambda: follow_background(self.run, self.display_id))
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("saving the turn's transcript failed")

    async def snapshot(self) -> None:
        """Write the transcript so far into the slot, if anything changed since last time."""
        changes = self.run.changes
        if changes == self._seen:
            return
        if self._plain is not None and self._plain():
            # no labextension: nothing hides the slot while the live view shows, so it stays
            # empty (the live view is replaced by the transcript when the turn ends)
            if self._seen != -1:
                self._seen = -1
                self._write(slot_bundle())
            return
        bundle = await asyncio.wrap_future(self.run.io.submit(_bundle_of, self.run))
        if self._closed:
            return
        self._seen = changes
        self._write(running_bundle(bundle))

    def _write(self, bundle: dict[str, str]) -> None:
        update_display(bundle, raw=True, display_id=self.display_id)
        self.updates += 1

    def close(self) -> None:
        """The cell's turn ended and its final transcript is shown: empty the slot."""
        if self._task is not None:
            self._task.cancel()
        if self._closed:
            return
        self._closed = True
        self._write(slot_bundle())


def follow_background(run: CellRun, display_id: str) -> None:
    """While the turn's background work runs on after its idle (a command started with the
    turn), the transcript shown under ``display_id`` follows it: rewritten at most every
    :data:`SNAPSHOT_INTERVAL` seconds (the last change always), and a last time when the work
    ends or the next turn takes over (issue 25, finding 13: the saved record kept ``running``
    and none of the output that came after the idle). I/O thread; nothing when no work is left.
    """
    if not run.background:
        return
    written = [time.monotonic()]
    due = [False]

    def write() -> None:
        due[0] = False
        written[0] = time.monotonic()
        update_display(run.view.static_bundle(), raw=True, display_id=display_id)

    def trailing() -> None:
        if due[0]:
            write()

    def refreshed() -> None:
        ending = not run.background
        if ending:
            if refreshed in run.after_refresh:
                run.after_refresh.remove(refreshed)
            write()
            return
        wait = SNAPSHOT_INTERVAL - (time.monotonic() - written[0])
        if wait <= 0:
            write()
        elif not due[0]:
            due[0] = True
            try:
                asyncio.get_running_loop().call_later(wait, trailing)
            except RuntimeError:  # not on the I/O loop: the next refresh writes it
                due[0] = False

    run.after_refresh.append(refreshed)
