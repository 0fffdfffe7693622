"""Static (kernel-free) rendering of terminal bytes for ``text/plain`` and ``text/html``.

Used as the default ``render_static`` of :class:`TerminalWidget` when the richer converter in
``acp_notebook._state._ansi`` is not available.  Colours are dropped; ``\\r`` and ``\\b`` are
applied per line so a progress bar shows its final state.

Whatever renders it, a static terminal is saved into the notebook, so only its end is kept:
:func:`cap_tail` cuts the text and the HTML to the same last lines (at most ``STATIC_LINES`` of
them, at most ``STATIC_BYTES`` of UTF-8 each) behind one deterministic line that says how many
were left out.
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
#: A static terminal keeps at most this many lines ...
STATIC_LINES = 200
#: ... and at most this many bytes (UTF-8) of text, and of HTML.
STATIC_BYTES = 16 * 1024
#: What :func:`cap_tail`'s note says keeps the lines it leaves out.
LIVE_KEEPS = "the live view keeps them"


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def _cut_line(line: str, max_bytes: int) -> str:
    """The end of one over-long line: at most ``max_bytes`` bytes after a leading ``…``."""
    tail = line[-max_bytes:].encode("utf-8")[-max_bytes:]
    return "…" + tail.decode("utf-8", errors="ignore")


def cap_tail(
    text: str,
    markup: str,
    *,
    earlier: int = 0,
    keeps: str = LIVE_KEEPS,
    max_lines: int = STATIC_LINES,
    max_bytes: int = STATIC_BYTES,
) -> tuple[str, str]:
    """The last lines of a rendered terminal, as ``(text, html)``.

    ``text`` is the plain transcript and ``markup`` its HTML (the inside of a ``<pre>``), line
    for line: the ANSI converters put the same lines in both and no span crosses a line. Both
    keep the same last lines: at most ``max_lines``, and no more than fit in ``max_bytes`` in
    the text and in the HTML (a last line too long by itself keeps its end). ``earlier`` lines
    were cut before this call; when any line is left out, a first line says how many, and that
    ``keeps`` them (trailing blank lines are dropped then). What fits whole comes back as it
    is. Deterministic: the same input, the same output.
    """
    lines = text.rstrip("\n").split("\n")
    total = len(lines)
    rows = markup.split("\n")
    if len(rows) < len(lines):  # not line for line after all: show the text without colours
        rows = [html.escape(line) for line in lines]
    rows = rows[: len(lines)]
    kept = 0
    text_size = html_size = 0
    for line, row in zip(reversed(lines), reversed(rows), strict=True):
        if kept >= max_lines:
            break
        text_size += _utf8_len(line) + 1
        html_size += _utf8_len(row) + 1
        if kept and (text_size > max_bytes or html_size > max_bytes):
            break
        kept += 1
    if kept == total and not earlier and text_size <= max_bytes and html_size <= max_bytes:
        return text, markup
    lines, rows = lines[len(lines) - kept :], rows[len(rows) - kept :]
    if kept == 1 and (_utf8_len(lines[0]) > max_bytes or _utf8_len(rows[0]) > max_bytes):
        lines = [_cut_line(lines[0], max_bytes)]
        rows = [html.escape(lines[0])]  # its colours cannot be cut safely: plain text
    left_out = earlier + total - kept
    if left_out > 0:
        word = "line" if left_out == 1 else "lines"
        note = f"… {left_out:,} earlier {word} not saved in the notebook ({keeps})"
        lines.insert(0, note)
        rows.insert(0, f'<span class="acp-omitted">{html.escape(note)}</span>')
    return "\n".join(lines), "\n".join(rows)


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
    """Default renderer: ``(text/plain, text/html)`` without colours (the end only: cap_tail)."""
    whole = plain_text(data, max_lines=len(data) + 1)
    text, body = cap_tail(whole, html.escape(whole))
    return text, f'<pre class="acp-terminal-static">{body}</pre>'


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
        text, body = cap_tail(text_of(data).rstrip("\n"), html_of(data).rstrip("\n"))
        return text, f'<pre class="acp-terminal-static">{body}</pre>'

    return render
