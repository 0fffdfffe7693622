"""Real v1 agents that need no key, through `%%acp` in a real kernel: pydantic-acp with
pydantic-ai's TestModel (tests/real_agents/pydantic_agent.py) and fast-agent with its
passthrough model. Their turns render messages and tool calls on the same cards as v2's."""

from __future__ import annotations

import os
import shlex
import sys
from functools import partial
from pathlib import Path

import pytest

from tests.kernel_driver import Kernel, new_cell_id

PYDANTIC_AGENT = Path(__file__).with_name("pydantic_agent.py")
TINY_MCP = Path(__file__).with_name("tiny_mcp.py")
FAST_AGENT_VENV = Path(__file__).with_name(".venv-fast-agent")  # .ci/run, step v1-agents


def _connect_pydantic(k: Kernel) -> str:
    pytest.importorskip("pydantic_acp")  # the `test` extra pins it
    argv = [sys.executable, str(PYDANTIC_AGENT)]
    return k.run(f"%acp connect -- {shlex.join(argv)}").text()


def test_pydantic_acp_turn_renders_messages_and_tool_calls_after_a_click(
    kern: Kernel, tmp_path: Path
) -> None:
    out = _connect_pydantic(kern)
    assert "acp: connected" in out and "Pydantic ACP 1.10.0" in out
    assert "acp: protocol v1; capabilities: " in out
    cell = kern.submit("%%acp\nadd, then delete a file\n", new_cell_id())
    button = kern.wait_for(partial(kern.buttons, "Allow"), "the allow button of delete_file")
    assert not (tmp_path / "work" / "deleted.txt").exists()  # nothing ran before the click
    kern.click(button[0])
    kern.wait_for(partial(getattr, cell, "done"), "the cell to finish after the click")
    assert cell.error is None, cell.text()
    text = cell.text()
    assert "All done: I added and I deleted." in text
    assert "Tool call: add [command] - completed" in text
    assert "Tool call: delete_file [delete] - completed" in text
    assert "options: Allow [allow once], Deny [reject once]" in text
    assert (tmp_path / "work" / "deleted.txt").read_text() == "deleted a\n"


@pytest.mark.own_kernel
def test_pydantic_acp_interrupt_answers_the_pending_card_cancelled(
    kern: Kernel, tmp_path: Path
) -> None:
    # fail closed in v1 too: Interrupt sends session/cancel, the pending request is answered
    # cancelled, the agent answers the prompt 'cancelled', and the tool never runs
    _connect_pydantic(kern)
    cell = kern.submit("%%acp -o t\nadd, then delete a file\n", new_cell_id())
    kern.wait_for(partial(kern.buttons, "Allow"), "the allow button of delete_file")
    kern.wait_for(kern.cell_waiting, "the cell to await its turn (with its own SIGINT handler)")
    kern.km.interrupt_kernel()
    kern.wait_for(partial(getattr, cell, "done"), "the cell to finish after the interrupt")
    out = kern.run("print(t.stop_reason, t.done, [d.option_id for d in t.permissions])").text()
    assert "cancelled True [None]" in out
    assert not (tmp_path / "work" / "deleted.txt").exists()


def test_pydantic_acp_deny_policy_rejects_without_a_click(kern: Kernel, tmp_path: Path) -> None:
    _connect_pydantic(kern)
    cell = kern.run("%%acp --deny 'delete_*'\nadd, then delete a file\n")
    assert cell.error is None, cell.text()
    text = cell.text()
    assert "Tool call: delete_file [delete] - failed" in text
    assert "decision: Rejected: Deny - by policy --deny 'delete_*'" in text
    assert not (tmp_path / "work" / "deleted.txt").exists()


def _fast_agent_argv(home: Path, *, mcp: bool = True) -> list[str]:
    """fast-agent with its passthrough model, and (``mcp``) `TINY_MCP` as its MCP server (a
    second Python process, standard library only)."""
    fast_agent = FAST_AGENT_VENV / "bin" / "fast-agent"
    if not fast_agent.exists():
        if os.environ.get("CI"):  # .ci/run installs it: missing there is a failure
            raise AssertionError(f"{fast_agent} is missing (.ci/run step v1-agents)")
        pytest.skip(f"{fast_agent} is not installed (.ci/run step v1-agents)")
    server = f"{FAST_AGENT_VENV / 'bin' / 'python'} {TINY_MCP}"
    home.mkdir()
    return [str(fast_agent), "--no-update-check", "acp", "--model", "passthrough",
            "--home", str(home), *(["--stdio", server] if mcp else [])]  # fmt: skip


def test_fast_agent_turns_render_messages_and_an_approved_mcp_tool_call(
    kern: Kernel, tmp_path: Path
) -> None:
    argv = _fast_agent_argv(tmp_path / "fa-home")
    out = kern.run(f"%acp connect -- {shlex.join(argv)}").text()
    # fast-agent echoes the protocolVersion 2 it was offered, with a v1 body: it speaks v1
    assert "fast-agent-acp 0.10.48" in out and "acp: protocol v1; " in out
    echo = kern.run("%%acp\nhello from the notebook\n")
    assert echo.error is None, echo.text()
    assert "hello from the notebook" in echo.text().split("> hello from the notebook", 1)[1]
    # ({{ }}: a cell body interpolates {name}). fast-agent asks before MCP tools only
    body = '***CALL_TOOL python__shout {{"text":"hello"}}'
    cell = kern.submit(f"%%acp\n{body}\n", new_cell_id())
    button = kern.wait_for(partial(kern.buttons, "Allow Once"), "the allow-once button")
    kern.click(button[0])
    kern.wait_for(partial(getattr, cell, "done"), "the cell to finish after the click")
    assert cell.error is None, cell.text()
    text = cell.text()
    assert "Tool call: python/shout - completed" in text
    assert "HELLO!" in text
    assert "Permission request: python/shout" in text
    assert "decision: Approved: Allow Once" in text


def test_pydantic_acp_resume_is_session_load_and_replays_the_history(kern: Kernel) -> None:
    _connect_pydantic(kern)
    kern.run("%%acp --allow 'delete_file' -o t\nfirst question\n")
    session_id = kern.run("print(t.session.id)").text().strip()
    listed = kern.run("%acp sessions").text()
    assert session_id in listed and "first question" in listed  # v1 session/list, its title
    out = kern.run(f"%acp resume {session_id} --session again").text()
    # session/load: the agent replayed the question and the answer
    assert f"acp: resumed {session_id} as session 'again': 2 messages" in out
    log = kern.run("%acp log -n 400").text()
    assert "session/load" in log


SDK_AGENT = Path(__file__).with_name("sdk_agent.py")


def test_python_sdk_agent_plan_diff_and_the_policy_on_its_command(
    kern: Kernel, tmp_path: Path
) -> None:
    # agent-client-protocol 0.12.1's own serialisation: chunks without messageId, a plan, a
    # v1 diff, a mode change, and an execute tool call whose rawInput.command the policy reads
    pytest.importorskip("acp")
    out = kern.run(f"%acp connect -- {shlex.join([sys.executable, str(SDK_AGENT)])}").text()
    assert "acp: protocol v1; " in out
    # the title matches the allow, the command matches the deny: the deny wins, nothing runs
    cell = kern.run("%%acp --deny 'rm *' --allow 'Run *'\nedit and clean\n")
    assert cell.error is None, cell.text()
    text = cell.text()
    assert "Plan:\n  [completed] edit notes.txt\n  [pending] clean the build" in text
    assert "I will edit notes.txt." in text  # two chunks, one message
    assert (
        "Tool call: Edit notes.txt [edit] - completed\n  diff: modify /work/notes.txt (+1 -1)"
        in text
    )
    assert "acp-diff-del" in cell.html() and "acp-diff-add" in cell.html()  # the computed patch
    assert "decision: Rejected: Skip - by policy --deny 'rm *'" in text
    assert not (tmp_path / "work" / "ran.txt").exists()
    # an allow for the command itself approves it
    cell = kern.run("%%acp --allow 'rm -rf build'\nedit and clean\n")
    assert "decision: Approved: Run it - by policy --allow 'rm -rf build'" in cell.text()
    assert (tmp_path / "work" / "ran.txt").read_text() == "rm -rf build\n"


def test_connect_protocol_forces_a_version(kern: Kernel) -> None:
    pytest.importorskip("pydantic_acp")
    argv = shlex.join([sys.executable, str(PYDANTIC_AGENT)])
    # forced 2: a v1 agent is refused, clearly, and the kernel goes on
    refused = kern.run(f"%acp connect --protocol 2 -- {argv}", ok=False).text()
    assert "UsageError: %acp connect: could not connect" in refused, refused
    assert "(acp_notebook speaks ACP v1 and v2)" in refused
    # forced 1: the initialize is v1 from the start (version 1, v1 fields only)
    out = kern.run(f"%acp connect --protocol 1 -- {argv}").text()
    assert "acp: protocol v1; " in out
    log = kern.run("%acp log -n 3").text()
    assert '"protocolVersion": 1' in log and '"capabilities"' not in log.split("\n")[0]
    assert "--protocol {auto,1,2}" in kern.run("%acp connect --help").text()
    bad = kern.run(f"%acp connect --protocol 3 -- {argv}", ok=False).text()
    assert "invalid choice: '3'" in bad, bad
