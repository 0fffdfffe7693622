"""TerminalWidget / ByteCoalescer: batching, sequencing, backlog replay, cancel, static repr."""

from __future__ import annotations

import base64
import json
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from acp_notebook._widgets import TerminalWidget
from acp_notebook._widgets._coalesce import ByteCoalescer, FlushBudget, TimerHandle, thread_timer
from acp_notebook._widgets._version import MODULE_VERSION

ROOT = Path(__file__).resolve().parents[1]
KIB = 1024
MAX_PENDING = 64 * KIB
SAMPLE = b"\x1b[32mok\x1b[0m\r\nprogress 10%\rprogress 100%\r\n"

Message = tuple[Mapping[str, Any], list[bytes]]


class ManualTimer:
    def __init__(self, callback: Callable[[], None]) -> None:
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class ManualScheduler:
    """Timers that fire only when the test says so."""

    def __init__(self) -> None:
        self.timers: list[ManualTimer] = []

    def __call__(self, delay: float, callback: Callable[[], None]) -> TimerHandle:
        assert delay > 0
        timer = ManualTimer(callback)
        self.timers.append(timer)
        return timer

    def fire_all(self) -> int:
        live = [t for t in self.timers if not t.cancelled]
        self.timers.clear()
        for timer in live:
            timer.callback()
        return len(live)


def recording(widget: TerminalWidget) -> list[Message]:
    sent: list[Message] = []

    def send(content: dict[str, Any], buffers: list[bytes] | None = None) -> None:
        sent.append((content, [bytes(b) for b in buffers or []]))

    widget.send = send
    return sent


@pytest.fixture
def make_widget() -> Iterator[Callable[..., TerminalWidget]]:
    made: list[TerminalWidget] = []

    def make(**kwargs: Any) -> TerminalWidget:
        widget = TerminalWidget(**kwargs)
        made.append(widget)
        return widget

    yield make
    for widget in made:
        widget.close()


def payload(size: int) -> bytes:
    pattern = b"line \x1b[31mred\x1b[0m \xc3\xbc 0123456789\r\n"
    return (pattern * (size // len(pattern) + 1))[:size]


def feed_in_thread(widget: TerminalWidget, data: bytes, piece: int = KIB) -> None:
    def run() -> None:
        for start in range(0, len(data), piece):
            widget.feed(data[start : start + piece])

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()


def chunks(sent: list[Message]) -> list[Message]:
    return [m for m in sent if m[0]["type"] == "chunk"]


def test_20mb_from_a_thread_is_size_batched_when_no_timer_fires(
    make_widget: Callable[..., TerminalWidget],
) -> None:
    scheduler = ManualScheduler()
    # size flushes alone: no per-terminal gap, no shared budget
    widget = make_widget(schedule=scheduler, min_gap=0, budget=None)
    sent = recording(widget)
    data = payload(20_000_000)

    feed_in_thread(widget, data)
    assert scheduler.fire_all() == 1  # only the remainder after the last 64 KiB flush waits

    msgs = chunks(sent)
    assert len(msgs) == len(data) // MAX_PENDING + 1
    assert [m[0]["seq"] for m in msgs] == list(range(1, len(msgs) + 1))
    assert all(len(m[1]) == 1 for m in msgs)
    assert all(len(m[1][0]) == MAX_PENDING for m in msgs[:-1])
    assert b"".join(m[1][0] for m in msgs) == data
    limit = 16 * 2**20  # the default backlog cap keeps the newest 16 MiB
    assert widget.data == data[-limit:]
    assert widget.omitted_bytes == len(data) - limit


def test_20mb_from_a_thread_with_real_timers_is_bounded_by_the_flush_policy(
    make_widget: Callable[..., TerminalWidget],
) -> None:
    fired = 0
    lock = threading.Lock()

    def counting(delay: float, callback: Callable[[], None]) -> TimerHandle:
        def wrapped() -> None:
            nonlocal fired
            with lock:
                fired += 1
            callback()

        return thread_timer(delay, wrapped)

    widget = make_widget(schedule=counting)
    sent = recording(widget)
    data = payload(20 * 2**20)

    feed_in_thread(widget, data)
    widget.flush()

    msgs = chunks(sent)
    assert [m[0]["seq"] for m in msgs] == list(range(1, len(msgs) + 1))
    assert b"".join(m[1][0] for m in msgs) == data
    small = [m for m in msgs if len(m[1][0]) < MAX_PENDING]
    # every message is a full 64 KiB batch, a timer flush, or the final explicit flush
    assert len(small) <= fired + 1
    assert len(msgs) <= len(data) // MAX_PENDING + fired + 1


class SimulatedTime:
    """A clock plus timers that fire, in order, as the test advances the clock."""

    def __init__(self) -> None:
        self.now = 0.0
        self.timers: list[tuple[float, ManualTimer]] = []
        self.delays: list[float] = []

    def clock(self) -> float:
        return self.now

    def schedule(self, delay: float, callback: Callable[[], None]) -> TimerHandle:
        timer = ManualTimer(callback)
        self.delays.append(delay)
        self.timers.append((self.now + delay, timer))
        return timer

    def advance(self, seconds: float) -> None:
        end = self.now + seconds
        while True:
            due = sorted((t for t in self.timers if not t[1].cancelled), key=lambda t: t[0])
            if not due or due[0][0] > end:
                break
            when, timer = due[0]
            self.timers.remove((when, timer))
            self.now = max(self.now, when)
            timer.callback()
        self.now = end


def test_a_flood_costs_at_most_one_message_per_min_gap(
    make_widget: Callable[..., TerminalWidget],
) -> None:
    sim = SimulatedTime()
    widget = TerminalWidget(schedule=sim.schedule, min_gap=0.025, budget=FlushBudget())
    widget._coalescer._clock = sim.clock  # the widget takes no clock; the coalescer does
    sent = recording(widget)
    data = payload(20 * 2**20)
    piece = 16 * KIB
    seconds_per_piece = piece / 25e6  # 25 MB/s, about what the embedded agent can flood
    for start in range(0, len(data), piece):
        widget.feed(data[start : start + piece])
        sim.advance(seconds_per_piece)
    sim.advance(1.0)
    widget.close()

    msgs = chunks(sent)
    duration = len(data) / 25e6
    assert b"".join(m[1][0] for m in msgs) == data  # nothing lost, in order
    assert [m[0]["seq"] for m in msgs] == list(range(1, len(msgs) + 1))
    assert len(msgs) <= duration / 0.025 + 2  # about 40 msgs/s, not 25 MB / 64 KiB = 380/s
    assert len(msgs) >= duration / 0.025 / 2  # and it does keep flushing while the flood lasts


@pytest.mark.parametrize("streams", [1, 3, 12])
def test_many_floods_share_one_message_budget(streams: int) -> None:
    """Each terminal alone may send ~33 msgs/s; twelve at once must not send 12 x 33."""
    sim = SimulatedTime()
    budget = FlushBudget(rate=100.0)
    sent: list[list[Message]] = [[] for _ in range(streams)]
    coalescers = [
        ByteCoalescer(
            lambda c, b, out=out: out.append((c, b)),
            schedule=sim.schedule,
            clock=sim.clock,
            budget=budget,
        )
        for out in sent
    ]
    data = [payload(4 * 2**20)[i:] + bytes([i]) for i in range(streams)]
    piece = 16 * KIB
    seconds_per_round = piece / 4e6  # every stream floods at 4 MB/s for about a second
    rounds = max(len(d) for d in data) // piece + 1
    for r in range(rounds):
        for coalescer, d in zip(coalescers, data, strict=True):
            coalescer.feed(d[r * piece : (r + 1) * piece])
        sim.advance(seconds_per_round)
    duration = sim.now
    counts = [len(out) for out in sent]  # before the final flushes
    sim.advance(1.0)
    for coalescer in coalescers:
        coalescer.close()

    for out, d in zip(sent, data, strict=True):
        assert b"".join(b[0] for _c, b in out) == d  # nothing lost, in order
        assert [c["seq"] for c, _b in out] == list(range(1, len(out) + 1))
    per_stream_cap = 1 / 0.03  # the default min_gap
    expected_rate = min(100.0, streams * per_stream_cap)
    assert sum(counts) <= expected_rate * duration + streams  # the budget holds
    assert sum(counts) >= expected_rate * duration * 0.6  # and is not starved either
    assert max(counts) - min(counts) <= 2 + max(counts) // 5  # shared fairly
    assert budget.busy(sim.now) == 0  # closed coalescers leave the budget


def test_the_budget_survives_a_close_from_inside_its_own_methods() -> None:
    """A widget's ``__del__`` closes its coalescer, which leaves the budget; garbage collection
    may run that in the middle of a budget method on the same thread. That once deadlocked."""
    budget = FlushBudget(rate=100.0)
    me, dying = object(), object()
    budget.flushed(dying, 0.0)

    class Now(float):  # does what a collection would, while the budget compares times
        def __sub__(self, other: float) -> float:
            budget.forget(dying)
            budget.flushed(object(), 0.0)
            return float(self) - other

    result: list[float] = []
    worker = threading.Thread(target=lambda: result.append(budget.gap(me, Now(0.5))), daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive(), "FlushBudget.gap deadlocked"
    assert result and result[0] > 0


def test_an_idle_terminal_does_not_use_the_budget() -> None:
    budget = FlushBudget(rate=100.0, window=1.0)
    quiet, busy = object(), object()
    budget.flushed(quiet, 0.0)
    assert budget.gap(busy, 0.5) == pytest.approx(2 / 100)  # quiet flushed 0.5 s ago
    assert budget.gap(busy, 1.6) == pytest.approx(1 / 100)  # and has been idle for a window
    budget.flushed(busy, 1.6)
    assert budget.busy(1.6) == 1
    assert budget.gap(busy, 1.6) == pytest.approx(1 / 100)  # a stream does not count itself
    with pytest.raises(ValueError):
        FlushBudget(rate=0)


def test_a_trickle_is_flushed_after_the_interval() -> None:
    sim = SimulatedTime()
    coalesced: list[Message] = []
    coalescer = ByteCoalescer(
        lambda c, b: coalesced.append((c, b)),
        min_gap=0.025,
        schedule=sim.schedule,
        clock=sim.clock,
        budget=FlushBudget(),  # not the kernel-wide one: this clock is simulated
    )
    coalescer.feed(b"a")
    sim.advance(0.01)
    coalescer.feed(b"b")
    assert coalesced == [] and sim.delays == [0.04]  # one timer, 40 ms after the first byte
    sim.advance(0.03)
    assert [b for _c, b in coalesced] == [[b"ab"]]
    # A 64 KiB burst right after that flush waits for the gap, then goes out at once.
    coalescer.feed(b"x" * MAX_PENDING)
    assert len(coalesced) == 1
    sim.advance(0.025)
    assert len(coalesced) == 2 and coalesced[1][1] == [b"x" * MAX_PENDING]


def test_small_writes_wait_for_the_timer(make_widget: Callable[..., TerminalWidget]) -> None:
    scheduler = ManualScheduler()
    widget = make_widget(schedule=scheduler)
    sent = recording(widget)
    for piece in (b"a", b"b", b"c"):
        widget.feed(piece)
    assert sent == []
    assert len(scheduler.timers) == 1  # one timer per batch, not per write
    scheduler.fire_all()
    assert sent == [({"type": "chunk", "seq": 1}, [b"abc"])]


def test_ready_gets_pending_bytes_then_the_whole_backlog(
    make_widget: Callable[..., TerminalWidget],
) -> None:
    scheduler = ManualScheduler()
    widget = make_widget(schedule=scheduler)
    sent = recording(widget)
    widget.feed(SAMPLE)
    scheduler.fire_all()
    widget.feed(b"tail\r\n")  # still pending when the view says ready

    widget._handle_view_msg(widget, {"type": "ready", "token": "view-2"}, [])

    assert [m[0] for m in sent] == [
        {"type": "chunk", "seq": 1},
        {"type": "chunk", "seq": 2},
        {"type": "backlog", "seq": 2, "token": "view-2", "omitted": 0},
    ]
    assert sent[-1][1] == [SAMPLE + b"tail\r\n"]
    widget.feed(b"later")
    scheduler.fire_all()
    assert sent[-1] == ({"type": "chunk", "seq": 3}, [b"later"])


def test_backlog_is_bounded_and_reports_what_was_omitted(
    make_widget: Callable[..., TerminalWidget],
) -> None:
    widget = make_widget(max_pending=100, backlog_limit=1000)
    sent = recording(widget)
    data = bytes(range(256)) * 10
    for start in range(0, len(data), 70):
        widget.feed(data[start : start + 70])
    widget._handle_view_msg(widget, {"type": "ready", "token": "t"}, [])

    content, buffers = sent[-1]
    assert content["type"] == "backlog"
    assert content["omitted"] == len(data) - 1000
    assert buffers == [data[-1000:]]
    assert widget.omitted_bytes == len(data) - 1000
    assert b"".join(m[1][0] for m in chunks(sent)) == data  # live views still got everything


def test_replace_resets_the_transcript(make_widget: Callable[..., TerminalWidget]) -> None:
    scheduler = ManualScheduler()
    widget = make_widget(schedule=scheduler)
    sent = recording(widget)
    widget.feed(b"old")
    widget.replace(b"snapshot")
    assert scheduler.fire_all() == 0  # the pending write was superseded
    assert sent == [({"type": "reset", "seq": 1, "omitted": 0}, [b"snapshot"])]
    assert widget.data == b"snapshot"


def test_closed_widget_ignores_later_bytes(make_widget: Callable[..., TerminalWidget]) -> None:
    coalesced: list[Message] = []
    coalescer = ByteCoalescer(lambda c, b: coalesced.append((c, b)), schedule=ManualScheduler())
    coalescer.feed(b"x")
    coalescer.close()
    coalescer.feed(b"y")
    assert coalesced == [({"type": "chunk", "seq": 1}, [b"x"])]


def test_cancel_only_when_advertised_and_running(
    make_widget: Callable[..., TerminalWidget],
) -> None:
    calls: list[TerminalWidget] = []
    widget = make_widget(on_cancel=calls.append)
    widget._handle_view_msg(widget, {"type": "cancel"}, [])
    assert calls == []
    widget.can_cancel = True
    widget._handle_view_msg(widget, {"type": "cancel"}, [])
    assert calls == [widget]
    widget.exit_status = {"exitCode": None, "signal": "SIGTERM"}
    widget._handle_view_msg(widget, {"type": "cancel"}, [])
    assert calls == [widget]


def test_input_and_resize_only_while_it_accepts_input(
    make_widget: Callable[..., TerminalWidget],
) -> None:
    typed: list[str] = []
    sizes: list[tuple[int, int]] = []
    closed: list[TerminalWidget] = []
    widget = make_widget()
    widget.on_input(lambda _w, data: typed.append(data))
    widget.on_resize(lambda _w, cols, rows: sizes.append((cols, rows)))
    widget.on_close(closed.append)
    assert widget.accepts_input is False  # an agent's terminal: read-only
    widget._handle_view_msg(widget, {"type": "input", "data": "rm -rf /\r"}, [])
    widget._handle_view_msg(widget, {"type": "resize", "cols": 100, "rows": 30}, [])
    assert typed == [] and sizes == []
    widget.accepts_input = True  # a sign-in terminal
    widget._handle_view_msg(widget, {"type": "input", "data": "pw\r"}, [])
    widget._handle_view_msg(widget, {"type": "resize", "cols": 100, "rows": 30}, [])
    widget._handle_view_msg(widget, {"type": "resize", "cols": 10**6, "rows": 30}, [])
    assert typed == ["pw\r"] and sizes == [(100, 30)]
    widget.close()
    widget.close()
    assert closed == [widget]


def test_static_bundle_is_deterministic_and_escaped(
    make_widget: Callable[..., TerminalWidget],
) -> None:
    widget = make_widget(command="echo '<b>'", cwd="/tmp/x", schedule=ManualScheduler())
    widget.feed(SAMPLE + b"<script>\r\n")
    widget.exit_status = {"exitCode": 0}
    bundle = widget._repr_mimebundle_()
    plain = bundle["text/plain"]
    assert plain == "$ echo '<b>'  (in /tmp/x)\nok\nprogress 100%\n<script>\n[exit 0]"
    assert not re.search(r"0x[0-9a-f]{6,}", plain)
    assert "<script>" not in bundle["text/html"]
    assert "&lt;script&gt;" in bundle["text/html"]
    assert "application/vnd.jupyter.widget-view+json" in bundle


def test_render_static_is_pluggable(make_widget: Callable[..., TerminalWidget]) -> None:
    seen: list[bytes] = []

    def render(data: bytes) -> tuple[str, str]:
        seen.append(data)
        return "PLAIN", "<i>HTML</i>"

    widget = make_widget(render_static=render, schedule=ManualScheduler())
    widget.feed(b"abc")
    bundle = widget.static_bundle()
    assert seen == [b"abc"]
    assert "PLAIN" in bundle["text/plain"]
    assert "<i>HTML</i>" in bundle["text/html"]


def test_front_end_version_matches() -> None:
    package = json.loads((ROOT / "labextension" / "package.json").read_text())
    assert package["name"] == "acp-notebook"
    assert "^" + package["version"] == MODULE_VERSION
    version_ts = (ROOT / "labextension" / "src" / "version.ts").read_text()
    assert f"MODULE_VERSION = '{package['version']}'" in version_ts


def test_real_timers_run_on_one_long_lived_thread() -> None:
    """Issue 10 (found by bench_memory): a thread per flush made ipykernel open a zmq socket
    per thread (closed only by a periodic clean-up), so ten flooding terminals piled up
    hundreds of sockets, reached zmq's limit ("Too many open files") and lost messages.
    Every timer runs on one thread that lives on; a cancelled timer never runs."""
    threads: list[threading.Thread] = []
    ran = threading.Event()
    cancelled: list[int] = []

    for _ in range(20):
        done = threading.Event()

        def fire(done: threading.Event = done) -> None:
            threads.append(threading.current_thread())
            done.set()

        thread_timer(0.001, fire)
        assert done.wait(10)
    # Cancelled well before it is due; the later one runs after its turn came.
    thread_timer(0.5, lambda: cancelled.append(1)).cancel()
    thread_timer(0.6, ran.set)
    assert ran.wait(10)
    assert len({id(t) for t in threads}) == 1 and threads[0].is_alive()
    assert threads[0] is not threading.main_thread()
    assert cancelled == []


# -- text-safe transport (issue 26: a gateway's relay breaks on binary frames) -----------------


@pytest.mark.parametrize(
    ("environ", "text"),
    [
        ({}, False),
        ({"KERNEL_GATEWAY": "1"}, True),  # Kernel Gateway
        ({"KERNEL_ID": "5c1e", "KERNEL_USERNAME": "ada"}, True),  # Enterprise Gateway
        ({"KERNEL_GATEWAY": "0"}, False),
        ({"ACP_NOTEBOOK_TERMINAL_TRANSPORT": "text"}, True),
        ({"ACP_NOTEBOOK_TERMINAL_TRANSPORT": " TEXT "}, True),
        ({"ACP_NOTEBOOK_TERMINAL_TRANSPORT": "binary", "KERNEL_GATEWAY": "1"}, False),
        ({"ACP_NOTEBOOK_TERMINAL_TRANSPORT": "auto", "KERNEL_ID": "k"}, True),
        ({"ACP_NOTEBOOK_TERMINAL_TRANSPORT": "bogus"}, False),
    ],
)
def test_text_safe_is_chosen_by_the_setting_else_by_a_gateway(
    environ: dict[str, str], text: bool
) -> None:
    from acp_notebook._widgets._terminal import text_safe_default

    assert text_safe_default(environ) is text


def test_a_text_safe_terminal_sends_base64_and_no_buffer(
    make_widget: Callable[..., TerminalWidget],
) -> None:
    scheduler = ManualScheduler()
    widget = make_widget(schedule=scheduler, text_safe=True)
    sent = recording(widget)
    widget.feed(SAMPLE + b"\xff\xfe not utf-8")
    scheduler.fire_all()
    widget._handle_view_msg(widget, {"type": "ready", "token": "v"}, [])
    assert [m[1] for m in sent] == [[], []]  # no binary frame at all
    chunk, backlog = (m[0] for m in sent)
    assert chunk["type"] == "chunk" and backlog["type"] == "backlog"
    for message in (chunk, backlog):
        assert base64.b64decode(message["b64"]) == SAMPLE + b"\xff\xfe not utf-8"
        json.dumps(message).encode("utf-8")  # the whole message is plain text


def test_a_view_that_asks_for_text_gets_text_from_then_on(
    make_widget: Callable[..., TerminalWidget],
) -> None:
    scheduler = ManualScheduler()
    widget = make_widget(schedule=scheduler)
    sent = recording(widget)
    widget.feed(b"before")
    scheduler.fire_all()
    assert sent[-1] == ({"type": "chunk", "seq": 1}, [b"before"])
    widget._handle_view_msg(widget, {"type": "ready", "token": "v", "text": True}, [])
    assert widget.text_safe
    assert sent[-1][1] == [] and base64.b64decode(sent[-1][0]["b64"]) == b"before"
    widget.feed(b"after")
    scheduler.fire_all()
    assert sent[-1] == ({"type": "chunk", "seq": 2, "b64": base64.b64encode(b"after").decode()}, [])


def test_a_ready_says_whether_its_page_is_unstyled(
    make_widget: Callable[..., TerminalWidget],
) -> None:
    widget = make_widget()
    seen: list[bool] = []
    widget.on_ready(lambda ready: seen.append(ready.unstyled))
    widget._handle_view_msg(widget, {"type": "ready", "token": "a", "unstyled": True}, [])
    widget._handle_view_msg(widget, {"type": "ready", "token": "b"}, [])
    assert seen == [True, False] and not widget.unstyled


def test_the_text_view_is_redrawn_at_a_bounded_rate_and_the_last_change_always(
    make_widget: Callable[..., TerminalWidget],
) -> None:
    scheduler = ManualScheduler()
    widget = make_widget(schedule=scheduler, command="flood")
    text = widget.text_view()
    for i in range(50):  # a flood: every chunk flushed at once
        widget.feed(f"line {i}\r\n".encode())
        widget.flush()
    assert "line 49" not in text.value  # within the interval of the first drawing: not yet
    armed = [t for t in scheduler.timers if not t.cancelled]
    assert len(armed) == 1  # one redraw due, however many flushes came
    scheduler.fire_all()
    assert "line 49" in text.value
    widget.close()
    assert not [t for t in scheduler.timers if not t.cancelled]
