"""``Turn`` (acp_notebook/_client/_turn.py): what a turn keeps for its iterators, fed by hand
through an offline ``Session`` (no agent behind it)."""

from __future__ import annotations

import base64
from typing import Any, cast

import pytest

import acp_notebook as acp
from acp_notebook import _protocol as acp_protocol

# -- a turn does not keep every update (issue 10, finding 3) ---------------------------------


def _offline_session() -> acp.Session:
    """A session fed by hand (``_apply``), no agent behind it."""
    from acp_notebook._client._session import Session

    return Session(cast(Any, None), "s1", "/")


def _update(body: dict[str, Any]) -> Any:
    return acp_protocol.parse_session_update(body)


def _chunk(terminal_id: str, size: int) -> Any:
    data = base64.b64encode(b"x" * size).decode()
    return _update(
        {"sessionUpdate": "terminal_output_chunk", "terminalId": terminal_id, "data": data}
    )


def test_update_buffer_drops_the_oldest_bulk_first_and_keeps_the_order() -> None:
    from acp_notebook._client._replay import UpdateBuffer

    buffer = UpdateBuffer(max_items=4, max_bulk=2 * len(_chunk("t", 300).data))
    sequence = [
        _update({"sessionUpdate": "state_update", "state": "running"}),
        _chunk("t", 300),
        _chunk("t", 300),
        _chunk("t", 300),  # third chunk: over max_bulk, the first chunk goes
        _update({"sessionUpdate": "terminal_update", "terminalId": "t", "exitStatus": {}}),
        _update({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}),
    ]
    for update in sequence:
        buffer.push(update)
    # Five items left after the chunks: over max_items, the oldest remaining chunk goes next,
    # not the first state update.
    assert buffer.snapshot() == [sequence[0], sequence[3], sequence[4], sequence[5]]
    assert buffer.dropped == 2
    assert buffer.popleft() == (True, sequence[0])
    assert buffer.popleft() == (True, sequence[3])
    assert buffer.bulk_bytes == 0


@pytest.mark.anyio
async def test_a_turn_keeps_a_bounded_replay_not_every_update() -> None:
    from acp_notebook._client._replay import REPLAY_BULK_BYTES, bulk_weight

    session = _offline_session()
    turn = session.start_turn("flood")
    session._apply(_update({"sessionUpdate": "user_message", "messageId": "u", "content": []}))
    for _ in range(2_000):  # 2,000 x 8 KiB: 16 MiB of output, 21 MiB of base64
        session._apply(_chunk("t", 8192))
    session._apply(_update({"sessionUpdate": "state_update", "state": "idle", "stopReason": "x"}))
    assert turn.done and turn.terminals["t"].total_bytes == 2_000 * 8192
    late = turn.updates()
    updates = [u async for u in late]
    assert updates[0].session_update == "user_message"
    assert updates[-1].session_update == "state_update"
    assert 0 < sum(bulk_weight(u) for u in updates) <= REPLAY_BULK_BYTES
    assert late.dropped == 2_002 - len(updates)
    assert sum(bulk_weight(u) for u in turn._replay.snapshot()) <= REPLAY_BULK_BYTES


@pytest.mark.anyio
async def test_a_live_iterator_gets_every_update_and_a_dropped_one_stops_filling() -> None:
    import gc

    session = _offline_session()
    turn = session.start_turn("go")
    live = turn.updates()
    abandoned = turn.updates()
    sent = [_chunk("t", 100) for _ in range(50)]
    for update in sent:
        session._apply(update)
    assert [await abandoned.__anext__() for _ in range(2)] == sent[:2]
    del abandoned
    gc.collect()
    assert list(turn._streams) == [live]  # weakly held: nothing queues for it any more
    session._apply(_update({"sessionUpdate": "state_update", "state": "idle", "stopReason": "x"}))
    got = [u async for u in live]
    assert got[:-1] == sent and got[-1].session_update == "state_update"
    assert live.dropped == 0
