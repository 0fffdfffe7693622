"""The one static transcript of a terminal (``text/plain`` and ``text/html``, no kernel needed).

A terminal's saved form reads the same whether a turn's transcript (``_turn``) or a
:class:`TerminalWidget` shown on its own renders it: :func:`terminal_transcript` lays out the
header (command, directory, the exit label of ``_connection._exit``), the end of the output
and the exit label again as a last line. The output is converted by the state layer's ANSI
converter (colours as ``ansi-*`` spans, ``\\r`` redraws applied), at most its last
``STATIC_TERMINAL_BYTES`` (:func:`render_tail`).

A static terminal is saved into the notebook, so only its end is kept: :func:`cap_tail` cuts
the text and the HTML to the same last lines (at most ``STATIC_LINES`` of them, at most
``STATIC_BYTES`` of UTF-8 each) behind one deterministic line that says how many were left out.
"""

from __future__ import annotations

import html
from collections.abc import Callable

from .._protocol._visible import visible_text
from .._state import TerminalState, ansi_to_html, ansi_to_text

#: ``(text, html)`` of the end of a terminal's bytes: the HTML is the inside of a ``<pre>``.
StaticRenderer = Callable[[bytes], tuple[str, str]]

#: A static terminal keeps at most this many lines ...
STATIC_LINES = 200
#: ... and at most this many bytes (UTF-8) of text, and of HTML.
STATIC_BYTES = 16 * 1024
#: What :func:`cap_tail`'s note says keeps the lines it leaves out.
#: (labextension/src/terminal.ts's SCROLLBACK: the lines a live view keeps above its screen;
#: the note must not promise more, issue 25, finding 14)
LIVE_SCROLLBACK_LINES = 10_000
LIVE_KEEPS = f"the live view scrolls back {LIVE_SCROLLBACK_LINES:,} lines"


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


#: Static transcripts convert at most this many bytes of a terminal's end (then keep its last
#: lines: :func:`cap_tail`).
STATIC_TERMINAL_BYTES = 256 * 1024
#: The saved terminal text: monospace at a normal line height, inline (an nbconvert page loads
#: none of this package's CSS and styles a bare ``<pre>`` with its own font and line height).
TERMINAL_PRE_STYLE = (
    "font-family:var(--jp-code-font-family,monospace);font-size:var(--jp-code-font-size,13px);"
    "line-height:1.3;white-space:pre;overflow-x:auto;margin:2px 0;padding:4px 6px;"
    "background:var(--jp-layout-color2,#f6f6f6);color:var(--jp-content-font-color1,#111);"
    "border:none;border-radius:2px"
)


def render_tail(
    data: bytes, *, keeps: str = LIVE_KEEPS, max_bytes: int = STATIC_TERMINAL_BYTES
) -> tuple[str, str]:
    """The end of ``data`` as ``(text, html)``, colours kept: at most its last ``max_bytes``
    are converted (from a line start; the lines before them are counted), then
    :func:`cap_tail` keeps the last lines."""
    earlier = 0
    if len(data) > max_bytes:
        start = len(data) - max_bytes
        cut = data.find(b"\n", start - 1, len(data) - 1)
        if cut >= 0:
            start = cut + 1
        earlier = data.count(b"\n", 0, start)
        data = data[start:]
    return cap_tail(ansi_to_text(data), ansi_to_html(data), earlier=earlier, keeps=keeps)


def render_state_tail(
    term: TerminalState, *, keeps: str = LIVE_KEEPS, max_bytes: int = STATIC_TERMINAL_BYTES
) -> tuple[str, str]:
    """:func:`render_tail` of ``term.data``, without copying the kept bytes whole
    (``TerminalState.tail``), and converted once per change of the terminal: a transcript's
    text and its HTML, and the saved record's every snapshot while the output has not moved,
    share one conversion."""
    key = (term.generation, term.omitted_bytes, term.total_bytes, keeps, max_bytes)
    kept = term.rendered
    if kept is not None and kept[0] == key:
        return kept[1]
    earlier, data = term.tail(max_bytes)
    rendered = cap_tail(ansi_to_text(data), ansi_to_html(data), earlier=earlier, keeps=keeps)
    term.rendered = (key, rendered)
    return rendered


def omitted_note(omitted_bytes: int) -> str:
    """The line that says how many bytes of a terminal were dropped before those it kept."""
    return f"[… {omitted_bytes} bytes omitted …]"


def terminal_transcript(
    *,
    command: str | None,
    cwd: str | None,
    exit_label: str,
    body: tuple[str, str] | None,
    omitted_bytes: int = 0,
    note: str = "",
    said_by: str = "agent",
) -> tuple[str, str]:
    """Deterministic ``(text, html)`` of one terminal: a header (``$ command``, the directory,
    the exit label as a badge), then ``body`` (the end of its output, as :func:`render_tail`
    gives it; None: no output part at all, as for a terminal only listed), then the exit label.

    ``omitted_bytes`` were dropped before the body (a memory bound): a first line says so.
    ``note``: the agent's words about a command that did not run, a line under the header
    (``said_by`` names who says it in the text: ``agent``, or ``note`` for our own).
    Agent text (command, directory) shows hidden characters visibly; all of it is escaped.
    """
    label = visible_text(exit_label)
    head = "$" if command is None else f"$ {visible_text(command)}"
    lines = [f"{head}  (in {visible_text(cwd)})" if cwd else head]
    body_text, body_html = body if body is not None else ("", "")
    said = visible_text(note, multiline=True).strip()
    if body is not None and omitted_bytes:
        dropped = omitted_note(omitted_bytes)
        body_text = f"{dropped}\n{body_text}"
        body_html = f'<span class="acp-omitted">{html.escape(dropped)}</span>\n{body_html}'
    if said:
        lines.append(f"{said_by}: {said}")
    if body_text.strip():
        lines.append(body_text.rstrip("\n"))
    lines.append(f"[{label}]")
    header = ['<div class="acp-terminal-header">']
    if command is not None:
        header.append(f"<code>{html.escape(head)}</code> ")
    if cwd:
        header.append(f"in <code>{html.escape(visible_text(cwd))}</code> ")
    header.append(f'<span class="acp-badge">{html.escape(label)}</span></div>')
    if said:
        header.append(f'<div class="acp-terminal-note">{html.escape(said)}</div>')
    pre = (
        f'<pre class="acp-terminal-body" style="{TERMINAL_PRE_STYLE}">{body_html}</pre>'
        if body is not None
        else ""
    )
    return "\n".join(lines), f'<div class="acp-terminal">{"".join(header)}{pre}</div>'
