"""Finding 14 of issue 22: the code card hid code after a lone CR. ``# only reads
df.shape\\rimport pathlib; ...`` showed as one comment line, and Python ran the import: its
tokenizer ends a line at ``\\n``, ``\\r\\n`` and a lone ``\\r``. The card now shows a lone CR as
``⟨CR⟩`` and a line break; the characters where ``str.splitlines`` breaks but Python does not
stay inside their line, marked, as Python reads them."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest

from acp_notebook._notebook._kernel_code import run_source
from acp_notebook._protocol._visible import source_lines
from acp_notebook._widgets._code_card import CodeCard

HIDDEN = "# only reads df.shape\rimport pathlib; touched = pathlib.Path.cwd()"


def _card(code: str) -> CodeCard:
    return CodeCard(code, lambda allowed, by: None)


def _source_lines_of_html(card: CodeCard) -> list[str]:
    """The lines of the card's highlighted source, as a browser shows the ``<pre>``."""
    found = re.search(r'<pre class="acp-code-source">(.*?)</pre>', card.transcript_html(), re.S)
    assert found is not None
    text = html.unescape(re.sub(r"<[^>]+>", "", found[1]))
    return text.removesuffix("\n").split("\n")  # Pygments ends its output with one


def _comment_lines_of_html(card: CodeCard) -> list[str]:
    """The text Pygments marked as comments (each comment token runs to its line's end)."""
    found = re.search(r'<pre class="acp-code-source">(.*?)</pre>', card.request_html(), re.S)
    assert found is not None
    comments = re.findall(r'<span style="[^"]*font-style: italic[^"]*">(.*?)</span>', found[1])
    return [html.unescape(c) for c in comments]


def test_the_findings_code_runs_the_import_after_the_cr() -> None:
    namespace: dict[str, Any] = {}
    outcome = run_source(HIDDEN, namespace)
    assert outcome.ran and outcome.error is None
    assert "touched" in namespace  # Python ran what followed the CR


def test_code_after_a_lone_cr_is_shown_on_a_line_of_its_own_with_a_marker() -> None:
    card = _card(HIDDEN)
    shown = _source_lines_of_html(card)
    assert shown[:2] == [
        "# only reads df.shape⟨CR⟩",
        "import pathlib; touched = pathlib.Path.cwd()",
    ]
    assert _comment_lines_of_html(card) == ["# only reads df.shape⟨CR⟩"]  # not the import
    text = card.static_bundle()["text/plain"].splitlines()
    at = text.index("    # only reads df.shape⟨CR⟩")
    assert text[at + 1] == "    import pathlib; touched = pathlib.Path.cwd()"
    assert "CR" in card.hidden
    assert "hidden characters made visible: CR" in card.request_html()
    card.close_quietly()


def test_crlf_is_an_ordinary_line_break() -> None:
    card = _card("a = 1\r\nb = 2")
    assert _source_lines_of_html(card) == ["a = 1", "b = 2"]
    assert card.hidden == ()
    card.close_quietly()


@pytest.mark.parametrize(
    ("char", "marker"),
    [
        ("\f", "⟨FF⟩"),
        ("\v", "⟨VT⟩"),
        ("\x1c", "⟨^\\⟩"),
        ("\x1d", "⟨^]⟩"),
        ("\x1e", "⟨^^⟩"),
        ("\x85", "⟨U+0085⟩"),
        ("\u2028", "⟨U+2028 LSEP⟩"),
        ("\u2029", "⟨U+2029 PSEP⟩"),
    ],
)
def test_what_splitlines_breaks_but_python_does_not_stays_in_its_line(
    char: str, marker: str
) -> None:
    code = f"# a comment{char}x = 1"
    namespace: dict[str, Any] = {}
    assert run_source(code, namespace).ran
    assert "x" not in namespace  # Python read it all as the comment
    card = _card(code)
    assert _source_lines_of_html(card) == [f"# a comment{marker}x = 1"]
    assert card.static_bundle()["text/plain"].count("x = 1") == 1
    assert f"    # a comment{marker}x = 1" in card.static_bundle()["text/plain"].splitlines()
    card.close_quietly()


def test_lines_are_numbered_as_python_numbers_them() -> None:
    # a U+2028 inside a string is not a line break for Python: the traceback names line 2
    code = "s = 'a\u2028b'\nraise ValueError(s)"
    assert source_lines(code) == ["s = 'a\u2028b'\n", "raise ValueError(s)"]
    assert source_lines("a\rb\r\nc\fd\ne") == ["a\r", "b\r\n", "c\fd\n", "e"]
    outcome = run_source(code, {})
    assert outcome.error is not None
    assert "raise ValueError(s)" in outcome.error, outcome.error
