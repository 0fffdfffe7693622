"""The async client API: ``connect()`` -> ``Agent`` -> ``Session`` -> ``Turn``."""

from __future__ import annotations

import functools
import logging
import math
import os
import weakref
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream
from pydantic import TypeAdapter, ValidationError

from .. import _protocol as p
from .._connection._errors import AcpError, AgentExited, ConnectionClosed, MethodNotFound, RpcError
from .._connection._hotpath import decode_hot_line
from .._connection._jsonrpc import Connection, Problem, ProblemKind
from .._connection._process import AgentProcess, open_agent_connection
from .._protocol._visible import visible_text
from .._state import SessionState, TurnState
from ._elicitation import ElicitationAsker, ElicitationDecision, ElicitationHandler
from ._elicitation import decide as decide_elicitation
from ._permission import (
    Asker,
    PermissionDecision,
    PermissionHandler,
    decide,
    invalid_options,
)
from ._replay import REPLAY_BULK_BYTES, REPLAY_LIMIT, UpdateBuffer, UpdateStream

if TYPE_CHECKING:
    # Both are imported when a v1 agent is met (``import acp_notebook`` stays light).
    from .._protocol import _v1 as v1
    from ._services import AgentServices

log = logging.getLogger("acp_notebook.client")

PROTOCOL_VERSION = 2
V1_PROTOCOL_VERSION = 1  # `_protocol._v1.PROTOCOL_VERSION`, without importing the v1 layer
SUPPORTED_VERSIONS = (2, 1)
ProtocolChoice = Literal["auto", 1, 2]
"""``connect(protocol=...)``: negotiate (offer 2, speak 1 if that is what the agent speaks), or
force one version."""
CLIENT_NAME = "acp_notebook"
# Updates for a session id we do not know yet, held while a session/new is in flight: the
# agent may send them right behind its answer, before the caller has registered the session.
EARLY_UPDATE_LIMIT = 200
# A permission request that names a known tool call gets that call's content (where Kimi puts
# its command) only up to this many items: each request would copy and validate it all again,
# and a real call has a few. The call's own box shows the rest.
MERGED_CONTENT_LIMIT = 64

UpdateListener = Callable[["Session", p.SessionUpdate], None]
#: who a fail-closed sweep says decided: the turn or session was cancelled, or it is closing
SweptBy = Literal["cancel", "closed"]


def _validate_chunk(raw: Any) -> Any:
    """The model of a hot ``terminal_output_chunk`` (for a listener or an iterator)."""
    return _chunk_validator()(raw)


@functools.cache
def _chunk_validator() -> Callable[[Any], Any]:
    """Made on first use, not at import (building it was 8% of ``import acp_notebook``)."""
    p.TerminalOutputChunk.model_rebuild()  # builds the deferred model (a no-op once built)
    return p.TerminalOutputChunk.__pydantic_validator__.validate_python


_M = TypeVar("_M", bound=p.WireModel)


class UnsupportedProtocolVersion(AcpError):
    """The agent speaks no version we can use: it said so, answered another version, or sent
    a body that is not of the version it answered (or not of the version ``protocol`` forced)."""

    def __init__(self, message: str, *, answered: Any = None, supported: Any = None) -> None:
        super().__init__(message)
        self.answered = answered
        self.supported = supported


class AuthenticationRequired(AcpError):
    """The agent answered ``-32000``: log in with one of ``methods`` first (``agent.login``)."""

    def __init__(self, message: str, methods: Sequence[p.AuthMethod]) -> None:
        names = ", ".join(_auth_method_name(m) for m in methods) or "none advertised"
        super().__init__(f"{message} (auth methods: {names})")
        self.methods = list(methods)


class TurnInProgress(AcpError):
    """A session accepts one prompt at a time from this client."""


class ProtocolViolation(AcpError):
    """The agent sent something that does not parse as ACP v2."""


class InitializeTimeout(AcpError, TimeoutError):
    """The agent did not answer ``initialize`` in time; it was stopped."""

    def __init__(self, seconds: float, stderr_tail: str) -> None:
        self.seconds = seconds
        self.stderr_tail = stderr_tail
        tail = stderr_tail.rstrip()
        text = self.status
        text += f"; last lines of its stderr:\n{tail}" if tail else " (its stderr was empty)"
        super().__init__(text)

    @property
    def status(self) -> str:
        """What happened, in a few words (as `AgentExited.status`)."""
        return f"the agent did not answer `initialize` within {self.seconds:g} s and was stopped"


def _auth_method_name(method: p.AuthMethod) -> str:
    raw = method.to_wire()
    return str(raw.get("methodId") or raw.get("name") or raw)


def _client_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("acp_notebook")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0"


class Turn:
    """One prompt and what the agent did about it, until the idle ``state_update``."""

    def __init__(self, session: Session, state: TurnState) -> None:
        self.session = session
        self.state = state
        self.message_id: str | None = None
        self.prompt: list[dict[str, Any]] = []
        self._sent = False
        # Not every update: a bounded replay for iterators that start late, and each live
        # iterator's own bounded queue (see acp_notebook/_client/_replay.py).
        self._replay = UpdateBuffer(REPLAY_LIMIT, REPLAY_BULK_BYTES)
        self._streams: weakref.WeakSet[UpdateStream] = weakref.WeakSet()
        self._iterated = False  # whether `updates()` was ever called (a cheap test of _streams)
        # Set (and dropped) at the next update; made only when an iterator waits for one.
        self._waiter: anyio.Event | None = None
        self._done = anyio.Event()
        self.error: BaseException | None = None
        #: v1: the ``usage`` of the ``session/prompt`` answer, as sent (unstable v1 field)
        self.usage: Any = None

    # -- what happened -------------------------------------------------------------------
    @property
    def done(self) -> bool:
        return self._done.is_set()

    @property
    def stop_reason(self) -> Any:
        return self.state.stop_reason

    @property
    def text(self) -> str:
        return self.state.text

    @property
    def tool_calls(self) -> Any:
        return self.state.tool_calls

    @property
    def terminals(self) -> Any:
        return self.state.terminals

    @property
    def plan(self) -> Any:
        return self.state.plan

    @property
    def permissions(self) -> list[PermissionDecision]:
        return [d for d in self.session.permissions if d.turn is self]

    @property
    def elicitations(self) -> list[ElicitationDecision]:
        """This turn's questions (``elicitation/create``) and their answers."""
        return [d for d in self.session.elicitations if d.turn is self]

    # -- feeding (called by the session) ---------------------------------------------------
    @property
    def _changed(self) -> anyio.Event:
        """An event set at the next update or at the end of the turn."""
        if self._waiter is None:
            self._waiter = anyio.Event()
        return self._waiter

    def _push(self, update: p.SessionUpdate) -> None:
        self._replay.push(update)
        if self._streams:
            for stream in list(self._streams):
                stream._put(update)
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            waiter.set()

    def _finish(self, error: BaseException | None = None) -> None:
        if self._done.is_set():
            return
        self.error = error
        self._done.set()
        if self._waiter is not None:
            self._waiter.set()

    async def send(self) -> None:
        """Send this turn's prompt; return once the agent accepted it.

        With a v1 agent, which answers ``session/prompt`` only when the turn is over, this
        returns at the end of the turn (its answer is applied as the idle ``state_update``).
        """
        if self._sent:
            raise AcpError("this turn's prompt was already sent")
        self._sent = True
        translator = self.session._v1
        if translator is not None:
            translator.begin_turn()
        try:
            result = await self.session.agent._request(
                p.Method.SESSION_PROMPT, {"sessionId": self.session.id, "prompt": self.prompt}
            )
        except BaseException as exc:
            error: BaseException = exc
            if isinstance(exc, anyio.get_cancelled_exc_class()):
                # Never hand a cancellation to whoever awaits turn.wait() in another task.
                error = AcpError(
                    f"session {self.session.id}: the prompt was abandoned"
                    " before the agent accepted it"
                )
            self.session._end_turn(self, error)
            raise
        if isinstance(result, dict) and isinstance(result.get("messageId"), str):
            self.message_id = result["messageId"]
        if translator is not None:
            self.session._v1_turn_ended(self, translator, result)

    # -- waiting ---------------------------------------------------------------------------
    def updates(self) -> UpdateStream:
        """This turn's session updates, in order; the iteration ends when the turn ends.

        Memory stays bounded however much the agent sends; the bytes of terminal output are in
        ``turn.terminals`` (capped per terminal), not here. The iterator yields:

        * first, what the turn still keeps of the updates that arrived before the iterator was
          created: its last ``REPLAY_LIMIT`` (5,000) updates, of which terminal output only
          up to ``REPLAY_BULK_BYTES`` (1 MiB of base64), the most recent; older terminal
          output goes first, so the prompt, tool calls and terminal starts stay longest;
        * then every update that arrives, exactly as received. Each iterator queues what it has
          not consumed yet, up to ``ITERATOR_LIMIT`` (20,000) updates and
          ``ITERATOR_BULK_BYTES`` (16 MiB) of terminal output; past that the oldest queued
          terminal output is dropped first.

        ``iterator.dropped`` counts the updates it skipped either way (0 for an iterator made
        before the prompt was sent and read as fast as the updates come). Create it before
        ``await turn.send()`` (``session.start_turn``) to see everything.
        """
        stream = UpdateStream(self, self._replay)
        self._streams.add(stream)
        self._iterated = True
        return stream

    async def wait(self) -> Any:
        """Wait for the idle ``state_update``; return the stop reason."""
        await self._done.wait()
        if self.error is not None:
            raise self.error
        return self.state.stop_reason

    def __repr__(self) -> str:
        status = "done" if self.done else "running"
        return f"<Turn {status} stop_reason={self.stop_reason!r}>"


class Session:
    """A conversation with the agent. Holds the reduced state of everything it reported."""

    def __init__(self, agent: Agent, session_id: str, cwd: str) -> None:
        self.agent = agent
        self.id = session_id
        self.cwd = cwd
        self.state = SessionState(session_id)
        self.turn: Turn | None = None
        self.permissions: list[PermissionDecision] = []
        self.elicitations: list[ElicitationDecision] = []
        self.problems: list[str] = []
        self.config_options: list[Any] = []
        self.closed = False
        self._listeners: list[UpdateListener] = []
        self._asker: Asker | None = None
        self._elicitation_asker: ElicitationAsker | None = None
        # The turn a `session/cancel` was sent for: from then until its idle, every permission
        # request is answered `cancelled` before any listener or handler sees it.
        self._cancelled_turn: Turn | None = None
        # Permission requests whose answer is not written yet, each with an event set once the
        # handler has returned it (the connection writes it right after, before it yields).
        # (Questions too: a timeout's `cancel` is written before the session/cancel it causes.)
        self._answering: list[tuple[PermissionDecision | ElicitationDecision, anyio.Event]] = []
        # A v1 session: what turns its v1 traffic into the v2 updates applied here.
        self._v1: v1.V1Translator | None = None

    # -- listeners (views subscribe here) ----------------------------------------------------
    def subscribe(self, listener: UpdateListener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def ask_permissions(self, asker: Asker) -> Callable[[], None]:
        """Let ``asker`` answer this session's permission requests (instead of the agent's
        handler) until the returned function is called: ``await asker(decision)`` returns the
        answer (an option id or an :class:`Answer`); it never settles the decision itself. A
        later asker replaces an earlier one (a cell run again takes over its session)."""
        self._asker = asker

        def release() -> None:
            if self._asker is asker:
                self._asker = None

        return release

    def after_idle_asked(self, *, questions: bool = False) -> bool:
        """Whether a request arriving now, after the last turn's idle, is for background work
        someone can answer: the last turn ended with its idle state, the latest ``background``
        snapshot still names items of it, and its asker is still attached (the cell that
        started the work). Otherwise such a request is answered ``cancelled``."""
        turn = self.turn
        asker = self._elicitation_asker if questions else self._asker
        return (
            turn is not None
            and turn.done
            and turn.error is None
            and bool(turn.state.background)
            and asker is not None
        )

    def ask_elicitations(self, asker: ElicitationAsker) -> Callable[[], None]:
        """Let ``asker`` answer this session's questions (``elicitation/create``) instead of
        the agent's handler, until the returned function is called (see ask_permissions)."""
        self._elicitation_asker = asker

        def release() -> None:
            if self._elicitation_asker is asker:
                self._elicitation_asker = None

        return release

    def _sweep(
        self,
        why: str,
        by: SweptBy,
        *,
        turn: Turn | None = None,
        questions_by: SweptBy | None = None,
    ) -> None:
        """The one fail-closed sweep: every pending permission request of this session (of
        ``turn`` only, when given) is answered ``cancelled``, and every pending question
        ``cancel``, decided by ``by`` (``questions_by`` for the questions, when given)."""
        for decision in list(self.permissions):
            if decision.pending and (turn is None or decision.turn is turn):
                decision.settle(None, by, why)
        for question in list(self.elicitations):
            if question.pending and (turn is None or question.turn is turn):
                question.cancel(questions_by or by, why)

    # -- incoming ------------------------------------------------------------------------
    def _apply(self, update: p.SessionUpdate) -> None:
        seen = len(self.state.problems)
        self.state.apply(update)
        for problem in self.state.problems[seen:]:
            self._problem(problem)
        turn = self.turn
        if turn is not None and not turn.done:
            turn._push(update)
            if turn.state.done:
                self._end_turn(turn)
        for listener in list(self._listeners):
            try:
                listener(self, update)
            except Exception:
                log.exception("session update listener failed")

    def _apply_chunk(self, raw: dict[str, Any]) -> None:
        """`_apply` of a ``terminal_output_chunk`` of the exact hot shape (``_hotpath``), given
        as its wire dict: when no listener or iterator would see its model, none is made."""
        turn = self.turn
        if self._listeners or (turn is not None and turn._iterated and turn._streams):
            self._apply(_validate_chunk(raw))
            return
        state = self.state
        seen = len(state.problems)
        state.apply_terminal_chunk(raw["terminalId"], raw["data"])
        if len(state.problems) != seen:
            for problem in state.problems[seen:]:
                self._problem(problem)
        if turn is not None and not turn._done.is_set():
            # `turn._push`, with no stream to feed: the replay keeps the wire dict (its model
            # is made if an iterator reads it)
            turn._replay.push_chunk(raw)
            waiter = turn._waiter
            if waiter is not None:
                turn._waiter = None
                waiter.set()
            if turn.state.done:  # (a chunk never ends a turn: as `_apply`, all the same)
                self._end_turn(turn)

    def _problem(self, message: str) -> None:
        log.warning("session %s: %s", self.id, message)
        self.problems.append(message)

    def _v1_turn_ended(self, turn: Turn, translator: v1.V1Translator, result: Any) -> None:
        """A v1 ``session/prompt`` answer: the turn's end, applied as its idle update."""
        from .._protocol import _v1 as v1

        try:
            response = self.agent._v1_parse(v1.V1PromptResponse, result)
        except ValidationError as exc:
            detail = f"malformed session/prompt answer: {_first_error(exc)}"
            self._problem(detail)
            self._end_turn(turn, ProtocolViolation(detail))
            return
        turn.usage = (response.model_extra or {}).get("usage")
        self._apply(translator.end_turn(response))
        if not turn.done:  # (the reducer had no current turn for it: end it all the same)
            self._end_turn(turn)

    def _apply_v1(self, translator: v1.V1Translator, raw: Any) -> None:
        """One v1 ``update``: parsed, translated, applied (a malformed one is reported)."""
        from .._protocol import _v1 as v1

        try:
            update, notes = v1.parse_v1_session_update_lenient(raw)
        except ValidationError as exc:
            self._problem(f"malformed v1 session/update dropped: {_first_error(exc)}")
            return
        for note in notes:  # what v1 reads as absent when invalid: shown, not hidden
            self._problem(f"v1 {update.session_update}: {note}")
        for translated in translator.update(update):
            self._apply(translated)

    def _end_turn(self, turn: Turn, error: BaseException | None = None) -> None:
        # A request still pending when the turn ends can no longer be meant: fail closed.
        self._sweep("the turn ended", "cancel", turn=turn)
        if error is not None and not turn.state.done and turn.state is self.state.current_turn:
            self.state.end_turn(ended_by(error))
        turn._finish(error)

    # -- outgoing ------------------------------------------------------------------------
    def start_turn(self, prompt: str | Sequence[p.ContentBlock | Mapping[str, Any]]) -> Turn:
        """Open a turn for ``prompt`` without sending it yet (``await turn.send()`` does).

        Views use this to attach to the turn before the agent can report anything about it.
        """
        if self.closed:
            raise AcpError(f"session {self.id} is closed")
        if self.turn is not None and not self.turn.done:
            raise TurnInProgress(f"session {self.id} already has a prompt in flight")
        blocks = _prompt_blocks(prompt)
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        turn = Turn(self, self.state.begin_turn(text))
        turn.prompt = blocks
        self.turn = turn
        return turn

    async def prompt(self, prompt: str | Sequence[p.ContentBlock | Mapping[str, Any]]) -> Turn:
        """Send a prompt; return once the agent accepted it. The turn runs on."""
        turn = self.start_turn(prompt)
        await turn.send()
        return turn

    @property
    def cancelling(self) -> bool:
        """A ``session/cancel`` was sent for the running turn, whose idle has not come yet."""
        turn = self._cancelled_turn
        return turn is not None and turn is self.turn and not turn.done

    async def cancel(self) -> None:
        """Send ``session/cancel`` and answer every pending permission with ``cancelled``.

        From here until the turn's idle arrives, every new permission request of this session is
        answered ``cancelled`` at once (nothing is approved for a cancelled turn). Answers that
        were already decided (a ``--timeout``'s ``cancelled``) are written before the
        ``session/cancel`` (bounded: at most 1 s); the still pending ones right after it.
        """
        self._mark_cancelled()
        await self._answers_written()
        await self.agent._notify(p.Method.SESSION_CANCEL, {"sessionId": self.id})

    @contextmanager
    def _answering_slot(self, decision: PermissionDecision | ElicitationDecision) -> Iterator[None]:
        """While a request's answer is being decided and handed back to the connection: a
        cancel waits for a decided one to be written first (``_answers_written``)."""
        answered = anyio.Event()
        entry = (decision, answered)
        self._answering.append(entry)
        try:
            yield
        finally:
            self._answering[:] = [e for e in self._answering if e is not entry]
            answered.set()

    async def _answers_written(self, limit: float = 1.0) -> None:
        """Wait (at most ``limit`` seconds) until every decided answer has been handed to the
        connection, which writes it before it yields."""
        with anyio.move_on_after(limit):
            for decision, answered in list(self._answering):
                if not decision.pending:
                    await answered.wait()
            await anyio.lowlevel.checkpoint()

    async def fail_pending(self, why: str) -> None:
        """Answer every pending request of this session ``cancelled`` / ``cancel`` (the agent
        or the kernel is closing: "closed") and wait, briefly, until the answers are written."""
        self._sweep(why, "closed")
        await self._answers_written()

    def _mark_cancelled(self) -> None:
        """A ``session/cancel`` is being sent: the running turn approves nothing more."""
        if self.turn is not None and not self.turn.done:
            self._cancelled_turn = self.turn

    async def cancel_terminal(self, terminal_id: str) -> None:
        """``terminal/cancel``: ask the agent to stop one terminal's command (only offered when
        the terminal's ``capabilities.cancel`` is set). A client terminal (a v1 agent's command
        run here) is stopped here: SIGTERM, then SIGKILL."""
        services = self.agent.services
        if services is not None and services.owns(terminal_id):
            await services.kill(self.id, terminal_id)
            return
        await self.agent._request(
            p.Method.TERMINAL_CANCEL, {"sessionId": self.id, "terminalId": terminal_id}
        )

    async def cancel_tool_call(self, tool_call_id: str) -> None:
        """``tool_call/cancel``: ask the agent to stop one tool call."""
        await self.agent._request(
            p.Method.TOOL_CALL_CANCEL, {"sessionId": self.id, "toolCallId": tool_call_id}
        )

    async def close(self) -> None:
        if self.closed:
            return
        self._sweep("the session was closed", "cancel", questions_by="closed")
        try:
            if self._v1 is None or self.agent._v1_can("close"):
                await self.agent._request(p.Method.SESSION_CLOSE, {"sessionId": self.id})
        finally:
            self.closed = True
            if self.turn is not None:
                self._end_turn(self.turn)
            if self.agent.services is not None:
                await self.agent.services.release_session(self.id)

    async def set_config_option(self, config_id: str, value: str | bool) -> list[Any]:
        translator = self._v1
        if translator is not None:
            return await self._v1_set_config_option(translator, config_id, value)
        kind = "boolean" if isinstance(value, bool) else "id"
        result = await self.agent._request(
            p.Method.SESSION_SET_CONFIG_OPTION,
            {"sessionId": self.id, "configId": config_id, "type": kind, "value": value},
        )
        options = result.get("configOptions", []) if isinstance(result, dict) else []
        return self._set_config_options(options)

    def _set_config_options(self, options: Sequence[Any]) -> list[Any]:
        """The options a ``session/set_config_option`` answer lists: the session's, and its
        state's (what views show), until the next ``config_option_update``."""
        self.config_options = list(options)
        self.state.config_options = list(options)
        return self.config_options

    async def _v1_set_config_option(
        self, translator: v1.V1Translator, config_id: str, value: str | bool
    ) -> list[Any]:
        """v1: the ``mode`` option is the session's mode (``session/set_mode``); the others are
        v1 config options (``session/set_config_option``, whose answer lists them all)."""
        from .._protocol import _v1 as v1

        own = {getattr(o, "config_id", None) for o in translator.config_options}
        if config_id == v1.MODE_CONFIG_ID and translator.modes is not None and config_id not in own:
            if not isinstance(value, str):
                raise AcpError("the mode is set by its id (a string)")
            await self.agent._request("session/set_mode", {"sessionId": self.id, "modeId": value})
            translator.modes = translator.modes.model_copy(update={"current_mode_id": value})
        else:
            params: dict[str, Any] = {"sessionId": self.id, "configId": config_id, "value": value}
            if isinstance(value, bool):
                params["type"] = "boolean"
            result = await self.agent._request(p.Method.SESSION_SET_CONFIG_OPTION, params)
            parsed = self.agent._v1_parse(v1.V1SetSessionConfigOptionResponse, result)
            translator.session_setup(None, parsed.config_options)
        return self._set_config_options(translator.options())

    def __repr__(self) -> str:
        return f"<Session {self.id} cwd={self.cwd!r}>"


def ended_by(error: BaseException) -> str:
    """Why a turn ended without its idle state, in a few words (from the error's fields)."""
    if isinstance(error, AgentExited):
        return error.status
    if isinstance(error, ConnectionClosed):
        return "the connection to the agent closed"
    if isinstance(error, RpcError):
        return f"the agent refused the prompt: {error.message}"
    text = str(error).strip() or type(error).__name__
    return text.partition("\n")[0]


def _prompt_blocks(
    prompt: str | Sequence[p.ContentBlock | Mapping[str, Any]],
) -> list[dict[str, Any]]:
    if isinstance(prompt, str):
        return [{"type": "text", "text": prompt}]
    blocks: list[dict[str, Any]] = []
    for block in prompt:
        if isinstance(block, Mapping):
            blocks.append(dict(block))
        else:
            blocks.append(block.to_wire())
    return blocks


class Agent:
    """A connected, initialized ACP agent: v2, or v1 behind the same API (``protocol_version``
    tells which; a v1 agent's traffic is translated into the v2 models, see ``_protocol._v1``).
    """

    def __init__(
        self,
        connection: Connection,
        process: AgentProcess | None,
        permission: PermissionHandler | None,
        elicitation: ElicitationHandler | None = None,
        protocol: ProtocolChoice = "auto",
        client_services: bool = False,
    ) -> None:
        if protocol not in ("auto", 1, 2):
            raise ValueError(f"protocol must be 'auto', 1 or 2, not {protocol!r}")
        self.protocol: ProtocolChoice = protocol
        #: the version in use once initialized: 2, or 1 for a v1 agent
        self.protocol_version: int | None = None
        #: a v1 agent's ``agentCapabilities`` (``capabilities`` stays None for it)
        self.v1_capabilities: v1.V1AgentCapabilities | None = None
        self.connection = connection
        self.process = process
        self.permission = permission
        #: answers questions (``elicitation/create``) no view answered; None: ``cancel``
        self.elicitation = elicitation
        #: request-scoped questions (asked outside any session, e.g. while signing in)
        self.elicitations: list[ElicitationDecision] = []
        self.info: p.Implementation | None = None
        self.capabilities: p.AgentCapabilities | None = None
        self.auth_methods: list[p.AuthMethod] = []
        self.sessions: dict[str, Session] = {}
        self.problems: list[Problem] = []
        """What went wrong on the connection and with the messages it carried, oldest first."""
        self._opening = 0  # session/new requests in flight
        self._early: dict[str, list[Any]] = {}  # session id -> held update params, in order
        # Counted, not sized: each one already passed the connection's line limit.
        self._early_count = 0
        #: a v1 agent's client terminals and file system (``client_services=True``), else None
        self.services: AgentServices | None = None
        if client_services:
            from ._services import AgentServices

            self.services = AgentServices(self)
        connection.set_request_handler(self._on_request)
        connection.set_notification_handler(self._on_notification)
        # terminal output of the commonest shape: decoded by orjson, dispatched at once
        connection.set_fast_notifications(decode_hot_line, self._on_hot_update)

    # -- lifecycle -----------------------------------------------------------------------
    async def initialize(self) -> None:
        """Negotiate: offer 2 (or the forced version); an answer of 1 with a v1 body (or, with
        ``protocol="auto"``, a v1 body under any number: some v1 agents echo the 2 they were
        offered) makes this a v1 connection. Anything else raises UnsupportedProtocolVersion."""
        if self.protocol == 1:
            await self._initialize_v1()
            return
        params: dict[str, Any] = {
            "protocolVersion": PROTOCOL_VERSION,
            "info": {"name": CLIENT_NAME, "title": "acp_notebook", "version": _client_version()},
            "capabilities": {"elicitation": {"form": {}, "url": {}}},
        }
        if self.protocol == "auto":
            # What a v1 agent reads from this same request (v2 agents ignore the extra keys:
            # claude-agent-acp 0.101.0 answers it in both modes), so one initialize serves both.
            params |= self._v1_client_fields()
            # The TS SDK's protocol router (claude-agent-acp 0.101.0 in v1 mode) gives a v1 agent
            # a v1 initialize rewritten from the v2 `capabilities` alone (fs and terminal off,
            # `_meta` kept): the terminal extension must be there too to reach it.
            params["capabilities"]["_meta"] = {"terminal_output": True}
        try:
            result = await self.connection.request(p.Method.INITIALIZE, params)
        except RpcError as exc:
            data = exc.data if isinstance(exc.data, dict) else {}
            supported = data.get("supported")
            if exc.code == p.ErrorCode.UNSUPPORTED_PROTOCOL_VERSION or "supported" in data:
                if self.protocol == "auto" and isinstance(supported, list) and 1 in supported:
                    await self._initialize_v1()
                    return
                raise UnsupportedProtocolVersion(
                    f"the agent does not support ACP v2: {exc.message} (it supports {supported!r})",
                    supported=supported,
                ) from exc
            raise
        if not isinstance(result, dict):
            raise UnsupportedProtocolVersion(
                f"initialize answered {result!r}, not an object", answered=result
            )
        version = result.get("protocolVersion")
        v1_keys = sorted({"agentCapabilities", "agentInfo"} & result.keys())
        v1_shaped = "info" not in result and "capabilities" not in result
        if self.protocol == "auto" and v1_shaped and (version == 1 or (version == 2 and v1_keys)):
            self._adopt_v1(result)
            return
        if version != PROTOCOL_VERSION:
            wanted = "2" if self.protocol == 2 else "1 or 2"
            raise UnsupportedProtocolVersion(
                f"the agent answered protocol version {version!r}; acp_notebook speaks {wanted}",
                answered=version,
            )
        try:
            response = p.InitializeResponse.model_validate(result)
        except ValidationError as exc:
            raise UnsupportedProtocolVersion(
                "the agent claims protocol version 2 but its initialize body is not v2-shaped"
                f" ({_first_error(exc)}{'; v1 fields: ' + ', '.join(v1_keys) if v1_keys else ''})",
                answered=result,
            ) from exc
        if v1_keys:
            raise UnsupportedProtocolVersion(
                "the agent claims protocol version 2 but answers with v1 fields: "
                + ", ".join(v1_keys),
                answered=result,
            )
        self.info = response.info
        self.capabilities = response.capabilities
        self.auth_methods = list(response.auth_methods or [])
        self.protocol_version = PROTOCOL_VERSION

    async def _initialize_v1(self) -> None:
        """A v1 ``initialize`` (nothing advertised: no client file system, no terminals)."""
        from .._protocol import _v1 as v1

        params = {"protocolVersion": v1.PROTOCOL_VERSION, **self._v1_client_fields()}
        try:
            result = await self.connection.request(p.Method.INITIALIZE, params)
        except RpcError as exc:
            if exc.code != p.ErrorCode.UNSUPPORTED_PROTOCOL_VERSION:
                raise
            data = exc.data if isinstance(exc.data, dict) else {}
            raise UnsupportedProtocolVersion(
                f"the agent does not support ACP v1 either: {exc.message}"
                f" (it supports {data.get('supported')!r})",
                supported=data.get("supported"),
            ) from exc
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        if version != v1.PROTOCOL_VERSION:
            raise UnsupportedProtocolVersion(
                f"the agent answered protocol version {version!r} to a v1 initialize",
                answered=result if not isinstance(result, dict) else version,
            )
        self._adopt_v1(result)

    def _v1_client_fields(self) -> dict[str, Any]:
        """v1's ``clientInfo`` and ``clientCapabilities``: client terminals and the client file
        system when ``client_services`` is on (``self.services``), else nothing offered; and
        always the terminal extension (``_meta.terminal_output``): an agent that runs commands
        itself (claude-agent-acp, codex-acp) then sends their output in tool calls' ``_meta``,
        which the translator shows as display terminals."""
        offered = self.services is not None
        return {
            "clientInfo": {
                "name": CLIENT_NAME,
                "title": "acp_notebook",
                "version": _client_version(),
            },
            "clientCapabilities": {
                "fs": {"readTextFile": offered, "writeTextFile": offered},
                "terminal": offered,
                "_meta": {"terminal_output": True},
            },
        }

    def _adopt_v1(self, result: dict[str, Any]) -> None:
        """Speak v1 from here on, with what the v1 ``initialize`` answer says."""
        from .._protocol import _v1 as v1

        try:
            response = self._v1_parse(v1.V1InitializeResponse, result)
        except ValidationError as exc:
            raise UnsupportedProtocolVersion(
                f"the agent's v1 initialize body is malformed ({_first_error(exc)})",
                answered=result,
            ) from exc
        if response.protocol_version != v1.PROTOCOL_VERSION:
            self._problem(
                f"the agent answered protocol version {response.protocol_version} with a v1"
                " body: speaking v1",
                "not_acp",
            )
        self.info = response.agent_info
        self.v1_capabilities = response.agent_capabilities or v1.V1AgentCapabilities()
        self.auth_methods = []
        for raw in response.auth_methods or []:
            wire = {"type": "agent"} | {("methodId" if k == "id" else k): v for k, v in raw.items()}
            try:
                self.auth_methods.append(_auth_method().validate_python(wire))
            except ValidationError as exc:
                self._problem(f"malformed v1 auth method ignored: {_first_error(exc)}")
        self.protocol_version = v1.PROTOCOL_VERSION

    def _v1_parse(self, model: type[_M], result: Any) -> _M:
        """A v1 answer, read as leniently as the v1 schema says; what it left out is reported."""
        from .._protocol import _v1 as v1

        parsed, notes = v1.parse_v1_response(model, result)
        for note in notes:
            self._problem(f"v1 {model.__name__.removeprefix('V1')}: {note}")
        return parsed

    def _v1_can(self, what: str) -> bool:
        """Whether a v1 agent advertised ``sessionCapabilities.<what>`` (or ``loadSession``)."""
        caps = self.v1_capabilities
        if caps is None:
            return False
        if what == "load":
            return bool(caps.load_session)
        sessions = caps.session_capabilities
        return sessions is not None and getattr(sessions, what, None) is not None

    async def login(self, method_id: str, *, api_key: str | None = None) -> None:
        """``auth/login`` (v1: ``authenticate``). ``api_key`` goes in its ``_meta["api-key"]``
        as a string, as Gemini CLI 0.61 reads it for a method whose ``_meta`` names ``api-key``
        (codex-acp 2.6.0 reads ``_meta["api-key"]["apiKey"]`` there, else its environment)."""
        if not self.auth_methods:
            raise AcpError("the agent advertised no auth methods")
        method = p.Method.AUTH_LOGIN if self.protocol_version != 1 else "authenticate"
        params: dict[str, Any] = {"methodId": method_id}
        if api_key is not None:
            params["_meta"] = {"api-key": api_key}
        await self._request(method, params)

    async def logout(self) -> None:
        if not self.auth_methods:
            raise AcpError("the agent advertised no auth methods")
        await self._request(p.Method.AUTH_LOGOUT if self.protocol_version != 1 else "logout", {})

    # -- sessions ------------------------------------------------------------------------
    async def new_session(
        self,
        cwd: str | os.PathLike[str] | None = None,
        *,
        mcp_servers: Sequence[Mapping[str, Any]] | None = None,
    ) -> Session:
        """``session/new``; ``mcp_servers``: its ``mcpServers`` entries, already in the shape of
        the agent's protocol version (the kernel tools' ``mcp_entry``). None: none (v2 omits
        the key, v1 sends ``[]``)."""
        path = _absolute(cwd)
        servers = [dict(entry) for entry in mcp_servers or ()]
        self._opening += 1
        try:
            if self.protocol_version == V1_PROTOCOL_VERSION:
                session = await self._new_v1_session(path, servers)
            else:
                params: dict[str, Any] = {"cwd": path}
                if servers:
                    params["mcpServers"] = servers
                result = await self._request(p.Method.SESSION_NEW, params)
                parsed = p.NewSessionResponse.model_validate(result)
                session = Session(self, parsed.session_id, path)
                session.config_options = list(parsed.config_options or [])
            self.sessions[session.id] = session
            # Updates that came right behind the answer, in order, before any later one.
            held = self._early.pop(session.id, [])
            self._early_count -= len(held)
            for params in held:
                try:
                    self._dispatch_update(params)
                except Exception as exc:  # as the reader does for one it applies itself
                    log.exception("applying a held session/update failed")
                    session._problem(f"a session/update could not be applied: {exc!r}")
        finally:
            self._opening -= 1
            if not self._opening:
                for session_id, held in self._early.items():
                    self._problem(
                        f"{len(held)} session/update(s) for unknown session {session_id!r} ignored",
                        "unknown_session",
                    )
                self._early.clear()
                self._early_count = 0
        return session

    async def _new_v1_session(self, path: str, servers: list[dict[str, Any]]) -> Session:
        from .._protocol import _v1 as v1

        result = await self._request(p.Method.SESSION_NEW, {"cwd": path, "mcpServers": servers})
        parsed = self._v1_parse(v1.V1NewSessionResponse, result)
        session = Session(self, parsed.session_id, path)
        session._v1 = v1.V1Translator()
        session.config_options = session._v1.session_setup(parsed.modes, parsed.config_options)
        return session

    async def _resume_v1(
        self, session: Session, replay: bool, servers: list[dict[str, Any]]
    ) -> None:
        """v1 resume: ``session/load`` (the agent replays the history as updates first) or,
        without ``replay``, ``session/resume`` when the agent has it."""
        from .._protocol import _v1 as v1

        translator = session._v1 = session._v1 or v1.V1Translator()
        params: dict[str, Any] = {"sessionId": session.id, "cwd": session.cwd}
        if not replay and self._v1_can("resume"):
            if servers:
                params["mcpServers"] = servers
            result = await self._request(p.Method.SESSION_RESUME, params)
            parsed: v1.V1LoadSessionResponse = self._v1_parse(v1.V1ResumeSessionResponse, result)
        elif self._v1_can("load"):
            if session.state.messages or session.state.tool_calls:
                # The agent replays the whole history: into a fresh state, not on top of it.
                if session.turn is not None and not session.turn.done:
                    raise TurnInProgress(f"session {session.id} has a prompt in flight")
                session.state = SessionState(session.id)
                translator = session._v1 = v1.V1Translator()
            params["mcpServers"] = servers
            result = await self._request("session/load", {**params})
            parsed = self._v1_parse(v1.V1LoadSessionResponse, result or {})
        else:
            raise AcpError("this v1 agent can neither load nor resume sessions")
        session.config_options = translator.session_setup(parsed.modes, parsed.config_options)

    async def list_sessions(self, cwd: str | os.PathLike[str] | None = None) -> list[p.SessionInfo]:
        """All sessions the agent knows (following ``nextCursor`` pages)."""
        found: list[p.SessionInfo] = []
        params: dict[str, Any] = {} if cwd is None else {"cwd": _absolute(cwd)}
        for _ in range(10_000):
            result = await self._request(p.Method.SESSION_LIST, params)
            page = p.ListSessionsResponse.model_validate(result)
            found.extend(page.sessions)
            if page.next_cursor is None:
                return found
            params = {**params, "cursor": page.next_cursor}
        raise ProtocolViolation("session/list kept returning cursors")

    async def resume_session(
        self,
        session_id: str,
        cwd: str | os.PathLike[str] | None = None,
        *,
        replay: bool = False,
        mcp_servers: Sequence[Mapping[str, Any]] | None = None,
    ) -> Session:
        """Reattach to a session. With ``replay`` the agent replays its history first.
        ``mcp_servers`` as for ``new_session``."""
        path = _absolute(cwd)
        servers = [dict(entry) for entry in mcp_servers or ()]
        session = self.sessions.get(session_id) or Session(self, session_id, path)
        self.sessions[session_id] = session
        params: dict[str, Any] = {"sessionId": session_id, "cwd": path}
        if servers:
            params["mcpServers"] = servers
        if replay:
            params["replayFrom"] = {"type": "start"}
        try:
            if self.protocol_version == V1_PROTOCOL_VERSION:
                await self._resume_v1(session, replay, servers)
                return session
            result = await self._request(p.Method.SESSION_RESUME, params)
        except BaseException:
            self.sessions.pop(session_id, None)
            raise
        if isinstance(result, dict) and result.get("configOptions"):
            session.config_options = list(result["configOptions"])
        return session

    # -- plumbing ------------------------------------------------------------------------
    async def _request(self, method: str, params: dict[str, Any]) -> Any:
        try:
            return await self.connection.request(method, params)
        except RpcError as exc:
            if exc.code == p.ErrorCode.AUTH_REQUIRED:
                raise AuthenticationRequired(
                    f"{method}: authentication required: {exc.message}", self.auth_methods
                ) from exc
            raise

    async def _notify(self, method: str, params: dict[str, Any]) -> None:
        session = None
        if method == p.Method.SESSION_CANCEL:  # whoever sends it, the turn approves nothing more
            session = self.sessions.get(str(params.get("sessionId")))
            if session is not None:
                session._mark_cancelled()
        try:
            await self.connection.notify(method, params)
        finally:
            # The protocol's order: the cancel, then `cancelled` for each pending request.
            if session is not None:
                session._sweep("the session was cancelled", "cancel")
                if self.services is not None:  # and the commands it runs here are stopped
                    await self.services.kill_session(session.id)

    async def _on_notification(self, method: str, params: Any) -> None:
        if method == p.Method.ELICITATION_COMPLETE:
            self._on_elicitation_complete(params)
            return
        if method != p.Method.SESSION_UPDATE:
            log.debug("ignoring notification %s", method)
            return
        self._dispatch_update(params)

    def _on_hot_update(self, method: str, params: Any) -> None:
        """A ``session/update`` line of the hot shape (``_hotpath``): as `_on_notification`,
        with the chunk validated by its own model (what ``parse_session_update`` picks)."""
        session = self.sessions.get(params["sessionId"])
        if session is None or session._v1 is not None:
            self._dispatch_update(params)
            return
        # Of the hot shape, its model validates (three strings): made only if someone sees it.
        session._apply_chunk(params["update"])

    def _dispatch_update(self, params: Any) -> None:
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        session = self.sessions.get(session_id) if isinstance(session_id, str) else None
        if session is None:
            if (
                self._opening
                and isinstance(session_id, str)
                and self._early_count < EARLY_UPDATE_LIMIT
            ):
                self._early.setdefault(session_id, []).append(params)
                self._early_count += 1
                return
            self._problem(
                f"session/update for unknown session {session_id!r} ignored", "unknown_session"
            )
            return
        if session._v1 is not None:
            session._apply_v1(session._v1, params.get("update"))
            return
        try:
            update = p.parse_session_update(params.get("update"))
        except ValidationError as exc:
            session._problem(f"malformed session/update dropped: {_first_error(exc)}")
            return
        session._apply(update)

    async def _on_request(self, method: str, params: Any) -> Any:
        if method == p.Method.SESSION_REQUEST_PERMISSION:
            return await self._on_permission(params)
        if method == p.Method.ELICITATION_CREATE:
            return await self._on_elicitation(params)
        services = self.services
        if services is not None and self.protocol_version == V1_PROTOCOL_VERSION:
            from ._services import METHODS

            if method in METHODS:
                return await services.handle(method, params)
        raise MethodNotFound(method)

    async def _on_permission(self, params: Any) -> dict[str, Any]:
        try:
            if self.protocol_version == V1_PROTOCOL_VERSION:  # its toolCall as the subject
                from .._protocol import _v1 as v1

                v1_request, notes = v1.parse_v1_permission_request(params)
                for note in notes:
                    self._problem(f"v1 permission request's toolCall: {note}")
                call = v1_request.tool_call
                known = self._known_tool_call(v1_request.session_id, call.tool_call_id)
                request = v1.V1Translator().permission(v1_request, known)
            else:
                request = self._with_known_tool_call(
                    p.RequestPermissionRequest.model_validate(params)
                )
        except ValidationError as exc:
            # Malformed: we cannot show it, so we cannot allow it.
            self._problem(f"malformed permission request answered cancelled: {_first_error(exc)}")
            return {"outcome": {"outcome": "cancelled"}}
        decision = await self._client_permission(request)
        if self.services is not None:
            self.services.note_agent_decision(decision)
        return decision.response()

    def _known_tool_call(self, session_id: str, tool_call_id: str) -> dict[str, Any] | None:
        """The v2 wire fields the session's updates reported for tool call ``tool_call_id``
        (title, name, kind, rawInput, locations, content), or None when it knows no such call.

        A permission request's tool call is a patch of the call of that id (Mistral Vibe names
        it by id only): merged with this before any card, log or policy reads it."""
        session = self.sessions.get(session_id)
        call = session.state.tool_calls.get(tool_call_id) if session is not None else None
        if call is None:
            return None
        wire: dict[str, Any] = {"toolCallId": tool_call_id}
        for key, value in (
            ("title", call.title),
            ("name", call.name),
            ("kind", call.kind),
            ("rawInput", call.raw_input),
        ):
            if value is not None:
                wire[key] = value
        if call.locations:
            wire["locations"] = [item.to_wire() for item in call.locations]
        if call.content and len(call.content) <= MERGED_CONTENT_LIMIT:
            wire["content"] = [item.to_wire() for item in call.content]
        return wire

    def _with_known_tool_call(
        self, request: p.RequestPermissionRequest
    ) -> p.RequestPermissionRequest:
        """``request`` with its tool call merged over what the session knows of that id (see
        `_known_tool_call`): what the request sends wins field by field (a v2 null clears)."""
        subject = request.subject
        if not isinstance(subject, p.ToolCallPermissionSubject):
            return request
        known = self._known_tool_call(request.session_id, subject.tool_call.tool_call_id)
        if known is None:
            return request
        wire = request.to_wire()
        wire["subject"]["toolCall"] = {**known, **wire["subject"]["toolCall"]}
        return p.RequestPermissionRequest.model_validate(wire)

    async def _client_permission(
        self,
        request: p.RequestPermissionRequest,
        earlier: PermissionDecision | None = None,
        *,
        rules_may_allow: bool = True,
        asked_at: float | None = None,
    ) -> PermissionDecision:
        """Decide ``request``, the agent's or one the client services make (a command, a
        write): a decision of the session's current turn, asked of its asker, failing closed
        (unknown session, after the turn, after a cancel, invalid options, nobody to ask).

        ``earlier``: the agent's own request, allowed in this same turn, for exactly the command
        ``request`` runs (`AgentServices` matched them): it answers allow without asking again,
        once every check above has passed. ``rules_may_allow`` False: only a person may allow
        it (`PermissionDecision.rules_may_allow`), so ``earlier`` does not count. ``asked_at``
        (a ``time.time()``): when the request came, if before now (a write's diff was made
        first); a card's countdown counts from it."""
        session = self.sessions.get(request.session_id)
        decision = PermissionDecision(request, rules_may_allow=rules_may_allow)
        if asked_at is not None:
            decision.asked_at = asked_at
        if session is None:
            self._problem(
                f"permission request for unknown session {request.session_id!r}",
                "unknown_session",
            )
            decision.settle(None, "invalid", "unknown session")
            return decision
        decision.turn = session.turn
        session.permissions.append(decision)
        if session.after_idle_asked():
            pass  # background work of the last turn: its asker (the cell that started it) asks
        elif session.turn is None or session.turn.done:
            # Requests run in their own task, so the idle that ended the turn may have been
            # applied first; or the agent asks between turns. No cell waits for an answer any
            # more: fail closed, visibly.
            decision.settle(None, "cancel", "the turn ended")
            session._problem(f"permission request {request.title!r} came after the turn ended")
        elif session.cancelling:
            decision.settle(None, "cancel", "the turn was cancelled")
            session._problem(f"permission request {request.title!r} came after session/cancel")
        elif (reason := invalid_options(request)) is not None:
            # Ambiguous options: whatever we answered, the agent might read it as an allow.
            decision.settle(None, "invalid", reason)
            session._problem(f"permission request {request.title!r} is invalid: {reason}")
        elif (
            earlier is not None
            and earlier.allowed
            and earlier.turn is session.turn
            and decision.rules_may_allow
        ):
            once = [o.option_id for o in request.options if str(o.kind) == "allow_once"]
            if once:
                decision.settle(once[0], "earlier", earlier.request.title)
        with session._answering_slot(decision):
            await self._decide(session, decision)
        return decision

    async def _on_elicitation(self, params: Any) -> dict[str, Any]:
        try:
            request = _elicitation_request().validate_python(params)
        except ValidationError as exc:
            # Malformed: we cannot show it, so nothing can be answered for it.
            self._problem(f"malformed elicitation/create answered cancel: {_first_error(exc)}")
            return p.CreateElicitationResponse.cancel().to_wire()
        decision = ElicitationDecision(request)
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        if session_id is None:  # request-scoped (or an unknown mode): no cell is asking
            self.elicitations.append(decision)
            if isinstance(request, p.UnknownElicitationRequest):
                decision.cancel("invalid", f"unknown mode {visible_text(str(request.tag))!r}")
            return await self._decide_elicitation(None, decision)
        session = self.sessions.get(str(session_id))
        if session is None:
            self._problem(
                f"elicitation for unknown session {session_id!r} answered cancel", "unknown_session"
            )
            decision.cancel("invalid", "unknown session")
            self.elicitations.append(decision)
            return decision.response()
        decision.turn = session.turn
        session.elicitations.append(decision)
        what = visible_text(decision.message)[:80]
        if isinstance(request, p.UnknownElicitationRequest):
            decision.cancel("invalid", f"unknown mode {visible_text(str(request.tag))!r}")
            session._problem(f"question {what!r} has an unknown mode: answered cancel")
        elif session.after_idle_asked(questions=True):
            pass  # background work of the last turn: the cell that started it asks
        elif session.turn is None or session.turn.done:
            decision.cancel("cancel", "the turn ended")
            session._problem(f"question {what!r} came after the turn ended")
        elif session.cancelling:
            decision.cancel("cancel", "the turn was cancelled")
            session._problem(f"question {what!r} came after session/cancel")
        with session._answering_slot(decision):
            return await self._decide_elicitation(session, decision)

    async def _decide_elicitation(
        self, session: Session | None, decision: ElicitationDecision
    ) -> dict[str, Any]:
        asker = session._elicitation_asker if session is not None else None
        try:
            if decision.pending:
                return await decide_elicitation(decision, self.elicitation, asker)
            return decision.response()
        except anyio.get_cancelled_exc_class():
            decision.cancel("withdrawn", "the agent withdrew the request")
            return decision.response()
        finally:
            # Cancelled from outside (the agent withdrew it, or the connection closed).
            decision.cancel("withdrawn", "the request was withdrawn")

    def _on_elicitation_complete(self, params: Any) -> None:
        try:
            done = p.CompleteElicitationNotification.model_validate(params)
        except ValidationError as exc:
            self._problem(f"malformed elicitation/complete ignored: {_first_error(exc)}")
            return
        questions = [*self.elicitations]
        for session in self.sessions.values():
            questions += session.elicitations
        for decision in questions:
            if getattr(decision.request, "elicitation_id", None) == done.elicitation_id:
                decision.completed = True
                return
        self._problem(
            f"elicitation/complete for unknown id {done.elicitation_id!r} ignored",
            "unknown_elicitation",
        )

    async def _decide(self, session: Session, decision: PermissionDecision) -> dict[str, Any]:
        try:
            if decision.pending:  # else answered already (after a cancel, an invalid request)
                return await decide(decision, self.permission, session._asker)
            return decision.response()
        except anyio.get_cancelled_exc_class():
            # The agent withdrew the request ($/cancel_request): the schema asks for a
            # `cancelled` outcome as the answer. Nothing else is awaited in this scope.
            decision.settle(None, "withdrawn", "the agent withdrew the request")
            return decision.response()
        finally:
            # Cancelled from outside (the agent withdrew it, or the connection closed).
            decision.settle(None, "withdrawn", "the request was withdrawn")

    def _problem(self, detail: str, kind: ProblemKind = "not_acp") -> None:
        """A message we cannot use as ACP (``kind`` "not_acp" unless said otherwise)."""
        log.warning("%s", detail)
        self.problems.append(Problem(kind, detail))

    def _fail_turns(self, error: BaseException) -> None:
        for session in self.sessions.values():
            if session.turn is not None and not session.turn.done:
                session._end_turn(session.turn, error)

    def stderr_tail(self) -> str:
        return self.process.stderr_tail() if self.process is not None else ""

    def __repr__(self) -> str:
        name = self.info.name if self.info else "?"
        return f"<Agent {name}>"


# Made on first use: their models' protocol modules are imported then, not with the client.
@functools.cache
def _elicitation_request() -> TypeAdapter[Any]:
    return TypeAdapter(p.CreateElicitationRequest)


@functools.cache
def _auth_method() -> TypeAdapter[Any]:
    return TypeAdapter(p.AuthMethod)


def _first_error(exc: ValidationError) -> str:
    errors = exc.errors()
    if not errors:
        return str(exc)
    first = errors[0]
    where = ".".join(str(x) for x in first.get("loc", ())) or "<root>"
    return f"{where}: {first.get('msg')}"


def _absolute(cwd: str | os.PathLike[str] | None) -> str:
    return os.path.abspath(os.fspath(cwd) if cwd is not None else os.getcwd())


@asynccontextmanager
async def connect(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    permission: PermissionHandler | None = None,
    elicitation: ElicitationHandler | None = None,
    max_line_bytes: int = 64 * 2**20,
    initialize_timeout: float | None = None,
    on_problem: Callable[[Problem], None] | None = None,
    protocol: ProtocolChoice = "auto",
    client_services: bool = False,
) -> AsyncIterator[Agent]:
    """Launch ``argv`` as an ACP agent, initialize it, and yield the ``Agent``.

    ``protocol``: ``"auto"`` offers v2 and speaks v1 with an agent that answers 1 (with a v1
    body); ``1`` or ``2`` forces that version (``agent.protocol_version`` tells which is used).

    ``client_services``: offer a v1 agent client terminals (``terminal/*``, commands run here
    in a PTY) and the client file system (``fs/*``). Each command, each write and each read
    outside the session's folder is a permission decision of the session's turn, asked as the
    agent's own requests are (``permission``, or the session's asker); leaving the block kills
    every command still running.

    ``argv`` is a list (never a shell string); ``env`` entries are added to the inherited
    environment. Leaving the block closes the agent (bounded: stdin closed, SIGTERM, SIGKILL).
    ``initialize_timeout``: seconds to wait for the answer to ``initialize``; after that the
    agent is stopped at once and `InitializeTimeout` raised. ``on_problem`` is called with each
    `Problem` (also kept in ``agent.problems``), from the start: it sees what a
    failing agent wrote before ``connect`` raised.
    """
    if isinstance(argv, str | bytes):
        raise TypeError("argv must be a list of strings, not a shell command string")
    problems: list[Problem] = _ProblemList(on_problem)
    with _unwrapped():
        async with _open(
            argv,
            cwd,
            env,
            permission,
            max_line_bytes,
            problems,
            initialize_timeout,
            elicitation,
            protocol,
            client_services,
        ) as agent:
            yield agent


@asynccontextmanager
async def connect_streams(
    receive: ByteReceiveStream,
    send: ByteSendStream,
    *,
    permission: PermissionHandler | None = None,
    elicitation: ElicitationHandler | None = None,
    max_line_bytes: int = 64 * 2**20,
    initialize_timeout: float | None = None,
    on_problem: Callable[[Problem], None] | None = None,
    protocol: ProtocolChoice = "auto",
    client_services: bool = False,
) -> AsyncIterator[Agent]:
    """`connect` over a pair of byte streams instead of a subprocess (``agent.process`` is
    None): an agent served in memory (``acp_notebook.agent.serve_in_memory``), a socket...

    ``receive`` carries what the agent writes, ``send`` what it reads. The options are
    `connect`'s. Leaving the block closes both streams; when ``initialize`` times out they
    are closed at once and `InitializeTimeout` raised (with an empty ``stderr_tail``).
    """
    problems: list[Problem] = _ProblemList(on_problem)
    connection = Connection(
        receive, send, max_line_bytes=max_line_bytes, name="agent", on_problem=problems.append
    )
    with _unwrapped():
        async with connection:
            agent = Agent(connection, None, permission, elicitation, protocol, client_services)
            agent.problems = problems
            async with _initialized(agent, initialize_timeout):
                yield agent


@contextmanager
def _unwrapped() -> Iterator[None]:
    """Task groups inside wrap what the block raised; give the caller the error itself."""
    try:
        yield
    except BaseExceptionGroup as group:
        leaf = _single_error(group)
        if leaf is None:
            raise
        raise leaf from leaf.__cause__


class _ProblemList(list[Problem]):
    """``agent.problems``, telling an optional callback about each new one."""

    def __init__(self, callback: Callable[[Problem], None] | None) -> None:
        super().__init__()
        self._callback = callback

    def append(self, problem: Problem) -> None:
        super().append(problem)
        if self._callback is not None:
            try:
                self._callback(problem)
            except Exception:
                log.exception("on_problem callback failed")


def _single_error(group: BaseExceptionGroup[BaseException]) -> BaseException | None:
    cancelled = anyio.get_cancelled_exc_class()
    leaves: list[BaseException] = []
    pending: list[BaseException] = [group]
    while pending:
        item = pending.pop()
        if isinstance(item, BaseExceptionGroup):
            pending.extend(item.exceptions)
        elif not isinstance(item, cancelled):
            leaves.append(item)
    return leaves[0] if len(leaves) == 1 else None


class _GaveUp(ConnectionClosed):
    """Fails a pending ``initialize`` that timed out or whose caller was cancelled."""

    def __init__(self, timed_out: bool) -> None:
        super().__init__("initialize timed out" if timed_out else "initialize was abandoned")
        self.timed_out = timed_out


async def _initialize(
    agent: Agent,
    process: AgentProcess | None,
    connection: Connection,
    tg: anyio.abc.TaskGroup,
    timeout: float | None,
) -> None:
    """``agent.initialize()``, bounded by ``timeout``; when it times out or the caller is
    cancelled, the agent is stopped at once (no grace period: it never answered).

    The request is not cancelled but *failed* (``connection.fail``): a cancelled request
    sends ``$/cancel_request``, for which the connection would start a task in a task
    group that is being cancelled, which anyio never delivers the cancellation to.
    """
    finished = False
    guard_scope = anyio.CancelScope()

    async def guard() -> None:
        timed_out = False
        try:
            with guard_scope:
                await anyio.sleep(math.inf if timeout is None else timeout)
                timed_out = True
        finally:
            if not finished:  # timed out, or cancelled from outside (the caller gave up)
                connection.fail(_GaveUp(timed_out))

    tg.start_soon(guard)
    try:
        with anyio.CancelScope(shield=True):
            await agent.initialize()
    except _GaveUp as exc:
        tail = ""
        if process is not None:
            await process.aclose(grace=0)
            if exc.timed_out:
                tail = (await process.exit_error()).stderr_tail
        if exc.timed_out:
            raise InitializeTimeout(timeout or 0, tail) from None
        await anyio.lowlevel.checkpoint_if_cancelled()  # the caller's cancellation goes on
        raise
    finally:
        finished = True
        guard_scope.cancel()


@asynccontextmanager
async def _open(
    argv: Sequence[str],
    cwd: str | os.PathLike[str] | None,
    env: Mapping[str, str] | None,
    permission: PermissionHandler | None,
    max_line_bytes: int,
    problems: list[Problem],
    initialize_timeout: float | None,
    elicitation: ElicitationHandler | None = None,
    protocol: ProtocolChoice = "auto",
    client_services: bool = False,
) -> AsyncIterator[Agent]:
    async with open_agent_connection(
        list(argv),
        cwd=_absolute(cwd),
        env_overrides=env,
        max_line_bytes=max_line_bytes,
        on_problem=problems.append,
    ) as (process, connection):
        agent = Agent(connection, process, permission, elicitation, protocol, client_services)
        agent.problems = problems
        async with _initialized(agent, initialize_timeout):
            yield agent


@asynccontextmanager
async def _initialized(agent: Agent, initialize_timeout: float | None) -> AsyncIterator[None]:
    """Initialize ``agent`` on its entered connection; while the block runs, its turns fail
    when the connection closes. Its client terminals (if any) are killed when it ends."""
    connection = agent.connection
    async with anyio.create_task_group() as tg:

        async def watch_exit() -> None:
            await connection.wait_closed()
            agent._fail_turns(
                connection.failure or ConnectionClosed("the connection to the agent closed")
            )

        tg.start_soon(watch_exit)
        async with AsyncExitStack() as stack:
            if agent.services is not None:
                await stack.enter_async_context(agent.services.terminals)
            try:
                await _initialize(agent, agent.process, connection, tg, initialize_timeout)
                yield
            finally:
                tg.cancel_scope.cancel()
