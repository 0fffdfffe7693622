"""The async client API against scripted agents: in memory (`connect_streams` to `FakePeer`)
where the process is not the point, a real subprocess (tests/fakes/client_peer.py) where it is."""

from __future__ import annotations

import base64
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from anyio.abc import TaskGroup

import acp_notebook as acp
from acp_notebook import _protocol as acp_protocol
from acp_notebook._connection._errors import MethodNotFound
from acp_notebook._connection._jsonrpc import Connection, Problem
from acp_notebook._connection._lines import memory_byte_pipe
from tests._memory import scripted_agent
from tests._schema import assert_client_traffic_valid

PEER = Path(__file__).parent / "fakes" / "client_peer.py"  # for what needs a process (a crash)

OPTIONS = [
    {"optionId": "ok", "name": "Allow", "kind": "allow_once"},
    {"optionId": "no", "name": "Reject", "kind": "reject_once"},
]


class FakePeer:
    """A scripted agent in memory: a bare `Connection` answering our client by ``mode``.

    ``received`` is every message our client sent it, in order (split out of batches);
    ``asked`` the ids of the requests it sent, with their methods.
    """

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.received: list[dict[str, Any]] = []
        self.asked: dict[Any, str] = {}
        self.conn: Connection
        self.tasks: TaskGroup

    def observe(self, direction: str, message: Any) -> None:
        for one in message if isinstance(message, list) else [message]:
            if direction == "recv":
                self.received.append(one)
            elif "method" in one and "id" in one:
                self.asked[one["id"]] = one["method"]

    async def update(self, session_id: str, body: dict[str, Any]) -> None:
        await self.conn.notify("session/update", {"sessionId": session_id, "update": body})

    async def handle(self, method: str, params: Any) -> Any:
        mode = self.mode
        if method == "initialize":
            if mode == "v1":
                return {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}
            if mode == "claims2":
                return {
                    "protocolVersion": 2,
                    "agentCapabilities": {"loadSession": True},
                    "agentInfo": {"name": "old", "version": "1"},
                }
            if mode == "reject":
                raise acp.RpcError(
                    -32022, "Unsupported protocol version", {"requested": 2, "supported": [1]}
                )
            result: dict[str, Any] = {
                "protocolVersion": 2,
                "info": {"name": "fake", "version": "9"},
                "capabilities": {"session": {}},
            }
            if mode == "auth":
                result["authMethods"] = [{"type": "agent", "methodId": "token", "name": "Token"}]
            return result
        if method == "session/new":
            if mode == "auth":
                raise acp.RpcError(-32000, "Authentication required")
            if mode == "update_around_new":  # one before the answer, one right behind it
                await self.commands("early")
                self.tasks.start_soon(self.commands, "right-behind")
            return {"sessionId": "s1"}
        if method == "session/prompt":
            self.tasks.start_soon(self.turn, params["sessionId"], params["prompt"])
            return {} if mode == "empty_ack" else {"messageId": "u1"}
        raise MethodNotFound(method)

    async def commands(self, name: str) -> None:
        commands = [{"type": "command", "name": name, "description": "d"}]
        await self.update(
            "s1", {"sessionUpdate": "available_commands_update", "availableCommands": commands}
        )

    async def turn(self, session_id: str, prompt: list[Any]) -> None:
        mode = self.mode
        await self.update(
            session_id, {"sessionUpdate": "user_message", "messageId": "u1", "content": prompt}
        )
        await self.update(session_id, {"sessionUpdate": "state_update", "state": "running"})
        text = {"type": "text", "text": "working"}
        await self.update(
            session_id, {"sessionUpdate": "agent_message_chunk", "messageId": "a1", "content": text}
        )
        if mode == "custom":
            progress = {"sessionUpdate": "_acme_progress", "percent": 40, "extra": {"a": [1]}}
            await self.update(session_id, progress)
            malformed = {"sessionUpdate": "terminal_output_chunk", "terminalId": "t"}  # no data
            await self.update(session_id, malformed)
        ask = {
            "sessionId": session_id,
            "title": "Run `make`?",
            "subject": {"type": "command", "command": "make", "cwd": "/tmp"},
            "options": OPTIONS,
        }
        if mode in ("permission", "permission_then_idle"):
            await self.update(
                session_id, {"sessionUpdate": "state_update", "state": "requires_action"}
            )
            if mode == "permission":
                await self.conn.request("session/request_permission", ask)
            else:  # the turn ends before anyone answers
                self.tasks.start_soon(self.conn.request, "session/request_permission", ask)
                await anyio.sleep(0)
            await self.update(session_id, {"sessionUpdate": "state_update", "state": "running"})
        idle = {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}
        await self.update(session_id, idle)
        if mode == "idle_then_permission":  # asks when no turn is running any more
            late = {**ask, "title": "Run `late`?"}
            self.tasks.start_soon(self.conn.request, "session/request_permission", late)


@asynccontextmanager
async def fake_agent(
    mode: str | FakePeer,
    tmp_path: Path,
    permission: acp.PermissionHandler | None = None,
    protocol: Any = "auto",
) -> AsyncIterator[tuple[acp.Agent, FakePeer]]:
    peer = mode if isinstance(mode, FakePeer) else FakePeer(mode)
    client_send, peer_receive = memory_byte_pipe(64)
    peer_send, client_receive = memory_byte_pipe(64)
    peer.conn = Connection(peer_receive, peer_send, name="client", request_handler=peer.handle)
    peer.conn.observe(peer.observe)
    try:
        async with peer.conn, anyio.create_task_group() as tasks:
            peer.tasks = tasks
            try:
                async with acp.connect_streams(
                    client_receive, client_send, permission=permission, protocol=protocol
                ) as agent:
                    yield agent, peer
            finally:
                tasks.cancel_scope.cancel()
    except BaseExceptionGroup as group:  # the peer's task group wraps what the client raised
        if len(group.exceptions) != 1:
            raise
        raise group.exceptions[0] from None
    assert_client_traffic_valid(peer.received, peer.asked)


def sent(peer: FakePeer) -> list[dict[str, Any]]:
    """What our client sent to the fake agent, in order."""
    return peer.received


def permission_answers(peer: FakePeer) -> list[dict[str, Any]]:
    return [m["result"] for m in sent(peer) if "result" in m]


async def answers_after_one_turn(session: acp.Session, peer: FakePeer) -> list[dict[str, Any]]:
    """Prompt, wait for the turn to end and for our answer to a permission request."""
    turn = await session.prompt("go")
    await turn.wait()
    with anyio.fail_after(10):
        while not permission_answers(peer):
            await anyio.sleep(0.01)
    return permission_answers(peer)


@pytest.mark.anyio
async def test_initialize_then_prompt_turn(tmp_path: Path) -> None:
    async with fake_agent("plain", tmp_path) as (agent, log):
        assert agent.info is not None and agent.info.name == "fake"
        assert agent.capabilities is not None
        session = await agent.new_session(cwd=tmp_path)
        turn = await session.prompt("hello")
        assert turn.message_id == "u1"
        kinds = [u.session_update async for u in turn.updates()]
        assert await turn.wait() == "end_turn"
        assert kinds[0] == "user_message" and kinds[-1] == "state_update"
        assert turn.text == "working"
        methods = [m.get("method") for m in sent(log)]
        assert methods == ["initialize", "session/new", "session/prompt"]
        first = sent(log)[0]["params"]
        assert first["protocolVersion"] == 2 and first["info"]["name"] == "acp_notebook"


@pytest.mark.anyio
async def test_empty_prompt_ack_is_accepted(tmp_path: Path) -> None:
    async with fake_agent("empty_ack", tmp_path) as (agent, _):
        session = await agent.new_session(cwd=tmp_path)
        turn = await session.prompt("hello")
        assert turn.message_id is None
        assert await turn.wait() == "end_turn"


@pytest.mark.anyio
async def test_second_prompt_in_flight_raises_before_sending(tmp_path: Path) -> None:
    release = anyio.Event()

    async def slow(request: acp.RequestPermissionRequest) -> str | None:
        await release.wait()
        return "no"

    async with fake_agent("permission", tmp_path, slow) as (agent, log):
        session = await agent.new_session(cwd=tmp_path)
        turn = await session.prompt("one")
        with pytest.raises(acp.TurnInProgress):
            await session.prompt("two")
        assert [m.get("method") for m in sent(log)].count("session/prompt") == 1
        release.set()
        assert await turn.wait() == "end_turn"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("mode", "needle"),
    [
        ("v1", "protocol version 1"),
        ("claims2", "v1"),
        ("reject", "supports [1]"),
    ],
)
async def test_non_v2_agents_are_refused(tmp_path: Path, mode: str, needle: str) -> None:
    # (with protocol="auto" these speak v1: tests/test_client_v1.py)
    peer = FakePeer(mode)
    with pytest.raises(acp.UnsupportedProtocolVersion) as info:
        async with fake_agent(peer, tmp_path, protocol=2):
            pytest.fail("a non-v2 agent was accepted")
    assert needle in str(info.value)
    # Nothing is sent after a failed initialize.
    assert [m.get("method") for m in sent(peer)] == ["initialize"]


@pytest.mark.anyio
async def test_claims_two_speaks_one_keeps_what_it_said(tmp_path: Path) -> None:
    with pytest.raises(acp.UnsupportedProtocolVersion) as info:
        async with fake_agent("claims2", tmp_path, protocol=2):
            pytest.fail("a v1 body was accepted")
    assert info.value.answered["agentInfo"]["name"] == "old"


@pytest.mark.anyio
async def test_authentication_required_names_methods(tmp_path: Path) -> None:
    async with fake_agent("auth", tmp_path) as (agent, _):
        assert [m.to_wire()["methodId"] for m in agent.auth_methods] == ["token"]
        with pytest.raises(acp.AuthenticationRequired) as info:
            await agent.new_session(cwd=tmp_path)
        assert "token" in str(info.value)


@pytest.mark.anyio
@pytest.mark.process
async def test_agent_crash_mid_turn_fails_turn_with_stderr_tail(tmp_path: Path) -> None:
    async with acp.connect([sys.executable, str(PEER)], cwd=tmp_path) as agent:
        session = await agent.new_session(cwd=tmp_path)
        turn = await session.prompt("go")
        with pytest.raises(acp.AgentExited) as info:
            await turn.wait()
        assert "fell over" in str(info.value)
        assert "7" in str(info.value)
        # What arrived before the crash is kept.
        assert turn.text == "working"
        with pytest.raises(acp.AgentExited):
            await agent.new_session(cwd=tmp_path)


@pytest.mark.anyio
async def test_custom_update_kept_and_malformed_update_reported(tmp_path: Path) -> None:
    async with fake_agent("custom", tmp_path) as (agent, _):
        session = await agent.new_session(cwd=tmp_path)
        turn = await session.prompt("go")
        updates = [u async for u in turn.updates()]
        custom = [u for u in updates if u.session_update == "_acme_progress"]
        assert len(custom) == 1
        assert custom[0].raw == {
            "sessionUpdate": "_acme_progress",
            "percent": 40,
            "extra": {"a": [1]},
        }
        assert any("data" in problem for problem in session.problems)
        assert await turn.wait() == "end_turn"


# -- permission handling fails closed ---------------------------------------------------------


def _raises(request: acp.RequestPermissionRequest) -> str | None:
    raise RuntimeError("handler bug")


HANDLERS: dict[str, tuple[Callable[..., Any], dict[str, Any], str]] = {
    "sync allow": (lambda r: "ok", {"outcome": "selected", "optionId": "ok"}, "handler"),
    "sync reject": (lambda r: "no", {"outcome": "selected", "optionId": "no"}, "handler"),
    "returns None": (lambda r: None, {"outcome": "cancelled"}, "handler"),
    "raises": (_raises, {"outcome": "cancelled"}, "error"),
    "not offered": (lambda r: "yes-please", {"outcome": "cancelled"}, "invalid"),
    "not a string": (lambda r: 1, {"outcome": "cancelled"}, "invalid"),
}


@pytest.mark.anyio
@pytest.mark.parametrize("case", list(HANDLERS))
async def test_permission_handler_paths(tmp_path: Path, case: str) -> None:
    handler, outcome, decided_by = HANDLERS[case]
    async with fake_agent("permission", tmp_path, handler) as (agent, log):
        session = await agent.new_session(cwd=tmp_path)
        turn = await session.prompt("go")
        assert await turn.wait() == "end_turn"
        assert permission_answers(log) == [{"outcome": outcome}]
        (decision,) = session.permissions
        assert decision.decided_by == decided_by
        assert decision.request.subject is not None
        assert decision.request.subject.command == "make"  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_async_handler_allow(tmp_path: Path) -> None:
    async def handler(request: acp.RequestPermissionRequest) -> str | None:
        await anyio.sleep(0)
        return request.options[0].option_id

    async with fake_agent("permission", tmp_path, handler) as (agent, log):
        session = await agent.new_session(cwd=tmp_path)
        turn = await session.prompt("go")
        await turn.wait()
        assert permission_answers(log) == [{"outcome": {"outcome": "selected", "optionId": "ok"}}]


@pytest.mark.anyio
async def test_no_handler_means_cancelled(tmp_path: Path) -> None:
    async with fake_agent("permission", tmp_path, None) as (agent, log):
        session = await agent.new_session(cwd=tmp_path)
        turn = await session.prompt("go")
        await turn.wait()
        assert permission_answers(log) == [{"outcome": {"outcome": "cancelled"}}]


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
async def test_updates_sent_right_behind_the_session_new_answer_are_kept(
    tmp_path: Path,
) -> None:
    async with fake_agent("update_around_new", tmp_path) as (agent, _log):
        session = await agent.new_session(cwd=tmp_path)
        first = [c.name for c in session.state.available_commands]  # sent before the answer
        with anyio.fail_after(10):
            while [c.name for c in session.state.available_commands] != ["right-behind"]:
                await anyio.sleep(0.01)
        problems = list(agent.problems)
    assert first in (["early"], ["right-behind"])  # held and applied, never lost
    assert problems == []


@pytest.mark.anyio
async def test_turn_end_answers_unanswered_permission_cancelled(tmp_path: Path) -> None:
    async def never(request: acp.RequestPermissionRequest) -> str | None:
        await anyio.sleep_forever()
        return "ok"  # pragma: no cover

    async with fake_agent("permission_then_idle", tmp_path, never) as (agent, log):
        session = await agent.new_session(cwd=tmp_path)
        assert await answers_after_one_turn(session, log) == [{"outcome": {"outcome": "cancelled"}}]


# -- a turn does not keep every update (issue 10, finding 3) ---------------------------------


def _offline_session() -> acp.Session:
    """A session fed by hand (``_apply``), no agent behind it."""
    from acp_notebook._client._agent import Session

    return Session(cast(Any, None), "s1", "/")


def _update(body: dict[str, Any]) -> Any:
    return acp_protocol.parse_session_update(body)


def _chunk(terminal_id: str, size: int) -> Any:
    data = base64.b64encode(b"x" * size).decode()
    return _update(
        {"sessionUpdate": "terminal_output_chunk", "terminalId": terminal_id, "data": data}
    )


def test_update_buffer_drops_the_oldest_bulk_first_and_keeps_the_order() -> None:
    from acp_notebook._client._replay import UpdateBuffer

    buffer = UpdateBuffer(max_items=4, max_bulk=2 * len(_chunk("t", 300).data))
    sequence = [
        _update({"sessionUpdate": "state_update", "state": "running"}),
        _chunk("t", 300),
        _chunk("t", 300),
        _chunk("t", 300),  # third chunk: over max_bulk, the first chunk goes
        _update({"sessionUpdate": "terminal_update", "terminalId": "t", "exitStatus": {}}),
        _update({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}),
    ]
    for update in sequence:
        buffer.push(update)
    # Five items left after the chunks: over max_items, the oldest remaining chunk goes next,
    # not the first state update.
    assert buffer.snapshot() == [sequence[0], sequence[3], sequence[4], sequence[5]]
    assert buffer.dropped == 2
    assert buffer.popleft() == (True, sequence[0])
    assert buffer.popleft() == (True, sequence[3])
    assert buffer.bulk_bytes == 0


@pytest.mark.anyio
async def test_a_turn_keeps_a_bounded_replay_not_every_update() -> None:
    from acp_notebook._client._replay import REPLAY_BULK_BYTES, bulk_weight

    session = _offline_session()
    turn = session.start_turn("flood")
    session._apply(_update({"sessionUpdate": "user_message", "messageId": "u", "content": []}))
    for _ in range(2_000):  # 2,000 x 8 KiB: 16 MiB of output, 21 MiB of base64
        session._apply(_chunk("t", 8192))
    session._apply(_update({"sessionUpdate": "state_update", "state": "idle", "stopReason": "x"}))
    assert turn.done and turn.terminals["t"].total_bytes == 2_000 * 8192
    late = turn.updates()
    updates = [u async for u in late]
    assert updates[0].session_update == "user_message"
    assert updates[-1].session_update == "state_update"
    assert 0 < sum(bulk_weight(u) for u in updates) <= REPLAY_BULK_BYTES
    assert late.dropped == 2_002 - len(updates)
    assert sum(bulk_weight(u) for u in turn._replay.snapshot()) <= REPLAY_BULK_BYTES


@pytest.mark.anyio
async def test_a_live_iterator_gets_every_update_and_a_dropped_one_stops_filling() -> None:
    import gc

    session = _offline_session()
    turn = session.start_turn("go")
    live = turn.updates()
    abandoned = turn.updates()
    sent = [_chunk("t", 100) for _ in range(50)]
    for update in sent:
        session._apply(update)
    assert [await abandoned.__anext__() for _ in range(2)] == sent[:2]
    del abandoned
    gc.collect()
    assert list(turn._streams) == [live]  # weakly held: nothing queues for it any more
    session._apply(_update({"sessionUpdate": "state_update", "state": "idle", "stopReason": "x"}))
    got = [u async for u in live]
    assert got[:-1] == sent and got[-1].session_update == "state_update"
    assert live.dropped == 0


# -- in memory (connect_streams): the subprocess is not the point here ---------------------------


@pytest.mark.anyio
async def test_client_problems_are_typed_and_reach_on_problem(tmp_path: Path) -> None:
    seen: list[Problem] = []
    async with scripted_agent(on_problem=seen.append) as (agent, peer):
        session = await agent.new_session(tmp_path)
        state = {"sessionUpdate": "state_update", "state": "running"}
        await peer.notify("session/update", {"sessionId": "nobody", "update": state})
        await peer.notify("elicitation/complete", {"elicitationId": 5})  # not a string
        await peer.notify("elicitation/complete", {"elicitationId": "never-asked"})
        await peer.notify("session/update", {"sessionId": session.id, "update": state})
        # Answered after the notifications before it were handled (the reader keeps order).
        answer = await peer.request("session/request_permission", {"bad": "params"})
    assert answer == {"outcome": {"outcome": "cancelled"}}
    assert all(isinstance(p, Problem) for p in agent.problems)
    assert [p.kind for p in agent.problems] == [
        "unknown_session",
        "not_acp",
        "unknown_elicitation",
        "not_acp",
    ]
    assert seen == agent.problems
    assert "'nobody'" in str(agent.problems[0]) and "never-asked" in str(agent.problems[2])


@pytest.mark.anyio
async def test_an_unknown_request_from_the_agent_is_answered_method_not_found() -> None:
    async with scripted_agent() as (_agent, peer):
        with pytest.raises(acp.RpcError) as caught:
            await peer.request("fs/read_text_file", {"path": "/etc/passwd"})
    assert caught.value.code == acp_protocol.ErrorCode.METHOD_NOT_FOUND


@pytest.mark.anyio
async def test_finding_7_a_v2_request_naming_its_tool_call_by_id_is_merged_too(
    tmp_path: Path,
) -> None:
    asked: list[acp.RequestPermissionRequest] = []

    async def ask(request: acp.RequestPermissionRequest) -> str | None:
        asked.append(request)
        return None

    async with scripted_agent(permission=ask) as (agent, peer):
        session = await agent.new_session(tmp_path)
        await session.prompt("go")
        text = {"type": "content", "content": {"type": "text", "text": "hi"}}
        body = {"sessionUpdate": "tool_call_update", "toolCallId": "effect-1", "title": "bash",
                "kind": "execute", "rawInput": {"commands": ["rm -f x"]},
                "content": [text]}  # fmt: skip
        await peer.notify("session/update", {"sessionId": session.id, "update": body})
        subject = {"type": "tool_call", "toolCall": {"toolCallId": "effect-1", "status": "pending"}}
        await peer.request("session/request_permission", {
            "sessionId": session.id, "title": "Allow?", "subject": subject,
            "options": [{"optionId": "ok", "name": "OK", "kind": "allow_once"}]})  # fmt: skip
        await peer.request("session/request_permission", {
            "sessionId": session.id, "title": "Allow?",
            "subject": {"type": "tool_call", "toolCall": {"toolCallId": "unknown"}},
            "options": [{"optionId": "ok", "name": "OK", "kind": "allow_once"}]})  # fmt: skip
    merged, alone = asked
    assert merged.title == "Allow?"  # the agent's own words stay
    call = merged.subject.tool_call  # type: ignore[union-attr]
    assert (call.title, call.kind, call.status) == ("bash", "execute", "pending")
    assert call.raw_input == {"commands": ["rm -f x"]}
    assert [c.to_wire() for c in call.content or []] == [text]
    assert alone.subject.tool_call.to_wire() == {"toolCallId": "unknown"}  # type: ignore[union-attr]
    assert session.permissions[0].request is merged  # what the log, the card and a policy read


@pytest.mark.anyio
async def test_the_merged_content_of_a_known_tool_call_is_capped(tmp_path: Path) -> None:
    from acp_notebook._client._agent import MERGED_CONTENT_LIMIT

    asked: list[acp.RequestPermissionRequest] = []

    async def ask(request: acp.RequestPermissionRequest) -> str | None:
        asked.append(request)
        return None

    block = {"type": "content", "content": {"type": "text", "text": "ls"}}
    async with scripted_agent(permission=ask) as (agent, peer):
        session = await agent.new_session(tmp_path)
        await session.prompt("go")
        for call_id, size in (("fits", MERGED_CONTENT_LIMIT), ("over", MERGED_CONTENT_LIMIT + 1)):
            body = {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "title": "Run",
                    "content": [block] * size}  # fmt: skip
            await peer.notify("session/update", {"sessionId": session.id, "update": body})
            await peer.request("session/request_permission", {
                "sessionId": session.id, "title": "Allow?",
                "subject": {"type": "tool_call", "toolCall": {"toolCallId": call_id}},
                "options": [{"optionId": "ok", "name": "OK", "kind": "allow_once"}]})  # fmt: skip
    fits, over = (r.subject.tool_call for r in asked)  # type: ignore[union-attr]
    assert len(fits.content or []) == MERGED_CONTENT_LIMIT
    assert over.title == "Run" and over.content is None  # the title still, not the content
