"""Fixtures for the real agents installed in tests/real_agents/node (``npm ci`` there; .ci/run
does it). Tests skip, saying how to install, when the package is missing; under CI, where
.ci/run installs it, they fail instead."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.kernel_driver import Kernel, SharedKernel, kernel_for_test
from tests.real_agents.fake_anthropic import FakeAnthropic
from tests.real_agents.fake_openai import FakeOpenAI

NODE_MODULES = Path(__file__).parent / "node" / "node_modules"
CLAUDE_PACKAGE = "@agentclientprotocol/claude-agent-acp"
CLAUDE_VERSION = "0.101.0"
CLAUDE_JS = NODE_MODULES / CLAUDE_PACKAGE / "dist" / "index.js"
CODEX_PACKAGE = "@agentclientprotocol/codex-acp"
CODEX_VERSION = "2.6.0"
CODEX_JS = NODE_MODULES / CODEX_PACKAGE / "dist" / "index.js"


def not_installed(package: str = CLAUDE_PACKAGE, wanted: str = CLAUDE_VERSION) -> str | None:
    """Why claude-agent-acp (or another pinned package) cannot run here, or None when it can."""
    if shutil.which("node") is None:
        return "node is not on PATH"
    manifest = NODE_MODULES / package / "package.json"
    if not manifest.is_file():
        return f"{package} is not installed: run `npm ci` in tests/real_agents/node"
    version = json.loads(manifest.read_text())["version"]
    if version != wanted:
        return f"{package} {version} is installed, the tests need {wanted}"
    return None


def _need(why: str | None) -> None:
    if why:
        if os.environ.get("CI"):  # .ci/run installs it: missing there is a failure
            pytest.fail(why)
        pytest.skip(why)


#: The fixtures that say how to launch an agent (they start its fake API, and take from this
#: process's environment what it must not inherit): `kern` sets up those a test asks for
#: before it, so the kernel has the environment they leave, and its agents are closed before
#: their API stops.
LAUNCHERS = ("agent", "claude", "codex", "gemini")


@pytest.fixture(scope="package")
def shared_kernel() -> Iterator[SharedKernel]:
    """One kernel for the tests of this folder that take `kern`, whatever their module (where
    tests/conftest.py has one a module): each test gets it reset, as a fresh kernel would
    look to it (tests/kernel_driver.py, SharedKernel; `kern` adds the environment). A kernel's
    start and the imports of its first ``%acp connect`` are about 1 CPU-s."""
    kernels = SharedKernel()
    try:
        yield kernels
    finally:
        kernels.close()


#: This process's environment when each shared kernel started (by its driver).
_STARTED_IN: weakref.WeakKeyDictionary[Kernel, dict[str, str]] = weakref.WeakKeyDictionary()

#: Run in the kernel: its environment changed as this process's has since the kernel started.
_ENVIRON = """\
import os as _acp_os
_acp_os.environ.update({changed!r})
[_acp_os.environ.pop(name, None) for name in {removed!r}]
del _acp_os
"""


def _environment_as_now(k: Kernel) -> None:
    """A shared kernel's environment after its reset is the one it started with, and it may
    have been started by another module's test: what this process's environment lost or
    changed since then (a test's fixtures remove the credentials its agent reads, and the
    kernel must not have them either) is lost or changed in the kernel too, as a kernel
    started now would have it."""
    started = _STARTED_IN.setdefault(k, dict(os.environ))
    changed = {n: v for n, v in os.environ.items() if started.get(n) != v}
    removed = sorted(n for n in started if n not in os.environ)
    if changed or removed:
        k.run(_ENVIRON.format(changed=changed, removed=removed))


@pytest.fixture
def kern(
    shared_kernel: SharedKernel, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Kernel]:
    """The folder's shared kernel, reset for the test (tests/kernel_driver.py, kernel_for_test:
    a test marked ``own_kernel`` gets one of its own), working in ``tmp_path/work``."""
    for name in LAUNCHERS:
        if name in request.fixturenames:
            request.getfixturevalue(name)
    with kernel_for_test(shared_kernel, tmp_path, request) as k:
        _environment_as_now(k)
        yield k


@pytest.fixture(scope="session")
def agent_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder for what an agent unpacks or sets up once and keeps reading, shared by this
    process's tests (one a worker under xdist): what is there is the same for every test, and
    nothing of a test's own (its HOME, settings, sessions, fake API) goes there."""
    return tmp_path_factory.mktemp("agent-cache")


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
    _need(not_installed())
    with claude_launch(tmp_path) as launch:
        yield launch


@contextmanager
def claude_launch(tmp_path: Path) -> Iterator[ClaudeLaunch]:
    """The fake API on 127.0.0.1 and how to start claude-agent-acp against it, all under
    ``tmp_path`` (a kernel can use it too: the browser tests' Claude turn does)."""
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    # Mode "default" asks before commands that change things (the initial mode, "auto",
    # would make extra classifier calls to the model API instead).
    (home / ".claude" / "settings.json").write_text(
        json.dumps({"permissions": {"defaultMode": "default"}})
    )
    cwd = tmp_path / "agent-cwd"  # (a kernel test's agent works in the kernel's folder)
    cwd.mkdir()
    claude_tmp = tmp_path / "claude-tmp"
    claude_tmp.mkdir()
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
            # Its temporary files (a background command's output, ...) go here, not /tmp.
            "CLAUDE_CODE_TMPDIR": str(claude_tmp),
            # Anything that honours a proxy gets a dead one, never the real network.
            "HTTPS_PROXY": "http://127.0.0.1:9",
            "HTTP_PROXY": "http://127.0.0.1:9",
            "NO_PROXY": "127.0.0.1,localhost",
        }
        yield ClaudeLaunch(api, ["node", str(CLAUDE_JS)], env, home, cwd)


@dataclass
class CodexLaunch:
    """How to start codex-acp offline against the fake Responses API: ``argv`` and ``env`` (to
    add to the inherited environment; the API key is not in it, a test passes ``key`` itself)."""

    api: FakeOpenAI
    argv: list[str]
    env: dict[str, str]
    home: Path
    cwd: Path
    key: str = "sk-fake-codex-5d1e8a7b3c9f2046"

    def env_options(self, **more: str) -> str:
        """The env (and ``more``) as ``--env KEY=VALUE`` options for ``%acp connect``."""
        pairs = {**self.env, **more}
        return " ".join(f"--env {shlex.quote(f'{k}={v}')}" for k, v in pairs.items())


@pytest.fixture
def codex(tmp_path: Path) -> Iterator[CodexLaunch]:
    _need(not_installed(CODEX_PACKAGE, CODEX_VERSION))
    home = tmp_path / "home"
    codex_home = home / ".codex"  # it must exist, or codex-acp fails to start
    codex_home.mkdir(parents=True)
    cwd = tmp_path / "agent-cwd"
    cwd.mkdir()
    with FakeOpenAI() as api:
        # A provider of our own on the fake API: it still needs an OpenAI sign-in (so
        # session/new answers auth-required until auth/login), and it speaks plain HTTPS (the
        # built-in provider first tries WebSockets five times, then falls back).
        (codex_home / "config.toml").write_text(
            'model_provider = "fake"\n'
            "[model_providers.fake]\n"
            'name = "fake"\n'
            f'base_url = "{api.url}"\n'
            'wire_api = "responses"\n'
            "requires_openai_auth = true\n"
            "supports_websockets = false\n"
        )
        env = {
            "HOME": str(home),
            "CODEX_HOME": str(codex_home),
            # Codex refreshes models and plugins in the background: anything that honours a
            # proxy gets a dead one, never the real network.
            "HTTPS_PROXY": "http://127.0.0.1:9",
            "HTTP_PROXY": "http://127.0.0.1:9",
            "NO_PROXY": "127.0.0.1,localhost",
        }
        yield CodexLaunch(api, ["node", str(CODEX_JS)], env, home, cwd)


_CONNECT = re.compile(
    r"connect\(\d+, \{sa_family=(AF_INET6?),.*?(?:inet_addr|inet_pton)\((?:AF_INET6, )?\"([^\"]+)\""
)


def remote_connects(strace_log: Path) -> list[str]:
    """Every IPv4/IPv6 connect() in an strace log whose address is not loopback."""
    found = []
    for line in strace_log.read_text().splitlines():
        match = _CONNECT.search(line)
        if match and match[2] not in ("127.0.0.1", "::1", "::ffff:127.0.0.1"):
            found.append(line)
    return found


def traced(argv: list[str], log: Path) -> list[str]:
    """``argv`` under strace (every connect() of every process logged to ``log``), or as is
    where strace is missing (a failure under CI, which installs it). A seccomp filter stops
    the processes at connect() only, not at each of their system calls (where the kernel has
    none, strace stops at each, as without it): about 0.5 CPU-s less for a node agent."""
    strace = shutil.which("strace")
    if strace is None:
        if os.environ.get("CI"):
            raise AssertionError("strace is not installed (apt-get install strace)")
        return argv
    return [strace, "-f", "--seccomp-bpf", "-qq", "-e", "trace=connect", "-o", str(log), *argv]


def set_state(k: Kernel, comm_id: str, **state: Any) -> None:
    """What a browser sends when a person edits a widget."""
    content = {"comm_id": comm_id, "data": {"method": "update", "state": state, "buffer_paths": []}}
    k.kc.shell_channel.send(k.kc.session.msg("comm_msg", content))


def enter_key(
    k: Kernel, description: str, key: str, button: str, results: tuple[str, ...], shown: str = ""
) -> tuple[str, str]:
    """What a person does with the password field a sign-in shows: the one field, labelled
    ``description``, gets ``key``; then a click on ``button``. The field's comm id and the
    label that then says the result (the first whose value starts with one of ``results``).
    ``shown``: the output that showed the field, for a failure's message."""
    fields = [c for c, s in k.models.items() if s.get("_model_name") == "PasswordModel"]
    assert len(fields) == 1, shown
    assert k.models[fields[0]].get("description") == description
    set_state(k, fields[0], value=key)
    [clicked] = k.wait_for(lambda: k.buttons(button), f"the {button} button")
    k.click(clicked)

    def labels() -> list[str]:
        values = [s.get("value", "") for s in k.models.values()]
        return [v for v in values if str(v).startswith(results)]

    [done] = k.wait_for(labels, f"the result of {button}")
    return fields[0], done
