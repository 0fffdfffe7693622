"""The client with v1 agents (played by hand in memory, tests/_memory.py `scripted_agent`):
negotiation down, a whole v1 turn through the same state, permissions, cancel, session/load."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from _memory import scripted_agent

import acp_notebook as acp
import acp_notebook._protocol as p

V1_INIT = {
    "protocolVersion": 1,
    "agentCapabilities": {"loadSession": True, "sessionCapabilities": {}},
    "agentInfo": {"name": "old-agent", "version": "0.1"},
    "authMethods": [{"id": "token", "name": "Token"}],
}
MODES = {
    "currentModeId": "ask",
    "availableModes": [{"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}],
}


class V1Peer:
    """Answers the client as a v1 agent; records what it was asked."""

    def __init__(self, init: Any = V1_INIT) -> None:
        self.init = init
        self.calls: list[tuple[str, Any]] = []
        self.turn: Any = None  # async (peer connection, params) -> prompt answer
        self.conn: Any = None

    async def handle(self, method: str, params: Any) -> Any:
        self.calls.append((method, params))
        if method == "initialize":
            if callable(self.init):
                return self.init(params)
            return self.init
        if method == "session/new":
            return {"sessionId": "s1", "modes": MODES}
        if method == "session/prompt":
            return await self.turn(self.conn, params)
        if method == "session/load":
            sid = params["sessionId"]
            for kind, text, mid in (
                ("user_message_chunk", "old q", "u1"),
                ("agent_message_chunk", "old a", "a1"),
            ):
                await self.conn.notify("session/update", {"sessionId": sid, "update": {
                    "sessionUpdate": kind, "messageId": mid,
                    "content": {"type": "text", "text": text}}})  # fmt: skip
            return {}
        if method == "session/set_mode":
            return {}
        raise acp.MethodNotFound(method)

    def methods(self) -> list[str]:
        return [m for m, _ in self.calls]


async def update(conn: Any, body: dict[str, Any]) -> None:
    await conn.notify("session/update", {"sessionId": "s1", "update": body})


def connected(peer: V1Peer, **options: Any) -> Any:
    return scripted_agent(peer.handle, **options)


@pytest.mark.anyio
async def test_a_v1_answer_switches_to_v1_and_the_session_speaks_v1() -> None:
    peer = V1Peer()
    async with connected(peer) as (agent, conn):
        peer.conn = conn
        assert agent.protocol_version == 1
        assert agent.info is not None and agent.info.name == "old-agent"
        assert agent.v1_capabilities is not None and agent.v1_capabilities.load_session
        assert [m.to_wire()["methodId"] for m in agent.auth_methods] == ["token"]
        session = await agent.new_session("/w")
        # v1 session/new carries mcpServers; the modes are shown as a `mode` config option
        assert peer.calls[-1] == ("session/new", {"cwd": "/w", "mcpServers": []})
        mode = session.config_options[0]
        assert (mode.config_id, mode.current_value) == ("mode", "ask")
        assert await session.set_config_option("mode", "code")
        assert peer.calls[-1] == ("session/set_mode", {"sessionId": "s1", "modeId": "code"})
        assert session.config_options[0].current_value == "code"
        # the client updates its own state (what views read), no view writes it
        assert session.state.config_options == session.config_options
    offered = peer.calls[0][1]
    assert offered["protocolVersion"] == 2  # we offered 2, the agent chose 1
    # the same request carries what a v1 agent reads: our name, and nothing offered
    assert offered["clientInfo"]["name"] == "acp_notebook"
    assert offered["clientCapabilities"] == {
        "fs": {"readTextFile": False, "writeTextFile": False},
        "terminal": False,
        "_meta": {"terminal_output": True},  # the terminal extension: shown, runs nothing here
    }


@pytest.mark.anyio
async def test_a_v1_turn_renders_messages_tool_calls_and_ends_on_the_prompt_answer() -> None:
    peer = V1Peer()
    asked: list[p.RequestPermissionRequest] = []

    async def allow(request: p.RequestPermissionRequest) -> str:
        asked.append(request)
        return "yes"

    async def turn(conn: Any, params: Any) -> Any:
        await update(
            conn,
            {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": "Let me "},
            },
        )
        await update(
            conn,
            {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "edit."}},
        )
        await update(
            conn,
            {
                "sessionUpdate": "tool_call",
                "toolCallId": "t1",
                "title": "Edit a",
                "kind": "edit",
                "content": [{"type": "diff", "path": "/w/a", "oldText": "1\n", "newText": "2\n"}],
            },
        )
        answer = await conn.request(
            "session/request_permission",
            {
                "sessionId": "s1",
                "toolCall": {"toolCallId": "t1", "title": "Edit a", "kind": "edit"},
                "options": [
                    {"optionId": "yes", "name": "Yes", "kind": "allow_once"},
                    {"optionId": "no", "name": "No", "kind": "reject_once"},
                ],
            },
        )
        await update(
            conn, {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"}
        )
        await update(
            conn,
            {
                "sessionUpdate": "plan",
                "entries": [{"content": "edit a", "priority": "high", "status": "completed"}],
            },
        )
        await update(
            conn,
            {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Done."}},
        )
        assert answer == {"outcome": {"outcome": "selected", "optionId": "yes"}}
        return {"stopReason": "end_turn", "usage": {"totalTokens": 5}}  # fmt: skip

    peer.turn = turn
    async with connected(peer, permission=allow) as (agent, conn):
        peer.conn = conn
        session = await agent.new_session("/w")
        seen: list[Any] = []
        session.subscribe(lambda _s, u: seen.append(u))
        turn_ = await session.prompt("edit a")
        assert turn_.done  # a v1 prompt answers at the end of the turn
        assert await turn_.wait() == "end_turn"
        assert [m.text for m in turn_.state.messages if m.role == "agent"] == [
            "Let me edit.",
            "Done.",
        ]
        call = turn_.tool_calls["t1"]
        assert call.status == "completed" and isinstance(call.content[0], p.DiffToolCallContent)
        assert turn_.plan is not None
        assert turn_.usage == {"totalTokens": 5}
        assert isinstance(seen[-1], p.IdleStateUpdate)
        (request,) = asked
        assert request.title == "Edit a" and isinstance(
            request.subject, p.ToolCallPermissionSubject
        )
        assert [d.option_id for d in turn_.permissions] == ["yes"]
        assert session.problems == []


@pytest.mark.anyio
async def test_v1_cancel_answers_pending_permissions_cancelled_and_the_turn_ends() -> None:
    peer = V1Peer()
    answers: list[Any] = []
    waiting = anyio.Event()

    async def never(request: p.RequestPermissionRequest) -> str:
        waiting.set()
        await anyio.sleep_forever()
        raise AssertionError

    async def turn(conn: Any, params: Any) -> Any:
        answers.append(await conn.request("session/request_permission", {
            "sessionId": "s1", "toolCall": {"toolCallId": "t1", "title": "rm x"},
            "options": [{"optionId": "yes", "name": "Yes", "kind": "allow_once"}]}))  # fmt: skip
        return {"stopReason": "cancelled"}

    peer.turn = turn
    async with connected(peer, permission=never) as (agent, conn):
        peer.conn = conn
        session = await agent.new_session("/w")
        turn_ = session.start_turn("go")
        async with anyio.create_task_group() as tg:
            tg.start_soon(turn_.send)
            await waiting.wait()
            await session.cancel()
        assert await turn_.wait() == "cancelled"
    assert answers == [{"outcome": {"outcome": "cancelled"}}]
    assert "session/cancel" not in peer.methods()  # a notification: not in the requests
    assert turn_.permissions[0].option_id is None


@pytest.mark.anyio
async def test_malformed_v1_updates_are_reported_unknown_ones_kept() -> None:
    peer = V1Peer()

    async def turn(conn: Any, params: Any) -> Any:
        await update(conn, {"sessionUpdate": "tool_call", "toolCallId": "t1"})  # no title
        await update(conn, {"sessionUpdate": "_vendor_thing", "n": 1})
        return {"stopReason": "end_turn"}

    peer.turn = turn
    async with connected(peer) as (agent, conn):
        peer.conn = conn
        session = await agent.new_session("/w")
        seen: list[Any] = []
        session.subscribe(lambda _s, u: seen.append(u))
        turn_ = await session.prompt("x")
        assert await turn_.wait() == "end_turn"
    assert any("malformed v1 session/update" in m for m in session.problems)
    assert isinstance(seen[0], p.UnknownSessionUpdate) and seen[0].raw["n"] == 1


@pytest.mark.anyio
async def test_a_malformed_prompt_answer_ends_the_turn_with_an_error() -> None:
    peer = V1Peer()

    async def turn(conn: Any, params: Any) -> Any:
        return {"messageId": "m1"}  # a v2 answer: no stopReason

    peer.turn = turn
    async with connected(peer) as (agent, conn):
        peer.conn = conn
        session = await agent.new_session("/w")
        turn_ = await session.prompt("x")
        with pytest.raises(acp.ProtocolViolation):
            await turn_.wait()


@pytest.mark.anyio
async def test_v1_resume_is_session_load_and_replays_the_history() -> None:
    peer = V1Peer()
    async with connected(peer) as (agent, conn):
        peer.conn = conn
        session = await agent.resume_session("old", "/w", replay=True)
        assert peer.calls[-1] == (
            "session/load",
            {"sessionId": "old", "cwd": "/w", "mcpServers": []},
        )
        assert [(m.role, m.text) for m in session.state.messages.values()] == [
            ("user", "old q"),
            ("agent", "old a"),
        ]
    no_load = V1Peer({**V1_INIT, "agentCapabilities": {}})
    async with connected(no_load) as (agent, conn):
        with pytest.raises(acp.AcpError, match="neither load nor resume"):
            await agent.resume_session("old", "/w", replay=True)
        assert "old" not in agent.sessions


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("init", "speaks"),
    [
        # fast-agent and the SDK's echo agent echo the 2 they were offered, with a v1 body
        ({"protocolVersion": 2, "agentCapabilities": {},
          "agentInfo": {"name": "fa", "version": "1"}}, 1),
        ({"protocolVersion": 1}, 1),
        ({"protocolVersion": 2, "info": {"name": "new", "version": "2"}}, 2),
    ],
)  # fmt: skip
async def test_the_answer_shape_decides_the_version(init: dict[str, Any], speaks: int) -> None:
    problems: list[Any] = []
    async with connected(V1Peer(init), on_problem=problems.append) as (agent, _conn):
        assert agent.protocol_version == speaks
    echoed = init["protocolVersion"] == 2 and speaks == 1
    assert any("with a v1 body" in str(x) for x in problems) == echoed


@pytest.mark.anyio
@pytest.mark.parametrize(
    "init",
    [
        {"protocolVersion": 3, "agentCapabilities": {}},
        {"protocolVersion": 1, "info": {"name": "x", "version": "1"}},  # 1 with a v2 body
        {"protocolVersion": "1"},
        [1],
    ],
)
async def test_other_answers_are_refused(init: Any) -> None:
    with pytest.raises(acp.UnsupportedProtocolVersion):
        async with connected(V1Peer(init)):
            pytest.fail("accepted")


@pytest.mark.anyio
async def test_unsupported_version_error_listing_1_retries_with_a_v1_initialize() -> None:
    def init(params: Any) -> Any:
        if params["protocolVersion"] == 2:
            raise acp.RpcError(-32022, "Unsupported protocol version", {"supported": [1]})
        return V1_INIT

    peer = V1Peer(init)
    async with connected(peer) as (agent, _conn):
        assert agent.protocol_version == 1
    second = peer.calls[1][1]
    assert second["protocolVersion"] == 1 and second["clientInfo"]["name"] == "acp_notebook"


@pytest.mark.anyio
async def test_forcing_a_version() -> None:
    peer = V1Peer()
    async with connected(peer, protocol=1) as (agent, _conn):
        assert agent.protocol_version == 1
    assert peer.calls[0][1]["protocolVersion"] == 1  # no v2 offer at all
    assert "info" not in peer.calls[0][1] and "clientInfo" in peer.calls[0][1]
    with pytest.raises(acp.UnsupportedProtocolVersion):
        async with connected(V1Peer(), protocol=2):
            pytest.fail("a v1 agent was accepted under protocol=2")
    v2 = V1Peer({"protocolVersion": 2, "info": {"name": "n", "version": "2"}})
    with pytest.raises(acp.UnsupportedProtocolVersion):
        async with connected(v2, protocol=1):
            pytest.fail("a v2 answer was accepted under protocol=1")
    pure = V1Peer({"protocolVersion": 2, "info": {"name": "n", "version": "2"}})
    async with connected(pure, protocol=2) as (agent, _conn):
        assert agent.protocol_version == 2
    assert not {"clientInfo", "clientCapabilities"} & set(pure.calls[0][1])  # v2 only
    with pytest.raises(ValueError):
        async with connected(V1Peer(), protocol=3):
            pytest.fail("protocol=3 was accepted")


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("when", "options"),
    [
        ("during", [{"optionId": "a", "name": "A", "kind": "allow_once"},
                    {"optionId": "a", "name": "B", "kind": "reject_once"}]),  # duplicate ids
        ("during", [{"optionId": "a", "name": "A", "kind": "allow_once"}] * 17),
        ("after", [{"optionId": "a", "name": "A", "kind": "allow_once"}]),  # after the answer
        ("during", []),  # nothing to answer
    ],
)  # fmt: skip
async def test_v1_permission_requests_fail_closed_as_v2_ones(
    when: str, options: list[dict[str, Any]]
) -> None:
    peer = V1Peer()
    answers: list[Any] = []
    handled: list[Any] = []

    async def allow(request: p.RequestPermissionRequest) -> str:
        handled.append(request)
        return "a"

    async def ask(conn: Any) -> None:
        answers.append(await conn.request("session/request_permission", {
            "sessionId": "s1", "toolCall": {"toolCallId": "t1", "title": "rm x"},
            "options": options}))  # fmt: skip

    async def turn(conn: Any, params: Any) -> Any:
        if when == "during":
            await ask(conn)
        return {"stopReason": "end_turn"}

    peer.turn = turn
    async with connected(peer, permission=allow) as (agent, conn):
        peer.conn = conn
        session = await agent.new_session("/w")
        turn_ = await session.prompt("x")
        assert await turn_.wait() == "end_turn"
        if when == "after":
            await ask(conn)
    assert handled == []  # the handler never saw it: nothing could approve it
    assert answers == [{"outcome": {"outcome": "cancelled"}}]


@pytest.mark.anyio
async def test_v1_load_of_a_session_this_client_has_replays_into_a_fresh_state() -> None:
    peer = V1Peer()

    async def turn(conn: Any, params: Any) -> Any:
        await update(conn, {"sessionUpdate": "agent_message_chunk", "messageId": "a1",
                            "content": {"type": "text", "text": "old a"}})  # fmt: skip
        return {"stopReason": "end_turn"}

    peer.turn = turn
    async with connected(peer) as (agent, conn):
        peer.conn = conn
        session = await agent.new_session("/w")
        await (await session.prompt("old q")).wait()
        again = await agent.resume_session("s1", "/w", replay=True)
        assert again is session
        # the history once, as the agent replayed it (not appended to what was there)
        assert [(m.role, m.text) for m in session.state.messages.values()] == [
            ("user", "old q"),
            ("agent", "old a"),
        ]


@pytest.mark.anyio
async def test_v1_sign_in_and_out_use_the_v1_method_names() -> None:
    peer = V1Peer()
    handle = peer.handle

    async def signing(method: str, params: Any) -> Any:
        if method in ("authenticate", "logout"):
            peer.calls.append((method, params))
            return {}
        return await handle(method, params)

    peer.handle = signing  # type: ignore[method-assign]
    async with connected(peer) as (agent, _conn):
        await agent.login("token")
        await agent.logout()
    assert peer.calls[-2:] == [("authenticate", {"methodId": "token"}), ("logout", {})]


@pytest.mark.anyio
async def test_invalid_default_on_error_fields_of_answers_read_as_absent_and_are_reported() -> None:
    init = {**V1_INIT, "agentInfo": {"name": 3}, "authMethods": [{"id": "token", "name": "T"}, 7]}
    peer = V1Peer(init)
    handle = peer.handle

    async def answers(method: str, params: Any) -> Any:
        if method == "session/new":  # modes malformed, one config option malformed
            return {"sessionId": "s1", "modes": {"currentModeId": 5},
                    "configOptions": [{"id": "x"}, {"id": "fast", "name": "Fast",
                                      "type": "boolean", "currentValue": False}]}  # fmt: skip
        return await handle(method, params)

    peer.handle = answers  # type: ignore[method-assign]
    problems: list[Any] = []
    async with connected(peer, on_problem=problems.append) as (agent, _conn):
        assert agent.protocol_version == 1 and agent.info is None
        assert [m.to_wire()["methodId"] for m in agent.auth_methods] == ["token"]
        session = await agent.new_session("/w")
        assert [o.config_id for o in session.config_options] == ["fast"]
    details = [str(x) for x in problems]
    assert any("InitializeResponse: invalid 'agentInfo' left out" in d for d in details)
    assert any("InitializeResponse: 1 invalid item(s) of 'authMethods'" in d for d in details)
    assert any("NewSessionResponse: invalid 'modes' left out" in d for d in details)
    assert any("NewSessionResponse: 1 invalid item(s) of 'configOptions'" in d for d in details)


@pytest.mark.anyio
async def test_finding_7_a_request_naming_its_tool_call_by_id_is_merged_with_what_came_before() -> (
    None
):
    # Mistral Vibe: the tool_call update carries title, kind and rawInput; the permission
    # request names the call by id only. The handler (a card, a policy) sees them all.
    from acp_notebook._policy._rules import Policy

    peer = V1Peer()
    asked: list[p.RequestPermissionRequest] = []
    policy = Policy(allow=("*",), deny=("rm *",))

    async def judge(request: p.RequestPermissionRequest) -> str | None:
        asked.append(request)
        decided = policy.decide(request)
        return None if decided is None else decided.option_id

    async def turn(conn: Any, params: Any) -> Any:
        call = {"toolCallId": "effect-1", "title": "bash", "kind": "execute",
                "rawInput": {"command": "rm -f x"}, "status": "pending"}  # fmt: skip
        await update(conn, {"sessionUpdate": "tool_call", **call})
        answer = await conn.request("session/request_permission", {
            "sessionId": "s1", "toolCall": {"toolCallId": "effect-1"},
            "options": [{"optionId": "yes", "name": "Yes", "kind": "allow_once"},
                        {"optionId": "no", "name": "No", "kind": "reject_once"}]})  # fmt: skip
        assert answer == {"outcome": {"outcome": "selected", "optionId": "no"}}
        # a request that says more than the update: its own fields win (a patch)
        answer = await conn.request("session/request_permission", {
            "sessionId": "s1", "toolCall": {"toolCallId": "effect-1", "title": "list",
                                            "rawInput": {"command": "ls"}},
            "options": [{"optionId": "yes", "name": "Yes", "kind": "allow_once"}]})  # fmt: skip
        assert answer == {"outcome": {"outcome": "selected", "optionId": "yes"}}
        return {"stopReason": "end_turn"}

    peer.turn = turn
    async with connected(peer, permission=judge) as (agent, conn):
        peer.conn = conn
        session = await agent.new_session("/w")
        turn_ = await session.prompt("go")
        assert await turn_.wait() == "end_turn"
    first, second = asked
    assert first.title == "bash"
    call = first.subject.tool_call  # type: ignore[union-attr]
    assert (call.kind, call.raw_input) == ("execute", {"command": "rm -f x"})
    assert second.title == "list"
    assert second.subject.tool_call.raw_input == {"command": "ls"}  # type: ignore[union-attr]
    assert second.subject.tool_call.kind == "execute"  # type: ignore[union-attr]
