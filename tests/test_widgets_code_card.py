"""The code card alone: what it shows of the agent's code, and the one choice it reports."""

from __future__ import annotations

import threading
from typing import Any

from acp_notebook._widgets._code_card import CodeCard, highlight_python

GUARD = 30.0


def card(code: str = "print('hi')", **kw: Any) -> tuple[CodeCard, list[tuple[bool, str]]]:
    chosen: list[tuple[bool, str]] = []
    return CodeCard(code, lambda allowed, by: chosen.append((allowed, by)), **kw), chosen


def test_a_click_reports_once_and_disables_both_buttons() -> None:
    made, chosen = card()
    allow, reject = made.buttons
    assert (allow.description, reject.description) == ("Allow", "Reject")
    allow.click()
    reject.click()
    allow.click()
    assert chosen == [(True, "click")]
    assert allow.disabled and reject.disabled
    made.close()
    assert chosen == [(True, "click")]  # closing after the choice reports nothing more


def test_reject_reports_false() -> None:
    made, chosen = card()
    made.buttons[1].click()
    assert chosen == [(False, "click")]
    made.close()


def test_closing_an_open_card_fails_closed() -> None:
    made, chosen = card()
    made.close()
    assert chosen == [(False, "closed")]


def test_close_quietly_reports_nothing() -> None:
    made, chosen = card()
    made.close_quietly()
    assert chosen == []


def test_the_countdown_answers_timeout() -> None:
    reported = threading.Event()
    chosen: list[tuple[bool, str]] = []

    def on_choose(allowed: bool, by: str) -> None:
        chosen.append((allowed, by))
        reported.set()

    made = CodeCard("x = 1", on_choose, timeout=0.1)
    assert reported.wait(GUARD)
    assert chosen == [(False, "timeout")]
    made.buttons[0].click()  # too late
    assert chosen == [(False, "timeout")]
    made.close()


def test_mark_and_result_show_in_the_card_and_its_transcript() -> None:
    made, _ = card("print('<b>hi</b>')")
    made.mark("Allowed - by a click; ran")
    made.show_result("<b>hi</b>\n", None)
    assert made.outcome_text == "Allowed - by a click; ran"
    assert made.output_text == "<b>hi</b>\n"
    assert made.buttons[0].disabled and made.buttons[1].disabled
    bundle = made.static_bundle()
    assert "decision: Allowed - by a click; ran" in bundle["text/plain"]
    assert "    <b>hi</b>" in bundle["text/plain"]  # the output, indented, as text
    assert "<b>hi</b>" not in bundle["text/html"] and "&lt;b&gt;hi&lt;/b&gt;" in bundle["text/html"]
    made.close()


def test_code_is_escaped_and_hidden_characters_are_made_visible() -> None:
    code = "x = '</pre><script>alert(1)</script>'  # \u202e evil \x1b[2J\nprint(x)"
    made, _ = card(code)
    for html in (made.request_html(), made.transcript_html()):
        assert "<script>" not in html and "</pre><script>" not in html
        assert "\u202e" not in html and "\x1b" not in html
        assert "U+202E RLO" in html and "ESC" in html
        assert "hidden characters made visible" in html
    text = "\n".join(made.transcript_text())
    assert "\u202e" not in text and "⟨U+202E RLO⟩" in text and "⟨ESC⟩" in text
    made.close()


def test_highlighting_colours_python_and_escapes() -> None:
    html = highlight_python("def f(a):\n    return a < 2  # <x>\n")
    assert "<span" in html and "style=" in html  # inline colours: no stylesheet needed
    assert "&lt;</span>" in html and "&lt;x&gt;" in html and "<x>" not in html
