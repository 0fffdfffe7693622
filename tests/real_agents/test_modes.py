"""Modes with real agents, through the magics in a real kernel, offline: codex-acp 2.6.0 against
the fake Responses API (tests/real_agents/fake_openai.py) and claude-agent-acp 0.101.0 against
the fake Anthropic API.

Codex: in mode ``workspace-write`` (Workspace access, approval on-request) a command the model
asks to run outside the sandbox (``sandbox_permissions: "require_escalated"``) comes to the
notebook as a permission card and runs only after Allow; in Codex's own starting mode ``agent``
(Auto review) the same request goes to a model reviewer instead (the fake answers ``allow``),
no card is shown, the command runs, and the turn's header warns about it. Claude: in
``acceptEdits`` the header warns that the agent edits files without asking; in ``default`` it
does not."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from tests.kernel_driver import Execution, Kernel, new_cell_id
from tests.real_agents.conftest import NODE_MODULES, ClaudeLaunch, CodexLaunch
from tests.real_agents.fake_anthropic import Text
from tests.real_agents.fake_openai import exec_command

CODEX_ALLOW = "Yes, proceed"  # codex-acp's allow_once option
WORKSPACE = "mode: Workspace access (workspace-write)"
AUTO_REVIEW = "mode: Auto review (agent)"
AUTO_REVIEW_WARNING = (
    "⚠ in this mode the agent lets a model, not you, approve what it flags (Auto review)"
)
ACCEPT_EDITS = "mode: Accept edits (acceptEdits)"
ACCEPT_EDITS_WARNING = "⚠ in this mode the agent edits files without asking"
MANUAL = "mode: Manual (default)"


@pytest.fixture
def kern(kern: Kernel) -> Kernel:
    """The module's kernel (tests/real_agents/conftest.py), where the installed agents are found
    by their shortcuts (reset too: the next test's environment is the kernel's first)."""
    kern.run(f"import os; os.environ['ACP_NOTEBOOK_NODE_MODULES'] = {str(NODE_MODULES)!r}")
    return kern


def _header(text: str, prompt: str) -> list[str]:
    """The transcript's lines right after the prompt's echo (``> PROMPT``), up to the first
    line that is neither the mode nor its warning."""
    lines = [line.strip() for line in text.splitlines()]
    start = lines.index(f"> {prompt}") + 1
    header = []
    for line in lines[start:]:
        if not line.startswith(("mode: ", "⚠")):
            break
        header.append(line)
    return header


def _connect_codex(k: Kernel, codex: CodexLaunch, options: str = "") -> str:
    env = codex.env_options(OPENAI_API_KEY=codex.key)
    out = k.run(f"%acp connect codex {options} {env}").text()
    assert "acp: connected 'codex'" in out, out
    said = k.run("%acp auth api-key").text()
    assert said.strip() == "acp: signed in to 'codex' with 'api-key'; `%%acp` cells work now"
    return out


def _justification(target: Path) -> str:
    return f"Create {target.name} outside the sandbox?"


def _escalate(codex: CodexLaunch, target: Path, keyword: str) -> str:
    """Script the fake model: on ``keyword``, run ``touch TARGET`` asking for escalation, then
    say so once the output comes back. The prompt to send."""
    call = exec_command(f"touch {target}", justification=_justification(target))
    codex.api.on(keyword, call, f"I created {target.name}")
    return f"{keyword}: create {target.name}"


def _finished(k: Kernel, cell: Execution) -> None:
    k.wait_for(partial(getattr, cell, "done"), "the cell to finish")
    assert cell.error is None, cell.text()


def _asked_or_done(k: Kernel, cell: Execution) -> bool:
    return cell.done or bool(k.buttons(CODEX_ALLOW))


def test_codex_workspace_write_asks_for_an_escalated_command_and_runs_it_after_allow(
    kern: Kernel, codex: CodexLaunch, tmp_path: Path
) -> None:
    out = _connect_codex(kern, codex, "--mode workspace-write")
    assert "every new session of 'codex' starts in mode 'workspace-write'" in out, out
    target = tmp_path / "work" / "escalated.txt"
    prompt = _escalate(codex, target, "ESCALATE")
    cell = kern.submit(f"%%acp\n{prompt}\n", new_cell_id())
    [allow] = kern.wait_for(lambda: kern.buttons(CODEX_ALLOW), "the card of the command")
    assert not target.exists()  # nothing ran before the click
    card = "\n".join(str(s.get("value", "")) for s in kern.models.values())
    assert f"touch {target}" in card and _justification(target) in card
    reject = "No, and tell Codex what to do differently"  # its reject_once option
    kern.wait_for(lambda: kern.buttons(reject), "the card's reject button")
    kern.click(allow)
    _finished(kern, cell)
    assert target.exists()
    text = cell.text()
    assert f"I created {target.name}" in text
    assert _header(text, prompt) == [WORKSPACE], text
    assert "⚠" not in text
    # the model asked for escalation and got the command's output back; no reviewer was asked
    assert codex.api.reviews() == []
    [call, answer] = codex.api.turns()
    assert call.user_texts()[-1].strip() == prompt
    [output] = answer.items("custom_tool_call_output")
    assert "Script completed" in str(output["output"]), output
    shown = kern.run("%acp mode").text().splitlines()
    assert shown[0] == "acp: the mode is Workspace access (workspace-write)", shown


def test_codex_auto_review_lets_the_model_reviewer_approve_then_mode_switches_to_asking(
    kern: Kernel, codex: CodexLaunch, tmp_path: Path
) -> None:
    out = _connect_codex(kern, codex)  # no --mode: Codex starts in "agent" (Auto review)
    assert "starts in mode" not in out
    codex.api.review = {
        "outcome": "allow",
        "risk_level": "low",
        "user_authorization": "unknown",
        "rationale": "touching one file is harmless",
    }
    work = tmp_path / "work"
    first = work / "reviewed.txt"
    prompt = _escalate(codex, first, "REVIEWED")
    cell = kern.submit(f"%%acp\n{prompt}\n", new_cell_id())
    kern.wait_for(partial(_asked_or_done, kern, cell), "the cell to finish or ask")
    assert kern.buttons(CODEX_ALLOW) == []  # no card: the model reviewer said allow
    _finished(kern, cell)
    assert first.exists()  # it ran, and nobody clicked anything
    assert len(codex.api.reviews()) == 1
    text = cell.text()
    assert _header(text, prompt) == [AUTO_REVIEW, AUTO_REVIEW_WARNING], text

    switched = kern.run("%acp mode workspace-write").text()
    assert switched.splitlines() == [
        "acp: the mode is now Workspace access (workspace-write)",
        "    other modes: read-only, agent (Auto review), agent-full-access (Full access)",
    ], switched
    second = work / "asked.txt"
    prompt = _escalate(codex, second, "ASKED")
    cell = kern.submit(f"%%acp\n{prompt}\n", new_cell_id())
    [allow] = kern.wait_for(lambda: kern.buttons(CODEX_ALLOW), "the card of the command")
    assert not second.exists()
    kern.click(allow)
    _finished(kern, cell)
    assert second.exists()
    assert len(codex.api.reviews()) == 1  # the reviewer was not asked again
    text = cell.text()
    assert _header(text, prompt) == [WORKSPACE], text
    assert "⚠" not in text


def test_claude_accept_edits_warns_in_the_header_and_default_does_not(
    kern: Kernel, claude: ClaudeLaunch
) -> None:
    out = kern.run(f"%acp connect claude --mode acceptEdits {claude.env_options()}").text()
    assert "every new session of 'claude' starts in mode 'acceptEdits'" in out, out
    claude.api.add(Text("Hello in accept edits"))
    text = kern.run("%%acp\nsay hello\n", new_cell_id()).text()
    assert "Hello in accept edits" in text
    assert _header(text, "say hello") == [ACCEPT_EDITS, ACCEPT_EDITS_WARNING], text

    switched = kern.run("%acp mode default").text()
    assert switched.splitlines()[0] == "acp: the mode is now Manual (default)", switched
    claude.api.add(Text("Hello in manual"))
    text = kern.run("%%acp\nsay hello again\n", new_cell_id()).text()
    assert "Hello in manual" in text
    assert _header(text, "say hello again") == [MANUAL], text
    assert "⚠" not in text
