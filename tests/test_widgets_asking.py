"""One way to ask a person (acp_notebook/_widgets/_asking.py): permission cards, question forms
and code cards are the three kinds of ``AskCard``. One table drives each kind through the same
paths: a click, the countdown's end, the owner's cancel (pushed), and closing an open card
(which fails closed); each reports one answer, once, and ends disabled with its decision."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import TypeAdapter

from acp_notebook import _protocol as p
from acp_notebook._widgets import ElicitationCard, PermissionCard
from acp_notebook._widgets._asking import ANSWER_SENT, AskCard
from acp_notebook._widgets._code_card import CodeCard

PERMISSION = p.RequestPermissionRequest.model_validate(
    {
        "sessionId": "s1",
        "title": "Run `make`",
        "options": [
            {"optionId": "yes", "name": "Allow", "kind": "allow_once"},
            {"optionId": "no", "name": "Reject", "kind": "reject_once"},
        ],
        "subject": {"type": "command", "command": "make", "cwd": "/w"},
    }
)
QUESTION = TypeAdapter(p.CreateElicitationRequest).validate_python(
    {
        "sessionId": "s1",
        "mode": "form",
        "message": "Go on?",
        "requestedSchema": {"type": "object", "properties": {}},
    }
)


class Reports:
    """Every answer a card reports, as one tuple per call (any thread)."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.event = threading.Event()

    def __call__(self, *answer: Any) -> None:
        self.calls.append(answer)
        self.event.set()


@dataclass(frozen=True)
class Kind:
    """One kind of card: how to make it, click its yes, push a cancel; what it reports."""

    name: str
    make: Callable[[Reports, float | None], AskCard]
    click: Callable[[Any], None]
    clicked: tuple[Any, ...]
    expired: tuple[Any, ...]
    closed: tuple[Any, ...]
    cancel: Callable[[Any], None]
    cancelled: str  # in the decision line the owner's cancel shows


KINDS = [
    Kind(
        "permission",
        lambda r, t: PermissionCard(PERMISSION, r, timeout=t),
        lambda card: card.buttons[0].click(),
        ("yes", "click"),
        (None, "timeout"),
        (None, "closed"),
        lambda card: card.mark_decided(None, "cancel", "the turn was cancelled"),
        "Cancelled",
    ),
    Kind(
        "question",
        lambda r, t: ElicitationCard(QUESTION, r, timeout=t),
        lambda card: card.buttons["accept"].click(),
        ("accept", {}, "click"),
        ("cancel", None, "timeout"),
        ("cancel", None, "closed"),
        lambda card: card.mark_decided("cancel", "cancel", "the turn was cancelled"),
        "cancelled by cancel",
    ),
    Kind(
        "code",
        lambda r, t: CodeCard("print(1)", r, timeout=t),
        lambda card: card.buttons[0].click(),
        (True, "click"),
        (False, "timeout"),
        (False, "closed"),
        lambda card: card.mark("Cancelled - the turn was cancelled"),
        "Cancelled",
    ),
]


@pytest.fixture
def made() -> Iterator[list[AskCard]]:
    cards: list[AskCard] = []
    yield cards
    for card in cards:
        card.close_quietly()


def card_of(kind: Kind, made: list[AskCard], timeout: float | None = None) -> tuple[Any, Reports]:
    reports = Reports()
    card = kind.make(reports, timeout)
    made.append(card)
    assert isinstance(card, AskCard) and card.kind == kind.name
    return card, reports


def disabled(card: Any) -> bool:
    buttons = card.buttons.values() if isinstance(card.buttons, dict) else card.buttons
    return all(button.disabled for button in buttons)


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_a_click_reports_once_and_disables_the_card(kind: Kind, made: list[AskCard]) -> None:
    card, reports = card_of(kind, made)
    assert not disabled(card)
    kind.click(card)
    kind.click(card)  # a second click (a stale view) reports nothing more
    assert reports.calls == [kind.clicked]
    assert disabled(card) and card.status_html == ANSWER_SENT and not card.decided


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_the_countdown_answers_for_the_kind_when_nobody_does(
    kind: Kind, made: list[AskCard]
) -> None:
    card, reports = card_of(kind, made, timeout=0.05)
    assert reports.event.wait(10), "the countdown never ended"
    assert reports.calls == [kind.expired]
    # the countdown's thread disables the card right after it reports (the answer goes first;
    # a click in between is ignored, as below): wait for that, as a loaded machine may not
    # have run it yet (a CI run failed here)
    end = time.monotonic() + 10
    while not disabled(card):
        assert time.monotonic() < end, "the card was never disabled"
        threading.Event().wait(0.005)
    kind.click(card)  # too late: nothing more is reported
    assert reports.calls == [kind.expired]


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_the_owners_cancel_shows_and_leaves_nothing_to_click(
    kind: Kind, made: list[AskCard]
) -> None:
    card, reports = card_of(kind, made, timeout=60)
    kind.cancel(card)
    assert card.decided and disabled(card) and kind.cancelled in card.status_html
    assert "cancels in" not in card.status_html  # the countdown stopped
    kind.click(card)
    card.close()
    assert reports.calls == []  # the owner decided: the card reports nothing, even closing


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_closing_an_open_card_fails_closed_and_closing_quietly_does_not(
    kind: Kind, made: list[AskCard]
) -> None:
    card, reports = card_of(kind, made)
    card.close()
    assert reports.calls == [kind.closed]
    assert card.comm is None
    quiet, quiet_reports = card_of(kind, made)
    quiet.close_quietly()
    assert quiet_reports.calls == [] and quiet.comm is None


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_an_owner_that_fails_leaves_the_card_saying_so(kind: Kind, made: list[AskCard]) -> None:
    def broken(*_answer: Any) -> None:
        raise RuntimeError("the owner's bug")

    card = kind.make(broken, None)  # type: ignore[arg-type]
    made.append(card)
    kind.click(card)
    assert "the answer could not be sent" in card.status_html and disabled(card)
