"""``invalid_options``: a request whose options cannot be answered unambiguously."""

from __future__ import annotations

from typing import Any

import pytest

from acp_notebook._client._permission import PermissionDecision, invalid_options
from acp_notebook._protocol import PermissionOption, RequestPermissionRequest


def request(*options: tuple[str, str, str]) -> RequestPermissionRequest:
    payload: dict[str, Any] = {
        "sessionId": "s1",
        "title": "Run `ls`?",
        "options": [{"optionId": i, "name": n, "kind": k} for i, n, k in options],
    }
    return RequestPermissionRequest.model_validate(payload)


def test_a_well_formed_request_is_valid() -> None:
    req = request(
        ("a", "Allow", "allow_once"),
        ("b", "Always", "allow_always"),
        ("r", "Reject", "reject_once"),
        ("x", "Later", "_vendor_later"),  # an unknown kind is a UI hint, not an error
    )
    assert invalid_options(req) is None
    assert invalid_options(request(("only", "Reject", "reject_once"))) is None


def test_duplicate_ids_with_different_kinds_are_invalid() -> None:
    req = request(("x", "Allow", "allow_once"), ("x", "Reject", "reject_once"))
    assert invalid_options(req) == "duplicate option id 'x' (allow_once and reject_once)"
    # what the log would claim (the first option's kind) is not what the agent may read
    decision = PermissionDecision(req)
    decision.settle("x", "click")
    assert decision.option_kind == "allow_once"


def test_duplicate_ids_with_the_same_kind_are_invalid_too() -> None:
    req = request(
        ("y", "Yes", "allow_once"), ("y", "Sure", "allow_once"), ("y", "No", "reject_always")
    )
    assert invalid_options(req) == (
        "duplicate option id 'y' (allow_once, allow_once and reject_always)"
    )


def test_the_first_duplicate_is_named_and_hidden_characters_are_visible() -> None:
    req = request(
        ("ok", "Allow", "allow_once"),
        ("\u202eid", "A", "allow_once"),
        ("\u202eid", "B", "reject_once"),
        ("ok", "Again", "allow_always"),
    )
    reason = invalid_options(req)
    assert reason == "duplicate option id 'ok' (allow_once and allow_always)"
    req = request(("\u202eid", "A", "allow_once"), ("\u202eid", "B", "reject_once"))
    reason = invalid_options(req)
    assert reason is not None and "\u202e" not in reason and "⟨U+202E RLO⟩id" in reason


def test_no_options_is_invalid() -> None:
    # the wire model refuses an empty list; a request built another way is still caught
    req = RequestPermissionRequest.model_construct(session_id="s1", title="t", options=[])
    assert invalid_options(req) == "no options"
    with pytest.raises(ValueError):
        RequestPermissionRequest.model_validate({"sessionId": "s", "title": "t", "options": []})


@pytest.mark.parametrize(
    ("option", "reason"),
    [
        (("", "Allow", "allow_once"), "an option has an empty id (allow_once)"),
        (("a", "Allow", ""), "option 'a' has no kind"),
    ],
)
def test_empty_ids_and_kinds_are_invalid(option: tuple[str, str, str], reason: str) -> None:
    assert invalid_options(request(option, ("r", "Reject", "reject_once"))) == reason


def test_options_are_read_as_sent() -> None:
    option = PermissionOption.model_validate({"optionId": "a", "name": "n", "kind": "allow_once"})
    req = RequestPermissionRequest.model_construct(
        session_id="s1", title="t", options=[option, option]
    )
    assert invalid_options(req) == "duplicate option id 'a' (allow_once and allow_once)"


def test_more_options_than_a_card_shows_is_invalid() -> None:
    from acp_notebook._client._permission import MAX_OPTIONS

    many = [(f"o{i}", f"Option {i}", "reject_once") for i in range(MAX_OPTIONS)]
    assert invalid_options(request(*many)) is None
    reason = invalid_options(request(*many, ("ok", "Allow", "allow_once")))
    assert reason == f"{MAX_OPTIONS + 1} options (at most {MAX_OPTIONS} are shown)"
