"""A session's mode and config options as facts (_notebook/_modes.py): which option is the
mode, which value a person's word picks, and when a mode lets the agent act without asking."""

from __future__ import annotations

from typing import Any

import pytest

from acp_notebook._notebook._errors import NoSuchConfigOption, NoSuchConfigValue
from acp_notebook._notebook._modes import (
    MODE,
    config_facts,
    find_option,
    mode_fact,
    pick_value,
    unasked_always,
)

CODEX_MODES = {
    "configId": "mode",
    "name": "Approval Preset",
    "category": "mode",
    "type": "select",
    "currentValue": "agent",
    "options": [
        {"value": "read-only", "name": "Read Only"},
        {"value": "workspace-write", "name": "Workspace access"},
        {"value": "agent", "name": "Auto review"},
        {"value": "agent-full-access", "name": "Full access"},
    ],
}
MODEL = {
    "configId": "model",
    "name": "Model",
    "category": "model",
    "type": "select",
    "currentValue": "m1",
    "options": [
        {"groupId": "g", "name": "Fast", "options": [{"value": "m1", "name": "M1"}]},
    ],
}
THINKING = {"configId": "think", "name": "Think hard", "type": "boolean", "currentValue": False}


def test_the_mode_is_the_option_of_category_mode_whatever_its_id() -> None:
    renamed = {**CODEX_MODES, "configId": "approval"}
    facts = config_facts([MODEL, renamed, THINKING])
    assert find_option(facts, MODE).config_id == "approval"
    assert [f.config_id for f in facts] == ["model", "approval", "think"]
    # without a category, the option called "mode" (a v1 agent's modes)
    v1 = {k: v for k, v in CODEX_MODES.items() if k != "category"}
    assert find_option(config_facts([MODEL, v1]), MODE).config_id == "mode"
    with pytest.raises(NoSuchConfigOption) as info:
        find_option(config_facts([MODEL, THINKING]), MODE)
    assert info.value.known == ("model", "think")


def test_a_value_is_picked_by_its_value_or_its_name_in_any_case() -> None:
    [option] = config_facts([CODEX_MODES])
    assert option.current_name == "Auto review"
    assert pick_value(option, "workspace-write") == "workspace-write"
    assert pick_value(option, "Full Access") == "agent-full-access"
    assert pick_value(option, "READ-ONLY") == "read-only"
    with pytest.raises(NoSuchConfigValue) as info:
        pick_value(option, "yolo")
    assert info.value.choices == ("read-only", "workspace-write", "agent", "agent-full-access")
    [think] = config_facts([THINKING])
    assert (pick_value(think, "on"), pick_value(think, "false")) == (True, False)
    [model] = config_facts([MODEL])
    assert pick_value(model, "m1") == "m1" and model.current_name == "Fast / M1"


def test_codex_auto_review_and_full_access_act_without_asking_workspace_write_asks() -> None:
    for value, unasked in [
        ("agent", "approve"),
        ("agent-full-access", "without asking"),
        ("workspace-write", None),
        ("read-only", None),
    ]:
        fact = mode_fact([{**CODEX_MODES, "currentValue": value}], "codex-acp")
        assert fact is not None and fact.option.current == value
        assert (fact.unasked is None) if unasked is None else unasked in (fact.unasked or "")


def test_claude_accept_edits_and_bypass_say_so_default_and_plan_do_not() -> None:
    option: dict[str, Any] = {
        "configId": "mode",
        "name": "Mode",
        "category": "mode",
        "type": "select",
        "currentValue": "default",
        "options": [
            {"value": v, "name": v} for v in ("default", "acceptEdits", "plan", "bypassPermissions")
        ],
    }
    said = {
        v: (mode_fact([{**option, "currentValue": v}], "claude-acp") or pytest.fail()).unasked
        for v in ("default", "acceptEdits", "plan", "bypassPermissions")
    }
    assert said["default"] is None and said["plan"] is None
    auto = mode_fact([{**option, "currentValue": "auto"}], "claude-acp")
    assert auto is not None and auto.unasked is not None and "a model" in auto.unasked
    assert said["acceptEdits"] == "edits files without asking"
    assert said["bypassPermissions"] == "runs commands and edits files without asking"
    # an unknown agent in a mode of the same name: nothing is claimed
    unknown = mode_fact([{**option, "currentValue": "bypassPermissions"}], None)
    assert unknown is not None and unknown.unasked is None


def test_agents_known_never_to_ask_say_so_whatever_their_mode() -> None:
    assert unasked_always("pi-acp") == "never asks before it runs a command"
    assert unasked_always("hermes-agent") is not None
    assert unasked_always("claude-acp") is None and unasked_always(None) is None
    assert mode_fact([MODEL], "pi-acp") is None  # no mode: the turn says it from the agent
