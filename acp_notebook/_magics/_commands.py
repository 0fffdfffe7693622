"""The ``%acp`` subcommands (connect, agents, cancel, close, sessions, resume, status, log,
panel, grants; auth is ``_auth``'s): each parses its options, calls the notebook and words
what it returns."""

from __future__ import annotations

import datetime
import errno
import functools
import re
import shlex
import sys
from collections.abc import Callable, Sequence
from typing import Any

from IPython.core.error import UsageError

from .._client._errors import AuthenticationRequired, UnsupportedProtocolVersion
from .._connection._errors import AcpError
from .._notebook._allowlist import EMBEDDED
from .._notebook._bridge import CONNECT_TIMEOUT, AgentHandle
from .._notebook._errors import (
    DEFAULT_SESSION,
    NotebookError,
)
from .._notebook._failures import ConnectFailed
from .._notebook._modes import MODE
from .._notebook._owner import Notebook
from .._notebook._redact import redact
from ._auth import _auth_cmd
from ._parsers import (
    _PROTOCOLS,
    _SUBCOMMANDS,
    _HelpShown,
    _parse_sub,
    _positive_int,
    _positive_seconds,
    _sub_parser,
    acp_help,
    did_you_mean,
)
from ._words import (
    _ErrorBox,
    _one_line,
    _say,
    agent_lines,
    capability_summary,
    config_lines,
    history_lines,
    mode_lines,
    show,
    show_history,
    trace_lines,
    words,
)


def embedded_agent_argv() -> list[str]:
    return [sys.executable, "-m", "acp_notebook.agent"]


def default_agent_name(agent_argv: Sequence[str]) -> str:
    """The name ``%acp connect [-- ARGV]`` gives an agent when no ``--name`` is given: its
    program's file name (``python3``, ``python``, ...), or ``embedded`` for the built-in one.
    Tests derive the names they expect from here, whatever the interpreter is called."""
    import os.path

    return os.path.basename(agent_argv[0]) if agent_argv else "embedded"


def _connect(nb: Notebook, argv: list[str]) -> None:
    own: list[str] = argv
    agent_argv: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        own, agent_argv = argv[:cut], argv[cut + 1 :]
    parser = _sub_parser(
        "connect",
        "Launch an agent (the embedded agent when no ARGV is given after --) and initialize it."
        " It replaces an agent of the same name only once it is initialized.",
    )
    parser.usage = (
        "%(prog)s [AGENT] [--name NAME] [--cwd DIR] [--timeout SECONDS] [--env KEY=VALUE]"
        " [--protocol {auto,1,2}] [--kernel-tools] [--mode MODE] [--trace] [-- ARGV...]"
    )
    parser.add_argument(
        "agent",
        nargs="?",
        default=None,
        help="an agent of the vendored ACP registry snapshot, by id or shortcut (claude,"
        " codex, copilot, qwen, cline, gemini, opencode, ...; `%%acp agents` lists them);"
        " words after -- are added to its command",
    )
    parser.add_argument(
        "--trace",
        action="store_true",
        help="record every protocol frame from initialize on, for `%%acp log --export PATH`"
        " (without it, the export holds the last messages only)",
    )
    parser.add_argument(
        "--mode",
        default=None,
        help="start every session of the agent in this mode (a value or name of its mode"
        " option; `%%acp mode` lists them); a session that cannot be put in it sends no"
        " prompt",
    )
    parser.add_argument(
        "--name",
        default=None,
        help="name of the agent (default: embedded, AGENT, or ARGV[0]'s name)",
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="add a variable to the agent's environment (repeatable); values are never shown",
    )
    parser.add_argument("--cwd", default=None, metavar="DIR", help="its working directory")
    parser.add_argument(
        "--protocol",
        choices=["auto", "1", "2"],
        default="auto",
        help="the ACP version to speak: auto (offer 2, speak 1 if the agent answers 1), or force"
        " 1 or 2 (default: %(default)s)",
    )
    parser.add_argument(
        "--kernel-tools",
        action="store_true",
        help="give its sessions the kernel's MCP server (list_variables, inspect_variable,"
        " notebook_history, and run_code behind a code card): 127.0.0.1 only, a token per"
        " session",
    )
    parser.add_argument(
        "--timeout",
        type=_positive_seconds,
        default=CONNECT_TIMEOUT,
        metavar="SECONDS",
        help="stop the agent if it has not answered `initialize` after SECONDS"
        " (default: %(default)g)",
    )
    args = _parse_sub(parser, own)
    import os

    env = _env_options(args.env)
    cwd = os.path.abspath(os.path.expanduser(args.cwd or os.getcwd()))
    if not os.path.isdir(cwd):
        raise UsageError(f"%acp connect: {cwd} is not a directory")
    shortcut: str | None = args.agent  # what the allowlist names the agent by
    if args.agent is not None:
        launch = _shortcut(args.agent, cwd)
        command, env = [*launch.argv, *agent_argv], {**launch.env, **env}
        if agent_argv:  # an allowlist that names the shortcut allows its command as is
            shortcut = None
        name = args.name or args.agent
        _say(f"acp: starting {launch.entry.name} {launch.entry.version}: {shlex.join(command)}")
        _say_missing_keys(launch.entry, env)
    else:
        command = agent_argv or embedded_agent_argv()
        name = args.name or default_agent_name(agent_argv)
        shortcut = None if agent_argv else EMBEDDED
    if args.kernel_tools:
        _kernel_tools_source(nb)
    handle = _report_connect(
        name,
        command,
        env,
        lambda: nb.connect(
            name,
            command,
            cwd,
            timeout=args.timeout,
            env=env,
            kernel_tools=args.kernel_tools,
            protocol=_PROTOCOLS[args.protocol],
            shortcut=shortcut,
            start_config={MODE: args.mode} if args.mode is not None else None,
            trace=args.trace,
        ),
    )
    if args.mode is not None:
        _say(f"acp: every new session of {handle.name!r} starts in mode {args.mode!r}")
    if args.kernel_tools:
        _say(
            f"acp: kernel tools on for {handle.name!r}: its sessions get the kernel's MCP server"
            " (list_variables, inspect_variable, notebook_history, run_code); run_code asks"
            " in the cell first"
        )


def _kernel_tools_source(nb: Notebook) -> None:
    """Where the kernel tools read from: this shell's namespace and history, on the kernel's
    main thread (its event loop, where a ``%%acp`` cell awaits its turn)."""
    import asyncio

    import IPython

    from .._kernel._tools import loop_runner
    from .._notebook._kernel_code import request_code

    shell: Any = getattr(IPython, "get_ipython")()  # noqa: B009 - untyped under IPython 8 and 9
    try:
        loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:  # a shell without a running loop: read in the server's thread
        loop = None
    if shell is not None:
        nb.use_kernel_tools_source(
            (
                lambda: shell.user_ns,
                shell,
                loop_runner(loop) if loop is not None else None,
                lambda session_id, code: request_code(nb, session_id, code),
            )
        )


def _report_connect(
    name: str,
    command: list[str],
    env: dict[str, str],
    start: Callable[[], tuple[AgentHandle, AgentHandle | None]],
) -> AgentHandle:
    """Run ``start`` (``Notebook.connect`` or ``reconnect``: the new agent replaces the old one
    of its name only once initialized) and say what happened; a failure is one UsageError,
    with the whole story (stderr, every problem) shown above it when there is more to it."""
    try:
        handle, old = start()
    except ConnectFailed as exc:
        if exc.stderr_tail or len(exc.problems) > 1:  # more than the one line below says
            title = f"Could not connect {name!r} ({shlex.join(command)})"
            show(_ErrorBox(title, redact(str(exc), env)))
        summary = redact(exc.summary, env)
        if isinstance(exc.error, UnsupportedProtocolVersion):
            summary += " (acp_notebook speaks ACP v1 and v2)"
        if isinstance(exc.error, AuthenticationRequired):
            summary += "; it needs credentials before it starts: pass them with --env KEY=VALUE"
        raise UsageError(f"%acp connect: could not connect {name!r}: {summary}") from None
    pid = handle.agent.process.pid if handle.agent.process else "?"
    replaced = f"; it replaces the previous {name!r}, now closed" if old is not None else ""
    _say(f"acp: connected {name!r}: {handle.label} (pid {pid}, cwd {handle.cwd}){replaced}")
    _say(f"acp: protocol v{handle.agent.protocol_version}; {capability_summary(handle)}")
    return handle


def _env_options(items: Sequence[str]) -> dict[str, str]:
    """``--env KEY=VALUE`` options as a dict; an error names the key, never the value."""
    env: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            shown = key if sep else "(no '=')"
            raise UsageError(f"%acp connect: --env needs KEY=VALUE, got key {shown!r}")
        env[key] = value
    return env


def _say_missing_keys(entry: Any, env: dict[str, str]) -> None:
    """One line before a registry agent starts, when none of the key variables it looks for
    is set (in the kernel's environment or by --env): it may still sign in, or read a key from
    its own settings, so it is started anyway."""
    import os

    from .._notebook import _registry

    missing = _registry.missing_keys(entry.id, {**os.environ, **env})
    if not missing:
        return
    sign_in = _registry.notes(entry.id).sign_in
    other = f", sign in with {sign_in}" if sign_in else ""
    _say(
        f"acp: {entry.name} looks for {' or '.join(missing)}, which is not set here: pass"
        f" --env {missing[0]}=...{other}, or set it in its own settings"
    )


def _session_option(parser: Any) -> None:
    parser.add_argument(
        "--session", default=DEFAULT_SESSION, help="session name (default: %(default)s)"
    )


def _mode(nb: Notebook, argv: list[str]) -> None:
    parser = _sub_parser(
        "mode",
        "The session's mode (what the agent may do without asking depends on it); with MODE,"
        " switch to it. The session is started if it has not been.",
    )
    parser.add_argument("mode", nargs="?", default=None, help="a value or name of the mode")
    _session_option(parser)
    args = _parse_sub(parser, argv)
    if args.mode is not None:
        nb.set_config(args.session, MODE, args.mode)
    option, mode = nb.mode_option(args.session)
    for line in mode_lines(option, mode, changed=args.mode is not None):
        _say(line)


def _config(nb: Notebook, argv: list[str]) -> None:
    parser = _sub_parser(
        "config",
        "The session's config options (mode, model, ...); with ID VALUE, set one. The session"
        " is started if it has not been.",
    )
    parser.add_argument("id", nargs="?", default=None, help="an option's id (or name)")
    parser.add_argument("value", nargs="?", default=None, help="a value (or its name)")
    _session_option(parser)
    args = _parse_sub(parser, argv)
    if args.id is not None and args.value is None:
        raise UsageError("%acp config: give ID and VALUE, or neither")
    if args.id is not None:
        nb.set_config(args.session, args.id, args.value)
    _, options = nb.config(args.session)
    if not options:
        _say(f"acp: session {args.session!r} has no config options")
    for line in config_lines(options):
        _say(line)


def _shortcut(agent: str, cwd: str) -> Any:
    """A registry shortcut resolved to a command here (a `_registry.Launch`)."""
    from .._notebook import _registry

    entry = _registry.lookup(agent)
    if entry is None:
        known = ", ".join(sorted([*_registry.ALIASES, *_registry.entries()]))
        raise UsageError(
            f"%acp connect: no agent shortcut {agent!r}; `%acp agents` lists them: {known}"
        )
    launch = _registry.resolve_here(entry, cwd)
    if launch.missing is not None:
        raise UsageError(f"%acp connect: {launch.missing}")
    return launch


def _agents(nb: Notebook, argv: list[str]) -> None:
    parser = _sub_parser(
        "agents",
        "The ACP registry's agents (a vendored snapshot): whether each is installed here, how it"
        " starts, the protocol it speaks, what it needs and whether it asks before acting.",
    )
    parser.add_argument("agent", nargs="?", default=None, help="only this agent")
    parser.add_argument(
        "--installed", action="store_true", help="only the agents that run from this machine"
    )
    args = _parse_sub(parser, argv)
    import os

    from .._notebook import _registry

    chosen = list(_registry.entries().values())
    if args.agent is not None:
        entry = _registry.lookup(args.agent)
        if entry is None:
            raise UsageError(f"%acp agents: no agent {args.agent!r} in the registry snapshot")
        chosen = [entry]
    shown = 0
    root = functools.cache(_registry.npm_global_root)  # asked once, when an agent needs it
    for entry in chosen:
        launch = _registry.resolve_here(entry, os.getcwd(), global_root=root)
        if args.installed and not launch.installed:
            continue
        shown += 1
        for line in agent_lines(entry, launch):
            _say(line)
    data = _registry.snapshot()
    _say(
        f"acp: {shown} of {len(_registry.entries())} agents (registry snapshot of"
        f" {data.get('updated')}); `%acp connect NAME` starts one"
    )


def _cancel(nb: Notebook, argv: list[str]) -> None:
    parser = _sub_parser("cancel", "Cancel the session's running turn (session/cancel).")
    _session_option(parser)
    args = _parse_sub(parser, argv)
    named = nb.named(args.session)
    handle = nb.live(nb.agent(named.agent))
    handle.io.call(named.session.cancel)
    _say(f"acp: cancel sent to session {args.session!r}")


def _close(nb: Notebook, argv: list[str]) -> None:
    parser = _sub_parser(
        "close", "Close an agent: pending permission requests are answered cancelled."
    )
    parser.add_argument("--name", default=None, help="the agent (default: the default agent)")
    args = _parse_sub(parser, argv)
    was_default = nb.default_name()
    handle = nb.close(args.name)
    after = ""
    now = nb.default_name()
    if now is not None and handle.name == was_default:
        after = f"; the default agent is now {now!r}"
    _say(f"acp: closed {handle.name!r}{after}")


#: `%acp sessions` prints at most this many sessions (the newest), then "N more": the output
#: is saved in the notebook, and an agent listing 100,000 sessions put 4.8 MB into one cell.
MAX_SESSIONS_SHOWN = 100


#: Each session's line (time, id, directory, title: the agent's text) is cut to this many
#: characters, so the rows shown are bounded too.
SESSION_LINE_CHARS = 300


def _session_line(info: Any) -> str:
    title = f"  {info.title}" if info.title else ""
    line = f"  {_local_time(info.updated_at)}  {info.session_id}  {info.cwd}{title}"
    return line if len(line) <= SESSION_LINE_CHARS else line[:SESSION_LINE_CHARS] + "…"


def _sessions(nb: Notebook, argv: list[str]) -> None:
    parser = _sub_parser(
        "sessions",
        "List the sessions the agent knows for its directory (session/list), newest first:"
        " last update (local time), id, directory, title.",
    )
    parser.add_argument("--name", default=None, help="the agent (default: the default agent)")
    parser.add_argument("--all", action="store_true", help="every directory, not only its own")
    args = _parse_sub(parser, argv)
    handle = nb.live(nb.agent(args.name))
    cwd = None if args.all else handle.cwd
    infos: list[Any] = handle.io.call(handle.agent.list_sessions, cwd)
    where = "in any directory" if args.all else f"in {handle.cwd}"
    if not infos:
        _say(f"acp: {handle.name!r} lists no sessions {where}")
        return
    infos.sort(key=lambda info: _utc(info.updated_at) or _EPOCH, reverse=True)
    more = "" if args.all else " (--all: every directory)"
    _say(f"acp: {len(infos)} session(s) of {handle.name!r} {where}, newest first{more}")
    for info in infos[:MAX_SESSIONS_SHOWN]:
        _say(_session_line(info))  # the agent wrote all of it (_say makes it visible)
    if len(infos) > MAX_SESSIONS_SHOWN:
        left = len(infos) - MAX_SESSIONS_SHOWN
        _say(f"  … {left:,} more (older) sessions not shown (at most {MAX_SESSIONS_SHOWN})")


_EPOCH = datetime.datetime.fromtimestamp(0, datetime.UTC)


def _utc(stamp: str | None) -> datetime.datetime | None:
    """An ISO 8601 ``updatedAt`` (``Z`` or an offset) as an aware datetime, else None."""
    if not stamp:
        return None
    try:
        when = datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=datetime.UTC)


def _local_time(stamp: str | None) -> str:
    """``updatedAt`` in the kernel's local time, to the minute; what the agent sent if it is
    not a date, and a dash if it sent none."""
    when = _utc(stamp)
    if when is None:
        return (stamp or "-").ljust(16)
    return when.astimezone().strftime("%Y-%m-%d %H:%M")


def _resume(nb: Notebook, argv: list[str]) -> None:
    parser = _sub_parser("resume", "Resume a session of the agent and replay its history.")
    parser.add_argument("session_id", help="the session's id (see `%%acp sessions`)")
    parser.add_argument(
        "--session", default=DEFAULT_SESSION, help="name it here (default: %(default)s)"
    )
    parser.add_argument("--name", default=None, help="the agent (default: the default agent)")
    args = _parse_sub(parser, argv)
    state = nb.resume(args.session, args.session_id, agent=args.name).session.state
    counted = [
        _count(len(state.messages), "message"),
        _count(len(state.tool_calls), "tool call"),
        _count(len(state.terminals), "terminal"),
    ]
    show_history(
        f"acp: resumed {args.session_id} as session {args.session!r}: "
        f"{', '.join(counted)} replayed",
        history_lines(state),
    )


def _count(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def _status(nb: Notebook, argv: list[str]) -> None:
    from .. import _sidepanel

    parser = _sub_parser(
        "status",
        "The agents (processes, exit states, stderr tails), their sessions, the approval inbox,"
        " background work, terminals and grants: the text the side panel shows.",
    )
    _parse_sub(parser, argv)
    _say(_sidepanel.summary_text(nb), multiline=True)


def _log(nb: Notebook, argv: list[str]) -> None:
    parser = _sub_parser("log", "The last protocol messages (base64 payloads shortened).")
    parser.add_argument("--name", default=None, help="the agent (default: the default agent)")
    parser.add_argument(
        "-n", type=_positive_int, default=20, help="how many (at least 1; default %(default)s)"
    )
    parser.add_argument(
        "--export",
        default=None,
        metavar="PATH",
        help="write the connection's frames to PATH as an acp-inspector-trace v1 JSONL file"
        " (mode 0600; keys, tokens and --env values redacted): every frame with `%%acp connect"
        " --trace`, else the last messages",
    )
    args = _parse_sub(parser, argv)
    if args.export is not None:
        import os

        path = os.path.abspath(os.path.expanduser(args.export))
        try:
            done = nb.export_trace(path, args.name)
        except OSError as exc:  # a folder, a symlink (never followed), no such folder...
            why = exc.strerror or type(exc).__name__
            if exc.errno == errno.ELOOP:
                why = "it is a symbolic link, which is never followed"
            raise UsageError(f"%acp log: cannot write {path}: {why}") from None
        for said in trace_lines(done):
            _say(said)
        return
    for line in nb.log(args.name, args.n):
        _say(str(line))
    for event in nb.kernel_tool_events(args.name, args.n):
        _say(_tool_event_line(event))


def _tool_event_line(event: Any) -> str:
    """A kernel tools event (``_kernel_tools.ToolEvent``) as a line of ``%acp log``."""
    if event.kind == "refused":
        owner = f" for {event.agent!r}" if event.agent else ""
        return f"kernel tools: refused a request{owner}: {event.detail}"
    outcome = "an error" if event.detail == "error" else f"{event.chars} characters"
    return f"kernel tools: served {event.tool} to session {event.session_id}: {outcome}"


def _panel(nb: Notebook, argv: list[str]) -> None:
    from .. import _sidepanel

    parser = _sub_parser(
        "panel", "Open the agent side panel (JupyterLab, Notebook 7) and print a text summary."
    )
    parser.add_argument(
        "--no-auto", action="store_true", help="do not make it (and its tab's badge) on connect"
    )
    parser.add_argument("--auto", action="store_true", help="also open it on the first connect")
    parser.add_argument("--close", action="store_true", help="close the panel")
    args = _parse_sub(parser, argv)
    if args.no_auto or args.auto:
        nb.set_panel_auto(make=bool(args.auto), show=bool(args.auto))
        state = (
            "opens by itself" if args.auto else "is no longer made (nor its tab's badge counted)"
        )
        _say(f"acp: the agent panel {state} when an agent connects")
        return
    if args.close:
        _sidepanel.close_panel(nb)
        _say("acp: agent panel closed")
        return
    from IPython.core.getipython import get_ipython

    shell = get_ipython()
    if getattr(shell, "kernel", None) is None:
        _say("acp: cannot open the agent panel: this is not a Jupyter kernel (no widgets).")
        _say(_sidepanel.summary_text(nb), multiline=True)
        return
    panel = _sidepanel.open_panel(nb)
    _say(_sidepanel.summary_text(nb), multiline=True)
    if not panel.panel.rendered:
        _say(
            "acp: the agent panel opens in the right sidebar of JupyterLab or Notebook 7 with the"
            " acp-notebook extension. Other front ends (VS Code, Colab, nbclassic) cannot show it:"
            " the summary above is the same information as text (run `%acp panel` again to"
            " refresh it)."
        )


def _grants(nb: Notebook, argv: list[str]) -> None:
    from .._notebook import _facts

    parser = _sub_parser(
        "grants",
        "The requests answered with an always option (Always allow / Always reject) in this"
        " kernel: what, when, which session, by whom. The agent keeps such grants; ACP has no"
        " method to list or revoke them.",
    )
    _parse_sub(parser, argv)
    _say(str(nb.io.call(_facts.grants_text, nb)), multiline=True)


_HANDLERS = {
    "auth": _auth_cmd,
    "connect": _connect,
    "agents": _agents,
    "cancel": _cancel,
    "close": _close,
    "sessions": _sessions,
    "resume": _resume,
    "status": _status,
    "log": _log,
    "panel": _panel,
    "grants": _grants,
    "mode": _mode,
    "config": _config,
}


def _acp_line(nb: Notebook, line: str) -> None:
    try:
        argv = shlex.split(line)
    except ValueError as exc:
        raise UsageError(f"%acp: {exc}") from None
    if not argv:
        raise UsageError("%acp needs a subcommand: " + ", ".join(_SUBCOMMANDS) + " (see %acp?)")
    if argv[0] in ("-h", "--help", "help"):
        _say(acp_help(), multiline=True)
        return
    handler = _HANDLERS.get(argv[0])
    if handler is None:
        hint = did_you_mean(argv[0], _SUBCOMMANDS)
        raise UsageError(
            f"%acp: unknown subcommand {argv[0]!r}{hint or ';'} try one of"
            f" {', '.join(_SUBCOMMANDS)} (or %acp --help)"
        )
    try:
        handler(nb, argv[1:])
    except _HelpShown:
        return
    except NotebookError as exc:
        raise UsageError(words(exc, nb)) from None
    except AcpError as exc:  # the agent refused, died, or is busy: one line, no traceback
        raise UsageError(f"%acp {argv[0]}: {_one_line(exc)}") from None
