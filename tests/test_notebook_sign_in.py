"""The sign-in commands (acp_notebook/_notebook/_sign_in.py), without a kernel: a ``Notebook``
and the scriptable auth agent (tests/adversarial/agents/auth_agent.py) as a real subprocess.
Each returns a typed step or outcome; nothing is printed or worded here."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from acp_notebook._notebook import _sign_in
from acp_notebook._notebook._errors import NoSuchMethod, SignInRequired
from acp_notebook._notebook._failures import ConnectFailed
from acp_notebook._notebook._owner import Notebook

pytestmark = pytest.mark.process

AGENT = Path(__file__).parent / "adversarial" / "agents" / "auth_agent.py"
SECRET = "sk-fake-31c9e07a5b2d"


def received(work: Path) -> list[dict[str, Any]]:
    lines = (work / "received.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.fixture
def signin(tmp_path: Path) -> Iterator[tuple[Notebook, Path]]:
    work = tmp_path / "work"
    work.mkdir()
    nb = Notebook()
    nb.set_panel_auto(make=False)
    nb.connect("signin", [sys.executable, str(AGENT), str(work), "--terminal"], str(work))
    try:
        yield nb, work
    finally:
        nb.shutdown()


def refused_session(nb: Notebook, name: str) -> None:
    with pytest.raises(SignInRequired) as caught:
        nb.session(name, agent="signin")
    assert caught.value.session == name


def test_an_agent_method_signs_in_and_the_refused_session_is_remembered(
    signin: tuple[Notebook, Path],
) -> None:
    nb, work = signin
    handle, methods = _sign_in.methods(nb, "signin")
    assert handle.name == "signin" and len(methods) == 3
    refused_session(nb, "work")
    step = _sign_in.begin(nb, "signin", "login")
    assert step == _sign_in.SignedIn("signin", "login")
    assert nb.take_sign_in_session("signin") == "work"  # still to open: a cell opens it
    assert nb.take_sign_in_session("signin") == "default"  # taken once
    logins = [m["params"] for m in received(work) if m.get("method") == "auth/login"]
    assert logins == [{"methodId": "login"}]


def test_an_unknown_method_is_a_typed_error_naming_the_known_ones(
    signin: tuple[Notebook, Path],
) -> None:
    nb, _work = signin
    with pytest.raises(NoSuchMethod) as caught:
        _sign_in.begin(nb, "signin", "nope")
    assert (caught.value.agent, caught.value.method) == ("signin", "nope")
    assert caught.value.known == ("login", "fake-key", "terminal-login")


def test_an_env_var_method_asks_then_restarts_and_opens_the_session(
    signin: tuple[Notebook, Path],
) -> None:
    nb, _work = signin
    refused_session(nb, "work")
    step = _sign_in.begin(nb, "signin", "fake-key")
    assert step == _sign_in.AskEnv("signin", ("FAKE_KEY",))
    old = nb.agent("signin")
    outcome = _sign_in.restart_with(nb, "signin", {"FAKE_KEY": SECRET})
    assert isinstance(outcome, _sign_in.SignedIn), outcome
    assert (outcome.session, outcome.env_names) == ("work", ("FAKE_KEY",))
    new = nb.agent("signin")
    assert new is not old and outcome.restarted == new.label
    assert nb.session("work").agent == "signin"  # open, on the restarted agent
    assert SECRET not in repr(outcome)


def test_a_restart_that_fails_is_an_outcome_not_an_exception(
    signin: tuple[Notebook, Path], tmp_path: Path
) -> None:
    nb, work = signin
    (work / "received.jsonl").unlink()
    work.rename(tmp_path / "gone")  # the agent's own folder (its cwd) is gone
    outcome = _sign_in.restart_with(nb, "signin", {"FAKE_KEY": SECRET})
    assert isinstance(outcome, _sign_in.NotSignedIn)
    assert isinstance(outcome.error, ConnectFailed) and outcome.agent == "signin"


def test_a_terminal_method_is_a_step_with_the_login_command(
    signin: tuple[Notebook, Path],
) -> None:
    nb, work = signin
    step = _sign_in.begin(nb, "signin", "terminal-login")
    assert isinstance(step, _sign_in.AskTerminal)
    assert step.argv[-2:] == ("--terminal", "--login") and step.cwd == str(work)
    assert step.env.get("AUTH_AGENT_MODE") == "login"
    (work / "credentials").write_text("stored")  # what the login command stores on success
    outcome = _sign_in.after_terminal_login(nb, "signin")
    assert isinstance(outcome, _sign_in.SignedIn) and outcome.restarted is not None
    assert outcome.session == "default"
