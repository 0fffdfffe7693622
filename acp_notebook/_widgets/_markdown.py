"""Agent Markdown to safe HTML, rendered in the kernel with markdown-it-py.

Agent text is untrusted. The CommonMark preset runs with ``html`` off, so raw HTML in the
text is escaped, never passed through. Links keep only an allow-listed scheme (``http``,
``https``, ``mailto``) or none at all (a relative path); anything else (``javascript:``,
``data:``, ``vbscript:``, ``file:`` ...) stays literal text. Images are never loaded: an image
becomes a link to its source, so agent text cannot make the browser fetch a URL by itself.
GitHub-style tables are on (their cells are inline Markdown, escaped the same way).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from html import escape
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

__all__ = ["render_markdown", "safe_link"]

_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*):")
_ALLOWED_SCHEMES = frozenset({"http", "https", "mailto"})
_INVISIBLE = re.compile(r"[\x00-\x20\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]")


def safe_link(url: str) -> bool:
    """True for an allow-listed scheme or a scheme-less (relative) URL."""
    # Browsers ignore control and invisible characters inside a scheme ("java\tscript:").
    compact = _INVISIBLE.sub("", url)
    match = _SCHEME.match(compact)
    if match is None:
        return ":" not in compact.split("/", 1)[0]
    return match.group(1).lower() in _ALLOWED_SCHEMES


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


@functools.cache
def _renderer() -> MarkdownIt:
    """The one renderer, made on first use: markdown-it is imported when the first message
    shows, not by ``%load_ext``."""
    from markdown_it import MarkdownIt

    class _SafeMarkdown(MarkdownIt):
        def validateLink(self, url: str) -> bool:
            return safe_link(url)

    md = _SafeMarkdown("commonmark", {"html": False}).enable("table")
    md.add_render_rule("link_open", _link_open)
    md.add_render_rule("image", _image)
    return md


def render_markdown(text: str) -> str:
    """HTML for agent Markdown; raw HTML escaped, unsafe links left as text."""
    html: str = _renderer().render(text)
    return html
