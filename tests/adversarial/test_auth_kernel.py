"""Sign-in in a real kernel (`%acp auth`): the methods listed, an ``agent`` method through
``auth/login``, and an ``env_var`` method through a password field whose value reaches only the
agent's environment: never iopub, `%acp log`, `%acp status` or widget state."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from kernel_driver import Kernel, acp_kernel, new_cell_id

AGENT = Path(__file__).parent / "agents" / "auth_agent.py"
SECRET = "sk-fake-7f3a9c2e41d8b605"


def received(work: Path) -> list[dict[str, Any]]:
    path = work / "received.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def set_state(k: Kernel, comm_id: str, **state: Any) -> None:
    """What a browser sends when a person edits a widget."""
    content = {"comm_id": comm_id, "data": {"method": "update", "state": state, "buffer_paths": []}}
    k.kc.shell_channel.send(k.kc.session.msg("comm_msg", content))


def test_list_then_agent_login_then_a_cell_works(tmp_path: Path) -> None:
    work = tmp_path / "work"
    with acp_kernel(tmp_path) as k:
        k.run(f"%acp connect --name signin -- {sys.executable} {AGENT} {work}")
        listing = k.run("%acp auth").text()
        assert "login: Log in with a browser (agent)" in listing
        assert "fake-key: Fake API key (env_var)" in listing and "FAKE_KEY" in listing
        assert "\u202e" not in listing  # the description's bidi override is shown visibly
        message = k.run("%%acp\nhello", new_cell_id()).text()  # a UsageError: one line
        assert message.startswith("UsageError: %%acp: agent 'signin' needs sign-in"), message
        assert "needs sign-in" in message and "`%acp auth`" in message, message
        assert "`%acp auth METHOD` signs in" in message
        wrong = k.run("%acp auth nope").text()
        assert "has no method 'nope'; its methods: login, fake-key" in wrong
        said = k.run("%acp auth login").text()
        assert said.strip() == ("acp: signed in to 'signin' with 'login'; `%%acp` cells work now")
        assert "UsageError" not in k.run("%%acp\nhello", new_cell_id()).text()
        k.wait_for(
            lambda: "signed in by auth/login" in json.dumps(list(k.models.values())),
            "the agent's answer",
        )
    logins = [m for m in received(work) if m.get("method") == "auth/login"]
    assert [m["params"] for m in logins] == [{"methodId": "login"}]


def test_env_var_sign_in_restarts_the_agent_and_the_key_appears_nowhere(tmp_path: Path) -> None:
    work = tmp_path / "work"
    seen: list[dict[str, Any]] = []  # every iopub message, whatever its parent
    with acp_kernel(tmp_path) as k:
        take = k._take
        k._take = lambda msg: (seen.append(msg), take(msg))[1]  # type: ignore[method-assign]
        k.run(f"%acp connect --name signin -- {sys.executable} {AGENT} {work}")
        first_pid = k.run("%acp status").text()
        assert "needs sign-in" in k.run("%%acp\nhello", new_cell_id()).text()
        shown = k.run("%acp auth fake-key")
        assert "enter FAKE_KEY" in shown.text()
        fields = [c for c, s in k.models.items() if s.get("_model_name") == "PasswordModel"]
        assert len(fields) == 1 and k.models[fields[0]].get("description") == "FAKE_KEY"
        set_state(k, fields[0], value=SECRET)
        [button] = k.wait_for(lambda: k.buttons("Restart with it"), "the Restart button")
        k.click(button)
        labels = lambda: [  # noqa: E731
            s.get("value", "") for s in k.models.values() if s.get("_model_name") == "LabelModel"
        ]
        done = k.wait_for(
            lambda: [v for v in labels() if v.startswith(("restarted", "not signed in"))],
            "the restart's result",
        )
        assert done[0].startswith("restarted 'signin'"), done
        assert "session 'default' is open" in done[0]
        k.run("import time")  # the click's messages are all in before the next checks
        # The kernel-side widget no longer holds the value.
        value = k.run(
            "from ipywidgets.widgets.widget import _instances\n"
            "print([w.value for w in _instances.values()"
            " if type(w).__name__ == 'SecretField'])"
        ).text()
        assert value.strip() == "['']"
        assert "UsageError" not in k.run("%%acp\nhello", new_cell_id()).text()
        k.wait_for(
            lambda: "signed in by env FAKE_KEY" in json.dumps(list(k.models.values())),
            "the agent's answer",
        )
        status = k.run("%acp status").text()
        assert "env FAKE_KEY=***" in status
        assert status != first_pid
        log = k.run("%acp log --name signin -n 200").text()
        assert log.strip()
        everything = [log, status]
        everything += [json.dumps(m, default=str) for m in seen]
        everything += [json.dumps(k.models)]
        for text in everything:
            assert SECRET not in text
    # session/new: refused, then retried by the restart (the next cell used that session).
    news = [m for m in received(work) if m.get("method") == "session/new"]
    assert len(news) == 2
    assert SECRET not in (work / "received.jsonl").read_text()


def test_interrupt_stops_a_sign_in_the_agent_never_answers(tmp_path: Path) -> None:
    work = tmp_path / "work"
    with acp_kernel(tmp_path) as k:
        k.run(f"%acp connect --name signin -- {sys.executable} {AGENT} {work} --hang")
        cell = k.submit("%acp auth hang", new_cell_id())
        k.wait_for(
            lambda: any(m.get("method") == "auth/login" for m in received(work)),
            "the agent to get the sign-in request",
        )
        k.km.interrupt_kernel()
        k.wait_for(lambda: cell.done, "the cell to end after the Interrupt")
        text = cell.text()
        assert (
            "KeyboardInterrupt: signing in to 'signin' with 'hang' was interrupted:"
            " the request was withdrawn" in text
        ), text
        assert "Traceback" not in text
        k.wait_for(
            lambda: any(m.get("method") == "$/cancel_request" for m in received(work)),
            "the $/cancel_request",
        )
        # the kernel and the agent go on: another method signs in
        said = k.run("%acp auth login").text()
        assert "signed in to 'signin' with 'login'" in said
