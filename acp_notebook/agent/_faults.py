"""Fault injection for the embedded agent: ways to misbehave on purpose, for client tests."""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import anyio
from anyio.abc import ByteSendStream

__all__ = ["CountingSendStream", "Faults", "flood_blocks", "flood_digest", "flood_stderr"]

MIB = 2**20
CRASH_EXIT_CODE = 3


@dataclass(frozen=True)
class Faults:
    """The fault flags given on the command line (all off by default)."""

    crash_after: int | None = None
    bad_json: bool = False
    oversize_line: int | None = None
    bad_base64: bool = False
    flood_stderr_mib: float | None = None
    flood_output_mib: float | None = None
    hang: bool = False


class CountingSendStream(ByteSendStream):
    """Wraps stdout: counts the lines written, crashes on cue, and can inject raw lines."""

    def __init__(self, inner: ByteSendStream, crash_after: int | None = None) -> None:
        self._inner = inner
        self._crash_after = crash_after
        self._lock = anyio.Lock()
        self.lines = 0

    async def send(self, item: bytes) -> None:
        async with self._lock:
            await self._inner.send(item)
            self.lines += item.count(b"\n")
            if self._crash_after is not None and self.lines >= self._crash_after:
                sys.stderr.write(
                    f"acp-notebook-agent: --crash-after {self._crash_after}: "
                    f"crashing on purpose after {self.lines} messages\n"
                )
                sys.stderr.flush()
                os._exit(CRASH_EXIT_CODE)

    async def send_raw_line(self, line: bytes) -> None:
        """Write one line that bypasses JSON-RPC framing (for the bad-line faults)."""
        await self.send(line.rstrip(b"\n") + b"\n")

    async def aclose(self) -> None:
        await self._inner.aclose()


_FLOOD_LINE = b"acp-notebook-agent flood output: the quick brown fox jumps over the lazy dog\n"
FLOOD_BLOCK_BYTES = 16 * 1024


def _flood_base() -> bytes:
    repeated = _FLOOD_LINE * (FLOOD_BLOCK_BYTES // len(_FLOOD_LINE) + 1)
    return repeated[: FLOOD_BLOCK_BYTES - 1] + b"\n"


def flood_blocks(total: int) -> Iterator[bytes]:
    """Deterministic output of exactly ``total`` bytes, in blocks of at most 16 KiB.

    Each block starts with its index so a reordering or a lost block changes the digest.
    """
    base = _flood_base()
    index = 0
    left = total
    while left > 0:
        block = (b"%010d " % index + base[11:])[:left]
        yield block
        left -= len(block)
        index += 1


def flood_digest(total: int) -> str:
    """sha256 hex digest of ``flood_blocks(total)`` (what a client should receive)."""
    h = hashlib.sha256()
    for block in flood_blocks(total):
        h.update(block)
    return h.hexdigest()


def flood_stderr(mib: float) -> None:
    """Write ``mib`` MiB of log lines to stderr (blocking: run it in a worker thread)."""
    total = int(mib * MIB)
    line = b"acp-notebook-agent: stderr flood " + b"." * 90 + b"\n"
    block = line * (64 * 1024 // len(line))
    written = 0
    err = sys.stderr.buffer
    while written < total:
        piece = block[: total - written]
        err.write(piece)
        written += len(piece)
    err.flush()
