"""``SidePanel``: the sections of the agent panel, its inbox of cards, and its refresher
(see the package docstring for the threading rules)."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import ipywidgets  # type: ignore[import-untyped]

from .._notebook._bridge import AgentHandle, IOThread
from .._notebook._cells import Asked, Question, Request
from .._notebook._facts import (
    GRANTS_NOTE,
    LOG_LINES,
    MAX_TERMINALS,
    LogMark,
    agent_facts,
    background_facts,
    choices,
    grant_facts,
    handles_of,
    log_mark,
    log_text,
    run_done,
    session_facts,
    status_text,
)
from .._notebook._owner import Notebook
from .._widgets import AgentPanel, PermissionCard, TerminalWidget
from .._widgets._parts import e, set_children, set_if_changed, visible, visible_lines
from ._html import (
    _agent_html,
    _cell_id,
    _close_tree,
    _grant_html,
    _section,
    _session_html,
    _view_open,
)

log = logging.getLogger("acp_notebook.sidepanel")


#: At most one panel refresh per this many seconds.
REFRESH_INTERVAL = 0.25


#: With nothing changed, background work (its elapsed times) and the protocol log (it changes
#: with every message, which sends no event) are re-rendered this often; nothing else is.
CLOCK_INTERVAL = 2.0


#: A change renders the protocol log again only when it is this old (a flood's every message
#: would re-render it); a new pick renders it at once.
LOG_INTERVAL = 1.0


#: Finished turns remembered for their terminals.
MAX_RUNS = 20


@dataclass
class _Entry:
    """One pending permission request or question in the inbox."""

    asked: Request
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
        self._wake: anyio.Event | None = None  # set to end the refresher's wait (I/O thread)
        #: full renders (every section) and clock renders so far (what a test counts)
        self.renders = {"full": 0, "clock": 0}
        self._log_at = -LOG_INTERVAL  # (time.monotonic of the log's last render)
        self._log_shown: LogMark | None = None  # which log, as of when, it shows
        self._runs: list[Any] = []
        self._entries: list[_Entry] = []
        self._errors: dict[str, str] = {}  # agent name or session id -> last action error
        self._busy: set[str] = set()  # agent names being closed or restarted
        self._agent_rows: dict[int, _Row] = {}
        self._session_rows: dict[str, _Row] = {}
        self._term_rows: dict[int, _Row] = {}
        self._log_name = ""
        self.panel = AgentPanel(title="ACP agents")
        # a front end that comes to show it gets every section at once (nothing aged meanwhile)
        self.panel.on_rendered(self.mark_dirty)
        self.panel.add_class("acp-agent-panel")
        agents, self._agents_head, self._agents = _section("acp-panel-agents", "Agents")
        sessions, self._sessions_head, self._sessions = _section("acp-panel-sessions", "Sessions")
        inbox, self._inbox_head, self._inbox = _section("acp-panel-inbox", "Approval inbox")
        terms, self._terms_head, self._terms = _section("acp-panel-terminals", "Terminals")
        work, self._work_head, self._work = _section("acp-panel-background", "Background work")
        self._work_rows: dict[tuple[str, str, str], _Row] = {}
        self._log_body = ipywidgets.VBox()
        # The protocol log folds (a person opens it when something went wrong): with it open, a
        # request waiting in another notebook would sit below it (issue 25, finding 9).
        logs = ipywidgets.Accordion(
            children=(self._log_body,), titles=("Protocol log",), selected_index=None
        )
        logs.add_class("acp-panel-section")
        logs.add_class("acp-panel-log")
        self._logs = logs
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
        """Render when something changed (``mark_dirty``), at most every REFRESH_INTERVAL;
        else only the clock's sections, every CLOCK_INTERVAL, and those only while a front end
        shows the panel (an idle kernel with an agent spent 2-3% of a core on them)."""
        while not self.closed:
            self._wake = anyio.Event()
            if not self._dirty:
                with anyio.move_on_after(CLOCK_INTERVAL):
                    await self._wake.wait()
            try:
                if self._dirty:
                    self.refresh()
                elif self.panel.rendered:  # (no front end shows it: nothing to age)
                    self.refresh_clock()
            except Exception:
                log.exception("refreshing the agent panel failed")
            await anyio.sleep(REFRESH_INTERVAL)  # a burst of changes is one render

    @property
    def _handles(self) -> dict[str, AgentHandle]:
        """The notebook's agents, open then recently closed, by name: the notebook owns the
        registry; the panel keeps none of its own."""
        return {handle.name: handle for handle in handles_of(self.nb)}

    def _scan(self) -> None:
        """Agents, runs and pending permissions that existed before the panel (I/O thread)."""
        for handle in handles_of(self.nb):
            handle.when_done(self.mark_dirty)
        for run in self.nb.runs:
            self._add_run(run)
        for asked in self.nb.pending():
            self._add_entry(asked, timeout=None)

    # -- events --------------------------------------------------------------------------------
    def on_agent(self, handle: AgentHandle) -> None:
        self.ensure_running(handle.io)
        handle.when_done(self.mark_dirty)  # an agent that exits by itself sends no event
        self.mark_dirty()

    def on_turn(self, run: Any) -> None:
        with self._lock:
            self._add_run(run)
        self.mark_dirty()

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

    def on_settled(self, _run: Any, asked: Request) -> None:
        """A request was decided (I/O thread; its card here shows it already): it leaves the
        inbox now, not at the next refresh."""
        with self._lock:
            if any(entry.asked is asked for entry in self._entries) and not self.closed:
                self._sync_inbox()

    def mark_dirty(self, *_args: Any) -> None:
        """Something the panel shows changed (any thread): render soon. (A flood of updates
        wakes the refresher once: the refresher reads the flag after it makes its event.)"""
        if self._dirty:
            return
        self._dirty = True
        wake = self._wake
        if wake is not None and not self.io.stopped:
            self.io.soon(wake.set)

    def _add_run(self, run: Any) -> None:
        if run not in self._runs:
            self._runs.append(run)

    def _add_entry(self, asked: Request, timeout: float | None) -> None:
        if self._closed or any(entry.asked is asked for entry in self._entries):
            return
        run = asked.run
        card = asked.second_card(timeout)  # a click answers as "panel"; closing it, nothing
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
            self._dirty = False  # (first: a change while this runs renders again)
            self.renders["full"] += 1
            with self.panel.hold_sync():
                self._sync_inbox()
                self._sync_agents()
                self._sync_sessions()
                self._sync_terminals()
                self._sync_background()
                self._sync_grants()
                if time.monotonic() - self._log_at >= LOG_INTERVAL:
                    self._sync_log()

    def refresh_clock(self) -> None:
        """Only what ages with nothing to tell: background work's times, the protocol log."""
        with self._lock:
            if self.closed:
                return
            self.renders["clock"] += 1
            with self.panel.hold_sync():
                self._sync_background()
                self._sync_log()

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
            set_if_changed(row.extra["close"], "disabled", busy or not facts.alive)
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
                pickers = self._sync_pickers(row, handle, session, facts.config)
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
        self, row: _Row, handle: AgentHandle, session: Any, config: Sequence[dict[str, Any]]
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
                    labelled = choices(option)
                    set_if_changed(picker, "options", labelled)
                    current = str(option.get("currentValue", ""))
                    if current in [value for _l, value in labelled]:
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
        running = [run for run in self._runs if not run_done(run)]
        finished = [run for run in self._runs if run_done(run)]
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
            # the terminal's own state, not its turn's: a background command runs on after its
            # turn ended (issue 25, finding 6)
            state = "running" if _runs(widget) else "finished"
            set_if_changed(
                row.info,
                "value",
                f'<div class="acp-panel-terminal-label" data-state="{state}">'
                f"session <b>{e(name)}</b> · {e(where)} · {e(widget.label)}</div>",
            )
            rows.append(row.box)
        keep = {id(widget) for _r, _t, widget in chosen}
        for key in [k for k in self._term_rows if k not in keep]:
            # with their layout and style models; never the terminal model: a cell shows it
            _close_tree(self._term_rows.pop(key).box)
        set_children(self._terms, rows)
        live = sum(1 for _run, _t, widget in chosen if _runs(widget))
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
                session = f.session_obj
                key = (session.id, f.kind, f.id)
                seen.add(key)
                row = self._work_rows.get(key)
                if row is None:
                    row = self._work_row(handle, session, f.kind, f.id)
                    self._work_rows[key] = row
                error = self._errors.get(f"{session.id}:{f.kind}:{f.id}", "")
                set_if_changed(
                    row.info,
                    "value",
                    f'<span class="acp-background-label">{e(f.label)}</span> '
                    f'<span class="acp-background-status">{e(f.status)}</span> '
                    f'<span class="acp-panel-background-where">session <b>{e(f.session)}</b>'
                    f" on {e(f.agent)}</span>"
                    + (f' <span class="acp-panel-error">{e(error)}</span>' if error else ""),
                )
                row.extra["stop"].layout.display = "" if f.can_stop else "none"
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
            self.mark_dirty()

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
        self._log_at = time.monotonic()
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
        shown = log_mark(handle) if handle is not None else None
        if shown is not None and shown.same(self._log_shown):
            return  # the same log, nothing logged since: its lines are already there
        text = (
            log_text(self.nb, handle, LOG_LINES, 600)
            if handle is not None
            else "(no agent connected)"
        )
        lines = e(visible_lines(text))  # a raw line from the agent may hold anything
        set_if_changed(self._log_pre, "value", f'<pre class="acp-panel-log-pre">{lines}</pre>')
        self._log_shown = shown  # (only once shown: a render that failed is made again)

    def _on_log_pick(self, change: dict[str, Any]) -> None:
        if self._echo() or not change.get("new"):
            return
        self._log_name = str(change["new"])
        self._log_at = -LOG_INTERVAL
        self.mark_dirty()

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
            self.mark_dirty()
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
                self.mark_dirty()

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
            self.mark_dirty()

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
            return status_text(self.nb, self._handles.values(), self._runs)


def _runs(widget: TerminalWidget) -> bool:
    """The terminal's command is running: no exit status, and not one that never ran."""
    return widget.exit_status is None and widget.phase in ("", "running")
