"""The fail-closed matrix, at the client API: each row is a way a permission request can go
unanswered or be answered badly. For every row we check what the agent was answered and that
nothing ran (the hostile agent creates a ``PWNED-*`` file whenever it gets an allow)."""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

import acp_notebook as acp

HOSTILE = Path(__file__).parent / "agents" / "hostile.py"


def received(work: Path) -> list[dict[str, Any]]:
    path = work / "received.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def answers(work: Path) -> list[dict[str, Any]]:
    """Our answers to the agent's permission requests (ids 100 and up), in order."""
    return [m for m in received(work) if "method" not in m and m.get("id", 0) >= 100]


def pwned(work: Path) -> list[str]:
    return sorted(p.name for p in work.glob("PWNED-*"))


async def wait_answered(work: Path, count: int = 1) -> list[dict[str, Any]]:
    with anyio.fail_after(10):
        while len(answers(work)) < count:
            await anyio.sleep(0.02)
    return answers(work)


def allow_first(request: Any) -> str:
    """A permission handler that allows whatever it sees (the worst possible handler)."""
    return next(o.option_id for o in request.options if o.kind.startswith("allow"))


Scenario = Callable[[acp.Session, Path], Awaitable[None]]


async def _prompt_and_wait(session: acp.Session, work: Path) -> None:
    turn = await session.prompt("go")
    await wait_answered(work)
    with anyio.fail_after(10):
        await turn.wait()


async def _cancel_then_wait(session: acp.Session, work: Path) -> None:
    turn = await session.prompt("go")
    with anyio.fail_after(10):  # the agent has read the prompt: the cancel reaches its turn
        while not any(m.get("method") == "session/prompt" for m in received(work)):
            await anyio.sleep(0.02)
    await session.cancel()
    await wait_answered(work)
    with anyio.fail_after(10):
        await turn.wait()


@dataclass(frozen=True)
class Row:
    name: str
    mode: str
    handler: Any
    scenario: Scenario
    decided_by: str
    handler_called: bool


CALLS: list[str] = []


def recording(handler: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def wrapped(request: Any) -> Any:
        CALLS.append(request.title)
        return handler(request)

    return wrapped


def raising(request: Any) -> str:
    raise RuntimeError("the handler broke")


ROWS = [
    Row(
        "request after session/cancel",
        "ask_after_cancel",
        recording(allow_first),
        _cancel_then_wait,
        "cancel",
        handler_called=False,
    ),
    Row(
        "duplicate option ids",
        "duplicate_ids",
        recording(allow_first),
        _prompt_and_wait,
        "invalid",
        handler_called=False,
    ),
    Row(
        "handler raises",
        "ask_then_wait",
        recording(raising),
        _prompt_and_wait,
        "error",
        handler_called=True,
    ),
    Row(
        "handler answers an id not offered",
        "ask_then_wait",
        recording(lambda r: "nope"),
        _prompt_and_wait,
        "invalid",
        handler_called=True,
    ),
    Row(
        "handler answers nothing",
        "ask_then_wait",
        recording(lambda r: None),
        _prompt_and_wait,
        "handler",
        handler_called=True,
    ),
    Row("no handler", "ask_then_wait", None, _prompt_and_wait, "no-handler", handler_called=False),
]


@pytest.mark.anyio
@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
async def test_fail_closed_matrix(row: Row, tmp_path: Path) -> None:
    CALLS.clear()
    async with acp.connect(
        [sys.executable, str(HOSTILE), row.mode, str(tmp_path)],
        cwd=tmp_path,
        permission=row.handler,
    ) as agent:
        session = await agent.new_session(cwd=tmp_path)
        await row.scenario(session, tmp_path)
        decisions = session.permissions
    [answer] = answers(tmp_path)
    assert answer["result"] == {"outcome": {"outcome": "cancelled"}}
    assert pwned(tmp_path) == []
    assert [d.decided_by for d in decisions] == [row.decided_by]
    assert bool(CALLS) is row.handler_called


@pytest.mark.anyio
async def test_request_after_cancel_is_answered_before_any_asker_sees_it(
    tmp_path: Path,
) -> None:
    """A session's asker (a cell run, which would allow) is never asked: the request is
    settled already."""
    seen: list[tuple[bool, str | None]] = []
    async with acp.connect(
        [sys.executable, str(HOSTILE), "ask_after_cancel", str(tmp_path)], cwd=tmp_path
    ) as agent:
        session = await agent.new_session(cwd=tmp_path)

        async def asker(decision: Any) -> Any:
            seen.append((decision.pending, decision.decided_by))
            return acp.Answer("ok", "policy", "--allow '*'")  # must never be asked

        session.ask_permissions(asker)
        await _cancel_then_wait(session, tmp_path)
        [decision] = session.permissions
    assert seen == []
    assert decision.option_id is None and decision.decided_by == "cancel"
    assert answers(tmp_path)[0]["result"] == {"outcome": {"outcome": "cancelled"}}
    assert pwned(tmp_path) == []


@pytest.mark.anyio
async def test_a_cancel_sent_on_the_raw_connection_counts_too(tmp_path: Path) -> None:
    """Whatever sends ``session/cancel`` through the agent, the turn approves nothing more."""
    async with acp.connect(
        [sys.executable, str(HOSTILE), "ask_after_cancel", str(tmp_path)],
        cwd=tmp_path,
        permission=allow_first,
    ) as agent:
        session = await agent.new_session(cwd=tmp_path)
        turn = await session.prompt("go")
        await agent._notify("session/cancel", {"sessionId": session.id})
        await wait_answered(tmp_path)
        with anyio.fail_after(10):
            await turn.wait()
    assert answers(tmp_path)[0]["result"] == {"outcome": {"outcome": "cancelled"}}
    assert pwned(tmp_path) == []


@pytest.mark.anyio
async def test_a_new_turn_after_a_cancelled_one_can_be_allowed(tmp_path: Path) -> None:
    """The cancel covers its own turn only (negative control for the rows above)."""
    async with acp.connect(
        [sys.executable, str(HOSTILE), "ask_then_wait", str(tmp_path)],
        cwd=tmp_path,
        permission=allow_first,
    ) as agent:
        session = await agent.new_session(cwd=tmp_path)
        first = session.start_turn("one")
        await first.send()
        await wait_answered(tmp_path)
        await session.cancel()
        with anyio.fail_after(10):
            await first.wait()
        assert pwned(tmp_path) == ["PWNED-1"]  # the first request came before the cancel
    assert answers(tmp_path)[0]["result"]["outcome"]["outcome"] == "selected"
