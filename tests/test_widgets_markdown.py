"""acp_notebook._widgets._markdown: agent Markdown to safe HTML (raw HTML escaped, only safe
links, images never loaded)."""

from __future__ import annotations

import pytest

from acp_notebook._widgets._markdown import render_markdown, safe_link

# -- moved from tests/test_widgets_turn.py (unchanged) -----------------------------------------


def test_markdown_escapes_html_and_refuses_dangerous_links() -> None:
    html = render_markdown("**hi** <script>alert(1)</script> [x](javascript:alert(1))")
    assert "<strong>hi</strong>" in html
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "<a" not in html and "[x](javascript:alert(1))" in html
    for url in ("JaVaScript:alert(1)", "java\tscript:alert(1)", "data:text/html,x", "vbscript:x"):
        assert "<a" not in render_markdown(f"[x]({url})"), url
    link = render_markdown("[ok](https://example.org/a?b=1&c=2)")
    assert 'href="https://example.org/a?b=1&amp;c=2"' in link and 'rel="noopener' in link
    assert '<a href="src/a.py"' in render_markdown("[file](src/a.py)")
    image = render_markdown("![chart](https://example.org/c.png)")
    assert "<img" not in image and "[image: chart]" in image  # never fetched by itself


def test_markdown_tables_render_and_stay_escaped() -> None:
    html = render_markdown("| a | <b>b</b> |\n|---|--:|\n| 1 | [x](javascript:alert(1)) |\n")
    assert "<table>" in html and "<td>1</td>" in html
    assert "&lt;b&gt;b&lt;/b&gt;" in html and "<b>" not in html
    assert "javascript:" not in html.replace("[x](javascript:alert(1))", "")
    assert 'style="text-align:right"' in html


# -- safe_link --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "https://x.org",
        "HTTPS://x.org",
        "http://x",
        "mailto:a@b.org",
        "src/a.py",
        "a/b:c",
        "#top",
        "?q=1",
        "//host/p",
        "",
    ],
)
def test_safe_links(url: str) -> None:
    assert safe_link(url)


@pytest.mark.parametrize(
    "url",
    [
        "x:y",
        "file:///etc/passwd",
        "c:/x",
        "data:text/html,x",
        "java\u200bscript:x",
        "\x01javascript:x",
        "java\nscript:x",
        "ja\ufeffvascript:x",
    ],
)
def test_unsafe_links(url: str) -> None:
    assert not safe_link(url)


def test_a_scheme_is_read_as_a_browser_reads_it_without_invisible_characters() -> None:
    # browsers drop control and invisible characters inside a scheme: this is https
    assert safe_link("ht\ttps://example.org")
    assert safe_link("ht\u200btps://example.org")
    assert not safe_link("java\tscript:alert(1)")


# -- render_markdown --------------------------------------------------------------------------


def test_a_block_of_raw_html_is_escaped() -> None:
    assert render_markdown("a\n\n<div onclick=x>y</div>") == (
        "<p>a</p>\n<p>&lt;div onclick=x&gt;y&lt;/div&gt;</p>\n"
    )


def test_autolinks_follow_the_same_rule() -> None:
    assert '<a href="https://e.org" target="_blank"' in render_markdown("<https://e.org>")
    assert "<a" not in render_markdown("<javascript:alert(1)>")


def test_reference_links_and_images_follow_the_same_rule() -> None:
    assert "<a" not in render_markdown("[r]: javascript:alert(1)\n\n[x][r]")
    assert "<a" not in render_markdown("![x](javascript:alert(1))")


def test_links_open_apart_and_keep_their_title() -> None:
    html = render_markdown('[x](https://e.org "t")')
    assert html == (
        '<p><a href="https://e.org" title="t" target="_blank" '
        'rel="noopener noreferrer nofollow">x</a></p>\n'
    )


def test_an_image_is_a_link_with_its_alt_text_escaped() -> None:
    html = render_markdown('![a"b<c](https://e/x"y.png)')
    assert "<img" not in html
    assert 'href="https://e/x%22y.png"' in html
    assert "[image: a&quot;b&lt;c]" in html
    assert 'class="acp-md-image"' in html
    assert ">[image]</a>" in render_markdown("![](https://e/c.png)")
