"""`_approval.ask`: only an explicit True allows; everything else refuses, and the caller's own
cancellation is never swallowed."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import anyio
import pytest

from acp_notebook._client._approval import NOT_ALLOWED, Verdict, ask, refusal

pytestmark = pytest.mark.anyio


def answering(value: object) -> Callable[[str], Awaitable[bool]]:
    async def approve(request: str) -> bool:
        return value  # type: ignore[return-value]

    return approve


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (True, "allowed"),
        (False, "rejected"),
        (None, "rejected"),
        (1, "rejected"),
        ("yes", "rejected"),
        ([True], "rejected"),
    ],
)
async def test_only_the_object_true_allows(value: object, reason: str) -> None:
    verdict = await ask(answering(value), "req")
    assert verdict.reason == reason
    assert verdict.allowed is (reason == "allowed")


async def test_a_callback_that_raises_refuses() -> None:
    async def approve(request: str) -> bool:
        raise RuntimeError("card broke")

    assert (await ask(approve, "req")).reason == "error"


async def test_a_callback_that_is_not_async_refuses() -> None:
    def approve(request: str) -> bool:
        return True

    assert (await ask(approve, "req")).reason == "error"  # type: ignore[arg-type]


async def test_a_timeout_refuses_even_if_the_callback_then_says_true() -> None:
    async def never(request: str) -> bool:
        await anyio.sleep_forever()
        return True

    async def stubborn(request: str) -> bool:
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            pass  # swallows its cancellation and "allows"
        return True

    assert (await ask(never, "req", timeout=0.05)).reason == "timeout"
    assert (await ask(stubborn, "req", timeout=0.05)).reason == "timeout"
    assert (await ask(answering(True), "req", timeout=5)).reason == "allowed"


async def test_a_cancellation_raised_by_the_callback_refuses() -> None:
    async def approve(request: str) -> bool:
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        future.cancel()
        return await future  # CancelledError, though nobody cancelled us

    assert (await ask(approve, "req")).reason == "cancelled"


async def test_the_callers_cancellation_propagates() -> None:
    reached_end = False

    async def never(request: str) -> bool:
        await anyio.sleep_forever()
        return True

    with anyio.move_on_after(0.05) as scope:
        await ask(never, "req")
        reached_end = True
    assert scope.cancelled_caught and not reached_end


def test_a_refusal_says_why_in_fields() -> None:
    error = refusal("running 'ls'", Verdict("timeout", "no approval within 3 s"))
    assert error.code == NOT_ALLOWED == -32001
    assert error.data == {"reason": "timeout"}
    assert error.message == "running 'ls' was not allowed (no approval within 3 s)"


async def test_an_allow_after_the_caller_was_cancelled_does_not_count() -> None:
    """A callback that swallows the caller's cancellation and then says True (found by the
    fail-closed matrix: the command ran though the agent had cancelled its request)."""
    verdicts: list[Verdict] = []

    async def stubborn(request: str) -> bool:
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            pass
        return True

    with anyio.move_on_after(0.05) as scope:
        verdicts.append(await ask(stubborn, "req"))
    assert scope.cancelled_caught
    assert verdicts == []
