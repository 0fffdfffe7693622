"""The embedded agent's output path (issue 16): the PTY is read ahead of a slow client, the
session file is written in batches within a bounded delay, the hot lines are encoded without
a JSON encoder but exactly as `Connection.notify` would, and flood output is replayable
(within the store's cap)."""

from __future__ import annotations

import base64
import fcntl
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_notebook import connect_streams
from acp_notebook._connection._jsonrpc import _dumps
from acp_notebook.agent import _wire as wire
from acp_notebook.agent import serve_in_memory
from acp_notebook.agent._faults import Faults
from acp_notebook.agent._pty import PtyCommand
from acp_notebook.agent._stdio import PIPE_BYTES, FdSendStream
from acp_notebook.agent._store import FLUSH_SECONDS, Store

pytestmark = pytest.mark.anyio


@pytest.mark.process
async def test_the_pty_is_read_ahead_of_a_slow_consumer(tmp_path: Path) -> None:
    # 600 kB is far more than a PTY holds: the command can only finish writing it (and leave
    # its mark) while the first batch is still being handed on if someone keeps reading.
    marker = tmp_path / "written"
    command = PtyCommand(f"head -c 600000 /dev/zero | tr '\\0' x; touch {marker}", tmp_path)
    seen_marker_first = []
    got: list[bytes] = []

    async def slow(data: bytes) -> None:
        if not got:
            with anyio.move_on_after(5):
                while not marker.exists():
                    await anyio.sleep(0.01)
            seen_marker_first.append(marker.exists())
        got.append(data)

    with anyio.fail_after(30):
        status = await command.run(slow)
    assert status.success
    assert sum(map(len, got)) == 600000
    assert seen_marker_first == [True]


@pytest.mark.process
async def test_a_quiet_command_ends_after_its_output_is_drained(tmp_path: Path) -> None:
    got: list[bytes] = []

    async def collect(data: bytes) -> None:
        got.append(data)

    with anyio.fail_after(30):
        status = await PtyCommand("printf one; sleep 0.3; printf two", tmp_path).run(collect)
    assert status.success
    assert b"".join(got) == b"onetwo"


# -- the session file ------------------------------------------------------------------------


def chunk(n: int) -> dict[str, Any]:
    return wire.terminal_chunk("term", bytes([n % 256]) * 10)


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def test_chunks_are_written_in_batches_and_in_order(tmp_path: Path) -> None:
    store = Store(tmp_path)
    _, file = store.create("/")
    size = file.path.stat().st_size
    for n in range(100):
        file.update(chunk(n))
    assert file.path.stat().st_size == size  # held: not one write per chunk
    file.update(wire.terminal_start("term", "ls", "/"))  # any other entry writes them first
    entries = lines_of(file.path)[1:]
    assert [e["update"] for e in entries] == [
        *(chunk(n) for n in range(100)),
        entries[-1]["update"],
    ]
    assert entries[-1]["update"]["sessionUpdate"] == "terminal_update"


def test_held_chunks_are_written_within_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = [1000.0]
    monkeypatch.setattr("acp_notebook.agent._store.time.monotonic", lambda: now[0])
    store = Store(tmp_path)
    _, file = store.create("/")
    file.update(chunk(1))
    size = file.path.stat().st_size
    now[0] += FLUSH_SECONDS / 2
    file.update(chunk(2))
    assert file.path.stat().st_size == size
    now[0] += FLUSH_SECONDS / 2
    file.update(chunk(3))  # the oldest held line is FLUSH_SECONDS old: all three go
    assert [e["update"] for e in lines_of(file.path)[1:]] == [chunk(1), chunk(2), chunk(3)]


def test_readers_see_what_is_held(tmp_path: Path) -> None:
    store = Store(tmp_path)
    session_id, file = store.create("/")
    file.update(chunk(7))
    record = store.load(session_id)
    assert record is not None and record.updates == [chunk(7)]
    assert store.open(session_id) is file  # one writer per file: no second batch to interleave


def test_held_chunks_count_against_the_cap(tmp_path: Path) -> None:
    store = Store(tmp_path, max_bytes=4000)
    _, file = store.create("/")
    for n in range(200):
        file.update(chunk(n))
    assert file.truncated
    file.flush()
    assert file.path.stat().st_size < 4000 + 200
    assert lines_of(file.path)[-1] == {"kind": "truncated"}


# -- hot lines encoded by hand ---------------------------------------------------------------


@settings(max_examples=200)
@given(st.binary(max_size=300), st.text(max_size=20), st.text(max_size=20))
def test_chunk_lines_are_what_notify_would_write(data: bytes, session_id: str, term: str) -> None:
    update, encoded, line = wire.ChunkLines(session_id, term)(data)
    assert update == wire.terminal_chunk(term, data)
    assert base64.b64decode(update["data"]) == data
    message = {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": wire.notification(session_id, update),
    }
    try:
        expected = _dumps(message)
    except UnicodeEncodeError:  # pragma: no cover - _dumps handles them itself
        raise
    if expected.isascii() or not any(0xD800 <= ord(c) <= 0xDFFF for c in session_id + term):
        assert line == expected
    assert json.loads(encoded) == update


def test_the_agents_stdout_pipe_holds_a_line_of_output() -> None:
    read, write = os.pipe()
    try:
        FdSendStream(write)
        size = fcntl.fcntl(write, fcntl.F_GETPIPE_SZ)
        assert size >= min(PIPE_BYTES, int(Path("/proc/sys/fs/pipe-max-size").read_text()))
    finally:
        os.close(read)
        os.close(write)


# -- flood output, replayed ------------------------------------------------------------------


async def test_flood_output_is_replayed(tmp_path: Path) -> None:
    async def replayed_terminal_bytes() -> tuple[bytes, str]:
        faults = Faults(flood_output_mib=0.25)
        async with (
            serve_in_memory(data_dir=tmp_path, faults=faults) as streams,
            connect_streams(*streams) as agent,
        ):
            session = await agent.new_session(cwd=tmp_path)
            turn = await session.prompt("hello")
            await turn.wait()
            (term_id,) = [t for t, term in turn.terminals.items() if term.total_bytes]
            sent = turn.terminals[term_id].data
            again = await agent.resume_session(session.id, cwd=tmp_path, replay=True)
            with anyio.fail_after(60):  # the replay streams in after resume_session returns
                while True:
                    replayed = again.state.terminals.get(term_id)
                    if replayed is not None and replayed.total_bytes >= len(sent):
                        break
                    await anyio.sleep(0.02)
            term = again.state.terminals.get(term_id)
            return (term.data if term is not None else b""), hashlib.sha256(sent).hexdigest()

    data, digest = await replayed_terminal_bytes()
    assert len(data) == int(0.25 * 2**20)
    assert hashlib.sha256(data).hexdigest() == digest
