"""``acp-notebook-agent --replay TRACE``: an agent that plays a recorded protocol trace back.

The trace (``acp-inspector-trace`` v1, `_connection._trace`) is read as a script, in order:

* a request the client sent is awaited: the client must send a request of that method next
  (requests are matched by method and order, never by raw id);
* the agent's answer to it is sent as the answer to the client's request, whatever its id;
* the agent's notifications and requests are sent as recorded; the client's own answers to
  the agent's requests (a permission, a question) are taken, whatever they are. Where the
  client answers with an id of its own (``terminal/create``'s ``terminalId``), later frames
  say the client's id where the recording says the recorded one;
* the client's notifications (``session/cancel``) and its recorded answers are skipped.

When the client sends a request the recording does not have next, the replay has diverged:
one line on stderr, and that request and every later one answered with an error
(`DIVERGED`) that says what was expected. A bug report becomes "attach the trace"; a demo
needs no key.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, replace
from typing import Any, TextIO

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from .._connection._errors import RpcError
from .._connection._jsonrpc import Connection
from .._connection._trace import TO_AGENT, Trace
from .._protocol import ErrorCode, Method

__all__ = ["DIVERGED", "ReplayServer", "Step", "steps_of"]

logger = logging.getLogger("acp_notebook.agent.replay")

#: At most this many seconds for the last answers to be written before a replay that ends in
#: the middle of a turn closes its connection.
CLOSE_GRACE = 2.0

#: The error code a request gets once the client has left the recording (JSON-RPC's
#: implementation-defined server error range).
DIVERGED = -32099


@dataclass(frozen=True)
class Step:
    """One thing the replay does: ``await`` a client request of ``method`` (recorded under
    ``rec_id``), ``answer`` the request recorded under ``rec_id``, ``notify`` or ``request``
    the client. ``frame``: the frame's number in the trace (1-based)."""

    kind: str  # "await", "answer", "notify", "request"
    frame: int
    method: str | None = None
    rec_id: Any = None
    params: Any = None
    result: Any = None
    error: dict[str, Any] | None = None
    #: a request's: what the client answered when it was recorded (None: not recorded)
    answered: Any = None


def steps_of(trace: Trace) -> list[Step]:
    """The replay's script (see the module docstring); batches are taken element by element."""
    steps: list[Step] = []
    asked: dict[Any, int] = {}  # the agent's recorded request id -> its step
    for number, frame in enumerate(trace.frames, start=1):
        message = frame.message()
        for item in message if isinstance(message, list) else [message]:
            if not isinstance(item, dict):
                continue
            method, has_id = item.get("method"), "id" in item
            if frame.direction == TO_AGENT:
                if isinstance(method, str) and has_id:
                    steps.append(Step("await", number, method, item["id"]))
                elif has_id and "result" in item and _key(item["id"]) in asked:
                    at = asked.pop(_key(item["id"]))  # the client's recorded answer: kept
                    steps[at] = replace(steps[at], answered=item["result"])
                continue  # its notifications and its answers to the agent: not replayed
            if isinstance(method, str):
                kind = "request" if has_id else "notify"
                if has_id:
                    asked[_key(item["id"])] = len(steps)
                steps.append(
                    Step(kind, number, method, rec_id=item.get("id"), params=item.get("params"))
                )
            elif has_id:
                error = item.get("error")
                steps.append(
                    Step(
                        "answer",
                        number,
                        rec_id=item["id"],
                        result=item.get("result"),
                        error=error if isinstance(error, dict) else None,
                    )
                )
    return steps


def _follow_state(step: Step, busy: set[str]) -> None:
    """Note a recorded ``state_update``: which sessions are in a turn (not idle)."""
    params = step.params if isinstance(step.params, dict) else {}
    update = params.get("update")
    if step.method != Method.SESSION_UPDATE or not isinstance(update, dict):
        return
    if update.get("sessionUpdate") == "state_update":
        session = str(params.get("sessionId"))
        if update.get("state") == "idle":
            busy.discard(session)
        else:
            busy.add(session)


def _key(request_id: Any) -> str:
    return repr(request_id)  # 1 and "1" are different ids


#: The fields in which a client answers with an id of its own making.
CLIENT_IDS = frozenset({"terminalId"})


def _learn(recorded: Any, actual: Any, ids: dict[str, str]) -> None:
    """Where the client answered with ids of its own (`CLIENT_IDS`) in place of the recorded
    ones; nothing else it answered (which option it chose) renames anything."""
    if isinstance(recorded, dict) and isinstance(actual, dict):
        for key, value in recorded.items():
            new = actual.get(key)
            if key in CLIENT_IDS and isinstance(value, str) and isinstance(new, str):
                if value != new:
                    ids[value] = new
            elif key in actual:
                _learn(value, new, ids)
    elif isinstance(recorded, list) and isinstance(actual, list):
        for old, new in zip(recorded, actual, strict=False):
            _learn(old, new, ids)


def _mapped(value: Any, ids: dict[str, str]) -> Any:
    """``value`` with every string the client renamed (`_learn`) said its way."""
    if not ids:
        return value
    if isinstance(value, str):
        return ids.get(value, value)
    if isinstance(value, dict):
        return {k: _mapped(v, ids) for k, v in value.items()}
    if isinstance(value, list):
        return [_mapped(v, ids) for v in value]
    return value


@dataclass
class _Incoming:
    method: str
    params: Any
    answered: anyio.Event
    result: Any = None
    error: RpcError | None = None


class ReplayServer:
    """Serves one client with a recorded trace (see the module docstring)."""

    def __init__(self, trace: Trace, *, source: str = "trace", stderr: TextIO | None = None):
        self.steps = steps_of(trace)
        self.source = source
        self.stderr = stderr if stderr is not None else sys.stderr
        self.diverged: str | None = None
        self._send: MemoryObjectSendStream[_Incoming]
        self._receive: MemoryObjectReceiveStream[_Incoming]
        self._send, self._receive = anyio.create_memory_object_stream[_Incoming](1000)
        self._waiting: dict[Any, _Incoming] = {}
        self._ids: dict[str, str] = {}  # recorded -> the client's own (`_learn`)
        self._given = 0  # requests of the client taken (each gets one answer)
        self._sent = 0  # answers written
        self._written = anyio.Event()

    async def serve(self, receive: ByteReceiveStream, send: ByteSendStream) -> None:
        conn = Connection(receive, send, name="client")
        conn.set_request_handler(self._on_request)
        conn.set_notification_handler(self._on_notification)
        conn.observe(self._count_answers)
        with self._send, self._receive:
            async with anyio.create_task_group() as tg:
                async with conn:
                    tg.start_soon(self._play, conn, tg.cancel_scope)
                    await conn.wait_closed()
                tg.cancel_scope.cancel()

    async def _on_request(self, method: str, params: Any) -> Any:
        self._given += 1  # (answered here, then written by the connection: `_count_answers`)
        if self.diverged is not None:
            raise RpcError(DIVERGED, self.diverged, {"got": method})
        incoming = _Incoming(method, params, anyio.Event())
        await self._send.send(incoming)
        await incoming.answered.wait()
        if incoming.error is not None:
            raise incoming.error
        return incoming.result

    def _count_answers(self, direction: str, message: Any) -> None:
        if direction == "send" and isinstance(message, dict) and "method" not in message:
            self._sent += 1
            self._written.set()

    async def _on_notification(self, method: str, params: Any) -> None:
        logger.debug("replay: the client notified %s (not replayed)", method)

    async def _play(self, conn: Connection, scope: anyio.CancelScope) -> None:
        busy: set[str] = set()  # sessions whose last recorded state is not idle (v2)
        for step in self.steps:
            if step.kind == "await":
                incoming = await self._receive.receive()
                if incoming.method != step.method:
                    self._diverge(incoming, f"expected {step.method}, got {incoming.method}", step)
                    break
                self._waiting[_key(step.rec_id)] = incoming
            elif step.kind == "answer":
                waiting = self._waiting.pop(_key(step.rec_id), None)
                if waiting is None:
                    continue  # the answer to a request from before the recording began
                if step.error is not None:
                    code = step.error.get("code")
                    waiting.error = RpcError(
                        code if isinstance(code, int) else ErrorCode.INTERNAL_ERROR,
                        str(step.error.get("message", "")),
                        step.error.get("data"),
                    )
                else:
                    waiting.result = _mapped(step.result, self._ids)
                    result = waiting.result if isinstance(waiting.result, dict) else {}
                    params = waiting.params if isinstance(waiting.params, dict) else {}
                    if waiting.method == Method.SESSION_PROMPT and "stopReason" not in result:
                        busy.add(str(params.get("sessionId")))  # v2: its turn runs on
                waiting.answered.set()
            elif step.kind == "notify" and step.method is not None:
                _follow_state(step, busy)
                await conn.notify(step.method, _mapped(step.params, self._ids))
            elif step.kind == "request" and step.method is not None:
                try:
                    actual = await conn.request(step.method, _mapped(step.params, self._ids))
                except RpcError as exc:  # the client's own answer, whatever it is
                    logger.debug("replay: the client answered %s with %s", step.method, exc)
                else:
                    if step.answered is not None:
                        _learn(step.answered, actual, self._ids)
        if self._waiting and self.diverged is None:  # the recording stops mid-turn
            unanswered = ", ".join(w.method for w in self._waiting.values())
            self._stop(f"the recording {self.source} ended before answering {unanswered}")
        elif busy and self.diverged is None:
            # a v2 turn whose idle was not recorded: nothing would ever end it, so the replay
            # ends (the client sees the agent exit) rather than leave a cell waiting
            self._stop(f"the recording {self.source} ended in the middle of a turn")
            with anyio.move_on_after(CLOSE_GRACE):  # the answers just given reach the client
                while self._sent < self._given:
                    await self._written.wait()
                    self._written = anyio.Event()
            scope.cancel()
            return
        # the recording is over (or left): whatever the client asks now was not recorded
        while True:
            incoming = await self._receive.receive()
            self._diverge(incoming, f"the recording ended; got {incoming.method}", None)

    def _diverge(self, incoming: _Incoming, what: str, step: Step | None) -> None:
        where = f" at frame {step.frame}" if step is not None else ""
        said = self._stop(f"the client left the recording {self.source}{where}: {what}")
        incoming.error = RpcError(DIVERGED, said, {"got": incoming.method})
        incoming.answered.set()

    def _stop(self, why: str) -> str:
        """The replay cannot go on: say why once (stderr), and answer every request still
        waiting for its recorded answer with an error, so that no client waits forever."""
        if self.diverged is None:
            self.diverged = why
            print(f"acp-notebook-agent --replay: {why}", file=self.stderr, flush=True)
        for waiting in self._waiting.values():  # recorded answers that will never come
            waiting.error = RpcError(DIVERGED, self.diverged, {"got": waiting.method})
            waiting.answered.set()
        self._waiting.clear()
        return self.diverged
