"""Flow control between a terminal view and the kernel (_coalesce.ByteCoalescer.ack, the
view's ``ack`` message): while a view acknowledges, messages are capped and at most a window
is unacknowledged; a view that never acks, stops acking, or acks out of order never stalls
the kernel nor loses a byte of the transcript."""

from __future__ import annotations

from collections.abc import Callable

from acp_notebook._widgets._coalesce import ByteCoalescer, FlushBudget, tail_start
from acp_notebook._widgets._protocols import TerminalToView
from acp_notebook._widgets._terminal import TerminalWidget

Sent = list[tuple[TerminalToView, list[bytes]]]
KIB = 1024


class _Timers:
    """Timers that fire only when the test says so."""

    def __init__(self) -> None:
        self.armed: list[tuple[float, Callable[[], None], _Handle]] = []

    def __call__(self, delay: float, callback: Callable[[], None]) -> _Handle:
        handle = _Handle()
        self.armed.append((delay, callback, handle))
        return handle

    def fire(self, delay: float) -> int:
        """Run the live timers armed with ``delay``; how many ran."""
        due = [t for t in self.armed if t[0] == delay and not t[2].cancelled]
        self.armed = [t for t in self.armed if t not in due]
        for _delay, callback, _handle in due:
            callback()
        return len(due)


class _Handle:
    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


def _coalescer(**kwargs: object) -> tuple[ByteCoalescer, Sent, _Timers]:
    sent: Sent = []
    timers = _Timers()
    options: dict[str, object] = {
        "max_pending": 64 * KIB,
        "min_gap": 0,
        "budget": None,
        "max_message": 100 * KIB,
        "window": 300 * KIB,
        "ack_timeout": 7.0,
        "max_held": 2000 * KIB,
    }
    options.update(kwargs)
    coalescer = ByteCoalescer(
        lambda content, buffers: sent.append((content, buffers)),
        schedule=timers,
        **options,  # type: ignore[arg-type]
    )
    return coalescer, sent, timers


def _data(size: int) -> bytes:
    return bytes(i % 251 for i in range(size))


def _feed(coalescer: ByteCoalescer, data: bytes, piece: int = 64 * KIB) -> None:
    for start in range(0, len(data), piece):
        coalescer.feed(data[start : start + piece])


def _chunks(sent: Sent) -> list[tuple[int, bytes]]:
    return [(c["seq"], b[0]) for c, b in sent if c["type"] == "chunk"]


def test_a_view_that_never_acks_gets_every_flush_whole_and_at_once() -> None:
    coalescer, sent, _timers = _coalescer()
    data = _data(1000 * KIB)
    coalescer.feed(data)  # one big feed: one message, as before flow control
    assert not coalescer.paced
    assert _chunks(sent) == [(1, data)]
    assert coalescer.pending_bytes == 0


def test_an_acking_view_gets_capped_messages_and_at_most_a_window() -> None:
    coalescer, sent, _timers = _coalescer()
    coalescer.ack(0)  # the view's first ack (its backlog, before any chunk)
    assert coalescer.paced
    data = _data(1000 * KIB)
    _feed(coalescer, data)
    chunks = _chunks(sent)
    assert all(len(b) <= 100 * KIB for _seq, b in chunks)
    assert sum(len(b) for _seq, b in chunks) == 300 * KIB  # the window, then it waits
    assert coalescer.in_flight == 300 * KIB
    assert coalescer.pending_bytes == 700 * KIB
    assert coalescer.data() == data  # held bytes are in the transcript all the same
    while coalescer.pending_bytes:
        before = len(sent)
        coalescer.ack(_chunks(sent)[-1][0])  # the view caught up: more goes
        assert len(sent) > before
        assert coalescer.in_flight <= 300 * KIB
    chunks = _chunks(sent)
    assert [seq for seq, _b in chunks] == list(range(1, len(chunks) + 1))
    assert b"".join(b for _seq, b in chunks) == data  # nothing lost, in order


def test_an_ack_frees_only_what_it_covers() -> None:
    coalescer, sent, _timers = _coalescer()
    coalescer.ack(0)
    coalescer.feed(_data(1000 * KIB))  # one read: messages of 100 KiB
    assert [seq for seq, _b in _chunks(sent)] == [1, 2, 3]
    coalescer.ack(1)  # one message of three received: room for one more
    assert [seq for seq, _b in _chunks(sent)] == [1, 2, 3, 4]
    assert coalescer.in_flight == 300 * KIB


def test_acks_out_of_order_repeated_or_ahead_never_shrink_or_overrun_the_window() -> None:
    coalescer, sent, _timers = _coalescer()
    coalescer.ack(0)
    coalescer.feed(_data(1000 * KIB))  # one read: messages of 100 KiB
    coalescer.ack(3)
    assert [seq for seq, _b in _chunks(sent)] == [1, 2, 3, 4, 5, 6]
    coalescer.ack(2)  # a late ack from another view, or a stale one: changes nothing
    coalescer.ack(3)
    assert len(_chunks(sent)) == 6
    assert coalescer.in_flight == 300 * KIB
    coalescer.ack(99)  # a seq never sent: ignored
    assert len(_chunks(sent)) == 6
    assert coalescer.in_flight == 300 * KIB


def test_a_view_that_stops_acking_stalls_nothing_for_longer_than_the_timeout() -> None:
    coalescer, sent, timers = _coalescer()
    coalescer.ack(0)
    data = _data(1000 * KIB)
    _feed(coalescer, data)
    assert coalescer.pending_bytes == 700 * KIB
    assert timers.fire(7.0) == 1  # no ack for ack_timeout: sent regardless
    assert not coalescer.paced
    assert coalescer.pending_bytes == 0
    assert b"".join(b for _seq, b in _chunks(sent)) == data
    more = _data(500 * KIB)[::-1]
    before = len(sent)
    coalescer.feed(more)  # and no longer waits, in messages still capped
    assert [len(b) for _seq, b in _chunks(sent)[before:]] == [100 * KIB] * 5
    assert b"".join(b for _seq, b in _chunks(sent)[before:]) == more
    coalescer.ack(_chunks(sent)[-1][0])  # it acks again: paced again
    assert coalescer.paced


def test_a_timeout_after_acks_that_came_meanwhile_waits_again() -> None:
    coalescer, _sent, timers = _coalescer()
    coalescer.ack(0)
    coalescer.feed(_data(1000 * KIB))  # one read: messages of 100 KiB
    coalescer.ack(1)  # progress: the window is full again, but acks do come
    assert timers.fire(7.0) == 1
    assert coalescer.paced and coalescer.pending_bytes == 600 * KIB
    assert timers.fire(7.0) == 1  # now none came for a whole timeout
    assert not coalescer.paced and coalescer.pending_bytes == 0


def test_held_bytes_are_bounded() -> None:
    coalescer, sent, _timers = _coalescer(max_held=500 * KIB)
    coalescer.ack(0)
    data = _data(1000 * KIB)
    _feed(coalescer, data)
    assert not coalescer.paced  # more than max_held waited: sent regardless
    assert coalescer.pending_bytes < 500 * KIB + 64 * KIB
    coalescer.flush()
    assert b"".join(b for _seq, b in _chunks(sent)) == data


def test_close_sends_everything_the_window_held() -> None:
    coalescer, sent, _timers = _coalescer()
    coalescer.ack(0)
    data = _data(1000 * KIB)
    _feed(coalescer, data)
    coalescer.close()
    assert b"".join(b for _seq, b in _chunks(sent)) == data


def test_a_backlog_counts_against_the_window_and_covers_the_held_bytes_it_does_not() -> None:
    coalescer, sent, _timers = _coalescer()
    coalescer.ack(0)
    data = _data(1000 * KIB)
    coalescer.feed(data)  # one read: messages of 100 KiB
    coalescer.send_backlog("late-view")  # a second view: what was sent so far
    backlog = [(c, b[0]) for c, b in sent if c["type"] == "backlog"]
    assert len(backlog) == 1 and backlog[0][0]["seq"] == 3
    assert backlog[0][1] == data[: 300 * KIB]
    assert coalescer.in_flight == 600 * KIB  # the backlog's bytes are on the way too
    coalescer.ack(3)  # acked by a view: everything up to seq 3, the backlog included
    while coalescer.pending_bytes:
        coalescer.ack(_chunks(sent)[-1][0])
    assert backlog[0][1] + b"".join(b for seq, b in _chunks(sent) if seq > 3) == data


def test_paced_messages_each_take_a_slot_of_the_shared_budget() -> None:
    budget = FlushBudget(rate=4.0)  # at most 4 messages in any second
    coalescer, sent, _timers = _coalescer(budget=budget, window=2000 * KIB, max_held=9000 * KIB)
    coalescer._clock = lambda: 100.0  # one instant
    coalescer.ack(0)
    coalescer.feed(_data(1000 * KIB))  # one read: messages of 100 KiB
    assert len(_chunks(sent)) == 4  # not the ten that the window would allow


def test_the_widget_routes_a_views_ack_to_its_coalescer() -> None:
    widget = TerminalWidget(schedule=_Timers(), budget=None, min_gap=0)
    try:
        widget._handle_view_msg(widget, {"type": "ack", "seq": 0}, [])
        assert widget._coalescer.paced
        widget._handle_view_msg(widget, {"type": "ack", "seq": "x"}, [])  # not an ack
        assert widget._coalescer.paced
    finally:
        widget.close()


def test_a_late_view_gets_only_the_lines_it_keeps() -> None:
    """A view that says how many lines it keeps (``ready``'s ``lines``) gets the backlog from
    the start of the last that many lines: the rest could not stay in its buffer anyway."""
    coalescer, sent, _timers = _coalescer(max_pending=10**9)
    lines = [b"\x1b[32m%d\x1b[0m\n" % n if n % 7 == 0 else b"line %d\n" % n for n in range(5000)]
    data = b"".join(lines)
    coalescer.feed(data)
    coalescer.send_backlog("kept", lines=100)
    coalescer.send_backlog("all")
    coalescer.send_backlog("more than there is", lines=5000)
    (kept, kept_bytes), (whole, whole_bytes), (short, short_bytes) = [
        (c, b[0]) for c, b in sent if c["type"] == "backlog"
    ]
    tail = b"".join(lines[-100:])
    assert kept_bytes == tail  # (the view writes a reset and "N earlier bytes omitted" first)
    assert kept["omitted"] == len(data) - len(tail) and kept["seq"] == whole["seq"]
    assert whole_bytes == data and whole["omitted"] == 0  # (an older view says no lines)
    assert short_bytes == data and short["omitted"] == 0
    assert coalescer.data() == data  # the transcript itself keeps every byte


def test_tail_start_finds_the_last_lines() -> None:
    assert tail_start(b"a\nb\nc\n", 2) == 2
    # (as the view's trimTo: whole lines are counted, an unfinished one is kept besides)
    assert tail_start(b"a\nb\nc", 1) == 2
    assert tail_start(b"a\nb\n", 2) == 0 and tail_start(b"", 1) == 0


def test_the_widget_passes_the_lines_a_view_keeps_and_ignores_bad_ones() -> None:
    widget = TerminalWidget(schedule=_Timers(), budget=None, min_gap=0)
    sent: Sent = []
    widget._coalescer._send = lambda content, buffers: sent.append((content, buffers))
    try:
        widget._coalescer.feed(b"one\ntwo\nthree\n")
        for lines in (1, "1", True, -1, 0, 10**7):
            widget._handle_view_msg(widget, {"type": "ready", "token": "t", "lines": lines}, [])
        shown = [b[0] for c, b in sent if c["type"] == "backlog"]
        assert shown == [b"three\n"] + [b"one\ntwo\nthree\n"] * 5
    finally:
        widget.close()
