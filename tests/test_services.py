"""The client services wired to a v1 agent (``connect(..., client_services=True)``): what is
advertised, and each ``terminal/*`` and ``fs/*`` request decided on the permission path of
the session's turn, played by a scripted v1 agent in memory (tests/_memory.py)."""

from __future__ import annotations

import base64
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from _memory import scripted_agent

import acp_notebook as acp
import acp_notebook._protocol as p
from acp_notebook._client._approval import NOT_ALLOWED
from acp_notebook._client._permission import Answer, PermissionDecision
from tests._procs import processes_naming

V1_INIT = {
    "protocolVersion": 1,
    "agentCapabilities": {},
    "agentInfo": {"name": "v1", "version": "1"},
}
Turn = Callable[[Any], Awaitable[Any]]


class Peer:
    """A v1 agent whose ``session/prompt`` runs ``self.turn(conn)``."""

    def __init__(self, init: Any = V1_INIT) -> None:
        self.init = init
        self.calls: list[tuple[str, Any]] = []
        self.turn: Turn | None = None
        self.conn: Any = None

    async def handle(self, method: str, params: Any) -> Any:
        self.calls.append((method, params))
        if method == "initialize":
            return self.init
        if method == "session/new":
            return {"sessionId": "s1"}
        if method == "session/prompt":
            assert self.turn is not None
            await self.turn(self.conn)
            return {"stopReason": "end_turn"}
        raise acp.MethodNotFound(method)


async def ask(conn: Any, method: str, **params: Any) -> Any:
    """The agent's request; an error comes back as the RpcError (not raised)."""
    try:
        return await conn.request(method, {"sessionId": "s1", **params})
    except acp.RpcError as exc:
        return exc


def answering(option: str | None, seen: list[PermissionDecision]) -> Any:
    async def asker(decision: PermissionDecision) -> Answer:
        seen.append(decision)
        return Answer(option, "click")

    return asker


async def run_turn(peer: Peer, cwd: Path, turn: Turn, asker: Any = None, **options: Any) -> Any:
    """One turn of session s1 in ``cwd``; returns (session, turn)."""
    options.setdefault("client_services", True)
    async with scripted_agent(peer.handle, **options) as (agent, conn):
        peer.conn = conn
        session = await agent.new_session(cwd)
        if asker is not None:
            session.ask_permissions(asker)
        peer.turn = turn
        done = await session.prompt("go")
        assert await done.wait() == "end_turn"
        return session, done


@pytest.mark.anyio
@pytest.mark.parametrize("enabled", [True, False])
async def test_the_services_are_advertised_only_when_enabled(enabled: bool) -> None:
    peer = Peer()
    async with scripted_agent(peer.handle, client_services=enabled) as (agent, _conn):
        assert (agent.services is not None) is enabled
    offered = peer.calls[0][1]["clientCapabilities"]
    assert offered == {
        "fs": {"readTextFile": enabled, "writeTextFile": enabled},
        "terminal": enabled,
        "_meta": {"terminal_output": True},
    }


@pytest.mark.anyio
@pytest.mark.process
async def test_an_allowed_command_runs_and_streams_into_the_sessions_state(tmp_path: Path) -> None:
    seen: list[PermissionDecision] = []
    got: dict[str, Any] = {}

    async def turn(conn: Any) -> None:
        created = await ask(conn, "terminal/create", command="printf", args=["%s-%s", "a b", "c"])
        tid = created["terminalId"]
        await conn.notify("session/update", {"sessionId": "s1", "update": {
            "sessionUpdate": "tool_call", "toolCallId": "t1", "title": "printf", "kind": "execute",
            "content": [{"type": "terminal", "terminalId": tid}]}})  # fmt: skip
        got["exit"] = await ask(conn, "terminal/wait_for_exit", terminalId=tid)
        got["output"] = await ask(conn, "terminal/output", terminalId=tid)
        got["release"] = await ask(conn, "terminal/release", terminalId=tid)
        got["tid"] = tid

    session, done = await run_turn(Peer(), tmp_path, turn, answering("allow", seen))
    assert got["exit"] == {"exitCode": 0, "signal": None}
    assert got["output"]["output"] == "a b-c"
    assert got["release"] == {}
    (decision,) = seen
    assert decision.turn is done and decision.allowed and decision.decided_by == "click"
    subject = decision.request.subject
    assert isinstance(subject, p.CommandPermissionSubject)
    assert subject.command == "printf %s-%s 'a b' c"  # the argv as a shell would see it
    assert subject.cwd == str(tmp_path.resolve())
    assert subject.terminal_id == got["tid"]
    assert done.permissions == [decision]
    term = done.terminals[got["tid"]]
    assert term.command == "printf %s-%s 'a b' c"
    assert term.data == b"a b-c"
    assert term.exit_status is not None and term.exit_status.exit_code == 0
    # the v1 tool call's terminal content names a terminal the state knows
    assert done.tool_calls["t1"].content[0].terminal_id in done.terminals
    assert session.problems == []


@pytest.mark.anyio
@pytest.mark.parametrize("how", ["rejected", "no asker", "after cancel", "invalid answer"])
async def test_a_command_nobody_allowed_never_runs(tmp_path: Path, how: str) -> None:
    marker = tmp_path / "ran"
    seen: list[PermissionDecision] = []
    got: list[Any] = []
    asker: Any = {
        "rejected": answering("reject", seen),
        "no asker": None,
        "after cancel": answering("allow", seen),
        "invalid answer": answering("yes", seen),  # not an offered option
    }[how]
    session_box: list[Any] = []

    async def turn(conn: Any) -> None:
        if how == "after cancel":
            await session_box[0].cancel()
        got.append(await ask(conn, "terminal/create", command="touch", args=[str(marker)]))

    peer = Peer()
    async with scripted_agent(peer.handle, client_services=True) as (agent, conn):
        peer.conn = conn
        session = await agent.new_session(tmp_path)
        session_box.append(session)
        if asker is not None:
            session.ask_permissions(asker)
        peer.turn = turn
        done = await session.prompt("go")
        await done.wait()
    # The request was answered, so its handler is done: a command it had started would still
    # run (named by its marker) or have touched the marker already.
    assert processes_naming(str(marker)) == []
    (error,) = got
    assert isinstance(error, acp.RpcError) and error.code == NOT_ALLOWED
    assert not marker.exists()
    (decision,) = done.permissions
    assert not decision.allowed
    assert done.terminals == {} or all(t.exit_status is None for t in done.terminals.values())
    assert seen == ([decision] if how in ("rejected", "invalid answer") else [])


@pytest.mark.anyio
async def test_a_command_after_the_turn_ended_is_refused(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    seen: list[PermissionDecision] = []
    peer = Peer()
    async with scripted_agent(peer.handle, client_services=True) as (agent, conn):
        peer.conn = conn
        session = await agent.new_session(tmp_path)
        session.ask_permissions(answering("allow", seen))

        async def nothing(conn: Any) -> None:
            pass

        peer.turn = nothing
        await (await session.prompt("go")).wait()
        error = await ask(conn, "terminal/create", command="touch", args=[str(marker)])
    assert isinstance(error, acp.RpcError) and error.code == NOT_ALLOWED
    assert seen == [] and not marker.exists()


@pytest.mark.anyio
@pytest.mark.process
async def test_cancel_kills_the_sessions_running_commands(tmp_path: Path) -> None:
    got: dict[str, Any] = {}
    session_box: list[Any] = []

    async def turn(conn: Any) -> None:
        created = await ask(conn, "terminal/create", command="sleep", args=["300"])
        await session_box[0].cancel()  # what an Interrupt of the cell sends
        got["exit"] = await ask(conn, "terminal/wait_for_exit", terminalId=created["terminalId"])

    peer = Peer()
    async with scripted_agent(peer.handle, client_services=True) as (agent, conn):
        peer.conn = conn
        session = await agent.new_session(tmp_path)
        session_box.append(session)
        session.ask_permissions(answering("allow", []))
        peer.turn = turn
        with anyio.fail_after(30):
            await (await session.prompt("go")).wait()
    assert got["exit"] == {"exitCode": None, "signal": "SIGTERM"}


@pytest.mark.anyio
@pytest.mark.process
async def test_leaving_the_connection_kills_every_client_terminal(tmp_path: Path) -> None:
    from test_terminals import live_members, wait_gone

    pids: list[int] = []

    async def turn(conn: Any) -> None:
        created = await ask(conn, "terminal/create", command="sleep", args=["300"])
        assert agent_box[0].services is not None
        pgid = agent_box[0].services.terminals.process_group(created["terminalId"])
        pids.append(pgid)

    agent_box: list[Any] = []
    peer = Peer()
    async with scripted_agent(peer.handle, client_services=True) as (agent, conn):
        agent_box.append(agent)
        peer.conn = conn
        session = await agent.new_session(tmp_path)
        session.ask_permissions(answering("allow", []))
        peer.turn = turn
        await (await session.prompt("go")).wait()
        assert live_members(pids[0])  # still running while the agent is connected
    assert wait_gone(pids[0]) == []


@pytest.mark.anyio
@pytest.mark.parametrize("option", ["reject", None])
async def test_a_refused_write_leaves_the_file_byte_for_byte(tmp_path: Path, option: Any) -> None:
    target = tmp_path / "a.txt"
    original = b"one\r\ntwo\xff\n"
    target.write_bytes(original)
    seen: list[PermissionDecision] = []
    got: list[Any] = []

    async def turn(conn: Any) -> None:
        got.append(await ask(conn, "fs/write_text_file", path=str(target), content="new\n"))

    await run_turn(Peer(), tmp_path, turn, answering(option, seen))
    assert isinstance(got[0], acp.RpcError) and got[0].code == NOT_ALLOWED
    assert target.read_bytes() == original
    assert sorted(os_entries(tmp_path)) == ["a.txt"]  # no temporary file left either


def os_entries(folder: Path) -> list[str]:
    return [entry.name for entry in folder.iterdir()]


@pytest.mark.anyio
async def test_an_allowed_write_shows_its_diff_then_writes(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "a.txt"
    target.parent.mkdir()
    target.write_text("one\ntwo\n")
    seen: list[PermissionDecision] = []
    got: list[Any] = []

    async def turn(conn: Any) -> None:
        got.append(await ask(conn, "fs/write_text_file", path=str(target), content="one\n2\n"))
        got.append(await ask(conn, "fs/read_text_file", path=str(target), line=2, limit=1))

    _session, done = await run_turn(Peer(), tmp_path, turn, answering("allow", seen))
    assert got == [{}, {"content": "2\n"}]  # the read inside the cwd asked nobody
    assert target.read_text() == "one\n2\n"
    (decision,) = seen
    assert decision.turn is done
    subject = decision.request.subject
    assert isinstance(subject, p.ToolCallPermissionSubject)
    assert subject.tool_call.kind == "edit"
    (diff,) = subject.tool_call.content or []
    assert isinstance(diff, p.DiffToolCallContent)
    assert "-two\n+2\n" in diff.patch.text


@pytest.mark.anyio
@pytest.mark.parametrize("option", ["allow", "reject"])
async def test_a_read_outside_the_cwd_is_asked(tmp_path: Path, option: str) -> None:
    cwd = tmp_path / "work"
    cwd.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("s3cret\n")
    (cwd / "link").symlink_to(secret)  # followed before the check: it is outside
    seen: list[PermissionDecision] = []
    got: list[Any] = []

    async def turn(conn: Any) -> None:
        got.append(await ask(conn, "fs/read_text_file", path=str(cwd / "link")))

    await run_turn(Peer(), cwd, turn, answering(option, seen))
    (decision,) = seen
    assert decision.request.title == f"Read {secret.resolve()}"
    if option == "allow":
        assert got == [{"content": "s3cret\n"}]
    else:
        assert isinstance(got[0], acp.RpcError) and got[0].code == NOT_ALLOWED


@pytest.mark.anyio
@pytest.mark.parametrize("option", ["allow", "reject"])
async def test_a_hard_link_inside_the_cwd_is_asked_and_the_card_says_why(
    tmp_path: Path, option: str
) -> None:
    """Finding 17 of issue 22: it used to be read with no ask, as any file inside."""
    cwd = tmp_path / "work"
    cwd.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("s3cret\n")
    os.link(secret, cwd / "notes.txt")
    seen: list[PermissionDecision] = []
    got: list[Any] = []

    async def turn(conn: Any) -> None:
        got.append(await ask(conn, "fs/read_text_file", path=str(cwd / "notes.txt")))

    await run_turn(Peer(), cwd, turn, answering(option, seen))
    (decision,) = seen
    assert decision.request.title == f"Read {(cwd / 'notes.txt').resolve()}"
    assert "a hard link (2 names)" in (decision.request.description or "")
    if option == "allow":
        assert got == [{"content": "s3cret\n"}]
    else:
        assert isinstance(got[0], acp.RpcError) and got[0].code == NOT_ALLOWED
        assert "s3cret" not in repr(got[0].data) and "s3cret" not in str(got[0])


@pytest.mark.anyio
async def test_a_v2_agent_gets_no_client_services(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    async with scripted_agent(None, client_services=True) as (agent, conn):
        assert agent.protocol_version == 2
        await agent.new_session(tmp_path)
        error = await ask(conn, "terminal/create", command="touch", args=[str(marker)])
    assert isinstance(error, acp.RpcError) and error.code == p.ErrorCode.METHOD_NOT_FOUND
    assert not marker.exists()


def test_output_chunks_are_base64_of_the_bytes() -> None:
    from acp_notebook._client._services import AgentServices

    applied: list[Any] = []

    class Session:
        cwd, closed = "/", False

        def _apply(self, update: Any) -> None:
            applied.append(update)

    class Host:
        def __init__(self) -> None:
            self.sessions = {"s1": Session()}

        async def _client_permission(self, request: Any) -> Any:
            raise AssertionError

    services = AgentServices(Host())  # type: ignore[arg-type]
    from acp_notebook._client._terminals import TerminalRequest

    services.allowed["t"] = TerminalRequest("s1", "t", "ls", (), "/", (), None)
    services._on_output("t", b"\xff\x00")
    start, chunk = applied
    assert isinstance(start, p.TerminalUpdate) and start.command == "ls"
    assert isinstance(chunk, p.TerminalOutputChunk)
    assert base64.b64decode(chunk.data) == b"\xff\x00"


@pytest.mark.anyio
@pytest.mark.process
async def test_the_views_stop_button_kills_a_client_terminal_here(tmp_path: Path) -> None:
    got: dict[str, Any] = {}
    session_box: list[Any] = []

    async def turn(conn: Any) -> None:
        created = await ask(conn, "terminal/create", command="sleep", args=["300"])
        tid = created["terminalId"]
        state = session_box[0].turn.terminals[tid]
        assert state.capabilities is not None and state.capabilities.cancel is not None
        await session_box[0].cancel_terminal(tid)  # what the widget's Stop button calls
        got["exit"] = await ask(conn, "terminal/wait_for_exit", terminalId=tid)

    peer = Peer()
    async with scripted_agent(peer.handle, client_services=True) as (agent, conn):
        peer.conn = conn
        session = await agent.new_session(tmp_path)
        session_box.append(session)
        session.ask_permissions(answering("allow", []))
        peer.turn = turn
        with anyio.fail_after(30):
            await (await session.prompt("go")).wait()
    assert got["exit"] == {"exitCode": None, "signal": "SIGTERM"}
    assert "terminal/cancel" not in [m for m, _ in peer.calls]  # not the agent's to stop


@pytest.mark.anyio
@pytest.mark.process
async def test_stopping_a_released_client_terminal_does_nothing(tmp_path: Path) -> None:
    got: list[Any] = []
    session_box: list[Any] = []

    async def turn(conn: Any) -> None:
        created = await ask(conn, "terminal/create", command="true")
        tid = created["terminalId"]
        await ask(conn, "terminal/wait_for_exit", terminalId=tid)
        await ask(conn, "terminal/release", terminalId=tid)
        got.append(await session_box[0].cancel_terminal(tid))  # a stale Stop click

    peer = Peer()
    async with scripted_agent(peer.handle, client_services=True) as (agent, conn):
        peer.conn = conn
        session = await agent.new_session(tmp_path)
        session_box.append(session)
        session.ask_permissions(answering("allow", []))
        peer.turn = turn
        await (await session.prompt("go")).wait()
    assert got == [None]
    assert "terminal/cancel" not in [m for m, _ in peer.calls]


# -- one allow is enough: the agent's own request, allowed, names exactly the command ----------


def _agent_asks(conn: Any, command: Any, kind: str = "execute") -> Any:
    """The agent's own v1 permission request for an execute tool call running ``command``."""
    return conn.request(
        "session/request_permission",
        {
            "sessionId": "s1",
            "toolCall": {
                "toolCallId": "t1",
                "title": "Run it",
                "kind": kind,
                "rawInput": {"command": command},
            },
            "options": [
                {"optionId": "yes", "name": "Yes", "kind": "allow_once"},
                {"optionId": "no", "name": "No", "kind": "reject_once"},
            ],
        },
    )


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("argv", "asked_again"),
    [
        (["/bin/sh", "-lc", "touch ran"], False),  # fast-agent's form: the script is the command
        (["bash", "-c", "touch ran"], False),
        (["touch", "ran"], False),  # the argv as a shell reads it
        (["/bin/sh", "-lc", "touch ran; rm -rf x"], True),  # not the same command
        (["/bin/sh", "-i", "touch ran"], True),  # not a script flag
        (["python3", "-c", "touch ran"], True),  # not a shell
    ],
)
@pytest.mark.process
async def test_the_agents_allowed_request_for_exactly_this_command_is_enough(
    tmp_path: Path, argv: list[str], asked_again: bool
) -> None:
    seen: list[PermissionDecision] = []
    got: dict[str, Any] = {}

    async def turn(conn: Any) -> None:
        got["own"] = await _agent_asks(conn, "touch ran")
        created = await ask(conn, "terminal/create", command=argv[0], args=argv[1:])
        if isinstance(created, acp.RpcError):
            got["created"] = created
            return
        got["exit"] = await ask(conn, "terminal/wait_for_exit", terminalId=created["terminalId"])
        # a second run of the same command is not covered by the one allow
        again = await ask(conn, "terminal/create", command=argv[0], args=argv[1:])
        got["again"] = again

    async def asker(decision: PermissionDecision) -> Answer:
        seen.append(decision)
        own = decision.request.subject.type == "tool_call"  # type: ignore[union-attr]
        return Answer("yes" if own else "reject", "click")

    _session, done = await run_turn(Peer(), tmp_path, turn, asker)
    assert got["own"] == {"outcome": {"outcome": "selected", "optionId": "yes"}}
    if asked_again:  # the client asked for the command itself, and the click rejected it
        assert [d.request.subject.type for d in seen] == ["tool_call", "command"]  # type: ignore[union-attr]
        assert isinstance(got["created"], acp.RpcError)
        assert got["created"].code == NOT_ALLOWED
        assert not (tmp_path / "ran").exists()
        return
    assert "created" not in got  # the terminal was created: no refusal
    assert got["exit"]["exitCode"] == 0 and (tmp_path / "ran").exists()
    # asked once by the agent; the command was answered by that allow, visibly in the log
    first, covered, second = done.permissions
    assert first.decided_by == "click" and covered.decided_by == "earlier"
    assert covered.allowed and covered.detail == "Run it"
    # the second run was asked again (and rejected by the click)
    assert second.decided_by == "click" and not second.allowed
    assert isinstance(got["again"], acp.RpcError) and got["again"].code == NOT_ALLOWED


@pytest.mark.anyio
@pytest.mark.parametrize("how", ["rejected", "other folder", "with variables", "next turn"])
async def test_an_earlier_allow_covers_nothing_else(tmp_path: Path, how: str) -> None:
    seen: list[PermissionDecision] = []
    got: dict[str, Any] = {}
    (tmp_path / "sub").mkdir()

    async def turn(conn: Any) -> None:
        if how != "next turn" or "own" not in got:
            got["own"] = await _agent_asks(conn, "touch ran")
        if how == "next turn" and "first" not in got:
            got["first"] = True
            return  # the allow was in the first turn; the command comes in the second
        extra: dict[str, Any] = {}
        if how == "other folder":
            extra["cwd"] = str(tmp_path / "sub")
        if how == "with variables":
            extra["env"] = [{"name": "LD_PRELOAD", "value": "/tmp/x.so"}]
        got["created"] = await ask(
            conn, "terminal/create", command="/bin/sh", args=["-lc", "touch ran"], **extra
        )

    async def asker(decision: PermissionDecision) -> Answer:
        seen.append(decision)
        own = decision.request.subject.type == "tool_call"  # type: ignore[union-attr]
        return Answer(
            "yes" if own and how != "rejected" else "reject" if not own else "no", "click"
        )

    peer = Peer()
    async with scripted_agent(peer.handle, client_services=True) as (agent, conn):
        peer.conn = conn
        session = await agent.new_session(tmp_path)
        session.ask_permissions(asker)
        peer.turn = turn
        for _ in range(2 if how == "next turn" else 1):
            done = await session.prompt("go")
            assert await done.wait() == "end_turn"
    assert isinstance(got["created"], acp.RpcError), got["created"]
    assert seen[-1].request.subject.type == "command"  # type: ignore[union-attr]
    assert not (tmp_path / "ran").exists() and not (tmp_path / "sub" / "ran").exists()


# -- issue 22, finding 9: one allow unwraps only a real shell's script ------------------------


def _fake_shell(folder: Path, canary: Path) -> Path:
    """A program named ``bash`` that is no shell: it touches ``canary``, whatever it is given."""
    folder.mkdir(parents=True, exist_ok=True)
    fake = folder / "bash"
    fake.write_text(f"#!/bin/sh\ntouch '{canary}'\n")
    fake.chmod(0o755)
    return fake


@pytest.mark.anyio
@pytest.mark.parametrize("how", ["absolute", "relative", "dotted", "first on PATH"])
async def test_an_earlier_allow_never_unwraps_a_fake_shell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    canary = tmp_path / "canary"
    tools = tmp_path / "tools"
    fake = _fake_shell(tools, canary)
    command = {
        "absolute": str(fake),
        "relative": "tools/bash",  # exec'd from the session's folder
        "dotted": f"/usr/bin/../..{fake}",  # not in /usr/bin once read
        "first on PATH": "bash",
    }[how]
    if how == "first on PATH":
        monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    seen: list[PermissionDecision] = []
    got: dict[str, Any] = {}

    async def turn(conn: Any) -> None:
        got["own"] = await _agent_asks(conn, "ls")
        got["created"] = await ask(conn, "terminal/create", command=command, args=["-c", "ls"])
        if isinstance(got["created"], dict):  # it ran: let it finish before looking
            await ask(conn, "terminal/wait_for_exit", terminalId=got["created"]["terminalId"])

    async def asker(decision: PermissionDecision) -> Answer:
        seen.append(decision)
        own = decision.request.subject.type == "tool_call"  # type: ignore[union-attr]
        return Answer("yes" if own else "reject", "click")

    await run_turn(Peer(), tmp_path, turn, asker)
    assert got["own"] == {"outcome": {"outcome": "selected", "optionId": "yes"}}
    assert not canary.exists()  # the fake shell never ran
    assert isinstance(got["created"], acp.RpcError) and got["created"].code == NOT_ALLOWED
    # the command was asked for itself (and the click rejected it)
    assert [d.request.subject.type for d in seen] == ["tool_call", "command"]  # type: ignore[union-attr]


@pytest.mark.anyio
@pytest.mark.parametrize("shell", ["bash", "sh", "/bin/sh", "/usr/bin/bash"])
@pytest.mark.process
async def test_an_earlier_allow_still_unwraps_a_real_shell(tmp_path: Path, shell: str) -> None:
    if not os.path.isfile(shell if "/" in shell else f"/usr/bin/{shell}"):
        pytest.skip(f"no {shell} here")
    got: dict[str, Any] = {}

    async def turn(conn: Any) -> None:
        got["own"] = await _agent_asks(conn, "touch ran")
        created = await ask(conn, "terminal/create", command=shell, args=["-c", "touch ran"])
        got["exit"] = await ask(conn, "terminal/wait_for_exit", terminalId=created["terminalId"])

    _session, done = await run_turn(Peer(), tmp_path, turn, answering("yes", []))
    assert got["exit"]["exitCode"] == 0 and (tmp_path / "ran").exists()
    assert [d.decided_by for d in done.permissions] == ["click", "earlier"]
