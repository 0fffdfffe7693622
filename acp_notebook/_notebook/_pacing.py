"""The user's cells go first: back-pressure on agents that flood in the background.

Agents are read in the I/O thread (``_bridge.IOThread``). A flood read there at full speed
while a cell of the user's runs keeps both cores of a small machine busy (the agent writing, the
kernel decoding), and a trivial cell then took 2-5x its idle latency. Each connection the
notebook holds asks its ``pace`` (set by ``_bridge`` to the notebook's :class:`CellPacing`; no
process global) before each batch of lines how long to wait, and :class:`CellPacing` answers
by what the user's cells see, not by a fixed share of the time:

* nothing to wait for a small chunk (a reply, a trickle: not a flood), for a read loop on the
  kernel's main thread (a client that the cell itself drives), while the main thread waits for
  the I/O thread (it needs the agent's answer), and while a cell of our own magics runs
  (``cell_started(magic=True)``: a ``%%acp`` cell waits for its own turn, ``%acp`` for the
  agent; the user is waiting for that output);
* nothing either while no cell of the user's runs (and none has just ended): nobody waits for
  the kernel, so a flood is read at full speed, whatever the machine;
* while a user cell runs, and for ``TAIL`` seconds after it (the kernel still sends its reply
  and its idle status), the flood *holds*: it reads nothing, looking every ``STEP`` seconds
  whether that is over. Cells that follow each other closer than ``TAIL`` (a run of short cells)
  are one hold;
* a hold lasts at most ``GRACE`` seconds: past it (a long cell, or a long run of short ones)
  the flood is read in slices, ``SLICE`` seconds of reading then ``SLICE * RATIO`` of rest, so
  that it goes on (slower) and the cell keeps most of the machine.

Nothing is dropped: while a read loop waits, the agent's pipe fills and the agent's writes
block, so its output is only delayed.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable, Iterator
from typing import Final

GRACE: Final = 0.2
TAIL: Final = 0.05
STEP: Final = 0.002
SLICE: Final = 0.003
RATIO: Final = 6.0
FLOOD_BYTES: Final = 16 * 1024
_NEGLIGIBLE: Final = 1e-4  # a wait shorter than this is not worth a sleep


class CellPacing:
    """The pacing policy of one kernel (its ``Notebook`` holds it; the magics start and end its
    cells). Cells start and end on the main thread and the hook runs in the I/O thread; each
    field has one writer and is read whole, so no lock is needed."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._started: float | None = None  # when the running cell of user code began
        self._magic = False  # a cell of our magics runs (%%acp, %acp ...)
        self._ended = -math.inf  # when the last user cell ended
        self._hold: float | None = None  # when the current hold began (I/O thread only)
        self._slice = -math.inf  # when the I/O thread's current slice of reading began
        self._main = threading.main_thread().ident
        self._main_waits = 0  # the main thread waits for the I/O thread (nested)

    @property
    def cell_running(self) -> bool:
        return self._started is not None

    @property
    def holding(self) -> bool:
        """A flood is held back (or sliced) now: a user cell runs or has just ended."""
        return self._started is not None or self._clock() - self._ended < TAIL

    def cell_started(self, *, magic: bool = False) -> None:
        self._magic = magic
        self._started = None if magic else self._clock()

    def cell_ended(self) -> None:
        if self._started is not None:
            self._ended = self._clock()
        self._started = None
        self._magic = False

    @contextlib.contextmanager
    def main_waits(self) -> Iterator[None]:
        """The main thread blocks on the I/O thread meanwhile: read without waiting."""
        if threading.get_ident() != self._main:
            yield
            return
        self._main_waits += 1
        try:
            yield
        finally:
            self._main_waits -= 1

    def __call__(self, chunk: int, waited: float) -> float:
        """Seconds to wait before a batch from a ``chunk``-byte read (``waited`` so far)."""
        if self._magic or self._main_waits or threading.get_ident() == self._main:
            return 0.0
        now = self._clock()
        started = self._started
        if started is None and now - self._ended >= TAIL:  # nobody waits: full speed
            self._hold = None
            return 0.0
        if chunk < FLOOD_BYTES:  # the reader had caught up: a new slice starts
            self._slice = now
            return 0.0
        hold = self._hold
        if hold is None:  # a hold begins with the cell that made it (or now, if later)
            hold = self._hold = started if started is not None and started <= now else now
        left = GRACE - (now - hold)
        if started is None:  # the cell has ended: its tail, if shorter
            left = min(left, TAIL - (now - self._ended))
        if left > _NEGLIGIBLE:  # a cell runs, or has just ended: read nothing
            return min(STEP, left)
        if waited:  # it has just rested: a new slice
            self._slice = now
            return 0.0
        if now - self._slice >= SLICE:
            return SLICE * RATIO
        return 0.0


__all__ = ["FLOOD_BYTES", "GRACE", "RATIO", "SLICE", "STEP", "TAIL", "CellPacing"]
