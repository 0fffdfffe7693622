"""End-to-end tests of the embedded agent: the real subprocess, raw JSON-RPC, schema-checked.

Every message the agent sends (session updates, permission requests, responses) is validated
against the v2 JSON Schema.
"""

from __future__ import annotations

import base64
import hashlib
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from _schema import assert_valid

from acp_notebook._connection._errors import AgentExited, RpcError
from acp_notebook._connection._jsonrpc import Connection, Problem
from acp_notebook._connection._process import AgentProcess, open_agent_connection

pytestmark = pytest.mark.anyio

# Generous guard against a hung test; never an assertion about speed.
HANG_GUARD = 30

Policy = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


def select(option_id: str) -> Policy:
    async def answer(params: dict[str, Any]) -> dict[str, Any]:
        return {"outcome": {"outcome": "selected", "optionId": option_id}}

    return answer


def choose(kind: str) -> Policy:
    """Select the first offered option of this kind."""

    async def answer(params: dict[str, Any]) -> dict[str, Any]:
        option = next(o for o in params["options"] if o["kind"] == kind)
        return {"outcome": {"outcome": "selected", "optionId": option["optionId"]}}

    return answer


async def never_answer(params: dict[str, Any]) -> dict[str, Any]:
    await anyio.sleep_forever()
    raise AssertionError("unreachable")


class AgentUnderTest:
    """A client side for the agent subprocess that records (and validates) what it sends."""

    def __init__(self) -> None:
        self.conn: Connection
        self.process: AgentProcess
        self.updates: list[dict[str, Any]] = []  # session/update params, in order
        self.permission_requests: list[dict[str, Any]] = []
        self.problems: list[Problem] = []
        self.policy: Policy = select("allow-once")
        self.on_update: Callable[[dict[str, Any]], None] | None = None  # sees each update first
        self._changed = anyio.Event()

    # -- handlers --------------------------------------------------------------------

    async def on_request(self, method: str, params: Any) -> Any:
        assert method == "session/request_permission", method
        assert_valid("RequestPermissionRequest", params)
        self.permission_requests.append(params)
        self._poke()
        result = await self.policy(params)
        assert_valid("RequestPermissionResponse", result)
        return result

    async def on_notification(self, method: str, params: Any) -> None:
        assert method == "session/update", method
        assert_valid("UpdateSessionNotification", params)
        if self.on_update is not None:
            self.on_update(params["update"])
        self.updates.append(params)
        self._poke()

    def _poke(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    # -- requests --------------------------------------------------------------------

    async def call(self, method: str, params: Any, response_type: str) -> Any:
        result = await self.conn.request(method, params)
        assert_valid(response_type, result)
        return result

    async def initialize(self) -> dict[str, Any]:
        params = {"protocolVersion": 2, "info": {"name": "tests", "version": "1"}}
        result: dict[str, Any] = await self.call("initialize", params, "InitializeResponse")
        return result

    async def new_session(self, cwd: Path) -> str:
        result = await self.call("session/new", {"cwd": str(cwd)}, "NewSessionResponse")
        return str(result["sessionId"])

    async def prompt(self, session_id: str, text: str) -> str:
        params = {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
        result = await self.call("session/prompt", params, "PromptResponse")
        return str(result["messageId"])

    # -- waiting ---------------------------------------------------------------------

    async def wait_for(self, predicate: Callable[[], Any]) -> Any:
        with anyio.fail_after(HANG_GUARD):
            while not (value := predicate()):
                await self._changed.wait()
            return value

    def session_updates(self, session_id: str) -> list[dict[str, Any]]:
        return [p["update"] for p in self.updates if p["sessionId"] == session_id]

    def idles(self, session_id: str) -> list[dict[str, Any]]:
        return [
            u
            for u in self.session_updates(session_id)
            if u["sessionUpdate"] == "state_update" and u["state"] == "idle"
        ]

    async def run_turn(self, session_id: str, text: str) -> dict[str, Any]:
        """Prompt, wait for the idle that ends this turn, return it."""
        before = len(self.idles(session_id))
        await self.prompt(session_id, text)
        idles = await self.wait_for(lambda: self.idles(session_id)[before:])
        result: dict[str, Any] = idles[0]
        return result

    # -- reading the record ----------------------------------------------------------

    def tool_calls(self, session_id: str) -> dict[str, dict[str, Any]]:
        """Each tool call folded from its updates (later fields replace earlier ones)."""
        calls: dict[str, dict[str, Any]] = {}
        for u in self.session_updates(session_id):
            if u["sessionUpdate"] == "tool_call_update":
                calls.setdefault(u["toolCallId"], {}).update(u)
        return calls

    def terminal(self, session_id: str, terminal_id: str) -> tuple[dict[str, Any], bytes]:
        fields: dict[str, Any] = {}
        data = bytearray()
        for u in self.session_updates(session_id):
            if u.get("terminalId") != terminal_id:
                continue
            if u["sessionUpdate"] == "terminal_update":
                fields.update(u)
                if isinstance(u.get("output"), dict):
                    data[:] = base64.b64decode(u["output"]["data"])
            elif u["sessionUpdate"] == "terminal_output_chunk":
                data += base64.b64decode(u["data"], validate=True)
        return fields, bytes(data)

    def messages(self, session_id: str) -> dict[str, tuple[str, str]]:
        """messageId -> (kind, text) for user and agent messages."""
        out: dict[str, tuple[str, str]] = {}
        for u in self.session_updates(session_id):
            tag = u["sessionUpdate"]
            if tag in ("user_message", "agent_message"):
                text = "".join(b.get("text", "") for b in u.get("content") or [])
                out[u["messageId"]] = (tag.split("_")[0], text)
            elif tag in ("user_message_chunk", "agent_message_chunk"):
                kind, text = out.get(u["messageId"], (tag.split("_")[0], ""))
                out[u["messageId"]] = (kind, text + u["content"].get("text", ""))
        return out


@asynccontextmanager
async def agent(
    data_dir: Path, *flags: str, max_line_bytes: int = 64 * 2**20
) -> AsyncIterator[AgentUnderTest]:
    """The agent subprocess behind our process + connection layers."""
    argv = [sys.executable, "-m", "acp_notebook.agent", "--data-dir", str(data_dir), *flags]
    under_test = AgentUnderTest()
    async with open_agent_connection(
        argv,
        max_line_bytes=max_line_bytes,
        request_handler=under_test.on_request,
        notification_handler=under_test.on_notification,
        on_problem=under_test.problems.append,
    ) as (process, conn):
        under_test.process = process
        under_test.conn = conn
        yield under_test


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


def only(items: list[Any]) -> Any:
    assert len(items) == 1, items
    return items[0]


# -- acceptance ------------------------------------------------------------------------------


async def test_initialize_advertises_session_and_answers_v2(data_dir: Path) -> None:
    async with agent(data_dir) as a:
        params = {"protocolVersion": 7, "info": {"name": "tests", "version": "1"}}
        result = await a.call("initialize", params, "InitializeResponse")
    assert result["protocolVersion"] == 2
    # it takes MCP servers of both kinds (``@tool`` lines call them)
    assert result["capabilities"]["session"] == {"mcp": {"http": {}, "stdio": {}}}
    assert result["info"]["name"] == "acp-notebook-agent"


async def test_approved_command_streams_exact_bytes_and_fails_on_exit_3(
    data_dir: Path, cwd: Path
) -> None:
    async with agent(data_dir) as a:
        await a.initialize()
        sid = await a.new_session(cwd)
        idle = await a.run_turn(sid, "Running it.\n$ printf 'a\\nb\\n'; exit 3")
        request = only(a.permission_requests)
        call = only(list(a.tool_calls(sid).values()))
        terminal_id = request["subject"]["terminalId"]
        fields, data = a.terminal(sid, terminal_id)
        updates = a.session_updates(sid)
    assert idle["stopReason"] == "end_turn"
    assert request["subject"] == {
        "type": "command",
        "command": "printf 'a\\nb\\n'; exit 3",
        "cwd": str(cwd),
        "toolCallId": call["toolCallId"],
        "terminalId": terminal_id,
    }
    assert {o["kind"] for o in request["options"]} == {
        "allow_once",
        "allow_always",
        "reject_once",
        "reject_always",
    }
    assert data == b"a\r\nb\r\n"  # the PTY maps \n to \r\n (ONLCR)
    assert fields["exitStatus"] == {"exitCode": 3}
    assert fields["command"] == "printf 'a\\nb\\n'; exit 3"
    assert fields["cwd"] == str(cwd)
    assert fields["size"] == {"cols": 80, "rows": 24}
    assert fields["capabilities"] == {"cancel": {}}
    assert call["kind"] == "execute"
    assert call["status"] == "failed"
    assert {"type": "terminal", "terminalId": terminal_id} in call["content"]
    tags = [u["sessionUpdate"] + ":" + u.get("state", u.get("status", "")) for u in updates]
    # The turn is bracketed and the permission request sits inside requires_action.
    assert tags[0] == "user_message:"
    assert tags[1] == "state_update:running"
    assert tags.index("tool_call_update:pending") < tags.index("state_update:requires_action")
    assert tags[-1] == "state_update:idle"


async def test_rejected_command_never_runs(data_dir: Path, cwd: Path) -> None:
    async with agent(data_dir) as a:
        await a.initialize()
        sid = await a.new_session(cwd)
        a.policy = select("reject-once")
        idle = await a.run_turn(sid, "$ touch x")
        call = only(list(a.tool_calls(sid).values()))
        terminal_updates = [u for u in a.session_updates(sid) if "terminalId" in u]
    assert not (cwd / "x").exists()
    assert call["status"] == "failed"
    assert "rejected" in call["content"][0]["content"]["text"]
    assert terminal_updates == []
    assert idle["stopReason"] == "end_turn"


@pytest.mark.parametrize(
    "answer",
    [
        {"outcome": {"outcome": "selected", "optionId": "no-such-option"}},
        {"outcome": {"outcome": "_future_outcome"}},
        {"outcome": {"outcome": "cancelled"}},
    ],
    ids=["unknown-option", "unknown-outcome", "cancelled"],
)
async def test_unclear_answers_fail_closed(
    data_dir: Path, cwd: Path, answer: dict[str, Any]
) -> None:
    async def policy(params: dict[str, Any]) -> dict[str, Any]:
        return answer

    async with agent(data_dir) as a:
        await a.initialize()
        sid = await a.new_session(cwd)
        a.policy = policy
        idle = await a.run_turn(sid, "$ touch x\n$ touch y")
        calls = list(a.tool_calls(sid).values())
    assert not (cwd / "x").exists()
    assert not (cwd / "y").exists()
    assert only(calls)["status"] == "failed"  # the turn stops at the first unclear answer
    assert idle["stopReason"] == "cancelled"


async def test_error_answer_to_permission_fails_closed(data_dir: Path, cwd: Path) -> None:
    async def policy(params: dict[str, Any]) -> dict[str, Any]:
        raise RpcError(-32603, "client broke")

    async with agent(data_dir) as a:
        await a.initialize()
        sid = await a.new_session(cwd)
        a.policy = policy
        await a.run_turn(sid, "$ touch x")
        call = only(list(a.tool_calls(sid).values()))
    assert not (cwd / "x").exists()
    assert call["status"] == "failed"
    assert "client broke" in call["content"][0]["content"]["text"]


async def test_cancelled_sleep_ends_with_a_signal_within_two_seconds(
    data_dir: Path, cwd: Path
) -> None:
    async with agent(data_dir) as a:
        await a.initialize()
        sid = await a.new_session(cwd)
        await a.prompt(sid, "$ sleep 30")
        calls = lambda: a.tool_calls(sid).values()  # noqa: E731
        await a.wait_for(lambda: any(c.get("status") == "in_progress" for c in calls()))
        await a.conn.notify("session/cancel", {"sessionId": sid})
        with anyio.fail_after(2):  # the acceptance criterion itself
            idle = only(await a.wait_for(lambda: a.idles(sid)))
        call = only(list(calls()))
        fields, _ = a.terminal(sid, call["content"][0]["terminalId"])
    assert idle["stopReason"] == "cancelled"
    assert fields["exitStatus"]["signal"] in ("SIGINT", "SIGKILL")
    assert call["status"] == "cancelled"


async def test_cancel_withdraws_a_pending_permission_request(data_dir: Path, cwd: Path) -> None:
    async with agent(data_dir) as a:
        await a.initialize()
        sid = await a.new_session(cwd)
        a.policy = never_answer
        await a.prompt(sid, "$ touch x")
        await a.wait_for(lambda: a.permission_requests)
        await a.conn.notify("session/cancel", {"sessionId": sid})
        idle = only(await a.wait_for(lambda: a.idles(sid)))
        call = only(list(a.tool_calls(sid).values()))
        received = [m for d, m in a.conn.log if d == "recv" and isinstance(m, dict)]
        asked = only([m for m in received if m.get("method") == "session/request_permission"])
        withdrawn = only([m for m in received if m.get("method") == "$/cancel_request"])
    assert idle["stopReason"] == "cancelled"
    assert call["status"] == "cancelled"
    assert not (cwd / "x").exists()
    assert withdrawn["params"] == {"requestId": asked["id"]}


async def test_terminal_cancel_stops_one_command_and_the_turn_goes_on(
    data_dir: Path, cwd: Path
) -> None:
    async with agent(data_dir) as a:
        await a.initialize()
        sid = await a.new_session(cwd)
        await a.prompt(sid, "$ sleep 30\n$ echo after")
        await a.wait_for(lambda: a.permission_requests)
        terminal_id = a.permission_requests[0]["subject"]["terminalId"]
        await a.wait_for(lambda: a.terminal(sid, terminal_id)[0].get("command"))
        result = await a.call(
            "terminal/cancel",
            {"sessionId": sid, "terminalId": terminal_id},
            "CancelTerminalResponse",
        )
        idle = only(await a.wait_for(lambda: a.idles(sid)))
        first, second = a.tool_calls(sid).values()
        fields, _ = a.terminal(sid, terminal_id)
        _, after = a.terminal(sid, a.permission_requests[1]["subject"]["terminalId"])
    assert result == {}
    assert fields["exitStatus"]["signal"] in ("SIGINT", "SIGKILL")
    assert first["status"] == "cancelled"
    assert second["status"] == "completed"
    assert after == b"after\r\n"
    assert idle["stopReason"] == "end_turn"


async def test_a_terminal_can_be_cancelled_the_moment_it_is_announced(
    data_dir: Path, cwd: Path
) -> None:
    # The announcement carries ``capabilities.cancel``, so a client may press stop at once,
    # before any output or any other update. Each of these commands is cancelled that early.
    cancelled: list[Any] = []
    async with agent(data_dir) as a, anyio.create_task_group() as tg:

        async def stop(terminal_id: str) -> None:
            params = {"sessionId": sid, "terminalId": terminal_id}
            cancelled.append(await a.call("terminal/cancel", params, "CancelTerminalResponse"))

        def on_update(update: dict[str, Any]) -> None:
            if update["sessionUpdate"] == "terminal_update" and "command" in update:
                tg.start_soon(stop, update["terminalId"])

        await a.initialize()
        sid = await a.new_session(cwd)
        a.on_update = on_update
        await a.prompt(sid, "$ sleep 30\n$ sleep 31\n$ sleep 32")
        idle = only(await a.wait_for(lambda: a.idles(sid)))
        statuses = [c["status"] for c in a.tool_calls(sid).values()]
        signals = [
            a.terminal(sid, r["subject"]["terminalId"])[0]["exitStatus"].get("signal")
            for r in a.permission_requests[:3]
        ]
    assert cancelled == [{}, {}, {}]
    assert statuses == ["cancelled", "cancelled", "cancelled"]
    assert all(s in ("SIGINT", "SIGKILL") for s in signals)
    assert idle["stopReason"] == "end_turn"


async def test_allow_always_is_remembered_for_the_same_command(data_dir: Path, cwd: Path) -> None:
    async with agent(data_dir) as a:
        await a.initialize()
        sid = await a.new_session(cwd)
        a.policy = select("allow-always")
        await a.run_turn(sid, "$ echo hi >> log")
        await a.run_turn(sid, "$ echo hi >> log\n$ echo other")
        statuses = [c["status"] for c in a.tool_calls(sid).values()]
        asked = [r["subject"]["command"] for r in a.permission_requests]
    assert (cwd / "log").read_text() == "hi\nhi\n"
    assert asked == ["echo hi >> log", "echo other"]
    assert statuses == ["completed", "completed", "completed"]


async def test_reject_always_is_remembered(data_dir: Path, cwd: Path) -> None:
    async with agent(data_dir) as a:
        await a.initialize()
        sid = await a.new_session(cwd)
        a.policy = select("reject-always")
        await a.run_turn(sid, "$ touch x")
        await a.run_turn(sid, "$ touch x")
        statuses = [c["status"] for c in a.tool_calls(sid).values()]
    assert len(a.permission_requests) == 1
    assert statuses == ["failed", "failed"]
    assert not (cwd / "x").exists()


async def test_file_write_inside_cwd_asks_with_a_diff_and_writes_on_allow(
    data_dir: Path, cwd: Path
) -> None:
    (cwd / "old.txt").write_text("one\ntwo\n")
    async with agent(data_dir) as a:
        await a.initialize()
        sid = await a.new_session(cwd)
        await a.run_turn(
            sid, "```file path=sub/new.txt\nhello\n```\n```file path=old.txt\none\n2\n```"
        )
        requests = list(a.permission_requests)
        calls = list(a.tool_calls(sid).values())
    assert (cwd / "sub" / "new.txt").read_text() == "hello\n"
    assert (cwd / "old.txt").read_text() == "one\n2\n"
    new_call = requests[0]["subject"]["toolCall"]
    assert requests[0]["subject"]["type"] == "tool_call"
    assert new_call["kind"] == "edit"
    assert new_call["locations"] == [{"path": str(cwd / "sub" / "new.txt")}]
    diff = only(new_call["content"])
    target = str(cwd / "sub" / "new.txt")
    assert diff["changes"] == [{"operation": "add", "path": target, "fileType": "text"}]
    assert diff["patch"]["format"] == "git_patch"
    assert diff["patch"]["text"].startswith(f"diff --git {target} {target}\n")
    assert "+hello\n" in diff["patch"]["text"]
    modify = only(requests[1]["subject"]["toolCall"]["content"])
    assert modify["changes"][0]["operation"] == "modify"
    assert "-two\n+2\n" in modify["patch"]["text"]
    assert [c["status"] for c in calls] == ["completed", "completed"]


async def test_file_write_is_not_done_on_reject(data_dir: Path, cwd: Path) -> None:
    async with agent(data_dir) as a:
        await a.initialize()
        sid = await a.new_session(cwd)
        a.policy = select("reject-once")
        await a.run_turn(sid, "```file path=new.txt\nhello\n```")
        call = only(list(a.tool_calls(sid).values()))
    assert not (cwd / "new.txt").exists()
    assert call["status"] == "failed"


async def test_writes_outside_the_cwd_are_refused_without_asking(
    data_dir: Path, cwd: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (cwd / "link").symlink_to(outside)
    prompt = "\n".join(
        f"```file path={p}\nowned\n```"
        for p in ("../outside/a.txt", f"{outside}/b.txt", "link/c.txt", "sub/../../outside/d")
    )
    async with agent(data_dir) as a:
        await a.initialize()
        sid = await a.new_session(cwd)
        idle = await a.run_turn(sid, prompt)
        calls = list(a.tool_calls(sid).values())
    assert a.permission_requests == []
    assert list(outside.iterdir()) == []
    assert [c["status"] for c in calls] == ["failed"] * 4
    assert all("refused" in c["content"][0]["content"]["text"] for c in calls)
    assert idle["stopReason"] == "end_turn"


async def test_session_resumed_after_restart_replays_messages_and_terminal_bytes(
    data_dir: Path, cwd: Path
) -> None:
    script = "Hello there.\n$ printf 'x\\033[31my\\r\\n'; printf 'z'\nBye."
    async with agent(data_dir) as a:
        await a.initialize()
        sid = await a.new_session(cwd)
        await a.run_turn(sid, script)
        live_messages = a.messages(sid)
        terminal_id = a.permission_requests[0]["subject"]["terminalId"]
        live_fields, live_bytes = a.terminal(sid, terminal_id)
        live_calls = a.tool_calls(sid)
    async with agent(data_dir) as b:
        await b.initialize()
        listed = await b.call("session/list", {}, "ListSessionsResponse")
        result = await b.call(
            "session/resume",
            {"sessionId": sid, "cwd": str(cwd), "replayFrom": {"type": "start"}},
            "ResumeSessionResponse",
        )
        replayed = b.session_updates(sid)  # all arrived before the response
        replay_messages = b.messages(sid)
        replay_fields, replay_bytes = b.terminal(sid, terminal_id)
        replay_calls = b.tool_calls(sid)
        # The resumed session takes new prompts.
        idle = await b.run_turn(sid, "again")
    # the answer lists the session's config options: its mode, where it was (ask)
    [mode] = result["configOptions"]
    assert (mode["configId"], mode["category"], mode["currentValue"]) == ("mode", "mode", "ask")
    assert result.keys() == {"configOptions"}
    assert [s["sessionId"] for s in listed["sessions"]] == [sid]
    assert only(listed["sessions"])["title"] == "Hello there."
    assert replay_messages == live_messages
    assert len([m for m in live_messages.values() if m[0] == "agent"]) == 2
    assert replay_bytes == live_bytes == b"x\x1b[31my\r\r\nz"  # ONLCR: \n -> \r\n
    assert replay_fields["exitStatus"] == live_fields["exitStatus"] == {"exitCode": 0}
    assert not any(u["sessionUpdate"] == "terminal_output_chunk" for u in replayed)
    assert not any(u["sessionUpdate"] == "state_update" for u in replayed)
    assert {k: v["status"] for k, v in replay_calls.items()} == {
        k: v["status"] for k, v in live_calls.items()
    }
    assert idle["stopReason"] == "end_turn"


async def test_resume_without_replay_sends_nothing_and_unknown_sessions_are_not_found(
    data_dir: Path, cwd: Path
) -> None:
    async with agent(data_dir) as a:
        await a.initialize()
        sid = await a.new_session(cwd)
        await a.run_turn(sid, "hi")
    async with agent(data_dir) as b:
        await b.initialize()
        await b.call("session/resume", {"sessionId": sid, "cwd": str(cwd)}, "ResumeSessionResponse")
        with pytest.raises(RpcError) as info:
            await b.conn.request("session/resume", {"sessionId": "nope", "cwd": str(cwd)})
        with pytest.raises(RpcError) as prompt_info:
            await b.conn.request(
                "session/prompt", {"sessionId": "nope", "prompt": [{"type": "text", "text": "x"}]}
            )
    assert b.updates == []
    assert info.value.code == -32002
    assert info.value.data == {"sessionId": "nope"}
    assert prompt_info.value.code == -32002


async def test_close_cancels_the_running_turn(data_dir: Path, cwd: Path) -> None:
    async with agent(data_dir) as a:
        await a.initialize()
        sid = await a.new_session(cwd)
        await a.prompt(sid, "$ sleep 30")
        await a.wait_for(lambda: a.permission_requests)
        terminal_id = a.permission_requests[0]["subject"]["terminalId"]
        await a.wait_for(lambda: a.terminal(sid, terminal_id)[0].get("command"))
        result = await a.call("session/close", {"sessionId": sid}, "CloseSessionResponse")
        idle = only(a.idles(sid))  # sent before the close answer
        with pytest.raises(RpcError):
            await a.conn.request(
                "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "x"}]}
            )
    assert result == {}
    assert idle["stopReason"] == "cancelled"


# -- scenario and faults -----------------------------------------------------------------------


async def test_scenario_plays_updates_and_permission_requests(
    data_dir: Path, cwd: Path, tmp_path: Path
) -> None:
    scenario = tmp_path / "scenario.jsonl"
    scenario.write_text(
        "# first prompt\n"
        '{"update": {"sessionUpdate": "agent_message_chunk", "messageId": "m1",'
        ' "content": {"type": "text", "text": "scripted in ${cwd}"}}}\n'
        '{"permission": {"title": "Go?", "options": [{"optionId": "y", "name": "Yes",'
        ' "kind": "allow_once"}]}, "expect": ["allow_once"]}\n'
        '{"script": "$ echo from-script"}\n'
        '{"turn": {}}\n'
        '{"stopReason": "refusal"}\n'
    )
    async with agent(data_dir, "--scenario", str(scenario)) as a:
        await a.initialize()
        sid = await a.new_session(cwd)
        a.policy = choose("allow_once")
        first = await a.run_turn(sid, "anything")
        second = await a.run_turn(sid, "anything")
        messages = a.messages(sid)
        calls = list(a.tool_calls(sid).values())
    assert messages["m1"] == ("agent", f"scripted in {cwd}")
    assert a.permission_requests[0]["title"] == "Go?"
    assert only(calls)["status"] == "completed"
    assert first["stopReason"] == "end_turn"
    assert second["stopReason"] == "refusal"


async def test_crash_after_exits_3_with_a_stderr_line(data_dir: Path, cwd: Path) -> None:
    async with agent(data_dir, "--crash-after", "2") as a:
        await a.initialize()
        await a.new_session(cwd)
        code = await a.process.wait()
        with pytest.raises(AgentExited) as info:
            await a.conn.request("session/list", {})
    assert code == 3
    assert "--crash-after 2" in a.process.stderr_tail()
    assert "--crash-after 2" in str(info.value)


async def test_bad_json_and_oversize_lines_are_survived(data_dir: Path, cwd: Path) -> None:
    async with agent(
        data_dir, "--bad-json", "--oversize-line", "200000", max_line_bytes=100000
    ) as a:
        await a.initialize()
        sid = await a.new_session(cwd)
        idle = await a.run_turn(sid, "$ echo ok")
        call = only(list(a.tool_calls(sid).values()))
    assert idle["stopReason"] == "end_turn"
    assert call["status"] == "completed"
    assert sorted(p.kind for p in a.problems) == ["too_long", "unparsable"]
    assert any("200000" in p.detail for p in a.problems)


async def test_bad_base64_chunk_is_sent_between_good_ones(data_dir: Path, cwd: Path) -> None:
    async with agent(data_dir, "--bad-base64") as a:
        await a.initialize()
        sid = await a.new_session(cwd)
        await a.run_turn(sid, "hi")
        chunks = [
            u["data"]
            for u in a.session_updates(sid)
            if u["sessionUpdate"] == "terminal_output_chunk"
        ]
    assert chunks[0] == "%%% not base64 %%%"
    assert base64.b64decode(chunks[1], validate=True) == b"after the bad chunk\n"


async def test_flood_stderr_is_written(data_dir: Path, cwd: Path) -> None:
    async with agent(data_dir, "--flood-stderr", "2") as a:
        await a.initialize()
        sid = await a.new_session(cwd)
        idle = await a.run_turn(sid, "hi")
    assert idle["stopReason"] == "end_turn"
    assert a.process.stderr_total_bytes >= 2 * 2**20


async def test_flood_output_arrives_intact(data_dir: Path, cwd: Path) -> None:
    async with agent(data_dir, "--flood-output", "4") as a:
        await a.initialize()
        sid = await a.new_session(cwd)
        await a.run_turn(sid, "flood")
        terminal_id = next(
            u["terminalId"]
            for u in a.session_updates(sid)
            if u["sessionUpdate"] == "terminal_update"
        )
        fields, data = a.terminal(sid, terminal_id)
    meta = fields["_meta"]["acpNotebook"]
    assert len(data) == meta["bytes"] == 4 * 2**20
    assert hashlib.sha256(data).hexdigest() == meta["sha256"]


async def test_hang_answers_initialize_only(data_dir: Path, cwd: Path) -> None:
    async with agent(data_dir, "--hang") as a:
        await a.initialize()
        answered = False
        with anyio.move_on_after(0.5):
            await a.conn.request("session/new", {"cwd": str(cwd)})
            answered = True
        assert a.process.returncode is None
    assert not answered


async def test_bad_params_busy_sessions_and_unknown_methods(data_dir: Path, cwd: Path) -> None:
    async with agent(data_dir) as a:
        await a.initialize()
        errors: dict[str, int] = {}
        for name, method, params in [
            ("relative cwd", "session/new", {"cwd": "relative"}),
            ("missing cwd", "session/new", {"cwd": str(cwd / "missing")}),
            ("no session id", "session/prompt", {"prompt": [{"type": "text", "text": "x"}]}),
            ("unknown method", "session/fork", {}),
        ]:
            with pytest.raises(RpcError) as info:
                await a.conn.request(method, params)
            errors[name] = info.value.code
        sid = await a.new_session(cwd)
        a.policy = never_answer
        await a.prompt(sid, "$ true")
        with pytest.raises(RpcError) as busy:
            await a.prompt(sid, "again")
        with pytest.raises(RpcError) as empty:
            await a.conn.request("session/prompt", {"sessionId": sid, "prompt": []})
        await a.conn.notify("session/cancel", {"sessionId": sid})
        idle = only(await a.wait_for(lambda: a.idles(sid)))
    assert errors == {
        "relative cwd": -32602,
        "missing cwd": -32602,
        "no session id": -32602,
        "unknown method": -32601,
    }
    assert busy.value.code == -32600
    assert empty.value.code == -32602
    assert idle["stopReason"] == "cancelled"


async def test_scenario_expectation_mismatch_ends_the_turn(
    data_dir: Path, cwd: Path, tmp_path: Path
) -> None:
    scenario = tmp_path / "scenario.jsonl"
    scenario.write_text(
        '{"permission": {"title": "Go?", "subject": {"type": "command", "command": "x",'
        ' "cwd": "${cwd}"}, "options": [{"optionId": "y", "name": "Yes", "kind": "allow_once"},'
        ' {"optionId": "n", "name": "No", "kind": "reject_once"}]}, "expect": ["allow_once"]}\n'
        '{"update": {"sessionUpdate": "agent_message_chunk", "messageId": "m",'
        ' "content": {"type": "text", "text": "not reached"}}}\n'
    )
    async with agent(data_dir, "--scenario", str(scenario)) as a:
        await a.initialize()
        sid = await a.new_session(cwd)
        a.policy = choose("reject_once")
        idle = await a.run_turn(sid, "go")
    assert only(a.permission_requests)["subject"]["cwd"] == str(cwd)
    assert idle["stopReason"] == "_scenario_mismatch"
    assert "m" not in a.messages(sid)


async def test_bad_scenario_file_exits_2_naming_the_line(tmp_path: Path) -> None:
    scenario = tmp_path / "bad.jsonl"
    scenario.write_text('{"sleep": 0}\n{"nope": 1}\n')
    argv = [sys.executable, "-m", "acp_notebook.agent", "--scenario", str(scenario)]
    argv += ["--data-dir", str(tmp_path / "data")]
    async with AgentProcess.spawn(argv) as process:
        code = await process.wait()
        await process.exit_error()  # waits for the end of stderr
        tail = process.stderr_tail()
    assert code == 2
    assert "bad.jsonl:2" in tail
