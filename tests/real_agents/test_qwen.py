"""Qwen Code 0.24.4 (``@qwen-code/qwen-code``, ``node cli.js --acp``), a real v1 agent, offline
against the fake Chat Completions API (tests/real_agents/fake_openai_chat.py), through
``%acp connect -- ARGV`` and ``%%acp`` cells in a real kernel (the scenarios are in
tests/real_agents/chat_agents.py).

It reads ``OPENAI_BASE_URL``, ``OPENAI_API_KEY`` and ``OPENAI_MODEL`` once its settings say
``security.auth.selectedType: "openai"``. Its default approval mode, ``auto``, has the model
judge each tool call instead of asking the client: the fixture's settings choose ``default``,
which asks before every command (its ``run_shell_command`` tool; the request's title is the
command itself, with ``rawInput.command``). Its options: "Always Allow in project", "Always
Allow for user", "Allow", "Reject". Usage statistics, telemetry, update checks, follow-up
suggestions and background memory agents are off (the last two would be extra model calls).
Its package asks for node >= 22; it runs on node 20 here."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kernel_driver import Kernel
from tests.real_agents import chat_agents
from tests.real_agents.chat_agents import ChatAgent, qwen_launch


@pytest.fixture
def agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatAgent]:
    with qwen_launch(tmp_path, monkeypatch) as launched:
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


def test_connect_qwen_by_its_registry_shortcut(kern: Kernel, agent: ChatAgent) -> None:
    chat_agents.shortcut_turn(kern, agent, "qwen", chat_agents.QWEN_PACKAGE)
