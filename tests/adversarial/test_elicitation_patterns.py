"""Finding 12 of issue 22: a question's ``pattern`` is the agent's code. With ``re``,
``^([a-zA-Z0-9]+\\s?)*$`` against 20 characters and a ``!`` held the kernel's main thread 17 s
at Submit (twice as long with each character) and Interrupt did not help. Patterns are now
checked with ``regex`` under a time budget, and the card checks them off the main thread; a
pattern that cannot be decided in time fails the answer, with a reason.

Each check runs in a child process given a generous timeout: a hang detector, not a measure
of speed (``re`` holds the GIL while it backtracks, so a thread of this process could not
even be joined with a timeout)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest
from pydantic import TypeAdapter

import acp_notebook._protocol as p

HANG = 60.0  # seconds: a guard, never an assertion on speed
FINDING = r"^([a-zA-Z0-9]+\s?)*$"  # the finding's pattern; ``regex`` decides it at once
FINDING_VALUE = "a" * 28 + "!"  # about 16 times the finding's 17 s with ``re``
COSTLY = r"(a|aa)+$"  # one that ``regex`` cannot decide quickly either
COSTLY_VALUE = "a" * 60 + "!"
TOO_COSTLY = "could not be checked against the requested pattern in time (too costly)"

ADAPTER: TypeAdapter[Any] = TypeAdapter(p.CreateElicitationRequest)

PRELUDE = """
import json, threading
from pydantic import TypeAdapter
import acp_notebook._protocol as p

def request(patterns):
    properties = {n: {"type": "string", "pattern": pat} for n, pat in patterns}
    return TypeAdapter(p.CreateElicitationRequest).validate_python({
        "sessionId": "s1", "mode": "form", "message": "Your code?",
        "requestedSchema": {"type": "object", "properties": properties}})
"""


def _request(**patterns: str) -> Any:
    properties = {name: {"type": "string", "pattern": pat} for name, pat in patterns.items()}
    return ADAPTER.validate_python(
        {
            "sessionId": "s1",
            "mode": "form",
            "message": "Your code?",
            "requestedSchema": {"type": "object", "properties": properties},
        }
    )


def _in_child(code: str) -> Any:
    """Run ``code`` (which sets ``result``) in a child process; its ``result``, or a failure
    if it still runs after ``HANG`` seconds (it would have held the kernel)."""
    script = PRELUDE + textwrap.dedent(code) + "\nprint(json.dumps(result))\n"
    try:
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=HANG
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the pattern check still runs: it would hold the kernel")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_the_findings_pattern_is_decided_and_fails() -> None:
    errors = _in_child(
        f"""
        schema = request([("code", {FINDING!r})]).requested_schema
        result = p.content_errors(schema, {{"code": {FINDING_VALUE!r}}})
        """
    )
    assert errors == {"code": "does not match the requested pattern"}


def test_a_pattern_that_cannot_be_decided_in_time_fails_with_its_reason() -> None:
    assert p.PATTERN_TOO_COSTLY == TOO_COSTLY
    errors = _in_child(
        f"""
        schema = request([("code", {COSTLY!r})]).requested_schema
        result = p.content_errors(schema, {{"code": {COSTLY_VALUE!r}}})
        """
    )
    assert errors == {"code": TOO_COSTLY}


def test_the_budget_is_shared_by_every_pattern_of_one_answer() -> None:
    # ten costly fields: the first uses up PATTERN_BUDGET, the others fail without a try
    assert p.PATTERN_BUDGET <= 5  # the most the patterns of one answer hold a thread
    names = [f"f{i}" for i in range(10)]
    errors = _in_child(
        f"""
        schema = request([(n, {COSTLY!r}) for n in {names!r}]).requested_schema
        result = p.content_errors(schema, dict.fromkeys({names!r}, {COSTLY_VALUE!r}))
        """
    )
    assert errors == dict.fromkeys(names, TOO_COSTLY)


def test_ordinary_patterns_still_pass_and_fail() -> None:
    schema = _request(code=r"^[a-z]+-\d{2}$").requested_schema
    assert p.content_errors(schema, {"code": "ab-12"}) == {}
    assert p.content_errors(schema, {"code": "AB-12"}) == {
        "code": "does not match the requested pattern"
    }
    unanchored = _request(code=r"[0-9]").requested_schema
    assert p.content_errors(unanchored, {"code": "x1y"}) == {}  # searched, as JSON Schema does
    unreadable = _request(code="(").requested_schema
    assert p.content_errors(unreadable, {"code": "x"}) == {}  # the agent checks it


def test_the_decision_refuses_a_costly_answer_as_invalid() -> None:
    seen = _in_child(
        f"""
        from acp_notebook._client._elicitation import ElicitationDecision
        decision = ElicitationDecision(request([("code", {COSTLY!r})]))
        decision.settle("accept", {{"code": {COSTLY_VALUE!r}}}, "click")
        result = [decision.action, decision.decided_by, decision.detail, decision.response()]
        """
    )
    action, by, detail, response = seen
    assert (action, by, response) == ("cancel", "invalid", {"action": "cancel"})
    assert TOO_COSTLY in detail


def test_the_card_checks_a_pattern_off_the_main_thread_and_blocks_a_costly_answer() -> None:
    seen = _in_child(
        f"""
        from acp_notebook._widgets import ElicitationCard
        answers = []
        def on_answer(action, content, by):
            answers.append([action, content, by, threading.current_thread().name])
        # the finding's field first: the costly one then uses up what is left of the budget
        card = ElicitationCard(
            request([("other", {FINDING!r}), ("code", {COSTLY!r})]), on_answer)
        card.fields["code"].widget.value = {COSTLY_VALUE!r}
        card.fields["other"].widget.value = {FINDING_VALUE!r}
        card.buttons["accept"].click()  # the browser's click: the kernel's main thread
        assert card.wait_checked({HANG})
        first = [list(answers), card.fields["code"].error.value,
                 card.fields["other"].error.value, card.status_html]
        card.fields["code"].widget.value = "aaaa"
        card.fields["other"].widget.value = "abc def"
        card.buttons["accept"].click()
        assert card.wait_checked({HANG})
        result = [first, answers, threading.main_thread().name]
        card.close_quietly()
        """
    )
    (before, code_error, other_error, status), answers, main = seen
    assert before == []  # nothing was sent
    assert TOO_COSTLY in code_error
    assert "does not match the requested pattern" in other_error
    assert "fix the marked fields" in status
    [(action, content, by, thread)] = answers
    assert (action, content, by) == ("accept", {"code": "aaaa", "other": "abc def"}, "click")
    assert thread != main  # checked (and answered) off the main thread
