"""claude-agent-acp 0.101.0: an ``AskUserQuestion`` tool_use becomes an ``elicitation/create``
form (we advertise ``elicitation.form``); the answer reaches the model as the tool_result."""

from __future__ import annotations

import shlex
from functools import partial
from typing import Any

import anyio
import pytest

import acp_notebook._protocol as p
from acp_notebook import connect
from tests.kernel_driver import Kernel, new_cell_id
from tests.real_agents.conftest import ClaudeLaunch
from tests.real_agents.fake_anthropic import Text, ToolUse

GUARD = 90.0  # seconds; a guard against hanging, never an assertion on speed

ASK = ToolUse(
    "AskUserQuestion",
    {
        "questions": [
            {
                "question": "Which color?",
                "header": "Color",
                "options": [
                    {"label": "Red", "description": "warm"},
                    {"label": "Blue", "description": "cool"},
                ],
                "multiSelect": False,
            }
        ]
    },
)


def _tool_results(claude: ClaudeLaunch) -> list[dict[str, Any]]:
    return [r for q in claude.api.agent_requests() for r in q.tool_results()]


@pytest.mark.anyio
async def test_ask_user_question_answered_through_the_handler(claude: ClaudeLaunch) -> None:
    claude.api.add(ASK, Text("You chose a color"))
    asked: list[Any] = []

    def answer(request: Any) -> dict[str, Any]:
        asked.append(request)
        [(name, prop)] = [
            (n, q) for n, q in request.requested_schema.properties.items() if p.property_choices(q)
        ]
        assert p.property_choices(prop) == [("Red", "Red"), ("Blue", "Blue")]
        return {name: "Blue"}

    with anyio.fail_after(GUARD):
        async with connect(
            claude.argv, cwd=claude.cwd, env=claude.env, elicitation=answer
        ) as agent:
            session = await agent.new_session(claude.cwd)
            turn = await session.prompt("ask me a question")
            assert await turn.wait() == "end_turn"
    [request] = asked
    assert isinstance(request, p.FormElicitationRequest)
    assert request.message == "Which color?"
    assert request.tool_call_id == ASK.id
    [decision] = turn.elicitations
    assert (decision.action, decision.decided_by) == ("accept", "handler")
    results = [r for r in _tool_results(claude) if r["tool_use_id"] == ASK.id]
    assert results and '"Which color?"="Blue"' in str(results[0]["content"])


def test_ask_user_question_answered_on_the_cell_form(kern: Kernel, claude: ClaudeLaunch) -> None:
    kern.run(f"%acp connect {claude.env_options()} -- {shlex.join(claude.argv)}")
    claude.api.add(ASK, Text("You chose a color"))
    cell = kern.submit("%%acp -o t\nask me a question\n", new_cell_id())
    submit = kern.wait_for(partial(kern.buttons, "Submit"), "the form's Submit button")
    [dropdown] = [
        c
        for c, s in kern.models.items()
        if s.get("_model_name") == "DropdownModel" and "Blue" in s.get("_options_labels", ())
    ]
    labels = list(kern.models[dropdown]["_options_labels"])
    content = {
        "comm_id": dropdown,
        "data": {"method": "update", "state": {"index": labels.index("Blue")}, "buffer_paths": []},
    }
    kern.kc.shell_channel.send(kern.kc.session.msg("comm_msg", content))
    kern.click(submit[0])
    kern.wait_for(partial(getattr, cell, "done"), "the cell to finish after Submit")
    assert cell.error is None, cell.text()
    results = [r for r in _tool_results(claude) if r["tool_use_id"] == ASK.id]
    assert results and '"Which color?"="Blue"' in str(results[0]["content"])
    out = kern.run("print(t.elicitations[0].decided_by, t.elicitations[0].action)").text()
    assert out.split() == ["click", "accept"]
