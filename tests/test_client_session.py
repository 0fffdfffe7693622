"""``Session`` (acp_notebook/_client/_session.py): its one fail-closed sweep, seen from the agent's
side: a pending permission request is answered ``cancelled`` at a cancel, after the turn's idle,
and when the turn ends unanswered (an in-memory scripted agent, ``tests/test_client.py``'s)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

import acp_notebook as acp
from tests.test_client import answers_after_one_turn, fake_agent, permission_answers, sent


@pytest.mark.anyio
async def test_cancel_answers_pending_permission_cancelled(tmp_path: Path) -> None:
    asked = anyio.Event()

    async def never(request: acp.RequestPermissionRequest) -> str | None:
        asked.set()
        await anyio.sleep_forever()
        return "ok"  # pragma: no cover

    async with fake_agent("permission", tmp_path, never) as (agent, log):
        session = await agent.new_session(cwd=tmp_path)
        turn = await session.prompt("go")
        with anyio.fail_after(10):
            await asked.wait()
        await session.cancel()
        await turn.wait()
        assert permission_answers(log) == [{"outcome": {"outcome": "cancelled"}}]
        assert session.permissions[0].decided_by == "cancel"
        # The protocol's order: the session/cancel first, then the pending request's answer.
        order = [m.get("method") or ("answer" if "result" in m else "") for m in sent(log)]
        assert order.index("session/cancel") < order.index("answer"), order


@pytest.mark.anyio
async def test_a_permission_asked_after_the_turn_ended_is_cancelled_at_once(
    tmp_path: Path,
) -> None:
    asked: list[acp.RequestPermissionRequest] = []

    async def allow(request: acp.RequestPermissionRequest) -> str | None:
        asked.append(request)
        return "ok"

    async with fake_agent("idle_then_permission", tmp_path, allow) as (agent, log):
        session = await agent.new_session(cwd=tmp_path)
        answers = await answers_after_one_turn(session, log)
        decision = session.permissions[0]
    assert answers == [{"outcome": {"outcome": "cancelled"}}]
    assert asked == []  # no handler was asked to allow something no turn is waiting for
    assert (decision.decided_by, decision.detail) == ("cancel", "the turn ended")


@pytest.mark.anyio
async def test_turn_end_answers_unanswered_permission_cancelled(tmp_path: Path) -> None:
    async def never(request: acp.RequestPermissionRequest) -> str | None:
        await anyio.sleep_forever()
        return "ok"  # pragma: no cover

    async with fake_agent("permission_then_idle", tmp_path, never) as (agent, log):
        session = await agent.new_session(cwd=tmp_path)
        assert await answers_after_one_turn(session, log) == [{"outcome": {"outcome": "cancelled"}}]
