"""The embedded agent's fault injection: deterministic floods, counted output."""

from __future__ import annotations

import anyio
import pytest

from acp_notebook._connection._lines import memory_byte_pipe
from acp_notebook.agent._faults import CountingSendStream, flood_blocks, flood_digest


def test_flood_blocks_are_deterministic_and_exact() -> None:
    blocks = list(flood_blocks(40_000))
    assert sum(map(len, blocks)) == 40_000
    assert blocks[1].startswith(b"0000000001 ")
    assert flood_digest(40_000) == flood_digest(40_000) != flood_digest(39_999)


@pytest.mark.anyio
async def test_the_output_stream_counts_lines_and_writes_raw_lines_whole() -> None:
    send, receive = memory_byte_pipe(16)
    out = CountingSendStream(send)  # no crash_after: it only counts
    await out.send(b'{"a":1}\n{"b":2}\n')
    await out.send_raw_line(b"not json")
    await out.send_raw_line(b"already ended\n")
    assert out.lines == 4
    got = b"".join([await receive.receive() for _ in range(3)])
    assert got == b'{"a":1}\n{"b":2}\nnot json\nalready ended\n'
    await out.aclose()
    with pytest.raises(anyio.EndOfStream):
        await receive.receive()
    await receive.aclose()
