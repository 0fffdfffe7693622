"""``Turn``: one prompt and what the agent did about it (its updates, bounded for iterators)."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

import anyio

from .. import _protocol as p
from .._connection._errors import AcpError
from .._state import TurnState
from ._elicitation import ElicitationDecision
from ._permission import PermissionDecision
from ._replay import REPLAY_BULK_BYTES, REPLAY_LIMIT, UpdateBuffer, UpdateStream

if TYPE_CHECKING:
    from ._session import Session


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
        #: ``_done`` is set (a plain attribute: the hot path reads it at every update)
        self._ended = False
        self.error: BaseException | None = None
        #: v1: the ``usage`` of the ``session/prompt`` answer, as sent (unstable v1 field)
        self.usage: Any = None

    # -- what happened -------------------------------------------------------------------
    @property
    def done(self) -> bool:
        return self._ended

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
        if self._ended:
            return
        self.error = error
        self._ended = True
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
        dialect = self.session._v1
        if dialect is not None:
            dialect.translator.begin_turn()
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
        if dialect is not None:
            dialect.turn_ended(self, result)

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
