"""codex-acp 2.6.0, the real v2 agent, run offline against the fake Responses API
(tests/real_agents/fake_openai.py): initialize, the auth-required path, an ``api-key`` sign-in
with a fake key, ``session/new`` after it and a text turn; through the client API under strace
(no connection leaves loopback) and through the magics in a real kernel, where the fake key must
appear nowhere: the saved notebook, the protocol log, ``%acp status``, iopub and widget state."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import nbformat
import pytest

from acp_notebook import AuthenticationRequired, connect
from tests.kernel_driver import Execution, Kernel, acp_kernel, new_cell_id
from tests.real_agents.conftest import (
    CODEX_JS,
    CODEX_PACKAGE,
    CODEX_VERSION,
    NODE_MODULES,
    CodexLaunch,
    enter_key,
    remote_connects,
    traced,
)

pytestmark = pytest.mark.anyio
GUARD = 90.0  # seconds; a guard against hanging, never an assertion on speed
METHODS = ["api-key", "chat-gpt", "chat-gpt-device-code"]
ANSWER = "Hello from the fake Responses API"


async def test_sign_in_session_new_and_a_turn_through_the_client_api_on_loopback_only(
    codex: CodexLaunch, tmp_path: Path
) -> None:
    codex.api.add(ANSWER)
    log = tmp_path / "connects.log"
    env = {**codex.env, "OPENAI_API_KEY": codex.key}
    with anyio.fail_after(GUARD):
        async with connect(traced(codex.argv, log), cwd=codex.cwd, env=env) as agent:
            assert agent.info is not None
            assert (agent.info.name, agent.info.version) == (CODEX_PACKAGE, CODEX_VERSION)
            assert agent.info.title == "Codex"
            assert [m.to_wire()["methodId"] for m in agent.auth_methods] == METHODS
            assert {m.to_wire()["type"] for m in agent.auth_methods} == {"agent"}
            with pytest.raises(AuthenticationRequired) as refused:
                await agent.new_session(codex.cwd)
            assert [m.to_wire()["methodId"] for m in refused.value.methods] == METHODS
            await agent.login("api-key")
            session = await agent.new_session(codex.cwd)
            assert "mode" in [o.config_id for o in session.config_options]
            turn = await session.prompt("say hello")
            assert await turn.wait() == "end_turn"
            assert turn.text == ANSWER
            # Everything codex sent parsed (its _meta, extra capabilities and the
            # _auth/status_update notification are ignored, not problems).
            assert session.problems == [] and agent.problems == []
    [asked] = codex.api.turns()
    assert asked.user_texts()[-1] == "say hello"
    assert asked.headers.get("authorization") == f"Bearer {codex.key}"
    assert codex.api.unknown == []
    if log.exists():
        assert "127.0.0.1" in log.read_text()  # strace saw the fake API's connection
        assert remote_connects(log) == []
    # Codex keeps its sign-in in CODEX_HOME (the fixture's temporary one).
    assert (codex.home / ".codex" / "auth.json").is_file()


# -- through the magics, in a real kernel -----------------------------------------------------


def _recording(k: Kernel) -> list[dict[str, Any]]:
    """Every iopub message the kernel sends from now on, whatever its parent."""
    seen: list[dict[str, Any]] = []
    take = k._take

    def record(msg: dict[str, Any]) -> None:
        seen.append(msg)
        take(msg)

    k._take = record  # type: ignore[method-assign]
    return seen


def _save_notebook(k: Kernel, cells: list[tuple[str, Execution]], path: Path) -> str:
    """The notebook a front end would save after running ``cells``: their sources, their
    outputs (from the iopub messages) and the widget state it keeps in the metadata."""
    nb = nbformat.v4.new_notebook()
    for source, execution in cells:
        cell = nbformat.v4.new_code_cell(source)
        cell.outputs = [
            nbformat.v4.output_from_msg(m)
            for m in execution.messages
            if m["msg_type"] in ("stream", "display_data", "execute_result", "error")
        ]
        nb.cells.append(cell)
    live = {c: s for c, s in k.models.items() if c not in k.closed}
    nb.metadata["widgets"] = {
        "application/vnd.jupyter.widget-state+json": {
            "state": {c: {"state": s} for c, s in live.items()},
            "version_major": 2,
            "version_minor": 0,
        }
    }
    nbformat.validate(nb)
    nbformat.write(nb, str(path))
    return path.read_text()


def _sign_in_and_a_turn(k: Kernel, codex: CodexLaunch, options: str) -> list[tuple[str, Execution]]:
    """`%acp connect codex OPTIONS`, a cell refused before sign-in, `%acp auth`, `%acp auth
    api-key`, a turn, `%acp status` and `%acp log`: the cells run, with their executions."""
    cells: list[tuple[str, Execution]] = []

    def run(source: str, *, ok: bool = True) -> str:
        execution = k.run(source, new_cell_id(), ok=ok)
        cells.append((source, execution))
        return execution.text()

    k.run(f"import os; os.environ['ACP_NOTEBOOK_NODE_MODULES'] = {str(NODE_MODULES)!r}")
    agents = run("%acp agents")
    assert f"codex-acp (or codex): Codex {CODEX_VERSION}, ACP v2; installed: " in agents
    assert str(CODEX_JS) in agents
    out = run(f"%acp connect codex {options}")
    assert f"starting Codex {CODEX_VERSION}: " in out and str(CODEX_JS) in out
    assert "npx" not in out
    assert f"acp: connected 'codex': Codex {CODEX_VERSION}" in out
    assert (
        "acp: protocol v2; capabilities: session (prompt (image, embeddedContext), mcp (stdio,"
        " http), delete, additionalDirectories, fork, title, systemPrompt), auth, providers;"
        " sign-in methods: api-key, chat-gpt, chat-gpt-device-code"
    ) in out, out

    refused = run("%%acp\nsay hello\n", ok=False)
    [line] = [x for x in refused.splitlines() if "UsageError" in x]
    assert line.startswith("UsageError: %%acp: agent 'codex' needs sign-in"), refused
    assert "(Authentication required (code -32000))" in line
    assert "`%acp auth` lists the sign-in methods" in line
    assert "`%acp auth api-key`" in line, line

    listing = run("%acp auth")
    assert "acp: sign-in methods of 'codex'" in listing
    assert "api-key: API Key (agent) - Use an API key to authenticate" in listing
    assert "chat-gpt: ChatGPT (agent) - Use ChatGPT to authenticate" in listing
    assert "chat-gpt-device-code: ChatGPT (device code) (agent)" in listing

    said = run("%acp auth api-key")
    assert said.strip() == "acp: signed in to 'codex' with 'api-key'; `%%acp` cells work now"
    assert (codex.home / ".codex" / "auth.json").is_file()

    codex.api.add(ANSWER)
    answered = run("%%acp\nsay hello\n")
    assert ANSWER in answered, answered
    [asked] = codex.api.turns()
    assert asked.user_texts()[-1].strip() == "say hello"
    assert asked.headers.get("authorization") == f"Bearer {codex.key}"

    log = run("%acp log -n 200")
    assert "auth/login" in log and "Authentication required" in log and "session/prompt" in log
    run("%acp status")
    return cells


def _places(
    k: Kernel, cells: list[tuple[str, Execution]], seen: list[dict[str, Any]], path: Path
) -> dict[str, str]:
    """Where a secret could end up, by name: the saved notebook, each iopub message (by type)
    and the widget models the kernel opened."""
    places = {"notebook file": _save_notebook(k, cells, path), "widget state": json.dumps(k.models)}
    for i, msg in enumerate(seen):
        places[f"iopub {i} {msg['msg_type']}"] = json.dumps(msg, default=str)
    return places


def test_kernel_sign_in_with_the_key_in_the_kernels_environment_it_appears_nowhere(
    codex: CodexLaunch, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The key is exported before Jupyter starts: no cell holds it, codex-acp inherits it.
    monkeypatch.setenv("OPENAI_API_KEY", codex.key)
    with acp_kernel(tmp_path) as k:
        seen = _recording(k)
        cells = _sign_in_and_a_turn(k, codex, codex.env_options())
        places = _places(k, cells, seen, tmp_path / "codex.ipynb")
    assert len(places) > 20
    assert [name for name, text in places.items() if codex.key in text] == []


def test_kernel_sign_in_with_the_key_in_env_options_it_stays_in_the_cell_source(
    codex: CodexLaunch, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("CODEX_API_KEY", raising=False)
    with acp_kernel(tmp_path) as k:
        seen = _recording(k)
        options = codex.env_options(OPENAI_API_KEY=codex.key)
        cells = _sign_in_and_a_turn(k, codex, options)
        status = cells[-1][1].text()
        assert "env OPENAI_API_KEY=***" in status
        places = _places(k, cells, seen, tmp_path / "codex.ipynb")
    # The value typed in `%acp connect --env` is in that cell's source, so the front end
    # saves it and the kernel echoes it (execute_input); no output, log line or widget has it.
    assert [name for name, text in places.items() if codex.key in text] == [
        "notebook file",
        *[n for n, t in places.items() if n.endswith("execute_input") and "--env" in t],
    ]
    saved = json.loads(places["notebook file"])
    holding = ["".join(c["source"]) for c in saved["cells"] if codex.key in json.dumps(c)]
    assert holding == [f"%acp connect codex {options}"]
    for cell in saved["cells"]:
        assert codex.key not in json.dumps(cell["outputs"])
    assert codex.key not in json.dumps(saved["metadata"])


def test_kernel_api_key_sign_in_without_a_key_asks_for_it_in_a_password_field(
    codex: CodexLaunch, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No key anywhere: codex-acp's auth/login answers -32603 with data.envVars, the variables
    # it reads. The notebook asks for one in a password field and restarts the agent with it.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("CODEX_API_KEY", raising=False)
    with acp_kernel(tmp_path) as k:
        seen = _recording(k)
        cells: list[tuple[str, Execution]] = []

        def run(source: str, *, ok: bool = True) -> str:
            execution = k.run(source, new_cell_id(), ok=ok)
            cells.append((source, execution))
            return execution.text()

        k.run(f"import os; os.environ['ACP_NOTEBOOK_NODE_MODULES'] = {str(NODE_MODULES)!r}")
        run(f"%acp connect codex {codex.env_options()}")
        assert "needs sign-in" in run("%%acp\nsay hello\n", ok=False)
        shown = run("%acp auth api-key")
        assert "CODEX_API_KEY or OPENAI_API_KEY is not set" in shown, shown
        assert "enter CODEX_API_KEY for 'codex'" in shown, shown
        assert not (codex.home / ".codex" / "auth.json").exists()
        _, done = enter_key(
            k, "CODEX_API_KEY", codex.key, "Restart with it", ("restarted", "not signed in")
        )
        assert done.startswith("restarted 'codex'"), done
        assert "signed in with 'api-key'" in done and "session 'default' is open" in done, done
        assert (codex.home / ".codex" / "auth.json").is_file()
        codex.api.add(ANSWER)
        assert ANSWER in run("%%acp\nsay hello\n")
        [asked] = codex.api.turns()
        assert asked.headers.get("authorization") == f"Bearer {codex.key}"
        status = run("%acp status")
        assert "env CODEX_API_KEY=***" in status
        run("%acp log -n 200")
        places = _places(k, cells, seen, tmp_path / "codex.ipynb")
    assert len(places) > 20
    assert [name for name, text in places.items() if codex.key in text] == []
