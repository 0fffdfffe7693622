"""Fixtures for the real agents installed in tests/real_agents/node (``npm ci`` there; .ci/run
does it). Tests skip, saying how to install, when the package is missing; under CI, where
.ci/run installs it, they fail instead."""

from __future__ import annotations

import json
import os
import shlex
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.real_agents.fake_anthropic import FakeAnthropic

NODE_MODULES = Path(__file__).parent / "node" / "node_modules"
CLAUDE_PACKAGE = "@agentclientprotocol/claude-agent-acp"
CLAUDE_VERSION = "0.101.0"
CLAUDE_JS = NODE_MODULES / CLAUDE_PACKAGE / "dist" / "index.js"


def claude_installed() -> str | None:
    """Why claude-agent-acp cannot run here, or None when it can."""
    if shutil.which("node") is None:
        return "node is not on PATH"
    manifest = NODE_MODULES / CLAUDE_PACKAGE / "package.json"
    if not manifest.is_file():
        return f"{CLAUDE_PACKAGE} is not installed: run `npm ci` in tests/real_agents/node"
    version = json.loads(manifest.read_text())["version"]
    if version != CLAUDE_VERSION:
        return f"{CLAUDE_PACKAGE} {version} is installed, the tests need {CLAUDE_VERSION}"
    return None


@dataclass
class ClaudeLaunch:
    """How to start claude-agent-acp against the fake API: ``argv`` and ``env`` (the
    variables to add to the inherited environment)."""

    api: FakeAnthropic
    argv: list[str]
    env: dict[str, str]
    home: Path
    cwd: Path

    def env_options(self) -> str:
        """The env as ``--env KEY=VALUE`` options for ``%acp connect``."""
        return " ".join(f"--env {shlex.quote(f'{k}={v}')}" for k, v in self.env.items())


@pytest.fixture
def claude(tmp_path: Path) -> Iterator[ClaudeLaunch]:
    why = claude_installed()
    if why:
        if os.environ.get("CI"):  # .ci/run installs it: missing there is a failure
            pytest.fail(why)
        pytest.skip(why)
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    # Mode "default" asks before commands that change things (the initial mode, "auto",
    # would make extra classifier calls to the model API instead).
    (home / ".claude" / "settings.json").write_text(
        json.dumps({"permissions": {"defaultMode": "default"}})
    )
    cwd = tmp_path / "agent-cwd"  # (a kernel test's agent works in the kernel's folder)
    cwd.mkdir()
    with FakeAnthropic() as api:
        env = {
            "HOME": str(home),
            "IS_SANDBOX": "1",  # CI runs as root; without it session/new fails (bypass_root)
            "ANTHROPIC_BASE_URL": api.url,
            "ANTHROPIC_API_KEY": "sk-fake",
            "DISABLE_TELEMETRY": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_AGENT_ACP_PROTOCOL": "v2",
            # After each turn the CLI otherwise asks the model (with tools and the whole
            # history) to predict the user's next prompt, which would take a scripted reply.
            "CLAUDE_CODE_ENABLE_PROMPT_SUGGESTION": "false",
            # Anything that honours a proxy gets a dead one, never the real network.
            "HTTPS_PROXY": "http://127.0.0.1:9",
            "HTTP_PROXY": "http://127.0.0.1:9",
            "NO_PROXY": "127.0.0.1,localhost",
        }
        yield ClaudeLaunch(api, ["node", str(CLAUDE_JS)], env, home, cwd)
