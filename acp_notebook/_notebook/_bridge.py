"""The kernel side of the agents: a background I/O thread, and the agents held open in it.

Agents run in their own thread and event loop, so their pipes are read even while a cell keeps
the kernel's main thread busy. The notebook (``_notebook.Notebook``) owns one ``IOThread`` and
the ``AgentHandle`` of each connected agent; this module only knows how to run them:

* ``IOThread`` runs an anyio event loop (asyncio backend) in a daemon thread.
* ``open_agent`` launches and initializes an agent there; its ``AgentHandle`` keeps the
  ``connect()`` open across cells, until ``close()``.
* Widget callbacks (clicks) arrive on the kernel's main thread; they are handed to the I/O
  thread with ``IOThread.soon`` so state and anyio primitives are only touched there.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar, cast

import anyio
import anyio.lowlevel
from anyio.from_thread import BlockingPortal, start_blocking_portal

from .._client._agent import Agent
from .._client._connect import connect
from .._connection._exit import exit_label
from ._failures import ConnectFailed
from ._pacing import CellPacing
from ._redact import redact

log = logging.getLogger("acp_notebook.bridge")

T = TypeVar("T")

#: The longest the main thread blocks at a time when it waits for the I/O thread. The OS may hand
#: an Interrupt's SIGINT to any thread of the kernel; Python then notes it, but a wait on a lock
#: in the main thread goes on until it ends (for a connect, its 30 s timeout). Waiting in
#: slices, the main thread runs the handler (KeyboardInterrupt) within one slice.
WAIT_SLICE = 0.1


def result_of(future: concurrent.futures.Future[T], timeout: float | None = None) -> T:
    """``future.result(timeout)``, waited for in slices so that an Interrupt lands at once.
    (``future.exception`` waits under one lock, taken and given back by a ``with``: an
    Interrupt between slices leaves no lock held, as one inside ``concurrent.futures.wait``'s
    loop over its futures' locks could.)"""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        left = WAIT_SLICE if deadline is None else min(WAIT_SLICE, deadline - time.monotonic())
        try:
            future.exception(max(left, 0.0))  # raises TimeoutError only for the wait itself
        except TimeoutError:
            if left <= 0:
                raise TimeoutError(f"not done within {timeout} s") from None
            continue
        return future.result()


def wait_set(event: threading.Event, timeout: float) -> bool:
    """``event.wait(timeout)``, waited for in slices so that an Interrupt lands at once."""
    deadline = time.monotonic() + timeout
    while not event.is_set():
        left = min(WAIT_SLICE, deadline - time.monotonic())
        if left <= 0:
            return False
        event.wait(left)
    return True


class IOThread:
    """An event loop in a daemon thread, with a portal to reach it from any other thread."""

    def __init__(self, pacing: CellPacing | None = None) -> None:
        #: the kernel's pacing: told when the main thread waits here (agents then read freely)
        self.pacing = pacing
        self._cm: AbstractContextManager[BlockingPortal] = start_blocking_portal("asyncio")
        self.portal = self._cm.__enter__()
        self.loop: asyncio.AbstractEventLoop = self.portal.call(_running_loop)
        self.thread_id: int = self.portal.call(threading.get_ident)
        self._stopped = False

    @property
    def stopped(self) -> bool:
        return self._stopped

    @property
    def in_thread(self) -> bool:
        return threading.get_ident() == self.thread_id

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run ``fn`` (sync or async) in the I/O thread and wait for its result."""
        # the agents are read without pacing meanwhile
        with self.pacing.main_waits() if self.pacing else contextlib.nullcontext():
            # what portal.call does, with a wait an Interrupt ends at once
            return result_of(self.portal.start_task_soon(fn, *args))

    def submit(self, fn: Callable[..., Awaitable[T]], *args: Any) -> concurrent.futures.Future[T]:
        """Start ``fn`` in the I/O thread; return a future for its result."""
        return self.portal.start_task_soon(fn, *args)

    def await_withdrawable(self, fn: Callable[[], Awaitable[T]]) -> T:
        """Await ``fn()`` in the I/O thread from the main thread. An Interrupt (a
        KeyboardInterrupt, re-raised) withdraws it (`Withdrawable`): a request it awaits is
        cancelled too, even when the Interrupt lands during the hand-over."""
        job = Withdrawable(self, fn)
        future = job.start()
        try:
            result = result_of(future)
        except KeyboardInterrupt:
            job.withdraw()
            raise
        return cast(T, result)

    def soon(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run a plain function in the I/O thread soon, without waiting (thread-safe)."""
        if self.in_thread:
            fn(*args)
        else:
            self.loop.call_soon_threadsafe(fn, *args)

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        try:
            # Cancel what is left (a view's task, a holder that did not end): waiting for it
            # kept the kernel from exiting until Jupyter killed it.
            self.portal.call(self.portal.stop, True)
        except Exception:  # pragma: no cover - best effort at shutdown
            log.debug("cancelling the I/O thread's tasks failed", exc_info=True)
        try:
            self._cm.__exit__(None, None, None)
        except Exception:  # pragma: no cover - best effort at shutdown
            log.debug("I/O thread did not stop cleanly", exc_info=True)


class Withdrawable(Generic[T]):
    """``fn()`` started in the I/O thread, which the main thread can withdraw at any moment.

    Withdrawn while it runs, its task is cancelled (so is a request it awaits); withdrawn
    before it began, it never calls ``fn``: the portal's hand-over blocks, and under load it
    can take long enough for the task to start, and send a request, before ``start`` returns.
    An Interrupt during that hand-over withdraws it before it goes on. ``settled`` is set once
    it can do nothing more: ``fn`` ended (however), or it was withdrawn before it began."""

    def __init__(self, io: IOThread, fn: Callable[[], Awaitable[T]]) -> None:
        self._io = io
        self._fn = fn
        self._withdrawn = False
        self._scope: anyio.CancelScope | None = None
        self.settled = threading.Event()

    def start(self) -> concurrent.futures.Future[T | None]:
        """Hand it to the I/O thread (main thread); the future holds ``None`` if withdrawn."""
        try:
            return self._io.submit(self._run)
        except KeyboardInterrupt:
            self.withdraw()
            raise

    def withdraw(self) -> None:
        """Withdraw it, whether it began or not (from any thread; returns at once). Not by
        cancelling the portal's future: with some anyio 4.x that blocks on the I/O thread."""
        self._io.soon(self._withdraw_here)

    async def _run(self) -> T | None:
        try:
            # Between this check and entering the scope, the only yield to the loop
            # (checkpoint_if_cancelled, when cancelled) ends in a raise, so _withdraw_here sees
            # either no scope (fn is never called) or the scope to cancel.
            if self._withdrawn:
                return None
            await anyio.lowlevel.checkpoint_if_cancelled()  # the future was cancelled first
            with anyio.CancelScope() as scope:
                self._scope = scope
                return await self._fn()
            return None  # withdrawn: nobody waits for this result
        finally:
            self.settled.set()

    def _withdraw_here(self) -> None:  # in the I/O thread, like _run(): no lock needed
        self._withdrawn = True
        if self._scope is None:  # not begun, so it never will: nothing more to wait for
            self.settled.set()
        else:
            self._scope.cancel()


def _running_loop() -> asyncio.AbstractEventLoop:
    return asyncio.get_running_loop()


@dataclass
class AgentHandle:
    """One connected agent, held open in the I/O thread across cells."""

    name: str
    argv: list[str]
    cwd: str
    agent: Agent
    io: IOThread
    _stop: anyio.Event
    _done: concurrent.futures.Future[None]
    closed: bool = False  # closed on purpose (not merely exited)
    # Variables added to its environment (`%acp connect --env`): never printed or logged;
    # kept so that the same agent can be started again.
    env: dict[str, str] = field(default_factory=dict, repr=False)
    #: how it was reached, when not by launching ``argv`` (a test's in-memory agent)
    connector: Connector | None = field(default=None, repr=False)
    #: other strings it was given that are never shown (the kernel tools' tokens)
    secrets: set[str] = field(default_factory=set, repr=False)
    #: the protocol it was asked to speak (`%acp connect --protocol`); a restart keeps it
    protocol: Literal["auto", 1, 2] = field(default="auto", repr=False)
    #: its id in the ACP registry (from its shortcut, else from what it calls itself): what
    #: the notebook knows of its modes (`_registry.NOTES`); None when it is not there
    registry_id: str | None = None
    #: every frame is recorded from its start (`%acp connect --trace`); a restart keeps it
    traced: bool = field(default=False, repr=False)
    #: config options every new session of it is put in before its first prompt
    #: (`%acp connect --mode`): a config id or `_modes.MODE` -> the value a person named
    start_config: dict[str, str] = field(default_factory=dict)

    def when_done(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` (from any thread) once the agent's connection has ended, by
        itself or closed; at once if it has already."""
        self._done.add_done_callback(lambda _future: callback())

    @property
    def alive(self) -> bool:
        proc = self.agent.process
        return not self._done.done() and (proc is None or proc.returncode is None)

    @property
    def label(self) -> str:
        """What the agent calls itself: its title (else its name) and version."""
        info = self.agent.info
        if info is None:
            return "?"
        return f"{info.title or info.name} {info.version}"

    @property
    def exit_status(self) -> str:
        """``exit 3``, ``signal SIGKILL``, ``exited`` (its connection closed), or ``running``."""
        proc = self.agent.process
        if self.alive:
            return "running"
        if proc is None:
            return "exited"
        return exit_label(proc.returncode, proc.exit_signal)

    def stderr_tail(self, limit: int = 2000) -> str:
        """The end of its stderr, with its ``env`` values and ``secrets`` (of 4 characters or
        more) shown as ``***``: an agent may print what it was given."""
        proc = self.agent.process
        text = proc.stderr_tail(limit) if proc is not None else ""
        return redact(text, [*self.env.values(), *self.secrets])

    def close(self, timeout: float = 15.0) -> None:
        """Close every session's pending decisions (fail closed) and shut the agent down."""
        self.closed = True
        if self._done.done():
            return
        self.io.soon(self._stop.set)
        try:
            result_of(self._done, timeout)
        except Exception as exc:  # the agent may already have died; closing still succeeded
            log.debug("agent %s closed with %r", self.name, exc)


STOP_WAIT = 10.0  # seconds to wait for an abandoned agent to be stopped


Connector = Callable[..., AbstractAsyncContextManager[Agent]]
"""How an agent is reached: called with the keywords ``permission``, ``elicitation``,
``initialize_timeout``, ``on_problem`` and ``client_services`` (as ``connect`` takes them:
a v1 agent is offered client terminals and the client file system), it returns the async
context manager that yields the initialized ``Agent``. ``launch(argv, cwd, env)`` starts a
process; a test passes one that runs the embedded agent in memory."""


def launch(
    argv: Sequence[str],
    cwd: str,
    env: Mapping[str, str] | None = None,
    protocol: Literal["auto", 1, 2] = "auto",
) -> Connector:
    """The connector that launches ``argv`` in ``cwd`` (``connect``), speaking ``protocol``."""
    return functools.partial(connect, list(argv), cwd=cwd, env=dict(env or {}), protocol=protocol)


async def _hold_agent(
    connector: Connector,
    timeout: float | None,
    problems: list[Any],
    started: concurrent.futures.Future[tuple[Agent, anyio.Event]],
    pacing: CellPacing | None = None,
    trace: bool = False,
) -> None:
    try:
        stop = anyio.Event()
        # No handler of its own: each session's requests are answered by the cell run that
        # asks (Session.ask_permissions); with none attached, they are answered cancelled.
        # The client services' commands, writes and outside reads take the same path.
        # (``trace`` only when asked: a test's connector need not take it)
        traced: dict[str, Any] = {"trace": True} if trace else {}
        async with connector(
            permission=None,
            elicitation=None,
            initialize_timeout=timeout,
            on_problem=problems.append,
            client_services=True,
            **traced,
        ) as agent:
            if not started.set_running_or_notify_cancel():
                return  # the caller gave up (interrupted) as initialize ended: stop it
            # a cell of the user's own code goes before this agent's background flood
            agent.connection.pace = pacing
            started.set_result((agent, stop))
            async with anyio.create_task_group() as tg:

                async def stop_when_dead() -> None:
                    await agent.connection.wait_closed()
                    stop.set()

                tg.start_soon(stop_when_dead)
                await stop.wait()
                tg.cancel_scope.cancel()
            for session in list(agent.sessions.values()):  # fail closed, answers written
                await session.fail_pending("the agent was closed")
    except BaseException as exc:
        if not started.done() and started.set_running_or_notify_cancel():
            started.set_exception(exc)
        raise


CONNECT_TIMEOUT = 30.0  # seconds an agent gets to answer `initialize`


def open_agent(
    io: IOThread,
    name: str,
    argv: Sequence[str],
    cwd: str,
    *,
    timeout: float | None = CONNECT_TIMEOUT,
    env: Mapping[str, str] | None = None,
    connector: Connector | None = None,
    protocol: Literal["auto", 1, 2] = "auto",
    trace: bool = False,
) -> AgentHandle:
    """Launch and initialize an agent in the I/O thread ``io``.

    ``connector`` reaches it (default: ``launch(argv, cwd, env)``, a subprocess); ``argv``,
    ``cwd`` and ``env`` are kept on the handle so that it can be started again. Raises
    `ConnectFailed` (with what the connector raised and the connection's problems) when the
    agent cannot be started or initialized, or does not answer ``initialize`` within
    ``timeout`` seconds. If the wait is interrupted (KeyboardInterrupt), the agent is stopped
    before the interrupt goes on.
    """
    env = dict(env or {})
    problems: list[Any] = []
    started: concurrent.futures.Future[tuple[Agent, anyio.Event]] = concurrent.futures.Future()
    reach = connector if connector is not None else launch(argv, cwd, env, protocol)
    # Withdrawn by an Interrupt, even one during the hand-over (it may have started the
    # agent by then): the connect is cancelled, and stops the agent if it started one.
    job = Withdrawable(
        io, functools.partial(_hold_agent, reach, timeout, problems, started, io.pacing, trace)
    )

    def interrupted() -> None:
        started.cancel()
        job.withdraw()
        wait_set(job.settled, STOP_WAIT)

    try:
        done = job.start()
    except KeyboardInterrupt:
        interrupted()
        raise
    try:
        agent, stop = result_of(started)
    except BaseException as exc:
        if not isinstance(exc, Exception) or isinstance(exc, concurrent.futures.CancelledError):
            interrupted()  # Interrupted while waiting
            raise
        wait_set(job.settled, STOP_WAIT)
        raise ConnectFailed(exc, problems) from exc
    handle = AgentHandle(name, list(argv), cwd, agent, io, stop, done)
    handle.env = env
    handle.connector = connector
    handle.protocol = protocol
    handle.traced = trace
    return handle
