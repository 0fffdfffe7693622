"""The terminal coalescers' message rate caps, on a simulated clock (issue 16).

However fast bytes come: at most 30 messages in any 1 s window per terminal (the default
``min_gap``), and at most 150 in any 1 s window for all terminals of a kernel together (the
default ``FlushBudget``); nothing lost, sequence numbers contiguous, and the budget not
starved. Windows are closed intervals: two flushes exactly one second apart count together.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import Any

import pytest

from acp_notebook._widgets._coalesce import ByteCoalescer, FlushBudget, TimerHandle

PER_TERMINAL = 30
ALL_TERMINALS = 150  # the target (the budget keeps room for the flushes that do not wait)


class Timer:
    def __init__(self, callback: Callable[[], None]) -> None:
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class Clock:
    """Simulated time with timers that fire in due order as it advances."""

    def __init__(self) -> None:
        self.now = 0.0
        self._heap: list[tuple[float, int, Timer]] = []
        self._n = itertools.count()

    def __call__(self) -> float:
        return self.now

    def schedule(self, delay: float, callback: Callable[[], None]) -> TimerHandle:
        timer = Timer(callback)
        heapq.heappush(self._heap, (self.now + delay, next(self._n), timer))
        return timer

    def advance(self, seconds: float) -> None:
        end = self.now + seconds
        while self._heap and self._heap[0][0] <= end:
            when, _, timer = heapq.heappop(self._heap)
            if not timer.cancelled:
                self.now = max(self.now, when)
                timer.callback()
        self.now = end


def most_in_a_second(times: list[float]) -> int:
    times = sorted(times)
    best, lo = 0, 0
    for hi, t in enumerate(times):
        while t - times[lo] > 1.0 + 1e-9:
            lo += 1
        best = max(best, hi - lo + 1)
    return best


@pytest.mark.parametrize("streams", [1, 2, 5, 10, 40])
@pytest.mark.parametrize("piece", [1024, 16 * 1024])
def test_no_flood_goes_over_the_caps(streams: int, piece: int) -> None:
    clock = Clock()
    budget = FlushBudget()  # the kernel-wide default rate, on this clock
    # Every terminal is fed the 251 pieces below in turn, so the bytes it must send are that
    # cycle repeated: each message is compared with it where it falls, and not kept (40
    # terminals at 10 MB/s for 3 s are 1.2 GB: kept whole, sent and fed would fill memory).
    pieces = [bytes([value]) * piece for value in range(251)]
    cycle = b"".join(pieces)
    sent: list[list[tuple[float, dict[str, Any]]]] = [[] for _ in range(streams)]
    got = [0] * streams  # bytes sent so far
    wrong: list[tuple[int, int]] = []  # (terminal, offset) of each message that differs

    def sender(i: int) -> Callable[..., None]:
        def send(content: Any, buffers: list[bytes]) -> None:
            sent[i].append((clock.now, dict(content)))
            if not same_as_cycle(buffers[0], got[i]):
                wrong.append((i, got[i]))
            got[i] += len(buffers[0])

        return send

    def same_as_cycle(data: bytes, at: int) -> bool:
        done = 0
        while done < len(data):
            start = (at + done) % len(cycle)
            take = min(len(cycle) - start, len(data) - done)
            if data[done : done + take] != cycle[start : start + take]:
                return False
            done += take
        return True

    coalescers = [
        ByteCoalescer(sender(i), schedule=clock.schedule, clock=clock, budget=budget)
        for i in range(streams)
    ]
    fed = 0  # bytes fed to each terminal
    # Each terminal gets 10 MB/s: five times max_pending (64 KiB) arrives between two of its
    # messages (30 a second), so every flush is due to size and the caps alone pace them. A
    # faster feed only repeats the same flushes (50 MB/s took 45 s of CPU for 40 terminals).
    step = piece / 10e6
    n = 0
    while clock.now < 3.0:
        data = pieces[n % 251]
        for coalescer in coalescers:
            coalescer.feed(data)
        fed += piece
        n += 1
        clock.advance(step)
    live = [list(out) for out in sent]  # before the final flushes
    clock.advance(1.0)
    for coalescer in coalescers:
        coalescer.close()

    assert wrong == [] and got == [fed] * streams  # nothing lost, in order
    for out in sent:
        assert [c["seq"] for _t, c in out] == list(range(1, len(out) + 1))
    per = [most_in_a_second([t for t, _c in out]) for out in live]
    every = [t for out in live for t, _c in out]
    assert max(per) <= PER_TERMINAL
    assert most_in_a_second(every) <= ALL_TERMINALS
    # and the caps are used: the budget is not starved by the windows
    expected = min(budget.rate, streams * PER_TERMINAL)
    assert len(every) >= 0.7 * expected * 3.0
