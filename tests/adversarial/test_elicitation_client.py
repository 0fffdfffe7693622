"""Questions (``elicitation/create``) at the client API, against a real agent subprocess.

Every way a question can go unanswered or be answered badly is answered ``cancel``, and
content that does not match the requested schema never reaches the agent."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from _schema import assert_valid

import acp_notebook as acp
import acp_notebook._protocol as p
from acp_notebook._client._elicitation import ElicitationAnswer

AGENT = Path(__file__).parent / "agents" / "elicit_agent.py"

VALID = {
    "name": "Ada",
    "email": "ada@example.org",
    "homepage": "https://example.org/x",
    "start": "2026-12-01",
    "meeting": "2026-12-01T10:00:00Z",
    "ratio": 0.25,
    "count": 4,
    "public": False,
    "color": "red",
    "size": "l",
    "tags": ["a", "c"],
    "langs": ["py", "ts"],
    "future": "51.5,-0.1",
}


def received(work: Path) -> list[dict[str, Any]]:
    path = work / "received.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def answers(work: Path) -> list[dict[str, Any]]:
    """Our answers to the agent's requests (ids 100 and up), in order."""
    return [m for m in received(work) if "method" not in m and m.get("id", 0) >= 100]


async def wait_answered(work: Path, count: int = 1) -> list[dict[str, Any]]:
    with anyio.fail_after(10):
        while len(answers(work)) < count:
            await anyio.sleep(0.02)
    return answers(work)


async def run_turn(
    work: Path, mode: str = "ask", handler: Any = None, params: dict[str, Any] | None = None
) -> tuple[acp.Turn, list[dict[str, Any]]]:
    env = {"ELICIT_PARAMS": json.dumps(params)} if params is not None else None
    async with acp.connect(
        [sys.executable, str(AGENT), mode, str(work)], env=env, elicitation=handler
    ) as agent:
        session = await agent.new_session(work)
        turn = await session.prompt("go")
        found = await wait_answered(work)
        with anyio.fail_after(10):
            await turn.wait()
        return turn, found


def result(found: list[dict[str, Any]], index: int = 0) -> dict[str, Any]:
    body: dict[str, Any] = found[index]["result"]
    assert_valid("CreateElicitationResponse", body)
    return body


@pytest.mark.anyio
async def test_initialize_advertises_form_and_url(tmp_path: Path) -> None:
    await run_turn(tmp_path, handler=lambda r: "decline")
    init = next(m for m in received(tmp_path) if m.get("method") == "initialize")
    assert init["params"]["capabilities"]["elicitation"] == {"form": {}, "url": {}}


@pytest.mark.anyio
async def test_accept_with_every_field_type_reaches_the_agent(tmp_path: Path) -> None:
    seen: list[Any] = []

    def handler(request: Any) -> dict[str, Any]:
        seen.append(request)
        return VALID

    turn, found = await run_turn(tmp_path, handler=handler)
    assert result(found) == {"action": "accept", "content": VALID}
    assert isinstance(seen[0], p.FormElicitationRequest)
    props = seen[0].requested_schema.properties
    assert isinstance(props["future"], p.UnknownPropertySchema)
    assert isinstance(props["langs"], p.MultiSelectPropertySchema)
    [decision] = turn.elicitations
    assert (decision.action, decision.decided_by, decision.content) == ("accept", "handler", VALID)
    assert "answer: " + json.dumps({"action": "accept", "content": VALID}) in turn.text


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("answer", "action", "by"),
    [
        ("decline", "decline", "handler"),
        ("cancel", "cancel", "handler"),
        (None, "cancel", "handler"),
    ],
)
async def test_decline_and_cancel(tmp_path: Path, answer: Any, action: str, by: str) -> None:
    turn, found = await run_turn(tmp_path, handler=lambda r: answer)
    assert result(found) == {"action": action}
    assert (turn.elicitations[0].action, turn.elicitations[0].decided_by) == (action, by)


INVALID = [
    ({**VALID, "count": 11}, "count"),  # above maximum
    ({**VALID, "count": 2.5}, "count"),  # not an integer
    ({**VALID, "count": True}, "count"),  # a bool is not an integer
    ({**VALID, "ratio": -0.1}, "ratio"),
    ({**VALID, "name": "A"}, "name"),  # minLength
    ({**VALID, "name": 5}, "name"),
    ({**VALID, "email": "not-an-email"}, "email"),
    ({**VALID, "homepage": "example.org"}, "homepage"),
    ({**VALID, "start": "2026-13-01"}, "start"),
    ({**VALID, "meeting": "tomorrow"}, "meeting"),
    ({**VALID, "public": "yes"}, "public"),
    ({**VALID, "color": "blue"}, "color"),
    ({**VALID, "size": "Large"}, "size"),  # the title, not the const
    ({**VALID, "tags": ["a", "b", "c"]}, "tags"),  # maxItems
    ({**VALID, "tags": ["z"]}, "tags"),
    ({**VALID, "langs": "py"}, "langs"),
    ({k: v for k, v in VALID.items() if k != "size"}, "size"),  # required
    ({**VALID, "extra": 1}, "extra"),  # not asked for
]


@pytest.mark.anyio
@pytest.mark.parametrize(("content", "field"), INVALID, ids=[f for _, f in INVALID])
async def test_invalid_handler_answer_is_cancel_never_sent(
    tmp_path: Path, content: dict[str, Any], field: str
) -> None:
    turn, found = await run_turn(tmp_path, handler=lambda r: content)
    assert result(found) == {"action": "cancel"}
    [decision] = turn.elicitations
    assert decision.decided_by == "invalid"
    assert field in decision.errors
    assert decision.content is None


@pytest.mark.anyio
async def test_handler_that_raises_or_returns_junk(tmp_path: Path) -> None:
    def boom(request: Any) -> Any:
        raise RuntimeError("broken")

    turn, found = await run_turn(tmp_path, handler=boom)
    assert result(found) == {"action": "cancel"}
    assert turn.elicitations[0].decided_by == "error"
    work = tmp_path / "junk"
    work.mkdir()
    turn, found = await run_turn(work, handler=lambda r: 42)
    assert result(found) == {"action": "cancel"}
    assert turn.elicitations[0].decided_by == "invalid"


@pytest.mark.anyio
async def test_no_handler_answers_cancel(tmp_path: Path) -> None:
    turn, found = await run_turn(tmp_path)
    assert result(found) == {"action": "cancel"}
    assert turn.elicitations[0].decided_by == "no-handler"


def _never_asked(calls: list[Any]) -> Any:
    def handler(request: Any) -> dict[str, Any]:
        calls.append(request)
        return VALID

    return handler


@pytest.mark.anyio
async def test_question_after_session_cancel_is_cancel(tmp_path: Path) -> None:
    calls: list[Any] = []
    async with acp.connect(
        [sys.executable, str(AGENT), "ask_after_cancel", str(tmp_path)],
        elicitation=_never_asked(calls),
    ) as agent:
        session = await agent.new_session(tmp_path)
        turn = await session.prompt("go")
        await session.cancel()
        found = await wait_answered(tmp_path)
        with anyio.fail_after(10):
            await turn.wait()
    assert result(found) == {"action": "cancel"}
    assert calls == []
    assert turn.elicitations[0].detail == "the turn was cancelled"


@pytest.mark.anyio
async def test_question_after_idle_is_cancel(tmp_path: Path) -> None:
    calls: list[Any] = []
    async with acp.connect(
        [sys.executable, str(AGENT), "ask_after_idle", str(tmp_path)],
        elicitation=_never_asked(calls),
    ) as agent:
        session = await agent.new_session(tmp_path)
        turn = await session.prompt("go")
        with anyio.fail_after(10):
            await turn.wait()
        found = await wait_answered(tmp_path)
    assert result(found) == {"action": "cancel"}
    assert calls == []
    assert session.elicitations[0].detail == "the turn ended"


@pytest.mark.anyio
async def test_pending_question_is_cancelled_by_session_cancel(tmp_path: Path) -> None:
    release = threading.Event()

    def slow(request: Any) -> dict[str, Any]:
        release.wait(10)
        return VALID

    try:
        async with acp.connect(
            [sys.executable, str(AGENT), "ask", str(tmp_path)], elicitation=slow
        ) as agent:
            session = await agent.new_session(tmp_path)
            turn = await session.prompt("go")
            with anyio.fail_after(10):
                while not session.elicitations:
                    await anyio.sleep(0.02)
            await session.cancel()
            found = await wait_answered(tmp_path)
            with anyio.fail_after(10):
                await turn.wait()
    finally:
        release.set()
    assert result(found) == {"action": "cancel"}
    assert turn.stop_reason == "cancelled"
    assert turn.elicitations[0].decided_by == "cancel"


@pytest.mark.anyio
async def test_a_sessions_asker_answers_instead_of_the_handler(tmp_path: Path) -> None:
    calls: list[Any] = []

    async def asker(decision: Any) -> Any:
        return ElicitationAnswer("decline", None, "click")

    async with acp.connect(
        [sys.executable, str(AGENT), "ask", str(tmp_path)], elicitation=_never_asked(calls)
    ) as agent:
        session = await agent.new_session(tmp_path)
        session.ask_elicitations(asker)
        turn = await session.prompt("go")
        found = await wait_answered(tmp_path)
        with anyio.fail_after(10):
            await turn.wait()
    assert result(found) == {"action": "decline"}
    assert calls == []
    assert turn.elicitations[0].decided_by == "click"


URL = {
    "mode": "url",
    "message": "Sign in",
    "elicitationId": "el-1",
    "url": "https://login.example.org/device?code=1",
}


@pytest.mark.anyio
async def test_url_accept_and_complete(tmp_path: Path) -> None:
    turn, found = await run_turn(tmp_path, "url_complete", lambda r: "accept", URL)
    assert result(found) == {"action": "accept"}
    [decision] = turn.elicitations
    assert isinstance(decision.request, p.UrlElicitationRequest)
    with anyio.fail_after(5):
        while not decision.completed:
            await anyio.sleep(0.02)


@pytest.mark.anyio
async def test_url_with_content_is_sent_without_it(tmp_path: Path) -> None:
    _turn, found = await run_turn(tmp_path, "ask", lambda r: {"x": 1}, URL)
    assert result(found) == {"action": "accept"}


@pytest.mark.anyio
async def test_unknown_mode_is_cancel(tmp_path: Path) -> None:
    params = {"mode": "_telepathy", "message": "think of a number"}
    turn, found = await run_turn(tmp_path, "ask", lambda r: "accept", params)
    assert result(found) == {"action": "cancel"}
    assert turn.elicitations[0].decided_by == "invalid"
