"""The IPython entry point: ``%acp`` and ``%%acp``.

A ``%%acp`` cell must *await* its turn so that the approve/reject buttons in its own output keep
working (ipykernel >= 7.4 delivers widget messages to an awaiting cell; a blocking wait would
deadlock). A magic function cannot await, so an input transformer rewrites a ``%%acp`` cell into
``await <run_cell_async>(line, body)`` and IPython runs it with top-level await. The magic itself
stays registered for ``%%acp?`` help and for callers that invoke it directly.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import shlex
import sys
from collections.abc import Sequence
from typing import Any

import IPython.core.magic as _magic
import IPython.display as _display
from IPython.core import magic_arguments as _magic_arguments
from IPython.core.error import UsageError
from IPython.core.magic import Magics, magics_class

from . import _bridge, _events
from ._bridge import AgentHandle, open_agent
from ._cells import CellRun, PromptTemplateError, interpolate
from ._client import Session
from ._policy import Policy

# IPython 8 ships these without hints (or exports) and IPython 9 with hints that reject
# methods: use them untyped, so the module type-checks the same under both.
magic_arguments: Any = _magic_arguments
line_magic: Any = _magic.line_magic
cell_magic: Any = _magic.cell_magic
HTML: Any = vars(_display)["HTML"]
display: Any = vars(_display)["display"]

DEFAULT_SESSION = "default"

_state: dict[str, Any] = {
    "default_agent": None,  # name of the most recently connected agent
    "sessions": {},  # session name -> (agent name, Session)
    "cells": {},  # cell key -> CellRun
    "cell_id": None,  # id of the cell being run, from the pre_run_cell event
}


def embedded_agent_argv() -> list[str]:
    return [sys.executable, "-m", "acp_notebook.agent"]


# -- %%acp --------------------------------------------------------------------------------------


def _parse_cell_line(line: str) -> argparse.Namespace:
    try:
        argv = shlex.split(line)
    except ValueError as exc:
        raise UsageError(f"%%acp: {exc}") from None
    # The parser built by magic_arguments; its errors are UsageErrors with the usage line.
    parser: argparse.ArgumentParser = AcpMagics.acp_cell.parser
    return parser.parse_args(argv)


def _cell_key(shell: Any) -> str:
    cell_id = _state.get("cell_id")
    if cell_id:
        return f"cell:{cell_id}"
    return f"exec:{getattr(shell, 'execution_count', 0)}"


def _agent(name: str | None = None) -> AgentHandle:
    handles = _bridge.handles()
    key = name or _state["default_agent"]
    if key is None or key not in handles:
        if name:
            raise UsageError(f"no agent named {name!r}; connected: {sorted(handles) or 'none'}")
        raise UsageError("no agent connected: run `%acp connect` first (see %acp?)")
    return handles[key]


def _session_for(name: str, new: bool) -> tuple[AgentHandle, Session]:
    sessions: dict[str, tuple[str, Session]] = _state["sessions"]
    if not new and name in sessions:
        agent_name, session = sessions[name]
        handle = _bridge.handles().get(agent_name)
        if handle is not None and handle.alive and not session.closed:
            return handle, session
    handles = _bridge.handles()
    handle = handles[name] if name in handles else _agent()
    if not handle.alive:
        raise UsageError(f"agent {handle.name!r} has exited; `%acp connect` again")
    fresh: Session = handle.io.call(handle.agent.new_session, handle.cwd)
    sessions[name] = (handle.name, fresh)
    return handle, fresh


def _start_cell(shell: Any, line: str, body: str) -> CellRun:
    from ._widgets import TurnView

    args = _parse_cell_line(line)
    try:
        prompt = interpolate(body, shell.user_ns)
    except PromptTemplateError as exc:
        raise UsageError(f"%%acp: {exc}") from None
    if not prompt.strip():
        raise UsageError("%%acp: the cell is empty; write a prompt below the magic line")
    key = _cell_key(shell)
    previous: CellRun | None = _state["cells"].pop(key, None)
    if previous is not None:
        if previous.done is not None and not previous.done.done():
            previous.cancel_blocking()
        previous.close_view()
    handle, session = _session_for(args.session, args.new)
    io = handle.io
    turn = io.call(session.start_turn, prompt)
    policy = Policy.from_globs(args.allow, args.deny)

    def stop_terminal(terminal_id: str) -> None:  # the terminal's stop button (main thread)
        io.submit(_cancel_terminal, session, terminal_id)

    view = io.call(_make_view, TurnView, turn, prompt, stop_terminal)
    run = CellRun(key, handle, session, turn, view, policy, args.timeout, io)
    io.call(run.attach)
    _state["cells"][key] = run
    if args.output:
        shell.user_ns[args.output] = turn
    display(view)
    run.done = io.submit(run.run)
    _events.emit("turn_started", run)
    return run


def _make_view(view_cls: Any, turn: Any, prompt: str, stop_terminal: Any) -> Any:
    return view_cls(turn.state, prompt, on_cancel_terminal=stop_terminal)


async def _cancel_terminal(session: Session, terminal_id: str) -> None:
    try:
        await session.cancel_terminal(terminal_id)
    except Exception as exc:
        session._problem(f"terminal/cancel for {terminal_id} failed: {exc}")


def _finish_cell(run: CellRun) -> None:
    bundle = run.io.call(run.view.static_bundle)  # the state is only read on the I/O thread
    display(_Static(bundle), raw=False)
    error = run.turn.error
    if error is not None:
        print(f"acp: the turn failed: {error}", file=sys.stderr)


class _Static:
    """The turn's static transcript, for saved notebooks, nbconvert and nbval."""

    def __init__(self, bundle: dict[str, str]) -> None:
        self._bundle = bundle

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, str]:
        return self._bundle


async def run_cell_async(line: str, body: str) -> None:
    """What a ``%%acp`` cell runs (through the input transformer): awaits the turn."""
    from IPython.core.getipython import get_ipython

    shell = get_ipython()
    run = _start_cell(shell, line, body)
    args = _parse_cell_line(line)
    if args.bg:
        return
    try:
        await run.wait_in_cell()
    except BaseException:
        _finish_cell(run)
        raise
    _finish_cell(run)


# -- %acp -------------------------------------------------------------------------------------

_SUBCOMMANDS = ("connect", "cancel", "close", "sessions", "resume", "status", "log", "panel")


def _sub_parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"%acp {prog}", add_help=False, exit_on_error=False)
    return parser


def _parse_sub(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    try:
        return parser.parse_args(list(argv))
    except (argparse.ArgumentError, SystemExit) as exc:
        raise UsageError(f"{parser.prog}: {exc}; usage: {parser.format_usage().strip()}") from None


def _connect(argv: list[str]) -> None:
    own: list[str] = argv
    agent_argv: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        own, agent_argv = argv[:cut], argv[cut + 1 :]
    parser = _sub_parser("connect")
    parser.add_argument("--name", default=None)
    parser.add_argument("--cwd", default=None)
    args = _parse_sub(parser, own)
    import os

    cwd = os.path.abspath(os.path.expanduser(args.cwd or os.getcwd()))
    if not os.path.isdir(cwd):
        raise UsageError(f"%acp connect: {cwd} is not a directory")
    command = agent_argv or embedded_agent_argv()
    name = args.name or ("embedded" if not agent_argv else os.path.basename(command[0]))
    old = _bridge.handles().pop(name, None)
    if old is not None:
        old.close()
    try:
        handle = open_agent(name, command, cwd)
    except Exception as exc:
        message = str(exc) or type(exc).__name__
        display(_error_html(f"Could not connect {name!r} ({shlex.join(command)})", message))
        return
    _bridge.handles()[name] = handle
    _state["default_agent"] = name
    _events.emit("agent_connected", handle)
    info = handle.agent.info
    label = f"{info.title or info.name} {info.version}" if info else "?"
    pid = handle.agent.process.pid if handle.agent.process else "?"
    print(f"acp: connected {name!r}: {label} (pid {pid}, cwd {cwd})")


def _error_html(title: str, detail: str) -> HTML:
    import html

    return HTML(
        f"<div class='acp-error'><b>{html.escape(title)}</b><pre>{html.escape(detail)}</pre></div>"
    )


def _cancel(argv: list[str]) -> None:
    parser = _sub_parser("cancel")
    parser.add_argument("--session", default=DEFAULT_SESSION)
    args = _parse_sub(parser, argv)
    entry = _state["sessions"].get(args.session)
    if entry is None:
        raise UsageError(f"no session named {args.session!r}")
    handle = _agent(entry[0])
    handle.io.call(entry[1].cancel)
    print(f"acp: cancel sent to session {args.session!r}")


def _close(argv: list[str]) -> None:
    parser = _sub_parser("close")
    parser.add_argument("--name", default=None)
    args = _parse_sub(parser, argv)
    handle = _agent(args.name)
    handle.close()
    _events.emit("agent_closed", handle)
    for name, (agent_name, _) in list(_state["sessions"].items()):
        if agent_name == handle.name:
            del _state["sessions"][name]
    print(f"acp: closed {handle.name!r}")


def _sessions(argv: list[str]) -> None:
    parser = _sub_parser("sessions")
    parser.add_argument("--name", default=None)
    args = _parse_sub(parser, argv)
    handle = _agent(args.name)
    infos: list[Any] = handle.io.call(handle.agent.list_sessions)
    if not infos:
        print("acp: the agent lists no sessions")
    for info in infos:
        title = f"  {info.title}" if getattr(info, "title", None) else ""
        print(f"{info.session_id}  {info.cwd}{title}")


def _resume(argv: list[str]) -> None:
    parser = _sub_parser("resume")
    parser.add_argument("session_id")
    parser.add_argument("--session", default=DEFAULT_SESSION)
    parser.add_argument("--name", default=None)
    args = _parse_sub(parser, argv)
    handle = _agent(args.name)
    session: Session = handle.io.call(_resume_call, handle, args.session_id)
    _state["sessions"][args.session] = (handle.name, session)
    state = session.state
    print(
        f"acp: resumed {args.session_id} as session {args.session!r}: "
        f"{len(state.messages)} messages, {len(state.tool_calls)} tool calls, "
        f"{len(state.terminals)} terminals replayed"
    )


async def _resume_call(handle: AgentHandle, session_id: str) -> Session:
    return await handle.agent.resume_session(session_id, handle.cwd, replay=True)


def _status(argv: list[str]) -> None:
    handles = _bridge.handles()
    if not handles:
        print("acp: no agents connected")
    for name, handle in handles.items():
        agent = handle.agent
        proc = agent.process
        info = agent.info
        if handle.alive:
            life = f"alive (pid {proc.pid if proc else '?'})"
        else:
            code = proc.returncode if proc else None
            sig = getattr(proc, "exit_signal", None)
            life = f"exited ({'signal ' + sig if sig else 'code ' + str(code)})"
        label = f"{info.name} {info.version}" if info else "?"
        default = " [default]" if name == _state["default_agent"] else ""
        print(f"{name}{default}: {label}, {life}, argv {shlex.join(handle.argv)}")
        if not handle.alive and proc is not None:
            tail = proc.stderr_tail(2000).strip()
            if tail:
                print("  stderr tail:\n    " + tail.replace("\n", "\n    "))
    for session_name, (agent_name, session) in _state["sessions"].items():
        state = session.state
        stop = f" ({state.stop_reason})" if state.state == "idle" and state.stop_reason else ""
        pending = sum(1 for d in session.permissions if d.pending)
        print(
            f"session {session_name!r} on {agent_name!r}: {session.id}, "
            f"{state.state or 'new'}{stop}, {pending} pending permission(s)"
        )


_B64 = re.compile(r'"(data|blob)":\s*"([A-Za-z0-9+/=]{64,})"')


def shorten_base64(text: str, keep: int = 24) -> str:
    return _B64.sub(lambda m: f'"{m[1]}":"{m[2][:keep]}…(+{len(m[2]) - keep} chars)"', text)


def _log(argv: list[str]) -> None:
    parser = _sub_parser("log")
    parser.add_argument("--name", default=None)
    parser.add_argument("-n", type=int, default=20)
    args = _parse_sub(parser, argv)
    handle = _agent(args.name)
    entries = list(handle.agent.connection.log)[-args.n :]
    for entry in entries:
        direction, message = entry[0], entry[1]
        text = message if isinstance(message, str) else json.dumps(message, ensure_ascii=False)
        print(f"{'->' if direction == 'send' else '<-'} {shorten_base64(text)}")


def _panel(argv: list[str]) -> None:
    from . import _sidepanel

    parser = _sub_parser("panel")
    parser.add_argument("--no-auto", action="store_true", help="do not open it on connect")
    parser.add_argument("--auto", action="store_true", help="open it on the first connect")
    parser.add_argument("--close", action="store_true", help="close the panel")
    args = _parse_sub(parser, argv)
    if args.no_auto or args.auto:
        _sidepanel.AUTO_OPEN = bool(args.auto)
        state = "opens by itself" if args.auto else "no longer opens by itself"
        print(f"acp: the agent panel {state} when an agent connects")
        return
    if args.close:
        _sidepanel.close_panel()
        print("acp: agent panel closed")
        return
    from IPython.core.getipython import get_ipython

    shell = get_ipython()
    if getattr(shell, "kernel", None) is None:
        print("acp: cannot open the agent panel: this is not a Jupyter kernel (no widgets).")
        print(_sidepanel.summary_text())
        return
    panel = _sidepanel.open_panel()
    print(_sidepanel.summary_text())
    if not panel.panel.rendered:
        print(
            "acp: the agent panel opens in the right sidebar of JupyterLab or Notebook 7 with the"
            " acp-notebook extension. Other front ends (VS Code, Colab, nbclassic) cannot show it:"
            " the summary above is the same information as text (run `%acp panel` again to"
            " refresh it)."
        )


_HANDLERS = {
    "connect": _connect,
    "cancel": _cancel,
    "close": _close,
    "sessions": _sessions,
    "resume": _resume,
    "status": _status,
    "log": _log,
    "panel": _panel,
}


@magics_class
class AcpMagics(Magics):
    @magic_arguments.magic_arguments()
    @magic_arguments.argument("subcommand", choices=_SUBCOMMANDS, help="what to do")
    @magic_arguments.argument("rest", nargs=argparse.REMAINDER, help="its arguments")
    @line_magic("acp")
    def acp(self, line: str) -> None:
        """Manage ACP agents and sessions.

        %acp connect [--name NAME] [--cwd DIR] [-- ARGV...]
            Launch and initialize an agent (the embedded agent when no ARGV is given).
        %acp cancel [--session NAME]       cancel the session's running turn
        %acp close [--name NAME]           close an agent (pending permissions fail closed)
        %acp sessions [--name NAME]        list the agent's sessions
        %acp resume SESSION_ID [--session NAME] [--name NAME]
                                           resume a session and replay its history
        %acp status                        agents, processes and sessions
        %acp log [--name NAME] [-n N]      the last protocol messages (base64 shortened)
        %acp panel [--no-auto|--auto|--close]
                                           open the JupyterLab side panel (and print a
                                           text summary); --no-auto: do not open it
                                           when an agent connects
        """
        try:
            argv = shlex.split(line)
        except ValueError as exc:
            raise UsageError(f"%acp: {exc}") from None
        if not argv:
            raise UsageError("%acp needs a subcommand: " + ", ".join(_SUBCOMMANDS) + " (see %acp?)")
        handler = _HANDLERS.get(argv[0])
        if handler is None:
            raise UsageError(f"%acp: unknown subcommand {argv[0]!r}; try one of {_SUBCOMMANDS}")
        handler(argv[1:])

    @magic_arguments.magic_arguments()
    @magic_arguments.argument(
        "--session", default=DEFAULT_SESSION, help="session name (default: %(default)s)"
    )
    @magic_arguments.argument(
        "--new", action="store_true", help="start a new session for this name"
    )
    @magic_arguments.argument(
        "--allow",
        action="append",
        default=[],
        metavar="GLOB",
        help="approve commands (or tool-call titles) matching GLOB",
    )
    @magic_arguments.argument(
        "--deny",
        action="append",
        default=[],
        metavar="GLOB",
        help="reject commands (or tool-call titles) matching GLOB; deny wins over allow",
    )
    @magic_arguments.argument(
        "--timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="reject (fail closed) permission requests nobody answered in time",
    )
    @magic_arguments.argument(
        "--bg", action="store_true", help="return at once; the output keeps streaming"
    )
    @magic_arguments.argument(
        "-o", "--output", metavar="VAR", help="bind the Turn to VAR in the notebook namespace"
    )
    @cell_magic("acp")
    def acp_cell(self, line: str, cell: str) -> None:
        """Send the cell body to the agent as a prompt and show the turn live.

        ``{name}`` is filled in from the notebook's variables; ``{{`` and ``}}`` are literal braces.
        The cell waits until the agent is idle (unless ``--bg``). Interrupt cancels the turn.
        Nothing the agent asks for runs without an explicit allow: a click, or an ``--allow`` rule.
        """
        # Called directly (without the input transformer): run the turn and block until it ends.
        run = _start_cell(self.shell, line, cell)
        if _parse_cell_line(line).bg:
            return
        try:
            run.wait_blocking()
        finally:
            _finish_cell(run)


def transform_cell(lines: list[str]) -> list[str]:
    """Input transformer: a ``%%acp`` cell becomes an awaited call (see module docstring)."""
    if not lines or not lines[0].startswith("%%acp"):
        return lines
    first = lines[0].rstrip("\n")
    if first.rstrip().endswith("?") or not (first == "%%acp" or first[5:6].isspace()):
        return lines
    line = first[5:].strip()
    body = "".join(lines[1:])
    return [
        "await __import__('acp_notebook._magics', fromlist=['run_cell_async'])"
        f".run_cell_async({line!r}, {body!r})\n"
    ]


def _pre_run_cell(info: Any) -> None:
    _state["cell_id"] = getattr(info, "cell_id", None)


def load_ipython_extension(ipython: Any) -> None:
    from . import _sidepanel  # noqa: F401  (subscribes the side panel to the notebook's events)

    ipython.register_magics(AcpMagics)
    cleanup = ipython.input_transformers_cleanup
    if transform_cell not in cleanup:
        cleanup.append(transform_cell)
    ipython.events.register("pre_run_cell", _pre_run_cell)


def unload_ipython_extension(ipython: Any) -> None:
    cleanup = ipython.input_transformers_cleanup
    if transform_cell in cleanup:
        cleanup.remove(transform_cell)
    with contextlib.suppress(ValueError):
        ipython.events.unregister("pre_run_cell", _pre_run_cell)


__all__ = ["AcpMagics", "load_ipython_extension", "run_cell_async", "unload_ipython_extension"]
