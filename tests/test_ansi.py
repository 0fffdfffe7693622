from __future__ import annotations

import html
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_notebook._state import AnsiHtml, AnsiTranscript, ansi_to_html, ansi_to_text
from acp_notebook._state._ansi import _Engine


class _SlowTranscript(AnsiTranscript):
    """The transcript without its regex fast path, as a reference."""

    def _process(self, text: str) -> None:
        _Engine._process(self, text)


FRAGMENTS = [
    b"hello",
    b" world ",
    b"\t",
    b"<script>&amp;\"'",
    "é".encode(),
    "中文".encode(),
    "😀".encode(),
    b"\xff",  # invalid UTF-8
    b"\xe4\xb8",  # truncated code point
    b"\n",
    b"\r",
    b"\r\n",
    b"\x08",
    b"\x00",
    b"\x07",
    b"\x7f",
    b"\x1b",
    b"\x1b[",
    b"\x1b[0m",
    b"\x1b[1;31m",
    b"\x1b[32m",
    b"\x1b[m",
    b"\x1b[38;5;200m",
    b"\x1b[48;2;10;20;30m",
    b"\x1b[38:2::1:2:3m",
    b"\x1b[7m",
    b"\x1b[4m",
    b"\x1b[2K",
    b"\x1b[K",
    b"\x1b[1K",
    b"\x1b[1A",
    b"\x1b[2A",
    b"\x1b[F",
    b"\x1b[B",
    b"\x1b[3C",
    b"\x1b[2D",
    b"\x1b[5G",
    b"\x1b[J",
    b"\x1b[2J",
    b"\x1b[?25l",
    b"\x1b[>4;2m",
    b"\x1b[1 q",
    b"\x1b]0;title<b>\x07",
    b"\x1b]52;c;aGVsbG8=\x1b\\",
    b"\x1b]8;;https://example.com\x1b\\",
    b"\x1b]8;;\x1b\\",
    b"\x1b]2;unterminated",
    b"\x1bPq#0;2;0;0;0\x1b\\",
    b"\x1b_apc\x07",
    b"\x1b(B",
    b"\x1b7",
    b"\x1b=",
    b"\x1b\\",
    b"[2;",
    b"\x1b[2",
    b"\x1b(",
    b"\x1b[1 A",
    b"\x1b[ 1",
    b"K",
    b"\x1b\x1b",
    b"\x1b]",
    b"\x9b",
    "\u009b".encode(),
    b"progress 10%\rprogress 55%\rprogress 100%\n",
]

streams = st.lists(st.sampled_from(FRAGMENTS), max_size=40).map(b"".join)


@st.composite
def chunked(draw: st.DrawFn) -> tuple[bytes, list[bytes]]:
    data = draw(streams)
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=12)))
    pieces = []
    last = 0
    for cut in [*cuts, len(data)]:
        pieces.append(data[last:cut])
        last = cut
    return data, pieces


def _feed(conv: _Engine, pieces: list[bytes]) -> None:
    for piece in pieces:
        conv.feed(piece)


def _html_text(markup: str) -> str:
    return html.unescape(re.sub(r"</?span[^>]*>", "", markup))


@settings(max_examples=400, deadline=None)
@given(chunked(), st.integers(1, 4))
def test_chunking_invariance(case: tuple[bytes, list[bytes]], window: int) -> None:
    data, pieces = case
    whole_text = ansi_to_text(data, window)
    whole_html = ansi_to_html(data, window)
    t = AnsiTranscript(window)
    h = AnsiHtml(window)
    _feed(t, pieces)
    _feed(h, pieces)
    assert t.text() == whole_text
    assert h.html() == whole_html
    # The fast path agrees with the plain tokenizer loop.
    slow = _SlowTranscript(window)
    _feed(slow, [bytes([b]) for b in data])
    assert slow.text() == whole_text
    # The HTML says the same text as the transcript.
    assert _html_text(whole_html) == whole_text


@settings(max_examples=200, deadline=None)
@given(streams)
def test_sanitised(data: bytes) -> None:
    text = ansi_to_text(data)
    assert "\x1b" not in text
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", text)
    markup = ansi_to_html(data)
    assert "<script" not in markup
    assert (
        re.sub(
            r"<span( class=\"[a-z -]+\")?( style=\"[a-z0-9(),;: -]+\")?>|</span>", "", markup
        ).count("<")
        == 0
    )


def test_carriage_return_keeps_final_progress_state() -> None:
    data = b"building\n[    ] 0%\r[==  ] 50%\r[====] 100%\ndone\n"
    assert ansi_to_text(data) == "building\n[====] 100%\ndone\n"


def test_shorter_overwrite_keeps_tail() -> None:
    assert ansi_to_text(b"abcdef\rXY") == "XYcdef"


def test_backspace() -> None:
    assert ansi_to_text(b"abc\x08\x08X") == "aXc"
    assert ansi_to_text(b"\x08\x08a") == "a"


def test_erase_line_after_carriage_return() -> None:
    assert ansi_to_text(b"long progress text\r\x1b[2Kok") == "ok"
    assert ansi_to_text(b"long progress text\r\x1b[Kok") == "ok"
    assert ansi_to_text(b"abcdef\x1b[3D\x1b[K!") == "abc!"


def test_cursor_up_redraw() -> None:
    data = (
        b"a: 1%\nb: 1%\n"
        b"\x1b[2A\x1b[2Ka: 50%\n\x1b[2Kb: 70%\n"
        b"\x1b[2A\x1b[2Ka: done\n\x1b[2Kb: done\n"
    )
    assert ansi_to_text(data) == "a: done\nb: done\n"


def test_cursor_up_with_erase_below() -> None:
    data = b"keep\nx\ny\nz\n\x1b[3F\x1b[Jnew\n"
    assert ansi_to_text(data) == "keep\nnew\n"


def test_cursor_up_is_limited_to_the_window() -> None:
    data = b"1\n2\n3\n4\n\x1b[10AX"
    assert ansi_to_text(data, window=2) == "1\n2\n3\nX\n"
    assert ansi_to_text(data, window=10) == "X\n2\n3\n4\n"


def test_osc_dropped_link_text_kept() -> None:
    data = b"\x1b]0;my title\x07see \x1b]8;;https://evil.example/x\x1b\\the docs\x1b]8;;\x1b\\."
    assert ansi_to_text(data) == "see the docs."
    assert ansi_to_html(data) == "see the docs."


def test_osc_clipboard_and_dcs_dropped() -> None:
    data = b"a\x1b]52;c;c2VjcmV0\x07b\x1bPpayload\x1b\\c\x1b_x\x1b\\d\x1b^pm\x07e"
    assert ansi_to_text(data) == "abcde"


def test_unterminated_osc_across_chunks() -> None:
    conv = AnsiTranscript()
    conv.feed(b"x\x1b]0;ti")
    conv.feed(b"tle\r\nstill title")
    assert conv.text() == "x"
    conv.feed(b"\x1b")
    conv.feed(b"\\y")
    assert conv.text() == "xy"


def test_other_controls_dropped() -> None:
    assert ansi_to_text(b"a\x00b\x07c\x7fd\x0be\x0cf\tg") == "abcdef\tg"


def test_split_code_point_and_invalid_bytes() -> None:
    conv = AnsiTranscript()
    snowman = "☃".encode()
    conv.feed(snowman[:1])
    assert conv.text() == ""
    conv.feed(snowman[1:] + b"\xff!")
    assert conv.text() == "☃\ufffd!"


def test_split_escape_is_held_back() -> None:
    conv = AnsiTranscript()
    conv.feed(b"ok\x1b[3")
    assert conv.text() == "ok"
    conv.feed(b"1mred")
    assert conv.text() == "okred"


def test_html_classes_match_nbconvert() -> None:
    assert ansi_to_html(b"\x1b[31mr") == '<span class="ansi-red-fg">r</span>'
    assert ansi_to_html(b"\x1b[1;32mg") == '<span class="ansi-green-intense-fg ansi-bold">g</span>'
    assert ansi_to_html(b"\x1b[94mb") == '<span class="ansi-blue-intense-fg">b</span>'
    assert ansi_to_html(b"\x1b[43;4my") == '<span class="ansi-yellow-bg ansi-underline">y</span>'
    assert ansi_to_html(b"\x1b[7mi") == (
        '<span class="ansi-default-inverse-fg ansi-default-inverse-bg">i</span>'
    )
    assert ansi_to_html(b"\x1b[38;5;9mc") == '<span class="ansi-red-intense-fg">c</span>'
    assert ansi_to_html(b"\x1b[38;5;196mc") == '<span style="color: rgb(255,0,0)">c</span>'
    assert ansi_to_html(b"\x1b[38;5;244mc") == '<span style="color: rgb(128,128,128)">c</span>'
    assert ansi_to_html(b"\x1b[48;2;1;2;3mc") == (
        '<span style="background-color: rgb(1,2,3)">c</span>'
    )
    assert ansi_to_html(b"\x1b[38:2::4:5:6mc") == '<span style="color: rgb(4,5,6)">c</span>'
    assert ansi_to_html(b"\x1b[31mr\x1b[0mplain\x1b[1mb\x1b[22mn") == (
        '<span class="ansi-red-fg">r</span>plain<span class="ansi-bold">b</span>n'
    )


def test_html_private_csi_m_is_not_sgr() -> None:
    assert ansi_to_html(b"\x1b[>4;2mx") == "x"


def test_html_spans_do_not_cross_lines() -> None:
    assert ansi_to_html(b"\x1b[31ma\nb") == (
        '<span class="ansi-red-fg">a</span>\n<span class="ansi-red-fg">b</span>'
    )


def test_html_overwrite_keeps_styles_per_column() -> None:
    markup = ansi_to_html(b"\x1b[31mabcdef\r\x1b[32mXY")
    assert markup == '<span class="ansi-green-fg">XY</span><span class="ansi-red-fg">cdef</span>'


@pytest.mark.parametrize(
    "payload",
    [
        b"<script>alert(1)</script>",
        b'" onmouseover="alert(1)',
        b"' onerror='x",
        b"&amp; &lt; &#x3C;",
    ],
)
def test_html_escapes_terminal_bytes(payload: bytes) -> None:
    for data in (payload, b"\x1b[31m" + payload, b"\x1b[38;2;1;2;3m" + payload):
        markup = ansi_to_html(data)
        assert _html_text(markup) == payload.decode()
        stripped = re.sub(r"<span[^>]*>|</span>", "", markup)
        assert "<" not in stripped
        assert '"' not in stripped
        assert "'" not in stripped
        assert "&amp;" not in payload.decode() or "&amp;amp;" in markup
