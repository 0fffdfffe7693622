"""Static (kernel-free) rendering of terminal bytes for ``text/plain`` and ``text/html``.

Used as the default ``render_static`` of :class:`TerminalWidget` when the richer converter in
``acp_notebook._state._ansi`` is not available.  Colours are dropped; ``\\r`` and ``\\b`` are
applied per line so a progress bar shows its final state.
"""

from __future__ import annotations

import html
import importlib
import re
from collections.abc import Callable
from typing import cast

StaticRenderer = Callable[[bytes], tuple[str, str]]

# CSI (ESC [ ... final), OSC (ESC ] ... BEL or ESC \), other two-byte escapes.
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]|\x1b$"
)
_CONTROLS = re.compile(r"[\x00-\x07\x0b\x0c\x0e-\x1f\x7f]")
MAX_LINES = 2000


def _apply_line(line: str) -> str:
    cells: list[str] = []
    cursor = 0
    for char in line:
        if char == "\r":
            cursor = 0
        elif char == "\b":
            cursor = max(0, cursor - 1)
        elif cursor < len(cells):
            cells[cursor] = char
            cursor += 1
        else:
            cells.append(char)
            cursor += 1
    return "".join(cells)


def plain_text(data: bytes, *, max_lines: int = MAX_LINES) -> str:
    """ANSI-free transcript of ``data`` (its last ``max_lines`` lines)."""
    text = _ESCAPES.sub("", data.decode("utf-8", errors="replace"))
    lines = [_CONTROLS.sub("", _apply_line(line)) for line in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    if len(lines) > max_lines:
        dropped = len(lines) - max_lines
        lines = [f"[{dropped} earlier lines omitted]", *lines[-max_lines:]]
    return "\n".join(line.rstrip() for line in lines)


def render_plain(data: bytes) -> tuple[str, str]:
    """Default renderer: ``(text/plain, text/html)`` without colours."""
    text = plain_text(data)
    return text, f'<pre class="acp-terminal-static">{html.escape(text)}</pre>'


def default_renderer() -> StaticRenderer:
    """The state layer's ANSI converter (colours as ``ansi-*`` spans) when present, else
    :func:`render_plain`."""
    try:
        ansi = importlib.import_module("acp_notebook._state._ansi")
    except ImportError:
        return render_plain
    to_text = getattr(ansi, "ansi_to_text", None)
    to_html = getattr(ansi, "ansi_to_html", None)
    if not (callable(to_text) and callable(to_html)):
        return render_plain
    text_of = cast(Callable[[bytes], str], to_text)
    html_of = cast(Callable[[bytes], str], to_html)

    def render(data: bytes) -> tuple[str, str]:
        text = _last_lines(text_of(data).rstrip("\n"), MAX_LINES)
        body = html_of(data).rstrip("\n")
        return text, f'<pre class="acp-terminal-static">{body}</pre>'

    return render


def _last_lines(text: str, max_lines: int) -> str:
    lines = text.split("\n")
    if len(lines) <= max_lines:
        return text
    dropped = len(lines) - max_lines
    return "\n".join([f"[{dropped} earlier lines omitted]", *lines[-max_lines:]])
