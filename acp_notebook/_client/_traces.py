"""An agent's protocol trace (`Agent.export_trace`): the frames its connection carried, as an
``acp-inspector-trace`` v1 file (`_connection._trace`), redacted.

With a recorder (``connect(..., trace=True)``) the trace holds every frame from
``initialize`` on, up to its cap. Without one it holds what the connection's log keeps: the
last `Connection.log` messages, long ones shortened, each such frame saying so, and the
header's ``warning`` says that too. Redacted always: every ``_meta["api-key"]`` value and
every string the caller names (``--env`` values, tokens), each replaced by ``***``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._connection._trace import (
    TO_AGENT,
    TO_CLIENT,
    Frame,
    TraceRecorder,
    now_ms,
    redact_frame,
    write_trace,
)

if TYPE_CHECKING:
    from ._agent import Agent

__all__ = ["TraceExport", "export_trace"]

#: What a shortened log message looks like (`_connection._jsonrpc.for_log`'s marks).
_CUT = re.compile(r"… \[\d+ (?:chars|items)\]$")


@dataclass(frozen=True)
class TraceExport:
    """What `export_trace` wrote: the file, its frames, those not kept, and its warning."""

    path: str
    frames: int
    dropped: int
    shortened: int
    bytes: int
    warning: str


def _shortened(value: Any) -> bool:
    """Whether a logged message carries `for_log`'s marks of a cut."""
    if isinstance(value, str):
        return value == "…" or _CUT.search(value) is not None
    if isinstance(value, dict):
        return any(_shortened(v) for v in value.values())
    if isinstance(value, list):
        return any(_shortened(v) for v in value)
    return False


def _sign_in_keys(frames: Iterable[Frame]) -> list[str]:
    """Every ``_meta["api-key"]`` string the client sent (any method): hidden everywhere."""
    keys = []
    for frame in frames:
        if frame.direction != TO_AGENT or '"api-key"' not in frame.frame:
            continue
        try:
            key = sent_api_key(json.loads(frame.frame))
        except ValueError:
            continue
        if key is not None:
            keys.append(key)
    return keys


def sent_api_key(message: object) -> str | None:
    """The API key a message the client sent carries (``params._meta["api-key"]``), if any."""
    params = message.get("params") if isinstance(message, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    key = meta.get("api-key") if isinstance(meta, dict) else None
    return key if isinstance(key, str) else None


def _from_log(agent: Agent) -> tuple[list[Frame], int]:
    """The frames the connection's log keeps, and how many it did not (of those it saw)."""
    connection = agent.connection
    frames = []
    at = now_ms()
    for direction, message in list(connection.log):
        if isinstance(message, str):
            continue  # a problem note, not a frame
        text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
        way = TO_AGENT if direction == "send" else TO_CLIENT
        frames.append(Frame(at, way, text, shortened=_shortened(message)))
    return frames, max(0, connection.messages_seen - len(frames))


def export_trace(
    agent: Agent, path: str | os.PathLike[str], *, secrets: Iterable[str] = ()
) -> TraceExport:
    """Write ``agent``'s trace to ``path`` (mode 0600); see the module docstring."""
    recorder: TraceRecorder | None = getattr(agent, "trace", None)
    hidden = list(secrets)
    if recorder is not None:
        frames = list(recorder.frames)
        dropped = recorder.dropped
        warning = "redacted: _meta.api-key values and the values of --env variables and tokens"
        if dropped:
            warning += (
                f"; {dropped} frames after the first {len(frames)} were not kept (the"
                f" recorder's cap is {recorder.max_bytes} bytes)"
            )
    else:
        frames, dropped = _from_log(agent)
        warning = (
            "redacted: _meta.api-key values and the values of --env variables and tokens;"
            " recorded without --trace: only the last messages the connection's log keeps"
            " (frames marked shortened had long strings or lists cut)"
        )
        if dropped:
            warning += f"; {dropped} earlier frames were not kept"
    hidden += _sign_in_keys(frames)  # and wherever the agent echoes them
    kept = [Frame(f.at, f.direction, redact_frame(f.frame, hidden), f.shortened) for f in frames]
    size = write_trace(path, kept, dropped=dropped, warning=warning)
    return TraceExport(
        os.fspath(path),
        len(kept),
        dropped,
        sum(1 for f in kept if f.shortened),
        size,
        warning,
    )
