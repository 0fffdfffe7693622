"""The async client API against scripted agents: in memory (`connect_streams` to `FakePeer`)
where the process is not the point, a real subprocess (tests/fakes/client_peer.py) where it is."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

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
