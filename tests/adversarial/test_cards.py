"""Cards an agent words to mislead: a button shows what its option does (its kind), whatever
the agent named it, and a request that cannot be answered unambiguously has no live button."""

from __future__ import annotations

from typing import Any

import pytest

from acp_notebook._client._permission import PermissionDecision, invalid_options
from acp_notebook._protocol import RequestPermissionRequest
from acp_notebook._widgets import PermissionCard


def request(*options: tuple[str, str, str]) -> RequestPermissionRequest:
    payload: dict[str, Any] = {
        "sessionId": "s1",
        "title": "Run `rm -rf build`?",
        "subject": {"type": "command", "command": "rm -rf build", "cwd": "/work"},
        "options": [{"optionId": i, "name": n, "kind": k} for i, n, k in options],
    }
    return RequestPermissionRequest.model_validate(payload)


def card_for(req: RequestPermissionRequest) -> tuple[PermissionCard, list[Any]]:
    calls: list[Any] = []
    return PermissionCard(req, lambda o, b: calls.append((o, b))), calls


def test_an_allow_named_reject_shows_allow_and_a_warning() -> None:
    card, calls = card_for(request(("a", "Reject", "allow_once"), ("r", "Allow", "reject_once")))
    try:
        allow, reject = card.buttons
        assert allow.button_style == "success" and reject.button_style == "danger"  # by kind
        assert allow.description == "Reject" and reject.description == "Allow"  # names kept
        badges = card.option_html
        assert "allow once" in badges[0] and "reject once" in badges[1]
        assert "⚠ the agent named this &#x27;Reject&#x27; but it ALLOWS" in badges[0]
        assert "⚠ the agent named this &#x27;Allow&#x27; but it REJECTS" in badges[1]
        text = card.static_bundle()["text/plain"]
        assert "Reject [allow once] ⚠ the agent named this 'Reject' but it ALLOWS" in text
        allow.click()
        assert calls == [("a", "click")]
        card.mark_decided("a", "click")
        assert card.outcome_text == "Approved: Reject - by a click · allow once"
    finally:
        card.close()


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("REJECT", "allow_always"),
        ("Deny", "allow_once"),
        ("No", "allow_once"),
        ("Cancel", "allow_once"),
        ("stop!", "allow_once"),
        ("Don't allow", "allow_once"),
        ("Never", "allow_always"),
        ("Not now", "allow_once"),
        ("Re\u200bject", "allow_once"),  # a zero-width space does not hide the word
        ("\uff32\uff45\uff4a\uff45\uff43\uff54", "allow_once"),  # fullwidth letters
        ("Yes", "reject_once"),
        ("OK", "reject_always"),
        ("Run it", "reject_once"),
        ("Approve", "reject_once"),
        ("accept", "reject_once"),
    ],
)
def test_names_that_contradict_their_kind_are_flagged(name: str, kind: str) -> None:
    card, _ = card_for(request(("x", name, kind)))
    try:
        assert "acp-card-warning" in card.option_html[0]
        assert ("ALLOWS" if kind.startswith("allow") else "REJECTS") in card.option_html[0]
    finally:
        card.close()


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("Allow once", "allow_once"),
        ("Yes, and don't ask again", "allow_always"),
        ("Don't allow", "reject_once"),
        ("No, and tell the agent what to do", "reject_once"),
        ("Not now", "reject_once"),
        ("Never", "reject_always"),
        ("Allow and never ask again", "allow_always"),
        ("Always", "allow_always"),
        ("Go ahead", "allow_once"),
        ("Run", "allow_once"),
    ],
)
def test_names_that_agree_with_their_kind_are_not_flagged(name: str, kind: str) -> None:
    card, _ = card_for(request(("x", name, kind)))
    try:
        assert "acp-card-warning" not in card.option_html[0]
    finally:
        card.close()


def test_duplicate_ids_make_an_invalid_request_with_no_live_button() -> None:
    req = request(("x", "Allow", "allow_once"), ("x", "Reject", "reject_once"))
    reason = invalid_options(req)
    assert reason == "duplicate option id 'x' (allow_once and reject_once)"
    # the client answers it cancelled and records it as invalid before any card sees it
    decision = PermissionDecision(req)
    decision.settle(None, "invalid", reason)
    calls: list[Any] = []
    outcome = (decision.option_id, decision.decided_by, decision.detail)
    card = PermissionCard(req, lambda o, b: calls.append((o, b)), outcome=outcome)
    try:
        assert card.buttons == []  # nothing to click, not even a disabled button
        assert calls == []
        assert card.outcome_text == (
            "Cancelled - invalid request: duplicate option id 'x' (allow_once and reject_once)"
        )
        assert "invalid request" in card.status_html and "duplicate option id" in card.status_html
        assert "invalid request" in card.static_bundle()["text/plain"]
    finally:
        card.close()
    assert calls == []


def test_a_pending_invalid_request_fails_closed_on_its_own() -> None:
    """Should an invalid request ever reach a card undecided, the card offers nothing to
    click and answers it cancelled itself."""
    req = request(("x", "Allow", "allow_once"), ("x", "Reject", "reject_once"))
    card, calls = card_for(req)
    try:
        assert calls == [(None, "invalid")]
        assert card.buttons == []
        assert "duplicate option id" in card._info.value
    finally:
        card.close()
    assert calls == [(None, "invalid")]


def test_names_and_kinds_are_escaped_and_visible() -> None:
    req = request(("x", "<img src=x onerror=alert(1)>\u202eReject", "allow_once"))
    card, _ = card_for(req)
    try:
        html = card.option_html[0] + card._info.value
        assert "<img" not in html and "\u202e" not in html
        assert "&lt;img src=x onerror=alert(1)&gt;⟨U+202E RLO⟩Reject" in html
        assert card.buttons[0].description == "<img src=x onerror=alert(1)>⟨U+202E RLO⟩Reject"
        assert "ALLOWS" in card.option_html[0]
        assert "⚠ hidden characters made visible: U+202E RLO in this name" in card.option_html[0]
        assert (
            "hidden characters made visible: U+202E RLO in this name"
            in (card.static_bundle()["text/plain"])
        )
    finally:
        card.close()
