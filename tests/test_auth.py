"""`_auth`: what `%acp auth` says about each kind of sign-in method, and the password form."""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from acp_notebook._connection._errors import RpcError
from acp_notebook._notebook import _auth
from acp_notebook._protocol import AuthMethod

METHODS = TypeAdapter(list[AuthMethod])


def parse(*wire: dict[str, Any]) -> list[Any]:
    return METHODS.validate_python(list(wire))


def test_each_type_described_in_one_line() -> None:
    agent, env, old_env, term = parse(
        {"type": "agent", "methodId": "login", "name": "Log in", "description": "browser"},
        {"type": "env_var", "methodId": "key", "name": "API key", "vars": [{"name": "A_KEY"}]},
        {"type": "env_var", "methodId": "old", "name": "Old", "varName": "B_KEY"},
        {"type": "terminal", "methodId": "tui", "name": "TUI", "args": ["--login"]},
    )
    assert _auth.describe(agent) == "login: Log in (agent) - browser"
    assert _auth.describe(env) == "key: API key (env_var) [variables: A_KEY]"
    assert _auth.env_var_names(old_env) == ["B_KEY"]
    assert _auth.env_var_names(agent) == []
    assert _auth.is_agent_method(agent) and not _auth.is_agent_method(env)
    assert isinstance(term, _auth.AuthMethodTerminal)
    assert _auth.terminal_command(term, ["npx", "my agent"]) == "npx 'my agent' --login"


def test_a_variable_name_that_is_not_an_identifier_is_dropped() -> None:
    [env] = parse({"type": "env_var", "methodId": "k", "name": "K", "vars": [{"name": "A=B; x"}]})
    assert _auth.env_var_names(env) == []


def test_hint_names_the_next_command() -> None:
    [one] = parse({"type": "agent", "methodId": "login", "name": "Log in"})
    assert _auth.hint([one], " --name codex").startswith(
        "sign in with `%acp auth login --name codex`"
    )
    two = parse(
        {"type": "agent", "methodId": "a", "name": "A"},
        {"type": "agent", "methodId": "b", "name": "B"},
    )
    assert _auth.hint(two, "") == (
        "`%acp auth` lists the sign-in methods; `%acp auth METHOD` signs in"
        " (`%acp auth a` or `%acp auth b`)"
    )
    many = parse(*({"type": "agent", "methodId": f"m{i}", "name": "M"} for i in range(7)))
    assert _auth.hint(many, " --name x").endswith(
        "`%acp auth METHOD --name x` signs in (`%acp auth m0 --name x`, `%acp auth m1 --name x`,"
        " `%acp auth m2 --name x`, `%acp auth m3 --name x` or 3 more)"
    )


def test_login_env_vars_reads_data_env_vars_of_an_rpc_error_only() -> None:
    # codex-acp 2.6.0's api-key login without a key in its environment answers this.
    error = RpcError(-32603, "Internal error: CODEX_API_KEY or OPENAI_API_KEY is not set")
    error.data = {"envVars": ["CODEX_API_KEY", "OPENAI_API_KEY", "A=B; x", 3]}
    assert _auth.login_env_vars(error) == ["CODEX_API_KEY", "OPENAI_API_KEY"]
    assert _auth.login_env_vars(RpcError(-32603, "no data")) == []
    assert _auth.login_env_vars(RpcError(-32603, "odd", {"envVars": "KEY"})) == []
    assert _auth.login_env_vars(RpcError(-32603, "odd", ["KEY"])) == []
    assert _auth.login_env_vars(ValueError("KEY")) == []


def test_form_empties_the_field_before_submitting_and_needs_every_value() -> None:
    got: list[dict[str, str]] = []
    seen_in_field: list[str] = []

    def submit(values: dict[str, str]) -> str:
        got.append(dict(values))
        seen_in_field.append(field.value)
        return "restarted"

    form = _auth.password_form(["A_KEY"], submit)
    field, button, status = form.children
    button.click()
    assert got == [] and status.value == "enter a value for every variable first"
    field.value = "sk-secret-1234"
    button.click()
    assert got == [{"A_KEY": "sk-secret-1234"}]
    assert seen_in_field == [""] and field.value == ""
    assert status.value == "restarted"
    assert not field.trait_metadata("value", "echo_update")


def test_takes_api_key_is_an_agent_method_whose_meta_names_api_key() -> None:
    # Gemini CLI 0.61's methods, as the v1 client reads them (type agent).
    key, gateway, login, env = parse(
        {"type": "agent", "methodId": "gemini-api-key", "name": "Gemini API key",
         "_meta": {"api-key": {"provider": "google"}}},
        {"type": "agent", "methodId": "gateway", "name": "AI API Gateway",
         "_meta": {"gateway": {"protocol": "google"}}},
        {"type": "agent", "methodId": "oauth-personal", "name": "Log in with Google"},
        {"type": "env_var", "methodId": "k", "name": "K", "vars": [{"name": "A_KEY"}],
         "_meta": {"api-key": {}}},
    )  # fmt: skip
    assert _auth.takes_api_key(key)
    assert not _auth.takes_api_key(gateway) and not _auth.takes_api_key(login)
    assert not _auth.takes_api_key(env)  # an env_var method keeps its password-field path


def test_form_button_says_what_it_does() -> None:
    form = _auth.password_form(["API key"], lambda values: "signed in", action="Sign in")
    field, button, _status = form.children
    assert button.description == "Sign in" and field.description == "API key"
    assert _auth.password_form(["A"], lambda values: "").children[1].description == (
        "Restart with it"
    )
