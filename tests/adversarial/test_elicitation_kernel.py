"""Questions in a real kernel: the cell shows the form, a front end fills it through comm
messages and clicks Submit, and the agent receives the content; ``--timeout`` answers cancel."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from kernel_driver import Kernel, SharedKernel, acp_kernel, kernel_for_test, new_cell_id

AGENT = Path(__file__).parent / "agents" / "elicit_agent.py"

QUESTION = {
    "mode": "form",
    "message": "Which <b>build</b>?",
    "requestedSchema": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Name", "minLength": 2},
            "count": {"type": "integer", "minimum": 1, "maximum": 9, "default": 1},
            "fast": {"type": "boolean"},
            "size": {
                "type": "string",
                "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}],
            },
        },
        "required": ["name", "size"],
    },
}


def received(work: Path) -> list[dict[str, Any]]:
    path = work / "received.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def answers(work: Path) -> list[dict[str, Any]]:
    return [m for m in received(work) if "method" not in m and m.get("id", 0) >= 100]


def models_named(k: Kernel, name: str) -> list[str]:
    return [c for c, s in k.models.items() if s.get("_model_name") == name and c not in k.closed]


def set_state(k: Kernel, comm_id: str, **state: Any) -> None:
    """What a browser sends when a person edits a widget."""
    content = {"comm_id": comm_id, "data": {"method": "update", "state": state, "buffer_paths": []}}
    k.kc.shell_channel.send(k.kc.session.msg("comm_msg", content))


def connect(k: Kernel, work: Path) -> None:
    # The cell's form only: the side panel's inbox would hold a second copy of each question
    # (tests/test_cells.py answers one there).
    k.run("%acp panel --no-auto")
    k.run(f"%env ELICIT_PARAMS={json.dumps(QUESTION)}")
    k.run(f"%acp connect -- {sys.executable} {AGENT} ask {work}")


def test_form_filled_in_the_front_end_reaches_the_agent(
    shared_kernel: SharedKernel, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    work = tmp_path / "agent"
    work.mkdir()
    with kernel_for_test(shared_kernel, tmp_path, request) as k:
        connect(k, work)
        cell = k.submit("%%acp -o t\ngo\n", new_cell_id())
        submit = k.wait_for(lambda: k.buttons("Submit"), "the Submit button")
        k.wait_for(k.cell_waiting, "the cell to await its turn")
        [text] = models_named(k, "TextModel")
        [dropdown] = [
            c
            for c in models_named(k, "DropdownModel")
            if "Large" in k.models[c].get("_options_labels", ())
        ]
        # First an invalid value: Submit is refused in the form, nothing reaches the agent.
        set_state(k, text, value="A")
        set_state(k, dropdown, index=2)  # (choose), Small, Large
        k.click(submit[0])
        k.wait_for(
            lambda: any("fix the marked fields" in str(s.get("value")) for s in k.models.values()),
            "the inline error",
        )
        assert answers(work) == []
        set_state(k, text, value="Ada")
        k.click(submit[0])
        k.wait_for(lambda: cell.done, "the cell to end")
        found = answers(work)
        assert found[0]["result"] == {
            "action": "accept",
            "content": {"name": "Ada", "count": 1, "size": "l"},
        }
        out = k.run("print(t.elicitations[0].decided_by, t.elicitations[0].action)").text()
        assert out.strip() == "click accept"
        assert 'answer: {"action": "accept"' in k.run("print(t.text)").text()


def test_timeout_answers_cancel_then_cancels_the_turn(
    shared_kernel: SharedKernel, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    work = tmp_path / "agent"
    work.mkdir()
    with kernel_for_test(shared_kernel, tmp_path, request) as k:
        k.run("%env WAIT_CANCEL=1")  # the agent waits for session/cancel after a cancel
        connect(k, work)
        k.run("%%acp --timeout 0.5 -o t\ngo\n")
        assert answers(work)[0]["result"] == {"action": "cancel"}
        out = k.run("print(t.elicitations[0].decided_by, t.stop_reason)").text()
        assert out.split() == ["timeout", "cancelled"]
        methods = [
            m.get("method") or "answer" for m in received(work) if "method" in m or m["id"] >= 100
        ]
        assert methods.index("answer") < methods.index("session/cancel")
        static = k.run("print(t.elicitations)").text()
        assert "cancel by timeout" in static


def test_interrupt_answers_cancel(tmp_path: Path) -> None:
    work = tmp_path / "agent"
    work.mkdir()
    with acp_kernel(tmp_path) as k:
        connect(k, work)
        cell = k.submit("%%acp -o t\ngo\n", new_cell_id())
        k.wait_for(lambda: k.buttons("Submit"), "the Submit button")
        k.wait_for(k.cell_waiting, "the cell to await its turn")
        k.km.interrupt_kernel()
        k.wait_for(lambda: cell.done, "the cell to end after the interrupt")
        k.wait_for(lambda: answers(work), "our answer")
        assert answers(work)[0]["result"] == {"action": "cancel"}
        methods = [
            m.get("method") or "answer" for m in received(work) if "method" in m or m["id"] >= 100
        ]
        assert methods.index("session/cancel") < methods.index("answer")
        assert "cancel by cancel" in k.run("print(t.elicitations)").text()
        k.run("pass")
        live = [b for b in k.buttons("Submit") if not k.models[b].get("disabled")]
        assert live == []  # the form of the cancelled question takes no more answers


def test_closing_the_agent_answers_cancel(
    shared_kernel: SharedKernel, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    work = tmp_path / "agent"
    work.mkdir()
    with kernel_for_test(shared_kernel, tmp_path, request) as k:
        connect(k, work)
        k.run("%%acp --bg -o t\ngo\n", new_cell_id())
        k.wait_for(lambda: k.buttons("Submit"), "the Submit button")
        k.run("%acp close")
        k.wait_for(lambda: answers(work), "our answer")
        assert answers(work)[0]["result"] == {"action": "cancel"}
        assert "cancel by closed (the agent was closed)" in k.run("print(t.elicitations)").text()
