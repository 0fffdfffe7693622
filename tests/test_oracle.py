"""End-to-end tests against an independent oracle: a v2 agent on the reference TypeScript SDK.

``tests/oracle/agent.mjs`` runs on ``@agentclientprotocol/sdk@2.4.0`` (``experimental/v2``).
The SDK parses every request, notification and response our client sends with its own zod
validators and rejects what does not conform; what it accepted is appended to the JSONL file
named by ``ORACLE_LOG``. These tests drive our client against it and assert what the SDK
accepted. Everything our client sent is also checked against the v2 JSON Schema.

Needs ``node`` and ``npm ci`` in ``tests/oracle``: the tests fail (never skip) without them.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

import acp_notebook as acp
from acp_notebook._protocol import CommandPermissionSubject
from tests._schema import check_client_message

pytestmark = [pytest.mark.oracle, pytest.mark.anyio]

ORACLE_DIR = Path(__file__).parent / "oracle"
AGENT = ORACLE_DIR / "agent.mjs"
SDK = ORACLE_DIR / "node_modules" / "@agentclientprotocol" / "sdk"
WAIT = 20  # seconds: generous bound for anything that should happen "soon"


def node() -> str:
    """The node executable; fails the test with instructions when the oracle is not installed."""
    found = shutil.which("node")
    if found is None:
        pytest.fail("`node` is not on PATH: install Node.js 20+, then run `npm ci` in tests/oracle")
    if not (SDK / "package.json").exists():
        pytest.fail(f"{SDK} is missing: run `npm ci` in tests/oracle (CI does this in .ci/run)")
    return found


def accepted(log: Path) -> list[tuple[str, Any]]:
    """What the SDK accepted from our client, in order, as ``(kind, value)``."""
    if not log.exists():
        return []
    entries = [json.loads(line) for line in log.read_text("utf-8").splitlines() if line]
    return [(e["kind"], e["value"]) for e in entries]


def kinds(log: Path) -> list[str]:
    return [kind for kind, _ in accepted(log)]


def sent_by_client(agent: acp.Agent) -> tuple[list[dict[str, Any]], dict[Any, str]]:
    """Messages our client wrote (from ``connection.log``) and the agent's request ids."""
    entries = list(agent.connection.log)
    assert len(entries) < (agent.connection.log.maxlen or 10**9), "log overflowed: enlarge it"
    sent = [m for d, m in entries if d == "send" and isinstance(m, dict)]
    peer = {
        m["id"]: m["method"]
        for d, m in entries
        if d == "recv" and isinstance(m, dict) and "method" in m and "id" in m
    }
    return sent, peer


def assert_sent_schema_valid(agent: acp.Agent) -> list[dict[str, Any]]:
    sent, peer = sent_by_client(agent)
    assert sent and sent[0]["method"] == "initialize", "the log must hold everything we sent"
    for message in sent:
        found = check_client_message(message, peer)
        assert not found, f"our client sent an invalid message: {found}\n{json.dumps(message)}"
    return sent


@asynccontextmanager
async def oracle(
    tmp_path: Path, permission: acp.PermissionHandler | None = None, *, check: bool = True
) -> AsyncIterator[tuple[acp.Agent, Path]]:
    log = tmp_path / "oracle.jsonl"
    async with acp.connect(
        [node(), str(AGENT)],
        cwd=tmp_path,
        env={"ORACLE_LOG": str(log)},
        permission=permission,
    ) as agent:
        yield agent, log
        if check:
            assert_sent_schema_valid(agent)


async def wait_for(log: Path, kind: str) -> list[Any]:
    """Values of ``kind`` once the SDK has recorded at least one (it logs asynchronously)."""
    with anyio.fail_after(WAIT):
        while not (found := [v for k, v in accepted(log) if k == kind]):
            await anyio.sleep(0.02)
    return found


async def test_initialize_new_session_and_prompt(tmp_path: Path) -> None:
    async with oracle(tmp_path) as (agent, log):
        assert agent.info is not None and agent.info.name == "sdk-oracle"
        session = await agent.new_session(cwd=tmp_path)
        assert session.id.startswith("sess-")
        turn = await session.prompt("hello oracle")
        with anyio.fail_after(WAIT):
            assert await turn.wait() == "end_turn"
        assert turn.text == "oracle heard: hello oracle"
        assert turn.message_id is not None

        records = accepted(log)
        assert [k for k, _ in records] == ["initialize", "session/new", "session/prompt"]
        init = records[0][1]
        assert init["protocolVersion"] == 2
        assert init["info"]["name"] == "acp_notebook"
        assert set(init["info"]) >= {"name", "version"}
        assert records[1][1] == {"cwd": str(tmp_path.absolute())}
        assert records[2][1] == {
            "sessionId": session.id,
            "prompt": [{"type": "text", "text": "hello oracle"}],
        }
        # The SDK accepted exactly what we sent, nothing added or lost (but the v1 fields the
        # same initialize carries for a v1 agent, which a v2 agent drops: test_client_v1).
        sent = assert_sent_schema_valid(agent)
        by_method = {m["method"]: m["params"] for m in sent if "method" in m}
        v1_fields = {"clientInfo", "clientCapabilities"}
        assert v1_fields <= set(by_method["initialize"])
        assert {k: v for k, v in by_method["initialize"].items() if k not in v1_fields} == init
        assert by_method["session/prompt"] == records[2][1]


async def test_permission_allow_runs_and_terminal_gets_bytes(tmp_path: Path) -> None:
    seen: list[acp.RequestPermissionRequest] = []

    def allow(request: acp.RequestPermissionRequest) -> str | None:
        seen.append(request)
        return "yes"

    async with oracle(tmp_path, allow) as (agent, log):
        session = await agent.new_session(cwd=tmp_path)
        turn = await session.prompt("run make")
        with anyio.fail_after(WAIT):
            assert await turn.wait() == "end_turn"
        (request,) = seen
        subject = request.subject
        assert isinstance(subject, CommandPermissionSubject)
        assert subject.command == "make" and Path(subject.cwd).resolve() == tmp_path.resolve()
        assert await wait_for(log, "permission_response") == [
            {"outcome": {"outcome": "selected", "optionId": "yes"}}
        ]
        (terminal,) = turn.terminals.values()
        assert terminal.data == b"\x1b[32mpretend output\x1b[0m\r\n"
        assert terminal.exit_status is not None and terminal.exit_status.exit_code == 0
        (tool_call,) = turn.tool_calls.values()
        assert tool_call.status == "completed"
        (decision,) = session.permissions
        assert decision.allowed and decision.decided_by == "handler"


async def test_permission_reject(tmp_path: Path) -> None:
    async with oracle(tmp_path, lambda request: "no") as (agent, log):
        session = await agent.new_session(cwd=tmp_path)
        turn = await session.prompt("run make")
        with anyio.fail_after(WAIT):
            assert await turn.wait() == "end_turn"
        assert await wait_for(log, "permission_response") == [
            {"outcome": {"outcome": "selected", "optionId": "no"}}
        ]
        assert all(t.data == b"" for t in turn.terminals.values())
        (tool_call,) = turn.tool_calls.values()
        assert tool_call.status == "failed"
        assert not session.permissions[0].allowed


async def test_cancel_during_pending_permission(tmp_path: Path) -> None:
    asked = anyio.Event()

    async def never(request: acp.RequestPermissionRequest) -> str | None:
        asked.set()
        await anyio.sleep_forever()
        return "yes"  # pragma: no cover

    async with oracle(tmp_path, never) as (agent, log):
        session = await agent.new_session(cwd=tmp_path)
        turn = await session.prompt("run make")
        with anyio.fail_after(WAIT):
            await asked.wait()
        assert "permission_response" not in kinds(log)
        await session.cancel()
        with anyio.fail_after(WAIT):
            assert await turn.wait() == "cancelled"
        assert await wait_for(log, "permission_response") == [{"outcome": {"outcome": "cancelled"}}]
        cancels = [v for k, v in accepted(log) if k == "session/cancel"]
        assert cancels == [{"sessionId": session.id}]
        assert "permission_error" not in kinds(log)
        (decision,) = session.permissions
        assert decision.decided_by == "cancel" and not decision.allowed
        (tool_call,) = turn.tool_calls.values()
        assert tool_call.status == "cancelled"
        assert all(t.data == b"" for t in turn.terminals.values())


@pytest.mark.sends_invalid
async def test_oracle_rejects_a_malformed_request(tmp_path: Path) -> None:
    """Negative control: the oracle can fail. ``session/new`` without ``cwd`` is refused."""
    async with oracle(tmp_path, check=False) as (agent, log):
        with anyio.fail_after(WAIT), pytest.raises(acp.RpcError) as info:
            await agent.connection.request("session/new", {})
        assert info.value.code == -32602
        assert "session/new" not in kinds(log)
        # The connection is still usable afterwards.
        session = await agent.new_session(cwd=tmp_path)
        assert kinds(log)[-1] == "session/new" and session.id
        # Our own schema check flags exactly the one message we broke on purpose.
        sent, peer = sent_by_client(agent)
        flagged = [m for m in sent if check_client_message(m, peer)]
        assert [(m["method"], m["params"]) for m in flagged] == [("session/new", {})]
