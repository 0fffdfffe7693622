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
  the kernel, so a flood is read at full speed;
* from a request's arrival on the shell channel (:func:`follow_requests`, on ipykernel's
  shell-channel thread, before the main thread has it), while a user cell runs, and for
  ``TAIL`` seconds after either (the kernel still sends its reply and its idle status), the
  flood *holds*: it reads nothing, looking every ``STEP`` seconds whether that is over. Cells
  that follow each other closer than ``TAIL`` (a run of short cells) are one hold; one that
  comes later begins a hold of its own, even if the agent sent nothing in between;
* a cell of the user's whose request came while a flood was read at full speed switches the
  flood to slices (below) while the user is active: until ``ACTIVE`` seconds after their last
  cell began or ended. Holding from the request's arrival is not enough for that cell: what it
  waits for is mostly *behind* the flood, not in the kernel. Its reply and idle status leave
  after every terminal message the flood made before it, and a front end takes them in order
  (in a real kernel at load 9, cells 2.5 s apart: a ``1+1`` took 148 ms, 126 of them between
  the kernel sending its idle status and the client receiving it; the wait from the request's
  arrival to its cell's start, which ``last_delay`` keeps, was 1.5 ms, as without a flood). A
  flood read in slices keeps that backlog short. Nobody active, it goes back to full speed;
* a hold lasts at most ``GRACE`` seconds: past it (a long cell, or a long run of short ones)
  the flood is read in slices, ``SLICE`` seconds of reading then ``SLICE * RATIO`` of rest, so
  that it goes on (slower) and the cell keeps most of the machine.

Nothing is dropped: while a read loop waits, the agent's pipe fills and the agent's writes
block, so its output is only delayed.
"""

from __future__ import annotations

import contextlib
import math
import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Final

GRACE: Final = 0.2
TAIL: Final = 0.05
STEP: Final = 0.002
SLICE: Final = 0.003
RATIO: Final = 6.0
#: a user who ran a cell during a flood is active (the flood is read in slices) until this many
#: seconds after their last cell began or ended: longer than a person's pause between cells
ACTIVE: Final = 30.0
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
        self._asked = -math.inf  # when the last request reached the kernel (any thread)
        self._hold: float | None = None  # when the current hold began (I/O thread only)
        # when a request (shell-channel thread) or a cell (main thread) last came with nothing
        # held before it: TAIL after the last cell's end or request; a hold of its own
        self._request_opened = -math.inf
        self._cell_opened = -math.inf
        self._free_at = -math.inf  # when a flood was last read at full speed (I/O thread)
        self._sliced_until = -math.inf  # a flood is read in slices until then (main thread)
        #: the last wait, from a request's arrival to its cell's start, of a cell that came
        #: during a flood read at full speed (seconds), if any
        self.last_delay: float | None = None
        self._slice = -math.inf  # when the I/O thread's current slice of reading began
        self._main = threading.main_thread().ident
        self._main_waits = 0  # the main thread waits for the I/O thread (nested)

    @property
    def cell_running(self) -> bool:
        return self._started is not None

    @property
    def holding(self) -> bool:
        """A flood is held back (or sliced) now: a user cell runs, has just ended, or a request
        has just reached the kernel."""
        now = self._clock()
        return self._started is not None or now - max(self._ended, self._asked) < TAIL

    def request_arrived(self) -> None:
        """A message reached the kernel's shell channel (:func:`follow_requests`): someone waits
        for its answer; the flood holds from now, before the cell (if it is one) starts."""
        now = self._clock()
        if self._started is None and now - max(self._ended, self._asked) >= TAIL:
            self._request_opened = now
        self._asked = now

    def cell_started(self, *, magic: bool = False) -> None:
        self._magic = magic
        if magic:
            self._started = None
            return
        now = self._clock()
        if now - max(self._ended, self._asked) >= TAIL:
            self._cell_opened = now
        self._started = now
        if now < self._sliced_until:  # the user is still active: the cells stay fast
            self._sliced_until = now + ACTIVE
        elif now - self._free_at < GRACE:  # it came while a flood was read at full speed
            if now - self._asked < GRACE:
                self.last_delay = now - self._asked
            self._sliced_until = now + ACTIVE

    def cell_ended(self) -> None:
        if self._started is not None:
            self._ended = self._clock()
            if self._started < self._sliced_until:  # the user is active until ACTIVE after it
                self._sliced_until = self._ended + ACTIVE
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
        last = max(self._ended, self._asked)  # the end of a cell, or a request's arrival
        if started is None and now - last >= TAIL:  # nobody waits
            self._hold = None
            if now >= self._sliced_until:  # full speed
                if chunk >= FLOOD_BYTES:
                    self._free_at = now
                return 0.0
            if chunk >= FLOOD_BYTES and not waited and now - self._slice >= SLICE:
                return SLICE * RATIO  # the user is active and the machine short: slices
            if waited or chunk < FLOOD_BYTES:
                self._slice = now
            return 0.0
        if chunk < FLOOD_BYTES:  # the reader had caught up: a new slice starts
            self._slice = now
            return 0.0
        hold = self._hold
        if hold is not None and max(self._request_opened, self._cell_opened) > hold:
            # the last hold was over before this cell or request came, though nobody asked
            # the hook meanwhile to end it (the agent sent nothing): a hold of its own
            hold = None
        if hold is None:  # a hold begins with what made it (or now, if later)
            begun = started if started is not None and started <= now else now
            if now - self._asked < TAIL:  # its request came first
                begun = min(begun, self._asked)
            hold = self._hold = begun
        left = GRACE - (now - hold)
        if started is None:  # no cell runs: the tail after the last end or request, if shorter
            left = min(left, TAIL - (now - last))
        if left > _NEGLIGIBLE:  # a cell runs, or has just ended: read nothing
            return min(STEP, left)
        if waited:  # it has just rested: a new slice
            self._slice = now
            return 0.0
        if now - self._slice >= SLICE:
            return SLICE * RATIO
        return 0.0


_FOLLOWED = "_acp_notebook_pacing"


_DELIMITER: Final = b"<IDS|MSG>"
_CUSTOM: Final = re.compile(rb'"method":\s*"custom"')
_ACK: Final = re.compile(rb'"type":\s*"ack"')


def terminal_ack(msg: Any) -> bool:
    """Whether the shell message ``msg`` (its zmq frames, as the shell stream hands them on) is
    a terminal view's ``ack`` (flow control, ``_widgets._coalesce``): a ``comm_msg`` whose
    custom content's ``type`` is ``ack``. Nobody waits for its reply, and a view acks several
    times a second while a flood streams: it must not hold the flood back as a request does.
    Anything it cannot read is not one."""
    try:
        frames = list(msg)
        at = next(i for i, frame in enumerate(frames[:16]) if bytes(frame) == _DELIMITER)
        header = bytes(frames[at + 2])
        if b'"comm_msg"' not in header:
            return False
        content = bytes(frames[at + 5])
        return _CUSTOM.search(content) is not None and _ACK.search(content) is not None
    except (StopIteration, IndexError, TypeError, ValueError):
        return False


def follow_requests(kernel: Any, pacing: CellPacing) -> bool:
    """Tell ``pacing`` of every message that reaches ``kernel``'s shell channel, as it arrives
    (on ipykernel's shell-channel thread, before the main thread sees it): a request holds a
    flood from its arrival, so the user's cell does not first wait behind it. False (nothing
    done) for a kernel without that thread (ipykernel < 7): the hold then starts with the
    cell."""
    channel = getattr(kernel, "shell_channel_thread", None)
    stream = getattr(kernel, "shell_stream", None)
    handler = getattr(kernel, "shell_channel_thread_main", None)
    loop = getattr(channel, "io_loop", None)
    if channel is None or stream is None or handler is None or loop is None:
        return False
    if getattr(stream, _FOLLOWED, None) is not None:
        setattr(stream, _FOLLOWED, pacing)  # the notebook's pacing now (a new Notebook)
        return True
    setattr(stream, _FOLLOWED, pacing)

    def arrived(msg: Any) -> Any:
        followed = getattr(stream, _FOLLOWED, None)
        if followed is not None and not terminal_ack(msg):
            followed.request_arrived()
        return handler(msg)  # the coroutine the stream awaits, as before

    # on the channel's own thread: the stream is that thread's
    loop.add_callback(lambda: stream.on_recv(arrived, copy=False))
    return True


__all__ = [
    "ACTIVE",
    "FLOOD_BYTES",
    "GRACE",
    "RATIO",
    "SLICE",
    "STEP",
    "TAIL",
    "CellPacing",
    "follow_requests",
    "terminal_ack",
]
