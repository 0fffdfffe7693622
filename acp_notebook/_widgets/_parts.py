"""HTML and plain-text pieces shared by the turn view and the permission card.

Every string that came from the agent is escaped here (``html.escape`` with quotes), or goes
through :func:`render_markdown`. Every string shown as text has its control characters and bidi
overrides made visible first (``_protocol._visible``), in the HTML and in the plain text alike:
Jupyter front ends read ESC in ``text/plain`` as an ANSI colour code, and an RLO reorders what
follows it. The plain-text forms are deterministic: no ids the agent made up at random, no
addresses, no times.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from collections.abc import Callable, Iterable
from html import escape
from typing import Any

from .._protocol import (
    ContentToolCallContent,
    DiffToolCallContent,
    ResourceLink,
    TerminalToolCallContent,
    TextContent,
)
from .._protocol._visible import visible_text
from .._state import DiffBudget, DiffView, PlanState, build_diff, diff_html
from ._markdown import render_markdown, safe_link

__all__ = [
    "NO_MATH",
    "STYLE",
    "block_html",
    "content_html",
    "content_text",
    "e",
    "generic_html",
    "generic_text",
    "plan_html",
    "plan_text",
    "raw_output_text",
    "tool_call_header_html",
    "tool_call_header_text",
    "visible",
    "visible_lines",
    "visible_prose",
    "wire",
]

STYLE = (
    """<style>
.acp-turn-prompt{border-left:3px solid #888;padding:2px 8px;margin:4px 0;white-space:pre-wrap;
font-family:var(--jp-code-font-family,monospace)}
.acp-badge{display:inline-block;padding:0 6px;border-radius:8px;font-size:85%;
background:#eee;color:#333;margin-left:4px}
.acp-status-pending{background:#eee}.acp-status-in_progress{background:#dbeafe;color:#1e3a8a}
.acp-status-completed{background:#dcfce7;color:#14532d}.acp-status-failed{background:#fee2e2;color:#7f1d1d}
.acp-status-cancelled{background:#fef3c7;color:#78350f}
.acp-tool-call-title{font-weight:600}
.acp-diff-add{color:#14532d;background:#dcfce7}.acp-diff-del{color:#7f1d1d;background:#fee2e2}
.acp-diff-hunk{color:var(--jp-content-link-color,#1e40af);font-weight:600}.acp-diff-note{color:#6b7280;font-style:italic}
.acp-diff-fold .acp-diff-file-header{display:none}
.acp-diff-big>.acp-diff{max-height:24em;overflow:auto}
.acp-prompt-more>summary{cursor:pointer;color:var(--jp-ui-font-color2,#666);font-family:var(--jp-ui-font-family,sans-serif)}
.acp-diff-body,.acp-generic,.acp-tool-call-text{margin:2px 0;padding:4px;overflow-x:auto;
background:var(--jp-layout-color2,#f6f6f6)}
.acp-turn pre.acp-diff-body,.acp-turn pre.acp-generic,.acp-turn pre.acp-tool-call-text,
.acp-card pre.acp-diff-body,.acp-card pre.acp-generic,.acp-card pre.acp-tool-call-text{
font-family:var(--jp-code-font-family,monospace);font-size:var(--jp-code-font-size,13px);
line-height:1.3}
.acp-card{border:1px solid #d97706;border-radius:4px;padding:4px 8px;margin:4px 0}
.acp-card-command{font-family:var(--jp-code-font-family,monospace);white-space:pre-wrap;
overflow-wrap:anywhere;background:var(--jp-layout-color2,#f6f6f6);padding:2px 4px}
.acp-card-warning{color:#b91c1c;font-weight:600}
.acp-card-option{align-items:center;margin-right:10px}
.acp-kind-badge.acp-kind-allow{background:#dcfce7;color:#14532d}
.acp-kind-badge.acp-kind-reject{background:#fee2e2;color:#7f1d1d}
.acp-kind-badge.acp-kind-always{font-weight:700;box-shadow:inset 0 0 0 1px currentColor}
.acp-kind-badge.acp-kind-unknown{font-style:italic}
.jupyter-button.acp-kind-always{box-shadow:0 0 0 2px #f59e0b}
.acp-footer{color:var(--jp-ui-font-color2,#555);font-size:90%}
.acp-spinner{display:inline-block;width:0.8em;height:0.8em;margin-right:4px;vertical-align:-1px;
border:2px solid currentColor;border-right-color:transparent;border-radius:50%;
animation:acp-spin 0.9s linear infinite}
@keyframes acp-spin{to{transform:rotate(360deg)}}
@media (prefers-reduced-motion:reduce){.acp-spinner{animation:none}}
.acp-message table{border-collapse:collapse;margin:4px 0}
.acp-message th,.acp-message td{border:1px solid var(--jp-border-color1,#bbb);padding:2px 8px}
.acp-message th{background:var(--jp-layout-color2,#f3f3f3)}
.acp-ids>summary{color:var(--jp-ui-font-color2,#666);font-size:85%;cursor:pointer}
.acp-turn .widget-html>.widget-html-content,.acp-card .widget-html>.widget-html-content{
line-height:1.4}
.acp-turn-static .acp-terminal-header{display:block}
"""
    + (
        # Terminal colours in the static transcript (JupyterLab only colours ``ansi-*`` spans inside
        # its own text outputs, and a saved notebook should still show a red FAILED as red).
        "".join(
            f".acp-turn-static .ansi-{name}-fg{{color:{normal}}}"
            f".acp-turn-static .ansi-{name}-bg{{background:{normal}}}"
            f".acp-turn-static .ansi-{name}-intense-fg{{color:{intense}}}"
            f".acp-turn-static .ansi-{name}-intense-bg{{background:{intense}}}\n"
            for name, normal, intense in (
                ("black", "#3e424d", "#282c36"),
                ("red", "#e75c58", "#b22b31"),
                ("green", "#00a250", "#007427"),
                ("yellow", "#ddb62b", "#b27d12"),
                ("blue", "#208ffb", "#0065ca"),
                ("magenta", "#d160c4", "#a03196"),
                ("cyan", "#60c6c8", "#258f8f"),
                ("white", "#c5c1b4", "#a1a6b2"),
            )
        )
        + ".acp-turn-static .ansi-bold{font-weight:bold}"
        ".acp-turn-static .ansi-underline{text-decoration:underline}\n"
        "</style>"
    )
)
#: A diff shows at most this many lines (hunk headers included), on a card, in the turn view
#: and in the saved notebook; the rest is counted ("N more lines"). One 60 MB diff put 86 MB of
#: HTML into a saved notebook; a person reviews a few hundred lines, the file holds the rest.
DIFF_SHOWN_LINES = 500
#: A file's diff with more lines than this starts folded (its summary says ``+N -M``), and
#: opened it scrolls in a box: the card under it stays within a screen.
DIFF_OPEN_LINES = 40
#: ... and at most this many characters of them (a line past it is cut with "…").
DIFF_SHOWN_CHARS = 60_000
#: Only this many characters of a patch's text are parsed; the lines of the rest are counted
#: (at C speed) for the "N more lines" note. Far more than `DIFF_SHOWN_CHARS` can show.
DIFF_PARSED_CHARS = 1_000_000

#: Classes that keep MathJax (JupyterLab: v3, nbconvert/classic: v2) from typesetting ``$...$``.
NO_MATH = "mathjax_ignore tex2jax_ignore"

_STATUS_ICON = {"pending": "○", "in_progress": "◐", "completed": "●", "cancelled": "⊘"}
_TOOL_STATUS_ICON = {"pending": "○", "in_progress": "◐", "completed": "✔", "failed": "✖"}


def e(text: str) -> str:
    """HTML-escape, quotes included."""
    return escape(text, quote=True)


def css(value: str) -> str:
    return "".join(c if c.isalnum() or c in "_-" else "-" for c in value.lower())


def visible(text: str) -> str:
    """Agent text for a one-line label: control and bidi characters made visible."""
    return visible_text(text)


def visible_lines(text: str) -> str:
    """Multi-line text (a prompt, a JSON dump): as :func:`visible`, newlines and tabs kept."""
    return visible_text(text, multiline=True)


def visible_prose(text: str) -> str:
    """Agent Markdown: as :func:`visible_lines`, joiners and LRM/RLM kept (see ``_visible``)."""
    return visible_text(text, prose=True)


def wire(model: Any) -> Any:
    """The wire form of a model (unknown variants give their raw payload back)."""
    to_wire = getattr(model, "to_wire", None)
    return to_wire() if callable(to_wire) else model


def generic_text(payload: Any) -> str:
    """Indented JSON; hidden characters in it (JSON leaves U+202E and friends raw) made visible."""
    dumped = json.dumps(payload, indent=2, sort_keys=True, default=str, ensure_ascii=False)
    return visible_lines(dumped)


#: The keys a tool call's ``rawOutput`` object holds its text under, in the order read (Cline,
#: pydantic-acp and others send results only there, with no ``content``).
RAW_OUTPUT_KEYS = ("output", "stdout", "formatted_output", "aggregated_output", "result", "text")

#: At most this many characters of a ``rawOutput`` text are shown (the rest is counted).
RAW_OUTPUT_CHARS = 20_000


def raw_output_text(payload: Any) -> str | None:
    """The text of a tool call's ``rawOutput``: a string, a text field of an object (see
    `RAW_OUTPUT_KEYS`; a non-empty ``stderr`` follows), or a list of text blocks. None when
    it holds none (it is then shown only as JSON). Cut to `RAW_OUTPUT_CHARS`, saying so."""
    text: str | None = None
    if isinstance(payload, str):
        text = payload
    elif isinstance(payload, dict):
        text = next(
            (v for k in RAW_OUTPUT_KEYS if isinstance(v := payload.get(k), str) and v.strip()),
            None,
        )
        stderr = payload.get("stderr")
        if isinstance(stderr, str) and stderr.strip():
            text = stderr if text is None else f"{text.rstrip()}\n{stderr}"
    elif isinstance(payload, list) and payload:
        blocks = [b.get("text") for b in payload if isinstance(b, dict)]
        if all(isinstance(t, str) for t in blocks) and len(blocks) == len(payload):
            text = "\n".join(t for t in blocks if isinstance(t, str))
    if text is None or not text.strip():
        return None
    if len(text) > RAW_OUTPUT_CHARS:
        more = len(text) - RAW_OUTPUT_CHARS
        text = f"{text[:RAW_OUTPUT_CHARS]}\n… ({more:,} more characters of output)"
    return text


def generic_html(payload: Any, summary: str | None = None) -> str:
    body = f'<pre class="acp-generic">{e(generic_text(payload))}</pre>'
    if summary is None:
        return body
    return f"<details><summary>{e(visible(summary))}</summary>{body}</details>"


def _kind(payload: Any) -> str:
    """The ``type`` tag of an unknown payload, for a label."""
    return str(payload.get("type", "?")) if isinstance(payload, dict) else "?"


# -- content blocks ----------------------------------------------------------------------------


def block_html(block: Any) -> str:
    """A message content block: text as Markdown, links as safe links, anything else summed up."""
    if isinstance(block, TextContent):
        return render_markdown(block.text)
    if isinstance(block, ResourceLink):
        label = e(visible(block.title or block.name))
        if safe_link(block.uri):
            return (
                f'<p><a href="{e(block.uri)}" target="_blank" rel="noopener noreferrer nofollow">'
                f"{label}</a></p>"
            )
        return f"<p>{label} <code>{e(visible(block.uri))}</code></p>"
    payload = wire(block)
    kind = _kind(payload)
    if kind in ("image", "audio") and isinstance(payload, dict):
        return f"<p><em>[{e(kind)} {e(visible(str(payload.get('mimeType', ''))))}]</em></p>"
    return generic_html(payload, f"[{kind} content]")


# -- tool calls -------------------------------------------------------------------------------


def _location_text(loc: Any) -> str:
    payload = wire(loc)
    if not isinstance(payload, dict):
        return visible(str(payload))
    path = str(payload.get("path", "?"))
    line = payload.get("line")
    return visible(f"{path}:{line}" if line is not None else path)


_MCP_NAME = re.compile(r"^mcp__([A-Za-z0-9_-]+?)__([A-Za-z0-9_.-]+)$")


def tool_title(title: str) -> str:
    """A tool's name in words: ``mcp__notebook__run_code`` (how Claude names an MCP server's
    tool) reads ``run_code (MCP server "notebook")``; anything else as it is."""
    match = _MCP_NAME.match(title)
    return f'{match[2]} (MCP server "{match[1]}")' if match else title


#: A tool call's ``kind`` in words where the protocol's name is jargon; "other" says nothing
#: (no badge). Kinds not listed (read, edit, delete, move, search, unknown ones) show as sent.
TOOL_KIND_WORDS = {
    "execute": "command",
    "think": "thinking",
    "fetch": "web fetch",
    "switch_mode": "mode change",
    "other": "",
}


def tool_kind_words(kind: str | None) -> str:
    """What a tool call's header says of its ``kind`` ("" for none, or for "other")."""
    if not kind:
        return ""
    return TOOL_KIND_WORDS.get(kind, visible(kind))


def status_words(status: str | None) -> str:
    """A tool call's status as a header says it: ``in_progress`` reads "in progress"."""
    return visible(status or "pending").replace("_", " ")


def tool_call_header_html(
    title: str | None,
    kind: str | None,
    status: str | None,
    locations: Iterable[Any],
    *,
    with_status: bool = True,
    with_title: bool = True,
) -> str:
    """The header line of a tool call. ``with_status=False``: no status icon or badge (a
    permission request's copy of a call is a snapshot: its status says nothing now).
    ``with_title=False``: no title (a terminal below shows the same command)."""
    status = status or "pending"
    parts = ['<div class="acp-tool-call-header">']
    if with_status:
        parts.append(f"{_TOOL_STATUS_ICON.get(status, '•')} ")
    if with_title:
        shown = tool_title(visible(title or "tool call"))
        parts.append(f'<span class="acp-tool-call-title">{e(shown)}</span>')
    said = tool_kind_words(kind)
    if said:
        parts.append(
            f' <span class="acp-badge acp-tool-kind" title="tool kind: {e(visible(kind or ""))}">'
            f"{e(said)}</span>"
        )
    if with_status:
        parts.append(
            f' <span class="acp-badge acp-status-{css(status)}">{e(status_words(status))}</span>'
        )
    locs = [_location_text(loc) for loc in locations]
    if locs:
        parts.append(
            '<div class="acp-tool-call-locations">'
            + ", ".join(f"<code>{e(loc)}</code>" for loc in locs)
            + "</div>"
        )
    parts.append("</div>")
    return "".join(parts)


def tool_call_header_text(
    title: str | None,
    kind: str | None,
    status: str | None,
    locations: Iterable[Any],
    *,
    with_status: bool = True,
    with_title: bool = True,
) -> list[str]:
    """As :func:`tool_call_header_html`, in plain text."""
    line = f"Tool call: {tool_title(visible(title or 'tool call'))}" if with_title else "Tool call"
    said = tool_kind_words(kind)
    if said:
        line += f" [{said}]"
    if with_status:
        line += f" - {status_words(status)}"
    lines = [line]
    locs = [_location_text(loc) for loc in locations]
    if locs:
        lines.append("  at " + ", ".join(locs))
    return lines


def _diff_stats(view: DiffView, index: int, cut: bool = False) -> str:
    entry = view.entries[index]
    if entry.file is None:
        return ""
    added = sum(1 for h in entry.file.hunks for ln in h.lines if ln.kind == "add")
    removed = sum(1 for h in entry.file.hunks for ln in h.lines if ln.kind == "del")
    if entry.file.binary and not (added or removed):
        return " (binary)"
    return f" (+{added} -{removed}{' in the part read' if cut else ''})"


def _entry_lines(view: DiffView, index: int) -> int:
    file = view.entries[index].file
    return 0 if file is None else sum(len(h.lines) for h in file.hunks)


def _entry_label(view: DiffView, index: int, cut: bool = False) -> str:
    entry = view.entries[index]
    target = entry.path or entry.old_path or "?"
    if entry.operation in ("move", "copy") and entry.old_path:
        target = f"{entry.old_path} -> {entry.path or '?'}"
    label = f"{entry.operation} {target}"
    if entry.file_type and entry.file_type != "text":
        label += f" [{entry.file_type}]"
    return visible(label) + _diff_stats(view, index, cut)


def _cut_patch(text: str) -> tuple[str, int]:
    """At most `DIFF_PARSED_CHARS` of a patch's text (up to a line's end), and how many lines
    of it are left out."""
    if len(text) <= DIFF_PARSED_CHARS:
        return text, 0
    end = text.rfind("\n", 0, DIFF_PARSED_CHARS) + 1  # 0: one long first line, cut in it
    head = text[:end] if end else text[:DIFF_PARSED_CHARS]
    rest = len(text) - len(head)
    left_out = text.count("\n", len(head)) + (0 if text.endswith("\n") else 1)
    return head, left_out if rest else 0


def _diff_view(item: Any) -> tuple[DiffView, int]:
    """The diff of a content item, and how many lines of its patch were not read."""
    payload = wire(item)
    changes = payload.get("changes") if isinstance(payload, dict) else None
    patch = payload.get("patch") if isinstance(payload, dict) else None
    safe_changes = [c for c in changes if isinstance(c, dict)] if isinstance(changes, list) else []
    unread = 0
    if isinstance(patch, dict) and isinstance(patch.get("text"), str):
        text, unread = _cut_patch(patch["text"])
        patch = {**patch, "text": text}
    return build_diff(safe_changes, patch if isinstance(patch, dict) else None), unread


def _more_lines(count: int) -> str:
    word = "line" if count == 1 else "lines"
    return (
        f"… {count:,} more {word} of the diff not shown (a diff shows at most"
        f" {DIFF_SHOWN_LINES} lines, {DIFF_SHOWN_CHARS:,} characters)"
    )


def diff_item_html(item: Any) -> str:
    """One diff content item: each file in its own open ``<details>``, coloured lines; at
    most `DIFF_SHOWN_LINES` lines / `DIFF_SHOWN_CHARS` characters of it, then "N more lines"."""
    view, unread = _diff_view(item)
    budget = DiffBudget(DIFF_SHOWN_LINES, DIFF_SHOWN_CHARS)
    out = ['<div class="acp-diff-files">']
    for index, entry in enumerate(view.entries):
        # The state layer escapes the diff but leaves hidden characters as they are: mark them
        # in the finished markup (its tags are plain ASCII, so only the text can hold any).
        body = visible_lines(diff_html(DiffView((entry,), view.patch_format), budget))
        label = _entry_label(view, index, bool(unread))
        big = _entry_lines(view, index) > DIFF_OPEN_LINES
        state = ' class="acp-diff-fold acp-diff-big"' if big else ' open class="acp-diff-fold"'
        out.append(f"<details{state}><summary><code>{e(label)}</code></summary>{body}</details>")
    if view.extra_files or view.patch_text is not None:
        rest = visible_lines(
            diff_html(DiffView((), view.patch_format, view.patch_text, view.extra_files), budget)
        )
        out.append(f"<details open><summary>more of the patch</summary>{rest}</details>")
    if not view.entries and not view.extra_files and view.patch_text is None:
        out.append('<div class="acp-diff-note">empty diff</div>')
    more = budget.left_out + unread
    if more:
        out.append(f'<div class="acp-diff-note acp-diff-more">{e(_more_lines(more))}</div>')
    out.append("</div>")
    return "".join(out)


def diff_item_text(item: Any) -> list[str]:
    view, unread = _diff_view(item)
    lines = [f"diff: {_entry_label(view, i, bool(unread))}" for i in range(len(view.entries))]
    lines += [f"diff: {visible(f.path)}" for f in view.extra_files]
    if view.patch_text is not None:
        lines.append(f"diff: patch ({visible(view.patch_format or '?')})")
    return lines


def content_html(item: Any, terminal_label: Callable[[str], str] | None = None) -> str:
    """One tool-call content item other than a live terminal."""
    if isinstance(item, DiffToolCallContent):
        return diff_item_html(item)
    if isinstance(item, ContentToolCallContent):
        block = item.content
        if isinstance(block, TextContent):
            return f'<pre class="acp-tool-call-text">{e(visible_lines(block.text))}</pre>'
        return block_html(block)
    if isinstance(item, TerminalToolCallContent):
        label = terminal_label(item.terminal_id) if terminal_label else "terminal"
        return f'<div class="acp-terminal-ref">terminal: <code>{e(label)}</code></div>'
    payload = wire(item)
    if isinstance(payload, dict) and payload.get("type") == "diff":
        return diff_item_html(item)  # a diff whose changes include unknown operations
    return generic_html(payload, f"[{_kind(payload)} content]")


def content_text(item: Any) -> list[str]:
    if isinstance(item, DiffToolCallContent):
        return diff_item_text(item)
    if isinstance(item, ContentToolCallContent):
        block = item.content
        if isinstance(block, TextContent):
            return visible_lines(block.text).splitlines() or [""]
        return [f"[{visible(_kind(wire(block)))} content]"]
    if isinstance(item, TerminalToolCallContent):
        return []  # drawn by the caller
    return [f"[{visible(_kind(wire(item)))} content]"]


# -- plan -------------------------------------------------------------------------------------


def plan_html(plan: PlanState) -> str:
    if plan.raw is not None:
        kind = e(visible(plan.type))
        return f'<div class="acp-plan"><b>Plan</b> ({kind}){generic_html(plan.raw)}</div>'
    rows = []
    for entry in plan.entries:
        status = str(entry.status)
        icon = _STATUS_ICON.get(status, "•")
        rows.append(
            f'<li class="acp-plan-{css(status)}">{icon} {e(visible(entry.content))} '
            f'<span class="acp-badge acp-status-{css(status)}">{e(visible(status))}</span>'
            f'<span class="acp-badge">{e(visible(str(entry.priority)))}</span></li>'
        )
    return (
        '<div class="acp-plan"><b>Plan</b>'
        '<ul style="list-style:none;padding-left:8px;margin:2px 0">' + "".join(rows) + "</ul></div>"
    )


def plan_text(plan: PlanState) -> list[str]:
    if plan.raw is not None:
        return [f"Plan ({visible(plan.type)})"]
    return ["Plan:"] + [
        f"  [{visible(str(entry.status))}] {visible(entry.content)}" for entry in plan.entries
    ]


def set_if_changed(widget: Any, name: str, value: Any) -> None:
    """Set a trait only when it differs, so an unchanged refresh sends no widget message. A
    list is the same as the tuple a trait keeps of it (a Dropdown's ``options``): set again
    each time, a panel left idle sent its options every few seconds."""
    current = getattr(widget, name)
    if isinstance(current, tuple) and isinstance(value, list):
        value = tuple(value)
    if current != value:
        setattr(widget, name, value)


def set_children(box: Any, children: Iterable[Any]) -> None:
    """Replace a container's children only when they are not the same widgets already."""
    new = tuple(children)
    old = tuple(box.children)
    if len(old) != len(new) or any(a is not b for a, b in zip(old, new, strict=True)):
        box.children = new


def start_countdown(
    timeout: float,
    *,
    lock: Any,
    stop: threading.Event,
    status: Any,
    on_expire: Callable[[], None],
    name: str,
) -> threading.Thread:
    """A card's countdown, in a daemon thread: ``status`` (an HTML widget) says when the card
    cancels, at most once a second (under ``lock``), until ``stop`` is set; at zero it calls
    ``on_expire``."""
    deadline = time.monotonic() + max(0.0, timeout)

    def run() -> None:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            seconds = math.ceil(remaining)
            with lock:
                if stop.is_set():
                    return
                status.value = (
                    f'<span class="acp-card-countdown">no answer yet: cancels in {seconds} s</span>'
                )
            # Wake at the next whole second (at most one label update per second).
            if stop.wait(remaining - (seconds - 1)):
                return
        on_expire()

    timer = threading.Thread(target=run, name=name, daemon=True)
    timer.start()
    return timer
