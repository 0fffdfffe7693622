"""The notebook's read model: typed facts about its agents, sessions, grants and background
work, read in the I/O thread, and the one status text ``%acp status``, ``%acp panel`` (as text)
and ``%acp grants`` print. The side panel renders the same facts as widgets.

Every string in a fact comes from an agent or a person and has its hidden characters made
visible (``_protocol._visible``): the HTML and the text are both made from the facts.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._client._permission import PermissionDecision
from .._widgets._background import describe_item
from .._widgets._parts import visible, visible_lines, wire
from ._redact import REDACTED, redact

if TYPE_CHECKING:
    from ._bridge import AgentHandle
    from ._owner import Notebook

#: Protocol messages a log shows.
LOG_LINES = 40
#: Terminals the status lists: the most recent.
MAX_TERMINALS = 6


@dataclass(frozen=True)
class AgentFacts:
    """Name, identity, process and liveness of one connected (or exited) agent."""

    name: str
    agent: str
    title: str
    version: str
    argv: str
    cwd: str
    pid: int | None
    alive: bool
    exit: str
    """how it ended (``exit 3``, ``signal SIGKILL``), or "" while it runs"""
    stderr: str
    """the end of its stderr once it exited, else """ ""
    closed: bool = False
    """closed on purpose (``%acp close``, the panel), not exited by itself"""
    env: tuple[str, ...] = ()
    """the names of the variables ``--env`` added (never their values)"""


@dataclass(frozen=True)
class SessionFacts:
    label: str
    """the name the notebook gave it"""
    agent: str
    id: str
    cwd: str
    title: str
    state: str
    stop_reason: str | None
    usage: str
    commands: tuple[str, ...]
    config: tuple[dict[str, Any], ...]
    """its config options, as sent"""
    pending: int
    """permission requests not answered yet"""
    closed: bool


@dataclass(frozen=True)
class GrantFacts:
    """A request answered with an "always" option: the agent keeps it."""

    what: str
    kind: str
    allow: bool
    option: str
    at: str
    session: str
    session_id: str
    agent: str
    by: str
    detail: str


@dataclass(frozen=True)
class BackgroundFacts:
    """One item of a session's latest ``background`` snapshot."""

    session: str
    session_obj: Any
    agent: str
    kind: str
    id: str
    label: str
    status: str
    can_stop: bool


def agent_facts(handle: AgentHandle) -> AgentFacts:
    """Name, identity, process and liveness of one connected (or exited) agent."""
    agent = handle.agent
    info = agent.info
    proc = agent.process
    alive = handle.alive
    exit_label = ""
    stderr = ""
    if not alive:
        exit_label = handle.exit_status
        stderr = redact(handle.stderr_tail(2000).strip(), handle.env)
    # Everything shown as text has its hidden characters made visible (_protocol._visible):
    # the HTML and the text summary are both made from these facts.
    return AgentFacts(
        name=visible(handle.name),
        agent=visible(info.name) if info else "?",
        title=visible(info.title or info.name) if info else "?",
        version=visible(info.version) if info else "?",
        argv=visible(shlex.join(handle.argv)),
        cwd=visible(handle.cwd),
        pid=proc.pid if proc is not None else None,
        alive=alive,
        exit=visible(exit_label),
        stderr=visible_lines(stderr),
        closed=handle.closed,
        env=tuple(visible(name) for name in handle.env),
    )


def _usage_text(usage: Any) -> str:
    parts = []
    if usage.used is not None:
        parts.append(
            f"{usage.used}" + (f"/{usage.size}" if usage.size is not None else "") + " tokens"
        )
    if usage.cost_text:
        parts.append(usage.cost_text)
    return visible(", ".join(parts))


def _config_options(session: Any) -> list[dict[str, Any]]:
    options = session.state.config_options or session.config_options
    return [o for o in (wire(option) for option in options) if isinstance(o, dict)]


def choices(option: dict[str, Any]) -> list[tuple[str, str]]:
    """``(label, value)`` pairs of a select option, groups flattened as ``group / name``."""
    found: list[tuple[str, str]] = []
    for item in option.get("options") or []:
        if not isinstance(item, dict):
            continue
        if "value" in item:
            found.append((visible(str(item.get("name", item["value"]))), str(item["value"])))
        for sub in item.get("options") or []:
            if isinstance(sub, dict) and "value" in sub:
                label = f"{item.get('name', '')} / {sub.get('name', sub['value'])}"
                found.append((visible(label), str(sub["value"])))
    return found


def session_facts(label: str, agent_name: str, session: Any) -> SessionFacts:
    """What the panel shows about one session (read it in the I/O thread)."""
    state = session.state
    commands = []
    for command in state.available_commands:
        payload = wire(command)
        if isinstance(payload, dict) and payload.get("name"):
            commands.append(visible(str(payload["name"])))
    stop_reason = state.stop_reason if state.state == "idle" else None
    if state.state == "ended" and state.turns and state.turns[-1].ended_by:
        stop_reason = state.turns[-1].ended_by  # the turn ended without its idle: why
    return SessionFacts(  # hidden characters made visible, as in agent_facts
        label=visible(label),
        agent=visible(agent_name),
        id=visible(session.id),
        cwd=visible(session.cwd),
        title=visible(state.title or ""),
        state=visible(state.state or "new"),
        stop_reason=visible(stop_reason) if stop_reason else None,
        usage=_usage_text(state.usage),
        commands=tuple(commands),
        config=tuple(_config_options(session)),
        pending=sum(1 for d in session.permissions if d.pending),
        closed=bool(session.closed),
    )


ALWAYS_KINDS = ("allow_always", "reject_always")


GRANTS_NOTE = (
    "The agent keeps these grants: what it does later under them it does without asking, so"
    " the client cannot see it. ACP has no method to list or revoke an agent's grants; a new"
    " session (`--new`) starts without them."
)


def _what(decision: PermissionDecision) -> str:
    request = decision.request
    subject = wire(request.subject) if request.subject is not None else {}
    command = subject.get("command") if isinstance(subject, dict) else None
    return visible(f"$ {command}" if command else str(request.title))


def handles_of(nb: Notebook) -> list[AgentHandle]:
    """The open agents, then the closed ones still remembered."""
    handles = list(nb.agents.values())
    return handles + [h for h in nb.closed_agents.values() if h not in handles]


def grant_facts(nb: Notebook, handles: Iterable[AgentHandle] | None = None) -> list[GrantFacts]:
    """Every request of the agents' sessions (open and closed agents, unless ``handles`` are
    given) settled by an "always" option, oldest first: what it covered, the choice, when it
    was asked, which session, who decided (I/O thread)."""
    found = []
    for handle in handles_of(nb) if handles is None else handles:
        for session in list(handle.agent.sessions.values()):
            for decision in list(session.permissions):
                kind = decision.option_kind
                if decision.pending or kind not in ALWAYS_KINDS:
                    continue
                at = decision.asked_at
                option = next(
                    (o for o in decision.request.options if o.option_id == decision.option_id),
                    None,
                )
                found.append(
                    GrantFacts(
                        what=_what(decision),
                        kind=str(kind),
                        allow=kind == "allow_always",
                        option=visible(option.name if option is not None else str(kind)),
                        at=time.strftime("%H:%M:%S", time.localtime(at)) if at else "",
                        session=visible(nb.name_of(session) or "(unnamed)"),
                        session_id=visible(session.id),
                        agent=visible(handle.name),
                        by=_by(decision.decided_by, decision.detail),
                        detail="" if _clicked(decision.decided_by) else visible(decision.detail),
                    )
                )
    return found


def _clicked(decided_by: object) -> bool:
    return decided_by in ("click", "panel")


def _by(decided_by: object, detail: str) -> str:
    """How a grant was decided: ``click from Bob`` where a click's message named its sender
    (``_widgets._sender``), else the path alone."""
    if _clicked(decided_by) and detail:
        return visible(f"{decided_by} from {detail}")
    return visible(str(decided_by))


def _grant_line(f: GrantFacts) -> str:
    at = f" at {f.at}" if f.at else ""
    detail = f" ({f.detail})" if f.detail else ""
    return (
        f"{f.option}: {f.what}  (session {f.session} {f.session_id} on {f.agent},"
        f" by {f.by}{detail}{at})"
    )


def grants_text(nb: Notebook) -> str:
    """What ``%acp grants`` prints (I/O thread)."""
    found = grant_facts(nb)
    if not found:
        return "Grants: none (no request was answered with an always option in this kernel)"
    lines = [f"Grants: {len(found)} (answers with an always option in this kernel)"]
    lines.extend(f"  {_grant_line(f)}" for f in found)
    lines.append(GRANTS_NOTE)
    return "\n".join(lines)


#: A session's state in plain words, not the protocol's (issue 25, finding 22: the panel said
#: ``requires_action``).
_STATE_WORDS = {"requires_action": "waiting for you", "running": "working"}
_STOP_WORDS = {"end_turn": "finished", "max_tokens": "token limit", "refusal": "refused"}


def state_label(f: SessionFacts) -> str:
    if f.closed:
        return "closed"
    state = _STATE_WORDS.get(str(f.state), str(f.state))
    if f.stop_reason:
        return f"{state} ({_STOP_WORDS.get(str(f.stop_reason), str(f.stop_reason))})"
    return state


def run_done(run: Any) -> bool:
    done = getattr(run, "done", None)
    return bool(run.turn.done or (done is not None and done.done()))


@dataclass(frozen=True, eq=False)
class LogMark:
    """Where ``handle``'s protocol log stood (`log_mark`): its length, and its last entry. The
    log keeps its last entries only, so a full one moves by its last: the entry itself is
    kept, not its ``id``, which the next entry may reuse once the old one is freed."""

    handle: AgentHandle
    count: int
    last: object

    def same(self, other: LogMark | None) -> bool:
        """Nothing logged since ``other`` was taken, in the same agent's log."""
        return (
            other is not None
            and other.handle is self.handle
            and other.count == self.count
            and other.last is self.last
        )


def log_mark(handle: AgentHandle) -> LogMark:
    """Where ``handle``'s protocol log stands now: a view of it is rendered again only when
    this has moved (`LogMark.same`)."""
    entries = handle.agent.connection.log
    return LogMark(handle, len(entries), entries[-1] if entries else None)


def log_text(
    nb: Notebook, handle: AgentHandle, n: int = LOG_LINES, width: int | None = None
) -> str:
    """The last ``n`` protocol messages of a connection (``Notebook.log``: base64 payloads
    shortened, secrets redacted), each line cut to ``width`` characters when given."""
    lines = []
    for line in nb.log(handle, n, compact=True):
        text = line.text
        if width is not None and len(text) > width:
            text = f"{text[:width]}…(+{len(text) - width} chars)"
        lines.append(str(type(line)(line.direction, text)))
    return "\n".join(lines)


def _pending_decisions(handles: Iterable[AgentHandle]) -> list[PermissionDecision]:
    """Every undecided permission request of these agents' sessions (read in the I/O thread)."""
    return [
        decision
        for handle in handles
        for session in list(handle.agent.sessions.values())
        for decision in list(session.permissions)
        if decision.pending
    ]


def _pending_questions(handles: Iterable[AgentHandle]) -> list[tuple[Any, Any]]:
    """``(session, question)`` for every unanswered question of these agents' sessions."""
    return [
        (session, question)
        for handle in handles
        for session in list(handle.agent.sessions.values())
        for question in list(session.elicitations)
        if question.pending
    ]


def background_facts(nb: Notebook, handle: AgentHandle) -> list[BackgroundFacts]:
    """The background work of every session of an agent, from the latest ``background``
    snapshot: session, kind, id, what it is, how it stands, whether it can be stopped."""
    found = []
    for session in list(handle.agent.sessions.values()):
        for kind, item_id in session.state.background_items():
            label, status, can_stop = describe_item(session.state, kind, item_id)
            found.append(
                BackgroundFacts(
                    session=visible(nb.name_of(session) or "(unnamed)"),
                    session_obj=session,
                    agent=visible(handle.name),
                    kind=kind,
                    id=item_id,
                    label=visible(label),
                    status=visible(status),
                    can_stop=can_stop and handle.alive,
                )
            )
    return found


def _background_lines(nb: Notebook, handle: AgentHandle) -> list[str]:
    return [
        f"  {f.label}  [{f.status}]  (session {f.session} on {f.agent})"
        for f in background_facts(nb, handle)
    ]


def status_text(nb: Notebook, handles: Iterable[AgentHandle], runs: Iterable[Any]) -> str:
    """Every string from the agent or the user is shown with its hidden characters made
    visible (the text goes to ``text/plain``, where front ends read ESC as a colour code)."""
    names = {id(named.session): named.name for named in nb.sessions}
    lines = ["Agents:"]
    handles = list(handles)
    default = nb.default_name()
    for handle in handles:
        af = agent_facts(handle)
        if af.alive:
            life = f"alive (pid {af.pid})"
        else:
            life = f"{'closed' if af.closed else 'exited'} ({af.exit})"
        mark = " [default]" if handle.name == default and not af.closed else ""
        env = "".join(f", env {name}={REDACTED}" for name in af.env)
        line = f"  {af.name}{mark}: {af.title} {af.version}, {life}, argv {af.argv}{env}"
        lines.append(line)
        if af.stderr:
            lines.append("    stderr tail: " + af.stderr.replace("\n", "\n      "))
    if not any(not handle.closed for handle in handles):  # (an exited one still counts)
        lines.append("  (none: no agents connected; `%acp connect` starts one)")
    lines.append("Sessions:")
    count = 0
    for handle in handles:
        for session in list(handle.agent.sessions.values()):
            count += 1
            f = session_facts(names.get(id(session), "(unnamed)"), handle.name, session)
            title = f" '{f.title}'" if f.title else ""
            lines.append(
                f"  session {f.label!r} on {f.agent!r}: {f.id}{title}, {state_label(f)},"
                f" {f.pending} pending permission(s)"
            )
            if f.usage:
                lines.append(f"    usage: {f.usage}")
            for option in f.config:
                name = option.get("name", option.get("configId"))
                lines.append(visible(f"    {name}: {option.get('currentValue')}"))
            if f.commands:
                lines.append("    commands: " + " ".join("/" + c for c in f.commands))
    if not count:
        lines.append("  (none)")
    pending = _pending_decisions(handles)
    questions = _pending_questions(handles)
    count = len(pending) + len(questions)
    lines.append(f"Approval inbox: {count} pending")
    for decision in pending:
        subject = wire(decision.request.subject) if decision.request.subject is not None else {}
        command = subject.get("command") if isinstance(subject, dict) else None
        what = f"$ {command}" if command else decision.request.title
        lines.append(visible(f"  {what}  (session {decision.request.session_id})"))
    for session, question in questions:
        lines.append(visible(f"  question: {question.message}  (session {session.id})"))
    work = [line for handle in handles for line in _background_lines(nb, handle)]
    lines.append(f"Background work: {len(work)}")
    lines.extend(work)
    terms = []
    for run in runs:
        for widget in getattr(run.view, "terminal_widgets", {}).values():
            state = "running" if not run_done(run) else "finished"
            command = visible(widget.command)  # the turn view made it visible; no harm twice
            terms.append(f"  $ {command}  [{state}, {len(widget.data)} bytes]")
    lines.append(f"Terminals: {len(terms)}")
    lines.extend(terms[-MAX_TERMINALS:])
    found = grant_facts(nb, handles)
    lines.append(f"Grants: {len(found)}")
    lines.extend(f"  {_grant_line(f)}" for f in found)
    return "\n".join(lines)
