"""A v1 agent's client terminals and file system through a cell's run (`CellRun`, no kernel):
each command and each write is shown on the cell's card and happens only after its allow (a
click, a ``--allow`` policy); the output streams into the view's terminal; cancel and kernel
shutdown kill the commands. The agent is a scripted v1 peer in memory (tests/_memory.py)."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from collections.abc import Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from html import escape as html_escape
from pathlib import Path
from typing import Any

import anyio
import pytest
from _memory import scripted_agent
from _runs import start_run
from test_terminals import live_members, wait_gone

import acp_notebook as acp
from acp_notebook._client._approval import NOT_ALLOWED
from acp_notebook._notebook._cells import CellRun
from acp_notebook._notebook._owner import Notebook
from acp_notebook._policy._rules import Policy

SID = "s1"
V1_INIT = {
    "protocolVersion": 1,
    "agentCapabilities": {},
    "agentInfo": {"name": "v1", "version": "1"},
}
Script = Callable[[Any], Awaitable[None]]


class V1Notebook:
    """A notebook whose agent is a v1 peer: its ``session/prompt`` runs ``self.script``."""

    def __init__(self, tmp_path: Path) -> None:
        self.cwd = tmp_path
        self.script: Script | None = None
        self.peers: list[Any] = []
        self.offered: list[Any] = []
        self.got: dict[str, Any] = {}

        async def handler(method: str, params: Any) -> Any:
            if method == "initialize":
                self.offered.append(params.get("clientCapabilities"))
                return V1_INIT
            if method == "session/new":
                return {"sessionId": SID}
            if method == "session/prompt":
                assert self.script is not None
                await self.script(self.peers[-1])
                return {"stopReason": "end_turn"}
            raise acp.MethodNotFound(method)

        @asynccontextmanager
        async def connector(**options: Any) -> Any:
            async with scripted_agent(handler, **options) as (agent, peer):
                self.peers.append(peer)
                yield agent

        self.nb = Notebook(connector=lambda argv, cwd, env: connector)
        self.nb.set_panel_auto(make=False)
        self.nb.connect("v1", ["(scripted v1)"], str(tmp_path))

    async def ask(self, conn: Any, key: str, method: str, **params: Any) -> Any:
        """The agent's request, its answer (or RpcError) kept as ``self.got[key]``."""
        try:
            answer = await conn.request(method, {"sessionId": SID, **params})
        except acp.RpcError as exc:
            answer = exc
        self.got[key] = answer
        return answer


@pytest.fixture
def v1(tmp_path: Path) -> Iterator[V1Notebook]:
    made = V1Notebook(tmp_path)
    yield made
    made.nb.shutdown()


def shown(run: CellRun, count: int = 1) -> Any:
    """Wait until the run shows ``count`` requests; the last card."""

    async def wait() -> Any:
        with anyio.fail_after(30):
            while len(run.cards) < count:
                await anyio.sleep(0.005)  # the agent's request is on its way (not a decision)
        return run.cards[count - 1]

    return run.io.call(wait)


def ended(run: CellRun) -> Any:
    assert run.done is not None
    return run.done.result(30)


def test_the_notebook_offers_a_v1_agent_terminals_and_files(v1: V1Notebook) -> None:
    assert v1.offered == [
        {
            "fs": {"readTextFile": True, "writeTextFile": True},
            "terminal": True,
            "_meta": {"terminal_output": True},
        }
    ]


@pytest.mark.process
def test_a_command_allowed_by_a_click_runs_and_streams_into_the_cells_terminal(
    v1: V1Notebook,
) -> None:
    async def script(conn: Any) -> None:
        created = await v1.ask(conn, "create", "terminal/create", command="printf",
                               args=["%s\\n", "hello world"])  # fmt: skip
        tid = created["terminalId"]
        await conn.notify("session/update", {"sessionId": SID, "update": {
            "sessionUpdate": "tool_call", "toolCallId": "t1", "title": "printf", "kind": "execute",
            "content": [{"type": "terminal", "terminalId": tid}]}})  # fmt: skip
        await v1.ask(conn, "exit", "terminal/wait_for_exit", terminalId=tid)
        await v1.ask(conn, "release", "terminal/release", terminalId=tid)

    v1.script = script
    run = start_run(v1.nb)
    card = shown(run)
    html = card.request_html()
    assert "$ printf &#x27;%s\\n&#x27; &#x27;hello world&#x27;" in html  # as a shell sees it
    assert str(v1.cwd.resolve()) in html
    assert "create" not in v1.got  # nothing runs before the allow
    [allow, _reject] = card.buttons
    allow.click()
    assert ended(run) == "end_turn"
    assert v1.got["exit"] == {"exitCode": 0, "signal": None}
    tid = v1.got["create"]["terminalId"]
    widget = run.io.call(lambda: run.view.terminal_widgets[tid])
    run.io.call(widget.flush)
    assert widget.data == b"hello world\r\n"  # the PTY's line ending
    assert widget.exit_status is not None and widget.exit_status["exitCode"] == 0
    [decision] = run.turn.permissions
    assert decision.decided_by == "click" and decision.allowed


@pytest.mark.parametrize("how", ["click", "policy"])
def test_a_command_rejected_never_runs(v1: V1Notebook, how: str) -> None:
    marker = v1.cwd / "ran"

    async def script(conn: Any) -> None:
        await v1.ask(conn, "create", "terminal/create", command="touch", args=[str(marker)])

    v1.script = script
    policy = Policy.from_globs([], ["touch *"]) if how == "policy" else None
    run = start_run(v1.nb, policy=policy)
    card = shown(run)
    if how == "click":
        card.buttons[1].click()  # Reject
    assert ended(run) == "end_turn"
    error = v1.got["create"]
    assert isinstance(error, acp.RpcError) and error.code == NOT_ALLOWED
    assert not marker.exists()
    [decision] = run.turn.permissions
    assert decision.decided_by == how and not decision.allowed


@pytest.mark.process
def test_an_allow_policy_judges_the_command_line(v1: V1Notebook) -> None:
    async def script(conn: Any) -> None:
        created = await v1.ask(conn, "create", "terminal/create", command="echo", args=["ok"])
        await v1.ask(conn, "exit", "terminal/wait_for_exit", terminalId=created["terminalId"])
        created = await v1.ask(conn, "create2", "terminal/create", command="echo",
                               args=["ok;", "rm", "-rf", "x"])  # fmt: skip

    v1.script = script
    run = start_run(v1.nb, policy=Policy.from_globs(["echo ok"], []))
    card = shown(run, 2)  # the first ran without a click; the second waits for one
    assert v1.got["exit"] == {"exitCode": 0, "signal": None}
    first, second = run.turn.permissions
    assert first.decided_by == "policy" and first.allowed
    assert second.pending  # `echo 'ok;' rm -rf x` is not `echo ok`
    card.buttons[1].click()
    assert ended(run) == "end_turn"
    assert isinstance(v1.got["create2"], acp.RpcError)


def test_a_write_shows_its_diff_and_a_rejected_one_leaves_the_file_untouched(
    v1: V1Notebook,
) -> None:
    target = v1.cwd / "notes.txt"
    original = b"keep\r\nthis \xff byte\n"
    target.write_bytes(original)

    async def script(conn: Any) -> None:
        await v1.ask(conn, "write", "fs/write_text_file", path=str(target), content="gone\n")

    v1.script = script
    run = start_run(v1.nb)
    card = shown(run)
    html = card.request_html()
    assert "Write " in html and "notes.txt" in html
    assert "gone" in html and "keep" in html  # the diff: old against new
    card.buttons[1].click()
    assert ended(run) == "end_turn"
    assert isinstance(v1.got["write"], acp.RpcError) and v1.got["write"].code == NOT_ALLOWED
    assert target.read_bytes() == original
    assert sorted(p.name for p in v1.cwd.iterdir()) == ["notes.txt"]


def test_an_allowed_write_is_written(v1: V1Notebook) -> None:
    target = v1.cwd / "new" / "a.txt"

    async def script(conn: Any) -> None:
        await v1.ask(conn, "write", "fs/write_text_file", path=str(target), content="hi\n")

    v1.script = script
    run = start_run(v1.nb)
    shown(run).buttons[0].click()
    assert ended(run) == "end_turn"
    assert v1.got["write"] == {}
    assert target.read_text() == "hi\n"


@pytest.mark.process
def test_cancel_kills_the_running_command(v1: V1Notebook) -> None:
    running = anyio.Event()  # (set and awaited on the I/O thread's loop)

    async def script(conn: Any) -> None:
        created = await v1.ask(conn, "create", "terminal/create", command="sleep", args=["300"])
        running.set()
        await v1.ask(conn, "exit", "terminal/wait_for_exit", terminalId=created["terminalId"])

    v1.script = script
    run = start_run(v1.nb)
    shown(run).buttons[0].click()
    run.io.call(running.wait)
    run.io.call(run.cancel)  # what Interrupt does (CellRun.wait_in_cell)
    assert ended(run) == "end_turn"
    assert v1.got["exit"] == {"exitCode": None, "signal": "SIGTERM"}


@pytest.mark.process
def test_kernel_shutdown_kills_every_client_terminal(v1: V1Notebook) -> None:
    started = anyio.Event()

    async def script(conn: Any) -> None:
        await v1.ask(conn, "create", "terminal/create", command="sleep", args=["300"])
        started.set()
        await anyio.sleep_forever()

    v1.script = script
    run = start_run(v1.nb)
    shown(run).buttons[0].click()
    run.io.call(started.wait)
    services = run.handle.agent.services
    assert services is not None
    pgid = services.terminals.process_group(v1.got["create"]["terminalId"])
    assert pgid is not None and live_members(pgid)
    v1.nb.shutdown()
    assert wait_gone(pgid) == []


# -- issue 22, findings 8 and 10: what a rule never approves alone ---------------------------


@pytest.fixture
def other_repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """A git repository outside the session's folder whose ``core.fsmonitor`` hook touches a
    canary (``git status`` runs the hook); its name has characters HTML must escape."""
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not on PATH")
    base = tmp_path_factory.mktemp("elsewhere")
    repo = base / "repo <i>&amp;"
    repo.mkdir()
    canary = base / "canary"
    subprocess.run([git, "init", "-q", str(repo)], check=True)
    hook = f"touch {shlex.quote(str(canary))}"
    subprocess.run([git, "-C", str(repo), "config", "core.fsmonitor", hook], check=True)
    yield repo, canary


@pytest.mark.parametrize("click", ["reject", "allow"])
@pytest.mark.process
def test_a_rule_never_approves_a_command_outside_the_sessions_folder(
    v1: V1Notebook, other_repo: tuple[Path, Path], click: str
) -> None:
    repo, canary = other_repo

    async def script(conn: Any) -> None:
        created = await v1.ask(conn, "create", "terminal/create", command="git",
                               args=["status"], cwd=str(repo))  # fmt: skip
        if isinstance(created, dict):
            await v1.ask(conn, "exit", "terminal/wait_for_exit", terminalId=created["terminalId"])

    v1.script = script
    run = start_run(v1.nb, policy=Policy.from_globs(["git status*"], []))
    card = shown(run)  # asked: `git status` matches the rule, but not where it runs
    card.buttons[0 if click == "allow" else 1].click()
    assert ended(run) == "end_turn"
    if click == "reject":
        assert not canary.exists()  # the other repository's hook never ran
        assert isinstance(v1.got["create"], acp.RpcError)
        assert v1.got["create"].code == NOT_ALLOWED
    else:  # a person allows it: it runs there, hook and all (the hook is real)
        assert v1.got["exit"]["exitCode"] == 0
        assert canary.exists()
    [decision] = run.turn.permissions
    assert decision.decided_by == "click"
    html = card.request_html()
    assert "repo &lt;i&gt;&amp;amp;" in html and "<i>" not in html  # the cwd, escaped
    assert "outside the session" in html


@pytest.mark.process
def test_a_rule_still_approves_the_same_command_in_the_sessions_folder(v1: V1Notebook) -> None:
    sub = v1.cwd / "sub"
    sub.mkdir()

    async def script(conn: Any) -> None:
        for key, cwd in (("here", v1.cwd), ("below", sub)):
            created = await v1.ask(conn, key, "terminal/create", command="echo", args=["ok"],
                                   cwd=str(cwd))  # fmt: skip
            await v1.ask(conn, f"{key}-exit", "terminal/wait_for_exit",
                         terminalId=created["terminalId"])  # fmt: skip

    v1.script = script
    run = start_run(v1.nb, policy=Policy.from_globs(["echo ok"], []))
    assert ended(run) == "end_turn"
    assert v1.got["here-exit"] == v1.got["below-exit"] == {"exitCode": 0, "signal": None}
    assert [(d.decided_by, d.allowed) for d in run.turn.permissions] == [("policy", True)] * 2


RISKY_NAMES = ["X%", "1", "BASH_FUNC_echo%%", "BASH_FUNC_echo", "a<b>&c"]


@pytest.mark.parametrize("name", RISKY_NAMES)
def test_a_variable_no_shell_can_name_is_never_approved_by_a_rule(
    v1: V1Notebook, name: str
) -> None:
    made = v1.cwd / "made"

    async def script(conn: Any) -> None:
        await v1.ask(conn, "create", "terminal/create", command="touch", args=[str(made)],
                     env=[{"name": name, "value": "() { rm x; }"}])  # fmt: skip

    v1.script = script
    run = start_run(v1.nb, policy=Policy.from_globs(["*"], ["rm *"]))
    card = shown(run)  # asked, though `--allow '*'` matches anything
    html = card.request_html()
    assert html_escape(name, quote=False) in html  # the card names the variable, escaped
    assert "a<b>" not in html
    card.buttons[1].click()
    assert ended(run) == "end_turn"
    [decision] = run.turn.permissions
    assert decision.decided_by == "click" and not decision.allowed
    assert isinstance(v1.got["create"], acp.RpcError) and v1.got["create"].code == NOT_ALLOWED
    assert not made.exists()


@pytest.mark.parametrize("name", RISKY_NAMES)
def test_deny_still_sees_the_program_past_such_a_variable(v1: V1Notebook, name: str) -> None:
    victim = v1.cwd / "victim"
    victim.write_text("keep\n")

    async def script(conn: Any) -> None:
        await v1.ask(conn, "create", "terminal/create", command="rm", args=[str(victim)],
                     env=[{"name": name, "value": "1"}])  # fmt: skip

    v1.script = script
    run = start_run(v1.nb, policy=Policy.from_globs(["*"], ["rm *"]))
    assert ended(run) == "end_turn"  # no card waits: the deny rule answered
    [decision] = run.turn.permissions
    assert decision.decided_by == "policy" and not decision.allowed
    assert isinstance(v1.got["create"], acp.RpcError) and v1.got["create"].code == NOT_ALLOWED
    assert victim.read_text() == "keep\n"


def _state_chars(widget: Any) -> int:
    """Characters of widget state a widget tree sends to the front end (and the notebook
    saves): every model's state as JSON."""
    import json

    total, seen, stack = 0, set(), [widget]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        total += len(json.dumps(item.get_state(), default=str))
        stack += list(getattr(item, "children", ()))
    return total


def test_a_59_mb_write_is_shown_by_its_sizes_without_a_diff(
    v1: V1Notebook, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding 15: a 59 MB fs/write_text_file blocked the notebook for 73 s (its diff was made
    on the I/O thread) and added 243 MB of widget state. Its card now says how large the old
    and the new text are; the diff function never gets the text."""
    import acp_notebook._client._services as services

    given: list[int] = []
    real = services.diff_patch

    def spy(path: str, old: str | None, new: str) -> str:
        given.append(len(new))
        return real(path, old, new)

    monkeypatch.setattr(services, "diff_patch", spy)
    target = v1.cwd / "big.txt"
    target.write_text("old\n")
    content = ("y" * 99 + "\n") * 590_000  # 59,000,000 bytes

    async def script(conn: Any) -> None:
        await v1.ask(conn, "write", "fs/write_text_file", path=str(target), content=content)

    v1.script = script
    run = start_run(v1.nb)
    card = shown(run)
    html = card.request_html()
    assert "old 4 bytes, new 59,000,000 bytes: too large to show a diff" in html
    assert given == []
    assert _state_chars(card) < 1_000_000
    assert len(str(card.static_bundle())) < 1_000_000
    card.buttons[1].click()  # Reject
    assert ended(run) == "end_turn"
    assert target.read_text() == "old\n"


def test_a_small_write_still_shows_its_diff_made_off_the_io_thread(
    v1: V1Notebook, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    import acp_notebook._client._services as services

    threads: list[str] = []
    real = services.diff_patch

    def spy(path: str, old: str | None, new: str) -> str:
        threads.append(threading.current_thread().name)
        return real(path, old, new)

    monkeypatch.setattr(services, "diff_patch", spy)
    target = v1.cwd / "small.txt"
    target.write_text("before\n")

    async def script(conn: Any) -> None:
        await v1.ask(conn, "write", "fs/write_text_file", path=str(target), content="after\n")

    v1.script = script
    run = start_run(v1.nb)
    card = shown(run)
    html = card.request_html()
    assert "-before" in html and "+after" in html
    io_thread = run.io.call(lambda: threading.current_thread().name)
    assert len(threads) == 1 and threads[0] != io_thread
    card.buttons[0].click()
    assert ended(run) == "end_turn"
    assert target.read_text() == "after\n"


def test_timeout_holds_while_a_writes_diff_is_made(
    v1: V1Notebook, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--timeout`` was not kept while a large write's diff was made: the request is answered
    at its deadline (``timeout``) although the diff is still being made, and nothing is
    written."""
    import threading

    import acp_notebook._client._services as services

    entered, release = threading.Event(), threading.Event()

    def stuck(path: str, old: str | None, new: str) -> str:
        entered.set()
        release.wait(120)
        return ""

    monkeypatch.setattr(services, "diff_patch", stuck)
    target = v1.cwd / "slow.txt"
    target.write_text("before\n")

    async def script(conn: Any) -> None:
        await v1.ask(conn, "write", "fs/write_text_file", path=str(target), content="after\n")

    v1.script = script
    try:
        run = start_run(v1.nb, timeout=0.5)
        ended(run)
        [decision] = run.turn.permissions
        assert entered.is_set() and not release.is_set()  # the diff is still being made
        assert decision.decided_by == "timeout" and not decision.allowed
        error = v1.got["write"]
        assert isinstance(error, acp.RpcError) and error.code == NOT_ALLOWED
        [card] = run.cards
        assert "too large to show a diff" in card.request_html()
        assert target.read_text() == "before\n"
    finally:
        release.set()
