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
_WHOLE = 4096  # a line up to this long is decoded; a longer one only with a tag at its ends
_ENDS = 256
_MAX = WIDE_CHECK_BYTES  # longer lines get the connection's width check

HotDecoder = Callable[[bytes], "dict[str, Any] | None"]


def _session_update_decoder(
    name: str, tags: tuple[bytes, ...], is_hot_update: Callable[[Any], bool]
) -> HotDecoder:
    """A decoder of the lines of the ``session/update`` notifications whose update
    ``is_hot_update``: ``decode(line)`` is the message of ``line`` if it is such a
    notification of the hot shape (``jsonrpc``, ``method``, ``params`` of ``sessionId`` and
    ``update``, nothing else), else None. A line over ``_WHOLE`` bytes is decoded only with
    one of ``tags`` in its first or last ``_ENDS`` bytes. (What the v2 and the v1 decoders
    share, in one function each: a flood calls it for every line.)"""
    loads = _loads

    def refuse(line: bytes) -> dict[str, Any] | None:
        return None

    def decode(line: bytes) -> dict[str, Any] | None:
        if len(line) > _WHOLE:  # (a short line is decoded: that costs less than searching it)
            if len(line) > _MAX:
                return None
            ends = line[:_ENDS] + line[-_ENDS:]
            for tag in tags:
                if tag in ends:
                    break
            else:
                return None
        try:
            message = loads(line)  # type: ignore[misc]  # (None: `refuse` is used)
            params = message["params"]  # (a message or params that is no dict: TypeError)
            if (
                len(message) == 3
                and message["jsonrpc"] == "2.0"
                and message["method"] == "session/update"
                and len(params) == 2
                and type(params["sessionId"]) is str
                and is_hot_update(params["update"])
            ):
                return message  # type: ignore[no-any-return]
        except (_Refused, KeyError, TypeError, IndexError):
            pass
        return None

    found = decode if loads is not None else refuse  # (without orjson, no shortcut)
    found.__name__ = found.__qualname__ = name
    return found


def is_hot_message(message: Any) -> bool:
    """Whether ``message`` is a notification of the hot shape, exactly (see the module)."""
    if type(message) is not dict or len(message) != 3:
        return False
    if message.get("jsonrpc") != "2.0" or message.get("method") != "session/update":
        return False
    params = message.get("params")
    if type(params) is not dict or len(params) != 2 or type(params.get("sessionId")) is not str:
        return False
    return _is_hot_update(params.get("update"))


def _is_hot_update(update: Any) -> bool:
    """Whether ``update`` is a ``terminal_output_chunk`` of the hot shape, exactly."""
    try:  # (an update that is no dict raises TypeError)
        return (
            len(update) == 3
            and update["sessionUpdate"] == HOT_TAG
            and type(update["terminalId"]) is str
            and type(update["data"]) is str
        )
    except (KeyError, TypeError):
        return False


decode_hot_line = _session_update_decoder("decode_hot_line", (HOT_TAG.encode(),), _is_hot_update)
decode_hot_line.__doc__ = """The message of ``line`` if it is of the hot shape, else None (the
usual path decides)."""

V1_TEXT_TAGS = frozenset({"agent_message_chunk", "user_message_chunk", "agent_thought_chunk"})


def is_v1_hot_update(update: Any) -> bool:
    """Whether a v1 ``update`` is of one of the v1 hot shapes, exactly (see the module)."""
    try:  # (a value that is no dict where one should be raises TypeError or AttributeError)
        tag = update["sessionUpdate"]
        if tag == "tool_call_update":
            if len(update) != 3 or type(update["toolCallId"]) is not str:
                return False
            meta = update["_meta"]
            if len(meta) != 1:
                return False
            output = meta.get("terminal_output")  # (or, its one other name)
            if output is None:
                output = meta.get("terminal_output_delta")
            if len(output) != 2 or type(output["data"]) is not str:
                return False
            terminal_id = output.get("terminal_id")
            if terminal_id is None:
                terminal_id = output.get("terminalId")
            return type(terminal_id) is str
        if tag not in V1_TEXT_TAGS:
            return False
        size = len(update)
        if size == 3:
            if type(update["messageId"]) is not str:
                return False
        elif size != 2:
            return False
        content = update["content"]
        return len(content) == 2 and content["type"] == "text" and type(content["text"]) is str
    except (KeyError, TypeError, AttributeError):
        return False


decode_v1_hot_line = _session_update_decoder(
    "decode_v1_hot_line",
    (b"_message_chunk", b"agent_thought_chunk", b"terminal_output"),
    is_v1_hot_update,
)
decode_v1_hot_line.__doc__ = """The message of ``line`` if it is a v1 ``session/update`` of a
v1 hot shape, else None."""
