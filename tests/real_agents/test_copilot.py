"""GitHub Copilot CLI 1.0.102 (``@github/copilot``, ``node npm-loader.js --acp``, which runs the
native binary of ``@github/copilot-linux-x64``), a real v1 agent, offline against the fake
Chat Completions API (tests/real_agents/fake_openai_chat.py), through ``%acp connect -- ARGV``
and ``%%acp`` cells in a real kernel (the scenarios are in tests/real_agents/chat_agents.py).

``COPILOT_OFFLINE=true`` with ``COPILOT_PROVIDER_BASE_URL``, ``COPILOT_PROVIDER_API_KEY`` and
``COPILOT_MODEL``: no GitHub sign-in (its one sign-in method, ``copilot-login``, is never used).
In its initial mode (``agent``, with ``allow_all`` off) it asks before each command of its
``bash`` tool. The request's title is the description the model gave the call, not the command:
the command is only in ``rawInput`` (``command``, and again as ``commands: [command]``), which
is what the ``--deny`` rule reads. Its options: "Allow once", "Always allow", "Deny". After a
cancel its tool call stays ``pending`` (it sends no final status)."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from tests.kernel_driver import Kernel, new_cell_id
from tests.real_agents import chat_agents
from tests.real_agents.chat_agents import ChatAgent, copilot_launch
from tests.real_agents.fake_openai_chat import KEYWORD


@pytest.fixture
def agent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, agent_cache: Path
) -> Iterator[ChatAgent]:
    with copilot_launch(tmp_path, monkeypatch, agent_cache) as launched:
        yield launched


def test_a_text_turn_renders_the_fake_models_text_on_loopback_only(
    kern: Kernel, agent: ChatAgent, tmp_path: Path
) -> None:
    chat_agents.text_turn(kern, agent, tmp_path / "connects.log")


def test_a_command_runs_only_after_allow_on_its_card(
    kern: Kernel, agent: ChatAgent, tmp_path: Path
) -> None:
    chat_agents.command_after_allow(kern, agent, tmp_path / "work")


def test_a_deny_rule_refuses_the_command_and_it_never_runs(
    kern: Kernel, agent: ChatAgent, tmp_path: Path
) -> None:
    chat_agents.command_denied_by_policy(kern, agent, tmp_path / "work")


@pytest.mark.own_kernel
def test_interrupt_answers_the_pending_card_cancelled_and_the_command_never_runs(
    kern: Kernel, agent: ChatAgent, tmp_path: Path
) -> None:
    chat_agents.interrupt_while_the_card_waits(kern, agent, tmp_path / "work")


def test_the_card_names_its_one_command_once(kern: Kernel, agent: ChatAgent) -> None:
    # Copilot's rawInput holds the command twice ({"command": C, "commands": [C]}): the card
    # said "command: C" twice, as if two commands would run (failed before 4345c83)
    chat_agents.connect(kern, agent)
    cell = kern.submit(f"%%acp\n{KEYWORD} touch once.txt\n", new_cell_id())
    reject = kern.wait_for(partial(kern.buttons, agent.reject), f"the {agent.reject!r} button")
    kern.click(reject[0])
    kern.wait_for(partial(getattr, cell, "done"), "the cell to finish after the click")
    assert cell.error is None, cell.text()
    [call] = agent.api.calls
    assert call.arguments == {"command": "touch once.txt", "description": "Run the command"}
    text = cell.text()
    assert f"decision: Rejected: {agent.reject} - by a click" in text, text
    assert text.count("command: touch once.txt") == 1, text


def test_connect_copilot_by_its_registry_shortcut(kern: Kernel, agent: ChatAgent) -> None:
    chat_agents.shortcut_turn(kern, agent, "copilot", chat_agents.COPILOT_PACKAGE)
