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
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
from anyio.from_thread import BlockingPortal, start_blocking_portal

from ._client import Agent, Session, connect
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

    @property
    def alive(self) -> bool:
        proc = self.agent.process
        return not self._done.done() and (proc is None or proc.returncode is None)

    def close(self, timeout: float = 15.0) -> None:
        """Close every session's pending decisions (fail closed) and shut the agent down."""
        if self._done.done():
            return
        self.io.soon(self._stop.set)
        try:
            self._done.result(timeout)
        except Exception as exc:  # the agent may already have died; closing still succeeded
            log.debug("agent %s closed with %r", self.name, exc)


async def _hold_agent(
    argv: Sequence[str],
    cwd: str,
    permission: Callable[[RequestPermissionRequest], Awaitable[str | None]],
    *,
    task_status: anyio.abc.TaskStatus[tuple[Agent, anyio.Event]],
) -> None:
    stop = anyio.Event()
    async with connect(argv, cwd=cwd, permission=permission) as agent:
        task_status.started((agent, stop))
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


async def _ask_nobody(request: RequestPermissionRequest) -> str | None:
    """The notebook's permission handler: decisions come from cards, policies and cancels,
    all of which settle the decision directly. Until one does, the request stays pending."""
    await anyio.sleep_forever()
    return None  # pragma: no cover


def open_agent(name: str, argv: Sequence[str], cwd: str) -> AgentHandle:
    """Launch and initialize an agent in the I/O thread; raise what ``connect`` raised."""
    io = io_thread()
    done: concurrent.futures.Future[None]
    done, (agent, stop) = io.portal.start_task(_hold_agent, list(argv), cwd, _ask_nobody)
    return AgentHandle(name, list(argv), cwd, agent, io, stop, done)


def settle_soon(
    io: IOThread, decision: PermissionDecision, option_id: str | None, by: Any, detail: str = ""
) -> None:
    """Settle a permission decision from any thread (a click arrives on the main thread)."""
    io.soon(decision.settle, option_id, by, detail)


_handles: dict[str, AgentHandle] = {}


def handles() -> dict[str, AgentHandle]:
    return _handles


def shutdown() -> None:
    """Kernel shutdown: every pending permission fails closed, every agent is closed."""
    for handle in list(_handles.values()):
        try:
            handle.close(timeout=10)
        except Exception:  # pragma: no cover - best effort at shutdown
            log.debug("closing %s failed", handle.name, exc_info=True)
    _handles.clear()
    global _io
    if _io is not None:
        _io.stop()
        _io = None
