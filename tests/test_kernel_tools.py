"""The kernel's MCP server (``_kernel_tools``), reached with the official MCP SDK's client.

A server per test on 127.0.0.1 (a real uvicorn on a real socket, in its own thread); the
namespace is a plain dict here (the kernel tests use a real kernel's).
"""

from __future__ import annotations

import http.client
import json
import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import anyio
import pytest

from acp_notebook._kernel._tools import TOOL_NAMES, KernelTools, ToolEvent


@dataclass
class _Session:
    """What a grant reads of a client Session: its id and whether it was closed."""

    id: str
    closed: bool = False


@pytest.fixture
def tools() -> Iterator[KernelTools]:
    namespace: dict[str, Any] = {"numbers": [1, 2, 3], "greeting": "hello", "_private": 1}
    server = KernelTools(lambda: namespace)
    server.start()
    yield server
    server.stop()


def _post(url: str, headers: dict[str, str]) -> tuple[int, str]:
    """A raw MCP initialize POST: the status and body the server answers."""
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "0"},
            },
        }
    )
    conn.request(
        "POST",
        parts.path,
        body,
        {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        | headers,
    )
    response = conn.getresponse()
    status, text = response.status, response.read().decode()
    conn.close()
    return status, text


async def _call(url: str, token: str, name: str, args: dict[str, Any] | None = None) -> Any:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with (
        create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        listed = await client.list_tools()
        result = await client.call_tool(name, args or {})
        return [tool.name for tool in listed.tools], result


def test_the_sdk_client_lists_the_tools_and_reads_the_namespace(tools: KernelTools) -> None:
    grant = tools.issue("embedded")
    tools.bind(grant, _Session("s-1"))  # type: ignore[arg-type]
    names, result = anyio.run(_call, tools.url, grant.token, "list_variables")
    assert sorted(names) == sorted(TOOL_NAMES)
    assert not result.is_error
    text = result.content[0].text
    assert "numbers: list" in text and "greeting: str" in text
    assert "_private" not in text
    _, inspected = anyio.run(_call, tools.url, grant.token, "inspect_variable", {"name": "numbers"})
    assert "[1, 2, 3]" in inspected.content[0].text
    _, missing = anyio.run(_call, tools.url, grant.token, "inspect_variable", {"name": "nope"})
    assert missing.is_error and "'nope' is not defined" in missing.content[0].text
    calls = [e for e in tools.events if e.kind == "call"]
    assert [(e.tool, e.session_id, e.agent) for e in calls][:2] == [
        ("list_variables", "s-1", "embedded"),
        ("inspect_variable", "s-1", "embedded"),
    ]
    assert calls[0].chars == len(text)


def test_the_server_is_on_loopback_with_a_random_port_and_token(tools: KernelTools) -> None:
    assert tools.url.startswith("http://127.0.0.1:") and tools.url.endswith("/mcp")
    other = KernelTools(dict)
    other.start()
    try:
        assert other.url != tools.url
    finally:
        other.stop()
    a, b = tools.issue("x"), tools.issue("x")
    assert a.token != b.token and len(a.token) >= 40


def test_a_request_without_the_token_is_refused_and_recorded(tools: KernelTools) -> None:
    seen: list[ToolEvent] = []
    tools.on_event = seen.append
    grant = tools.issue("embedded")
    status, body = _post(tools.url, {})
    assert status == 401 and "no bearer token" in body
    status, body = _post(tools.url, {"Authorization": "Bearer " + grant.token[::-1]})
    assert status == 401 and "unknown token" in body
    status, _ = _post(tools.url, {"Authorization": "Basic " + grant.token})
    assert status == 401
    assert [(e.kind, e.detail) for e in seen] == [
        ("refused", "no bearer token"),
        ("refused", "an unknown token"),
        ("refused", "no bearer token"),
    ]
    assert all(grant.token not in e.detail for e in seen)
    status, _ = _post(tools.url, {"Authorization": "Bearer " + grant.token})
    assert status == 200


def test_the_sdk_client_without_the_token_gets_nothing(tools: KernelTools) -> None:
    tools.issue("embedded")
    with pytest.raises(Exception):  # noqa: B017 - the SDK wraps the 401 its own way
        anyio.run(_call, tools.url, "not-the-token", "list_variables")
    assert tools.events, "the refusal was not recorded"
    assert {e.kind for e in tools.events} == {"refused"}


def test_a_closed_session_or_a_revoked_grant_is_refused(tools: KernelTools) -> None:
    session = _Session("s-2")
    grant = tools.issue("embedded")
    tools.bind(grant, session)  # type: ignore[arg-type]
    auth = {"Authorization": "Bearer " + grant.token}
    assert _post(tools.url, auth)[0] == 200
    session.closed = True
    status, body = _post(tools.url, auth)
    assert status == 401 and "closed" in body
    other = tools.issue("codex")
    assert _post(tools.url, {"Authorization": "Bearer " + other.token})[0] == 200
    tools.revoke_agent("codex")
    status, body = _post(tools.url, {"Authorization": "Bearer " + other.token})
    assert status == 401 and "closed" in body
    refused = [e for e in tools.events if e.kind == "refused"]
    assert [(e.agent, e.detail) for e in refused] == [
        ("embedded", "the session was closed"),
        ("codex", "the session was closed"),
    ]


def test_the_grant_of_an_agent_that_exited_is_refused(tools: KernelTools) -> None:
    running = [True]
    grant = tools.issue("embedded")
    grant.alive = lambda: running[0]
    auth = {"Authorization": "Bearer " + grant.token}
    assert _post(tools.url, auth)[0] == 200
    running[0] = False
    status, body = _post(tools.url, auth)
    assert status == 401 and "the agent exited" in body
    assert tools.events[-1].detail == "the agent exited"


def test_stop_closes_the_port_and_revokes_every_grant() -> None:
    server = KernelTools(dict)
    server.start()
    url = server.url
    grant = server.issue("embedded")
    server.stop()
    assert not server.running and grant.revoked
    with pytest.raises(ConnectionRefusedError):
        _post(url, {"Authorization": "Bearer " + grant.token})
    assert not [t for t in threading.enumerate() if t.name == "acp-kernel-tools"]


def test_reading_tools_run_through_on_main_and_a_busy_kernel_is_answered() -> None:
    threads: list[str] = []

    def on_main(fn: Any, timeout: float) -> Any:
        threads.append(threading.current_thread().name)
        raise TimeoutError

    server = KernelTools(lambda: {"x": 1}, on_main=on_main, main_wait=0.5)
    server.start()
    try:
        grant = server.issue("embedded")
        _, result = anyio.run(_call, server.url, grant.token, "list_variables")
    finally:
        server.stop()
    assert threads, "the namespace was read without going through on_main"
    assert result.is_error and "the kernel is busy" in result.content[0].text


# -- the mcpServers entry and the session/new seam ---------------------------------------------


def _init_v2(mcp: dict[str, Any] | None) -> dict[str, Any]:
    session: dict[str, Any] = {} if mcp is None else {"mcp": mcp}
    return {
        "protocolVersion": 2,
        "info": {"name": "scripted", "version": "1"},
        "capabilities": {"session": session},
    }


def _init_v1(mcp: dict[str, Any] | None) -> dict[str, Any]:
    caps: dict[str, Any] = {} if mcp is None else {"mcpCapabilities": mcp}
    return {
        "protocolVersion": 1,
        "agentCapabilities": caps,
        "agentInfo": {"name": "v1", "version": "1"},
    }


async def _entry_and_new_session(initialize: dict[str, Any]) -> tuple[Any, list[Any]]:
    from _memory import scripted_agent

    from acp_notebook._connection._errors import MethodNotFound
    from acp_notebook._kernel._tools import mcp_entry

    sent: list[Any] = []

    async def handler(method: str, params: Any) -> Any:
        if method == "initialize":
            return initialize
        if method == "session/new":
            sent.append(params)
            return {"sessionId": "s1"}
        raise MethodNotFound(method)

    async with scripted_agent(handler) as (agent, _peer):
        entry = mcp_entry(agent, "http://127.0.0.1:1/mcp", "TOKEN-123")
        await agent.new_session("/", mcp_servers=[entry] if entry else None)
        await agent.new_session("/")
    return entry, sent


def test_a_v2_agent_with_http_gets_an_http_entry_with_the_bearer_header() -> None:
    entry, sent = anyio.run(_entry_and_new_session, _init_v2({"http": {}, "stdio": {}}))
    assert entry == {
        "type": "http",
        "name": "notebook",
        "url": "http://127.0.0.1:1/mcp",
        "headers": [{"name": "Authorization", "value": "Bearer TOKEN-123"}],
    }
    assert sent[0]["mcpServers"] == [entry]
    assert "mcpServers" not in sent[1]  # without kernel tools: as before


def test_a_v2_agent_with_stdio_only_gets_the_bridge_with_url_and_token_in_its_env() -> None:
    import sys

    entry, sent = anyio.run(_entry_and_new_session, _init_v2({"stdio": {}}))
    assert entry["type"] == "stdio" and entry["command"] == sys.executable
    assert entry["args"] == ["-m", "acp_notebook.mcp_bridge"]
    argv = json.dumps(entry["args"])
    assert "TOKEN-123" not in argv and "127.0.0.1" not in argv
    assert {e["name"]: e["value"] for e in entry["env"]} == {
        "ACP_NOTEBOOK_MCP_URL": "http://127.0.0.1:1/mcp",
        "ACP_NOTEBOOK_MCP_TOKEN": "TOKEN-123",
    }
    assert sent[0]["mcpServers"] == [entry]


def test_a_v2_agent_without_mcp_gets_no_entry() -> None:
    entry, sent = anyio.run(_entry_and_new_session, _init_v2(None))
    assert entry is None and "mcpServers" not in sent[0]


def test_v1_agents_get_the_v1_shapes() -> None:
    entry, sent = anyio.run(_entry_and_new_session, _init_v1({"http": True}))
    assert entry is not None and entry["type"] == "http" and sent[0]["mcpServers"] == [entry]
    assert sent[1]["mcpServers"] == []  # v1 always sends the key
    entry, sent = anyio.run(_entry_and_new_session, _init_v1(None))
    assert entry is not None and "type" not in entry  # v1's stdio entry has no type
    assert set(entry) == {"name", "command", "args", "env"}
    assert sent[0]["mcpServers"] == [entry]


def test_a_tool_answer_is_capped_and_says_so() -> None:
    from acp_notebook._kernel._context import PER_PROMPT_CAP

    namespace = {f"variable_number_{i}": i for i in range(5000)}
    server = KernelTools(lambda: namespace)
    server.start()
    try:
        grant = server.issue("embedded")
        _, result = anyio.run(_call, server.url, grant.token, "list_variables")
    finally:
        server.stop()
    text = result.content[0].text
    assert len(text) <= PER_PROMPT_CAP + 200
    assert "variable_number_0: int" in text
    assert "characters cut" in text and "list_variables" in text
    assert server.events[-1].chars == len(text)


def test_run_code_asks_for_the_grants_own_session_and_reports_the_outcome() -> None:
    import concurrent.futures

    from acp_notebook._notebook._kernel_code import CodeOutcome

    asked: list[tuple[str, str]] = []
    outcomes = iter(
        [
            CodeOutcome(True, "hello\n", None, "allowed"),
            CodeOutcome(False, "", None, "rejected"),
            CodeOutcome(True, "", "ZeroDivisionError: division by zero", "allowed"),
        ]
    )

    def run_code(session: Any, code: str) -> concurrent.futures.Future[Any]:
        asked.append((session.id, code))  # the grant's own Session, not just its id
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        future.set_result(next(outcomes))
        return future

    server = KernelTools(dict, run_code=run_code)
    server.start()
    try:
        mine, other = server.issue("a"), server.issue("b")
        server.bind(mine, _Session("s-mine"))  # type: ignore[arg-type]
        server.bind(other, _Session("s-other"))  # type: ignore[arg-type]
        results = [
            anyio.run(_call, server.url, mine.token, "run_code", {"code": c})[1]
            for c in ("print('hello')", "import os", "1/0")
        ]
        _, unbound = anyio.run(
            _call, server.url, server.issue("c").token, "run_code", {"code": "x"}
        )
    finally:
        server.stop()
    assert asked == [("s-mine", "print('hello')"), ("s-mine", "import os"), ("s-mine", "1/0")]
    assert [(r.is_error, r.content[0].text) for r in results] == [
        (False, "hello\n"),
        (True, "not run: rejected"),
        (True, "ZeroDivisionError: division by zero"),
    ]
    assert unbound.is_error and "no notebook session" in unbound.content[0].text


def test_a_client_that_gives_up_on_run_code_withdraws_its_card() -> None:
    # the MCP client's per-call timeout (Claude's MCP_TOOL_TIMEOUT): it abandons the HTTP
    # request; the code card's future is cancelled, so a later Allow cannot run the code
    import concurrent.futures

    pending: list[concurrent.futures.Future[Any]] = []

    def run_code(session_id: str, code: str) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        pending.append(future)  # never answered: the card waits for a click
        return future

    async def give_up(url: str, token: str) -> None:
        # the client gives up once its call is waiting on the card (a condition, not a time:
        # under load, reaching run_code took over the second this once waited)
        async with anyio.create_task_group() as tg:
            tg.start_soon(_call, url, token, "run_code", {"code": "open('made.txt', 'w')"})
            with anyio.fail_after(60):
                while not pending:
                    await anyio.sleep(0.01)
            tg.cancel_scope.cancel()

    server = KernelTools(dict, run_code=run_code)
    server.start()
    try:
        grant = server.issue("a")
        server.bind(grant, _Session("s1"))  # type: ignore[arg-type]
        anyio.run(give_up, server.url, grant.token)
        (future,) = pending
        deadline = threading.Event()
        for _ in range(100):  # the server notices the client is gone (a bound, not a speed)
            if future.cancelled():
                break
            deadline.wait(0.1)
        assert future.cancelled()
    finally:
        server.stop()
