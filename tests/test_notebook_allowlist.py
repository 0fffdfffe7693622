"""acp_notebook._notebook._allowlist: the agents %acp connect may start (issue 26)."""

from __future__ import annotations

from typing import Any

import pytest

from acp_notebook._notebook._allowlist import ALLOWLIST_ENV, Allowlist, parse_entries
from acp_notebook._notebook._errors import AgentNotAllowed
from acp_notebook._notebook._owner import Notebook

OPENCODE = ["/opt/agents/bin/opencode", "acp"]
NPX = ["npx", "-y", "@acme/agent@1.2.3", "--acp"]


def refused(allowlist: Allowlist, shortcut: str | None, argv: list[str], env: str | None) -> bool:
    environ = {} if env is None else {ALLOWLIST_ENV: env}
    try:
        allowlist.check(shortcut, argv, environ)
    except AgentNotAllowed:
        return True
    return False


def test_with_no_list_set_any_agent_starts() -> None:
    for shortcut, argv in (("codex", ["npx", "codex-acp"]), (None, OPENCODE), ("embedded", [])):
        assert not refused(Allowlist(), shortcut, argv, None)
        assert not refused(Allowlist(), shortcut, argv, "  ")  # set but naming nothing


@pytest.mark.parametrize(
    ("shortcut", "argv", "ok"),
    [
        ("claude", ["node", "claude-agent-acp.js"], True),  # a shortcut, by its name
        ("codex", ["node", "codex.js"], False),
        ("embedded", ["python3", "-m", "acp_notebook.agent"], True),
        (None, OPENCODE, True),  # a program, by its absolute path
        (None, ["/tmp/opencode", "acp"], False),
        (None, ["opencode", "acp"], False),  # a bare name is a shortcut, not a program
        (None, NPX, True),  # a glob over the whole command line
        (None, ["npx", "-y", "@other/agent"], False),
        (None, ["claude"], False),  # a program called claude is not the shortcut
    ],
)
def test_an_operators_list_names_shortcuts_programs_and_globs(
    shortcut: str | None, argv: list[str], ok: bool
) -> None:
    env = "claude, embedded /opt/agents/bin/opencode,npx -y @acme/*"
    assert parse_entries(env) == (
        "claude", "embedded", "/opt/agents/bin/opencode", "npx", "-y", "@acme/*",
    )  # fmt: skip
    # a glob with spaces cannot come from a space-separated setting: the config list can hold it
    configured = Allowlist(("claude", "embedded", OPENCODE[0], "npx -y @acme/*"))
    assert refused(configured, shortcut, argv, None) is (not ok)


def test_a_users_list_narrows_the_operators_and_never_widens_it() -> None:
    operator = "claude embedded"
    assert refused(Allowlist(("embedded",)), "claude", [], operator)  # narrowed
    assert not refused(Allowlist(("embedded",)), "embedded", [], operator)
    assert refused(Allowlist(("codex",)), "codex", [], operator)  # not widened
    assert refused(Allowlist(()), "embedded", [], None)  # an empty list allows nothing


def test_the_refusal_names_the_agent_and_the_list() -> None:
    with pytest.raises(AgentNotAllowed) as caught:
        Allowlist().check(None, OPENCODE, {ALLOWLIST_ENV: "claude,embedded"})
    assert caught.value.agent == OPENCODE[0]
    assert caught.value.allowed == ("claude", "embedded")


def test_the_notebook_refuses_before_anything_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[Any] = []

    def connector(argv: list[str], cwd: str, env: dict[str, str]) -> Any:
        started.append(argv)
        raise AssertionError("nothing may start")

    monkeypatch.setenv(ALLOWLIST_ENV, "claude")
    nb = Notebook(connector=connector)
    try:
        embedded = ["python3", "-m", "acp_notebook.agent"]
        with pytest.raises(AgentNotAllowed):
            nb.connect("embedded", embedded, "/", shortcut="embedded")
        nb.set_allowed_agents(["embedded"])
        with pytest.raises(AgentNotAllowed):  # the operator's list still applies
            nb.connect("embedded", embedded, "/", shortcut="embedded")
        assert started == []
        assert nb.agents == {}
    finally:
        nb.shutdown()
