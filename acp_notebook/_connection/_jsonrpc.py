"""JSON-RPC 2.0 over newline-delimited UTF-8 JSON, on anyio byte streams.

Works on plain JSON values (dicts), not on protocol models.

* Our request ids are ints counting from 0. Requests from the peer are kept in a separate
  table keyed by the peer's id, so the two id spaces never collide.
* Each request from the peer runs in its own task; notifications are awaited inline by the
  reader, so they are handled strictly in the order they arrived.
* ``$/cancel_request`` from the peer cancels the matching handler task, which is then answered
  with ``-32800`` (a handler may instead catch the cancellation and return a result at once,
  for example a ``cancelled`` permission outcome). `Connection.cancel_request` sends one.
* Batches are accepted (each element handled, each answer sent as its own line), never sent.
* Bad lines are answered with ``-32700``; oversize lines are skipped while streaming. Both are
  reported through ``on_problem`` and kept in `Connection.log`. A bad line is anything the
  JSON decoder refuses (see `decode_json_line`: deep nesting and huge integers included) and
  any message nested more than `MAX_DEPTH` levels. Its answer carries the request's id when
  that can be read from the members before the bad one; a bad *answer* to one of our
  requests fails that request with ``-32700`` instead. The problem is a `BadLine`.
* Every problem is a `Problem` value (``kind``, ``detail``, ``preview`` of the offending
  bytes); ``str(problem)`` is its one-line log message, which `Connection.log` keeps.
* `Connection.observe` shows an observer every message sent and received (the tests check
  all of our client's traffic against the schema with it).
* We never write ``NaN``/``Infinity`` or a value too deep to encode: `request`/`notify` raise
  `TypeError`, a handler's result becomes an ``-32603`` answer.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final, Literal, TypeAlias

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, TaskGroup, TaskStatus

from ._errors import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    REQUEST_CANCELLED,
    ConnectionClosed,
    RpcError,
)
from ._lines import (
    TOO_DEEP,
    BadJson,
    LineReader,
    LineTooLong,
    decode_json_line,
    leading_members,
    memory_byte_pipe,
    nested_deeper,
)

__all__ = [
    "CANCEL_REQUEST_METHOD",
    "MAX_DEPTH",
    "BadLine",
    "Connection",
    "LogEntry",
    "NotificationHandler",
    "Observer",
    "Problem",
    "ProblemCallback",
    "ProblemKind",
    "RequestHandler",
    "connection_pair",
]

logger = logging.getLogger("acp_notebook.jsonrpc")

CANCEL_REQUEST_METHOD: Final = "$/cancel_request"
#: A connection's ``pace`` (set by the notebook layer, ``_notebook._pacing``): called before each
#: batch of lines with the size of the chunk it came from and the seconds already waited for it;
#: the read loop sleeps for what it returns, and asks again, until it returns 0. Back-pressure:
#: while the loop waits, the agent's pipe fills and the agent waits, so a flood in the
#: background leaves a cell the interpreter.
Pace: TypeAlias = Callable[[int, float], float]
FAST_RUN: Final = 32
"""Most recognised lines handed to the fast handler at once (`set_fast_notifications`): a run
long enough to share the handler's per-run work, short enough that its decoded messages stay
in the CPU's caches."""
MAX_DEPTH: Final = 256
"""Deepest nesting of arrays and objects accepted in a message (the message object is level 1).

No ACP message comes near it; it keeps every later step (validation, repr, json.dumps of the
log) far from Python's recursion limit."""

RequestHandler: TypeAlias = Callable[[str, Any], Awaitable[Any]]
NotificationHandler: TypeAlias = Callable[[str, Any], Awaitable[None]]
FastDecoder: TypeAlias = Callable[[bytes], "dict[str, Any] | None"]
FastHandler: TypeAlias = Callable[["list[dict[str, Any]]"], None]


def _not_fast(line: bytes) -> dict[str, Any] | None:
    return None


def _unused(messages: list[dict[str, Any]]) -> None:  # pragma: no cover - _not_fast takes none
    raise AssertionError(messages)


_NO_FAST: tuple[FastDecoder, FastHandler] = (_not_fast, _unused)  # no shortcut set
ProblemCallback: TypeAlias = Callable[["Problem"], None]
EofCallback: TypeAlias = Callable[[], Awaitable[BaseException]]
LogEntry: TypeAlias = tuple[Literal["send", "recv"], "dict[str, Any] | list[Any] | str"]
"""``(direction, message)``; a ``str`` message is a problem's note (``str(problem)``)."""
Observer: TypeAlias = Callable[[Literal["send", "recv"], "dict[str, Any] | list[Any]"], None]
"""``observer(direction, message)``: see `Connection.observe`."""

PeerId: TypeAlias = int | str


ProblemKind: TypeAlias = Literal[
    # reported by the connection
    "unparsable",  # a line the JSON decoder refuses, or nested or wide past the limits
    "too_long",  # a line over ``max_line_bytes``, discarded unread
    "not_jsonrpc",  # JSON, but not a JSON-RPC message (not an object, empty batch, bad id...)
    "duplicate_id",  # a request whose id is still being served
    "unknown_response",  # an answer to no request of ours
    "rejected",  # a notification the handler refused (an error other than "method not found")
    "handler_failed",  # our own handler raised, or returned what is not JSON
    # reported by the client, for JSON-RPC messages it cannot use as ACP
    "not_acp",  # does not validate against the protocol's models
    "unknown_session",  # names a session the client does not have
    "unknown_elicitation",  # completes a question the client was never asked
]

PREVIEW_BYTES: Final = 80


def preview_of(data: bytes | str) -> str:
    """The first `PREVIEW_BYTES` of offending bytes (or text), as text."""
    if isinstance(data, str):
        return data[:PREVIEW_BYTES]
    return data[:PREVIEW_BYTES].decode("utf-8", "replace")


@dataclass(frozen=True, slots=True)
class Problem:
    """Something wrong the peer sent (or that our handler did with it): reported through
    ``on_problem``, never raised. ``str()`` is a one-line log message."""

    kind: ProblemKind
    detail: str
    """What, in a few words ("answer for an unknown request id 42")."""
    preview: str | None = None
    """The start of the offending bytes as text (`preview_of`), when there are some."""

    def __str__(self) -> str:
        return self.detail if self.preview is None else f"{self.detail}: {self.preview!r}"


@dataclass(frozen=True, slots=True)
class BadLine(Problem):
    """The problem for a line that is not a JSON-RPC message we accept (kind "unparsable").

    ``str()`` is ``"unparsable line (<reason>): '<first 80 bytes>'"``. Build it with `of`.
    """

    reason: str = ""
    """Why, in a few words: the decoder's message, "nested too deeply", "NaN is not JSON"..."""
    size: int = 0
    """The line's length in bytes (without its newline)."""
    request_id: int | str | None = None
    """The id read from the line, if it had a readable one."""

    @classmethod
    def of(cls, reason: str, line: bytes, request_id: int | str | None) -> BadLine:
        return cls(
            "unparsable",
            f"unparsable line ({reason})",
            preview_of(line),
            reason=reason,
            size=len(line),
            request_id=request_id,
        )


class _Pending:
    __slots__ = ("error", "event", "result")

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.result: Any = None
        self.error: BaseException | None = None


def _dumps(message: dict[str, Any]) -> bytes:
    try:
        text = json.dumps(message, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:  # lone surrogates: the ASCII form escapes them
        return json.dumps(message, separators=(",", ":"), allow_nan=False).encode("ascii") + b"\n"


def _json(value: Any) -> str:
    """A parsed value as compact JSON again, for a problem's preview (at most a few KiB)."""
    try:
        return json.dumps(for_log(value), separators=(",", ":"), ensure_ascii=False)[:PREVIEW_BYTES]
    except (TypeError, ValueError, RecursionError):
        return repr(value)[:PREVIEW_BYTES]


def _error_response(rid: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": rid, "error": error}


class Connection:
    """One JSON-RPC peer. Use as ``async with conn:``; the reader runs inside that block."""

    def __init__(
        self,
        receive: ByteReceiveStream,
        send: ByteSendStream,
        *,
        max_line_bytes: int = 64 * 2**20,
        name: str = "agent",
        on_problem: ProblemCallback | None = None,
        request_handler: RequestHandler | None = None,
        notification_handler: NotificationHandler | None = None,
        on_eof: EofCallback | None = None,
        log_size: int = 100,
    ) -> None:
        self.name = name
        self._receive = receive
        self._send = send
        self._lines = LineReader(receive, max_line_bytes)
        self._on_problem = on_problem
        self._on_eof = on_eof
        self._request_handler = request_handler
        #: back-pressure before each batch of lines (see :data:`Pace`); None: read freely
        self.pace: Pace | None = None
        self._notification_handler = notification_handler
        self._fast: tuple[FastDecoder, FastHandler] | None = None
        self.log: deque[LogEntry] = deque(maxlen=log_size)
        """Recent traffic and problem notes, oldest first."""
        self.messages_seen = 0
        """Messages sent and received so far (the log keeps the last ones)."""
        self._observers: list[Observer] = []
        self._ids = itertools.count()
        self._pending: dict[int, _Pending] = {}
        self._abandoned: set[int] = set()  # ids whose caller stopped waiting
        self._incoming: dict[PeerId, anyio.CancelScope] = {}
        self._write_lock = anyio.Lock()
        self._tg: TaskGroup | None = None
        self._outer: TaskGroup | None = None
        self._closed_event = anyio.Event()
        self._failure: BaseException | None = None
        self._entered = False

    # -- configuration -------------------------------------------------------------------

    def set_request_handler(self, handler: RequestHandler | None) -> None:
        """``async handler(method, params) -> result``; raise `RpcError` to answer an error."""
        self._request_handler = handler

    def set_notification_handler(self, handler: NotificationHandler | None) -> None:
        """``async handler(method, params)``, awaited by the reader (strict order).

        Raise `MethodNotFound` for a notification you do not know: it is logged and ignored.
        """
        self._notification_handler = handler

    def set_fast_notifications(
        self, decode: FastDecoder | None, handle: FastHandler | None = None
    ) -> None:
        """A shortcut for the commonest notification lines (a flood's terminal output).

        ``decode(line)`` returns the message of a line it recognises, or None. It must only
        recognise a notification (``method`` and ``params``, no ``id``, not
        ``$/cancel_request``), nest at most a few levels, not be over ``WIDE_CHECK_BYTES``,
        and be the very dict the JSON decoder gives. Such a line skips the generic checks,
        is logged and observed as any message. The messages of consecutive such lines (of
        one read from the peer) go to ``handle(messages)`` together, in order, called
        synchronously by the reader before it takes any other line, so that a handler can
        apply a run of them in one step (a flood's chunks of one terminal). ``handle`` should
        not raise: what it raises is treated as the notification handler's, for the run's
        first message. Every other line takes the usual path.
        """
        self._fast = None if decode is None or handle is None else (decode, handle)

    @property
    def fast_notifications(self) -> tuple[FastDecoder, FastHandler] | None:
        """The ``(decode, handle)`` of `set_fast_notifications`, or None when none is set."""
        return self._fast

    def observe(self, observer: Observer) -> Callable[[], None]:
        """Call ``observer(direction, message)`` with every message: ``"send"`` once it is
        written, ``"recv"`` (an object or a batch, whole) before it is handled. Lines that are
        not a message are problems (``on_problem``), not traffic. The message is the
        connection's own: do not change it. Returns a function that stops the observer."""
        self._observers.append(observer)

        def stop() -> None:
            if observer in self._observers:
                self._observers.remove(observer)

        return stop

    def _observe(
        self, direction: Literal["send", "recv"], message: dict[str, Any] | list[Any]
    ) -> None:
        for observer in list(self._observers):
            try:
                observer(direction, message)
            except Exception:
                logger.exception("%s: traffic observer failed", self.name)

    @property
    def max_buffered(self) -> int:
        """Most bytes the line reader ever held at once."""
        return self._lines.max_buffered

    # -- lifecycle -----------------------------------------------------------------------

    async def __aenter__(self) -> Connection:
        if self._entered:
            raise RuntimeError("a Connection can only be entered once")
        self._entered = True
        outer = anyio.create_task_group()
        await outer.__aenter__()
        self._outer = outer
        try:
            await outer.start(self._run, name=f"{self.name} connection")
        except BaseException:
            outer.cancel_scope.cancel()
            await outer.__aexit__(None, None, None)
            raise
        return self

    async def _run(self, *, task_status: TaskStatus[None]) -> None:
        # The reader and the handler tasks live in this inner group, so that `fail` can
        # cancel them without cancelling the task that entered the connection.
        async with anyio.create_task_group() as tg:
            self._tg = tg
            if self._failure is not None:
                tg.cancel_scope.cancel()
            tg.start_soon(self._read_loop, name=f"{self.name} reader")
            task_status.started()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.fail(ConnectionClosed(f"the connection to the {self.name} was closed"))
        outer = self._outer
        assert outer is not None
        try:
            await outer.__aexit__(None, None, None)
        finally:
            with anyio.CancelScope(shield=True):
                for stream in (self._send, self._receive):
                    with contextlib.suppress(Exception):  # already broken: nothing to free
                        await stream.aclose()

    @property
    def closed(self) -> bool:
        """True once the peer's stream ended or the connection failed or was closed."""
        return self._closed_event.is_set()

    @property
    def failure(self) -> BaseException | None:
        """The exception every request raises now that the connection is closed."""
        return self._failure

    def close_error(self) -> BaseException:
        """The exception requests raise once closed (`failure`, or a generic one)."""
        if self._failure is not None:
            return self._failure
        return ConnectionClosed(f"the connection to the {self.name} is closed")

    async def wait_closed(self) -> None:
        await self._closed_event.wait()

    def fail(self, exc: BaseException) -> None:
        """Mark the connection dead: pending and later requests raise ``exc``.

        The first call wins; later calls are ignored. Stops the reader and handler tasks.
        """
        if self._failure is not None:
            return
        self._failure = exc
        pending, self._pending = self._pending, {}
        for waiter in pending.values():
            waiter.error = exc
            waiter.event.set()
        self._closed_event.set()
        if self._tg is not None:
            self._tg.cancel_scope.cancel()

    # -- outgoing ------------------------------------------------------------------------

    async def request(self, method: str, params: Any = None) -> Any:
        """Send a request and wait for its result.

        Raises `RpcError` for an error answer and `ConnectionClosed` (or the exception given to
        `fail`) when no answer can come. If the caller is cancelled while waiting, a
        ``$/cancel_request`` is sent for it and its answer will be ignored.
        """
        self._check_open()
        rid = next(self._ids)
        waiter = _Pending()
        self._pending[rid] = waiter
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        try:
            await self._write(message)
            await waiter.event.wait()
        except anyio.get_cancelled_exc_class():
            if self._pending.pop(rid, None) is not None and not waiter.event.is_set():
                self._abandoned.add(rid)
                self.cancel_request(rid)
            raise
        except BaseException:
            self._pending.pop(rid, None)
            raise
        if waiter.error is not None:
            raise waiter.error
        return waiter.result

    async def notify(self, method: str, params: Any = None) -> None:
        """Send a notification."""
        self._check_open()
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self._write(message)

    async def notify_encoded(self, method: str, params: Any, line: bytes) -> None:
        """`notify`, with the message already encoded: ``line`` is exactly what `notify`
        would write (compact JSON, newline included), which the caller guarantees; the log
        and the observers get the message as usual. For a hot sender that builds its lines
        without a JSON encoder (the embedded agent's terminal output)."""
        self._check_open()
        await self._write({"jsonrpc": "2.0", "method": method, "params": params}, line)

    def cancel_request(self, request_id: int) -> None:
        """Ask the peer to cancel one of our requests (sends ``$/cancel_request``).

        The pending `request` call still gets whatever the peer answers. No-op once closed.
        """
        if self.closed or self._tg is None or self._tg.cancel_scope.cancel_called:
            return  # (a task started in a cancelled group would never get to run its send)
        self._tg.start_soon(self._send_cancel, request_id)

    async def _send_cancel(self, request_id: int) -> None:
        with contextlib.suppress(ConnectionClosed):
            await self.notify(CANCEL_REQUEST_METHOD, {"requestId": request_id})

    def _check_open(self) -> None:
        if self._failure is not None:
            raise self._failure
        if self._tg is None:
            raise RuntimeError("use `async with connection:` before sending")
        if self.closed:
            raise ConnectionClosed(f"the connection to the {self.name} is closed")

    async def _write(self, message: dict[str, Any], data: bytes | None = None) -> None:
        if data is None:
            try:
                data = _dumps(message)
            except (TypeError, ValueError, RecursionError) as exc:
                raise TypeError(f"message is not JSON-serialisable: {exc}") from exc
        async with self._write_lock:
            try:
                await self._send.send(data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
                if self._failure is None and self._on_eof is not None:
                    # The peer stopped reading: usually it is exiting. Let the owner say how
                    # (for an agent process: its exit code and stderr tail) before we report.
                    try:
                        self.fail(await self._on_eof())
                    except Exception:
                        logger.exception("%s: on_eof callback failed", self.name)
                if self._failure is not None:
                    raise self._failure from exc
                raise ConnectionClosed(
                    f"cannot write to the {self.name}: its input is closed"
                ) from exc
        self.log.append(("send", message if len(data) <= LOG_WHOLE_BYTES else for_log(message)))
        self.messages_seen += 1
        if self._observers:
            self._observe("send", message)

    async def _reply(self, message: dict[str, Any]) -> None:
        """Send an answer; a closed connection is not an error here."""
        try:
            await self._write(message)
        except ConnectionClosed:
            logger.debug("%s: answer dropped, connection closed: %r", self.name, message)

    # -- incoming ------------------------------------------------------------------------

    def _problem(
        self, kind: ProblemKind, detail: str, offending: bytes | str | None = None
    ) -> None:
        self._report(Problem(kind, detail, None if offending is None else preview_of(offending)))

    def _report(self, problem: Problem) -> None:
        note = str(problem)
        self.log.append(("recv", note))
        logger.warning("%s: %s", self.name, note)
        if self._on_problem is not None:
            try:
                self._on_problem(problem)
            except Exception:
                logger.exception("%s: on_problem callback failed", self.name)

    async def _read_loop(self) -> None:
        reader = self._lines
        decode = functools.partial(decode_json_line, max_depth=MAX_DEPTH)
        log_append = self.log.append
        cancelled = anyio.get_cancelled_exc_class()
        try:
            while True:
                items = await reader.receive_lines()
                if items is None:
                    break
                pace = self.pace
                if pace is not None:
                    waited = 0.0
                    while (delay := pace(reader.last_chunk, waited)) > 0:
                        await anyio.sleep(delay)  # a cell runs: leave it the interpreter
                        waited += delay
                fast_decode, fast_handle = self._fast or _NO_FAST
                whole = LOG_WHOLE_BYTES
                run: list[dict[str, Any]] = []  # recognised lines not handled yet, in order
                for item in items:
                    if type(item) is bytes:
                        hot = fast_decode(item)
                        if hot is not None:
                            log_append(("recv", hot if len(item) <= whole else for_log(hot)))
                            self.messages_seen += 1
                            if self._observers:
                                self._observe("recv", hot)
                            run.append(hot)
                            if len(run) >= FAST_RUN:
                                self._fast_run(fast_handle, run)
                                run = []
                            continue
                    if run:
                        self._fast_run(fast_handle, run)
                        run = []
                    if type(item) is not bytes:
                        assert isinstance(item, LineTooLong)
                        self._problem(
                            "too_long",
                            f"discarded a line of {item.size} bytes "
                            f"(limit {self._lines_limit} bytes)",
                        )
                        continue
                    if len(item) > WIDE_CHECK_BYTES and too_many_values(item):
                        # Decoding would build millions of objects (20x the line's size).
                        await self._refuse(item, _TOO_WIDE, {}, None, parsed=False)
                        continue
                    try:
                        message = decode(item)
                    except BadJson as exc:
                        await self._bad_line(item, exc)
                        continue
                    deep = nested_deeper(message, MAX_DEPTH, item)
                    if type(message) is not dict:
                        await self._handle_other(message, item, deep)
                        continue
                    if deep:
                        await self._refuse(item, _TOO_DEEP, message, None, parsed=True)
                        continue
                    log_append(
                        ("recv", message if len(item) <= LOG_WHOLE_BYTES else for_log(message))
                    )
                    self.messages_seen += 1
                    if self._observers:
                        self._observe("recv", message)
                    # Fast path for the flood case: a notification for the handler.
                    method = message.get("method")
                    handler = self._notification_handler
                    if (
                        handler is None
                        or type(method) is not str
                        or "id" in message
                        or method == CANCEL_REQUEST_METHOD
                    ):
                        await self._dispatch(message)
                        continue
                    try:
                        await handler(method, message.get("params"))
                    except cancelled:
                        raise
                    except Exception as exc:
                        self._notification_failed(method, exc)
                if run:
                    self._fast_run(fast_handle, run)
        except cancelled:
            raise
        except Exception as exc:
            logger.exception("%s: reader failed", self.name)
            closed = ConnectionClosed(f"reading from the {self.name} failed: {exc!r}")
            closed.__cause__ = exc
            self.fail(closed)
            return
        # End of stream.
        failure: BaseException = ConnectionClosed(f"the {self.name} closed the connection")
        if self._on_eof is not None:
            try:
                failure = await self._on_eof()
            except cancelled:
                raise
            except Exception:
                logger.exception("%s: on_eof callback failed", self.name)
        self.fail(failure)

    def _fast_run(self, handle: FastHandler, run: list[dict[str, Any]]) -> None:
        try:
            handle(run)
        except Exception as exc:
            self._notification_failed(run[0]["method"], exc)

    @property
    def _lines_limit(self) -> int:
        return self._lines._max

    async def _bad_line(self, line: bytes, exc: BadJson) -> None:
        if not line.strip():
            return  # blank line: tolerated silently
        members, failed = leading_members(exc.text)
        await self._refuse(line, exc.reason, members, failed, parsed=False)

    async def _refuse(
        self,
        line: bytes,
        reason: str,
        members: dict[str, Any],
        failed: str | None,
        *,
        parsed: bool,
    ) -> None:
        """Report a bad line and answer it, given the members that could be read.

        ``members`` is the whole message if it ``parsed`` (but is refused), else what
        `leading_members` read before the member ``failed``.
        """
        keys = set(members)
        if failed is not None:
            keys.add(failed)
        rid = members.get("id")
        if not (type(rid) is int or type(rid) is str):
            rid = None
        self._report(BadLine.of(reason, line, rid))
        asks = "method" in keys or "params" in keys
        if not asks and ("result" in keys or "error" in keys):
            # An answer to one of our requests that cannot be read: that request fails.
            if rid is not None:
                self._fail_pending(rid, RpcError(PARSE_ERROR, f"unreadable answer: {reason}"))
            return
        if parsed and asks and "id" not in keys:
            return  # a notification: never answered
        if rid is not None and rid in self._incoming:
            rid = None  # that id is being served: it must not get a second answer
        await self._reply(_error_response(rid, PARSE_ERROR, f"Parse error: {reason}"))

    def _fail_pending(self, rid: PeerId, error: RpcError) -> None:
        if type(rid) is not int:
            return
        waiter = self._pending.pop(rid, None)
        if waiter is None:
            self._abandoned.discard(rid)
            return
        waiter.error = error
        waiter.event.set()

    async def _handle_other(self, message: Any, line: bytes, deep: bool) -> None:
        """A parsed line that is not an object: a batch, or invalid."""
        if type(message) is list:
            self.log.append(("recv", message if len(line) <= LOG_WHOLE_BYTES else for_log(message)))
            self.messages_seen += 1
            if self._observers:
                self._observe("recv", message)
            if not message:
                self._problem("not_jsonrpc", "received an empty batch", line)
                await self._reply(_error_response(None, INVALID_REQUEST, "Empty batch"))
                return
            for element in message:
                if deep and nested_deeper(element, MAX_DEPTH - 1):
                    dict_element = element if type(element) is dict else {}
                    await self._refuse(line, _TOO_DEEP, dict_element, None, parsed=True)
                elif type(element) is dict:
                    await self._dispatch(element)
                else:
                    self._problem("not_jsonrpc", "batch element is not an object", _json(element))
                    await self._reply(
                        _error_response(None, INVALID_REQUEST, "Batch element is not an object")
                    )
        else:
            self._problem("not_jsonrpc", "message is not an object or array", line)
            await self._reply(
                _error_response(None, INVALID_REQUEST, "Message is not an object or array")
            )

    def _notification_failed(self, method: str, exc: Exception) -> None:
        if isinstance(exc, RpcError):
            if exc.code == METHOD_NOT_FOUND:
                logger.debug("%s: ignored unknown notification %s", self.name, method)
            else:
                self._problem("rejected", f"notification {method} was rejected: {exc}")
            return
        logger.error("%s: notification handler failed for %s", self.name, method, exc_info=exc)
        self._problem("handler_failed", f"notification handler failed for {method}: {exc!r}")

    async def _dispatch(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method is None:
            if "id" in message and ("result" in message or "error" in message):
                self._on_response(message)
                return
            await self._invalid(message, "neither a request, a notification nor a response")
            return
        if type(method) is not str:
            await self._invalid(message, "method is not a string")
            return
        if "id" in message:
            await self._on_request(message["id"], method, message.get("params"))
            return
        # Notification: awaited inline so that order is kept.
        if method == CANCEL_REQUEST_METHOD:
            self._on_cancel_request(message.get("params"))
            return
        handler = self._notification_handler
        if handler is None:
            logger.debug("%s: ignored notification %s (no handler)", self.name, method)
            return
        try:
            await handler(method, message.get("params"))
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            self._notification_failed(method, exc)

    async def _invalid(self, message: dict[str, Any], why: str) -> None:
        rid = message.get("id")
        if not (type(rid) is int or type(rid) is str):
            rid = None
        self._problem("not_jsonrpc", f"invalid message ({why})", _json(message))
        await self._reply(_error_response(rid, INVALID_REQUEST, f"Invalid Request: {why}"))

    def _on_response(self, message: dict[str, Any]) -> None:
        rid = message["id"]
        waiter = self._pending.pop(rid, None) if type(rid) is int else None
        if waiter is None:
            if type(rid) is int and rid in self._abandoned:
                self._abandoned.discard(rid)
                logger.debug("%s: dropped the answer to abandoned request %r", self.name, rid)
                return
            self._problem("unknown_response", f"answer for an unknown request id {rid!r}")
            return
        if "error" in message:
            error = message["error"]
            if (
                type(error) is dict
                and type(error.get("code")) is int
                and type(error.get("message")) is str
            ):
                waiter.error = RpcError(error["code"], error["message"], error.get("data"))
            else:
                waiter.error = RpcError(INTERNAL_ERROR, "malformed error answer", error)
        else:
            waiter.result = message["result"]
        waiter.event.set()

    async def _on_request(self, rid: Any, method: str, params: Any) -> None:
        if not (type(rid) is int or type(rid) is str):
            self._problem("not_jsonrpc", f"request {method} has an invalid id {rid!r:.80}")
            await self._reply(_error_response(None, INVALID_REQUEST, "Invalid request id"))
            return
        if rid in self._incoming:
            self._problem("duplicate_id", f"request id {rid!r:.80} is already in use")
            await self._reply(_error_response(rid, INVALID_REQUEST, "Request id already in use"))
            return
        scope = anyio.CancelScope()
        self._incoming[rid] = scope
        assert self._tg is not None
        self._tg.start_soon(self._serve, rid, method, params, scope, name=f"{self.name} {method}")

    def _on_cancel_request(self, params: Any) -> None:
        rid = params.get("requestId") if type(params) is dict else None
        scope = self._incoming.get(rid) if type(rid) is int or type(rid) is str else None
        if scope is None:
            logger.debug("%s: cancel for unknown or finished request %r", self.name, rid)
            return
        scope.cancel()

    async def _serve(self, rid: PeerId, method: str, params: Any, scope: anyio.CancelScope) -> None:
        answer: dict[str, Any] | None = None
        try:
            with scope:
                handler = self._request_handler
                if handler is None:
                    raise RpcError(METHOD_NOT_FOUND, f"method not found: {method}")
                result = await handler(method, params)
                answer = {"jsonrpc": "2.0", "id": rid, "result": result}
        except RpcError as exc:
            answer = {"jsonrpc": "2.0", "id": rid, "error": exc.to_wire()}
        except Exception as exc:
            logger.exception("%s: request handler failed for %s", self.name, method)
            self._problem("handler_failed", f"request handler failed for {method}: {exc!r}")
            answer = _error_response(rid, INTERNAL_ERROR, f"Internal error: {exc}")
        finally:
            self._incoming.pop(rid, None)
        if answer is None:  # our scope was cancelled by $/cancel_request
            answer = _error_response(rid, REQUEST_CANCELLED, "Request cancelled")
        try:
            await self._write(answer)
        except TypeError as exc:  # result not JSON-serialisable
            self._problem("handler_failed", f"result of {method} is not JSON-serialisable: {exc}")
            await self._reply(_error_response(rid, INTERNAL_ERROR, f"Internal error: {exc}"))
        except ConnectionClosed:
            logger.debug("%s: answer to %s dropped, connection closed", self.name, method)


_TOO_DEEP: Final = TOO_DEEP  # the words of `decode_json_line` for a line nested too deeply

# A line over `WIDE_CHECK_BYTES` with more than `MAX_VALUES` separators and containers is a bad
# line: a 16 MiB `[[],[],...]` decodes to about 350 MiB. Real ACP lines are long because of
# base64 or text, which hold few of these characters.
WIDE_CHECK_BYTES: Final = 2**20
MAX_VALUES: Final = 1_000_000
_TOO_WIDE: Final = f"more than {MAX_VALUES} values"


def too_many_values(line: bytes) -> bool:
    """Whether decoding ``line`` could build more than `MAX_VALUES` values (a cheap upper
    bound: commas and opening brackets, quoted or not)."""
    return line.count(b",") + line.count(b"[") + line.count(b"{") > MAX_VALUES


# The diagnostic log keeps messages whose line is longer than this as shortened copies, so a
# flood of 64 KiB terminal chunks costs the log about `LOG_KEEP_CHARS` per entry, not 64 KiB.
LOG_WHOLE_BYTES: Final = 4096
LOG_KEEP_CHARS: Final = 120
LOG_KEEP_ITEMS: Final = 64


def for_log(value: Any, depth: int = 0) -> Any:
    """A copy of a message for the diagnostic log: long strings cut to `LOG_KEEP_CHARS`
    (with their length), long lists to `LOG_KEEP_ITEMS`, nothing deeper than 8 levels."""
    kind = type(value)
    if kind is str:
        if len(value) <= LOG_KEEP_CHARS:
            return value
        return f"{value[:LOG_KEEP_CHARS]}… [{len(value)} chars]"
    if kind is not dict and kind is not list:
        return value
    if depth >= 8:
        return "…"
    if kind is dict:
        return {key: for_log(item, depth + 1) for key, item in value.items()}
    kept = [for_log(item, depth + 1) for item in value[:LOG_KEEP_ITEMS]]
    if len(value) > LOG_KEEP_ITEMS:
        kept.append(f"… [{len(value)} items]")
    return kept


def connection_pair(
    *, name_a: str = "client", name_b: str = "agent", max_buffers: float = 64
) -> tuple[Connection, Connection]:
    """Two connections wired to each other in memory (neither entered yet)."""
    a_send, b_receive = memory_byte_pipe(max_buffers)
    b_send, a_receive = memory_byte_pipe(max_buffers)
    return Connection(a_receive, a_send, name=name_b), Connection(b_receive, b_send, name=name_a)
