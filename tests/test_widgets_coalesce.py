"""_widgets/_coalesce.ByteCoalescer alone (no widget): the messages it sends, as _protocols
types them, their sequence numbers, the bounded backlog. Flush timing and the shared budget
are tested through TerminalWidget in tests/test_widgets_terminal.py."""

from __future__ import annotations

from collections.abc import Callable

from acp_notebook._widgets import _protocols
from acp_notebook._widgets._coalesce import ByteCoalescer, TimerHandle
from acp_notebook._widgets._protocols import TerminalToView

Sent = list[tuple[TerminalToView, list[bytes]]]


class _Held:
    """A scheduler whose timers never fire: only sizes and explicit calls flush."""

    def __init__(self) -> None:
        self.armed = 0

    def __call__(self, _delay: float, _callback: Callable[[], None]) -> TimerHandle:
        self.armed += 1
        return self

    def cancel(self) -> None:
        pass


def _coalescer(**kwargs: object) -> tuple[ByteCoalescer, Sent]:
    sent: Sent = []
    coalescer = ByteCoalescer(
        lambda content, buffers: sent.append((content, buffers)),
        schedule=_Held(),
        budget=None,
        min_gap=0,
        **kwargs,  # type: ignore[arg-type]
    )
    return coalescer, sent


def _keys(name: str) -> set[str]:
    """The fields every message of this type has (not the optional ``b64`` of a text-safe
    path, which the widget adds)."""
    return set(getattr(_protocols, name).__required_keys__)


def test_every_message_has_exactly_the_fields_of_its_type() -> None:
    coalescer, sent = _coalescer(max_pending=4)
    coalescer.feed(b"abcd")  # size: flushed at once
    coalescer.send_backlog("tok")
    coalescer.replace(b"new screen")
    kinds = {"chunk": "TerminalChunk", "backlog": "TerminalBacklog", "reset": "TerminalReset"}
    assert [content["type"] for content, _ in sent] == ["chunk", "backlog", "reset"]
    for content, buffers in sent:
        assert set(content) == _keys(kinds[content["type"]])
        assert len(buffers) == 1  # the bytes travel as the one buffer, never in the JSON


def test_seq_goes_up_by_one_per_chunk_and_the_backlog_names_the_last() -> None:
    coalescer, sent = _coalescer(max_pending=2)
    for piece in (b"ab", b"cd", b"ef"):
        coalescer.feed(piece)
    coalescer.feed(b"g")  # pending: the backlog flushes it first
    coalescer.send_backlog("view-1")
    assert [(c["type"], c["seq"]) for c, _ in sent] == [
        ("chunk", 1),
        ("chunk", 2),
        ("chunk", 3),
        ("chunk", 4),
        ("backlog", 4),
    ]
    backlog, buffers = sent[-1]
    assert backlog == {"type": "backlog", "seq": 4, "token": "view-1", "omitted": 0}
    assert buffers == [b"abcdefg"]


def test_the_backlog_is_bounded_and_says_how_much_it_dropped() -> None:
    coalescer, sent = _coalescer(max_pending=10, backlog_limit=16)
    for _ in range(5):
        coalescer.feed(b"0123456789")
    coalescer.send_backlog("t")
    content, buffers = sent[-1]
    assert content["type"] == "backlog"
    assert content["omitted"] == coalescer.omitted > 0
    assert len(buffers[0]) + coalescer.omitted == coalescer.total_bytes == 50
    assert buffers[0] == coalescer.data()


def test_a_reset_replaces_the_transcript_and_closed_drops_bytes() -> None:
    coalescer, sent = _coalescer(max_pending=100)
    coalescer.feed(b"old")
    coalescer.replace(b"snapshot")
    assert sent[-1] == ({"type": "reset", "seq": 1, "omitted": 0}, [b"snapshot"])
    assert coalescer.data() == b"snapshot"
    coalescer.close()
    coalescer.feed(b"late")
    assert coalescer.data() == b"snapshot" and len(sent) == 1
