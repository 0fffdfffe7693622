"""Cline 3.0.65 (``cline``, ``node bin/cline --acp``, which runs its native Bun binary), a real v1
agent, offline against the fake Chat Completions API (tests/real_agents/fake_openai_chat.py),
through ``%acp connect -- ARGV`` and ``%%acp`` cells in a real kernel (the scenarios are in
tests/real_agents/chat_agents.py).

``cline auth -p openai -k KEY -b URL -m MODEL --config DIR --data-dir DIR`` stores the provider
in the temporary HOME, and ``CLINE_API_KEY``, ``CLINE_PROVIDER=openai-compatible`` and
``CLINE_MODEL`` go to the agent; its requests name ``gpt-4o`` all the same. Telemetry is opted
out in its ``global-settings.json`` (else every command retries a flush through the dead proxy
for seconds) and ``CLINE_NO_AUTO_UPDATE=1`` skips its npm registry lookup. In ``act`` mode,
auto-approve off, it asks before each ``run_commands`` call: the request's title is
``run_commands: COMMAND``, ``rawInput`` is ``{"commands": [COMMAND]}``. Its options: "Allow
once", "Allow always", "Reject".

On its first turn it starts a hub daemon (``.cline --cline-hub-daemon``) in a session of its
own, which outlives the agent when it is run by hand: the fixture kills anything still running
with its HOME, and a test checks that the kernel's watchdog stops it with the kernel."""

from __future__ import annotations

import os
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from tests.kernel_driver import Kernel, acp_kernel
from tests.real_agents import chat_agents
from tests.real_agents.chat_agents import ChatAgent, cline_launch
from tests.real_agents.fake_openai_chat import TEXT


@pytest.fixture
def agent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, agent_cache: Path
) -> Iterator[ChatAgent]:
    with cline_launch(tmp_path, monkeypatch, agent_cache) as launched:
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


def test_its_detached_hub_daemon_is_stopped_with_the_kernel(
    agent: ChatAgent, tmp_path: Path
) -> None:
    # Cline starts a hub daemon on its first turn, in a session of its own (setsid), so it
    # is not in the agent's process group, and it outlives the agent when run by hand (the
    # fixture kills whatever is left). The agent's watchdog stops it with the kernel.
    with acp_kernel(tmp_path) as k:
        out = chat_agents.connect(k, agent)
        agent_pid = int(out.split("(pid ", 1)[1].split(",", 1)[0])
        assert TEXT in k.run("%%acp\nsay hello\n").text()
        [hub] = k.wait_for(partial(chat_agents.cline_hubs, agent.home), "the hub daemon")
        assert os.getsid(hub) != os.getsid(agent_pid)
        assert os.getpgid(hub) != os.getpgid(agent_pid)
    assert chat_agents.wait_gone([hub]) == []
    assert chat_agents.cline_hubs(agent.home) == []


def test_connect_cline_by_its_registry_shortcut(kern: Kernel, agent: ChatAgent) -> None:
    chat_agents.shortcut_turn(kern, agent, "cline", chat_agents.CLINE_PACKAGE)
