"""``connect`` and ``connect_streams``: an agent launched (or given as two byte streams),
initialized within a bound, and closed when the block ends."""

from __future__ import annotations

import logging
import math
import os
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

from .._connection._errors import ConnectionClosed
from .._connection._jsonrpc import Connection, Problem
from .._connection._process import AgentProcess, open_agent_connection
from .._connection._trace import TraceRecorder
from ._agent import Agent, ProtocolChoice
from ._elicitation import ElicitationHandler
from ._errors import InitializeTimeout, NotSpeakingAcp, absolute_cwd
from ._permission import PermissionHandler

log = logging.getLogger("acp_notebook.client")


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
    trace: bool | TraceRecorder = False,
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
    failing agent wrote before ``connect`` raised. ``trace``: record every frame from
    ``initialize`` on (a `TraceRecorder`, or True for one with the default cap), for
    ``agent.export_trace``.
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
            _recorder(trace),
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
    trace: bool | TraceRecorder = False,
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
            agent = Agent(
                connection,
                None,
                permission,
                elicitation,
                protocol,
                client_services,
                _recorder(trace),
            )
            agent.problems = problems
            async with _initialized(agent, initialize_timeout):
                yield agent


def _recorder(trace: bool | TraceRecorder) -> TraceRecorder | None:
    if isinstance(trace, TraceRecorder):
        return trace
    return TraceRecorder() if trace else None


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


#: Lines that are not JSON-RPC, before the answer to ``initialize``, after which the agent is
#: stopped at once (`NotSpeakingAcp`): stdout is for the protocol alone, and a program that
#: writes prose there is not speaking it (waiting out the timeout would only make a person wait).
NOISE_LIMIT = 3


class _ProblemList(list[Problem]):
    """``agent.problems``, telling an optional callback about each new one; ``noisy`` is set
    once `NOISE_LIMIT` lines were not JSON-RPC."""

    def __init__(self, callback: Callable[[Problem], None] | None) -> None:
        super().__init__()
        self._callback = callback
        self.noisy = anyio.Event()

    @property
    def bad_lines(self) -> int:
        return sum(1 for problem in self if problem.kind == "unparsable")

    def append(self, problem: Problem) -> None:
        super().append(problem)
        if problem.kind == "unparsable" and self.bad_lines >= NOISE_LIMIT:
            self.noisy.set()
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
    """Fails a pending ``initialize`` that timed out, that came after too many lines that are
    not JSON-RPC (``why``: "timeout", "noise"), or whose caller was cancelled (``why`` None)."""

    def __init__(self, why: str | None) -> None:
        super().__init__(f"initialize gave up ({why})" if why else "initialize was abandoned")
        self.why = why


async def _initialize(
    agent: Agent,
    process: AgentProcess | None,
    connection: Connection,
    tg: anyio.abc.TaskGroup,
    timeout: float | None,
) -> None:
    """``agent.initialize()``, bounded by ``timeout`` and by `NOISE_LIMIT` lines that are not
    JSON-RPC; when either is reached or the caller is cancelled, the agent is stopped at once
    (no grace period: it never answered).

    The request is not cancelled but *failed* (``connection.fail``): a cancelled request
    sends ``$/cancel_request``, for which the connection would start a task in a task
    group that is being cancelled, which anyio never delivers the cancellation to.
    """
    finished = False
    guard_scope = anyio.CancelScope()

    noisy = agent.problems.noisy if isinstance(agent.problems, _ProblemList) else anyio.Event()

    async def guard() -> None:
        why: str | None = None
        try:
            with guard_scope:
                with anyio.move_on_after(math.inf if timeout is None else timeout) as waited:
                    await noisy.wait()
                why = "timeout" if waited.cancelled_caught else "noise"
        finally:
            if not finished:  # gave up, or cancelled from outside (the caller gave up)
                connection.fail(_GaveUp(why))

    tg.start_soon(guard)
    try:
        with anyio.CancelScope(shield=True):
            await agent.initialize()
    except _GaveUp as exc:
        tail = ""
        if process is not None:
            await process.aclose(grace=0)
            if exc.why is not None:
                tail = (await process.exit_error()).stderr_tail
        if exc.why == "noise":
            raise NotSpeakingAcp(getattr(agent.problems, "bad_lines", 0), tail) from None
        if exc.why == "timeout":
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
    trace: TraceRecorder | None = None,
) -> AsyncIterator[Agent]:
    async with open_agent_connection(
        list(argv),
        cwd=absolute_cwd(cwd),
        env_overrides=env,
        max_line_bytes=max_line_bytes,
        on_problem=problems.append,
    ) as (process, connection):
        agent = Agent(
            connection, process, permission, elicitation, protocol, client_services, trace
        )
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
