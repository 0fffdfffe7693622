"""anyio byte streams on the agent's stdin and stdout file descriptors."""

from __future__ import annotations

import contextlib
import fcntl
import os

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

__all__ = ["PIPE_BYTES", "FdReceiveStream", "FdSendStream"]

PIPE_BYTES = 1 << 20


class FdReceiveStream(ByteReceiveStream):
    """Reads a file descriptor in a worker thread (returns what one ``read`` gives)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._closed = False

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if self._closed:
            raise anyio.ClosedResourceError
        try:
            data = await anyio.to_thread.run_sync(os.read, self._fd, max_bytes)
        except OSError as exc:
            raise anyio.BrokenResourceError from exc
        if not data:
            raise anyio.EndOfStream
        return data

    async def aclose(self) -> None:
        self._closed = True


class FdSendStream(ByteSendStream):
    """Writes every byte to a file descriptor, in a worker thread."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._closed = False
        # A pipe holds 64 KiB by default: less than one line of terminal output, so each
        # write waited for the client to read it. A larger one lets a flood's writes run
        # ahead of the client's reads (Linux; elsewhere, or if refused, the default stays).
        with contextlib.suppress(OSError, AttributeError):
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)

    @staticmethod
    def _write_all(fd: int, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]

    async def send(self, item: bytes) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        try:
            await anyio.to_thread.run_sync(self._write_all, self._fd, item)
        except OSError as exc:
            raise anyio.BrokenResourceError from exc

    async def aclose(self) -> None:
        self._closed = True
