"""ElicitationCard: a form from every field type, filled and submitted; invalid values blocked;
URL mode; unknown types; closed and timed-out cards answer cancel."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

import ipywidgets
import pytest
from pydantic import TypeAdapter

import acp_notebook._protocol as p
from acp_notebook._client._elicitation import ElicitationDecision
from acp_notebook._widgets import ElicitationCard

sys.path.insert(0, str(Path(__file__).parent / "adversarial" / "agents"))
from elicit_agent import EVERY_FIELD

ADAPTER: TypeAdapter[Any] = TypeAdapter(p.CreateElicitationRequest)


def decision(params: dict[str, Any]) -> ElicitationDecision:
    return ElicitationDecision(question(params))


def question(params: dict[str, Any]) -> Any:
    """The request a card shows (a snapshot: cards never hold the decision)."""
    return ADAPTER.validate_python({**params, "sessionId": "s1"})


class Answers:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any, str]] = []
        self.event = threading.Event()

    def __call__(self, action: str, content: Any, by: str) -> None:
        self.calls.append((action, content, by))
        self.event.set()


def test_every_field_type_gets_its_widget() -> None:
    card = ElicitationCard(question(EVERY_FIELD), Answers())
    kinds = {name: type(f.widget) for name, f in card.fields.items()}
    assert kinds["name"] is ipywidgets.Text
    assert kinds["email"] is ipywidgets.Text
    assert card.fields["email"].widget.placeholder == "name@example.org"
    assert "at most 20" in card.fields["name"].widget.placeholder
    assert kinds["ratio"] is ipywidgets.FloatText
    assert kinds["count"] is ipywidgets.IntText
    assert kinds["public"] is ipywidgets.Checkbox
    assert kinds["color"] is ipywidgets.Dropdown
    assert kinds["size"] is ipywidgets.Dropdown
    assert kinds["tags"] is ipywidgets.SelectMultiple
    assert kinds["langs"] is ipywidgets.SelectMultiple
    assert kinds["future"] is ipywidgets.Text  # unknown type: text, raw schema shown
    assert "_geo" in card.fields["future"].box.children[2].value
    # defaults and titles
    assert card.fields["count"].widget.value == 3
    assert card.fields["public"].widget.value is True
    assert card.fields["color"].widget.value == "green"
    assert card.fields["size"].widget.options == (
        ("(choose)", None),
        ("Small", "s"),
        ("Large", "l"),
    )
    assert card.fields["langs"].widget.value == ("py",)
    assert card.fields["size"].required and not card.fields["color"].required
    assert "acp-elicit-required" in card.fields["name"].box.children[0].value
    card.close_quietly()


def test_fill_and_submit_sends_the_content() -> None:
    answers = Answers()
    card = ElicitationCard(question(EVERY_FIELD), answers)
    f = card.fields
    f["name"].widget.value = "Ada"
    f["email"].widget.value = "ada@example.org"
    f["start"].widget.value = "2026-12-01"
    f["size"].widget.value = "l"
    f["tags"].widget.value = ("a", "b")
    f["future"].widget.value = "51.5,-0.1"
    card.buttons["accept"].click()
    [(action, content, by)] = answers.calls
    assert (action, by) == ("accept", "click")
    assert content == {
        "name": "Ada",
        "email": "ada@example.org",
        "start": "2026-12-01",
        "ratio": 0.5,
        "count": 3,
        "public": True,
        "color": "green",
        "size": "l",
        "tags": ["a", "b"],
        "langs": ["py"],
        "future": "51.5,-0.1",
    }  # untouched optional fields without a default (homepage, meeting) are left out
    d = ElicitationDecision(card.request)
    d.settle(action, content, "click")
    assert d.action == "accept" and d.content == content
    card.mark_decided(d.action, d.decided_by, d.detail, d.content)
    assert card.buttons["accept"].disabled and f["name"].widget.disabled
    assert "accepted by click" in card.status_html
    card.close_quietly()


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("name", "A", "at least 2"),
        ("email", "nope", "email"),
        ("count", 11, "at most 10"),
        ("ratio", 1.5, "at most 1"),
        ("tags", ("a", "b", "c"), "at most 2"),
        ("homepage", "no-scheme", "URI"),
        ("meeting", "soon", "date-time"),
    ],
)
def test_invalid_values_are_blocked_inline(field: str, value: Any, message: str) -> None:
    answers = Answers()
    card = ElicitationCard(question(EVERY_FIELD), answers)
    card.fields["name"].widget.value = "Ada"
    card.fields["size"].widget.value = "s"
    card.fields[field].widget.value = value
    assert card.submit() is False
    assert answers.calls == []
    assert message in card.fields[field].error.value
    assert "fix the marked fields" in card.status_html
    card.fields[field].widget.value = card.fields[field].widget.value  # still blocked
    assert not card.buttons["accept"].disabled
    card.close_quietly()


def test_an_error_leaves_its_field_once_the_value_changes() -> None:
    # A person who corrects a field must not read the old error next to the new value.
    card = ElicitationCard(question(EVERY_FIELD), Answers())
    assert card.submit() is False
    assert "required" in card.fields["name"].error.value
    assert "required" in card.fields["size"].error.value
    assert "fix the marked fields" in card.status_html
    card.fields["name"].widget.value = "Ada"
    assert card.fields["name"].error.value == ""
    assert "required" in card.fields["size"].error.value  # the others keep theirs
    assert "fix the marked fields" not in card.status_html  # until the next Submit
    assert card.submit() is False  # which checks every field again
    assert "required" in card.fields["size"].error.value
    assert "fix the marked fields" in card.status_html
    card.close_quietly()


def test_required_fields_block_submit() -> None:
    answers = Answers()
    card = ElicitationCard(question(EVERY_FIELD), answers)
    assert card.submit() is False
    assert "required" in card.fields["name"].error.value
    assert "required" in card.fields["size"].error.value
    assert answers.calls == []
    card.close_quietly()


@pytest.mark.parametrize(("button", "action"), [("decline", "decline"), ("cancel", "cancel")])
def test_decline_and_cancel_buttons(button: str, action: str) -> None:
    answers = Answers()
    card = ElicitationCard(question(EVERY_FIELD), answers)
    card.buttons[button].click()
    card.buttons["accept"].click()  # a second click reports nothing more
    assert answers.calls == [(action, None, "click")]
    card.close_quietly()


def test_closing_an_open_card_answers_cancel() -> None:
    answers = Answers()
    card = ElicitationCard(question(EVERY_FIELD), answers)
    card.close()
    assert answers.calls == [("cancel", None, "closed")]


def test_timeout_answers_cancel() -> None:
    answers = Answers()
    card = ElicitationCard(question(EVERY_FIELD), answers, timeout=0.2)
    assert answers.event.wait(5)
    assert answers.calls == [("cancel", None, "timeout")]
    card.close_quietly()


URL = {"mode": "url", "message": "Sign in", "elicitationId": "e1"}


def test_url_is_a_link_with_its_domain_never_opened() -> None:
    answers = Answers()
    card = ElicitationCard(
        question({**URL, "url": "https://login.example.org/a?b=1&c=<x>"}), answers
    )
    html = card.request_html()
    assert "domain: <b>login.example.org</b>" in html
    assert 'href="https://login.example.org/a?b=1&amp;c=&lt;x&gt;"' in html
    assert 'rel="noopener noreferrer"' in html and 'target="_blank"' in html
    assert "<x>" not in html
    assert answers.calls == []
    assert set(card.buttons) == {"accept", "decline", "cancel"}
    card.buttons["accept"].click()
    assert answers.calls == [("accept", None, "click")]
    card.close_quietly()


@pytest.mark.parametrize(
    "url", ["javascript:alert(1)", "https://exa\u202emple.org/", "https://a.org/\u200bx"]
)
def test_url_with_other_scheme_or_hidden_characters_is_not_a_link(url: str) -> None:
    card = ElicitationCard(question({**URL, "url": url}), Answers())
    html = card.request_html()
    assert "<a " not in html
    assert "\u202e" not in html and "\u200b" not in html
    card.close_quietly()


def test_unknown_mode_reports_cancel_and_has_no_buttons() -> None:
    answers = Answers()
    card = ElicitationCard(question({"mode": "_psychic", "message": "hm"}), answers)
    assert card.buttons == {}
    assert answers.calls == [("cancel", None, "invalid")]
    card.close_quietly()


def test_html_is_escaped_and_hidden_characters_visible() -> None:
    params = json.loads(json.dumps(EVERY_FIELD))
    params["message"] = "<script>alert(1)</script> \u202eevil"
    params["requestedSchema"]["properties"]["name"]["title"] = "<b>x</b>"
    card = ElicitationCard(question(params), Answers())
    assert "<script>" not in card.request_html()
    assert "\u202e" not in card.request_html()
    assert "<b>x</b>" not in card.fields["name"].box.children[0].value
    text = "\n".join(card.transcript_text())
    assert "\u202e" not in text
    assert "field size: string (required)" in text
    assert "answer: waiting for an answer" in text
    card.close_quietly()


def test_turn_view_transcript_shows_question_and_answer() -> None:
    from acp_notebook._state import SessionState
    from acp_notebook._widgets import TurnView

    state = SessionState("s1")
    view = TurnView(state.begin_turn("ask me"), "ask me")
    d = decision(EVERY_FIELD)
    card = ElicitationCard(d.request, Answers())
    view.add_card(card)
    d.cancel("timeout", "no answer before the timeout")
    card.mark_decided(d.action, d.decided_by, d.detail)
    text = view.static_text()
    assert "Question: Tell me about the project" in text
    assert "answer: cancelled by timeout (no answer before the timeout)" in text
    assert "cancelled by timeout" in view.static_html()
    view.close_all()


def _form(fields: int) -> dict[str, Any]:
    properties = {f"f{i}": {"type": "string", "title": f"field {i}"} for i in range(fields)}
    return {
        "mode": "form",
        "message": "fill in everything",
        "requestedSchema": {"type": "object", "properties": properties},
    }


def _models() -> int:
    from ipywidgets.widgets.widget import _instances

    return len(_instances)


def test_a_form_over_the_field_cap_is_refused_and_not_built() -> None:
    """Finding 15: one form of 3,000 fields made 66,000 widgets. Past `MAX_FORM_FIELDS` the
    card builds no field, says why, and answers cancel at once (never accept)."""
    from acp_notebook._client._elicitation import MAX_FORM_FIELDS

    answers = Answers()
    before = _models()
    card = ElicitationCard(question(_form(3_000)), answers)
    made = _models() - before
    assert card.fields == {}
    assert made < 40  # the card's own few models, none per field
    assert answers.calls == [("cancel", None, "invalid")]
    assert card.buttons == {}
    html = card.static_bundle()["text/html"]
    assert f"3,000 fields (at most {MAX_FORM_FIELDS} are shown)" in html
    assert len(html) < 20_000
    card.close_quietly()


def test_a_form_at_the_field_cap_is_built() -> None:
    from acp_notebook._client._elicitation import MAX_FORM_FIELDS

    answers = Answers()
    card = ElicitationCard(question(_form(MAX_FORM_FIELDS)), answers)
    assert len(card.fields) == MAX_FORM_FIELDS
    assert card.refused is None and answers.calls == []
    assert set(card.buttons) == {"accept", "decline", "cancel"}
    card.close_quietly()


def test_a_forms_fields_share_their_layout_and_style_models() -> None:
    """JupyterLab's perComm setting gives every widget model a kernel subshell: a 20-field form
    made 275 models and ipykernel ran out of zmq sockets. The fields share theirs."""
    import ipywidgets
    from pydantic import TypeAdapter

    from acp_notebook import _protocol as p
    from acp_notebook._widgets import ElicitationCard

    properties = {f"f{i}": {"type": "string", "description": "a field"} for i in range(20)}
    request = TypeAdapter(p.CreateElicitationRequest).validate_python(
        {
            "sessionId": "s1",
            "mode": "form",
            "message": "Twenty fields",
            "requestedSchema": {"type": "object", "properties": properties},
        }
    )
    from ipywidgets.widgets.widget import _instances

    before = set(_instances)
    card = ElicitationCard(request, on_answer=lambda *answer: None)
    try:
        made = [_instances[m] for m in set(_instances) - before]
        layouts = [w for w in made if isinstance(w, ipywidgets.Layout)]
        # six models a field (label, input and its style, description, error, box) and the
        # card's own: each field's layouts and HTML styles would add eight more (about 300)
        assert len(made) <= 6 * 20 + 30, len(made)
        assert len(layouts) <= 12, len(layouts)  # the card's own few (a field's: 100 more)
    finally:
        card.close()
    assert not set(_instances) - before  # the shared models close with it
