"""Asking the notebook whether an agent may do something, failing closed.

The client services that act on the kernel's machine for an agent (`_terminals`: run a command;
`_files`: read outside the session's folder, write a file) are given an ``approve`` callback by
whoever shows the request (a card, a ``--allow`` policy). `ask` awaits it and reads its answer
strictly: only the object ``True`` allows. ``False``, ``None``, any other value, an exception,
a timeout, and a cancellation raised by the callback itself all refuse. A cancellation of the
caller (the agent cancelled its request, the connection closed) is not swallowed: it propagates,
and the caller has done nothing yet, even when the callback swallowed it and answered anyway.

A refusal is answered to the agent as `refusal`: an `RpcError` with code `NOT_ALLOWED` and
``data`` naming the reason (``rejected``, ``timeout``, ``error``, ``cancelled``). ACP has no code
for "the user did not allow it"; -32001 sits in the server-error range next to ACP's own codes and
is unassigned in the v1 and v2 schemas. The message says in words what happened.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final, Literal, TypeVar

import anyio
import anyio.lowlevel

from .._connection._errors import RpcError

__all__ = ["NOT_ALLOWED", "Approve", "Verdict", "ask", "refusal"]

logger = logging.getLogger(__name__)

NOT_ALLOWED: Final = -32001

R = TypeVar("R")
Approve = Callable[[R], Awaitable[bool]]
Reason = Literal["allowed", "rejected", "timeout", "error", "cancelled"]


@dataclass(frozen=True)
class Verdict:
    """What `ask` read from the callback: ``allowed`` is True only for an explicit ``True``."""

    reason: Reason
    detail: str = ""

    @property
    def allowed(self) -> bool:
        return self.reason == "allowed"


def _caller_is_cancelled() -> bool:
    """Whether the cancellation that reached us is the caller's own.

    Under asyncio a callback can raise ``CancelledError`` without anyone cancelling us (it
    awaited a future someone else cancelled): that is a refusal, not our cancellation. On any
    other event loop a cancellation cannot be raised by hand, so it is always real."""
    try:
        task = asyncio.current_task()
    except RuntimeError:
        return True
    return task is None or task.cancelling() > 0


async def ask(approve: Approve[R], request: R, *, timeout: float | None = None) -> Verdict:
    """Await ``approve(request)`` and say whether it allowed, failing closed.

    ``timeout`` (seconds, None for none) bounds the wait; an answer that comes after the
    deadline (a callback that swallowed its cancellation) still refuses."""
    deadline = float("inf") if timeout is None else anyio.current_time() + timeout
    scope = anyio.CancelScope(deadline=deadline)
    try:
        with scope:
            answer = await approve(request)
    except anyio.get_cancelled_exc_class():
        if _caller_is_cancelled():
            raise
        return Verdict("cancelled", "the approval was cancelled")
    except Exception as exc:
        logger.warning("approval callback failed; refusing: %r", exc)
        return Verdict("error", f"the approval failed: {type(exc).__name__}")
    if scope.cancel_called:
        return Verdict("timeout", f"no approval within {timeout} s")
    # A callback can swallow the caller's cancellation and answer anyway: the caller, cancelled
    # (the agent withdrew its request), must not go on to act on that answer.
    await anyio.lowlevel.checkpoint_if_cancelled()
    if answer is True:
        return Verdict("allowed")
    return Verdict("rejected", "not allowed")


def refusal(what: str, verdict: Verdict) -> RpcError:
    """The error answered to the agent when ``what`` ("running 'ls'") was not allowed."""
    return RpcError(
        NOT_ALLOWED,
        f"{what} was not allowed ({verdict.detail or verdict.reason})",
        {"reason": verdict.reason},
    )
