"""acp_notebook._protocol._visible: control characters and bidi overrides shown as markers."""

from __future__ import annotations

import pytest

from acp_notebook._protocol._visible import make_visible, visible_text


@pytest.mark.parametrize(
    "text",
    ["ls -la", "héllo 日本語 ¿qué?", "emoji 🎉 and math ∑", ""],
)
def test_printable_text_passes_untouched(text: str) -> None:
    visible = make_visible(text)
    assert visible.text == text
    assert visible.hidden == ()
    assert not visible.suspicious


def test_terminal_controls_are_marked() -> None:
    visible = make_visible("ls\x1b[2Jrm -rf ~\rls\x08")
    assert visible.text == "ls⟨ESC⟩[2Jrm -rf ~⟨CR⟩ls⟨BS⟩"
    assert visible.hidden == ("ESC", "CR", "BS")
    assert visible.suspicious


def test_c0_without_a_name_c1_and_del() -> None:
    assert make_visible("\x00\x01\x7f\x85").text == "⟨NUL⟩⟨^A⟩⟨DEL⟩⟨U+0085⟩"


def test_bidi_overrides_are_marked_in_every_mode() -> None:
    for kwargs in ({}, {"multiline": True}, {"prose": True}):
        visible = make_visible("invoice\u202efdp.exe", **kwargs)  # type: ignore[arg-type]
        assert visible.text == "invoice⟨U+202E RLO⟩fdp.exe"
        assert visible.hidden == ("U+202E RLO",)


def test_one_line_mode_marks_newline_and_tab_but_keeps_the_break() -> None:
    assert make_visible("a\nb\tc").text == "a⟨LF⟩\nb⟨TAB⟩c"


def test_multiline_keeps_newlines_and_tabs_and_folds_crlf() -> None:
    visible = make_visible("a\nb\tc\r\nd\re", multiline=True)
    assert visible.text == "a\nb\tc\nd⟨CR⟩e"
    assert visible.hidden == ("CR",)


def test_prose_keeps_joiners_and_marks_multiline_does_not() -> None:
    family = "👨\u200d👩"
    assert make_visible(family, prose=True).text == family
    assert make_visible(family, multiline=True).text == "👨⟨U+200D ZWJ⟩👩"
    # prose keeps only ZWNJ, ZWJ, LRM, RLM: other format characters are still marked
    assert make_visible("\ufeff\u2028x", prose=True).hidden == ("U+FEFF BOM", "U+2028 LSEP")


def test_unassigned_surrogate_and_tag_characters_are_marked() -> None:
    assert make_visible("\U000e0001").text == "⟨U+E0001⟩"
    assert make_visible("\ud800").text == "⟨U+D800⟩"


def test_hidden_lists_each_name_once_in_order_of_first_appearance() -> None:
    assert make_visible("\r\x1b\r\x1b\x07").hidden == ("CR", "ESC", "BEL")


def test_visible_text_is_the_text_of_make_visible() -> None:
    sample = "a\x1b\nb"
    assert visible_text(sample) == make_visible(sample).text
    assert visible_text(sample, multiline=True) == "a⟨ESC⟩\nb"


@pytest.mark.parametrize("space", ["\u00a0", "\u2000", "\u2009", "\u202f", "\u3000"])
def test_a_space_that_is_not_the_ascii_one_is_marked_in_a_one_line_label(space: str) -> None:
    # review of issue 27: a script's card showed `./build.sh<NBSP>--check` as two words, but a
    # shell reads one: a one-line label (a command) marks it; text with a layout keeps it
    command = f"./build.sh{space}--check --verbose"
    assert visible_text(command) == f"./build.sh⟨U+{ord(space):04X}⟩--check --verbose"
    assert visible_text(command, multiline=True) == command
    assert visible_text(command, prose=True) == command
