"""claude-agent-acp 0.101.0, the real v2 agent, run offline against the fake Anthropic API."""

from __future__ import annotations

import shlex
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_notebook import RequestPermissionRequest, connect
from tests.kernel_driver import Kernel, new_cell_id
from tests.real_agents.conftest import (
    CLAUDE_JS,
    CLAUDE_PACKAGE,
    CLAUDE_VERSION,
    NODE_MODULES,
    ClaudeLaunch,
    remote_connects,
    traced,
)
from tests.real_agents.fake_anthropic import Text, ToolUse

pytestmark = pytest.mark.anyio
GUARD = 90.0  # seconds; a guard against hanging, never an assertion on speed


async def test_plain_text_turn_through_the_client_api(claude: ClaudeLaunch, tmp_path: Path) -> None:
    claude.api.add(Text("Hello from the fake model"))
    log = tmp_path / "connects.log"
    with anyio.fail_after(GUARD):
        async with connect(traced(claude.argv, log), cwd=claude.cwd, env=claude.env) as agent:
            assert agent.info is not None
            assert (agent.info.name, agent.info.version) == (CLAUDE_PACKAGE, CLAUDE_VERSION)
            assert agent.info.title == "Claude Agent"
            session = await agent.new_session(claude.cwd)
            turn = await session.prompt("say hello")
            assert await turn.wait() == "end_turn"
            assert turn.text == "Hello from the fake model"
    # The prompt reached the fake model, in the agent loop's request.
    asked = claude.api.agent_requests()
    assert len(asked) == 1
    assert "say hello" in str(asked[0].body["messages"])
    assert claude.api.unknown == []
    if log.exists():
        assert "127.0.0.1" in log.read_text()  # strace saw the fake API's connection
        assert remote_connects(log) == []


async def test_bash_tool_use_approved_sends_tool_result_back(claude: ClaudeLaunch) -> None:
    claude.api.add(
        ToolUse("Bash", {"command": "echo hello > out.txt", "description": "Write a file"}),
        Text("I wrote out.txt"),
    )
    asked: list[RequestPermissionRequest] = []

    async def allow_once(request: RequestPermissionRequest) -> str | None:
        asked.append(request)
        return next(o.option_id for o in request.options if o.kind == "allow_once")

    with anyio.fail_after(GUARD):
        async with connect(
            claude.argv, cwd=claude.cwd, env=claude.env, permission=allow_once
        ) as agent:
            session = await agent.new_session(claude.cwd)
            turn = await session.prompt("write hello to out.txt")
            assert await turn.wait() == "end_turn"
            assert turn.text == "I wrote out.txt"
    assert len(asked) == 1
    assert "echo hello > out.txt" in asked[0].title
    assert (claude.cwd / "out.txt").read_text() == "hello\n"
    _check_tool_result(claude)


def _check_tool_result(claude: ClaudeLaunch) -> None:
    """The request after the Bash tool_use carries its successful tool_result, and the
    model was asked exactly twice (prompt suggestions are off: see the fixture)."""
    tool_id = claude.api.replied[0].id  # type: ignore[union-attr]
    asked = claude.api.agent_requests()
    assert len(asked) == 2
    assert asked[0].tool_results() == []
    results: list[Any] = asked[1].tool_results()
    assert len(results) == 1, results
    assert results[0]["tool_use_id"] == tool_id
    assert not results[0].get("is_error")
    assert results[0]["content"] == "(Bash completed with no output)"


# -- through the magics, in a real kernel -----------------------------------------------------


def _approve_bash_in_kernel(k: Kernel, claude: ClaudeLaunch, work: Path) -> None:
    claude.api.add(
        ToolUse("Bash", {"command": "echo hello > out.txt", "description": "Write a file"}),
        Text("I wrote out.txt"),
    )
    cell = k.submit("%%acp\nwrite hello to out.txt\n", new_cell_id())
    # claude-agent-acp names its allow_once option "Yes"
    button = k.wait_for(partial(k.buttons, "Yes"), "the Yes (allow once) button")
    assert not (work / "out.txt").exists()  # nothing ran before the click
    k.click(button[0])
    k.wait_for(partial(getattr, cell, "done"), "the cell to finish after the click")
    assert cell.error is None, cell.text()
    assert (work / "out.txt").read_text() == "hello\n"
    assert "I wrote out.txt" in cell.text()
    _check_tool_result(claude)


def _no_env_values(text: str, claude: ClaudeLaunch) -> None:
    for key in ("ANTHROPIC_BASE_URL", "HOME"):
        assert claude.env[key] not in text, key


def test_kernel_connect_argv_with_env_and_approve_a_bash_call(
    kern: Kernel, claude: ClaudeLaunch, tmp_path: Path
) -> None:
    out = kern.run(f"%acp connect {claude.env_options()} -- {shlex.join(claude.argv)}").text()
    assert "Claude Agent 0.101.0" in out
    assert "protocol v2" in out and "capabilities: session (" in out
    _no_env_values(out, claude)
    _approve_bash_in_kernel(kern, claude, tmp_path / "work")
    status = kern.run("%acp status").text()
    assert "env ANTHROPIC_API_KEY=***" in status and "sk-fake" not in status
    _no_env_values(status, claude)
    log = kern.run("%acp log -n 200").text()
    assert "session/request_permission" in log
    _no_env_values(log, claude)


def test_kernel_connect_claude_shortcut_finds_the_installed_package(
    kern: Kernel, claude: ClaudeLaunch, tmp_path: Path
) -> None:
    kern.run(f"import os; os.environ['ACP_NOTEBOOK_NODE_MODULES'] = {str(NODE_MODULES)!r}")
    agents = kern.run("%acp agents").text()
    assert f"claude-acp (or claude): Claude Agent {CLAUDE_VERSION}, ACP v2 (v1 with" in agents
    assert "installed: " in agents.split("claude-acp (or claude)")[1].split("\n")[0]
    assert str(CLAUDE_JS) in agents
    out = kern.run(f"%acp connect claude {claude.env_options()}").text()
    assert f"starting Claude Agent {CLAUDE_VERSION}: " in out and str(CLAUDE_JS) in out
    assert "npx" not in out
    assert "acp: connected 'claude': Claude Agent 0.101.0" in out
    _approve_bash_in_kernel(kern, claude, tmp_path / "work")


def test_kernel_connect_v1_mode_speaks_v1_and_approves_a_bash_call(
    kern: Kernel, claude: ClaudeLaunch, tmp_path: Path
) -> None:
    kern.run(f"import os; os.environ['ACP_NOTEBOOK_NODE_MODULES'] = {str(NODE_MODULES)!r}")
    # The same agent, its router pinned to v1: it answers initialize with protocol version 1.
    claude.env["CLAUDE_AGENT_ACP_PROTOCOL"] = "v1"
    text = kern.run(f"%acp connect claude {claude.env_options()}").text()
    assert "acp: connected 'claude': Claude Agent 0.101.0" in text
    assert "acp: protocol v1; capabilities: " in text and "loadSession" in text
    _no_env_values(text, claude)
    # the same card, the same click, through the v1 permission request
    _approve_bash_in_kernel(kern, claude, tmp_path / "work")


def test_kernel_v1_mode_shows_a_bash_commands_output_in_a_live_terminal(
    kern: Kernel, claude: ClaudeLaunch, tmp_path: Path
) -> None:
    # claude-agent-acp 0.101.0 runs its Bash tool itself (it never calls terminal/create): in v1
    # it sends the output through the terminal extension in _meta, which the client asks for
    kern.run(f"import os; os.environ['ACP_NOTEBOOK_NODE_MODULES'] = {str(NODE_MODULES)!r}")
    claude.env["CLAUDE_AGENT_ACP_PROTOCOL"] = "v1"
    assert "protocol v1" in kern.run(f"%acp connect claude {claude.env_options()}").text()
    command = "printf 'one\\ntwo\\n'; touch ran.txt; exit 3"
    claude.api.add(
        ToolUse("Bash", {"command": command, "description": "Print two lines"}),
        Text("It printed two lines"),
    )
    cell = kern.submit("%%acp -o t\nprint two lines\n", new_cell_id())
    button = kern.wait_for(partial(kern.buttons, "Yes"), "the Yes (allow once) button")
    work = tmp_path / "work"
    assert not (work / "ran.txt").exists()  # nothing ran before the click
    text_before = "\n".join(
        str(m.get("value", "")) for m in kern.models.values() if m.get("_model_name") == "HTMLModel"
    )
    assert "$ printf" in text_before  # the card shows the command the policy judges
    kern.click(button[0])
    kern.wait_for(partial(getattr, cell, "done"), "the cell to finish after the click")
    assert cell.error is None, cell.text()
    assert (work / "ran.txt").exists()
    text = cell.text()
    # the command once: its terminal's header shows it, the card above asks about "this command"
    assert "  Permission request: Run this command?\n" in text
    assert f"  command: {command}\n" not in text
    assert "It printed two lines" in text
    # the cell's live xterm terminal: the command, its output, its exit code
    [model] = [s for s in kern.models.values() if s.get("_model_name") == "TerminalModel"]
    assert model["command"] == command and model["exit_status"]["exitCode"] == 3
    assert f"  $ {command}\n  Exit code 3\n  one\n  two\n  [exit 3]" in text
    out = kern.run("[x] = t.terminals.values(); print(repr(x.data), x.exit_status.exit_code)")
    assert out.text().strip() == "b'Exit code 3\\r\\none\\r\\ntwo' 3"
    assert "terminal_output" in kern.run("%acp log -n 60").text()  # what claude sent


def _terminal_models(k: Kernel) -> list[dict[str, Any]]:
    return [s for s in k.models.values() if s.get("_model_name") == "TerminalModel"]


@pytest.mark.own_kernel
@pytest.mark.parametrize("protocol", ["v2", "v1"])
def test_kernel_refused_command_says_not_run_with_the_agents_words_beside_the_screen(
    kern: Kernel, claude: ClaudeLaunch, tmp_path: Path, protocol: str
) -> None:
    # Issue 25, finding 1: claude-agent-acp shows a terminal for the command it asks about
    # (terminal_update before the permission request); after "No" it sends the tool result
    # ("User refused permission to run tool") as the terminal's output with an empty exitStatus.
    kern.run(f"import os; os.environ['ACP_NOTEBOOK_NODE_MODULES'] = {str(NODE_MODULES)!r}")
    claude.env["CLAUDE_AGENT_ACP_PROTOCOL"] = protocol
    assert f"protocol {protocol}" in kern.run(f"%acp connect claude {claude.env_options()}").text()
    claude.api.add(
        ToolUse("Bash", {"command": "rm -rf data", "description": "Remove the data"}),
        Text("I did not remove it"),
    )
    cell = kern.submit("%%acp -o t\nremove the data folder\n", new_cell_id())
    no = kern.wait_for(partial(kern.buttons, "No"), "the No (reject) button")
    # while the card asks (nothing clicked yet), the terminal says nothing ran (not "running")
    asking = kern.wait_for(
        lambda: [
            m
            for m in _terminal_models(kern)
            if m.get("command") == "rm -rf data" and m.get("phase") == "waiting"
        ],
        "the terminal of the command asked about, waiting",
    )
    assert asking[0]["phase_label"] == "waiting for approval"
    # Issue 25, finding 7: the record a restart leaves (saved as the turn goes) holds the
    # request the turn waits on, not only the prompt and "working…"
    record = kern.wait_for(
        lambda: [
            d["text/plain"]
            for d in kern.displays.values()
            if "Still running when this was saved" in d.get("text/plain", "")
            and "decision: pending" in d.get("text/plain", "")
        ],
        "the running record to hold the pending request",
    )[-1]
    assert "Permission request: Run this command?" in record, record
    assert "$ rm -rf data" in record and "[waiting for approval]" in record, record
    kern.click(no[0])
    kern.wait_for(partial(getattr, cell, "done"), "the cell to finish after the click")
    assert cell.error is None, cell.text()
    [model] = _terminal_models(kern)
    assert (model["phase"], model["phase_label"]) == ("not-run", "not run")
    assert model["note"] == "User refused permission to run tool"
    # the agent's words are the note, not the screen's bytes: the view was given none
    out = kern.run(
        "from ipywidgets.widgets.widget import _instances as i; from acp_notebook._widgets "
        "import TerminalWidget as T; [w] = [x for x in i.values() if isinstance(x, T)]; "
        "print(repr(w.data))"
    ).text()
    assert out.strip() == "b''"
    text = cell.text()
    assert "[not run]" in text and "agent: User refused permission to run tool" in text
    assert "[exited]" not in text


@pytest.mark.own_kernel
def test_kernel_interrupted_command_says_stopped_and_keeps_the_agents_words_out_of_the_screen(
    kern: Kernel, claude: ClaudeLaunch
) -> None:
    # Issue 25, finding 2: claude-agent-acp sends a command's output only when it ends; while it
    # runs the view counts the time (started_at); Interrupt cuts it, and the agent then sends
    # its tool result as the output with an empty exitStatus: that is prose, not what ran.
    kern.run(f"import os; os.environ['ACP_NOTEBOOK_NODE_MODULES'] = {str(NODE_MODULES)!r}")
    assert "protocol v2" in kern.run(f"%acp connect claude {claude.env_options()}").text()
    claude.api.add(
        ToolUse("Bash", {"command": "touch begun; sleep 60", "description": "Wait a minute"}),
        Text("stopped"),
    )
    cell = kern.submit("%%acp -o t\nwait a minute\n", new_cell_id())
    [yes] = kern.wait_for(partial(kern.buttons, "Yes"), "the Yes button")
    kern.click(yes)
    # The terminal came with the tool call, before the request: until the card has taken the
    # click, a "running" seen here may be the view from before the request was asked.
    kern.wait_for(lambda: kern.models[yes].get("disabled"), "the card to take the click")
    running = kern.wait_for(
        lambda: [m for m in _terminal_models(kern) if m.get("phase") == "running"],
        "the terminal, running",
    )
    assert running[0]["started_at"] > 0 and running[0]["note"] == ""
    kern.km.interrupt_kernel()
    kern.wait_for(partial(getattr, cell, "done"), "the cell to end after Interrupt")
    [model] = _terminal_models(kern)
    assert (model["phase"], model["phase_label"]) == ("stopped", "stopped"), model
    # the agent's words are a note, not the screen's bytes
    assert model["note"].startswith("The user doesn't want to proceed with this tool use.")
    text = cell.text()
    assert "[stopped]" in text and "[exited]" not in text
    assert "  agent: The user doesn't want to proceed" in text
