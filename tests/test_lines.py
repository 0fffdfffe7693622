from __future__ import annotations

import itertools

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_notebook._lines import LineReader, LineTooLong, memory_byte_pipe

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _expected(data: bytes, limit: int) -> list[bytes | LineTooLong]:
    parts = data.split(b"\n")
    if parts[-1] == b"":
        parts.pop()  # a trailing newline does not start another line
    return [p if len(p) <= limit else LineTooLong(len(p)) for p in parts]


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points) if b > a]


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=30),
    trailing_newline=st.booleans(),
    cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=20),
    limit=st.integers(min_value=1, max_value=50),
)
def test_feed_matches_split_for_any_chunking(
    lines: list[bytes], trailing_newline: bool, cuts: list[int], limit: int
) -> None:
    data = b"\n".join(lines) + (b"\n" if trailing_newline and lines else b"")
    reader = LineReader(None, limit, chunk_bytes=1)  # type: ignore[arg-type]
    got: list[bytes | LineTooLong] = []
    biggest = 0
    for chunk in _split(data, cuts):
        biggest = max(biggest, len(chunk))
        got += reader.feed(chunk)
        assert reader.max_buffered <= limit + biggest
    got += reader.finish()
    assert got == _expected(data, limit)


async def test_receive_lines_until_end_of_stream() -> None:
    send, receive = memory_byte_pipe()
    reader = LineReader(receive, 100, chunk_bytes=4)
    async with send:
        await send.send(b"ab\ncd")
        await send.send(b"ef\n\nlast")
    got: list[bytes | LineTooLong] = []
    async with receive:
        while (batch := await reader.receive_lines()) is not None:
            got += batch
    assert got == [b"ab", b"cdef", b"", b"last"]
    assert await reader.receive_lines() is None


async def test_oversize_line_is_skipped_while_streaming() -> None:
    limit = 1024
    chunk = b"x" * 2**20
    total = 200 * len(chunk)
    send, receive = memory_byte_pipe(4)
    reader = LineReader(receive, limit, chunk_bytes=65536)
    got: list[bytes | LineTooLong] = []

    async def produce() -> None:
        async with send:
            await send.send(b"before\n")
            for _ in range(200):
                await send.send(chunk)
            await send.send(b"\nafter\n")

    async with receive, anyio.create_task_group() as tg:
        tg.start_soon(produce)
        while (batch := await reader.receive_lines()) is not None:
            got += batch
    assert got == [b"before", LineTooLong(total), b"after"]
    assert reader.max_buffered <= limit + 65536


async def test_end_of_stream_inside_oversize_line() -> None:
    send, receive = memory_byte_pipe()
    reader = LineReader(receive, 3)
    async with send:
        await send.send(b"ok\ntoolong")
    got: list[bytes | LineTooLong] = []
    async with receive:
        while (batch := await reader.receive_lines()) is not None:
            got += batch
    assert got == [b"ok", LineTooLong(7)]


def test_limit_must_be_positive() -> None:
    with pytest.raises(ValueError):
        LineReader(None, 0)  # type: ignore[arg-type]
