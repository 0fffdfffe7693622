"""The kernel side of the notebook: a background I/O thread that owns every agent.

Agents run in their own thread and event loop, so their pipes are read even while a cell keeps
the kernel's main thread busy. Cells talk to that thread through this module:

* ``IOThread`` runs an anyio event loop (asyncio backend) in a daemon thread.
* ``AgentHandle`` keeps one ``connect()`` open across cells, until ``close()``.
* Widget callbacks (clicks) arrive on the kernel's main thread; they are handed to the I/O
  thread with ``IOThread.soon`` so state and anyio primitives are only touched there.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import logging
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
from anyio.from_thread import BlockingPortal, start_blocking_portal

from ._client import Agent, Session, connect
from ._failures import ConnectFailed as ConnectFailed  # moved; re-exported for now
from ._failures import describe_problem as describe_problem
from ._permission import PermissionDecision
from ._protocol import RequestPermissionRequest

log = logging.getLogger("acp_notebook.bridge")

T = TypeVar("T")


class IOThread:
    """An event loop in a daemon thread, with a portal to reach it from any other thread."""

    def __init__(self) -> None:
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
        return self.portal.call(fn, *args)

    def submit(self, fn: Callable[..., Awaitable[T]], *args: Any) -> concurrent.futures.Future[T]:
        """Start ``fn`` in the I/O thread; return a future for its result."""
        return self.portal.start_task_soon(fn, *args)

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


def _running_loop() -> asyncio.AbstractEventLoop:
    return asyncio.get_running_loop()


_io: IOThread | None = None
_io_lock = threading.Lock()


def io_thread() -> IOThread:
    global _io
    with _io_lock:
        if _io is None:
            _io = IOThread()
            atexit.register(shutdown)
        return _io


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
    sessions: dict[str, Session] = field(default_factory=dict)
    error: BaseException | None = None
    closed: bool = False  # closed on purpose (not merely exited)
    # Variables added to its environment (`%acp connect --env`): never printed or logged;
    # kept so that the same agent can be started again.
    env: dict[str, str] = field(default_factory=dict, repr=False)

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

    def close(self, timeout: float = 15.0) -> None:
        """Close every session's pending decisions (fail closed) and shut the agent down.

        A closed handle leaves `handles()` (when it is the one registered under its name).
        """
        self.closed = True
        if _handles.get(self.name) is self:
            del _handles[self.name]
        _closed.pop(self.name, None)
        _closed[self.name] = self
        while len(_closed) > CLOSED_KEPT:
            del _closed[next(iter(_closed))]
        if self._done.done():
            return
        self.io.soon(self._stop.set)
        try:
            self._done.result(timeout)
        except Exception as exc:  # the agent may already have died; closing still succeeded
            log.debug("agent %s closed with %r", self.name, exc)


STOP_WAIT = 10.0  # seconds to wait for an abandoned agent to be stopped


async def _hold_agent(
    argv: Sequence[str],
    cwd: str,
    permission: Callable[[RequestPermissionRequest], Awaitable[str | None]],
    timeout: float | None,
    problems: list[str],
    started: concurrent.futures.Future[tuple[Agent, anyio.Event]],
    ended: threading.Event,
    env: dict[str, str] | None = None,
) -> None:
    try:
        stop = anyio.Event()
        async with connect(
            argv,
            cwd=cwd,
            env=env,
            permission=permission,
            initialize_timeout=timeout,
            on_problem=problems.append,
        ) as agent:
            if not started.set_running_or_notify_cancel():
                return  # the caller gave up (interrupted) as initialize ended: stop it
            started.set_result((agent, stop))
            async with anyio.create_task_group() as tg:

                async def stop_when_dead() -> None:
                    await agent.connection.wait_closed()
                    stop.set()

                tg.start_soon(stop_when_dead)
                await stop.wait()
                tg.cancel_scope.cancel()
            for session in agent.sessions.values():
                for decision in session.permissions:
                    decision.settle(None, "closed", "the agent was closed")
                for question in session.elicitations:
                    question.cancel("closed", "the agent was closed")
    except BaseException as exc:
        if not started.done() and started.set_running_or_notify_cancel():
            started.set_exception(exc)
        raise
    finally:
        ended.set()


async def _ask_nobody(request: RequestPermissionRequest) -> str | None:
    """The notebook's permission handler: decisions come from cards, policies and cancels,
    all of which settle the decision directly. Until one does, the request stays pending."""
    await anyio.sleep_forever()
    return None  # pragma: no cover


CONNECT_TIMEOUT = 30.0  # seconds an agent gets to answer `initialize`


def open_agent(
    name: str,
    argv: Sequence[str],
    cwd: str,
    *,
    timeout: float | None = CONNECT_TIMEOUT,
    env: Mapping[str, str] | None = None,
) -> AgentHandle:
    """Launch and initialize an agent in the I/O thread.

    Raises `ConnectFailed` (with what ``connect`` raised and the connection's problems) when
    the agent cannot be started or initialized, or does not answer ``initialize`` within
    ``timeout`` seconds. If the wait is interrupted (KeyboardInterrupt), the agent is stopped
    before the interrupt goes on.
    """
    io = io_thread()
    env = dict(env or {})
    problems: list[str] = []
    started: concurrent.futures.Future[tuple[Agent, anyio.Event]] = concurrent.futures.Future()
    ended = threading.Event()
    done: concurrent.futures.Future[None] = io.submit(
        _hold_agent, list(argv), cwd, _ask_nobody, timeout, problems, started, ended, env
    )
    try:
        agent, stop = started.result()
    except BaseException as exc:
        if not isinstance(exc, Exception) or isinstance(exc, concurrent.futures.CancelledError):
            # Interrupted while waiting: cancel the connect and let it stop the agent.
            started.cancel()
            done.cancel()
            ended.wait(STOP_WAIT)
            raise
        ended.wait(STOP_WAIT)
        raise ConnectFailed(exc, problems) from exc
    handle = AgentHandle(name, list(argv), cwd, agent, io, stop, done)
    handle.env = env
    return handle


def settle_soon(
    io: IOThread, decision: PermissionDecision, option_id: str | None, by: Any, detail: str = ""
) -> None:
    """Settle a permission decision from any thread (a click arrives on the main thread)."""
    io.soon(decision.settle, option_id, by, detail)


_handles: dict[str, AgentHandle] = {}
_closed: dict[str, AgentHandle] = {}  # the last few closed agents, by name, oldest first
CLOSED_KEPT = 8


def handles() -> dict[str, AgentHandle]:
    """The open agents by name (an agent leaves when it is closed, not when it exits)."""
    return _handles


def closed_handles() -> dict[str, AgentHandle]:
    """The last few agents that were closed, by name, oldest first."""
    return _closed


def shutdown() -> None:
    """Kernel shutdown: every pending permission fails closed, every agent is closed."""
    for handle in list(_handles.values()):
        try:
            handle.close(timeout=10)
        except Exception:  # pragma: no cover - best effort at shutdown
            log.debug("closing %s failed", handle.name, exc_info=True)
    _handles.clear()
    _closed.clear()
    global _io
    if _io is not None:
        _io.stop()
        _io = None
