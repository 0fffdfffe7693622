"""claude-agent-acp 0.101.0 with ``%acp connect --kernel-tools``, offline (the fake Anthropic
API): the fake model calls ``mcp__notebook__run_code``. Claude may first ask for its own
permission to use the MCP tool (a permission card); then the kernel shows its code card, and
the code runs only after its Allow. The ``tool_result`` Claude sends the model in its next
request carries what the code printed and returned, or why it did not run."""

from __future__ import annotations

import shlex
from functools import partial
from pathlib import Path
from typing import Any

from tests.kernel_driver import Execution, Kernel, new_cell_id
from tests.real_agents.conftest import ClaudeLaunch
from tests.real_agents.fake_anthropic import Text, ToolUse
from tests.test_kernel_code_kernel import code_button

CODE = (
    "with open('made.txt', 'w') as f:\n    f.write('ran')\nmade = 6 * 7\nprint('made', made)\nmade"
)


def _result_text(result: dict[str, Any]) -> str:
    content = result.get("content")
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return str(content)


def _run(
    kern: Kernel, claude: ClaudeLaunch, button: str, work: Path
) -> tuple[Execution, dict[str, Any]]:
    """Connect Claude with the kernel tools, let the fake model call run_code, answer Claude's
    own permission card (if it asks) and then the code card with ``button``."""
    kern.run(
        f"%acp connect --kernel-tools --name claude {claude.env_options()}"
        f" -- {shlex.join(claude.argv)}"
    )
    claude.api.add(ToolUse("mcp__notebook__run_code", {"code": CODE}), Text("Done with the code."))
    cell = kern.submit("%%acp\nrun some code in my notebook\n", new_cell_id())

    def asked() -> Any:
        return code_button(kern, button) or kern.buttons("Yes") or kern.buttons("Allow once")

    kern.wait_for(asked, "Claude's permission card or the code card")
    if not code_button(kern, button):  # Claude asks before an MCP tool it has not been allowed
        # its card shows the code and says the code card follows (issue 25, finding 5)
        shown = "\n".join(
            str(m.get("value", ""))
            for m in kern.models.values()
            if m.get("_model_name") == "HTMLModel"
        )
        assert "run_code (MCP server &quot;notebook&quot;)" in shown
        assert "the kernel's code card follows" in shown and "made = 6 * 7" in shown
        kern.click((kern.buttons("Yes") or kern.buttons("Allow once"))[0])
    card = kern.wait_for(partial(code_button, kern, button), "the code card")
    assert not (work / "made.txt").exists()  # shown, not run
    kern.click(card[0])
    kern.wait_for(partial(getattr, cell, "done"), "the cell to finish")
    assert cell.error is None, cell.text()
    results = [r for request in claude.api.agent_requests()[1:] for r in request.tool_results()]
    assert len(results) == 1, results
    return cell, results[0]


def test_claude_run_code_runs_after_the_code_cards_allow(
    kern: Kernel, claude: ClaudeLaunch, tmp_path: Path
) -> None:
    work = tmp_path / "work"  # the kernel's cwd (kernel_for_test)
    cell, result = _run(kern, claude, "allow", work)
    text = _result_text(result)
    assert not result.get("is_error"), text
    assert "made 42" in text and "42" in text.split("made 42", 1)[1]
    assert (work / "made.txt").read_text() == "ran"
    assert "42" in kern.run("print(made)").text()
    assert "Allowed - by a click; ran" in cell.text()


def test_claude_run_code_rejected_on_the_code_card_never_runs(
    kern: Kernel, claude: ClaudeLaunch, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    cell, result = _run(kern, claude, "reject", work)
    text = _result_text(result)
    assert result.get("is_error"), text
    assert "not run: rejected" in text
    assert not (work / "made.txt").exists()
    assert "False" in kern.run("print('made' in globals())").text()
    assert "Not run - the user rejected the code" in cell.text()


def test_claude_giving_up_on_run_code_settles_the_code_card(
    kern: Kernel, claude: ClaudeLaunch, tmp_path: Path
) -> None:
    claude.env["MCP_TOOL_TIMEOUT"] = "3000"  # Claude gives up on a tool call after 3 s
    kern.run(
        f"%acp connect --kernel-tools --name claude {claude.env_options()}"
        f" -- {shlex.join(claude.argv)}"
    )
    claude.api.add(
        ToolUse("mcp__notebook__run_code", {"code": CODE}),
        # the turn goes on after the timeout: Claude asks before this command
        ToolUse("Bash", {"command": "touch later.txt", "description": "touch a file"}),
        Text("Done."),
    )
    cell = kern.submit("%%acp\nrun some code in my notebook\n", new_cell_id())

    def asked() -> Any:
        return code_button(kern, "allow") or kern.buttons("Yes") or kern.buttons("Allow once")

    kern.wait_for(asked, "Claude's permission card or the code card")
    if not code_button(kern, "allow"):
        kern.click((kern.buttons("Yes") or kern.buttons("Allow once"))[0])
    allow = kern.wait_for(partial(code_button, kern, "allow"), "the code card")
    before = set(kern.buttons("No"))  # (the card of Claude's own permission, if it asked)
    # Claude gave up on run_code and asks about the next command: the turn still runs
    bash = kern.wait_for(lambda: set(kern.buttons("No")) - before, "the Bash permission card")
    # Claude's cancel reaches the kernel's MCP server over HTTP, its next permission request
    # over stdio: either may arrive first, so the card's settling is waited for, while the
    # Bash card is still open (the turn has not ended)
    kern.wait_for(
        lambda: any(
            "the agent stopped waiting" in str(s.get("value", "")) for s in kern.models.values()
        ),
        "the code card to say Claude gave up on its tool call",
    )
    assert all(kern.models[b].get("disabled") for b in allow), "the card still offers Allow"
    kern.click(bash.pop())
    kern.wait_for(partial(getattr, cell, "done"), "the cell to finish")
    assert not (tmp_path / "work" / "made.txt").exists()
