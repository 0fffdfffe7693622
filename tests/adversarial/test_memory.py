"""Finding 3 (issue 10): memory is bounded by the caps, whatever the size of a flood.

A real flooding agent (``agents/flood.py``) streams more terminal output than the per-terminal
cap through the public API. What the turn, the session and their iterators still hold once the
turn has ended is measured with tracemalloc (everything allocated since just before the prompt
and still alive), and must stay within the caps: the terminal store's bound, the turn's replay
and, where a stream is alive, its queue. The connection's diagnostic log (100 raw messages) is
measured on its own and subtracted: it is bounded by count, not by the caps.
"""

from __future__ import annotations

import base64
import gc
import sys
import tracemalloc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

import acp_notebook as acp
from acp_notebook._client._replay import ITERATOR_BULK_BYTES, REPLAY_BULK_BYTES
from acp_notebook._state._terminal import DEFAULT_MAX_BYTES

FLOOD = Path(__file__).parent / "agents" / "flood.py"
FLOOD_MIB = 64  # four times the per-terminal cap
CHUNK_KIB = 64
# A terminal's buffer holds at most its cap plus half of it not compacted yet, plus one chunk
# (TerminalState._trim), in a bytearray that over-allocates by up to 1/8.
STORE_BOUND = (DEFAULT_MAX_BYTES * 3 // 2 + CHUNK_KIB * 1024) * 9 // 8
SLACK = 4 * 2**20  # parsing, models, one chunk in flight

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def flooding(terminals: int, mib: float) -> AsyncIterator[acp.Session]:
    argv = [sys.executable, str(FLOOD), str(terminals), str(mib), str(CHUNK_KIB)]
    async with acp.connect(argv) as agent:
        yield await agent.new_session()


def log_bytes(session: acp.Session) -> int:
    """Characters of terminal base64 held by the connection's bounded diagnostic log."""
    total = 0
    for _direction, message in session.agent.connection.log:
        params = message.get("params") if isinstance(message, dict) else None
        update = params.get("update") if isinstance(params, dict) else None
        data = update.get("data") if isinstance(update, dict) else None
        total += len(data) if isinstance(data, str) else 0
    return total


def retained_since(base: int) -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0] - base


@asynccontextmanager
async def traced() -> AsyncIterator[list[int]]:
    """Yields ``[base]``: memory traced just before the flood."""
    gc.collect()
    tracemalloc.start()
    try:
        yield [tracemalloc.get_traced_memory()[0]]
    finally:
        tracemalloc.stop()


async def test_a_flood_past_the_cap_is_not_retained_by_the_turn() -> None:
    async with flooding(1, FLOOD_MIB) as session, traced() as base:
        turn = await session.prompt("flood")
        with anyio.fail_after(120):  # a guard against hanging, not a speed assertion
            assert await turn.wait() == "end_turn"
        (term,) = turn.terminals.values()
        assert term.total_bytes == FLOOD_MIB * 2**20  # the flood really went through
        retained = retained_since(base[0]) - log_bytes(session)
        # Before the fix the turn kept every update: about 85 MiB of base64 for 64 MiB.
        assert retained <= STORE_BOUND + REPLAY_BULK_BYTES + SLACK, retained / 2**20


async def test_four_floods_keep_each_terminal_within_its_cap() -> None:
    async with flooding(4, FLOOD_MIB / 2) as session, traced() as base:
        turn = await session.prompt("flood")
        with anyio.fail_after(120):
            await turn.wait()
        assert [t.total_bytes for t in turn.terminals.values()] == [FLOOD_MIB // 2 * 2**20] * 4
        retained = retained_since(base[0]) - log_bytes(session)
        assert retained <= 4 * STORE_BOUND + REPLAY_BULK_BYTES + SLACK, retained / 2**20


async def test_a_stream_started_before_the_flood_gets_every_byte_in_order() -> None:
    async with flooding(2, 8) as session:
        turn = session.start_turn("flood")
        stream = turn.updates()
        kinds: list[str] = []
        got: dict[str, int] = {}
        async with anyio.create_task_group() as tg:
            tg.start_soon(turn.send)
            with anyio.fail_after(120):
                async for update in stream:
                    kinds.append(update.session_update)
                    if update.session_update == "terminal_output_chunk":
                        size = len(base64.b64decode(update.data))
                        got[update.terminal_id] = got.get(update.terminal_id, 0) + size
        assert stream.dropped == 0
        assert got == {"term-0": 8 * 2**20, "term-1": 8 * 2**20}
        assert kinds[0] == "user_message" and kinds[-1] == "state_update"
        assert turn.stop_reason == "end_turn"


async def test_a_stream_nobody_reads_is_bounded_and_keeps_the_structure() -> None:
    async with flooding(1, FLOOD_MIB) as session, traced() as base:
        turn = session.start_turn("flood")
        stream = turn.updates()  # created, then not read while the flood runs
        await turn.send()
        with anyio.fail_after(120):
            await turn.wait()
        retained = retained_since(base[0]) - log_bytes(session)
        bound = STORE_BOUND + REPLAY_BULK_BYTES + ITERATOR_BULK_BYTES + SLACK
        assert retained <= bound, retained / 2**20
        updates: list[Any] = [u async for u in stream]
        assert stream.dropped > 0
        kinds = [u.session_update for u in updates]
        assert kinds[:4] == ["user_message", "state_update", "tool_call_update", "terminal_update"]
        assert kinds[-1] == "state_update" and updates[-1].state == "idle"
        chunks = sum(len(u.data) for u in updates if u.session_update == "terminal_output_chunk")
        assert 0 < chunks <= ITERATOR_BULK_BYTES


async def test_a_late_iterator_replays_the_structure_and_latest_output() -> None:
    async with flooding(1, FLOOD_MIB) as session:
        turn = await session.prompt("flood")
        with anyio.fail_after(120):
            await turn.wait()
        updates = [u async for u in turn.updates()]
        kinds = [u.session_update for u in updates]
        assert kinds[:4] == ["user_message", "state_update", "tool_call_update", "terminal_update"]
        assert kinds[-3:] == ["terminal_update", "tool_call_update", "state_update"]
        chunks = sum(len(u.data) for u in updates if u.session_update == "terminal_output_chunk")
        assert 0 < chunks <= REPLAY_BULK_BYTES


KERNEL_CHECK = """
import gc, tracemalloc
gc.collect()
_held = tracemalloc.get_traced_memory()[0] - _base
_log = sum(
    len(m["params"]["update"].get("data", ""))
    for _, m in t.session.agent.connection.log
    if isinstance(m, dict) and isinstance(m.get("params"), dict)
)
tracemalloc.stop()
print(_held, _log, sum(x.total_bytes for x in t.terminals.values()))
"""


def test_after_a_flood_cell_the_kernel_holds_only_the_capped_state(tmp_path: Path) -> None:
    """In a real kernel, what a ``%%acp`` cell still holds once it has ended (traced in the
    kernel): the terminal store and the terminal widget's backlog, each capped, and the
    connection's log; before the fix, the turn's every update as well."""
    from acp_notebook._widgets._coalesce import DEFAULT_BACKLOG_LIMIT
    from tests.kernel_driver import acp_kernel

    with acp_kernel(tmp_path) as kern:
        take = kern._take

        def take_light(msg: dict[str, Any]) -> None:  # a front end keeps no terminal bytes
            msg["buffers"] = []
            if msg["msg_type"] != "comm_msg":
                take(msg)

        kern._take = take_light  # type: ignore[method-assign]
        argv = f"{sys.executable} {FLOOD} 1 {FLOOD_MIB} {CHUNK_KIB}"
        kern.run(f"%acp connect --name flood -- {argv}")
        kern.run("import gc, tracemalloc; gc.collect(); tracemalloc.start()")
        kern.run("_base = tracemalloc.get_traced_memory()[0]")
        kern.run("%%acp --session flood -o t\nflood\n")
        held, logged, received = map(int, kern.run(KERNEL_CHECK).text().split())
        kern.run("%acp close --name flood")
    assert received == FLOOD_MIB * 2**20
    bound = STORE_BOUND + DEFAULT_BACKLOG_LIMIT + REPLAY_BULK_BYTES + SLACK
    assert held - logged <= bound, (held - logged) / 2**20


OPEN_FDS = "import os; print(len(os.listdir('/proc/self/fd')))"


def test_floods_in_a_kernel_do_not_pile_up_sockets(tmp_path: Path) -> None:
    """Ten terminals flooding at once: a thread per flush used to give each flush its own
    ipykernel iopub socket, hundreds of them (zmq then failed with "Too many open files" and
    messages were lost). With one timer thread the kernel's descriptors stay flat."""
    from tests.kernel_driver import acp_kernel

    with acp_kernel(tmp_path) as kern:
        take = kern._take

        def take_light(msg: dict[str, Any]) -> None:
            msg["buffers"] = []
            if msg["msg_type"] != "comm_msg":
                take(msg)

        kern._take = take_light  # type: ignore[method-assign]
        kern.run(f"%acp connect --name flood -- {sys.executable} {FLOOD} 10 24 {CHUNK_KIB}")
        kern.run("%%acp --session flood\nflood\n")  # warm-up: views, threads, sockets
        before = int(kern.run(OPEN_FDS).text())
        counts = []
        for _ in range(2):
            kern.run("%%acp --session flood\nflood\n")
            counts.append(int(kern.run(OPEN_FDS).text()))
        kern.run("%acp close --name flood")
    assert max(counts) <= before + 20, (before, counts)
