"""acp_notebook._client._replay: bounded update buffers (bulk terminal output goes first) and the
per-iterator stream over a turn's updates."""

from __future__ import annotations

import anyio
import pytest

from acp_notebook import _protocol as p
from acp_notebook._client._replay import UpdateBuffer, UpdateStream, bulk_weight


def chunk(data: str = "AAAA") -> p.TerminalOutputChunk:
    return p.TerminalOutputChunk(terminal_id="t", data=data)


def message(n: int) -> p.SessionInfoUpdate:
    return p.SessionInfoUpdate(title=str(n))


def test_bulk_weight_counts_terminal_base64_only() -> None:
    assert bulk_weight(chunk("QUJD")) == 4
    snapshot = p.TerminalUpdate(terminal_id="t", output=p.TerminalOutput(data="QUJDRA=="))
    assert bulk_weight(snapshot) == 8
    assert bulk_weight(p.TerminalUpdate(terminal_id="t", command="ls")) == 0
    assert bulk_weight(message(1)) == 0
    assert bulk_weight("not an update") == 0


def test_limits_are_checked() -> None:
    with pytest.raises(ValueError):
        UpdateBuffer(0, 10)
    with pytest.raises(ValueError):
        UpdateBuffer(1, -1)
    UpdateBuffer(1, 0)


def test_past_the_item_limit_the_oldest_bulk_update_goes_first() -> None:
    buffer = UpdateBuffer(3, 1000)
    first, c1, c2, last = message(1), chunk(), chunk(), message(2)
    for update in (first, c1, c2, last):
        buffer.push(update)
    assert buffer.snapshot() == [first, c2, last]
    assert buffer.dropped == 1
    assert buffer.bulk_bytes == 4


def test_with_no_bulk_left_the_oldest_update_goes() -> None:
    buffer = UpdateBuffer(2, 1000)
    updates = [message(n) for n in range(4)]
    for update in updates:
        buffer.push(update)
    assert buffer.snapshot() == updates[2:]
    assert buffer.dropped == 2
    assert len(buffer) == 2


def test_past_the_bulk_limit_old_output_goes_and_structure_stays() -> None:
    buffer = UpdateBuffer(100, 10)
    start = message(0)
    buffer.push(start)
    chunks = [chunk("AAAA") for _ in range(5)]
    for c in chunks:
        buffer.push(c)
    assert buffer.snapshot() == [start, chunks[3], chunks[4]]
    assert buffer.bulk_bytes == 8
    assert buffer.dropped == 3


def test_one_chunk_bigger_than_the_limit_is_dropped_at_once() -> None:
    buffer = UpdateBuffer(10, 3)
    buffer.push(chunk("AAAA"))
    assert len(buffer) == 0
    assert buffer.dropped == 1
    assert buffer.bulk_bytes == 0


def test_popleft_keeps_the_bulk_count_right() -> None:
    buffer = UpdateBuffer(10, 100)
    c, m = chunk("AAAA"), message(1)
    buffer.push(c)
    buffer.push(m)
    assert buffer.popleft() == (True, c)
    assert buffer.bulk_bytes == 0
    assert buffer.popleft() == (True, m)
    assert buffer.popleft() == (False, None)
    # with the bulk bytes right, later pushes are counted from zero
    buffer.push(chunk("A" * 100))
    assert len(buffer) == 1


class _Turn:
    """A stream's source: ``done`` and a ``_changed`` event (what a ``Turn`` gives)."""

    def __init__(self) -> None:
        self.done = False
        self._changed = anyio.Event()

    def changed(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()


@pytest.mark.anyio
async def test_a_stream_replays_then_follows_then_ends() -> None:
    turn = _Turn()
    replay = UpdateBuffer(2, 100)
    early = [message(n) for n in range(3)]
    for update in early:
        replay.push(update)
    stream = UpdateStream(turn, replay)
    assert stream.dropped == 1  # the replay had already let one go
    later = message(9)
    got: list[object] = []

    async def consume() -> None:
        async for update in stream:
            got.append(update)

    async with anyio.create_task_group() as tg:
        tg.start_soon(consume)
        await anyio.wait_all_tasks_blocked()
        assert got == early[1:]
        stream._put(later)
        turn.changed()
        await anyio.wait_all_tasks_blocked()
        assert got == [*early[1:], later]
        turn.done = True
        turn.changed()
    assert got == [*early[1:], later]


@pytest.mark.anyio
async def test_a_closed_stream_drops_its_queue_and_stops_filling() -> None:
    turn = _Turn()
    stream = UpdateStream(turn, UpdateBuffer(10, 100))
    stream._put(message(1))
    await stream.aclose()
    stream._put(message(2))
    with pytest.raises(StopAsyncIteration):
        await stream.__anext__()


@pytest.mark.anyio
async def test_queued_updates_are_yielded_even_after_the_turn_is_done() -> None:
    turn = _Turn()
    stream = UpdateStream(turn, UpdateBuffer(10, 100))
    last = message(1)
    stream._put(last)
    turn.done = True
    assert [u async for u in stream] == [last]
