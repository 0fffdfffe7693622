"""`FdReceiveStream` / `FdSendStream`: the embedded agent's stdin and stdout, on real pipes."""

from __future__ import annotations

import os

import anyio
import pytest

from acp_notebook.agent._stdio import FdReceiveStream, FdSendStream

pytestmark = pytest.mark.anyio


async def test_bytes_cross_a_pipe_whole_and_its_end_is_end_of_stream() -> None:
    read_fd, write_fd = os.pipe()
    receive, send = FdReceiveStream(read_fd), FdSendStream(write_fd)
    data = bytes(range(256)) * 1024  # 256 KiB: more than one write of the pipe's buffer
    got = bytearray()
    try:
        async with anyio.create_task_group() as tg:

            async def write_then_close() -> None:
                await send.send(data)
                os.close(write_fd)

            tg.start_soon(write_then_close)
            with pytest.raises(anyio.EndOfStream):
                while True:
                    got += await receive.receive(65536)
    finally:
        os.close(read_fd)
    assert bytes(got) == data


async def test_closed_streams_refuse_and_a_broken_pipe_is_a_broken_resource() -> None:
    read_fd, write_fd = os.pipe()
    receive, send = FdReceiveStream(read_fd), FdSendStream(write_fd)
    os.close(read_fd)  # nobody reads any more: writing is EPIPE
    try:
        with pytest.raises(anyio.BrokenResourceError):
            await send.send(b"x\n")
    finally:
        os.close(write_fd)
    await send.aclose()
    await receive.aclose()
    with pytest.raises(anyio.ClosedResourceError):
        await send.send(b"x")
    with pytest.raises(anyio.ClosedResourceError):
        await receive.receive()
