"""The notebook's read model (acp_notebook/_notebook/_facts.py) without a kernel: typed facts
about agents and config options, the log text and the one status text."""

from __future__ import annotations

from typing import Any

import pytest

from acp_notebook._notebook._facts import (
    SessionFacts,
    agent_facts,
    choices,
    log_mark,
    log_text,
    state_label,
    status_text,
)
from acp_notebook._notebook._owner import Notebook


def _fake_handle(alive: bool, **proc: Any) -> Any:
    """A real AgentHandle around a stand-in agent and process (its labels are the real ones)."""
    import concurrent.futures
    from types import SimpleNamespace

    from acp_notebook._notebook._bridge import AgentHandle

    process = SimpleNamespace(
        pid=4242,
        returncode=proc.get("returncode"),
        exit_signal=proc.get("exit_signal"),
        stderr_tail=lambda n=None: "Traceback: boom\n",
    )
    info = SimpleNamespace(name="fake-agent", title="Fake Agent", version="9.1")
    log = [("send", {"method": "x", "params": {"data": "QUJD" * 40}}), ("recv", "raw line")]
    agent = SimpleNamespace(
        info=info, process=process, connection=SimpleNamespace(log=log), sessions={}
    )
    done: concurrent.futures.Future[None] = concurrent.futures.Future()
    if not alive:
        done.set_result(None)
    argv = ["fake-agent", "--flag", "a b"]
    return AgentHandle("fake", argv, "/w", agent, None, None, done)  # type: ignore[arg-type]


def test_agent_facts_alive_and_killed() -> None:
    alive = agent_facts(_fake_handle(True))
    assert alive.alive and alive.pid == 4242 and alive.stderr == "" and alive.exit == ""
    assert alive.argv == "fake-agent --flag 'a b'" and alive.title == "Fake Agent"
    killed = agent_facts(_fake_handle(False, returncode=-9, exit_signal="SIGKILL"))
    assert killed.exit == "signal SIGKILL" and killed.stderr == "Traceback: boom"
    assert agent_facts(_fake_handle(False, returncode=3)).exit == "exit 3"  # _exit.exit_label


def test_log_text_shortens_base64_and_long_lines() -> None:
    handle = _fake_handle(True)
    nb = Notebook()
    text = log_text(nb, handle)
    assert text.splitlines()[0].startswith('-> {"method":"x"')
    assert "QUJD" * 40 not in text and "(+136 chars)" in text
    assert text.splitlines()[1] == "<- raw line"
    cut = log_text(nb, handle, width=20)
    assert cut.splitlines()[0].endswith("chars)") and len(cut.splitlines()[0]) < 50


def test_config_choices_flat_and_grouped() -> None:
    flat = {"options": [{"value": "a", "name": "A"}, {"value": "b", "name": "B"}]}
    assert choices(flat) == [("A", "a"), ("B", "b")]
    grouped = {
        "options": [
            {"groupId": "g", "name": "Fast", "options": [{"value": "m1", "name": "Mini"}]},
            {"groupId": "h", "name": "Smart", "options": [{"value": "m2", "name": "Max"}]},
        ]
    }
    assert choices(grouped) == [("Fast / Mini", "m1"), ("Smart / Max", "m2")]


def test_the_status_text_names_each_agent_and_every_section() -> None:
    nb = Notebook()
    try:
        text = status_text(nb, [_fake_handle(False, returncode=3)], [])
    finally:
        nb.shutdown()
    lines = text.splitlines()
    assert lines[0] == "Agents:"
    assert lines[1] == "  fake: Fake Agent 9.1, exited (exit 3), argv fake-agent --flag 'a b'"
    assert lines[2] == "    stderr tail: Traceback: boom"
    for section in ("Sessions:", "Approval inbox: 0 pending", "Background work: 0"):
        assert section in lines
    assert lines[-2:] == ["Terminals: 0", "Grants: 0"]


def test_the_status_text_names_env_variables_never_their_values_and_marks_closed() -> None:
    secret = "sk-secret-4e1f9a"
    handle = _fake_handle(False, returncode=0)
    handle.env = {"API_KEY": secret}
    handle.agent.process.stderr_tail = lambda n=None: f"key {secret} rejected\n"
    handle.closed = True
    nb = Notebook()
    try:
        text = status_text(nb, [handle], [])
    finally:
        nb.shutdown()
    assert secret not in text
    assert "closed (exit 0), argv fake-agent --flag 'a b', env API_KEY=***" in text
    assert "stderr tail: key *** rejected" in text


@pytest.mark.parametrize(
    "state, stop, label",
    [
        ("requires_action", None, "waiting for you"),
        ("running", None, "working"),
        ("idle", "end_turn", "idle (finished)"),
        ("idle", "cancelled", "idle (cancelled)"),
        ("some_future_state", None, "some_future_state"),
    ],
)
def test_a_sessions_state_is_said_in_plain_words(state: str, stop: str | None, label: str) -> None:
    # Issue 25, finding 22: the panel said "requires_action".
    facts = SessionFacts(
        label="default", agent="a", id="s1", cwd="/", title="", state=state, stop_reason=stop,
        usage="", commands=(), config=(), pending=0, closed=False,
    )  # fmt: skip
    assert state_label(facts) == label


def test_a_grant_says_who_clicked_where_the_click_named_them() -> None:
    from acp_notebook._notebook._facts import _by

    assert _by("click", "Bob") == "click from Bob"
    assert _by("panel", "Bob") == "panel from Bob"
    assert _by("click", "") == "click"
    assert _by("policy", "--allow 'rm *'") == "policy"  # a rule's detail is no person
    assert "\u202e" not in _by("click", "\u202eBob")


def test_a_full_logs_mark_moves_with_every_entry() -> None:
    # the log keeps its last 100 entries: full, only its last entry tells that it moved. Its
    # id would not do: a freed entry's memory comes back for a later one (about 100 ids for
    # 20,000 entries), and a panel would keep showing lines a hundred messages old
    from collections import deque
    from types import SimpleNamespace

    log: deque[tuple[str, dict[str, int]]] = deque(maxlen=100)
    handle: Any = SimpleNamespace(agent=SimpleNamespace(connection=SimpleNamespace(log=log)))
    other: Any = SimpleNamespace(agent=handle.agent)  # another handle on the same log
    assert log_mark(handle).same(log_mark(handle)) and log_mark(handle).count == 0
    for i in range(100):
        log.append(("recv", {"i": i}))
    first = previous = log_mark(handle)
    assert first.same(log_mark(handle)) and not first.same(log_mark(other))
    for i in range(300):
        log.append(("recv", {"i": i}))  # the same length: only the last entry differs
        now = log_mark(handle)
        assert now.count == 100
        assert not now.same(previous) and not now.same(first)
        previous = now
