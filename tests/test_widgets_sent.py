"""The card a kernel tool's answer leaves in the cell (`_widgets._sent.SentCard`)."""

from __future__ import annotations

from acp_notebook._widgets._sent import SentCard


def test_it_names_the_tool_and_folds_the_text_escaped() -> None:
    card = SentCard("inspect_variable", "df\x1b[2J", "<i>rows</i>\n\u202eevil", error=False)
    try:
        html = card.value
        assert "kernel tool inspect_variable(df⟨ESC⟩[2J), 17 characters" in html
        assert "&lt;i&gt;rows&lt;/i&gt;" in html and "<i>" not in html
        assert "\u202e" not in html and "\x1b" not in html
        assert "<details><summary>" in html  # folded: one click opens it
        assert card.transcript_text() == [
            "Sent to the agent: kernel tool inspect_variable(df⟨ESC⟩[2J), 17 characters"
        ]
        assert card.static_bundle()["text/html"].endswith(card.transcript_html())
        assert card.tool_call_id is None  # shown in arrival order
    finally:
        card.close()
    assert card.comm is None


def test_an_error_answer_says_so() -> None:
    card = SentCard("notebook_history", "n=2", "this kernel has no IPython history", error=True)
    try:
        assert card.transcript_text() == [
            "Sent to the agent: kernel tool notebook_history(n=2), an error"
        ]
    finally:
        card.close()


def test_the_answers_past_the_cap_are_counted_in_one_card() -> None:
    from acp_notebook._widgets._sent import SentMore

    more = SentMore()
    try:
        more.add("abc")
        assert more.transcript_text() == [
            "Sent to the agent: 1 more kernel tool answer, 3 characters in all"
            " (a cell lists the first 20 one by one)"
        ]
        more.add("<b>" * 1000)
        assert "2 more kernel tool answers, 3,003 characters in all" in more.value
        assert "<b><b>" not in more.value  # the texts themselves are not kept
    finally:
        more.close()
