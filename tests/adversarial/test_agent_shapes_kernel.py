"""Issue 22, findings 6 and 7, in a real kernel: a scripted v1 agent asks to run ``rm -f x`` in
the shapes Cline, Kimi and Mistral Vibe send (tests/adversarial/agents/shapes_agent.py).
Under ``--allow '*' --deny 'rm *'`` none of them is approved and the canary survives; without
rules, the card of Vibe's request (which names its tool call by id only) shows the command."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.kernel_driver import Kernel, acp_kernel, new_cell_id

AGENT = Path(__file__).parent / "agents" / "shapes_agent.py"
REJECTED = {"outcome": "selected", "optionId": "reject"}


def answers(work: Path) -> list[list[Any]]:
    path = work / "answers.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def new_buttons(k: Kernel, label: str, before: set[str]) -> list[str]:
    """Live buttons with this label made since ``before`` (older cells keep theirs)."""
    return [
        cid for cid in k.buttons(label) if cid not in before and not k.models[cid].get("disabled")
    ]


def card_html(k: Kernel, before: set[str]) -> list[str]:
    """The HTML of every open permission card's request (what a person reads) made since
    ``before`` (the comm ids there were)."""
    return [
        str(state.get("value", ""))
        for cid, state in k.models.items()
        if cid not in k.closed
        and cid not in before
        and "acp-card-request" in str(state.get("value", ""))
    ]


def test_cline_kimi_and_vibe_shapes_are_denied_and_vibes_card_shows_the_command(
    tmp_path: Path,
) -> None:
    work = tmp_path / "agent-work"
    work.mkdir()
    canary = work / "x"
    canary.write_text("keep me\n")
    with acp_kernel(tmp_path) as k:
        k.run(f"%acp connect -- {sys.executable} {AGENT} {work}")
        # finding 6 and 7: a catch-all allow with a deny rule approves none of the three
        cell = k.run("%%acp --allow '*' --deny 'rm *' -o t\ncline kimi vibe\n")
        logged = k.run("print([(d.decided_by, d.detail) for d in t.permissions])").text()
        assert answers(work) == [["cline", REJECTED], ["kimi", REJECTED], ["vibe", REJECTED]]
        assert logged.strip() == str([("policy", "--deny 'rm *'")] * 3), cell.text()
        assert canary.exists()
        # finding 7: without rules a person decides Vibe's request, and its card shows the
        # command that came in the earlier tool_call update
        before = set(k.models)
        vibe = k.submit("%%acp -o v\nvibe\n", new_cell_id())
        # (the cell's card and the side panel's copy)
        rejects = k.wait_for(lambda: new_buttons(k, "Reject", before), "the card of the request")
        shown = k.wait_for(lambda: card_html(k, before), "the card's request")
        assert all('<div class="acp-card-command">$ rm -f x</div>' in h for h in shown), shown
        k.click(rejects[0])
        k.wait_for(lambda: vibe.done, "the cell to end after Reject")
        assert answers(work)[-1] == ["vibe", REJECTED]
        assert "command: rm -f x" in vibe.text(), vibe.text()
        assert canary.exists()
        # the agent is honest: an allow a person clicks does delete the canary
        allowed = k.submit("%%acp\nvibe\n", new_cell_id())
        before = set(k.models)
        allows = k.wait_for(lambda: new_buttons(k, "Allow once", before), "a new card")
        k.click(allows[0])
        k.wait_for(lambda: allowed.done, "the cell to end after Allow")
    assert answers(work)[-1] == ["vibe", {"outcome": "selected", "optionId": "allow"}]
    assert not canary.exists()
