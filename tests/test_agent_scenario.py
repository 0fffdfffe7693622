"""The embedded agent's scenarios (--scenario): JSONL turns and steps, errors that name the
line, substitution."""

from __future__ import annotations

import pytest

from acp_notebook.agent._scenario import (
    Permission,
    ScenarioError,
    Script,
    SendUpdate,
    Sleep,
    Stop,
    parse_scenario,
    substitute,
)


def test_scenario_turns_and_steps() -> None:
    scenario = parse_scenario(
        "# comment\n\n"
        '{"update": {"sessionUpdate": "agent_message_chunk"}}\n'
        '{"sleep": 0.5}\n'
        '{"turn": {}}\n'
        '{"permission": {"title": "t", "options": []}, "expect": ["allow_once"]}\n'
        '{"script": "$ ls"}\n'
        '{"stopReason": "refusal"}\n'
    )
    assert scenario.turns == [
        [SendUpdate({"sessionUpdate": "agent_message_chunk"}), Sleep(0.5)],
        [
            Permission({"title": "t", "options": []}, ("allow_once",)),
            Script("$ ls"),
            Stop("refusal"),
        ],
    ]
    assert scenario.turn(3) == scenario.turns[1]


@pytest.mark.parametrize(
    "line",
    [
        "not json",
        "[1]",
        "{}",
        '{"sleep": -1}',
        '{"sleep": 1, "script": "x"}',
        '{"update": {"no": "tag"}}',
        '{"permission": {"title": "t"}}',
        '{"permission": {"options": []}, "expect": "allow_once"}',
        '{"script": 3}',
    ],
)
def test_scenario_errors_name_the_line(line: str) -> None:
    with pytest.raises(ScenarioError, match=r"s\.jsonl:2"):
        parse_scenario('{"sleep": 0}\n' + line, "s.jsonl")


def test_substitute() -> None:
    value = {"a": ["${cwd}/x", 1, {"b": "${sessionId}"}]}
    assert substitute(value, {"cwd": "/w", "sessionId": "s"}) == {"a": ["/w/x", 1, {"b": "s"}]}
