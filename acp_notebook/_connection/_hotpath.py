"""The hot line of a terminal flood, decoded fast (layer 4: client).

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

__all__ = ["HOT_TAG", "decode_hot_line", "is_hot_message"]

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
