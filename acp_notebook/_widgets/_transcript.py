"""A turn's static transcript (``text/plain`` and ``text/html``), saved in the notebook: what a
viewer without the widgets shows, deterministic from run to run. ``TurnView.static_text`` and
``static_html`` call it under the view's lock; the helpers here are the live view's too."""

from __future__ import annotations

from typing import Any, Protocol

from .._state import (
    MessageState,
    TerminalPhase,
    TerminalState,
    ToolCallState,
    TurnState,
    terminal_phase,
)
from ._markdown import render_markdown
from ._parts import (
    NO_MATH,
    STYLE,
    block_html,
    content_html,
    content_text,
    e,
    generic_html,
    generic_text,
    plan_html,
    plan_text,
    raw_output_text,
    tool_call_header_html,
    tool_call_header_text,
    visible,
    visible_lines,
    visible_prose,
    wire,
)
from ._static import (
    LIVE_SCROLLBACK_LINES,
    STATIC_TERMINAL_BYTES,
    cap_tail,
    render_state_tail,
    render_tail,
)
from ._static import terminal_transcript as static_terminal_transcript

#: A turn shows at most this many live terminal views on its own; the others are listed (command,
#: exit status) and each opens on demand. Their bytes stay in the turn's state either way (``-o``).
MAX_LIVE_TERMINALS = 32
#: Static transcripts name (command, exit status) at most this many terminals past the ones
#: whose output they keep, then count the rest.
STATIC_LISTED_TERMINALS = 200
#: A turn lists at most this many tool calls (the first ones, in arrival order), live and in the
#: saved notebook; the others are counted on one line ("N more tool calls"), updated in place.
#: Each listed call costs a few widget models and its HTML: 10,000 calls in one turn must not
#: make 30,000 models. The turn's state keeps every call either way (``-o``).
MAX_LISTED_TOOL_CALLS = 300
#: A listed terminal's command is cut to this many characters in a label.
LABEL_COMMAND_CHARS = 200


class Transcribed(Protocol):
    """What a transcript reads of a turn's view (``TurnView``)."""

    turn: TurnState
    prompt_text: str

    def static_items(self) -> list[tuple[str, Any]]: ...

    def unlisted_calls(self) -> int: ...

    def call_cards(self, call_id: str) -> list[Any]: ...

    def terminal_phase(self, term: TerminalState) -> TerminalPhase: ...

    def carried_from(self, term: TerminalState) -> int | None: ...

    def footer_text(self, turn: TurnState) -> str: ...

    def footer_html(self, turn: TurnState) -> str: ...


#: A prompt echo shows this many lines; the rest folds (a 2,000-line prompt must not push the
#: turn 100 screens down) ...
PROMPT_SHOWN_LINES = 8
#: ... and keeps at most this many in all, live and saved: the cell's source has the whole prompt.
PROMPT_KEPT_LINES = 40


def _prompt_parts(prompt: str) -> tuple[list[str], list[str], int]:
    """(the lines shown, the folded lines kept, how many more lines are left out)."""
    lines = visible_lines(prompt).splitlines() or [""]
    if len(lines) <= PROMPT_SHOWN_LINES + 2:  # folding two lines saves nothing
        return lines, [], 0
    kept = lines[PROMPT_SHOWN_LINES:PROMPT_KEPT_LINES]
    return lines[:PROMPT_SHOWN_LINES], kept, len(lines) - PROMPT_SHOWN_LINES - len(kept)


def _prompt_left_out(count: int) -> str:
    return f"… {count:,} more lines: the cell's source holds the whole prompt"


def _prompt_html(prompt: str) -> str:
    shown, folded, left_out = _prompt_parts(prompt)
    body = e("\n".join(shown))
    if folded:
        more = len(folded) + left_out
        rest = "\n".join(folded) + (f"\n{_prompt_left_out(left_out)}" if left_out else "")
        body += (
            f'<details class="acp-prompt-more"><summary>{more:,} more lines of the prompt'
            f"</summary>{e(rest)}</details>"
        )
    return f'<div class="acp-turn-prompt">{body}</div>'


#: How a turn's end reads, by stop reason (any other reason: ``stopped: <reason>``).
STOP_WORDS = {
    "end_turn": "finished",
    "cancelled": "cancelled",
    "max_tokens": "stopped: the reply reached its token limit",
    "max_turn_requests": "stopped: the turn reached its limit of model requests",
    "refusal": "stopped: the agent refused",
    "error": "failed",
}


#: A session's mode as a turn shows it: its name (None: the session has no mode), and what the
#: agent does without asking in it (None: it asks, or nothing is known).
ModeShown = tuple[str | None, str | None]


def mode_text(mode: ModeShown | None) -> list[str]:
    """The turn header's mode lines: ``mode: NAME`` and, when the agent acts without asking,
    one line that says so."""
    if mode is None:
        return []
    name, unasked = mode
    lines = [f"mode: {visible(name)}"] if name else []
    if unasked:
        where = "in this mode " if name else ""
        lines.append(f"⚠ {where}the agent {visible(unasked)}")
    return lines


def mode_html(mode: ModeShown | None) -> str:
    lines = mode_text(mode)
    if not lines:
        return ""
    out = [f'<div class="acp-turn-mode">{e(lines[0])}</div>'] if mode and mode[0] else []
    if mode and mode[1]:
        out.append(
            f'<div class="acp-turn-unasked" style="color:#a15c00"><b>{e(lines[-1])}</b></div>'
        )
    return "".join(out)


def _prompt_text(prompt: str) -> list[str]:
    shown, folded, left_out = _prompt_parts(prompt)
    lines = [f"> {line}" for line in shown + folded]
    return lines + ([f"> {_prompt_left_out(left_out)}"] if left_out else [])


def _markdown(text: str) -> str:
    """Agent Markdown with hidden characters made visible first (joiners kept: see _visible)."""
    return render_markdown(visible_prose(text))


def _message_html(msg: MessageState) -> str:
    parts = [_markdown(msg.text)] if msg.text else []
    parts += [block_html(b) for b in msg.content if getattr(b, "type", None) != "text"]
    body = "".join(parts)
    if msg.role == "user":
        return f'<div class="acp-message acp-message-user"><b>user:</b>{body}</div>'
    return f'<div class="acp-message acp-message-{e(msg.role)}">{body}</div>'


def _message_visible(msg: MessageState) -> bool:
    return bool(msg.text) or any(getattr(b, "type", None) != "text" for b in msg.content)


#: What a tool call the agent left open when its turn ended says (`ToolCallState.left_open`).
LEFT_OPEN_WORDS = "the agent left it open when the turn ended"


def _shown_output(call: ToolCallState) -> str | None:
    """The text of the call's ``rawOutput``, shown when it has no ``content`` to show."""
    return None if call.content else raw_output_text(call.raw_output)


def _io_html(call: ToolCallState) -> str:
    parts = []
    if call.left_open:
        parts.append(f'<div class="acp-left-open">{LEFT_OPEN_WORDS}</div>')
    text = _shown_output(call)
    if text is not None:
        parts.append(f'<pre class="acp-generic acp-raw-output">{e(visible_lines(text))}</pre>')
    if call.raw_input is not None:
        parts.append(generic_html(call.raw_input, "input"))
    if call.raw_output is not None:
        parts.append(generic_html(call.raw_output, "output"))
    return "".join(parts)


def _extras_html(turn: TurnState) -> str:
    """Notices and updates this library does not know (shown generically, escaped)."""
    parts = []
    for notice in turn.notices:
        description = f": {e(visible_lines(notice.description))}" if notice.description else ""
        severity = e(visible(str(notice.severity)))
        parts.append(
            f'<div class="acp-notice acp-notice-{severity}">'
            f"<b>{severity}</b> {e(visible(notice.title))}{description}</div>"
        )
    for update in turn.unknown_updates:
        payload = wire(update)
        tag = payload.get("sessionUpdate", "?") if isinstance(payload, dict) else "?"
        parts.append(generic_html(payload, f"update: {tag}"))
    return "".join(parts)


def _more_calls_text(count: int) -> str:
    word = "tool call" if count == 1 else "tool calls"
    return (
        f"… {count:,} more {word} not listed (a turn lists the first {MAX_LISTED_TOOL_CALLS};"
        " `-o` keeps them all)"
    )


def _not_started(_terminal_id: str) -> str:
    return "not started"


def _exit_dict(status: Any) -> dict[str, Any] | None:
    if status is None:
        return None
    payload = wire(status)
    return dict(payload) if isinstance(payload, dict) else {}


#: What a static terminal's note says keeps the lines the notebook does not.
TURN_KEEPS = f"`-o` keeps them all; the live view scrolls back {LIVE_SCROLLBACK_LINES:,} lines"


def _terminal_body(term: TerminalState) -> tuple[str, str]:
    """The end of a terminal's output as ``(text, html)``: :func:`_static.render_tail`, or the
    state's own (incrementally kept) conversion when the output is short enough."""
    if term.total_bytes - term.omitted_bytes > STATIC_TERMINAL_BYTES:
        return render_state_tail(term, keeps=TURN_KEEPS)
    text, markup = term.text, term.html
    if term.omitted_bytes:  # both start with the state's note, on a line of its own
        text, markup = text.partition("\n")[2], markup.partition("\n")[2]
    return cap_tail(text, markup, keeps=TURN_KEEPS)


def _short_command(term: TerminalState) -> str:
    command = visible(term.command or "")
    if len(command) > LABEL_COMMAND_CHARS:
        command = command[:LABEL_COMMAND_CHARS] + "…"
    return command


def _elapsed(seconds: float) -> str:
    whole = max(0, int(seconds))
    if whole < 60:
        return f"{whole} s"
    minutes, rest = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {rest} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def terminal_transcript(
    term: TerminalState,
    *,
    body: bool = True,
    phase: TerminalPhase | None = None,
    since: int | None = None,
) -> tuple[str, str]:
    """Deterministic ``(text, html)`` of a terminal (:func:`_static.terminal_transcript`):
    header, the end of its output (at most ``STATIC_LINES`` lines / ``STATIC_BYTES``; the live
    view and ``term.data`` keep it all), the exit state. Without ``body``: the header (command
    cut to ``LABEL_COMMAND_CHARS``) and the exit state only. ``phase`` (the view's
    ``terminal_phase``) words the state and moves the agent's words out of the output.
    ``since``: a stream offset (a terminal an earlier turn started): only its output from
    there, and a note that says where the rest is."""
    phase = phase or terminal_phase(term)
    command = term.command
    if command is not None and not body:
        command = _short_command(term)  # made visible already: visible() leaves it as it is
    shown = body and phase.shows_bytes
    note = phase.note if body else ""
    if since is not None:
        part = render_tail(term.since(since), keeps=TURN_KEEPS) if shown else None
        return static_terminal_transcript(
            command=command,
            cwd=term.cwd,
            exit_label=phase.label,
            body=part,
            note=note or CARRIED_NOTE,
            said_by="agent" if note else "note",
        )
    return static_terminal_transcript(
        command=command,
        cwd=term.cwd,
        exit_label=phase.label,
        body=_terminal_body(term) if shown else None,
        omitted_bytes=term.omitted_bytes if shown else 0,
        note=note,
    )


#: What a terminal an earlier turn started says in a later turn (its view and its record).
CARRIED_NOTE = "started in an earlier cell, which shows its output until this turn began"


def _says(term: TerminalState, call: ToolCallState, shown: StaticTerminals) -> bool:
    """The terminal just shown (with its whole command: it kept its output) shows the call's
    title as its command."""
    title = visible(call.title or "")
    whole = shown.seen <= MAX_LIVE_TERMINALS
    return bool(title) and whole and term.command is not None and visible(term.command) == title


class StaticTerminals:
    """Which terminals a static transcript shows, in the order it meets them: the output of
    the first ``MAX_LIVE_TERMINALS``, then the header and exit state of the next
    ``STATIC_LISTED_TERMINALS``, then only a count (``-o`` keeps every byte)."""

    def __init__(self) -> None:
        self.seen = 0

    def next(
        self, term: TerminalState, phase: TerminalPhase | None = None, since: int | None = None
    ) -> tuple[str, str] | None:
        self.seen += 1
        if self.seen > MAX_LIVE_TERMINALS + STATIC_LISTED_TERMINALS:
            return None
        body = self.seen <= MAX_LIVE_TERMINALS
        return terminal_transcript(term, body=body, phase=phase, since=since)

    def notes(self) -> list[str]:
        """What was left out, as lines for the end of the transcript."""
        notes = []
        no_output = self.seen - MAX_LIVE_TERMINALS
        if no_output > 0:
            notes.append(
                f"… the output of {no_output:,} more terminals not saved in the notebook "
                f"(it keeps the output of {MAX_LIVE_TERMINALS} per turn; `-o` keeps all)"
            )
        left_out = no_output - STATIC_LISTED_TERMINALS
        if left_out > 0:
            notes.append(
                f"… and {left_out:,} more terminals not saved in the notebook, commands "
                "included (`-o` keeps them)"
            )
        return notes


def transcript_text(view: Transcribed) -> str:
    """Deterministic plain transcript of the turn (reads the state; sends nothing)."""
    turn = view.turn
    lines = _prompt_text(view.prompt_text) + mode_text(getattr(view, "mode_shown", None))
    plan = turn.plan
    if plan is not None:
        lines += ["", *plan_text(plan)]
    terms = turn.terminals
    anchored: set[str] = set()
    shown = StaticTerminals()
    for kind, item in view.static_items():
        lines.append("")
        if kind == "message":
            prefix = "user: " if item.role == "user" else ""
            lines.append(prefix + visible_prose(item.text))
        elif kind == "card":
            lines += item.transcript_text()
        else:
            lines += _call_text(view, item, terms, anchored, shown)
    for term_id, term in terms.items():
        if term_id not in anchored and term.reported:
            transcript = shown.next(term, view.terminal_phase(term), view.carried_from(term))
            if transcript is not None:
                lines += ["", transcript[0]]
    more = view.unlisted_calls()
    if more:
        lines += ["", _more_calls_text(more)]
    for note in shown.notes():
        lines += ["", note]
    for notice in turn.notices:
        lines += ["", visible(f"{notice.severity}: {notice.title}")]
    for update in turn.unknown_updates:
        lines += ["", "update: " + generic_text(wire(update))]
    lines += ["", view.footer_text(turn)]
    return "\n".join(lines)


def _call_text(
    view: Transcribed,
    call: ToolCallState,
    terms: dict[str, TerminalState],
    anchored: set[str],
    shown: StaticTerminals,
) -> list[str]:
    lines: list[str] = []
    # the cards first: asked before anything ran (as the live view lays them out)
    for card in view.call_cards(call.tool_call_id):
        lines += [f"  {line}" for line in card.transcript_text(call)]
    says_title = False  # a terminal below shows the call's title as its whole command
    for item in call.content:
        term_id = getattr(item, "terminal_id", None)
        if getattr(item, "type", None) == "terminal" and isinstance(term_id, str):
            term = terms.get(term_id)
            if term is not None and term.reported and term_id not in anchored:
                anchored.add(term_id)
                transcript = shown.next(term, view.terminal_phase(term), view.carried_from(term))
                if transcript is not None:
                    says_title |= _says(term, call, shown)
                    lines += [f"  {line}" for line in transcript[0].split("\n")]
            continue
        lines += [f"  {line}" for line in content_text(item)]
    text = _shown_output(call)
    if text is not None:
        lines += [f"  {line}" for line in visible_lines(text).split("\n")]
    if call.left_open:
        lines.append(f"  ({LEFT_OPEN_WORDS})")
    head = tool_call_header_text(
        call.title, call.kind, call.status, call.locations, with_title=not says_title
    )
    return head + lines


def transcript_html(view: Transcribed) -> str:
    """Self-contained HTML transcript of the turn (every agent string escaped)."""
    turn = view.turn
    # NO_MATH: JupyterLab and nbconvert typeset $...$ in HTML outputs (commands have $).
    out = [STYLE, f'<div class="acp-turn acp-turn-static {NO_MATH}">']
    out.append(_prompt_html(view.prompt_text))
    out.append(mode_html(getattr(view, "mode_shown", None)))
    if turn.thoughts:
        out.append(f"<details><summary>Thoughts</summary>{_markdown(turn.thoughts)}</details>")
    plan = turn.plan
    if plan is not None:
        out.append(plan_html(plan))
    terms = turn.terminals
    anchored: set[str] = set()
    shown = StaticTerminals()
    for kind, item in view.static_items():
        if kind == "message":
            out.append(_message_html(item))
        elif kind == "card":
            out.append(item.transcript_html())
        else:
            out.append(_call_html(view, item, terms, anchored, shown))
    for term_id, term in terms.items():
        if term_id not in anchored and term.reported:
            transcript = shown.next(term, view.terminal_phase(term), view.carried_from(term))
            if transcript is not None:
                out.append(transcript[1])
    more = view.unlisted_calls()
    if more:
        out.append(f'<div class="acp-omitted">{e(_more_calls_text(more))}</div>')
    for note in shown.notes():
        out.append(f'<div class="acp-omitted">{e(note)}</div>')
    out.append(_extras_html(turn))
    out.append(view.footer_html(turn))
    out.append("</div>")
    return "".join(out)


def _call_html(
    view: Transcribed,
    call: ToolCallState,
    terms: dict[str, TerminalState],
    anchored: set[str],
    shown: StaticTerminals,
) -> str:
    out = [card.transcript_html(call) for card in view.call_cards(call.tool_call_id)]
    says_title = False  # as in _call_text
    for item in call.content:
        term_id = getattr(item, "terminal_id", None)
        if getattr(item, "type", None) == "terminal" and isinstance(term_id, str):
            term = terms.get(term_id)
            if term is not None and term.reported and term_id not in anchored:
                anchored.add(term_id)
                transcript = shown.next(term, view.terminal_phase(term), view.carried_from(term))
                if transcript is not None:
                    says_title |= _says(term, call, shown)
                    out.append(transcript[1])
                continue
            if term is not None and term.reported:
                continue
        out.append(content_html(item, _not_started))
    out.append(_io_html(call))
    out.append("</div>")
    head = tool_call_header_html(
        call.title, call.kind, call.status, call.locations, with_title=not says_title
    )
    return (
        '<div class="acp-tool-call" style="border-left:3px solid #ccc;padding-left:6px;'
        f'margin:4px 0">{head}{"".join(out)}'
    )
