"""What a person reads (acp_notebook/_magics/_words.py): each notebook error worded from its
fields, a failed turn in one line, and a sign-in's outcome with what was typed redacted."""

from __future__ import annotations

from typing import Any

import pytest

from acp_notebook._connection._errors import AcpError, AgentExited
from acp_notebook._magics import _words
from acp_notebook._notebook import _sign_in
from acp_notebook._notebook._errors import (
    AgentGone,
    NoKernelTools,
    NoSuchAgent,
    NoSuchMethod,
    NoSuchSession,
    NotebookError,
    SessionBusy,
    SessionOfAnotherAgent,
    UnsupportedMethod,
)
from acp_notebook._notebook._failures import ConnectFailed


class _Named:
    """What ``words`` reads of a notebook: the default agent's name."""

    def default_name(self) -> str:
        return "main"


NB: Any = _Named()

WORDED: list[tuple[NotebookError, str]] = [
    (NoSuchAgent("x", ["a", "b"], None), "no agent named 'x'; connected: 'a', 'b'"),
    (NoSuchAgent("x", [], "x"), "no agent named 'x' (it was closed); connected: none"),
    (NoSuchAgent(None, [], None), "no agent connected: run `%acp connect` first (see %acp?)"),
    (AgentGone("a", "exit 3", "boom"), "agent 'a' has exited (exit 3); `%acp status` shows"),
    (NoSuchSession("s", ["t"]), "no session named 's'"),
    (SessionOfAnotherAgent("s", "a", "b"), "session 's' belongs to agent 'a', not 'b'"),
    (NoKernelTools("a"), "agent 'a' takes no MCP servers"),
    (SessionBusy("s"), "session 's' is busy: a turn started earlier (with --bg?)"),
    (NoSuchMethod("a", "nope", ["login"]), "agent 'a' has no method 'nope'; its methods: login"),
    (NoSuchMethod("a", "nope", []), "has no method 'nope'; its methods: none"),
    (UnsupportedMethod("a", "m", "x"), "method 'm' has type 'x', which this client cannot run"),
]


@pytest.mark.parametrize(("error", "expected"), WORDED, ids=lambda v: type(v).__name__)
def test_every_notebook_error_is_worded_from_its_fields(
    error: NotebookError, expected: str
) -> None:
    line = _words.words(error, NB)
    assert expected in line and "\n" not in line


def test_a_dead_agent_ends_a_turn_in_one_line_with_its_last_stderr_line() -> None:
    error = AgentExited(3, None, "loading\nfatal: no model\n")
    line = _words.turn_failure(error)
    assert line.startswith("%%acp: the turn failed: ") and "fatal: no model" in line
    assert "\n" not in line and "loading" not in line


def test_an_error_is_one_line_and_says_when_it_was_cut() -> None:
    assert _words._one_line(AcpError("first line:\nsecond")) == "first line (...)"
    assert (
        _words._one_line(AgentExited(None, "SIGKILL", ""))
        == "the agent was killed by signal SIGKILL"
    )


SECRET = "sk-typed-9b1f4e22"


def test_a_sign_in_outcome_is_one_line_without_what_was_typed() -> None:
    typed = {"FAKE_KEY": SECRET}
    restarted = _sign_in.SignedIn(
        "a", "login", "s", restarted="python agent.py", env_names=("FAKE_KEY",)
    )
    line = _words._signed_in_line(NB, restarted, typed)
    assert line == (
        "restarted 'a' (python agent.py) with FAKE_KEY, signed in with 'login'; session 's' is open"
    )
    keyed = _sign_in.SignedIn("a", "api-key", "s")
    assert _words._signed_in_line(NB, keyed, typed) == (
        "signed in to 'a' with 'api-key'; session 's' is open"
    )
    echoed = _sign_in.NotSignedIn("a", AcpError(f"bad key {SECRET}"))
    line = _words._signed_in_line(NB, echoed, typed)
    assert line.startswith("not signed in: bad key ") and SECRET not in line
    failed = _sign_in.NotSignedIn("a", ConnectFailed(AgentExited(1, None, SECRET), []))
    line = _words._signed_in_line(NB, failed, typed)
    assert line.startswith("not signed in: %acp connect: could not connect 'a'")
    assert SECRET not in line


def test_a_resumed_sessions_history_is_listed_in_words() -> None:
    # Issue 25, finding 19: `%acp resume` printed "1 tool calls, 1 terminals replayed", no history.
    from acp_notebook._protocol import parse_session_update
    from acp_notebook._state import SessionState

    state = SessionState()
    for update in [
        {"sessionUpdate": "user_message", "messageId": "u1",
         "content": [{"type": "text", "text": "count the rows\nof data.csv"}]},
        {"sessionUpdate": "agent_message_chunk", "messageId": "a1",
         "content": {"type": "text", "text": "There are \u202e 12 rows."}},
        {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "title": "wc -l data.csv",
         "kind": "execute", "status": "completed"},
    ]:  # fmt: skip
        state.apply(parse_session_update(update))
    lines = _words.history_lines(state)
    assert lines == [
        "you: count the rows",
        "agent: There are ⟨U+202E RLO⟩ 12 rows.",
        "tool call: wc -l data.csv [command] - completed",
    ]
    shown: list[Any] = []
    original = _words.display
    _words.display = lambda obj, **kw: shown.append(obj)
    try:
        _words.show_history("acp: resumed s1 as session 'default': 1 tool call replayed", lines)
    finally:
        _words.display = original
    [bundle] = shown
    assert bundle["text/plain"].splitlines()[1] == "  you: count the rows"
    assert bundle["text/html"].startswith("<details><summary>acp: resumed s1")
    assert "<li>agent: There are ⟨U+202E RLO⟩ 12 rows.</li>" in bundle["text/html"]
