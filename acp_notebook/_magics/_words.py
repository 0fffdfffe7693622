"""Every sentence a person reads from the magics: the notebook's errors (``words``), an error as
one line, a failed turn, an agent's capabilities, a sign-in's outcome; and ``show``, the one
seam through which the rooms display."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

import IPython.display as _display
from IPython.core.error import UsageError

from .._client._session import ended_by
from .._connection._errors import AgentExited
from .._notebook._bridge import AgentHandle
from .._notebook._errors import (
    AgentGone,
    AgentNotAllowed,
    ConfigNotApplied,
    NoKernelTools,
    NoSuchAgent,
    NoSuchConfigOption,
    NoSuchConfigValue,
    NoSuchMethod,
    NoSuchSession,
    NotebookError,
    SessionBusy,
    SessionOfAnotherAgent,
    SignInRequired,
    StartConfigFailed,
    UnsupportedMethod,
)
from .._notebook._failures import ConnectFailed
from .._notebook._modes import MODE
from .._notebook._owner import Notebook
from .._notebook._redact import redact
from .._protocol._visible import visible_text
from .._widgets._parts import status_words, tool_kind_words

display: Any = vars(_display)["display"]


def show(obj: Any, **kwargs: Any) -> None:
    """Display ``obj`` in the cell's output: the one seam every room shows through (a test
    replaces ``_words.display`` to see what would be shown)."""
    display(obj, **kwargs)


def _say(text: str, *, multiline: bool = False) -> None:
    """Print one line (or, with ``multiline``, a block) of plain-text output. Agents and cells
    supply much of it (titles, versions, stderr, ids): control and bidi characters are shown
    as visible markers, never sent to the terminal or the browser raw."""
    print(visible_text(text, multiline=multiline))


def _visible_error(exc: UsageError) -> UsageError:
    """The same one-line error, its hidden characters made visible (IPython prints it raw)."""
    return UsageError(visible_text(str(exc), multiline=True))


def _one_line(exc: BaseException) -> str:
    """An error as one line: the exit status of an agent (its stderr is for `%acp status`),
    else the first line of the message."""
    if isinstance(exc, AgentExited):
        how = f"was killed by signal {exc.signal}" if exc.signal else "exited"
        if not exc.signal and exc.returncode is not None:
            how += f" with code {exc.returncode}"
        more = "; `%acp status` shows its stderr" if exc.stderr_tail.strip() else ""
        return f"the agent {how}{more}"
    text = str(exc).strip() or type(exc).__name__
    first, _, rest = text.partition("\n")
    return first.rstrip(":;, ") + (" (...)" if rest.strip() else "")


def words(error: NotebookError, nb: Notebook) -> str:
    """A notebook error as the one line a person reads (the only place they are worded)."""
    if isinstance(error, NoSuchAgent):
        connected = ", ".join(repr(n) for n in error.known) or "none"
        if error.name:
            closed = " (it was closed)" if error.closed else ""
            return f"no agent named {error.name!r}{closed}; connected: {connected}"
        closed = f" ({error.closed!r} was closed)" if error.closed else ""
        return f"no agent connected{closed}: run `%acp connect` first (see %acp?)"
    if isinstance(error, AgentGone):
        return (
            f"agent {error.name!r} has exited ({error.exit_status}); `%acp status` shows its"
            " stderr, `%acp connect` starts a new one"
        )
    if isinstance(error, NoSuchSession):
        return f"no session named {error.name!r}"
    if isinstance(error, SessionOfAnotherAgent):
        return (
            f"%%acp: session {error.name!r} belongs to agent {error.agent!r}, not"
            f" {error.wanted!r}; name another session with --session NAME, or start it afresh"
            " with --new"
        )
    if isinstance(error, NoSuchMethod):
        known = ", ".join(error.known) or "none"
        return (
            f"%acp auth: agent {error.agent!r} has no method {error.method!r}; its methods: {known}"
        )
    if isinstance(error, UnsupportedMethod):
        return (
            f"%acp auth: method {error.method!r} has type {error.kind!r}, which this client"
            " cannot run"
        )
    if isinstance(error, SessionBusy):
        return (
            f"%%acp: session {error.session!r} is busy: a turn started earlier (with --bg?) is"
            f" still running. Wait for it to end, stop it with `%acp cancel --session"
            f" {error.session}`, or use another session with `--session NAME`"
        )
    if isinstance(error, AgentNotAllowed):
        return (
            f"%acp connect: {error.agent!r} is not an allowed agent here; allowed:"
            f" {', '.join(error.allowed) or 'none'} (set by ACP_NOTEBOOK_ALLOWED_AGENTS or"
            " AcpMagics.allowed_agents)"
        )
    if isinstance(error, NoKernelTools):
        return (
            f"%acp connect: agent {error.agent!r} takes no MCP servers (it advertises neither"
            " http nor stdio ones), so it cannot be given the kernel tools; connect it without"
            " --kernel-tools"
        )
    if isinstance(error, SignInRequired):
        reason = _first_line(error.reason)
        hint = _auth_hint(error.methods, _name_option(nb, error.agent))
        return f"%%acp: agent {error.agent!r} needs sign-in ({reason}); {hint}"
    if isinstance(error, NoSuchConfigOption):
        what = "mode" if error.key == MODE else f"option {visible_text(error.key)!r}"
        known = ", ".join(error.known) or "none"
        return f"the session has no {what}; its options: {visible_text(known)}"
    if isinstance(error, NoSuchConfigValue):
        known = ", ".join(error.choices) or "none"
        return (
            f"{visible_text(error.config_id)} has no value {visible_text(error.word)!r};"
            f" its values: {visible_text(known)}"
        )
    if isinstance(error, ConfigNotApplied):
        return (
            f"the agent kept {visible_text(error.config_id)} at"
            f" {visible_text(error.current)!r}, not {visible_text(error.value)!r}"
        )
    if isinstance(error, StartConfigFailed):
        inner = error.error
        why = words(inner, nb) if isinstance(inner, NotebookError) else _one_line(inner)
        return (
            f"a new session of {error.agent!r} could not be put in {error.key}"
            f" {visible_text(error.value)!r}, so no prompt was sent: {why}. Pick another with"
            f" `%acp mode VALUE` (or `%acp connect ... --mode VALUE`)"
        )
    return type(error).__name__  # pragma: no cover - every kind is worded above


def _name_option(nb: Notebook, agent: str) -> str:
    """`` --name AGENT`` for a command about ``agent``, unless it is the default agent."""
    return "" if agent == nb.default_name() else f" --name {agent}"


def _first_line(text: str) -> str:
    text = text.strip()
    first, _, rest = text.partition("\n")
    return first.rstrip(":;, ") + (" (...)" if rest.strip() else "")


def turn_failure(error: BaseException) -> str:
    """A failed turn as one line: how the agent ended and the last line of its stderr."""
    if isinstance(error, AgentExited):
        text = f"%%acp: the turn failed: {error.status}"
        last = error.last_stderr_line
        if last:
            text += f"; its last stderr line: {visible_text(last)}"
        return text + " (`%acp status` shows more, `%acp connect` starts a new agent)"
    return f"%%acp: the turn failed: {visible_text(ended_by(error))}"


class _Static:
    """The turn's static transcript, for saved notebooks, nbconvert and nbval."""

    def __init__(self, bundle: dict[str, str]) -> None:
        self._bundle = bundle

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, str]:
        return self._bundle


def capability_summary(handle: AgentHandle) -> str:
    """The agent's capabilities, one line: "capabilities: session (prompt: image, ...), ..."."""
    caps = handle.agent.capabilities or handle.agent.v1_capabilities
    raw = caps.model_dump(by_alias=True, exclude_none=True) if caps is not None else {}

    def named(value: Any) -> list[str]:
        if not isinstance(value, dict):
            return []
        out = []
        for key, sub in value.items():
            if key.startswith("_") or sub is False:
                continue
            inner = named(sub)
            out.append(f"{key} ({', '.join(inner)})" if inner else key)
        return out

    parts = named(raw)
    auth = [str(m.to_wire().get("methodId", "?")) for m in handle.agent.auth_methods]
    text = "capabilities: " + (", ".join(parts) or "none")
    return text + (f"; sign-in methods: {', '.join(auth)}" if auth else "")


def needs_words(agent_id: str) -> str | None:
    """What an agent needs before it works, or None when nothing is known: "ANTHROPIC_API_KEY
    or a Claude account (`%acp auth`)"."""
    from .._notebook import _registry

    notes = _registry.notes(agent_id)
    ways = [" or ".join(notes.keys)] if notes.keys else []
    if notes.sign_in:
        ways.append(notes.sign_in)
    return " or ".join(ways) or None


def agent_lines(entry: Any, launch: Any) -> list[str]:
    """An agent of the registry in two lines: who it is, the protocol it speaks and how it
    starts here; then what it needs, whether it asks before acting and what it shows."""
    from .._notebook import _registry

    notes = _registry.notes(entry.id)
    alias = f" (or {notes.alias})" if notes.alias else ""
    if launch.missing is not None:
        how = f"not available here: {launch.missing}"
    elif launch.installed:
        where = {"installed": "", "program": " (its version not checked)"}.get(
            launch.how, " (on PATH)"
        )
        how = f"installed{where}: {shlex_join(launch.argv)}"
    else:
        how = f"not installed: starts with {shlex_join(launch.argv)} (downloads it)"
    first = (
        f"{entry.id}{alias}: {entry.name} {entry.version}, ACP {_registry.protocol_of(entry.id)};"
        f" {how}"
    )
    details = []
    needs = needs_words(entry.id)
    if needs:
        details.append(f"needs {needs}")
    if notes.setup:
        details.append(f"set up: {notes.setup}")
    details += [notes.asks, notes.shows]
    return [visible_text(first), "    " + visible_text("; ".join(details))]


def mode_lines(option: Any, mode: Any, *, changed: bool = False) -> list[str]:
    """A session's mode (a `ConfigFact`), the other modes, and the one line that says when
    the agent acts without asking in it (a `ModeFact`'s ``unasked``)."""
    now = "is now" if changed else "is"
    value = visible_text(str(option.current))
    named = option.current_name
    said = named if named.lower() == value.lower() else f"{named} ({value})"
    lines = [f"acp: the mode {now} {said}"]
    others = [
        v if n.lower() == v.lower() else f"{v} ({n})"
        for n, v in option.choices
        if v != option.current
    ]
    if others:
        lines.append("    other modes: " + visible_text(", ".join(others)))
    if mode is not None and mode.unasked:
        lines.append(f"    ⚠ in this mode the agent {mode.unasked}")
    return lines


def config_lines(options: Sequence[Any]) -> list[str]:
    """Each config option in one line: id, name, current value, and the values it takes."""
    lines = []
    for option in options:
        values = "on, off" if option.boolean else ", ".join(v for _, v in option.choices)
        category = f" [{option.category}]" if option.category else ""
        lines.append(
            visible_text(
                f"acp: {option.config_id}{category} ({option.name}): {option.current_name}"
                f"; values: {values}"
            )
        )
    return lines


#: At most this many of the commands still running after an Interrupt are named.
STILL_RUNNING_NAMED = 3


def interrupted_words(commands: Sequence[str], agent: str) -> str:
    """The Interrupt's one line: the turn was cancelled, and which commands the agent started
    are still running (a cancel does not stop every agent's), with what stops them."""
    said = "the turn was cancelled (session/cancel sent, pending requests answered cancelled)"
    if not commands:
        return said
    named = ", ".join(_short(visible_text(c)) for c in commands[:STILL_RUNNING_NAMED])
    left = len(commands) - STILL_RUNNING_NAMED
    more = f" and {left} more" if left > 0 else ""
    which = "a command" if len(commands) == 1 else f"{len(commands)} commands"
    verb = "is" if len(commands) == 1 else "are"
    return (
        f"{said}; {which} the agent started {verb} still running ({named}{more}):"
        f" `%acp close --name {agent}` stops the agent and what it runs"
    )


def _short(command: str, chars: int = 80) -> str:
    line = " ".join(command.split())
    return line if len(line) <= chars else line[: chars - 1] + "…"


def trace_lines(done: Any) -> list[str]:
    """What `%acp log --export` wrote (a `TraceExport`), and what its header warns of."""
    more = f", {done.dropped} not kept" if done.dropped else ""
    cut = f", {done.shortened} shortened" if done.shortened else ""
    return [
        visible_text(
            f"acp: wrote {done.frames} frames{more}{cut} to {done.path} ({done.bytes:,}"
            " bytes, mode 0600)"
        ),
        visible_text(f"    {done.warning}"),
    ]


def shlex_join(argv: Sequence[str]) -> str:
    import shlex

    return shlex.join(argv)


class _ErrorBox:
    """An error shown as HTML, with the same text as text/plain (nbval, nbconvert, terminals)."""

    def __init__(self, title: str, detail: str) -> None:
        self.title = title
        self.detail = detail

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, str]:
        import html

        title = visible_text(self.title)
        detail = visible_text(self.detail, multiline=True)
        return {
            "text/plain": f"{title}\n{detail}",
            "text/html": f"<div class='acp-error'><b>{html.escape(title)}</b>"
            f"<pre>{html.escape(detail)}</pre></div>",
        }


def _auth_hint(methods: Sequence[Any], option: str) -> str:
    from .._notebook import _auth

    return _auth.hint(methods, option)


def _signed_in_line(nb: Notebook, outcome: Any, secrets: Mapping[str, str]) -> str:
    """A sign-in's outcome as the one line its form or terminal shows, with ``secrets``
    (what the person typed, the agent's environment) redacted."""
    from .._notebook._sign_in import NotSignedIn

    if isinstance(outcome, NotSignedIn):
        error = outcome.error
        if isinstance(error, ConnectFailed):
            why = f"%acp connect: could not connect {outcome.agent!r}: {error.summary}"
        elif isinstance(error, NotebookError):
            why = words(error, nb)
        else:
            why = _one_line(error)
        return redact(f"not signed in: {why}", secrets)
    session = f"; session {outcome.session!r} is open"
    if outcome.restarted is None:
        return f"signed in to {outcome.agent!r} with {outcome.method!r}{session}"
    added = f" with {', '.join(outcome.env_names)}" if outcome.env_names else ""
    signed = f", signed in with {outcome.method!r}" if outcome.method is not None else ""
    line = f"restarted {outcome.agent!r} ({outcome.restarted}){added}{signed}{session}"
    return redact(line, secrets)


#: A resumed session's history shows at most this many entries, each cut to one short line.
HISTORY_ENTRIES = 40
HISTORY_CHARS = 160


def history_lines(state: Any) -> list[str]:
    """A replayed session's history in words, oldest first: each message as ``you:``/``agent:``
    and its first line, then each tool call's title, kind and status (issue 25, finding 19:
    ``%acp resume`` printed only counts). Agent text made visible, each entry one line."""
    entries: list[str] = []
    for message in state.messages.values():
        if message.role == "thought" or not message.text.strip():
            continue
        who = "you" if message.role == "user" else "agent"
        entries.append(f"{who}: {message.text.strip().splitlines()[0]}")
    for call in state.tool_calls.values():
        said = tool_kind_words(call.kind)
        kind = f" [{said}]" if said else ""
        title = call.title or call.tool_call_id
        entries.append(f"tool call: {title}{kind} - {status_words(call.status)}")
    shown = [_cut(visible_text(entry), HISTORY_CHARS) for entry in entries[-HISTORY_ENTRIES:]]
    left_out = len(entries) - len(shown)
    return ([f"… {left_out:,} earlier entries"] if left_out else []) + shown


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def show_history(summary: str, lines: list[str]) -> None:
    """The resume line, with the replayed history folded under it (text for a plain front end)."""
    if not lines:
        _say(summary)
        return
    items = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
    markup = (
        f"<details><summary>{html.escape(visible_text(summary))}</summary>"
        f'<ul class="acp-history">{items}</ul></details>'
    )
    text = "\n".join([visible_text(summary), *(f"  {line}" for line in lines)])
    show({"text/plain": text, "text/html": markup}, raw=True)
