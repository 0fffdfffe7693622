"""The hot line of a terminal flood, decoded fast (layer 4: client).

v1 (``decode_v1_hot_line``, set once an agent speaks v1) has two hot shapes: a message chunk
of plain text, ``{"sessionUpdate": "agent_message_chunk", "content": {"type": "text",
"text": T}}`` (or ``user_message_chunk``, ``agent_thought_chunk``; a ``messageId`` string
may be there too), and a tool call's terminal output (the terminal extension of
claude-agent-acp), ``{"sessionUpdate": "tool_call_update", "toolCallId": C, "_meta":
{"terminal_output": {"terminal_id": T, "data": TEXT}}}`` (or ``terminal_output_delta``,
``terminalId``), each with nothing else in it.

Command output reaches the client as ``session/update`` notifications that each carry one
``terminal_output_chunk``, nearly always in exactly one shape::

    {"jsonrpc": "2.0", "method": "session/update",
     "params": {"sessionId": S, "update": {"sessionUpdate": "terminal_output_chunk",
                                           "terminalId": T, "data": BASE64}}}

with nothing else in it: strings only, no number, no ``_meta``. `decode_hot_line` decodes a
line of that shape with orjson (when it is installed) and returns the message; for any other
line, any line orjson refuses, and any line over ``_jsonrpc.WIDE_CHECK_BYTES``, it returns None
and the connection takes its usual path (the stdlib decoder and every check). For a line of
that shape both decoders give the same dict (strings are decoded the same way; orjson refuses
what the stdlib would read differently, such as lone surrogates), so the shortcut changes
nothing but the time: ``tests/test_hotpath.py`` checks it, property by property.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._jsonrpc import WIDE_CHECK_BYTES

_loads: Callable[[bytes], Any] | None
try:
    from orjson import JSONDecodeError as _Refused
    from orjson import loads as _loads
except ImportError:  # pragma: no cover - orjson is a dependency; without it, no shortcut
    _loads = None

__all__ = [
    "HOT_TAG",
    "V1_TEXT_TAGS",
    "decode_hot_line",
    "decode_v1_hot_line",
    "is_hot_message",
    "is_v1_hot_update",
]

HOT_TAG = "terminal_output_chunk"
_TAG = HOT_TAG.encode()
_WHOLE = 4096  # a line up to this long is decoded; a longer one only with the tag at its ends
_ENDS = 256
_MAX = WIDE_CHECK_BYTES  # longer lines get the connection's width check


def is_hot_message(message: Any) -> bool:
    """Whether ``message`` is a notification of the hot shape, exactly (see the module)."""
    if type(message) is not dict or len(message) != 3:
        return False
    if message.get("jsonrpc") != "2.0" or message.get("method") != "session/update":
        return False
    params = message.get("params")
    if type(params) is not dict or len(params) != 2 or type(params.get("sessionId")) is not str:
        return False
    update = params.get("update")
    return (
        type(update) is dict
        and len(update) == 3
        and update.get("sessionUpdate") == HOT_TAG
        and type(update.get("terminalId")) is str
        and type(update.get("data")) is str
    )


def decode_hot_line(line: bytes) -> dict[str, Any] | None:
    """The message of ``line`` if it is of the hot shape, else None (the usual path decides)."""
    if _loads is None:
        return None
    size = len(line)
    if size > _MAX:
        return None
    if size > _WHOLE and _TAG not in line[:_ENDS] and _TAG not in line[-_ENDS:]:
        return None  # (a short line is decoded: that costs less than searching it first)
    try:
        message = _loads(line)
    except _Refused:
        return None
    # `is_hot_message`, inline (this runs for every line of a flood)
    try:
        params = message["params"]
        update = params["update"]
        if (
            type(message) is dict
            and len(message) == 3
            and message["jsonrpc"] == "2.0"
            and message["method"] == "session/update"
            and type(params) is dict
            and len(params) == 2
            and type(params["sessionId"]) is str
            and type(update) is dict
            and len(update) == 3
            and update["sessionUpdate"] == HOT_TAG
            and type(update["terminalId"]) is str
            and type(update["data"]) is str
        ):
            return message
    except (KeyError, TypeError, IndexError):
        pass
    return None


V1_TEXT_TAGS = frozenset({"agent_message_chunk", "user_message_chunk", "agent_thought_chunk"})
_V1_OUTPUT_KEYS = frozenset({"terminal_output", "terminal_output_delta"})
_V1_TAGS = (b"_message_chunk", b"agent_thought_chunk", b"terminal_output")


def is_v1_hot_update(update: Any) -> bool:
    """Whether a v1 ``update`` is of one of the v1 hot shapes, exactly (see the module)."""
    if type(update) is not dict:
        return False
    tag = update.get("sessionUpdate")
    if tag == "tool_call_update":
        if len(update) != 3 or type(update.get("toolCallId")) is not str:
            return False
        meta = update.get("_meta")
        if type(meta) is not dict or len(meta) != 1:
            return False
        [(key, output)] = meta.items()
        return (
            key in _V1_OUTPUT_KEYS
            and type(output) is dict
            and len(output) == 2
            and type(output.get("data")) is str
            and type(output.get("terminal_id", output.get("terminalId"))) is str
        )
    if type(tag) is not str or tag not in V1_TEXT_TAGS:
        return False
    size = len(update)
    if size == 3:
        if type(update.get("messageId")) is not str:
            return False
    elif size != 2:
        return False
    content = update.get("content")
    return (
        type(content) is dict
        and len(content) == 2
        and content.get("type") == "text"
        and type(content.get("text")) is str
    )


def decode_v1_hot_line(line: bytes) -> dict[str, Any] | None:
    """The message of ``line`` if it is a v1 ``session/update`` of a v1 hot shape, else None."""
    if _loads is None:
        return None
    size = len(line)
    if size > _MAX:
        return None
    if size > _WHOLE:
        ends = line[:_ENDS] + line[-_ENDS:]
        if not any(tag in ends for tag in _V1_TAGS):
            return None
    try:
        message = _loads(line)
    except _Refused:
        return None
    try:
        params = message["params"]
        if (
            type(message) is dict
            and len(message) == 3
            and message["jsonrpc"] == "2.0"
            and message["method"] == "session/update"
            and type(params) is dict
            and len(params) == 2
            and type(params["sessionId"]) is str
            and is_v1_hot_update(params["update"])
        ):
            return message
    except (KeyError, TypeError, IndexError):
        pass
    return None
