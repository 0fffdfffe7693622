"""Three v1 agents that speak OpenAI Chat Completions, run offline against the fake of
tests/real_agents/fake_openai_chat.py, and the scenarios their test modules share (test_qwen.py,
test_copilot.py, test_cline.py): each is started with ``%acp connect -- ARGV`` in a real kernel.

* a text turn renders the fake's text (the agent under strace: no connect() leaves loopback);
* a shell command asked about on a permission card: nothing runs before the click, it runs
  after Allow (it creates a file in the kernel's folder);
* ``%%acp --deny 'touch *'``: the policy refuses the command without a card and it never runs;
* Interrupt while the card waits: the request is answered ``cancelled``, the turn ends
  ``cancelled`` and the command never runs (a later turn of the same session still works).

Each agent gets a temporary HOME (its settings, sign-in and state go there), the kernel's
environment is cleared of the credentials and endpoints these agents read, and every proxy
variable points at a dead loopback port, so that nothing the agents try leaves the machine.
What is the same for every test is made once a process, in the ``agent_cache`` folder
(tests/real_agents/conftest.py): Copilot's unpacked package, the provider file ``cline auth``
writes. The packages are pinned in tests/real_agents/node/package.json (``npm ci`` there;
.ci/run does it); a test skips, saying so, when its agent is missing (fails under CI)."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import pytest

from acp_notebook._magics import default_agent_name
from tests.kernel_driver import Execution, Kernel, new_cell_id
from tests.real_agents.conftest import NODE_MODULES, _need, not_installed, remote_connects, traced
from tests.real_agents.fake_openai_chat import DONE_TEXT, KEYWORD, MODEL, TEXT, FakeOpenAIChat

QWEN_PACKAGE, QWEN_VERSION = "@qwen-code/qwen-code", "0.24.4"
COPILOT_PACKAGE, COPILOT_VERSION = "@github/copilot", "1.0.102"
CLINE_PACKAGE, CLINE_VERSION = "cline", "3.0.65"
QWEN_JS = NODE_MODULES / QWEN_PACKAGE / "cli.js"
COPILOT_JS = NODE_MODULES / COPILOT_PACKAGE / "npm-loader.js"  # runs its native binary
CLINE_JS = NODE_MODULES / CLINE_PACKAGE / "bin" / "cline"  # runs its native (Bun) binary
FAKE_KEY = "sk-fake-chat-0b7e4c1d9a2f3865"
GUARD = 30.0  # seconds; a guard against hanging, never an assertion on speed

# What these agents read credentials, endpoints or another home from: none may leak in from
# the environment the tests run in (the kernel, and so the agent, inherits it).
CREDENTIAL_VARS = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_MODEL",
    "QWEN_MODEL",
    "QWEN_HOME",
    "DASHSCOPE_API_KEY",
    "OPENROUTER_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "GH_TOKEN",
    "GITHUB_TOKEN",
    "COPILOT_GITHUB_TOKEN",
    "COPILOT_HOME",
    "CLINE_DIR",
    "CLINE_DATA_DIR",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_CACHE_HOME",
)


@dataclass
class ChatAgent:
    """How to start one agent against the fake: ``argv``, ``env`` (added to the inherited
    environment, passed as ``%acp connect --env``), the labels of its allow-once and
    reject-once options, and what ``%acp connect`` says its name and version are."""

    api: FakeOpenAIChat
    argv: list[str]
    env: dict[str, str]
    home: Path
    connected: str  # e.g. "Qwen Code 0.24.4"
    allow: str
    reject: str
    model: str  # the model its requests name
    killed: list[int] = field(default_factory=list)  # left behind, killed by the fixture

    def env_options(self) -> str:
        return " ".join(f"--env {shlex.quote(f'{k}={v}')}" for k, v in self.env.items())


def _base_env(home: Path) -> dict[str, str]:
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        # Anything that honours a proxy gets a dead one, never the real network.
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
        "https_proxy": "http://127.0.0.1:9",
        "http_proxy": "http://127.0.0.1:9",
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }


def _running_with(home: Path) -> list[int]:
    """Live processes whose environment has ``HOME=home`` (a zombie's environment reads
    empty: it is not counted)."""
    wanted = f"HOME={home}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and wanted in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:  # gone, or not ours to read
            continue
    return found


def cline_hubs(home: Path) -> list[int]:
    """Live Cline hub daemons (``.cline --cline-hub-daemon ...``) started with ``HOME=home``."""
    found = []
    for pid in _running_with(home):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--cline-hub-daemon" in argv:
            found.append(pid)
    return found


def wait_gone(pids: list[int]) -> list[int]:
    """Wait (at most `GUARD` seconds) for these processes to end; those still alive."""
    deadline = time.monotonic() + GUARD
    while (left := [p for p in pids if _alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def _alive(pid: int) -> bool:
    """Running, not a zombie (an orphan's zombie stays until init reaps it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def kill_left_behind(home: Path) -> list[int]:
    """Kill (SIGKILL, by process id) every process still running with ``HOME=home``, until
    none is left; the ids killed."""
    killed: list[int] = []
    deadline = time.monotonic() + GUARD
    while left := _running_with(home):
        if time.monotonic() > deadline:
            raise AssertionError(f"processes with HOME={home} outlived SIGKILL: {left}")
        for pid in left:
            if pid not in killed:
                killed.append(pid)
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)  # (a poll of the condition above, not a wait for something to happen)
    return killed


@contextmanager
def _launched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, package: str, version: str
) -> Iterator[tuple[FakeOpenAIChat, Path]]:
    _need(not_installed(package, version))
    for name in CREDENTIAL_VARS:
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    with FakeOpenAIChat() as api:
        try:
            yield api, home
        finally:
            kill_left_behind(home)


@contextmanager
def qwen_launch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatAgent]:
    with _launched(tmp_path, monkeypatch, QWEN_PACKAGE, QWEN_VERSION) as (api, home):
        (home / ".qwen").mkdir()
        settings = {
            "security": {"auth": {"selectedType": "openai"}},
            "model": {"name": MODEL},
            # The default approval mode, "auto", has a model call judge each tool call (the
            # fake would have to answer it): "default" asks the client before every command.
            "tools": {"approvalMode": "default"},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "general": {"enableAutoUpdate": False},
            # Model calls of its own after a turn (a guess at the next prompt, memories): off.
            "ui": {"enableFollowupSuggestions": False},
            "memory": {
                "enableManagedAutoMemory": False,
                "enableManagedAutoDream": False,
                "enableAutoSkill": False,
            },
        }
        (home / ".qwen" / "settings.json").write_text(json.dumps(settings))
        env = {
            **_base_env(home),
            "OPENAI_BASE_URL": api.url,
            "OPENAI_API_KEY": FAKE_KEY,
            "OPENAI_MODEL": MODEL,
            # Else its first node process loads the bundle only to start a second one with a
            # larger heap (0.7 CPU-s of each start): the second is the agent, as with this.
            "QWEN_CODE_NO_RELAUNCH": "true",
        }
        argv = ["node", str(QWEN_JS), "--acp"]
        connected = f"Qwen Code {QWEN_VERSION}"
        yield ChatAgent(api, argv, env, home, connected, "Allow", "Reject", MODEL)


@contextmanager
def copilot_launch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: Path
) -> Iterator[ChatAgent]:
    """``cache``: where its loader unpacks the native binary's package (235 MB, 2.3 CPU-s) the
    first time, and finds it from then on (``COPILOT_PKG_CACHE_HOME``; by default it is under
    ``XDG_CACHE_HOME``, which is the test's own)."""
    with _launched(tmp_path, monkeypatch, COPILOT_PACKAGE, COPILOT_VERSION) as (api, home):
        env = {
            **_base_env(home),
            "COPILOT_PKG_CACHE_HOME": str(cache / "copilot"),
            "COPILOT_OFFLINE": "true",
            "COPILOT_PROVIDER_BASE_URL": api.url,
            "COPILOT_PROVIDER_API_KEY": FAKE_KEY,
            "COPILOT_MODEL": MODEL,
        }
        argv = ["node", str(COPILOT_JS), "--acp"]
        connected = f"Copilot {COPILOT_VERSION}"
        yield ChatAgent(api, argv, env, home, connected, "Allow once", "Deny", MODEL)


@contextmanager
def cline_launch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: Path
) -> Iterator[ChatAgent]:
    """``cache``: where the provider settings ``cline auth`` wrote are kept (see
    `_cline_auth`)."""
    with _launched(tmp_path, monkeypatch, CLINE_PACKAGE, CLINE_VERSION) as (api, home):
        env = {**_base_env(home), "CLINE_NO_AUTO_UPDATE": "1"}  # (no npm registry lookup)
        config = home / ".cline"
        # Telemetry off: otherwise each command retries its flush through the dead proxy with
        # a backoff (`cline auth` took 9 s instead of 1.5).
        (config / "data" / "settings").mkdir(parents=True)
        (config / "data" / "settings" / "global-settings.json").write_text(
            json.dumps({"telemetryOptOut": True, "autoUpdateEnabled": False})
        )
        _cline_auth(config, env, api.url, cache / "cline-providers.json")
        env.update(CLINE_API_KEY=FAKE_KEY, CLINE_PROVIDER="openai-compatible", CLINE_MODEL=MODEL)
        argv = ["node", str(CLINE_JS), "--acp"]
        # Its requests name "gpt-4o", whatever `cline auth -m` stored and CLINE_MODEL say
        # (its session's model option says "gpt-4o" too); the fake answers any model.
        connected = f"cline {CLINE_VERSION}"
        agent = ChatAgent(api, argv, env, home, connected, "Allow once", "Reject", "gpt-4o")
        try:
            yield agent
        finally:
            # Its hub daemon (``.cline --cline-hub-daemon``, in a session of its own) outlives
            # the agent: kill it here, and anything else still running with this HOME.
            agent.killed += kill_left_behind(home)


def _cline_auth(config: Path, env: dict[str, str], url: str, kept: Path) -> None:
    """Its provider, key and model, stored in its HOME (the ACP agent reads them there): the
    ``providers.json`` of ``cline auth -p openai -k KEY -b URL -m MODEL``, run once a process
    (1.5 CPU-s and 4 s a run) and ``kept``; a later test gets that file with its own fake's
    URL, the only thing in it that differs between tests."""
    providers = config / "data" / "settings" / "providers.json"
    if kept.is_file():
        stored = json.loads(kept.read_text())
        settings = stored["providers"]["openai-compatible"]["settings"]
        settings["baseUrl"] = url
        providers.write_text(json.dumps(stored, indent=2))
        return
    auth = [
        *("node", str(CLINE_JS), "auth", "-p", "openai", "-k", FAKE_KEY, "-b", url),
        *("-m", MODEL, "--config", str(config), "--data-dir", str(config / "data")),
    ]
    done = subprocess.run(
        auth, env={**os.environ, **env}, capture_output=True, text=True, timeout=GUARD
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Provider configured" in done.stdout, done.stdout
    stored = json.loads(providers.read_text())
    settings = stored["providers"]["openai-compatible"]["settings"]
    assert (settings["baseUrl"], settings["apiKey"], settings["model"]) == (url, FAKE_KEY, MODEL)
    kept.write_text(providers.read_text())


# -- the scenarios, through a real kernel ------------------------------------------------------


def connect(k: Kernel, agent: ChatAgent, argv: list[str] | None = None) -> str:
    argv = argv or agent.argv
    out = k.run(f"%acp connect {agent.env_options()} -- {shlex.join(argv)}").text()
    assert f"acp: connected '{default_agent_name(argv)}': {agent.connected}" in out, out
    assert "acp: protocol v1; capabilities: " in out, out
    assert FAKE_KEY not in out
    return out


def shortcut_turn(k: Kernel, agent: ChatAgent, shortcut: str, package: str) -> None:
    """``%acp connect SHORTCUT``: the registry entry resolves to the installed package here
    (its JavaScript with node, no npx), ``%acp agents`` says so, and a text turn goes
    through it."""
    k.run(f"import os; os.environ['ACP_NOTEBOOK_NODE_MODULES'] = {str(NODE_MODULES)!r}")
    folder = str(NODE_MODULES / package) + "/"
    listed = k.run(f"%acp agents {shortcut}").text()
    assert "; installed: " in listed and folder in listed and "/./" not in listed, listed
    out = k.run(f"%acp connect {shortcut} {agent.env_options()}").text()
    assert folder in out and "npx" not in out, out
    assert f"acp: connected '{shortcut}': {agent.connected}" in out, out
    assert "acp: protocol v1; " in out and FAKE_KEY not in out, out
    cell = k.run("%%acp\nsay hello\n", new_cell_id())
    assert TEXT in cell.text(), cell.text()


def _done(k: Kernel, cell: Execution, what: str) -> None:
    k.wait_for(partial(getattr, cell, "done"), what)
    assert cell.error is None, cell.text()


def text_turn(k: Kernel, agent: ChatAgent, log: Path) -> None:
    """The agent under strace (where it is installed): every connect() of every process it
    starts is logged, and none may leave loopback."""
    connect(k, agent, traced(agent.argv, log))
    cell = k.run("%%acp\nsay hello\n", new_cell_id())
    text = cell.text()
    assert TEXT in text, text
    asked = [r for r in agent.api.completions() if r.user_texts()]
    assert asked and "say hello" in asked[0].user_texts()[-1], asked
    assert asked[0].headers.get("authorization") == f"Bearer {FAKE_KEY}"
    assert {r.body["model"] for r in agent.api.completions()} == {agent.model}
    assert agent.api.calls == []  # no tool was asked for
    assert agent.api.unknown == []
    k.run("%acp close")  # (strace has written everything once the agent's tree is gone)
    if log.exists():
        assert f"htons({agent.api.port})" in log.read_text()  # strace saw the fake's connection
        assert remote_connects(log) == []


def command_after_allow(k: Kernel, agent: ChatAgent, work: Path) -> None:
    connect(k, agent)
    made = work / "made.txt"
    cell = k.submit(f"%%acp -o t\n{KEYWORD} touch made.txt\n", new_cell_id())
    buttons = k.wait_for(partial(k.buttons, agent.allow), f"the {agent.allow!r} button")
    assert len(agent.api.calls) == 1  # the fake asked for the command
    assert not made.exists()  # nothing ran before the click
    k.click(buttons[0])
    _done(k, cell, "the cell to finish after the click")
    assert made.exists()
    text = cell.text()
    assert f"decision: Approved: {agent.allow} - by a click" in text, text
    assert DONE_TEXT in text, text  # the fake's answer once the result came back
    [result] = [m for r in agent.api.completions() for m in r.tool_results()][-1:]
    assert result.get("tool_call_id") == agent.api.calls[0].id, result
    out = k.run("print(t.stop_reason, [d.decided_by for d in t.permissions])").text()
    assert out.strip() == "end_turn ['click']", out


def command_denied_by_policy(k: Kernel, agent: ChatAgent, work: Path) -> None:
    connect(k, agent)
    cell = k.submit(f"%%acp --deny 'touch *' -o t\n{KEYWORD} touch denied.txt\n", new_cell_id())
    _done(k, cell, "the cell to finish: the policy answers, nobody clicks")
    assert len(agent.api.calls) == 1  # the fake asked for the command
    text = cell.text()
    assert f"decision: Rejected: {agent.reject} - by policy --deny 'touch *'" in text, text
    assert "Approved" not in text, text
    out = k.run("print([(d.decided_by, d.allowed) for d in t.permissions])").text()
    assert out.strip() == "[('policy', False)]", out
    assert not (work / "denied.txt").exists()


def interrupt_while_the_card_waits(k: Kernel, agent: ChatAgent, work: Path) -> None:
    connect(k, agent)
    cell = k.submit(f"%%acp -o t\n{KEYWORD} touch never.txt\n", new_cell_id())
    k.wait_for(partial(k.buttons, agent.allow), f"the {agent.allow!r} button")
    k.wait_for(k.cell_waiting, "the cell to await its turn (with its own SIGINT handler)")
    k.km.interrupt_kernel()
    k.wait_for(partial(getattr, cell, "done"), "the cell to finish after the interrupt")
    assert cell.error is not None, cell.text()  # the cell ends with one line, no traceback
    text = cell.text()
    assert "KeyboardInterrupt: the turn was cancelled (session/cancel sent" in text, text
    assert "decision: Cancelled - the turn was cancelled" in text, text
    out = k.run("print(t.stop_reason, t.done, [d.option_id for d in t.permissions])").text()
    assert out.strip() == "cancelled True [None]", out
    # The session goes on, and by the end of its next turn the command has still not run.
    after = k.run("%%acp\nsay hello\n", new_cell_id()).text()
    assert TEXT in after, after
    assert not (work / "never.txt").exists()
    assert len(agent.api.calls) == 1
