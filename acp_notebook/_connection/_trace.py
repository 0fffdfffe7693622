"""Protocol traces: a connection's frames as ``acp-inspector-trace`` v1 JSONL, and back.

There is no official ACP trace format; this one is what the ACP Inspector exports and reads
(readers ignore fields they do not know). A file is a header line, then one line per frame::

    {"type":"header","format":"acp-inspector-trace","version":1,"at":MS,"frames":N,
     "dropped":N,"warning":"..."}
    {"type":"frame","at":MS,"connection":1,"direction":"client -> agent","encoding":"utf8",
     "frame":"<the JSON-RPC message, one line>"}

``at`` is milliseconds since the epoch. A frame this module had to keep shortened (the
connection's log keeps a long message shortened) carries ``"shortened": true``: nothing is
shortened silently. Files are written with mode 0600.

`TraceRecorder` records a connection's frames from its first (`Connection.observe`), up to
`TRACE_MAX_BYTES`; the frames past it are counted, not kept (a replay needs the beginning).
`redact_frame` takes out what a trace must not carry; `write_trace` and `read_trace` are the
file's two sides (`TraceError` names the line that is wrong).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "FORMAT",
    "TRACE_MAX_BYTES",
    "Frame",
    "Trace",
    "TraceError",
    "TraceRecorder",
    "hide_cut_secrets",
    "read_trace",
    "redact_frame",
    "write_trace",
]

FORMAT = "acp-inspector-trace"
VERSION = 1
#: A recorder keeps at most this many bytes of frames; the rest are counted in ``dropped``.
TRACE_MAX_BYTES = 64 * 2**20
Direction = Literal["client -> agent", "agent -> client"]
TO_AGENT: Direction = "client -> agent"
TO_CLIENT: Direction = "agent -> client"


@dataclass(frozen=True)
class Frame:
    """One JSON-RPC message as it crossed the connection (``frame``: its JSON text)."""

    at: int  # ms since the epoch
    direction: Direction
    frame: str
    shortened: bool = False

    def message(self) -> Any:
        return json.loads(self.frame)


@dataclass(frozen=True)
class Trace:
    """A trace file's content: its frames, how many were not kept, and what it warns of."""

    frames: tuple[Frame, ...]
    dropped: int = 0
    warning: str = ""
    at: int = 0
    extra: Mapping[str, Any] = field(default_factory=dict)  # header fields not read here


class TraceError(ValueError):
    """A trace file is not one (``line``: 1-based; 0 for the file itself)."""

    def __init__(self, path: str, line: int, reason: str) -> None:
        super().__init__(path, line, reason)
        self.path = path
        self.line = line
        self.reason = reason

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.reason}"


def now_ms() -> int:
    return int(time.time() * 1000)


class TraceRecorder:
    """Records every frame of a connection (``observe`` is its `Connection.observe`
    observer): the message as compact JSON, in order, until ``max_bytes``."""

    def __init__(self, max_bytes: int = TRACE_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self.frames: list[Frame] = []
        self.bytes = 0
        self.dropped = 0
        self.started = now_ms()

    def observe(self, direction: str, message: Any) -> None:
        if self.bytes >= self.max_bytes:
            self.dropped += 1
            return
        text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
        if self.bytes + len(text) > self.max_bytes:
            self.dropped += 1
            self.bytes = self.max_bytes  # the frames kept stay a prefix: nothing after a gap
            return
        self.bytes += len(text)
        self.frames.append(Frame(now_ms(), TO_AGENT if direction == "send" else TO_CLIENT, text))


REDACTED = "***"


def redact_frame(text: str, secrets: Iterable[str]) -> str:
    """``text`` (a frame's JSON) with every ``_meta["api-key"]`` value and every string of
    ``secrets`` (at least 4 characters: shorter ones would hide words) replaced by ``***``
    inside its string values; numbers, ``true``, ``false`` and the keys are left alone, so
    the frame stays JSON whatever a secret is (an ``--env`` value may be ``false``)."""
    hidden = sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True)
    try:
        message = json.loads(text)
    except ValueError:  # not JSON: nothing to keep whole, every occurrence goes
        for secret in hidden:
            text = text.replace(secret, REDACTED)
        return text
    return json.dumps(_redacted(message, hidden), ensure_ascii=False, separators=(",", ":"))


def _redacted(value: Any, hidden: Sequence[str], key: str | None = None) -> Any:
    if isinstance(value, str):
        if key == "api-key":
            return REDACTED
        for secret in hidden:
            value = value.replace(secret, REDACTED)
        return hide_cut_secrets(value, hidden)
    if isinstance(value, dict):
        return {k: _redacted(v, hidden, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_redacted(v, hidden) for v in value]
    return value


#: Where the connection's log cut a long string (`_jsonrpc.for_log`: the first characters,
#: then ``… [N chars]``).
_CUT = re.compile(r"… \[\d+ chars\]")


def hide_cut_secrets(text: str, secrets: Iterable[str]) -> str:
    """``text`` with the start of a secret that the log's cut of a long string kept hidden:
    where a string was cut (``… [N chars]``), the longest beginning of any secret (4
    characters or more) that ends right before the cut becomes ``***``. Whole secrets are
    the caller's to replace first; this only sees what a cut left of one."""
    hidden = [s for s in secrets if len(s) >= 4]
    if not hidden or "… [" not in text:
        return text
    parts: list[str] = []
    start = 0
    for cut in _CUT.finditer(text):
        head = text[start : cut.start()]
        kept = max(
            (n for s in hidden for n in range(len(s) - 1, 0, -1) if head.endswith(s[:n])),
            default=0,
        )
        parts.append(head[: len(head) - kept] + REDACTED if kept else head)
        parts.append(cut.group())
        start = cut.end()
    parts.append(text[start:])
    return "".join(parts)


def write_trace(
    path: str | os.PathLike[str],
    frames: Sequence[Frame],
    *,
    dropped: int = 0,
    warning: str = "",
) -> int:
    """Write a trace file (mode 0600, replacing one that is there); returns its size."""
    header = {
        "type": "header",
        "format": FORMAT,
        "version": VERSION,
        "at": now_ms(),
        "frames": len(frames),
        "dropped": dropped,
        "warning": warning,
    }
    lines = [json.dumps(header, ensure_ascii=False)]
    for frame in frames:
        line: dict[str, Any] = {
            "type": "frame",
            "at": frame.at,
            "connection": 1,
            "direction": frame.direction,
            "encoding": "utf8",
            "frame": frame.frame,
        }
        if frame.shortened:
            line["shortened"] = True
        lines.append(json.dumps(line, ensure_ascii=False))
    data = ("\n".join(lines) + "\n").encode()
    target = Path(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(target, flags, 0o600)
    try:
        os.fchmod(fd, 0o600)  # an existing file keeps its mode through O_CREAT: set it
        with os.fdopen(fd, "wb") as f:
            fd = -1
            f.write(data)
    finally:
        if fd >= 0:
            os.close(fd)
    return len(data)


def read_trace(path: str | os.PathLike[str]) -> Trace:
    """Read a trace file; raises `TraceError` at the first line that is not as documented."""
    name = os.fspath(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceError(name, 0, f"cannot be read: {exc}") from None
    # lines end at "\n" only: JSON leaves U+2028, U+2029 and U+0085 raw inside a string,
    # where str.splitlines would break
    rows = [line for line in text.split("\n") if line.strip()]
    if not rows:
        raise TraceError(name, 0, "is empty")
    header = _object(name, 1, rows[0])
    if header.get("type") != "header" or header.get("format") != FORMAT:
        raise TraceError(name, 1, f"the first line is not an {FORMAT} header")
    if header.get("version") != VERSION:
        raise TraceError(name, 1, f"version {header.get('version')!r}, not {VERSION}")
    frames = []
    for number, row in enumerate(rows[1:], start=2):
        item = _object(name, number, row)
        if item.get("type") != "frame":
            continue  # readers ignore what they do not know
        direction = item.get("direction")
        frame = item.get("frame")
        at = item.get("at")
        if direction not in (TO_AGENT, TO_CLIENT):
            raise TraceError(name, number, f"direction {direction!r}")
        if not isinstance(frame, str) or not isinstance(at, int):
            raise TraceError(name, number, "a frame needs 'frame' (a string) and 'at' (ms)")
        if item.get("encoding", "utf8") != "utf8":
            raise TraceError(name, number, f"encoding {item.get('encoding')!r}")
        try:
            _strict_json(frame)
        except (ValueError, RecursionError):
            raise TraceError(name, number, "its frame is not JSON") from None
        frames.append(Frame(at, direction, frame, bool(item.get("shortened"))))
    declared = header.get("frames")
    if isinstance(declared, int) and declared != len(frames):
        raise TraceError(name, 1, f"the header says {declared} frames, the file has {len(frames)}")
    known = {"type", "format", "version", "at", "frames", "dropped", "warning"}
    dropped, at = header.get("dropped", 0), header.get("at", 0)
    if not isinstance(dropped, int) or not isinstance(at, int):
        raise TraceError(name, 1, "'dropped' and 'at' must be whole numbers")
    return Trace(
        tuple(frames),
        dropped=dropped,
        warning=str(header.get("warning") or ""),
        at=at,
        extra={k: v for k, v in header.items() if k not in known},
    )


def _strict_json(text: str) -> Any:
    """JSON as the protocol has it: no NaN or Infinity (a peer could not read them back)."""
    return json.loads(text, parse_constant=_no_constant)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _object(path: str, number: int, row: str) -> dict[str, Any]:
    try:
        value = _strict_json(row)
    except (ValueError, RecursionError):
        raise TraceError(path, number, "not JSON") from None
    if not isinstance(value, dict):
        raise TraceError(path, number, "not a JSON object")
    return value
