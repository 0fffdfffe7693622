"""Newline-delimited framing over anyio byte streams, with bounded memory.

`LineReader` reads large chunks and splits them with ``bytes.find``/``bytes.split``.
A line longer than ``max_line_bytes`` is never held whole: once the pending part of a
line passes the limit the reader drops what it has and skips bytes until the next newline,
then reports the line as a `LineTooLong` item.

`decode_json_line` reads one line as JSON within bounds: anything the decoder refuses
(invalid UTF-8, bad syntax, nesting too deep for the parser, an integer of too many digits,
``NaN``/``Infinity``) is a `BadJson` with a short reason, never another exception. Given a
``max_depth``, what nests deeper is cut out before the decoder sees it (`prune_deeper`), so
the decoder never recurses near the interpreter's limit (where a garbage collection running
finalizers inside the recursion could raise in them, far from the line).
`nested_deeper` tells a parsed value that nests deeper than a limit (cheaply for the common
case), and `leading_members` reads what it can of an object that failed to parse.

`memory_byte_pipe` gives an in-process byte pipe (for tests, benchmarks and in-process peers).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

__all__ = [
    "DEFAULT_CHUNK_BYTES",
    "TOO_DEEP",
    "BadJson",
    "LineReader",
    "LineTooLong",
    "MemoryByteReceiveStream",
    "MemoryByteSendStream",
    "decode_json_line",
    "leading_members",
    "memory_byte_pipe",
    "nested_deeper",
    "prune_deeper",
]

DEFAULT_CHUNK_BYTES = 256 * 1024
_NL = b"\n"


@dataclass(frozen=True, slots=True)
class LineTooLong:
    """Stands for a line that was discarded because it exceeded the limit."""

    size: int
    """Length of the discarded line in bytes (without the newline)."""


class LineReader:
    """Splits a byte stream into lines; yields them in batches, one batch per chunk read."""

    def __init__(
        self,
        stream: ByteReceiveStream,
        max_line_bytes: int,
        *,
        chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    ) -> None:
        if max_line_bytes < 1:
            raise ValueError("max_line_bytes must be positive")
        self._stream = stream
        self._max = max_line_bytes
        self._chunk_bytes = chunk_bytes
        self._pieces: list[bytes] = []  # pending start of the current line
        self._pending = 0  # total length of _pieces
        self._skipping = False  # inside an oversize line
        self._skipped = 0
        self._eof = False
        self.max_buffered = 0
        """Largest number of bytes held at once (pending line part plus the chunk just read)."""
        self.last_chunk = 0
        """Size in bytes of the chunk the last ``receive_lines`` read."""

    async def receive_lines(self) -> list[bytes | LineTooLong] | None:
        """The complete lines of the next chunk (possibly none); ``None`` at end of stream.

        Lines are returned without their newline. A last line without a newline is returned
        at end of stream.
        """
        if self._eof:
            return None
        try:
            chunk = await self._stream.receive(self._chunk_bytes)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._eof = True
            return self.finish()
        self.last_chunk = len(chunk)
        return self.feed(chunk)

    def feed(self, chunk: bytes) -> list[bytes | LineTooLong]:
        """Split one chunk; returns the lines it completes."""
        held = self._pending + len(chunk)
        if held > self.max_buffered:
            self.max_buffered = held
        out: list[bytes | LineTooLong] = []
        if self._skipping:
            i = chunk.find(_NL)
            if i < 0:
                self._skipped += len(chunk)
                return out
            out.append(LineTooLong(self._skipped + i))
            self._skipping = False
            self._skipped = 0
            chunk = chunk[i + 1 :]
        i = chunk.find(_NL)
        if i < 0:
            self._hold(chunk)
            return out
        limit = self._max
        if self._pieces:
            self._pieces.append(chunk[:i])
            first = b"".join(self._pieces)
            self._pieces = []
            self._pending = 0
            out.append(first if len(first) <= limit else LineTooLong(len(first)))
            chunk = chunk[i + 1 :]
        lines = chunk.split(_NL)
        rest = lines.pop()
        if len(chunk) <= limit:
            out += lines  # no line of this chunk can be over the limit
        else:
            out += [line if len(line) <= limit else LineTooLong(len(line)) for line in lines]
        if rest:
            self._hold(rest)
        return out

    def _hold(self, part: bytes) -> None:
        if not part:
            return
        if self._skipping:
            self._skipped += len(part)
            return
        if self._pending + len(part) > self._max:
            self._skipping = True
            self._skipped = self._pending + len(part)
            self._pieces = []
            self._pending = 0
            return
        self._pieces.append(part)
        self._pending += len(part)

    def finish(self) -> list[bytes | LineTooLong]:
        """The line left over at end of stream (if any)."""
        if self._skipping:
            self._skipping = False
            return [LineTooLong(self._skipped)]
        if self._pieces:
            last = b"".join(self._pieces)
            self._pieces = []
            self._pending = 0
            return [last]
        return []


# -- one line as JSON, within bounds ---------------------------------------------------------


class BadJson(ValueError):
    """A line that is not JSON we accept."""

    def __init__(self, reason: str, text: str) -> None:
        super().__init__(reason)
        self.reason = reason
        """A few words: the decoder's message, "nested too deeply", "NaN is not JSON"..."""
        self.text = text
        """The line as text (invalid UTF-8 replaced by U+FFFD), for `leading_members`."""


class _NotJson(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    raise _NotJson(f"{name} is not JSON")


_decoder = json.JSONDecoder(parse_constant=_refuse_constant)
_decode = _decoder.decode
_raw_decode = _decoder.raw_decode
_scanstring = json.decoder.scanstring  # type: ignore[attr-defined]
_WHITESPACE = re.compile(r"[ \t\n\r]*")


def _skip_ws(text: str, pos: int) -> int:
    found = _WHITESPACE.match(text, pos)
    return pos if found is None else found.end()


def decode_json_line(line: bytes, max_depth: int | None = None) -> Any:
    """The JSON value of ``line``; raises `BadJson` (and only that) when it has none.

    ``NaN``, ``Infinity`` and ``-Infinity`` are refused (they are not JSON); lone surrogate
    escapes such as ``"\\ud800"`` are accepted, as the JSON grammar allows them. With
    ``max_depth``, what nests deeper is never decoded: each array or object opening below
    that depth decodes as ``[]`` (`prune_deeper`), so the value nests ``max_depth + 1`` levels
    there, for the caller's `nested_deeper` to refuse it whole; an array (a batch) that nests
    deeper is a `BadJson` ("nested too deeply") whose text is the pruned line.
    """
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadJson(str(exc), line.decode("utf-8", "replace")) from exc
    if max_depth is not None:
        pruned = prune_deeper(text, max_depth)
        if pruned is not text and text.lstrip(" \t\r").startswith("["):
            # a batch with an element too deep: one bad line, every element unanswered, as
            # what was cut was never read (it may not be JSON, and the other elements with it)
            raise BadJson(TOO_DEEP, pruned)
        text = pruned
    try:
        return _decode(text)
    except json.JSONDecodeError as exc:
        raise BadJson(str(exc), text) from exc
    except _NotJson as exc:
        raise BadJson(str(exc), text) from exc
    except ValueError as exc:  # the only other one: int() refusing more than 4300 digits
        raise BadJson("an integer with too many digits", text) from exc
    except RecursionError as exc:
        raise BadJson(TOO_DEEP, text) from exc


TOO_DEEP = "nested too deeply"

# A JSON string (escapes included), a run of opening or of closing brackets, or a quote that
# opens a string never closed.
_STRING = r'"[^"\\]*(?:\\.[^"\\]*)*"'  # a JSON string, escapes included
_STRING_OR_BRACKETS = re.compile(_STRING + r'|[\[{]+|[\]}]+|"')
_STRINGS = re.compile(_STRING)
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")


def _surely_within(text: str, limit: int) -> bool:
    """Whether ``text`` surely nests no deeper than ``limit``, found at C speed: with strings and
    all but brackets removed, each round deletes every innermost ``[]`` and ``{}`` and so at
    least one level. Balanced brackets gone within ``limit // 2`` rounds nested at most ``limit``
    levels (a round deletes at most two: ``{[]}``). False is "not sure": the exact pass decides."""
    if '"' in text:
        text = _STRINGS.sub("", text)
        if '"' in text:
            return False  # a string that never closes
    brackets = _NOT_BRACKETS.sub("", text)
    for _ in range(limit // 2):
        if not brackets:
            return True
        shorter = brackets.replace("[]", "").replace("{}", "")
        if len(shorter) == len(brackets):
            return False  # unbalanced: the exact pass says where
        brackets = shorter
    return not brackets


def prune_deeper(text: str, limit: int) -> str:
    """``text`` with each array or object that opens more than ``limit`` levels deep (``[]`` is
    1) replaced by ``[]``, so that what it decodes to nests exactly ``limit + 1`` levels where the
    line nested deeper; ``text`` itself when nothing nests that deep. A container that deep which
    never closes is cut off with the rest of the line (what is left does not parse either).
    Brackets inside strings do not count. What is cut is never read: it may not even be JSON.

    A line with no more than ``limit`` opening brackets is returned at once (two counts), and so
    is one `_surely_within` clears (a few passes at C speed); otherwise its strings and runs of
    brackets are visited in one pass of a compiled pattern, without recursion.
    """
    if text.count("[") + text.count("{") <= limit or _surely_within(text, limit):
        return text
    pieces: list[str] = []
    kept = 0  # text[:kept] is in pieces
    cut: int | None = None  # where the container being dropped opened
    depth = 0
    for found in _STRING_OR_BRACKETS.finditer(text):
        token = found.group()
        first = token[0]
        if token == '"':
            break  # a string that never closes: the rest is in it, for the decoder to refuse
        if first == '"':
            continue
        if first == "[" or first == "{":
            if cut is None and depth + len(token) > limit:
                cut = found.start() + (limit - depth)  # the bracket that opens level limit + 1
            depth += len(token)
        else:
            if cut is not None and depth - len(token) <= limit:
                end = found.start() + (depth - limit)  # just past the closer of level limit + 1
                pieces.append(text[kept:cut])
                pieces.append("[]")
                kept = end
                cut = None
            depth -= len(token)
    if cut is not None:
        pieces.append(text[kept:cut])
        return "".join(pieces)
    if not pieces:
        return text
    pieces.append(text[kept:])
    return "".join(pieces)


def nested_deeper(value: Any, limit: int, line: bytes | None = None) -> bool:
    """Whether ``value`` nests arrays and objects more than ``limit`` levels (``[]`` is 1).

    With the ``line`` it was decoded from, a short line is cleared at once (each level takes
    two bytes). Otherwise the containers are walked level by level, without recursion: about
    a microsecond for a typical message, however long its strings.
    """
    if line is not None and len(line) <= 2 * limit:
        return False
    if type(value) is not dict and type(value) is not list:
        return False
    level: list[Any] = [value]
    depth = 1
    while level:
        if depth > limit:
            return True
        below: list[Any] = []
        add = below.append
        for node in level:
            for child in node.values() if type(node) is dict else node:
                kind = type(child)
                if kind is dict or kind is list:
                    add(child)
        level = below
        depth += 1
    return False


def leading_members(text: str, max_members: int = 16) -> tuple[dict[str, Any], str | None]:
    """What can be read of a JSON object that does not parse as a whole.

    Reads the top-level members of the object ``text`` in order, each with the real
    decoder, and stops at the first that cannot be read. Returns the members read and the
    key of the member that failed (``None`` if it stopped elsewhere, or if ``text`` is not
    an object). Bounded: at most ``max_members`` members, each decoded once.
    """
    members: dict[str, Any] = {}
    pos = _skip_ws(text, 0)
    if not text.startswith("{", pos):
        return members, None
    pos = _skip_ws(text, pos + 1)
    for _ in range(max_members):
        if not text.startswith('"', pos):
            break
        try:
            key, pos = _scanstring(text, pos + 1)
        except ValueError:
            break
        pos = _skip_ws(text, pos)
        if not text.startswith(":", pos):
            return members, key
        pos = _skip_ws(text, pos + 1)
        try:
            members[key], pos = _raw_decode(text, pos)
        except (ValueError, RecursionError):
            return members, key
        pos = _skip_ws(text, pos)
        if not text.startswith(",", pos):
            break
        pos = _skip_ws(text, pos + 1)
    return members, None


class MemoryByteSendStream(ByteSendStream):
    """Send side of `memory_byte_pipe`."""

    def __init__(self, inner: MemoryObjectSendStream[bytes]) -> None:
        self._inner = inner

    async def send(self, item: bytes) -> None:
        if item:
            await self._inner.send(bytes(item))

    async def send_eof(self) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._inner.aclose()


class MemoryByteReceiveStream(ByteReceiveStream):
    """Receive side of `memory_byte_pipe`; splits sent buffers to honour ``max_bytes``."""

    def __init__(self, inner: MemoryObjectReceiveStream[bytes]) -> None:
        self._inner = inner
        self._rest = b""
        self._offset = 0

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if self._offset >= len(self._rest):
            self._rest = await self._inner.receive()
            self._offset = 0
        data, start = self._rest, self._offset
        if start == 0 and len(data) <= max_bytes:
            self._rest = b""
            return data
        end = start + max_bytes
        self._offset = end
        return data[start:end]

    async def aclose(self) -> None:
        await self._inner.aclose()


def memory_byte_pipe(
    max_buffers: float = 16,
) -> tuple[MemoryByteSendStream, MemoryByteReceiveStream]:
    """An in-process one-way byte pipe holding at most ``max_buffers`` unread sends."""
    send, receive = anyio.create_memory_object_stream[bytes](max_buffers)
    return MemoryByteSendStream(send), MemoryByteReceiveStream(receive)
