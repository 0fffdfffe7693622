"""``Session``: a conversation with the agent, the reduced state of what it reported, its
turns, its pending requests and the one fail-closed sweep over them."""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from itertools import repeat
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal

import anyio

from .. import _protocol as p
from .._connection._errors import AcpError, AgentExited, ConnectionClosed, RpcError
from .._state import SessionState
from ._elicitation import ElicitationAsker, ElicitationDecision
from ._errors import TurnInProgress
from ._permission import Asker, PermissionDecision
from ._replay import _validate_chunk
from ._turn import Turn

if TYPE_CHECKING:
    from ._agent import Agent
    from ._v1 import V1Session

log = logging.getLogger("acp_notebook.client")
_new_object = object.__new__

UpdateListener = Callable[["Session", p.SessionUpdate], None]
#: what a ``subscribe(..., terminal_chunks=)`` listener gets for each terminal_output_chunk
ChunkListener = Callable[["Session", "TerminalChunk"], None]
#: who a fail-closed sweep says decided: the turn or session was cancelled, or it is closing
SweptBy = Literal["cancel", "closed"]


class TerminalChunk:
    """A ``terminal_output_chunk`` as a ``terminal_chunks`` listener sees it: its terminal id and
    its base64 ``data`` as sent, without a pydantic model. ``model`` makes the
    ``p.TerminalOutputChunk`` (once, on first use; the one the session applied when there was
    one), ``decoded()`` the bytes. A v1 agent's output arrives as text, not base64: its chunk
    is made from the bytes (`from_bytes`), and ``data`` encodes them when first read.
    Read-only."""

    __slots__ = ("_data", "_model", "_raw", "terminal_id")
    session_update: ClassVar[str] = "terminal_output_chunk"

    def __init__(
        self, terminal_id: str, data: str, model: p.TerminalOutputChunk | None = None
    ) -> None:
        self.terminal_id: Final = terminal_id
        self._data: str | None = data
        self._raw: bytes | None = None
        self._model = model

    @classmethod
    def from_bytes(cls, terminal_id: str, raw: bytes) -> TerminalChunk:
        """The chunk whose output is ``raw`` (its base64 made only if someone reads it)."""
        chunk = _new_object(cls)
        chunk.terminal_id = terminal_id  # type: ignore[misc]
        chunk._data = None
        chunk._raw = raw
        chunk._model = None
        return chunk

    @property
    def data(self) -> str:
        """The output as base64, as a v2 agent sends it."""
        data = self._data
        if data is None:
            data = self._data = base64.b64encode(self._raw or b"").decode("ascii")
        return data

    @property
    def model(self) -> p.TerminalOutputChunk:
        """The update as its model (what a plain ``subscribe`` listener gets)."""
        model = self._model
        if model is None and self._raw is not None:  # (as the v1 translator makes it)
            model = self._model = p.TerminalOutputChunk(
                terminal_id=self.terminal_id, data=self.data
            )
        if model is None:
            wire = {"sessionUpdate": self.session_update, "terminalId": self.terminal_id}
            wire["data"] = self.data
            model = self._model = _validate_chunk(wire)
        return model

    def decoded(self) -> bytes | None:
        """The output's bytes, or None when ``data`` is not valid base64 (the state reported
        it and dropped the chunk)."""
        if self._raw is not None:
            return self._raw
        data = self.data
        try:  # as the state decodes it (`SessionState._decode`)
            return binascii.a2b_base64(data, strict_mode=True)
        except (binascii.Error, ValueError):
            pass
        try:
            return base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            return None

    def __repr__(self) -> str:
        return f"TerminalChunk({self.terminal_id!r}, {len(self.data)} base64 characters)"


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
        # (listener, its terminal chunk listener or None), in the order they subscribed
        self._listeners: list[tuple[UpdateListener, ChunkListener | None]] = []
        self._model_listeners = 0  # of them, those without a terminal chunk listener
        #: of them, the terminal chunk listeners (a tuple: a listener may unsubscribe while
        #: they are called, and the hot path should not copy a list for every chunk)
        self._chunk_listeners: tuple[ChunkListener, ...] = ()
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
        self._v1: V1Session | None = None

    # -- listeners (views subscribe here) ----------------------------------------------------
    def subscribe(
        self, listener: UpdateListener, *, terminal_chunks: ChunkListener | None = None
    ) -> Callable[[], None]:
        """Call ``listener(session, update)`` after each update is applied, until the returned
        function is called. With ``terminal_chunks``, every ``terminal_output_chunk`` goes to
        it instead, as a :class:`TerminalChunk` (no model is made for a chunk of a flood
        unless someone asks for it); ``listener`` gets every other update. Both run in arrival
        order, with the other subscribers in the order they subscribed."""
        entry = (listener, terminal_chunks)
        self._listeners.append(entry)
        if terminal_chunks is None:
            self._model_listeners += 1
        self._chunk_listeners = self._chunk_listeners_now()

        def unsubscribe() -> None:
            for index, found in enumerate(self._listeners):
                if found is entry:
                    del self._listeners[index]
                    if terminal_chunks is None:
                        self._model_listeners -= 1
                    self._chunk_listeners = self._chunk_listeners_now()
                    return

        return unsubscribe

    def _chunk_listeners_now(self) -> tuple[ChunkListener, ...]:
        """The ``terminal_chunks`` listeners, in the order they subscribed: who gets a hot
        chunk while there is no model listener (`_apply_chunks`)."""
        return tuple(chunks for _listener, chunks in self._listeners if chunks is not None)

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
        if not self._listeners:
            return
        view: TerminalChunk | None = None
        for listener, chunks in list(self._listeners):
            try:
                if chunks is not None and isinstance(update, p.TerminalOutputChunk):
                    if view is None:
                        view = TerminalChunk(update.terminal_id, update.data, update)
                    chunks(self, view)
                else:
                    listener(self, update)
            except Exception:
                log.exception("session update listener failed")

    def _apply_chunks(self, messages: list[dict[str, Any]], start: int) -> int:
        """`_apply` of the ``terminal_output_chunk`` of ``messages[start]`` (this session's,
        of the exact hot shape: ``_hotpath``) and of the ones right after it of this session
        and terminal, given as their wire messages; returns the index after the last one
        taken. When no listener or iterator would see their models, none is made (a
        ``terminal_chunks`` listener gets a :class:`TerminalChunk` of each), and the run is
        applied to the state in one step, then to the replay and the listeners chunk by
        chunk."""
        turn = self.turn
        first = messages[start]["params"]["update"]
        if self._model_listeners or (turn is not None and turn._iterated and turn._streams):
            self._apply(_validate_chunk(first))
            return start + 1
        terminal_id = first["terminalId"]
        run = [first]
        end, count, session_id = start + 1, len(messages), self.id
        while end < count:
            params = messages[end]["params"]
            update = params["update"]
            if params["sessionId"] != session_id or update["terminalId"] != terminal_id:
                break
            run.append(update)
            end += 1
        state = self.state
        problems = len(state.problems)
        state.apply_terminal_chunks(terminal_id, [raw["data"] for raw in run])
        for problem in state.problems[problems:]:  # base64 refused: those chunks dropped
            self._problem(problem)
        if turn is not None and not turn._ended:
            # `turn._push`, with no stream to feed: the replay keeps the wire dicts (a model is
            # made if an iterator reads one)
            push = turn._replay.push_chunk
            for raw in run:
                push(raw)
            waiter = turn._waiter
            if waiter is not None:
                turn._waiter = None
                waiter.set()
            if turn.state.done:  # (a chunk never ends a turn: as `_apply`, all the same)
                self._end_turn(turn)
        if self._chunk_listeners:  # (all of them: no model listener, see above)
            self._tell_chunks(terminal_id, [raw["data"] for raw in run], None)
        return end

    def _tell_chunks(
        self, terminal_id: str, datas: list[str] | None, raws: list[bytes] | None
    ) -> None:
        """Give the ``terminal_chunks`` listeners a :class:`TerminalChunk` of each chunk of
        ``terminal_id``, in order: of its base64 (``datas``) or of its bytes (``raws``)."""
        listeners = self._chunk_listeners
        pairs = zip(datas, repeat(None)) if datas is not None else zip(repeat(None), raws or ())
        for data, raw in pairs:
            # `TerminalChunk(terminal_id, data)` (or `.from_bytes(raw)`) without a frame for
            # its __init__ (per chunk; a test checks the slots)
            view = _new_object(TerminalChunk)
            view.terminal_id = terminal_id  # type: ignore[misc]
            view._data = data
            view._raw = raw
            view._model = None
            for chunks in listeners:
                try:
                    chunks(self, view)
                except Exception:
                    log.exception("session update listener failed")

    def _problem(self, message: str) -> None:
        log.warning("session %s: %s", self.id, message)
        self.problems.append(message)

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
            if self._v1 is None or self._v1.can_close():
                await self.agent._request(p.Method.SESSION_CLOSE, {"sessionId": self.id})
        finally:
            self.closed = True
            if self.turn is not None:
                self._end_turn(self.turn)
            if self.agent.services is not None:
                await self.agent.services.release_session(self.id)

    async def set_config_option(self, config_id: str, value: str | bool) -> list[Any]:
        dialect = self._v1
        if dialect is not None:
            return await dialect.set_config_option(config_id, value)
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
