"""Kernel-side coalescing of terminal bytes into few, sequenced widget messages.

The coalescer owns no widget: it calls ``send(content, buffers)`` and is safe to feed from any
thread.  Bytes are flushed when ``interval`` seconds have passed since the first pending byte or
when ``max_pending`` bytes are pending, whichever comes first; a size-triggered flush still waits
until ``min_gap`` seconds have passed since the previous one, so a flood costs at most
``1 / min_gap`` messages per second per terminal (its messages just grow).  Coalescers also
share a kernel-wide :class:`FlushBudget`: when many terminals stream at once, each one spaces
its flushes further apart, so their sum stays near the budget's rate.  Every flush is
one message with a sequence number that increases by one.  All flushed bytes are kept (up to
``backlog_limit``, the oldest are dropped beyond it) so a view that starts late can ask for
the whole transcript.

Flow control: a view that says so (``ack``, ``_terminal``) acknowledges each message it has
received; while one does, no message holds more than ``max_message`` bytes and at most
``window`` bytes are sent and not yet acknowledged (the rest stays pending and is sent as acks
come), so a browser that falls behind a flood is never handed megabytes in one task. It fails
safe: without acks nothing waits, and a paced coalescer stops waiting (until the next ack) once
no ack came for ``ack_timeout`` seconds or ``max_held`` bytes are pending. No byte is dropped.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import logging
import math
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Protocol

from ._protocols import TerminalToView

log = logging.getLogger("acp_notebook.widgets")

Send = Callable[[TerminalToView, list[bytes]], None]


class TimerHandle(Protocol):
    """What a scheduler returns: something that can be cancelled."""

    def cancel(self) -> None: ...


Schedule = Callable[[float, Callable[[], None]], TimerHandle]

DEFAULT_INTERVAL = 0.04
DEFAULT_MAX_PENDING = 64 * 1024
# at most 28 messages in any second per terminal, however fast bytes come (the target is 30:
# two to spare for the flushes that do not wait, such as the one before an exit badge)
DEFAULT_MIN_GAP = 0.036
DEFAULT_BACKLOG_LIMIT = 16 * 2**20
# messages per second shared by all busy terminals of a kernel, and the most in any second.
# The target is 150 for every message of the terminals' comms: 30 are left for those that do
# not wait (the flush before an exit badge, the widgets' state updates) and the jitter
# between taking a slot and sending.
DEFAULT_BUDGET_RATE = 120.0
#: flow control (only while a view acknowledges): the most bytes in one chunk message, the
#: most sent and not yet acknowledged, how long without an ack before sending regardless, and
#: the most held back for the window before sending regardless
DEFAULT_MAX_MESSAGE = 256 * 1024
DEFAULT_WINDOW = 2**20
DEFAULT_ACK_TIMEOUT = 1.0
DEFAULT_MAX_HELD = 16 * 2**20


def tail_start(data: bytes, lines: int) -> int:
    """Where the last ``lines`` lines of ``data`` start (just after the ``lines + 1``-th line
    end from its end); 0 when it holds no more than ``lines`` line ends."""
    end = len(data)
    for _ in range(lines + 1):
        end = data.rfind(b"\n", 0, end)
        if end < 0:
            return 0
    return end + 1


class _Timer:
    """One scheduled callback; ``cancel`` only sets a flag (safe from ``__del__``, no lock)."""

    __slots__ = ("callback", "cancelled")

    def __init__(self, callback: Callable[[], None]) -> None:
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class _TimerThread:
    """Runs every timer of the process, in due order, on one daemon thread that lives on.

    Not a thread per timer: ipykernel gives each thread that sends on iopub its own zmq socket
    and closes it only after the thread has ended and a periodic clean-up has run, so a thread
    per flush (tens to hundreds a second with several floods) piled up sockets until zmq's
    limit ("Too many open files"), and sends were lost.

    No lock, as in :class:`FlushBudget`: garbage collection may close a widget (and so
    schedule or cancel) on any thread at any moment. New timers go through a
    ``SimpleQueue`` (safe to use there); only the timer thread touches its heap. Should two
    threads ever be started (a race on the first use, or after a fork), each runs the timers
    it takes, once.
    """

    def __init__(self) -> None:
        self._inbox: queue.SimpleQueue[tuple[float, int, _Timer]] = queue.SimpleQueue()
        self._count = itertools.count()
        self._thread: threading.Thread | None = None

    def schedule(self, delay: float, callback: Callable[[], None]) -> _Timer:
        timer = _Timer(callback)
        self._inbox.put((time.monotonic() + max(delay, 0.0), next(self._count), timer))
        thread = self._thread
        if thread is None or not thread.is_alive():  # first use, or after a fork
            thread = threading.Thread(target=self._run, name="acp-terminal-timers", daemon=True)
            self._thread = thread
            thread.start()
        return timer

    def _run(self) -> None:
        heap: list[tuple[float, int, _Timer]] = []
        while True:
            while heap and heap[0][0] <= time.monotonic():
                timer = heapq.heappop(heap)[2]
                if not timer.cancelled:
                    try:
                        timer.callback()
                    except Exception:
                        log.exception("a terminal flush timer failed")
            while heap and heap[0][2].cancelled:
                heapq.heappop(heap)
            timeout = max(heap[0][0] - time.monotonic(), 0.0) if heap else None
            with contextlib.suppress(queue.Empty):
                heapq.heappush(heap, self._inbox.get(timeout=timeout))


_TIMERS = _TimerThread()


def thread_timer(delay: float, callback: Callable[[], None]) -> TimerHandle:
    """Run ``callback`` once after ``delay`` seconds on the timer thread (one per process).

    A thread (not the kernel's event loop) does the flushing, so bytes still leave while a cell
    keeps the loop busy; ipykernel's iopub socket accepts sends from any thread.
    """
    return _TIMERS.schedule(delay, callback)


class FlushBudget:
    """A message rate that all busy coalescers share (thread-safe, and without a lock).

    A coalescer counts as busy for ``window`` seconds after its last flush.  With ``n`` busy,
    each keeps its flushes at least ``n / rate`` seconds apart, so together they send about
    ``rate`` messages per second however many stream, each getting an equal share.  Times come
    from the coalescers' own clocks; a time more than ``window`` away from ``now`` (another
    clock) is not counted.

    There is deliberately no lock: ``forget`` runs from ``close``, which a widget's ``__del__``
    calls, and garbage collection may run that in the middle of any other method on the same
    thread (a lock held there would deadlock).  Each method only does single dict operations
    (atomic under the GIL) or reads a ``copy()``; at worst a count is one stream off for a moment
    (at most ``window / 8``: see ``_busy``).
    """

    def __init__(self, rate: float = DEFAULT_BUDGET_RATE, *, window: float = 1.0) -> None:
        if rate <= 0 or window <= 0:
            raise ValueError("rate and window must be positive")
        self.rate = rate
        self.window = window
        self._last: dict[int, float] = {}  # id(coalescer) -> time of its last flush
        # _busy's answer: (from, until, ids), valid for from <= now < until (replaced whole, so
        # that a reader on another thread sees one consistent tuple)
        self._kept: tuple[float, float, frozenset[int]] | None = None
        # The hard cap: every flush's time, so that no window holds more than `_limit`. The
        # spacing of `gap` shares the rate fairly, but n terminals each flushing on the edges
        # of a window would otherwise add up to about rate + n.
        self._limit = max(1, int(rate * window))
        self._times: deque[float] = deque()

    def next_slot(self, now: float) -> float:
        """The earliest time (>= ``now``) at which one more flush leaves every window of
        ``window`` seconds (ends included) with at most ``rate * window`` flushes."""
        times = self._times
        try:
            while times and now - times[0] > self.window:
                times.popleft()
            if times and times[-1] - now > self.window:  # another clock's times
                times.clear()
            if len(times) < self._limit:
                return now
            return max(now, times[-self._limit] + self.window * (1 + 1e-6))
        except IndexError:  # emptied by another thread meanwhile: no flush to wait for
            return now

    def busy(self, now: float) -> int:
        """How many coalescers flushed within ``window`` of ``now``."""
        return len(self._busy(now))

    def gap(self, key: object, now: float) -> float:
        """The spacing ``key`` should keep between flushes right now."""
        busy = self._busy(now)
        others = len(busy) - (id(key) in busy)
        return (others + 1) / self.rate

    def _busy(self, now: float) -> frozenset[int]:
        """The coalescers that flushed within ``window`` of ``now``. Every feed asks (through
        ``gap``), so the set is kept, with the span of times over which it cannot change:
        until the first of them goes idle or the next of the others' times comes in reach, and
        for at most ``window / 8``. A flush by one outside it, or a forget, drops it."""
        kept = self._kept
        if kept is not None and kept[0] <= now < kept[1]:
            return kept[2]
        window = self.window
        last = self._last.copy()
        busy = frozenset(k for k, t in last.items() if abs(now - t) <= window)
        until = now + window / 8
        for k, t in last.items():
            if k in busy:
                until = min(until, t + window)
            elif t - window > now:  # another clock's time, ahead: in reach later
                until = min(until, t - window)
        self._kept = (now, until, busy)
        return busy

    def flushed(self, key: object, now: float) -> None:
        self._last[id(key)] = now
        kept = self._kept
        # The kept set stays right only for a flush by one of its members at a time within its
        # span (its new time is then in reach throughout the span); any other flush drops it.
        if kept is not None and not (id(key) in kept[2] and kept[0] <= now < kept[1]):
            self._kept = None
        self._times.append(now)
        if len(self._times) > 2 * self._limit:
            with contextlib.suppress(IndexError):
                self._times.popleft()
        if len(self._last) > 64:  # forget long-idle coalescers that were never closed
            for k, t in self._last.copy().items():
                if abs(now - t) > self.window:
                    self._last.pop(k, None)
            self._kept = None

    def forget(self, key: object) -> None:
        self._last.pop(id(key), None)
        self._kept = None


SHARED_BUDGET = FlushBudget()


class ByteCoalescer:
    """Thread-safe byte batching with a bounded replay backlog."""

    def __init__(
        self,
        send: Send,
        *,
        interval: float = DEFAULT_INTERVAL,
        max_pending: int = DEFAULT_MAX_PENDING,
        backlog_limit: int = DEFAULT_BACKLOG_LIMIT,
        min_gap: float = DEFAULT_MIN_GAP,
        schedule: Schedule = thread_timer,
        clock: Callable[[], float] = time.monotonic,
        budget: FlushBudget | None = SHARED_BUDGET,
        max_message: int = DEFAULT_MAX_MESSAGE,
        window: int = DEFAULT_WINDOW,
        ack_timeout: float = DEFAULT_ACK_TIMEOUT,
        max_held: int = DEFAULT_MAX_HELD,
    ) -> None:
        if interval <= 0 or max_pending <= 0 or backlog_limit <= 0:
            raise ValueError("interval, max_pending and backlog_limit must be positive")
        if max_message <= 0 or window <= 0 or ack_timeout <= 0 or max_held <= 0:
            raise ValueError("max_message, window, ack_timeout and max_held must be positive")
        if min_gap < 0:
            raise ValueError("min_gap must not be negative")
        self._send = send
        self._interval = interval
        self._max_pending = max_pending
        self._backlog_limit = backlog_limit
        self._min_gap = min_gap
        self._schedule = schedule
        self._clock = clock
        self._budget = budget
        self._last_flush = -math.inf
        self._due = math.inf  # when the armed timer fires
        # One lock guards the state *and* the send, so messages leave in seq order even when a
        # timer thread and a feeding thread flush at the same moment.
        self._lock = threading.RLock()
        self._pending: deque[bytes] = deque()
        self._pending_size = 0
        self._backlog: deque[bytes] = deque()
        self._backlog_size = 0
        self._omitted = 0
        self._total = 0
        self._seq = 0
        self._timer: TimerHandle | None = None
        self._timer_generation = 0
        self._closed = False
        # flow control (see the module's docstring)
        self._max_message = max_message
        self._window = window
        self._ack_timeout = ack_timeout
        self._max_held = max_held
        self._paced = False  # a view acknowledges: keep `window`
        self._capped = False  # a view has acknowledged: messages of at most max_message
        self._acked_seq = 0  # the highest seq acknowledged
        self._last_ack = -math.inf  # when the last ack came (clock)
        self._sent_bytes = 0  # bytes sent in messages since pacing began
        self._acked_bytes = 0  # ... of which acknowledged
        self._ends: deque[tuple[int, int]] = deque()  # (seq, _sent_bytes after it), unacked
        self._stall: TimerHandle | None = None  # fires ack_timeout after a blocked flush

    # -- observers ---------------------------------------------------------------------------

    @property
    def seq(self) -> int:
        """Sequence number of the last message sent (0 before the first)."""
        return self._seq

    @property
    def total_bytes(self) -> int:
        """Every byte ever accepted, including pending and omitted ones."""
        return self._total

    @property
    def omitted(self) -> int:
        """Bytes dropped from the front of the backlog because of ``backlog_limit``."""
        return self._omitted

    @property
    def paced(self) -> bool:
        """A view acknowledges messages and the window is kept."""
        return self._paced

    @property
    def in_flight(self) -> int:
        """Bytes sent since pacing began and not acknowledged (0 while not paced)."""
        return self._sent_bytes - self._acked_bytes

    @property
    def pending_bytes(self) -> int:
        """Bytes accepted and not sent yet."""
        return self._pending_size

    def data(self) -> bytes:
        """The retained transcript: backlog plus bytes not flushed yet."""
        with self._lock:
            return b"".join([*self._backlog, *self._pending])

    # -- input -------------------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        """Queue ``data``; flush now if enough is pending, else make sure a flush is scheduled."""
        if not data:
            return
        with self._lock:
            if self._closed:
                return
            chunk = bytes(data)
            self._pending.append(chunk)
            self._pending_size += len(chunk)
            self._total += len(chunk)
            now = self._clock()
            if self._paced and self._pending_size > self._max_held:
                self._unpace_locked()  # a view far behind: hold no more, send as before
            if self._pending_size >= self._max_pending:
                ready_at = self._ready_at(now)
                if ready_at <= now:
                    self._flush_locked(now)
                else:
                    self._arm_locked(ready_at, now)
            elif self._timer is None:
                self._arm_locked(max(now + self._interval, self._last_flush + self._gap(now)), now)

    def flush(self) -> None:
        """Send whatever is pending now (while paced: what the window allows now, the rest as
        acks come)."""
        with self._lock:
            self._flush_locked()

    def ack(self, seq: int) -> None:
        """A view has received every message up to ``seq``: pace from now on, and send what
        the window now allows. Acks may come late, repeated or out of order (several views:
        the highest counts); one for a seq never sent is ignored."""
        with self._lock:
            if self._closed or seq > self._seq:
                return
            self._last_ack = self._clock()
            if not self._paced:
                self._paced = self._capped = True  # what was sent before counts as received
                self._acked_bytes = self._sent_bytes
                self._ends.clear()
                self._acked_seq = max(self._acked_seq, seq)
            elif seq > self._acked_seq:
                self._acked_seq = seq
                ends = self._ends
                while ends and ends[0][0] <= seq:
                    self._acked_bytes = ends.popleft()[1]
            if self._pending and self._timer is None:  # held for the window: send more now,
                # in a slot of the shared budget (not after min_gap: the acks pace this flow)
                now = self._last_ack
                slot = now if self._budget is None else self._budget.next_slot(now)
                if slot <= now:
                    self._flush_locked(now)
                else:
                    self._arm_locked(slot, now)

    def replace(self, data: bytes) -> None:
        """Make ``data`` the whole transcript (an authoritative snapshot) and tell the views."""
        with self._lock:
            if self._closed:
                return
            self._cancel_timer_locked()
            self._pending.clear()
            self._pending_size = 0
            self._backlog.clear()
            self._backlog_size = 0
            self._omitted = 0
            chunk = bytes(data)
            self._total += len(chunk)
            self._append_backlog_locked(chunk)
            self._seq += 1
            payload = b"".join(self._backlog)
            self._sent_locked(len(payload))
            self._send({"type": "reset", "seq": self._seq, "omitted": self._omitted}, [payload])

    def send_backlog(self, token: str, lines: int | None = None) -> None:
        """Answer a view's ``ready``: flush, then send everything retained as one message.

        The answer carries the seq of the last chunk it covers, so the view can drop chunks it
        already got and detect a gap after it. ``lines``: the most lines the view keeps (its
        scrollback and screen); then only the bytes from the start of the last ``lines`` lines
        are sent (those alone push every older row out of its buffer, so it shows the same,
        as the view's own `WriteQueue.trimTo` does), the rest counted as ``omitted`` (the view
        starts from a full reset and a note of them, which leaves default colours). A view
        late to a flood is not handed megabytes in one message.
        """
        with self._lock:
            self._flush_locked()
            payload = b"".join(self._backlog)
            omitted = self._omitted
            cut = 0 if lines is None else tail_start(payload, lines)
            if cut:  # (the view writes a full reset and a note of what was omitted first)
                payload = payload[cut:]
                omitted += cut
            self._sent_locked(len(payload))
            self._send(
                {"type": "backlog", "seq": self._seq, "token": token, "omitted": omitted},
                [payload],
            )

    def close(self) -> None:
        """Flush what is pending (all of it, the window aside) and stop accepting bytes."""
        with self._lock:
            self._unpace_locked()
            self._flush_locked()
            self._closed = True
        if self._budget is not None:
            self._budget.forget(self)

    # -- internals ---------------------------------------------------------------------------

    def _ready_at(self, now: float) -> float:
        """When the next flush may go: our gap after the last, and a slot in the budget."""
        ready_at = self._last_flush + self._gap(now)
        if self._budget is not None:
            ready_at = max(ready_at, self._budget.next_slot(now))
        return ready_at

    def _gap(self, now: float) -> float:
        """Least time between two flushes: our own ``min_gap`` or our share of the budget."""
        if self._budget is None:
            return self._min_gap
        return max(self._min_gap, self._budget.gap(self, now))

    def _arm_locked(self, due: float, now: float) -> None:
        """Make sure a flush happens by ``due`` (an earlier armed timer is kept)."""
        if self._timer is not None and self._due <= due:
            return
        self._cancel_timer_locked()
        generation = self._timer_generation
        self._due = due
        self._timer = self._schedule(max(due - now, 1e-3), lambda: self._on_timer(generation))

    def _on_timer(self, generation: int) -> None:
        with self._lock:
            if generation != self._timer_generation:
                return  # superseded by a size-triggered flush
            self._timer = None
            # Our own gap was kept when the timer was armed; the budget's window may have
            # filled up since (other terminals flushed): then wait for its next slot.
            now = self._clock()
            slot = now if self._budget is None else self._budget.next_slot(now)
            if slot > now and self._pending:
                self._arm_locked(slot, now)
                return
            self._flush_locked(now)

    def _cancel_timer_locked(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_generation += 1
        self._due = math.inf

    def _flush_locked(self, now: float | None = None) -> None:
        self._cancel_timer_locked()
        if not self._pending:
            return
        if self._paced and self.in_flight >= self._window:
            self._await_ack_locked()
            return
        now = self._last_flush = self._clock() if now is None else now
        budget = self._budget
        if budget is not None:
            budget.flushed(self, now)
        if not self._capped:  # no view acks: everything pending in one message, as ever
            piece = self._take_locked(self._pending_size)
            self._append_backlog_locked(piece)
            self._seq += 1
            self._send({"type": "chunk", "seq": self._seq}, [piece])
            return
        # A view acks: messages of at most max_message bytes, each one a message of the shared
        # budget (one flush may send a few), and while paced never more than the window holds.
        first = True
        while self._pending:
            limit = self._max_message
            if self._paced:
                room = self._window - self.in_flight
                if room <= 0:
                    self._await_ack_locked()
                    return
                limit = min(limit, room)
            if not first and budget is not None:
                if budget.next_slot(now) > now:
                    self._arm_locked(self._ready_at(now), now)
                    return
                budget.flushed(self, now)
            first = False
            piece = self._take_locked(limit)
            self._append_backlog_locked(piece)
            self._seq += 1
            self._sent_locked(len(piece))
            self._send({"type": "chunk", "seq": self._seq}, [piece])

    def _take_locked(self, limit: int) -> bytes:
        """The first pending bytes, at most ``limit`` of them (all of them when they fit)."""
        pending = self._pending
        if self._pending_size <= limit:
            piece = pending[0] if len(pending) == 1 else b"".join(pending)
            pending.clear()
            self._pending_size = 0
            return piece
        parts: list[bytes] = []
        size = 0
        while size < limit:
            first = pending[0]
            if size + len(first) <= limit:
                parts.append(pending.popleft())
                size += len(first)
            else:
                cut = limit - size
                parts.append(first[:cut])
                pending[0] = first[cut:]
                size = limit
        self._pending_size -= size
        return b"".join(parts)

    def _sent_locked(self, size: int) -> None:
        """Count a message of ``size`` bytes, just numbered ``_seq``, as unacknowledged."""
        if self._paced:
            self._sent_bytes += size
            self._ends.append((self._seq, self._sent_bytes))

    def _unpace_locked(self) -> None:
        """Stop keeping the window (until the next ack)."""
        self._paced = False
        self._sent_bytes = self._acked_bytes = 0
        self._ends.clear()
        if self._stall is not None:
            self._stall.cancel()
            self._stall = None

    def _await_ack_locked(self) -> None:
        """The window is full: the next ack sends more; without one for ``ack_timeout``
        seconds, stop pacing and send."""
        if self._stall is not None:
            return
        waited_from = self._last_ack

        def stalled() -> None:
            with self._lock:
                self._stall = None
                if self._closed or not self._paced:
                    return
                if self._last_ack != waited_from:  # acks came meanwhile: wait again if needed
                    if self._pending and self.in_flight >= self._window:
                        self._await_ack_locked()
                    return
                self._unpace_locked()
                self._flush_locked()

        self._stall = self._schedule(self._ack_timeout, stalled)

    def _append_backlog_locked(self, chunk: bytes) -> None:
        if not chunk:
            return
        self._backlog.append(chunk)
        self._backlog_size += len(chunk)
        excess = self._backlog_size - self._backlog_limit
        while excess > 0:
            first = self._backlog[0]
            if len(first) <= excess:
                self._backlog.popleft()
                dropped = len(first)
            else:
                self._backlog[0] = first[excess:]
                dropped = excess
            self._backlog_size -= dropped
            self._omitted += dropped
            excess -= dropped
