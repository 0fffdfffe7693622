"""The notebook layer's one owner: a :class:`Notebook` per kernel.

It holds what the magics, the cells and the side panel share: the I/O thread, the connected
agents (and the last few closed ones), the default agent, the named sessions, the cells' runs
and the event bus the panel listens to. Every operation on them is a method here, so that
``%acp connect`` and the panel's Restart take one path, and ``%acp close`` and the panel's
Close another. Its errors carry fields (``NoSuchAgent(name, known)``, ``AgentGone(name,
exit_status, stderr_tail)`` ...); only ``_magics`` turns them into sentences.

Threads: the magics call it on the kernel's main thread, the panel's buttons from worker
threads, the panel's refresher reads it on the I/O thread. Its registry is guarded by a lock;
session state itself is only read on the I/O thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from .._client._errors import AuthenticationRequired
from .._client._session import Session
from .._connection._errors import AcpError
from ._allowlist import Allowlist
from ._bridge import CONNECT_TIMEOUT, AgentHandle, Connector, IOThread, open_agent
from ._errors import (
    DEFAULT_SESSION,
    AgentGone,
    ConfigNotApplied,
    NoKernelTools,
    NoSuchAgent,
    NoSuchConfigOption,
    NoSuchSession,
    NotebookError,
    SessionOfAnotherAgent,
    SignInRequired,
    StartConfigFailed,
)
from ._events import Events
from ._pacing import CellPacing
from ._redact import REDACTED, redact

if TYPE_CHECKING:
    from .._kernel._tools import Grant, KernelTools
    from ._cells import Asked, CellRun
    from ._start import CellRequest, CellStarted

__all__ = [
    "LogLine",
    "NamedSession",
    "Notebook",
    "current",
    "shorten_base64",
]

log = logging.getLogger("acp_notebook.notebook")

CLOSED_KEPT = 8  # closed agents remembered (by name) for `%acp status` and error messages


# -- values ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class NamedSession:
    """A session under the name the notebook gave it, and the name of its agent."""

    name: str
    agent: str
    session: Session


@dataclass(frozen=True)
class LogLine:
    """One protocol message of an agent's connection, for a person: base64 payloads
    shortened, ``--env`` values redacted. ``str()`` is ``-> {...}`` or ``<- {...}``."""

    direction: Literal["send", "recv"]
    text: str

    def __str__(self) -> str:
        return f"{'->' if self.direction == 'send' else '<-'} {self.text}"


_HIDDEN = {"api-key": REDACTED}


def _sign_in_key(direction: str, message: object) -> str | None:
    """The API key a sent ``authenticate`` / ``auth/login`` carries (``_meta["api-key"]``)."""
    if direction != "send" or not isinstance(message, dict):
        return None
    if message.get("method") not in ("authenticate", "auth/login"):
        return None
    from .._client._traces import sent_api_key

    return sent_api_key(message)


_B64 = re.compile(r'"(data|blob)":\s*"([A-Za-z0-9+/=]{64,})"')


def shorten_base64(text: str, keep: int = 24) -> str:
    return _B64.sub(lambda m: f'"{m[1]}":"{m[2][:keep]}…(+{len(m[2]) - keep} chars)"', text)


#: Seconds a widget front end has to render a new side panel before the kernel takes it for
#: one without the labextension (turns then show their terminals as text: ``_start``).
PANEL_WAIT = 10.0
PANEL_TRIES = 6
#: How long past a terminal view's due time a cell waits for the kernel to conclude (the
#: wait's timer runs on the agent's I/O thread), and how often it looks (seconds).
_EXTENSION_GRACE = 0.5
_EXTENSION_POLL = 0.05


# -- the notebook ----------------------------------------------------------------------------


class Notebook:
    """What one kernel's notebook layer holds; see the module docstring."""

    def __init__(self, *, connector: Callable[..., Connector] | None = None) -> None:
        #: how agents are reached: ``connector(argv, cwd, env)`` returns a ``Connector``
        #: (None: launch a subprocess). Tests run the embedded agent in memory with it.
        self.connector = connector
        self.events = Events()
        self._lock = threading.RLock()
        self._io: IOThread | None = None
        self._agents: dict[str, AgentHandle] = {}
        self._closed: dict[str, AgentHandle] = {}  # the last few closed, oldest first
        self._default: str | None = None  # the agent connected last
        self._sessions: dict[str, NamedSession] = {}
        #: each ``%%acp`` cell's latest run, by cell key
        self.cells: dict[str, CellRun] = {}
        self._cell_id: str | None = None
        #: agent name -> the session name ``session/new`` refused until sign-in
        self._sign_in: dict[str, str] = {}
        self._panel: Any = None
        self._panel_auto_make = True  # make it on the first connect (its tab counts requests)
        self._panel_auto_show = False  # and also reveal it then
        self._panel_made_once = False
        #: the views subscribed to its events (``"sidepanel"``), so each subscribes once
        self._installed: set[str] = set()
        #: the kernel's MCP server (``%acp connect --kernel-tools``), made on first use
        self.kernel_tools: KernelTools | None = None
        self._kernel_tools_source: tuple[Callable[[], Any], Any, Any, Any] | None = None
        self._tooled: set[str] = set()  # agents connected with --kernel-tools
        #: back-pressure on background floods while the user's cells run (``_pacing``)
        self.pacing = CellPacing()
        self._allowlist = Allowlist()  # the configured list; the environment's is read on use
        #: whether a front end with the labextension showed a view here (None: not known yet)
        self._extension: bool | None = None
        self._unstyled = False
        #: when a terminal's view is due to have said ``ready`` (``time.monotonic()``), once a
        #: widget front end was sent one while the extension was not known
        self._extension_due: float | None = None

    # -- the cell being run, the panel, the kernel's objects: set by commands ------------------
    @property
    def cell_id(self) -> str | None:
        """The id of the cell being run (from IPython's ``pre_run_cell``), if the front end
        sends one."""
        return self._cell_id

    def cell_started(self, cell_id: str | None) -> None:
        self._cell_id = cell_id

    @property
    def panel(self) -> Any:
        """The side panel, once made (``_sidepanel`` attaches it here)."""
        return self._panel

    def attach_panel(self, panel: Any) -> None:
        self._panel = panel
        # a front end with the labextension renders the panel as soon as it is made; a widget
        # front end that has not after PANEL_WAIT seconds lacks it (VS Code, Colab)
        model = getattr(panel, "panel", None)
        on_rendered = getattr(model, "on_rendered", None)
        if on_rendered is None:
            return
        on_rendered(lambda: self.extension_seen(unstyled=getattr(model, "unstyled", False)))
        self._await_panel(model, PANEL_TRIES)

    def _await_panel(self, model: Any, tries: int) -> None:
        """After PANEL_WAIT seconds: a panel no front end rendered, while a widget front end
        runs the cells (a cell id, or ipywidgets' control comm), means no labextension. No
        such sign yet (``%load_ext`` in the cell that connected, before a cell id was seen):
        look again, up to ``tries`` times."""
        from ._cells import front_end_seen

        def due() -> None:
            if getattr(model, "answered", False) or getattr(model, "comm", None) is None:
                return
            if self._cell_id is not None or front_end_seen():
                self.extension_missing()
            elif tries > 1:
                self._await_panel(model, tries - 1)

        timer = threading.Timer(PANEL_WAIT, due)
        timer.daemon = True
        timer.start()

    def detach_panel(self) -> Any:
        """Forget the panel; returns it (to be closed by its maker)."""
        panel, self._panel = self._panel, None
        return panel

    @property
    def panel_made_once(self) -> bool:
        """Whether a connect made the panel already (it is made once, however it closes)."""
        return self._panel_made_once

    def panel_auto_made(self) -> None:
        self._panel_made_once = True

    @property
    def panel_auto_make(self) -> bool:
        """Make the panel on the first connect (its tab counts requests)."""
        return self._panel_auto_make

    @property
    def panel_auto_show(self) -> bool:
        """And also reveal it then."""
        return self._panel_auto_show

    def set_panel_auto(self, *, make: bool, show: bool = False) -> None:
        """``%acp panel --auto`` / ``--no-auto``: whether a connect makes (and shows) the panel."""
        self._panel_auto_make = make
        self._panel_auto_show = show

    @property
    def kernel_tools_source(self) -> tuple[Callable[[], Any], Any, Any, Any] | None:
        """How the kernel tools reach the user's objects and cells: ``(namespace, shell,
        main-thread runner, run_code)``."""
        return self._kernel_tools_source

    def use_kernel_tools_source(self, source: tuple[Callable[[], Any], Any, Any, Any]) -> None:
        """Set by ``%load_ext`` (``run_code`` is ``_kernel_code``'s)."""
        self._kernel_tools_source = source

    # -- the I/O thread -------------------------------------------------------------------
    @property
    def io(self) -> IOThread:
        with self._lock:
            if self._io is None or self._io.stopped:
                self._io = IOThread(self.pacing)
            return self._io

    # -- agents ---------------------------------------------------------------------------
    @property
    def agents(self) -> dict[str, AgentHandle]:
        """The open agents by name (an agent leaves when it is closed, not when it exits)."""
        with self._lock:
            return dict(self._agents)

    @property
    def closed_agents(self) -> dict[str, AgentHandle]:
        """The last few agents that were closed, by name, oldest first."""
        with self._lock:
            return dict(self._closed)

    def default_name(self) -> str | None:
        """The default agent: the last one connected, or (once it is closed) the newest open."""
        with self._lock:
            if self._default in self._agents:
                return self._default
            return next(reversed(self._agents), None)

    def agent(self, name: str | None = None) -> AgentHandle:
        """An open agent (it may have exited by itself); ``NoSuchAgent`` otherwise."""
        with self._lock:
            key = name or self.default_name()
            if key is not None and key in self._agents:
                return self._agents[key]
            closed = key if key in self._closed else None
            if name is None and self._default in self._closed:
                closed = self._default
            raise NoSuchAgent(name, list(self._agents), closed)

    @staticmethod
    def live(handle: AgentHandle) -> AgentHandle:
        """The handle, if its agent still runs; ``AgentGone`` otherwise."""
        if not handle.alive:
            raise AgentGone(handle.name, handle.exit_status, handle.stderr_tail())
        return handle

    def connect(
        self,
        name: str,
        argv: Sequence[str],
        cwd: str,
        *,
        timeout: float | None = CONNECT_TIMEOUT,
        env: Mapping[str, str] | None = None,
        connector: Connector | None = None,
        kernel_tools: bool = False,
        protocol: Literal["auto", 1, 2] = "auto",
        shortcut: str | None = None,
        start_config: Mapping[str, str] | None = None,
        trace: bool = False,
    ) -> tuple[AgentHandle, AgentHandle | None]:
        """Start and initialize an agent; only then does it replace the open agent of that
        name (closed: its pending requests fail closed, its session names are forgotten).
        Returns ``(new, replaced)``. Raises ``ConnectFailed`` and leaves the old one alone.
        ``kernel_tools``: its sessions get the kernel's MCP server (``NoKernelTools`` if the
        agent takes none; the new agent is closed then). ``shortcut``: the registry shortcut
        (or ``"embedded"``) ``argv`` was made from, which the allowlist names it by; an agent
        the allowlist refuses raises ``AgentNotAllowed`` before anything starts.
        ``start_config``: config options (a config id, or `_modes.MODE`, to a value) each new
        session of it is put in before its first prompt (`StartConfigFailed` otherwise).
        ``trace``: record every frame from ``initialize`` on (`export_trace`)."""
        self._allowlist.check(shortcut, argv)
        env = dict(env or {})
        if connector is None and self.connector is not None:
            connector = self.connector(list(argv), cwd, env)
        handle = open_agent(
            self.io,
            name,
            argv,
            cwd,
            timeout=timeout,
            env=env,
            connector=connector,
            protocol=protocol,
            trace=trace,
        )
        handle.registry_id = _registry_id(shortcut, handle)
        handle.start_config = dict(start_config or {})
        if kernel_tools:
            from .._kernel._tools import mcp_entry

            if mcp_entry(handle.agent, "http://127.0.0.1:1/mcp", "-") is None:
                handle.close()
                raise NoKernelTools(name)
            self._kernel_tools_server()  # started now: a failure is the connect's
        with self._lock:
            old = self._agents.get(name)
        if old is not None:
            self.close(old)
        with self._lock:
            self._agents[name] = handle
            self._closed.pop(name, None)
            self._default = name
            if kernel_tools:
                self._tooled.add(name)
        self.events.emit("agent_connected", handle)
        return handle, old

    @property
    def extension(self) -> bool | None:
        """True once a view of the labextension said it renders here (a terminal's ``ready``);
        False once a front end failed to (terminals then show as text); None: not known."""
        return self._extension

    def extension_seen(self, unstyled: bool = False) -> None:
        self._extension = True  # also after a front end without it was seen (another client)
        if unstyled:
            self._unstyled = True

    @property
    def unstyled(self) -> bool:
        """True once a terminal's view said its page lacks the extension's output-area styles
        (VS Code with the nbextension): its terminals render live, but nothing hides a turn's
        transcript while the live view shows, so the transcript replaces the view at the end
        and the running record stays empty, as without the extension."""
        return self._unstyled

    def extension_missing(self) -> None:
        if self._extension is None:
            self._extension = False

    def expect_extension(self, within: float) -> None:
        """A widget front end was sent a terminal while the extension is not known: its view
        says ``ready`` within ``within`` seconds, or the front end lacks the extension."""
        if self._extension is None and self._extension_due is None:
            self._extension_due = time.monotonic() + within

    async def extension_known(self) -> None:
        """Wait until the front end has shown whether it has the extension (and its page the
        styles), if a terminal's view is due to say so: a turn that ends first then shows
        once, not twice, where the view's ``ready`` is slow to come (a loaded machine, VS Code's
        renderer starting up). Returns at once when nothing is due; waits at most until the
        view is due, and a moment for the wait's own timer to conclude."""
        due = self._extension_due
        if due is None:
            return
        limit = due + _EXTENSION_GRACE
        while self._extension is None and time.monotonic() < limit:
            await asyncio.sleep(_EXTENSION_POLL)

    def text_terminals(self, run: CellRun) -> bool:
        """Whether ``run``'s view shows its terminals as text (see ``_start.shows_text``);
        I/O thread."""
        from ._start import shows_text

        return shows_text(self, run)

    def set_allowed_agents(self, entries: Sequence[str] | None) -> None:
        """The configured allowlist (``AcpMagics.allowed_agents``; None: not set). The
        environment's (``ACP_NOTEBOOK_ALLOWED_AGENTS``) applies as well, whatever this says."""
        self._allowlist = Allowlist(None if entries is None else tuple(entries))

    def reconnect(
        self, name: str, env: Mapping[str, str] | None = None
    ) -> tuple[AgentHandle, AgentHandle | None]:
        """Start agent ``name`` again as it was started (``env`` added to its environment):
        the panel's Restart and a sign-in with a password field."""
        with self._lock:
            old = self._agents.get(name) or self._closed.get(name)
        if old is None:
            raise NoSuchAgent(name, list(self.agents), None)
        return self.connect(
            name,
            old.argv,
            old.cwd,
            env={**old.env, **(env or {})},
            connector=old.connector,
            kernel_tools=self.has_kernel_tools(name),
            protocol=old.protocol,
            start_config=old.start_config,
            trace=old.traced,
        )

    def close(self, agent: str | AgentHandle | None = None) -> AgentHandle:
        """Close an agent: its pending requests fail closed, then its session names go."""
        handle = agent if isinstance(agent, AgentHandle) else self.agent(agent)
        handle.close()
        self._close_kernel_tools(handle)
        with self._lock:
            if self._agents.get(handle.name) is handle:
                del self._agents[handle.name]
                self._closed.pop(handle.name, None)
                self._closed[handle.name] = handle
                while len(self._closed) > CLOSED_KEPT:
                    del self._closed[next(iter(self._closed))]
            for key, named in list(self._sessions.items()):
                if named.session.agent is handle.agent:
                    del self._sessions[key]
        self.events.emit("agent_closed", handle)
        return handle

    # -- sessions -------------------------------------------------------------------------
    @property
    def sessions(self) -> list[NamedSession]:
        with self._lock:
            return list(self._sessions.values())

    def named(self, name: str) -> NamedSession:
        with self._lock:
            found = self._sessions.get(name)
            if found is None:
                raise NoSuchSession(name, list(self._sessions))
            return found

    def name_of(self, session: Session) -> str | None:
        with self._lock:
            for named in self._sessions.values():
                if named.session is session:
                    return named.name
        return None

    def bind(self, name: str, agent: str, session: Session) -> NamedSession:
        """Give ``session`` (of agent ``agent``) the name ``name`` (``%acp resume``)."""
        named = NamedSession(name, agent, session)
        with self._lock:
            self._sessions[name] = named
        return named

    def session(
        self,
        name: str,
        *,
        new: bool = False,
        agent: str | None = None,
        config: Mapping[str, str] | None = None,
    ) -> NamedSession:
        """The named session, started with ``session/new`` when needed (or when ``new``).

        ``config``: options this new session starts in instead of its agent's own
        (`AgentHandle.start_config`), for it alone.
        ``agent`` picks the agent; without it, a session name that is an agent's name picks
        that agent, else the default agent. Raises ``NoSuchAgent``, ``AgentGone``,
        ``SessionOfAnotherAgent`` or ``SignInRequired``.
        """
        if agent is not None:
            self.agent(agent)  # NoSuchAgent names the connected ones
        with self._lock:
            found = self._sessions.get(name)
            agents = dict(self._agents)
        if not new and found is not None:
            if agent is not None and found.agent != agent:
                raise SessionOfAnotherAgent(name, found.agent, agent)
            handle = agents.get(found.agent)
            if (
                handle is not None
                and handle.alive
                and found.session.agent is handle.agent
                and not found.session.closed
            ):
                return found
        pick = agent if agent is not None else name if name in agents else None
        handle = self.live(agents[pick] if pick is not None else self.agent())
        entries, grant = self.mcp_servers(handle)
        try:
            fresh: Session = handle.io.call(
                functools.partial(handle.agent.new_session, handle.cwd, mcp_servers=entries)
            )
        except AuthenticationRequired as exc:
            self._revoke(grant)
            with self._lock:
                self._sign_in[handle.name] = name  # `%acp auth` opens it once signed in
            reason = str(exc.__cause__ or exc)
            raise SignInRequired(handle.name, name, exc.methods, reason) from None
        except BaseException:
            self._revoke(grant)
            raise
        if grant is not None and self.kernel_tools is not None:
            self.kernel_tools.bind(grant, fresh)
        self._start_config(handle, fresh, grant, config)
        return self.bind(name, handle.name, fresh)

    def _start_config(
        self,
        handle: AgentHandle,
        session: Session,
        grant: Any,
        config: Mapping[str, str] | None = None,
    ) -> None:
        """Put a new (or resumed) session in its agent's `AgentHandle.start_config` (``config``
        over it) before any prompt; raise `StartConfigFailed` when it cannot be, or when the
        agent answers but reports another value: the session is closed and never named, its
        kernel tools' grant revoked."""
        for key, word in {**handle.start_config, **(config or {})}.items():
            try:
                self._set_config(handle, session, key, word)
            except (NotebookError, AcpError) as exc:
                self._revoke(grant)
                with contextlib.suppress(Exception):
                    handle.io.call(session.close)
                raise StartConfigFailed(handle.name, key, word, exc) from None

    def _set_config(self, handle: AgentHandle, session: Session, key: str, word: str) -> Any:
        """Set option ``key`` (a config id, its name or `_modes.MODE`) of ``session`` to the
        value ``word`` names; return its `ConfigFact` as the agent answered. Raises
        `NoSuchConfigOption`, `NoSuchConfigValue` or the agent's `AcpError`."""
        from ._modes import config_facts, find_option, pick_value

        option = find_option(config_facts(self._options(handle, session)), key)
        value = pick_value(option, word)
        handle.io.call(functools.partial(session.set_config_option, option.config_id, value))
        now = find_option(config_facts(self._options(handle, session)), option.config_id)
        if now.current != value:  # the agent answered, and kept another value
            raise ConfigNotApplied(option.config_id, str(value), str(now.current))
        return now

    def _options(self, handle: AgentHandle, session: Session) -> list[dict[str, Any]]:
        from ._facts import _config_options

        options: list[dict[str, Any]] = handle.io.call(_config_options, session)
        return options

    def config(self, name: str, agent: str | None = None) -> tuple[NamedSession, list[Any]]:
        """Session ``name`` (started if needed, as a cell would) and its config options as
        `_modes.ConfigFact` s."""
        from ._modes import config_facts

        named = self.session(name, agent=agent)
        handle = self.agent(named.agent)
        return named, config_facts(self._options(handle, named.session))

    def set_config(
        self, name: str, key: str, word: str, agent: str | None = None
    ) -> tuple[NamedSession, Any]:
        """Set option ``key`` (a config id, its name, or `_modes.MODE`) of session ``name``
        (started if needed) to the value ``word`` names. Returns the session and the option
        as the agent then reports it. Raises `NoSuchConfigOption`, `NoSuchConfigValue`, or the
        agent's `AcpError` when it refuses. A session yet to start starts in this value, not in
        the one its agent starts sessions in (``--mode``); other sessions are not changed."""
        with self._lock:
            exists = name in self._sessions
        # a session yet to start starts in this value (not in its agent's --mode), and only it
        named = self.session(name, agent=agent, config=None if exists else {key: word})
        return named, self._set_config(self.agent(named.agent), named.session, key, word)

    def mode_option(self, name: str) -> tuple[Any, Any]:
        """Session ``name``'s mode option (a `ConfigFact`) and its `ModeFact`; the session is
        started if needed. Raises `NoSuchConfigOption` when it has no mode."""
        from ._modes import MODE, mode_option

        _, options = self.config(name)
        option = mode_option(options)
        if option is None:
            raise NoSuchConfigOption(MODE, [o.config_id for o in options])
        return option, self.mode(name)

    def mode(self, name: str) -> Any:
        """The `_modes.ModeFact` of session ``name`` (None: it has no mode, or no such
        session yet); never starts a session."""
        from ._modes import mode_fact

        with self._lock:
            found = self._sessions.get(name)
            handle = self._agents.get(found.agent) if found is not None else None
        if found is None or handle is None:
            return None
        return mode_fact(self._options(handle, found.session), handle.registry_id)

    def resume(self, name: str, session_id: str, *, agent: str | None = None) -> NamedSession:
        """``session/resume`` of ``session_id`` on agent ``agent`` (default: the default
        agent), its history replayed, named ``name`` here; with the kernel tools' server for
        an agent that has them. Raises ``NoSuchAgent``, ``AgentGone`` or the agent's error."""
        handle = self.live(self.agent(agent))
        entries, grant = self.mcp_servers(handle)
        call = functools.partial(
            handle.agent.resume_session, session_id, handle.cwd, replay=True, mcp_servers=entries
        )
        try:
            session: Session = handle.io.call(call)
        except BaseException:
            self._revoke(grant)
            raise
        if grant is not None and self.kernel_tools is not None:
            self.kernel_tools.bind(grant, session)
        self._start_config(handle, session, grant)  # a resumed session is held to --mode too
        return self.bind(name, handle.name, session)

    # -- kernel tools ---------------------------------------------------------------------
    def has_kernel_tools(self, agent: str) -> bool:
        with self._lock:
            return agent in self._tooled

    def _kernel_tools_server(self) -> KernelTools:
        """The kernel's MCP server, made and started on first use."""
        from .._kernel._tools import KernelTools

        with self._lock:
            tools = self.kernel_tools
            if tools is None:
                source = self.kernel_tools_source or (dict, None, None, None)
                namespace, shell, on_main, run_code = source
                tools = KernelTools(
                    namespace,
                    shell=shell,
                    on_main=on_main,
                    run_code=run_code,
                    on_event=self._on_tool_event,
                )
                self.kernel_tools = tools
        tools.start()
        return tools

    def _on_tool_event(self, event: Any) -> None:
        """A kernel tool event (the server's thread): on the event bus, and a tool's answer
        shown in the cell of the session's running turn (what went to the agent is visible;
        ``run_code`` has its own card)."""
        self.events.emit("kernel_tool", event)
        if event.kind != "call" or event.tool == "run_code" or event.session_id is None:
            return
        runs = [  # the agent's own session: two agents may give theirs the same id
            run
            for run in self.runs
            if run.session.id == event.session_id
            and run.handle.name == event.agent
            and run.done is not None
            and not run.done.done()
        ]
        if not runs:
            return
        run = runs[-1]

        def show() -> None:  # the I/O thread: the cards of one cell are counted here
            from .._widgets._sent import MAX_SENT_CARDS, SentCard, SentMore

            if run.view_gone:
                return  # no cell to show it in (the panel lists no answers)
            shown = [c for c in run.view.cards if isinstance(c, SentCard | SentMore)]
            if len(shown) < MAX_SENT_CARDS:
                error = event.detail == "error"
                run.show_card(SentCard(event.tool, event.about, event.text, error=error))
                return
            more = next((c for c in shown if isinstance(c, SentMore)), None)
            if more is None:
                more = SentMore()
                run.show_card(more)
            more.add(event.text)
            run.note_change()

        run.io.soon(show)

    def mcp_servers(self, handle: AgentHandle) -> tuple[list[dict[str, Any]] | None, Grant | None]:
        """The ``mcpServers`` for a new (or resumed) session of ``handle``, and its grant
        (bind it to the session once it exists): the kernel's server for an agent connected
        with ``--kernel-tools``, nothing otherwise."""
        if not self.has_kernel_tools(handle.name):
            return None, None
        from .._kernel._tools import mcp_entry

        tools = self._kernel_tools_server()
        grant = tools.issue(handle.name)
        handle.secrets.add(grant.token)  # its stderr never shows it
        grant.alive = lambda: handle.alive  # an agent that exited by itself opens nothing
        entry = mcp_entry(handle.agent, tools.url, grant.token)
        if entry is None:
            tools.revoke(grant)
            return None, None
        return [entry], grant

    def kernel_tool_events(self, agent: AgentHandle | str | None = None, n: int = 20) -> list[Any]:
        """The last ``n`` kernel tool events (``_kernel_tools.ToolEvent``) for an agent's log:
        its own calls and refusals, and the refusals no open agent owns (an unknown token, a
        closed agent's)."""
        handle = agent if isinstance(agent, AgentHandle) else self.agent(agent)
        tools = self.kernel_tools
        if tools is None:
            return []
        open_agents = set(self.agents)
        return [
            event
            for event in list(tools.events)
            if event.agent == handle.name or event.agent not in open_agents
        ][-n:]

    def _revoke(self, grant: Grant | None) -> None:
        if grant is not None and self.kernel_tools is not None:
            self.kernel_tools.revoke(grant)

    def _close_kernel_tools(self, handle: AgentHandle) -> None:
        """``handle`` is closed: its tokens open nothing any more, and the server stops once
        no open agent has kernel tools."""
        tools = self.kernel_tools
        if tools is None:
            return
        tools.revoke_agent(handle.name)
        with self._lock:
            if self._agents.get(handle.name) is handle:
                self._tooled.discard(handle.name)
            still = any(name in self._tooled for name in self._agents if name != handle.name)
        if not still:
            tools.stop()

    def take_sign_in_session(self, agent: str) -> str:
        """The session ``session/new`` refused for ``agent`` until sign-in (forgotten now: a
        sign-in opens it once), else the default session."""
        with self._lock:
            return self._sign_in.pop(agent, DEFAULT_SESSION)

    def install_once(self, what: str) -> bool:
        """True the first time ``what`` (a view's event subscriptions: ``"sidepanel"``) is
        installed on this notebook, False after."""
        with self._lock:
            if what in self._installed:
                return False
            self._installed.add(what)
            return True

    # -- cells ----------------------------------------------------------------------------
    def start_cell(self, request: CellRequest) -> CellStarted:
        """Open a cell's turn and its view (``_start``); ``begin_cell`` then starts it."""
        from ._start import start_cell

        return start_cell(self, request)

    def begin_cell(self, started: CellStarted) -> None:
        """Start a cell's turn on the I/O thread, once its view is shown."""
        from ._start import begin

        begin(self, started)

    def replace_run(self, key: str, run: CellRun | None) -> CellRun | None:
        """Make ``run`` the run of cell ``key``; returns the run it replaces."""
        with self._lock:
            previous = self.cells.pop(key, None)
            if run is not None:
                self.cells[key] = run
            return previous

    @property
    def runs(self) -> list[CellRun]:
        with self._lock:
            return list(self.cells.values())

    def pending(self) -> list[Asked]:
        """Every permission request a cell shows that is not settled yet (the inbox)."""
        return [asked for run in self.runs for asked in list(run.asked) if asked.outcome is None]

    # -- logs -----------------------------------------------------------------------------
    def log(
        self, agent: AgentHandle | str | None = None, n: int = 20, *, compact: bool = False
    ) -> list[LogLine]:
        """The last ``n`` protocol messages of an agent, for a person (see ``LogLine``);
        ``compact``: JSON without spaces (the panel's narrow column)."""
        handle = agent if isinstance(agent, AgentHandle) else self.agent(agent)
        separators = (",", ":") if compact else (", ", ": ")
        entries = list(handle.agent.connection.log)
        secrets = self._secrets(handle, entries)
        lines = []
        for entry in entries[-n:]:
            direction, message = entry[0], entry[1]
            if isinstance(message, dict) and _sign_in_key(direction, message) is not None:
                params = message["params"]
                message = message | {"params": params | {"_meta": params["_meta"] | _HIDDEN}}
            if not isinstance(message, str):
                message = json.dumps(message, ensure_ascii=False, separators=separators)
            text = redact(shorten_base64(message), secrets)
            lines.append(LogLine("send" if direction == "send" else "recv", text))
        return lines

    def _secrets(self, handle: AgentHandle, entries: Sequence[Any]) -> dict[str, str]:
        """What a log or a trace of ``handle`` must not show: its ``--env`` values, the kernel
        tools' tokens (in ``session/new``), the keys its sign-ins sent (and where echoed)."""
        secrets = dict(handle.env)
        if self.kernel_tools is not None:
            secrets |= self.kernel_tools.secrets(handle.name)
        keys = [key for entry in entries if (key := _sign_in_key(entry[0], entry[1]))]
        return secrets | {f"api-key {i}": key for i, key in enumerate(keys)}

    def export_trace(self, path: str, agent: str | None = None) -> Any:
        """Write agent ``agent``'s protocol trace to ``path`` (`Agent.export_trace`), with what
        `log` redacts redacted; returns its `TraceExport`."""
        handle = self.agent(agent)  # (the sign-in keys of its frames: `Agent.export_trace`)
        secrets = self._secrets(handle, list(handle.agent.connection.log))
        return handle.io.call(
            functools.partial(handle.agent.export_trace, path, secrets=secrets.values())
        )

    # -- shutdown -------------------------------------------------------------------------
    def shutdown(self) -> None:
        """Kernel shutdown: every pending request fails closed, every agent is closed, the
        I/O thread stops. Every client terminal's command is killed first, at once (the
        closes below stop them again, and wait until they are gone)."""
        for handle in list(self.agents.values()):
            services = handle.agent.services
            if services is not None:
                services.terminals.kill_all_now()
        for handle in list(self.agents.values()):
            try:
                self.close(handle)
            except Exception:  # pragma: no cover - best effort at shutdown
                log.debug("closing %s failed", handle.name, exc_info=True)
        with self._lock:
            self._closed.clear()
            io, self._io = self._io, None
            tools = self.kernel_tools
        if tools is not None:
            tools.stop()
        if io is not None:
            io.stop()


# -- the one per kernel ----------------------------------------------------------------------

_current: Notebook | None = None
_current_lock = threading.Lock()


def current() -> Notebook:
    """This kernel's notebook (made on first use; closed at interpreter exit)."""
    global _current
    with _current_lock:
        if _current is None:
            import atexit

            _current = Notebook()
            atexit.register(_current.shutdown)
        return _current


def _registry_id(shortcut: str | None, handle: AgentHandle) -> str | None:
    """The registry id of a connected agent: its shortcut's, else the one its ``initialize``
    info names (a ``--`` command line of a registry agent)."""
    from ._registry import agent_id_for, lookup

    if shortcut is not None:
        entry = lookup(shortcut)
        if entry is not None:
            return entry.id
    info = handle.agent.info
    return agent_id_for(info.name) if info is not None else None
