"""Agent Markdown to safe HTML, rendered in the kernel with markdown-it-py.

Agent text is untrusted. The CommonMark preset runs with ``html`` off, so raw HTML in the
text is escaped, never passed through. Links keep only an allow-listed scheme (``http``,
``https``, ``mailto``) or none at all (a relative path); anything else (``javascript:``,
``data:``, ``vbscript:``, ``file:`` ...) stays literal text. Images are never loaded: an image
becomes a link to its source, so agent text cannot make the browser fetch a URL by itself.
GitHub-style tables are on (their cells are inline Markdown, escaped the same way).

Math between dollars (``$x^2$`` inline, ``$$...$$`` as a block; a ``$`` next to a space opens
or closes nothing, so "costs $5 to $10" stays text) is turned into MathML in the kernel by
latex2mathml, the way JupyterLab shows math in Markdown but with no script in the browser:
MathJax would also run ``\\href`` and ``\\class`` from agent text. latex2mathml copies some TeX
into attributes and ``\\text{}`` into markup as it is, so its output goes through nh3 with only
MathML presentation elements and layout attributes allowed (no link, class, style or id). TeX
it cannot read stays as code.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence
from html import escape
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

__all__ = ["render_markdown", "safe_link"]

_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*):")
_ALLOWED_SCHEMES = frozenset({"http", "https", "mailto"})
#: MathML presentation elements kept from latex2mathml's output; everything else is dropped.
_MATH_TAGS = frozenset(
    {
        "math", "mrow", "mi", "mn", "mo", "ms", "mtext", "mspace", "msup", "msub", "msubsup",
        "mfrac", "msqrt", "mroot", "mover", "munder", "munderover", "mmultiscripts",
        "mprescripts", "none", "mtable", "mtr", "mtd", "mstyle", "mpadded", "mphantom",
        "menclose", "merror", "semantics",
    }
)  # fmt: skip
#: Layout attributes only: no href (``\\href``), class (``\\class``), style (``\\style``), id.
_MATH_ATTRIBUTES = frozenset(
    {
        "display", "displaystyle", "scriptlevel", "mathvariant", "stretchy", "fence",
        "separator", "lspace", "rspace", "accent", "accentunder", "movablelimits", "largeop",
        "symmetric", "form", "minsize", "maxsize", "linethickness", "notation", "width",
        "height", "depth", "voffset", "columnalign", "rowalign", "columnlines", "rowlines",
        "columnspacing", "rowspacing", "frame", "framespacing", "align",
    }
)  # fmt: skip
_INVISIBLE = re.compile(r"[\x00-\x20\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]")


def safe_link(url: str) -> bool:
    """True for an allow-listed scheme or a scheme-less (relative) URL."""
    # Browsers ignore control and invisible characters inside a scheme ("java\tscript:").
    compact = _INVISIBLE.sub("", url)
    match = _SCHEME.match(compact)
    if match is None:
        return ":" not in compact.split("/", 1)[0]
    return match.group(1).lower() in _ALLOWED_SCHEMES


def _fence(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    tokens[idx].info = ""  # no "language-<info>" class: the agent would choose its name
    return str(self.fence(tokens, idx, options, env))


def _link_open(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    token.attrSet("target", "_blank")
    token.attrSet("rel", "noopener noreferrer nofollow")
    return str(self.renderToken(tokens, idx, options, env))


def _image(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    alt = "".join(child.content for child in token.children or [])
    label = escape(f"[image: {alt}]" if alt else "[image]")
    return (
        f'<a href="{escape(src, quote=True)}" target="_blank" '
        f'rel="noopener noreferrer nofollow" class="acp-md-image">{label}</a>'
    )


#: TeX longer than this stays as code: its MathML is about ten times as long.
MATH_LIMIT = 2000
#: Macro definitions stay as code: latex2mathml expands a macro that doubles its argument
#: until the kernel runs out of memory (``\\def\\f#1{\\f{#1#1}}\\f{x}``).
_DEFINES = re.compile(
    r"\\(?:[egx]?def|let|(?:re)?newcommand|providecommand|(?:re)?newenvironment|Declare\w*)"
    r"(?![a-zA-Z])"
)
#: Layout values that move math over what is around it (negative or huge) are dropped.
_SHIFTS = frozenset({"width", "height", "depth", "lspace", "rspace", "voffset"})


def _layout_only(tag: str, attribute: str, value: str) -> str | None:
    if attribute in _SHIFTS and (value.lstrip().startswith("-") or len(value) > 12):
        return None
    return value


def _shows_hidden(mathml: str) -> bool:
    """True when the MathML's text holds a control or format character (a bidi override from
    ``\\unicode{x202E}``): made after the agent text was made visible, so it would act."""
    text = re.sub(r"<[^>]*>", "", mathml)
    return any(unicodedata.category(c) in ("Cc", "Cf") for c in text if c not in "\n\t")


def math_html(tex: str, *, block: bool) -> str:
    """MathML for ``tex`` (sanitized), or the TeX as code when latex2mathml cannot read it,
    or it is longer than :data:`MATH_LIMIT`, defines a macro or makes a hidden character."""
    import latex2mathml.converter
    import nh3

    source = f'<code class="acp-math-source">{escape(tex)}</code>'
    if len(tex) > MATH_LIMIT or _DEFINES.search(tex):
        return source
    try:
        mathml = latex2mathml.converter.convert(tex, display="block" if block else "inline")
    except Exception:  # latex2mathml raises its own errors, and others on odd input
        return source
    clean = nh3.clean(
        mathml,
        tags=set(_MATH_TAGS),
        attributes={"*": set(_MATH_ATTRIBUTES)},
        attribute_filter=_layout_only,
        strip_comments=True,
        link_rel=None,
    )
    return source if _shows_hidden(clean) else clean


def _math_inline(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    # $$x$$ within a line is display math on its own line, as in JupyterLab
    return math_html(tokens[idx].content, block=tokens[idx].type == "math_inline_double")


def _math_block(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    return f'<div class="acp-math">{math_html(tokens[idx].content, block=True)}</div>\n'


@functools.cache
def _renderer() -> MarkdownIt:
    """The one renderer, made on first use: markdown-it is imported when the first message
    shows, not by ``%load_ext``."""
    from markdown_it import MarkdownIt
    from mdit_py_plugins.dollarmath import dollarmath_plugin

    class _SafeMarkdown(MarkdownIt):
        def validateLink(self, url: str) -> bool:
            return safe_link(url)

    md = _SafeMarkdown("commonmark", {"html": False}).enable("table")
    # no labels: "$$x$$ (eq1)" would give the label an id; a $ beside a space is not math
    md.use(dollarmath_plugin, allow_labels=False, allow_space=False, double_inline=True)
    md.add_render_rule("fence", _fence)
    md.add_render_rule("link_open", _link_open)
    md.add_render_rule("image", _image)
    for kind in ("math_inline", "math_inline_double"):
        md.add_render_rule(kind, _math_inline)
    for kind in ("math_block", "math_block_label"):
        md.add_render_rule(kind, _math_block)
    return md


def render_markdown(text: str) -> str:
    """HTML for agent Markdown; raw HTML escaped, unsafe links left as text."""
    html: str = _renderer().render(text)
    return html
