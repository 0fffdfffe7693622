"""The agent side panel, kernel side: one :class:`SidePanel` per notebook, fed by its events.

The panel shows the agents, their sessions, an approval inbox of every pending permission,
the terminals of recent turns (second views of the cells' terminal models) and a protocol log.
Everything is an ipywidgets model; the labextension places the :class:`AgentPanel` in the right
sidebar (no server extension, no extra channel).

Threading: every widget change of the panel happens in the bridge's I/O thread (where session
state lives), under the panel's lock. Events from the main thread only record what happened;
a refresher task in the I/O thread brings the widgets up to date at most every
``REFRESH_INTERVAL`` seconds and only sends values that changed, so a flood of updates costs a
bounded number of widget messages. Button callbacks (main thread) never block: closing and
restarting an agent run in a worker thread, a choice goes to the I/O thread.
"""

from __future__ import annotations

import contextlib
import logging
import shlex
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import anyio
import ipywidgets  # type: ignore[import-untyped]

from ._client._permission import PermissionDecision
from ._notebook._bridge import AgentHandle, IOThread
from ._notebook._cells import Asked, Question
from ._notebook._owner import Notebook
from ._widgets import AgentPanel, ElicitationCard, PermissionCard, TerminalWidget
from ._widgets._background import describe_item
from ._widgets._card import close_deep
from ._widgets._parts import e, set_children, set_if_changed, visible, visible_lines, wire

log = logging.getLogger("acp_notebook.sidepanel")

#: At most one panel refresh per this many seconds.
REFRESH_INTERVAL = 0.25
#: The protocol log is re-rendered every this many refreshes (it changes with every message).
LOG_EVERY = 4
#: Protocol messages shown in the log section.
LOG_LINES = 40
#: Terminals shown: those of running turns first, then of the most recent finished turns.
MAX_TERMINALS = 6
#: Finished turns remembered for their terminals.
MAX_RUNS = 20

__all__ = [
    "GRANTS_NOTE",
    "SidePanel",
    "agent_facts",
    "close_panel",
    "current",
    "grant_facts",
    "grants_text",
    "install",
    "open_panel",
    "session_facts",
    "summary_text",
]


# -- facts (plain dicts; the HTML and the text summary are both made from them) ---------------


def agent_facts(handle: AgentHandle) -> dict[str, Any]:
    """Name, identity, process and liveness of one connected (or exited) agent."""
    agent = handle.agent
    info = agent.info
    proc = agent.process
    alive = handle.alive
    exit_label = ""
    stderr = ""
    if not alive:
        exit_label = handle.exit_status
        stderr = handle.stderr_tail(2000).strip()
    # Everything shown as text has its hidden characters made visible (_protocol._visible):
    # the HTML and the text summary are both made from these facts.
    return {
        "name": visible(handle.name),
        "agent": visible(info.name) if info else "?",
        "title": visible(info.title or info.name) if info else "?",
        "version": visible(info.version) if info else "?",
        "argv": visible(shlex.join(handle.argv)),
        "cwd": visible(handle.cwd),
        "pid": proc.pid if proc is not None else None,
        "alive": alive,
        "exit": visible(exit_label),
        "stderr": visible_lines(stderr),
    }


def _usage_text(usage: Any) -> str:
    parts = []
    if usage.used is not None:
        parts.append(
            f"{usage.used}" + (f"/{usage.size}" if usage.size is not None else "") + " tokens"
        )
    cost = wire(usage.cost) if usage.cost is not None else None
    if isinstance(cost, dict) and "amount" in cost:
        parts.append(f"{cost['amount']} {cost.get('currency', '')}".strip())
    return visible(", ".join(parts))


def _config_options(session: Any) -> list[dict[str, Any]]:
    options = session.state.config_options or session.config_options
    return [o for o in (wire(option) for option in options) if isinstance(o, dict)]


def _choices(option: dict[str, Any]) -> list[tuple[str, str]]:
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


def session_facts(label: str, agent_name: str, session: Any) -> dict[str, Any]:
    """What the panel shows about one session (read it in the I/O thread)."""
    state = session.state
    commands = []
    for command in state.available_commands:
        payload = wire(command)
        if isinstance(payload, dict) and payload.get("name"):
            commands.append(visible(str(payload["name"])))
    stop_reason = state.stop_reason if state.state == "idle" else None
    return {  # hidden characters made visible, as in agent_facts
        "label": visible(label),
        "agent": visible(agent_name),
        "id": visible(session.id),
        "cwd": visible(session.cwd),
        "title": visible(state.title or ""),
        "state": visible(state.state or "new"),
        "stop_reason": visible(stop_reason) if stop_reason else None,
        "usage": _usage_text(state.usage),
        "commands": commands,
        "config": _config_options(session),
        "pending": sum(1 for d in session.permissions if d.pending),
        "closed": bool(session.closed),
    }


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


def _handles(nb: Notebook) -> list[AgentHandle]:
    """The open agents, then the closed ones still remembered."""
    handles = list(nb.agents.values())
    return handles + [h for h in nb.closed_agents.values() if h not in handles]


def grant_facts(nb: Notebook, handles: Iterable[AgentHandle] | None = None) -> list[dict[str, Any]]:
    """Every request of the agents' sessions (open and closed agents, unless ``handles`` are
    given) settled by an "always" option, oldest first: what it covered, the choice, when it
    was asked, which session, who decided (I/O thread)."""
    found = []
    for handle in _handles(nb) if handles is None else handles:
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
                    {
                        "what": _what(decision),
                        "kind": kind,
                        "allow": kind == "allow_always",
                        "option": visible(option.name if option is not None else str(kind)),
                        "at": time.strftime("%H:%M:%S", time.localtime(at)) if at else "",
                        "session": visible(nb.name_of(session) or "(unnamed)"),
                        "session_id": visible(session.id),
                        "agent": visible(handle.name),
                        "by": visible(str(decision.decided_by)),
                        "detail": visible(decision.detail),
                    }
                )
    return found


def _grant_line(f: dict[str, Any]) -> str:
    at = f" at {f['at']}" if f["at"] else ""
    detail = f" ({f['detail']})" if f["detail"] else ""
    return (
        f"{f['option']}: {f['what']}  (session {f['session']} {f['session_id']} on {f['agent']},"
        f" by {f['by']}{detail}{at})"
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


def _grant_html(f: dict[str, Any]) -> str:
    at = f" · {e(f['at'])}" if f["at"] else ""
    return (
        f'<div class="acp-panel-grant" data-allow="{"true" if f["allow"] else "false"}">'
        f"<b>{e(f['option'])}</b> <code>{e(f['what'])}</code><br>"
        f"session <b>{e(f['session'])}</b> on {e(f['agent'])}{at} · by {e(f['by'])}</div>"
    )


def _agent_html(f: dict[str, Any], error: str = "") -> str:
    if f["alive"]:
        state, badge = "alive", f"alive · pid {f['pid']}"
    else:
        state, badge = "exited", f"exited · {f['exit']}"
    parts = [
        f'<div class="acp-panel-agent-info" data-name="{e(f["name"])}" data-state="{state}">',
        f"<b>{e(f['name'])}</b> {e(f['title'])} <code>{e(f['version'])}</code> ",
        f'<span class="acp-badge acp-agent-state" data-state="{state}">{e(badge)}</span>',
        f'<div class="acp-panel-argv"><code>{e(f["argv"])}</code></div>',
    ]
    if f["stderr"]:
        parts.append(f'<pre class="acp-panel-stderr">{e(f["stderr"])}</pre>')
    if error:
        parts.append(f'<div class="acp-panel-error">{e(error)}</div>')
    parts.append("</div>")
    return "".join(parts)


def _state_label(f: dict[str, Any]) -> str:
    if f["closed"]:
        return "closed"
    if f["stop_reason"]:
        return f"{f['state']} ({f['stop_reason']})"
    return str(f["state"])


def _session_html(f: dict[str, Any], error: str = "") -> str:
    title = f" · {e(f['title'])}" if f["title"] else ""
    parts = [
        f'<div class="acp-panel-session-info" data-state="{e(f["state"])}">',
        f"<b>{e(f['label'])}</b> on {e(f['agent'])}{title} ",
        f'<span class="acp-badge acp-session-state">{e(_state_label(f))}</span>',
        f'<div><code title="{e(f["id"])}">{e(f["id"])}</code> in'
        f' <code title="{e(f["cwd"])}">{e(f["cwd"])}</code></div>',
    ]
    if f["usage"]:
        parts.append(f'<div class="acp-panel-usage">usage: {e(f["usage"])}</div>')
    if f["commands"]:
        names = " ".join(f"<code>/{e(name)}</code>" for name in f["commands"])
        parts.append(f'<div class="acp-panel-commands">commands: {names}</div>')
    if error:
        parts.append(f'<div class="acp-panel-error">{e(error)}</div>')
    parts.append("</div>")
    return "".join(parts)


def _section(css: str, title: str) -> tuple[Any, Any, Any]:
    head = ipywidgets.HTML(value=f'<div class="acp-panel-section-title">{e(title)}</div>')
    body = ipywidgets.VBox()
    box = ipywidgets.VBox([head, body])
    box.add_class("acp-panel-section")
    box.add_class(css)
    return box, head, body


def _close_tree(widget: Any) -> None:
    """Close a panel widget and what it holds, except the terminal models the cells share."""
    if isinstance(widget, TerminalWidget):
        return
    for child in getattr(widget, "children", ()):
        _close_tree(child)
    close_deep(widget)


def _cell_id(run: Any) -> str:
    key = str(getattr(run, "key", ""))
    return key[5:] if key.startswith("cell:") else ""


def _run_done(run: Any) -> bool:
    done = getattr(run, "done", None)
    return bool(run.turn.done or (done is not None and done.done()))


def _view_open(run: Any) -> bool:
    return getattr(run.view, "comm", None) is not None


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


# -- the panel ---------------------------------------------------------------------------------


@dataclass
class _Entry:
    """One pending permission request or question in the inbox."""

    asked: Asked | Question
    card: PermissionCard
    box: Any
    widgets: list[Any] = field(default_factory=list)


class _Row:
    """A row of widgets kept across refreshes (agent, session or terminal)."""

    def __init__(self, box: Any, info: Any, extra: dict[str, Any] | None = None) -> None:
        self.box = box
        self.info = info
        self.extra: dict[str, Any] = extra or {}


class SidePanel:
    """The kernel side of the agent panel; see the module docstring for the threading rules."""

    def __init__(self, nb: Notebook) -> None:
        self.nb = nb
        self.io = nb.io
        self._lock = threading.RLock()
        # Set while *this thread* writes picker values: only those echoes are ignored, a
        # person's change handled meanwhile on another thread still counts.
        self._syncing = threading.local()
        self._closed = False
        self._dirty = True
        self._tick = 0
        self._runs: list[Any] = []
        self._entries: list[_Entry] = []
        self._errors: dict[str, str] = {}  # agent name or session id -> last action error
        self._busy: set[str] = set()  # agent names being closed or restarted
        self._agent_rows: dict[int, _Row] = {}
        self._session_rows: dict[str, _Row] = {}
        self._term_rows: dict[int, _Row] = {}
        self._log_name = ""
        self._log_dirty = True
        self.panel = AgentPanel(title="ACP agents")
        self.panel.add_class("acp-agent-panel")
        agents, self._agents_head, self._agents = _section("acp-panel-agents", "Agents")
        sessions, self._sessions_head, self._sessions = _section("acp-panel-sessions", "Sessions")
        inbox, self._inbox_head, self._inbox = _section("acp-panel-inbox", "Approval inbox")
        terms, self._terms_head, self._terms = _section("acp-panel-terminals", "Terminals")
        work, self._work_head, self._work = _section("acp-panel-background", "Background work")
        self._work_rows: dict[tuple[str, str, str], _Row] = {}
        logs, self._log_head, self._log_body = _section("acp-panel-log", "Protocol log")
        grants, self._grants_head, self._grants = _section("acp-panel-grants", "Grants")
        self._grants_html = ipywidgets.HTML(value="")
        self._grants.children = (self._grants_html,)
        self._log_pick = ipywidgets.Dropdown(options=[], description="")
        self._log_pick.add_class("acp-panel-log-pick")
        self._log_pick.observe(self._on_log_pick, names="value")
        self._copy = ipywidgets.Button(description="Copy", icon="copy", tooltip="copy the log")
        self._save = ipywidgets.Button(description="Save", icon="download", tooltip="save the log")
        self._copy.on_click(lambda _b: self._export(copy=True))
        self._save.on_click(lambda _b: self._export(copy=False))
        self._log_pre = ipywidgets.HTML(value="")
        self._log_pre.add_class("acp-panel-log-text")
        self._log_body.children = (
            ipywidgets.HBox([self._log_pick, self._copy, self._save]),
            self._log_pre,
        )
        self._sections = (inbox, work, terms, agents, sessions, grants, logs)
        self.panel.children = self._sections
        self._loop_future: Any = None

    # -- lifecycle -----------------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._closed or self.panel.comm is None

    @property
    def shows_requests(self) -> bool:
        """A front end shows this panel: a request in its inbox can be answered."""
        return not self.closed and bool(self.panel.rendered)

    def start(self) -> None:
        """Take in what already exists, then keep the panel fresh from the I/O thread."""
        self.io.call(self._scan)
        self.io.call(self.refresh)
        self._loop_future = self.io.submit(self._loop)

    def ensure_running(self, io: IOThread) -> None:
        """After the bridge made a new I/O thread (a kernel restart of the bridge), move there."""
        if self._loop_future is not None and not self._loop_future.done() and io is self.io:
            return
        self.io = io
        self._loop_future = io.submit(self._loop)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            for entry in self._entries:
                self._drop_card(entry)
            self._entries.clear()
        if self._loop_future is not None:
            self._loop_future.cancel()
        _close_tree(self.panel)

    async def _loop(self) -> None:
        while not self.closed:
            await anyio.sleep(REFRESH_INTERVAL)
            try:
                self.refresh()
            except Exception:
                log.exception("refreshing the agent panel failed")

    @property
    def _handles(self) -> dict[str, AgentHandle]:
        """The notebook's agents, open then recently closed, by name: the notebook owns the
        registry; the panel keeps none of its own."""
        return {handle.name: handle for handle in _handles(self.nb)}

    def _scan(self) -> None:
        """Agents, runs and pending permissions that existed before the panel (I/O thread)."""
        for run in self.nb.runs:
            self._add_run(run)
        for asked in self.nb.pending():
            self._add_entry(asked, timeout=None)

    # -- events --------------------------------------------------------------------------------
    def on_agent(self, handle: AgentHandle) -> None:
        with self._lock:
            self._dirty = True
        self.ensure_running(handle.io)

    def on_turn(self, run: Any) -> None:
        with self._lock:
            self._add_run(run)
            self._dirty = True

    def on_permission(self, run: Any, asked: Asked) -> None:
        """A new permission request (I/O thread, after the cell's card exists)."""
        if asked.outcome is not None:
            return
        with self._lock:
            self._add_run(run)
            self._add_entry(asked, timeout=run.card_timeout())
            self._sync_inbox()

    def on_question(self, run: Any, question: Question) -> None:
        """A new question (I/O thread, after the cell's form exists, if its cell still does)."""
        if question.outcome is not None:
            return
        with self._lock:
            self._add_run(run)
            self._add_entry(question, timeout=run.card_timeout())
            self._sync_inbox()

    def on_settled(self, _run: Any, asked: Asked | Question) -> None:
        """A request was decided (I/O thread; its card here shows it already): it leaves the
        inbox now, not at the next refresh."""
        with self._lock:
            if any(entry.asked is asked for entry in self._entries) and not self.closed:
                self._sync_inbox()

    def mark_dirty(self, *_args: Any) -> None:
        self._dirty = True

    def _add_run(self, run: Any) -> None:
        if run not in self._runs:
            self._runs.append(run)

    def _add_entry(self, asked: Asked | Question, timeout: float | None) -> None:
        if self._closed or any(entry.asked is asked for entry in self._entries):
            return
        run = asked.run
        card: Any
        if isinstance(asked, Question):
            question = asked

            def on_answer(action: str, content: Any, by: str) -> None:
                if by == "closed":
                    return  # closing the panel's copy of a form never answers anything
                question.answer(action, content, "panel" if by == "click" else by)

            card = ElicitationCard(
                question.request, on_answer, timeout=timeout, outcome=question.outcome
            )
        else:
            permission = asked

            def on_choose(option_id: str | None, by: str) -> None:
                if by == "closed":
                    return  # closing the panel's copy of a card never decides anything
                permission.choose(option_id, "panel" if by == "click" else by)

            card = PermissionCard(
                permission.request, on_choose, timeout=timeout, outcome=permission.outcome
            )
        asked.cards.append(card)  # the run pushes the outcome to it
        label = ipywidgets.HTML(value=self._entry_label(run))
        show = ipywidgets.Button(description="Show in notebook", icon="arrow-right")
        show.add_class("acp-panel-show")
        show.on_click(lambda _b: self.panel.scroll_to(_cell_id(run), run.view.model_id))
        box = ipywidgets.VBox([label, card, show])
        box.add_class("acp-inbox-entry")
        self._entries.append(_Entry(asked, card, box, [label, show]))

    def _drop_card(self, entry: _Entry) -> None:
        with contextlib.suppress(ValueError):
            entry.asked.cards.remove(entry.card)
        entry.card.close_quietly()

    def _entry_label(self, run: Any) -> str:
        name = visible(self._session_names().get(id(run.session), run.session.id))
        cell = visible(_cell_id(run))
        where = f"cell <code>{e(cell)}</code>" if cell else e(visible(str(run.key)))
        return (
            f'<div class="acp-inbox-label">session <b>{e(name)}</b> on '
            f"{e(visible(run.handle.name))} · {where}</div>"
        )

    # -- refresh (I/O thread) ---------------------------------------------------------------------
    def refresh(self) -> None:
        """Bring every section up to date; sends only what changed."""
        with self._lock:
            if self.closed:
                return
            self._tick += 1
            with self.panel.hold_sync():
                self._sync_inbox()
                self._sync_agents()
                self._sync_sessions()
                self._sync_terminals()
                self._sync_background()
                self._sync_grants()
                if self._tick % LOG_EVERY == 1 or self._log_dirty:
                    self._log_dirty = False
                    self._sync_log()
            self._dirty = False

    def _sync_inbox(self) -> None:
        keep = []
        for entry in self._entries:
            if entry.asked.outcome is None and not entry.card.decided:
                keep.append(entry)
            else:
                self._drop_card(entry)
                for widget in entry.widgets:
                    _close_tree(widget)
                entry.box.close()
        self._entries = keep
        set_children(self._inbox, [entry.box for entry in keep])
        set_if_changed(self.panel, "pending_count", len(keep))
        title = f"Approval inbox ({len(keep)} pending)" if keep else "Approval inbox (empty)"
        set_if_changed(
            self._inbox_head, "value", f'<div class="acp-panel-section-title">{e(title)}</div>'
        )

    def _sync_agents(self) -> None:
        rows = []
        for handle in self._handles.values():
            row = self._agent_rows.get(id(handle))
            if row is None:
                row = self._agent_row(handle)
                self._agent_rows[id(handle)] = row
            facts = agent_facts(handle)
            set_if_changed(row.info, "value", _agent_html(facts, self._errors.get(handle.name, "")))
            busy = handle.name in self._busy
            set_if_changed(row.extra["close"], "disabled", busy or not facts["alive"])
            set_if_changed(row.extra["restart"], "disabled", busy)
            rows.append(row.box)
        live = {id(h) for h in self._handles.values()}
        for key in [k for k in self._agent_rows if k not in live]:
            _close_tree(self._agent_rows.pop(key).box)
        set_children(self._agents, rows)
        alive = sum(1 for h in self._handles.values() if h.alive)
        head = f"Agents ({alive} alive, {len(self._handles) - alive} exited)"
        set_if_changed(
            self._agents_head, "value", f'<div class="acp-panel-section-title">{e(head)}</div>'
        )

    def _agent_row(self, handle: AgentHandle) -> _Row:
        info = ipywidgets.HTML()
        restart = ipywidgets.Button(description="Restart", icon="refresh")
        close = ipywidgets.Button(description="Close", icon="stop", button_style="danger")
        restart.on_click(lambda _b: self.restart_agent(handle))
        close.on_click(lambda _b: self.close_agent(handle))
        box = ipywidgets.VBox([info, ipywidgets.HBox([restart, close])])
        box.add_class("acp-panel-agent")
        return _Row(box, info, {"restart": restart, "close": close})

    def _session_names(self) -> dict[int, str]:
        return {id(named.session): named.name for named in self.nb.sessions}

    def _sync_sessions(self) -> None:
        names = self._session_names()
        rows = []
        seen = set()
        for handle in self._handles.values():
            for session in list(handle.agent.sessions.values()):
                key = f"{id(handle)}:{session.id}"
                seen.add(key)
                row = self._session_rows.get(key)
                if row is None:
                    row = _Row(ipywidgets.VBox(), ipywidgets.HTML(), {"pickers": {}})
                    row.box.add_class("acp-panel-session")
                    self._session_rows[key] = row
                label = names.get(id(session), "(unnamed)")
                facts = session_facts(label, handle.name, session)
                set_if_changed(
                    row.info, "value", _session_html(facts, self._errors.get(session.id, ""))
                )
                pickers = self._sync_pickers(row, handle, session, facts["config"])
                set_children(row.box, [row.info, *pickers])
                rows.append(row.box)
        for key in [k for k in self._session_rows if k not in seen]:
            _close_tree(self._session_rows.pop(key).box)
        set_children(self._sessions, rows)
        head = f"Sessions ({len(rows)})"
        set_if_changed(
            self._sessions_head, "value", f'<div class="acp-panel-section-title">{e(head)}</div>'
        )

    def _sync_pickers(
        self, row: _Row, handle: AgentHandle, session: Any, config: list[dict[str, Any]]
    ) -> list[Any]:
        pickers: dict[str, Any] = row.extra["pickers"]
        shown = []
        for option in config:
            config_id = str(option.get("configId", ""))
            kind = option.get("type")
            if not config_id or kind not in ("select", "boolean"):
                continue
            picker = pickers.get(config_id)
            if picker is None:
                picker = self._make_picker(handle, session, config_id, kind)
                pickers[config_id] = picker
            self._syncing.on = True
            try:
                set_if_changed(picker, "description", visible(str(option.get("name", config_id))))
                if kind == "select":
                    choices = _choices(option)
                    set_if_changed(picker, "options", choices)
                    current = str(option.get("currentValue", ""))
                    if current in [value for _l, value in choices]:
                        set_if_changed(picker, "value", current)
                else:
                    set_if_changed(picker, "value", bool(option.get("currentValue")))
                set_if_changed(picker, "disabled", not handle.alive or bool(session.closed))
            finally:
                self._syncing.on = False
            shown.append(picker)
        return shown

    def _echo(self) -> bool:
        """Is this change one we are making ourselves (in this thread)?"""
        return bool(getattr(self._syncing, "on", False))

    def _make_picker(self, handle: AgentHandle, session: Any, config_id: str, kind: str) -> Any:
        if kind == "select":
            picker = ipywidgets.Dropdown(options=[])
        else:
            picker = ipywidgets.Checkbox(value=False, indent=False)
        picker.add_class("acp-panel-config")

        def changed(change: dict[str, Any]) -> None:
            if self._echo() or change.get("new") is None:
                return
            self.set_config_option(handle, session, config_id, change["new"])

        picker.observe(changed, names="value")
        return picker

    def _sync_terminals(self) -> None:
        self._runs = [run for run in self._runs if _view_open(run)][-MAX_RUNS:]
        running = [run for run in self._runs if not _run_done(run)]
        finished = [run for run in self._runs if _run_done(run)]
        chosen: list[tuple[Any, str, Any]] = []
        for run in [*running, *reversed(finished)]:
            widgets = getattr(run.view, "terminal_widgets", {})
            for term_id, widget in widgets.items():
                if widget.comm is not None:
                    chosen.append((run, term_id, widget))
        chosen = chosen[:MAX_TERMINALS]
        names = self._session_names()
        rows = []
        for run, _term_id, widget in chosen:
            row = self._term_rows.get(id(widget))
            if row is None:
                head = ipywidgets.HTML()
                box = ipywidgets.VBox([head, widget])
                box.add_class("acp-panel-terminal")
                row = _Row(box, head)
                self._term_rows[id(widget)] = row
            name = visible(names.get(id(run.session), run.session.id))
            where = visible(_cell_id(run) or str(run.key))
            state = "running" if not _run_done(run) else "finished"
            set_if_changed(
                row.info,
                "value",
                f'<div class="acp-panel-terminal-label" data-state="{state}">'
                f"session <b>{e(name)}</b> · {e(where)} · {state}</div>",
            )
            rows.append(row.box)
        keep = {id(widget) for _r, _t, widget in chosen}
        for key in [k for k in self._term_rows if k not in keep]:
            row = self._term_rows.pop(key)
            row.info.close()
            row.box.close()  # never the terminal model itself: the cell still shows it
        set_children(self._terms, rows)
        live = sum(
            1 for run, _t, widget in chosen if widget.exit_status is None and not _run_done(run)
        )
        head = f"Terminals ({len(chosen)} shown, {live} running)" if chosen else "Terminals (none)"
        set_if_changed(
            self._terms_head, "value", f'<div class="acp-panel-section-title">{e(head)}</div>'
        )

    def _sync_background(self) -> None:
        """Every session's background work (the latest snapshots), with Stop buttons."""
        rows = []
        seen = set()
        for handle in self._handles.values():
            for f in background_facts(self.nb, handle):
                session = f["session_obj"]
                key = (session.id, f["kind"], f["id"])
                seen.add(key)
                row = self._work_rows.get(key)
                if row is None:
                    row = self._work_row(handle, session, f["kind"], f["id"])
                    self._work_rows[key] = row
                error = self._errors.get(f"{session.id}:{f['kind']}:{f['id']}", "")
                set_if_changed(
                    row.info,
                    "value",
                    f'<span class="acp-background-label">{e(f["label"])}</span> '
                    f'<span class="acp-background-status">{e(f["status"])}</span> '
                    f'<span class="acp-panel-background-where">session <b>{e(f["session"])}</b>'
                    f" on {e(f['agent'])}</span>"
                    + (f' <span class="acp-panel-error">{e(error)}</span>' if error else ""),
                )
                row.extra["stop"].layout.display = "" if f["can_stop"] else "none"
                rows.append(row.box)
        for key in [k for k in self._work_rows if k not in seen]:
            _close_tree(self._work_rows.pop(key).box)
        set_children(self._work, rows)
        head = f"Background work ({len(rows)})" if rows else "Background work (none)"
        set_if_changed(
            self._work_head, "value", f'<div class="acp-panel-section-title">{e(head)}</div>'
        )

    def _work_row(self, handle: AgentHandle, session: Any, kind: str, item_id: str) -> _Row:
        info = ipywidgets.HTML()
        stop = ipywidgets.Button(description="Stop", icon="stop", button_style="danger")
        stop.add_class("acp-background-stop")
        stop.on_click(lambda _b: self.stop_item(handle, session, kind, item_id))
        box = ipywidgets.HBox([info, stop])
        box.add_class("acp-panel-background-item")
        return _Row(box, info, {"stop": stop})

    def stop_item(self, handle: AgentHandle, session: Any, kind: str, item_id: str) -> None:
        """``terminal/cancel`` or ``tool_call/cancel`` from the I/O thread (without waiting);
        the agent's error answer is shown on the row."""

        async def send() -> None:
            key = f"{session.id}:{kind}:{item_id}"
            try:
                if kind == "terminal":
                    await session.cancel_terminal(item_id)
                else:
                    await session.cancel_tool_call(item_id)
                self._errors.pop(key, None)
            except Exception as exc:
                message = str(getattr(exc, "message", None) or exc)
                log.warning("stopping %s %s failed: %s", kind, item_id, message)
                self._errors[key] = f"stop failed: {message}"
            self._dirty = True

        handle.io.submit(send)

    def _sync_grants(self) -> None:
        found = grant_facts(self.nb, self._handles.values())
        head = f"Grants ({len(found)})" if found else "Grants (none)"
        set_if_changed(
            self._grants_head, "value", f'<div class="acp-panel-section-title">{e(head)}</div>'
        )
        body = "".join(_grant_html(f) for f in found)
        if found:
            body += f'<div class="acp-panel-grants-note">{e(GRANTS_NOTE)}</div>'
        set_if_changed(self._grants_html, "value", body)

    def _sync_log(self) -> None:
        names = list(self._handles)
        self._syncing.on = True
        try:
            set_if_changed(self._log_pick, "options", names)
            if self._log_name not in names:
                self._log_name = names[-1] if names else ""
            if self._log_name:
                set_if_changed(self._log_pick, "value", self._log_name)
        finally:
            self._syncing.on = False
        handle = self._handles.get(self._log_name)
        text = (
            log_text(self.nb, handle, LOG_LINES, 600)
            if handle is not None
            else "(no agent connected)"
        )
        shown = e(visible_lines(text))  # a raw line from the agent may hold anything
        set_if_changed(self._log_pre, "value", f'<pre class="acp-panel-log-pre">{shown}</pre>')

    def _on_log_pick(self, change: dict[str, Any]) -> None:
        if self._echo() or not change.get("new"):
            return
        self._log_name = str(change["new"])
        self._log_dirty = True

    # -- actions (main thread: never block) -----------------------------------------------------
    def _export(self, *, copy: bool) -> None:
        handle = self._handles.get(self._log_name)
        if handle is None:
            return
        text = self.io.call(log_text, self.nb, handle, 1000)
        if copy:
            self.panel.copy_text(text)
        else:
            stamp = time.strftime("%Y%m%d-%H%M%S")
            self.panel.download(f"acp-{handle.name}-{stamp}.log", text)

    def close_agent(self, handle: AgentHandle) -> None:
        self._in_worker(handle, restart=False)

    def restart_agent(self, handle: AgentHandle) -> None:
        self._in_worker(handle, restart=True)

    def _in_worker(self, handle: AgentHandle, *, restart: bool) -> None:
        with self._lock:
            if handle.name in self._busy:
                return
            self._busy.add(handle.name)
            self._errors.pop(handle.name, None)
            self._dirty = True
        threading.Thread(
            target=self._close_or_restart,
            args=(handle, restart),
            name="acp-panel-agent-action",
            daemon=True,
        ).start()

    def _close_or_restart(self, handle: AgentHandle, restart: bool) -> None:
        try:
            if restart:  # as `%acp connect`: the old agent goes once the new one initialized
                self.nb.reconnect(handle.name)
            else:
                self.nb.close(handle)
        except Exception as exc:
            log.warning(
                "agent %s: %s failed: %r", handle.name, "restart" if restart else "close", exc
            )
            with self._lock:
                self._errors[handle.name] = f"{'restart' if restart else 'close'} failed: {exc}"
        finally:
            with self._lock:
                self._busy.discard(handle.name)
                self._dirty = True

    def set_config_option(
        self, handle: AgentHandle, session: Any, config_id: str, value: Any
    ) -> None:
        """Send ``session/set_config_option`` from the I/O thread (without waiting)."""

        async def send() -> None:
            try:
                await session.set_config_option(config_id, value)  # updates its own state
                self._errors.pop(session.id, None)
            except Exception as exc:
                log.warning("set_config_option %s failed: %r", config_id, exc)
                self._errors[session.id] = f"setting {config_id} failed: {exc}"
            self._dirty = True

        handle.io.submit(send)

    # -- text --------------------------------------------------------------------------------
    def summary(self) -> str:
        """The text summary (I/O thread). Its inbox is read from the decisions themselves, as
        ``%acp status`` counts them, not from the inbox widgets: those are only pruned by the
        next refresh, so a request settled since (a timeout, a click in the cell) used to be
        listed as pending still. The widgets are brought up to date on the way."""
        with self._lock:
            if not self.closed:
                self._sync_inbox()
            return _summary(self.nb, self._handles.values(), self._runs)


# -- the text summary (also for front ends without the labextension) -----------------------------


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


def background_facts(nb: Notebook, handle: AgentHandle) -> list[dict[str, Any]]:
    """The background work of every session of an agent, from the latest ``background``
    snapshot: session, kind, id, what it is, how it stands, whether it can be stopped."""
    found = []
    for session in list(handle.agent.sessions.values()):
        for kind, item_id in session.state.background_items():
            label, status, can_stop = describe_item(session.state, kind, item_id)
            found.append(
                {
                    "session": visible(nb.name_of(session) or "(unnamed)"),
                    "session_obj": session,
                    "agent": visible(handle.name),
                    "kind": kind,
                    "id": item_id,
                    "label": visible(label),
                    "status": visible(status),
                    "can_stop": can_stop and handle.alive,
                }
            )
    return found


def _background_lines(nb: Notebook, handle: AgentHandle) -> list[str]:
    return [
        f"  {f['label']}  [{f['status']}]  (session {f['session']} on {f['agent']})"
        for f in background_facts(nb, handle)
    ]


def _summary(nb: Notebook, handles: Iterable[AgentHandle], runs: Iterable[Any]) -> str:
    """Every string from the agent or the user is shown with its hidden characters made
    visible (the text goes to ``text/plain``, where front ends read ESC as a colour code)."""
    names = {id(named.session): named.name for named in nb.sessions}
    lines = ["Agents:"]
    handles = list(handles)
    for handle in handles:
        f = agent_facts(handle)
        life = f"alive (pid {f['pid']})" if f["alive"] else f"exited ({f['exit']})"
        lines.append(f"  {f['name']}: {f['title']} {f['version']}, {life}, argv {f['argv']}")
        if f["stderr"]:
            lines.append("    stderr tail: " + f["stderr"].replace("\n", "\n      "))
    if not handles:
        lines.append("  (none connected)")
    lines.append("Sessions:")
    count = 0
    for handle in handles:
        for session in list(handle.agent.sessions.values()):
            count += 1
            f = session_facts(names.get(id(session), "(unnamed)"), handle.name, session)
            title = f" '{f['title']}'" if f["title"] else ""
            lines.append(f"  {f['label']} on {f['agent']}: {f['id']}{title}, {_state_label(f)}")
            if f["usage"]:
                lines.append(f"    usage: {f['usage']}")
            for option in f["config"]:
                name = option.get("name", option.get("configId"))
                lines.append(visible(f"    {name}: {option.get('currentValue')}"))
            if f["commands"]:
                lines.append("    commands: " + " ".join("/" + c for c in f["commands"]))
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
            state = "running" if not _run_done(run) else "finished"
            command = visible(widget.command)  # the turn view made it visible; no harm twice
            terms.append(f"  $ {command}  [{state}, {len(widget.data)} bytes]")
    lines.append(f"Terminals: {len(terms)}")
    lines.extend(terms[-MAX_TERMINALS:])
    found = grant_facts(nb, handles)
    lines.append(f"Grants: {len(found)}")
    lines.extend(f"  {_grant_line(f)}" for f in found)
    return "\n".join(lines)


def summary_text(nb: Notebook) -> str:
    """The panel's information as text (read in the I/O thread)."""
    panel = current(nb)
    if panel is not None:
        return str(panel.io.call(panel.summary))
    return str(nb.io.call(_summary, nb, list(nb.agents.values()), nb.runs))


# -- the notebook's panel, and the event subscriptions -------------------------------------------


def current(nb: Notebook) -> SidePanel | None:
    """The notebook's open panel, if any."""
    panel = nb.panel
    if not isinstance(panel, SidePanel) or panel.closed or panel.io.stopped:
        return None  # (its I/O thread ended at shutdown)
    return panel


def open_panel(nb: Notebook, show: bool = True) -> SidePanel:
    """Create the panel if needed and (``show``) ask the front ends to open it."""
    install(nb)
    panel = current(nb)
    if panel is None:
        panel = SidePanel(nb)
        panel.start()
        nb.attach_panel(panel)
    if show:
        panel.panel.show()
    return panel


def close_panel(nb: Notebook) -> None:
    panel = nb.detach_panel()
    if isinstance(panel, SidePanel):
        panel.close()


def panel_shows(nb: Notebook) -> bool:
    """Whether the notebook's panel is open in a front end (``CellRun.panel_shows``)."""
    panel = current(nb)
    return panel is not None and panel.shows_requests


def install(nb: Notebook) -> None:
    """Subscribe the panel to the notebook's events (once per notebook)."""
    if not nb.install_once("sidepanel"):
        return

    def connected(handle: AgentHandle) -> None:
        panel = current(nb)
        if panel is not None:
            panel.on_agent(handle)
        elif nb.panel_auto_make and not nb.panel_made_once:
            # Made the first time an agent connects, so the sidebar tab counts pending
            # requests; revealed only with `%acp panel --auto`.
            nb.panel_auto_made()
            open_panel(nb, show=nb.panel_auto_show)

    def forward(method: str) -> Callable[..., None]:
        def call(*args: Any) -> None:
            panel = current(nb)
            if panel is not None:
                getattr(panel, method)(*args)

        return call

    nb.events.subscribe("agent_connected", connected)
    for event, method in (
        ("agent_closed", "mark_dirty"),
        ("turn_started", "on_turn"),
        ("turn_ended", "mark_dirty"),
        ("permission", "on_permission"),
        ("permission_settled", "on_settled"),
        ("elicitation", "on_question"),
        ("elicitation_settled", "on_settled"),
        ("session_update", "mark_dirty"),
    ):
        nb.events.subscribe(event, forward(method))
