"""Gemini CLI 0.61.0 (``@google/gemini-cli``, ``--acp``), a real v1-only agent, offline and
without credentials: initialize (negotiated down to v1, its agent info and sign-in methods),
``session/new`` refused with `AuthenticationRequired`, under strace (no connection leaves
loopback); and through the magics in a real kernel: ``%acp connect gemini``, a refused cell,
``%acp auth`` and the ``gemini-api-key`` method, whose key goes in ``authenticate``'s
``_meta["api-key"]`` (a fake key: ``session/new`` then opens, offline; no model call is made).

Gemini CLI sends usage statistics (Clearcut, ``play.googleapis.com``) unless its settings say
``privacy.usageStatisticsEnabled: false``: the fixture's HOME has that setting, and the strace
tests prove nothing else is tried. The client API tests start it with ``--acp``; ``%acp connect
gemini`` with the registry's ``--experimental-acp`` (the deprecated spelling, still accepted)."""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_notebook import AuthenticationRequired, connect
from tests.kernel_driver import Kernel, acp_kernel, new_cell_id
from tests.real_agents.conftest import (
    NODE_MODULES,
    _need,
    enter_key,
    not_installed,
    remote_connects,
    traced,
)

pytestmark = pytest.mark.anyio
GUARD = 90.0  # seconds; a guard against hanging, never an assertion on speed
GEMINI_PACKAGE = "@google/gemini-cli"
GEMINI_VERSION = "0.61.0"
GEMINI_JS = NODE_MODULES / GEMINI_PACKAGE / "bundle" / "gemini.js"
METHODS = ["oauth-personal", "gemini-api-key", "vertex-ai", "gateway"]
# What Gemini CLI reads credentials or a gateway from, besides its HOME: none may leak in.
CREDENTIAL_VARS = (
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_USE_GCA",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GOOGLE_GEMINI_BASE_URL",
    "GEMINI_CLI_HOME",
    "CLOUD_SHELL",
)


@dataclass
class GeminiLaunch:
    argv: list[str]
    env: dict[str, str]  # added to the inherited environment
    home: Path
    cwd: Path
    key: str = "AIzaFakeGeminiKey-7c1f9e2a4b6d8053"

    def env_options(self) -> str:
        return " ".join(f"--env {shlex.quote(f'{k}={v}')}" for k, v in self.env.items())


@pytest.fixture
def gemini(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[GeminiLaunch]:
    _need(not_installed(GEMINI_PACKAGE, GEMINI_VERSION))
    for name in CREDENTIAL_VARS:
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text(
        json.dumps({"privacy": {"usageStatisticsEnabled": False}})
    )
    cwd = tmp_path / "agent-cwd"
    cwd.mkdir()
    # Without it, its first node process loads the bundle only to start a second one with a
    # larger heap (0.7 CPU-s of each start): the tests of that pair of processes remove it.
    env = {"HOME": str(home), "GEMINI_CLI_NO_RELAUNCH": "true"}
    yield GeminiLaunch(["node", str(GEMINI_JS), "--acp"], env, home, cwd)


def relaunching(gemini: GeminiLaunch) -> GeminiLaunch:
    """Gemini CLI as it starts by default: relaunched as a child node process."""
    del gemini.env["GEMINI_CLI_NO_RELAUNCH"]
    return gemini


def _running_with(home: Path) -> list[int]:
    """Processes whose environment has ``HOME=home`` (Gemini CLI relaunches itself as a child
    node process: both have it)."""
    wanted = f"HOME={home}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and wanted in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:  # gone, or not ours to read
            continue
    return found


def _all_gone(home: Path) -> list[int]:
    deadline = time.monotonic() + GUARD
    while (left := _running_with(home)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


async def test_initialize_speaks_v1_and_session_new_needs_sign_in_on_loopback_only(
    gemini: GeminiLaunch, tmp_path: Path
) -> None:
    log = tmp_path / "connects.log"
    relaunching(gemini)
    with anyio.fail_after(GUARD):
        async with connect(traced(gemini.argv, log), cwd=gemini.cwd, env=gemini.env) as agent:
            assert agent.protocol_version == 1  # offered 2, it answered 1
            assert agent.info is not None
            assert (agent.info.name, agent.info.title, agent.info.version) == (
                "gemini-cli",
                "Gemini CLI",
                GEMINI_VERSION,
            )
            assert agent.v1_capabilities is not None and agent.v1_capabilities.load_session
            wires = [m.to_wire() for m in agent.auth_methods]
            assert [w["methodId"] for w in wires] == METHODS
            assert {w["type"] for w in wires} == {"agent"}  # v1 methods carry no type
            assert wires[1]["_meta"] == {"api-key": {"provider": "google"}}
            with pytest.raises(AuthenticationRequired) as refused:
                await agent.new_session(gemini.cwd)
            assert "Gemini API key is missing or not configured" in str(refused.value)
            assert [m.to_wire()["methodId"] for m in refused.value.methods] == METHODS
            assert agent.sessions == {}
            assert agent.problems == []
            assert len(_running_with(gemini.home)) >= 2  # (it relaunched itself)
    assert _all_gone(gemini.home) == []  # leaving connect() stopped both
    if log.exists():
        assert "connect(" in log.read_text()  # strace saw the process's sockets
        assert remote_connects(log) == []


async def test_an_api_key_in_authenticate_meta_opens_a_session_offline(
    gemini: GeminiLaunch, tmp_path: Path
) -> None:
    log = tmp_path / "connects.log"
    with anyio.fail_after(GUARD):
        async with connect(traced(gemini.argv, log), cwd=gemini.cwd, env=gemini.env) as agent:
            await agent.login("gemini-api-key", api_key=gemini.key)
            [sent] = [m for d, m in agent.connection.log if d == "send" and "id" in m][-1:]
            assert sent["method"] == "authenticate"
            assert sent["params"]["_meta"] == {"api-key": gemini.key}
            session = await agent.new_session(gemini.cwd)
            assert agent.sessions == {session.id: session}
            # Its v1 modes arrive as the mode option.
            [mode] = [o for o in session.config_options if o.config_id == "mode"]
            assert mode.current_value == "default"
            assert [o.value for o in mode.options] == ["default", "autoEdit", "yolo", "plan"]
            assert agent.problems == [] and session.problems == []
    if log.exists():
        assert remote_connects(log) == []
    # Gemini CLI keeps the key in memory only: its HOME holds the chosen method, not the key.
    stored = [p for p in gemini.home.rglob("*") if p.is_file()]
    assert any(p.name == "settings.json" for p in stored)
    assert [p for p in stored if gemini.key in p.read_text(errors="replace")] == []


# -- through the magics, in a real kernel -----------------------------------------------------


def _connected(k: Kernel, gemini: GeminiLaunch) -> str:
    k.run(f"import os; os.environ['ACP_NOTEBOOK_NODE_MODULES'] = {str(NODE_MODULES)!r}")
    agents = k.run("%acp agents").text()
    assert f"gemini: Gemini CLI {GEMINI_VERSION}, ACP v1; installed: " in agents, agents
    out = k.run(f"%acp connect gemini {gemini.env_options()}", new_cell_id()).text()
    assert f"starting Gemini CLI {GEMINI_VERSION}: " in out and str(GEMINI_JS) in out, out
    assert "npx" not in out
    return out


def test_kernel_connect_gemini_a_cell_is_refused_and_auth_lists_the_methods(
    gemini: GeminiLaunch, tmp_path: Path
) -> None:
    relaunching(gemini)  # (both of its processes are stopped with the kernel)
    with acp_kernel(tmp_path) as k:
        out = _connected(k, gemini)
        assert f"acp: connected 'gemini': Gemini CLI {GEMINI_VERSION}" in out, out
        assert "acp: protocol v1;" in out, out
        assert "sign-in methods: oauth-personal, gemini-api-key, vertex-ai, gateway" in out, out

        refused = k.run("%%acp\nsay hello\n", new_cell_id(), ok=False)
        [line] = [x for x in refused.text().splitlines() if "UsageError" in x]
        assert line.startswith("UsageError: %%acp: agent 'gemini' needs sign-in"), line
        assert "Gemini API key is missing or not configured" in line, line
        assert "`%acp auth` lists the sign-in methods" in line, line
        assert "`%acp auth oauth-personal`" in line and "`%acp auth gateway`" in line, line

        listing = k.run("%acp auth", new_cell_id()).text()
        assert "acp: sign-in methods of 'gemini'" in listing, listing
        assert "oauth-personal: Log in with Google (agent) - Log in with your Google" in listing
        assert "gemini-api-key: Gemini API key (agent) - Use an API key with Gemini" in listing
        assert "vertex-ai: Vertex AI (agent)" in listing
        assert "gateway: AI API Gateway (agent)" in listing
        status = k.run("%acp status", new_cell_id()).text()
        assert "env HOME=***" in status, status
        assert _running_with(gemini.home)
    assert _all_gone(gemini.home) == []  # the kernel's shutdown stopped it


def test_kernel_api_key_method_asks_for_the_key_in_a_password_field_and_it_leaks_nowhere(
    gemini: GeminiLaunch, kern: Kernel, monkeypatch: pytest.MonkeyPatch
) -> None:
    # gemini-api-key answers `authenticate` without a key with success, and session/new still
    # fails: the key must come with it (_meta["api-key"], as the method's _meta says).
    k = kern
    seen: list[dict[str, Any]] = []
    take = k._take

    def record(msg: dict[str, Any]) -> None:
        seen.append(msg)
        take(msg)

    monkeypatch.setattr(k, "_take", record)  # (the kernel is the module's: undone after)
    _connected(k, gemini)
    shown = k.run("%acp auth gemini-api-key", new_cell_id()).text()
    assert "signed in" not in shown and "cells work now" not in shown, shown
    assert (
        "acp: 'gemini' accepted 'gemini-api-key' without a key but still refuses a session"
        " (Gemini API key is missing or not configured. (code -32000)); enter the API key"
        " for 'gemini-api-key'"
    ) in shown, shown
    field, done = enter_key(
        k, "API key", gemini.key, "Sign in", ("signed in", "not signed in"), shown
    )
    assert done == "signed in to 'gemini' with 'gemini-api-key'; session 'default' is open"
    assert k.models[field].get("value", "") == ""
    log = k.run("%acp log -n 200", new_cell_id()).text()
    assert log.count('"method": "authenticate"') == 2, log  # bare, then with the key
    assert '"_meta": {"api-key": "***"}' in log, log
    assert '"method": "session/new"' in log and '"sessionId"' in log, log
    sessions = k.run("%acp status", new_cell_id()).text()
    assert "session 'default' on 'gemini': " in sessions, sessions
    places = {"widget state": json.dumps(k.models)}
    for i, msg in enumerate(seen):
        places[f"iopub {i} {msg['msg_type']}"] = json.dumps(msg, default=str)
    assert len(places) > 20
    assert [name for name, text in places.items() if gemini.key in text] == []


def test_kernel_api_key_method_with_the_key_in_the_agents_environment_signs_in_at_once(
    gemini: GeminiLaunch, kern: Kernel
) -> None:
    # GEMINI_API_KEY in its environment: the bare sign-in is enough, the session opens and no
    # password field is shown.
    gemini.env["GEMINI_API_KEY"] = gemini.key
    k = kern
    _connected(k, gemini)
    said = k.run("%acp auth gemini-api-key", new_cell_id()).text()
    assert said.strip() == (
        "acp: signed in to 'gemini' with 'gemini-api-key'; `%%acp` cells work now"
    ), said
    assert [s for s in k.models.values() if s.get("_model_name") == "PasswordModel"] == []
    status = k.run("%acp status", new_cell_id()).text()
    assert "env GEMINI_API_KEY=***" in status, status
    assert "session 'default' on 'gemini': " in status, status  # opened by %acp auth
    assert gemini.key not in status + said
    log = k.run("%acp log -n 200", new_cell_id()).text()
    assert log.count('"method": "authenticate"') == 1 and '"sessionId"' in log, log
    assert gemini.key not in log
