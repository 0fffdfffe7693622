"""acp_notebook._widgets._markdown: agent Markdown to safe HTML (raw HTML escaped, only safe
links, images never loaded)."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


# -- math (issue 25, finding 22) -----------------------------------------------------------------


class _Tags(HTMLParser):
    """Every element and attribute name in a piece of HTML, with the attributes' values."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attributes: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attributes += [(name, value or "") for name, value in attrs]


def _tags(html: str) -> _Tags:
    parser = _Tags()
    parser.feed(html)
    return parser


def test_inline_and_block_math_become_mathml() -> None:
    inline = render_markdown("The area is $\\pi r^2$.")
    assert inline.startswith('<p>The area is <math display="inline">')
    assert "<msup><mi>r</mi><mn>2</mn></msup>" in inline and "$" not in inline
    block = render_markdown("$$\n\\frac{a}{b}\n$$")
    assert '<div class="acp-math"><math display="block">' in block and "<mfrac>" in block
    # $$...$$ inside a line is display math too, as JupyterLab shows it
    assert '<math display="block">' in render_markdown("so $$x$$ holds")


@pytest.mark.parametrize(
    "text",
    ["costs $5 to $10", "a $ b $ c", "echo `$x$`", "```\n$x^2$\n```", "price: $$5"],
)
def test_dollars_that_are_not_math_stay_text(text: str) -> None:
    html = render_markdown(text)
    assert "<math" not in html
    assert "$" in html


def test_tex_that_cannot_be_read_stays_as_code() -> None:
    html = render_markdown("see $\\begin{bad$ here")
    assert '<code class="acp-math-source">\\begin{bad</code>' in html and "<math" not in html


@pytest.mark.parametrize(
    "tex",
    [
        "\\href{javascript:alert(1)}{x}",
        "\\href{https://example.org}{x}",
        "\\class{acp-card}{x}",
        "\\style{position:fixed;inset:0}{x}",
        "\\cssId{panel}{x}",
        "\\text{<img src=x onerror=alert(1)>}",
        "\\text{<script>alert(1)</script>}",
        "\\text{<a href=javascript:alert(1)>x</a>}",
        "\\mathrm{<svg onload=alert(1)>}",
        "\\operatorname{<iframe src=//evil>}",
        "\\unicode{x202E}",
        "</math><img src=x onerror=alert(1)>",
        "\\begin{array}{c}<b>x</b>\\end{array}",
    ],
)
def test_math_from_agent_text_carries_no_link_class_style_or_markup(tex: str) -> None:
    html = render_markdown(f"see ${tex}$ and\n\n$$\n{tex}\n$$\n")
    found = _tags(html)
    assert found.tags <= MATH_ELEMENTS | {"p", "div", "code"}, found.tags
    names = {name for name, _ in found.attributes}
    assert names <= MATH_LAYOUT | {"class"}, names
    assert {value for name, value in found.attributes if name == "class"} <= {
        "acp-math",
        "acp-math-source",
    }
    assert not any("javascript" in value or "evil" in value for _, value in found.attributes)


MATH_ELEMENTS = frozenset(
    [
        "math",
        "mrow",
        "mi",
        "mn",
        "mo",
        "ms",
        "mtext",
        "mspace",
        "msup",
        "msub",
        "msubsup",
        "mfrac",
        "msqrt",
        "mroot",
        "mover",
        "munder",
        "munderover",
        "mmultiscripts",
        "mprescripts",
        "none",
        "mtable",
        "mtr",
        "mtd",
        "mstyle",
        "mpadded",
        "mphantom",
        "menclose",
        "merror",
        "semantics",
    ]
)
MATH_LAYOUT = frozenset(
    [
        "display",
        "displaystyle",
        "scriptlevel",
        "mathvariant",
        "stretchy",
        "fence",
        "separator",
        "lspace",
        "rspace",
        "accent",
        "accentunder",
        "movablelimits",
        "largeop",
        "symmetric",
        "form",
        "minsize",
        "maxsize",
        "linethickness",
        "notation",
        "width",
        "height",
        "depth",
        "voffset",
        "columnalign",
        "rowalign",
        "columnlines",
        "rowlines",
        "columnspacing",
        "rowspacing",
        "frame",
        "framespacing",
        "align",
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from([*"$\\{}<>&\"'=/ abx^_:;()[]\n`", "href", "class", "text", "script"]),
        max_size=40,
    ).map("".join)
)
def test_any_text_with_dollars_renders_only_known_elements(text: str) -> None:
    found = _tags(render_markdown(text))
    markdown = {"p", "code", "pre", "em", "strong", "a", "br", "hr", "ul", "ol", "li", "h1",
                "h2", "h3", "h4", "h5", "h6", "blockquote", "div", "table", "thead", "tbody", "tr",
                "th", "td"}  # fmt: skip
    assert found.tags <= MATH_ELEMENTS | markdown, (text, found.tags)
    for name, value in found.attributes:
        assert not name.startswith("on") and name not in {"style", "id", "src"}, (text, name)
        if name == "href":
            assert safe_link(value), (text, value)


def test_math_that_would_make_a_hidden_character_stays_as_code() -> None:
    # \unicode makes the character after the agent's text was made visible: it would act
    for tex in ("\\unicode{x202E}abc", "\\unicode{x1B}[31m"):
        html = render_markdown(f"see ${tex}$")
        assert "<math" not in html and "acp-math-source" in html, html
        assert "\u202e" not in html and "\x1b" not in html


def test_math_cannot_move_over_what_is_around_it() -> None:
    for tex in (
        "\\kern-1000em x",
        "\\hspace{-50em} x",
        "\\mathllap{Approved}",
        "\\hspace{9999999999999em}",
    ):
        found = _tags(render_markdown(f"${tex}$"))
        for name, value in found.attributes:
            if name in {"width", "lspace", "rspace", "height", "depth", "voffset"}:
                assert not value.startswith("-") and len(value) <= 12, (tex, name, value)
    # ordinary spacing stays
    assert 'width="1em"' in render_markdown("$a\\quad b$")


@pytest.mark.timeout(20)
def test_macro_definitions_and_long_tex_stay_as_code() -> None:
    for tex in (
        "\\def\\f#1{\\f{#1#1}}\\f{x}",
        "\\newcommand{\\f}[1]{\\f{#1#1}}\\f{x}",
        "x+" * 1500,
    ):
        html = render_markdown(f"${tex}$")
        assert "<math" not in html and "acp-math-source" in html


def test_a_code_fence_names_no_class() -> None:
    assert render_markdown("```acp-card\nx\n```") == "<pre><code>x\n</code></pre>\n"
