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
import datetime
import functools
import inspect
import re
import shlex
import sys
import textwrap
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal, NoReturn

import IPython.core.magic as _magic
import IPython.display as _display
from IPython.core import magic_arguments as _magic_arguments
from IPython.core.error import UsageError
from IPython.core.magic import Magics, magics_class
from traitlets import Float

from ._client._errors import AuthenticationRequired, UnsupportedProtocolVersion
from ._client._session import Session, ended_by
from ._connection._errors import AcpError, AgentExited
from ._kernel._context import PER_OBJECT_CAP, PER_PROMPT_CAP
from ._notebook._attach import Attached, Attachment, gather, parse_names
from ._notebook._bridge import CONNECT_TIMEOUT, AgentHandle
from ._notebook._cells import (
    NONINTERACTIVE_TIMEOUT,
    TIMEOUT_ENV,
    CellRun,
    PromptTemplateError,
    interpolate,
    noninteractive_timeout,
)
from ._notebook._errors import (
    DEFAULT_SESSION,
    AgentGone,
    NoKernelTools,
    NoSuchAgent,
    NoSuchMethod,
    NoSuchSession,
    NotebookError,
    SessionBusy,
    SessionOfAnotherAgent,
    SignInRequired,
    UnsupportedMethod,
)
from ._notebook._failures import ConnectFailed
from ._notebook._owner import Notebook
from ._notebook._record import Record
from ._notebook._redact import REDACTED, redact
from ._notebook._start import CellRequest
from ._policy._rules import Policy
from ._protocol._visible import visible_text

# IPython 8 ships these without hints (or exports) and IPython 9 with hints that reject
# methods: use them untyped, so the module type-checks the same under both.
magic_arguments: Any = _magic_arguments
line_magic: Any = _magic.line_magic
cell_magic: Any = _magic.cell_magic
display: Any = vars(_display)["display"]


def embedded_agent_argv() -> list[str]:
    return [sys.executable, "-m", "acp_notebook.agent"]


def default_agent_name(agent_argv: Sequence[str]) -> str:
    """The name ``%acp connect [-- ARGV]`` gives an agent when no ``--name`` is given: its
    program's file name (``python3``, ``python``, ...), or ``embedded`` for the built-in one.
    Tests derive the names they expect from here, whatever the interpreter is called."""
    import os.path

    return os.path.basename(agent_argv[0]) if agent_argv else "embedded"


# -- %%acp --------------------------------------------------------------------------------------


def _parse_cell_line(line: str) -> argparse.Namespace:
    try:
        argv = shlex.split(line)
    except ValueError as exc:
        raise UsageError(f"%%acp: {exc}") from None
    # The parser built by magic_arguments; its errors are UsageErrors (without the usage line).
    parser: argparse.ArgumentParser = AcpMagics.acp_cell.parser
    try:
        return parser.parse_args(argv)
    except UsageError as exc:
        raise UsageError(f"%%acp: {exc} ({_usage(parser)})") from None


def _say(text: str, *, multiline: bool = False) -> None:
    """Print one line (or, with ``multiline``, a block) of plain-text output. Agents and cells
    supply much of it (titles, versions, stderr, ids): control and bidi characters are shown
    as visible markers, never sent to the terminal or the browser raw."""
    print(visible_text(text, multiline=multiline))


def _visible_error(exc: UsageError) -> UsageError:
    """The same one-line error, its hidden characters made visible (IPython prints it raw)."""
    return UsageError(visible_text(str(exc), multiline=True))


def _usage(parser: argparse.ArgumentParser) -> str:
    """The parser's usage line as "usage: %acp log [--name NAME] [-n N]" (one line)."""
    usage = " ".join(parser.format_usage().split())
    usage = usage.replace(":: ", "", 1)  # magic_arguments' formatter starts with "::"
    return usage if usage.startswith("usage:") else f"usage: {usage}"


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


def _cell_key(nb: Notebook, shell: Any) -> str:
    if nb.cell_id:
        return f"cell:{nb.cell_id}"
    return f"exec:{getattr(shell, 'execution_count', 0)}"


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
    return type(error).__name__  # pragma: no cover - every kind is worded above


def _name_option(nb: Notebook, agent: str) -> str:
    """`` --name AGENT`` for a command about ``agent``, unless it is the default agent."""
    return "" if agent == nb.default_name() else f" --name {agent}"


def _first_line(text: str) -> str:
    text = text.strip()
    first, _, rest = text.partition("\n")
    return first.rstrip(":;, ") + (" (...)" if rest.strip() else "")


def _notebook_of(shell: Any) -> Notebook:
    """The notebook the shell's ``AcpMagics`` were registered with."""
    registry = getattr(getattr(shell, "magics_manager", None), "registry", {})
    magics = registry.get("AcpMagics")
    found = getattr(magics, "notebook", None)
    if isinstance(found, Notebook):
        return found
    from ._notebook._owner import current

    return current()


def _start_cell(nb: Notebook, shell: Any, line: str, body: str) -> CellRun:
    """Start a ``%%acp`` cell's turn; errors the user can act on are one-line UsageErrors."""
    try:
        return _start_cell_inner(nb, shell, line, body)
    except NotebookError as exc:
        raise UsageError(words(exc, nb)) from None
    except AcpError as exc:
        raise UsageError(f"%%acp: {_one_line(exc)}") from None


def _start_cell_inner(nb: Notebook, shell: Any, line: str, body: str) -> CellRun:
    from . import _sidepanel

    args = _parse_cell_line(line)
    try:
        prompt = interpolate(body, shell.user_ns)
    except PromptTemplateError as exc:
        raise UsageError(f"%%acp: {exc}") from None
    if not prompt.strip():
        raise UsageError("%%acp: the cell is empty; write a prompt below the magic line")
    attached = _attachments(args, shell)  # before anything is sent (or a session opened)
    key = _cell_key(nb, shell)
    request = CellRequest(
        key,
        prompt,
        session=args.session,
        agent=args.agent,
        new=args.new,
        policy=Policy.from_globs(args.allow, args.deny, allow_code=args.allow_code),
        timeout=args.timeout,
        unattended_timeout=_unattended_timeout(shell, key),
        attachments=attached,
        panel_shows=functools.partial(_sidepanel.panel_shows, nb),
    )
    started = nb.start_cell(request)
    if args.output:
        shell.user_ns[args.output] = started.turn
    if started.continues:
        _say(
            f"acp: this cell ran before in session {started.session_name!r}: the agent still"
            f" has its earlier turns (turn {started.turn.state.index + 1}); --new starts a"
            " fresh session"
        )
    if attached or args.cells:  # what goes to the agent, shown before it goes
        display(Attached(attached, started.accepts, cells_asked=args.cells or 0))
    display(started.view)
    nb.begin_cell(started)
    return started.run


def _attachments(args: argparse.Namespace, shell: Any) -> list[Attachment]:
    """The ``--with`` objects and ``--cells`` of a cell; a name that is not a variable of the
    notebook is a UsageError (nothing is sent)."""
    try:
        names = parse_names(args.with_names)
    except ValueError as exc:
        raise UsageError(f"%%acp --with: {str(exc)!r} is not a variable name") from None
    namespace = shell.user_ns
    missing = [name for name in names if name not in namespace]
    if missing:
        raise UsageError(
            f"%%acp --with: not defined: {', '.join(missing)} (nothing was sent to the agent)"
        )
    if not names and not args.cells:
        return []
    return gather(names, namespace, shell, args.cells or 0)


def _unattended_timeout(shell: Any, key: str) -> float | None:
    """How long a card waits when no front end can answer it: ``%config
    AcpMagics.noninteractive_timeout``, else its environment variable or default. None (no
    limit) for a cell that came with a cell id: JupyterLab, Notebook 7 and VS Code send one with
    each execute_request; nbclient (jupyter execute, nbconvert --execute, papermill) and nbval
    do not. Without one, ``_cells.front_end_seen`` still spares a widget front end."""
    if key.startswith("cell:"):
        return None
    registry = getattr(getattr(shell, "magics_manager", None), "registry", {})
    magics = registry.get("AcpMagics")
    return noninteractive_timeout(getattr(magics, "noninteractive_timeout", None))


def _finish_cell(run: CellRun, record: Record | None = None) -> None:
    """Show the turn's final transcript (and empty the slot its record kept while it ran)."""
    bundle = run.io.call(run.view.static_bundle)  # the state is only read on the I/O thread
    display(_Static(bundle), raw=False)
    if record is not None:
        record.close()


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


async def run_cell_async(line: str, body: str) -> None:
    """What a ``%%acp`` cell runs (through the input transformer): awaits the turn."""
    from IPython.core.getipython import get_ipython

    shell = get_ipython()
    try:
        run = _start_cell(_notebook_of(shell), shell, line, body)
    except UsageError as exc:
        raise _visible_error(exc) from None
    args = _parse_cell_line(line)
    record = Record(run, bg=args.bg)  # the transcript so far, saved as the turn goes
    record.start()
    if args.bg:
        run.no_waiter()  # no cell waits: the agent's run_code is refused, never left queued
        return
    try:
        await run.wait_in_cell()
    except AcpError as exc:  # the agent died, the prompt was refused: one line, no traceback
        _finish_cell(run, record)
        raise _visible_error(UsageError(turn_failure(exc))) from None
    except KeyboardInterrupt:
        _finish_cell(run, record)
        raise TurnInterrupted(
            "the turn was cancelled (session/cancel sent, pending requests answered cancelled)"
        ) from None
    except BaseException:
        _finish_cell(run, record)
        raise
    _finish_cell(run, record)


class TurnInterrupted(KeyboardInterrupt):
    """Interrupt during a ``%%acp`` cell (or a ``%acp`` wait for the agent). IPython shows it
    as its one line (through ``_render_traceback_``), not as a traceback."""

    def _render_traceback_(self) -> list[str]:
        return [f"KeyboardInterrupt: {self}"]


def _interruptible(handle: AgentHandle, what: str, fn: Callable[[], Awaitable[Any]]) -> Any:
    """Await ``fn()`` in the I/O thread. An Interrupt withdraws it (its request is cancelled:
    ``$/cancel_request``) and ends the cell in one line; the agent and the kernel go on. A
    sign-in the agent never answers (gemini's browser login on a machine without one) is
    stopped this way."""
    try:
        return handle.io.await_withdrawable(fn)
    except KeyboardInterrupt:
        raise TurnInterrupted(f"{what} was interrupted: the request was withdrawn") from None


# -- %acp -------------------------------------------------------------------------------------

_SUBCOMMANDS = (
    "connect",
    "agents",
    "cancel",
    "close",
    "sessions",
    "resume",
    "status",
    "log",
    "panel",
    "grants",
    "auth",
)


class _HelpShown(Exception):
    """A subcommand's ``--help`` was printed: the magic returns normally."""


class _SubParser(argparse.ArgumentParser):
    """A subcommand's parser: ``--help`` prints and returns, a bad option is one UsageError."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message} ({_usage(self)})")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if status == 0:  # after --help
            raise _HelpShown
        raise UsageError(f"{self.prog}: {(message or '').strip() or 'error'} ({_usage(self)})")


def _sub_parser(prog: str, description: str) -> argparse.ArgumentParser:
    return _SubParser(prog=f"%acp {prog}", description=description, exit_on_error=False)


def _parse_sub(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    try:
        return parser.parse_args(list(argv))
    except argparse.ArgumentError as exc:  # exit_on_error=False raises these for bad values
        parser.error(str(exc))


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text}")
    return value


_PROTOCOLS: dict[str, Literal["auto", 1, 2]] = {"auto": "auto", "1": 1, "2": 2}


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
        " [--protocol {auto,1,2}] [--kernel-tools] [-- ARGV...]"
    )
    parser.add_argument(
        "agent",
        nargs="?",
        default=None,
        help="a shortcut from the vendored ACP registry snapshot (claude, codex, gemini,"
        " opencode, ...; `%%acp agents` lists them), instead of ARGV",
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
    if args.agent is not None:
        if agent_argv:
            raise UsageError("%acp connect: give either AGENT or -- ARGV, not both")
        launch = _shortcut(args.agent, cwd)
        command, env = launch.argv, {**launch.env, **env}
        name = args.name or args.agent
        _say(f"acp: starting {launch.entry.name} {launch.entry.version}: {shlex.join(command)}")
    else:
        command = agent_argv or embedded_agent_argv()
        name = args.name or default_agent_name(agent_argv)
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
        ),
    )
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

    from ._kernel._tools import loop_runner
    from ._notebook._kernel_code import request_code

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
    with the whole story shown above it."""
    try:
        handle, old = start()
    except ConnectFailed as exc:
        title = f"Could not connect {name!r} ({shlex.join(command)})"
        display(_ErrorBox(title, redact(str(exc), env)))
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


def _shortcut(agent: str, cwd: str) -> Any:
    """A registry shortcut resolved to a command here (a `_registry.Launch`)."""
    from ._notebook import _registry

    entry = _registry.lookup(agent)
    if entry is None:
        known = ", ".join([*_registry.ALIASES, *_registry.entries()])
        raise UsageError(f"%acp connect: no agent shortcut {agent!r}; known: {known}")
    launch = _resolve_here(entry, cwd)
    if launch.missing is not None:
        raise UsageError(f"%acp connect: {launch.missing}")
    return launch


def _resolve_here(entry: Any, cwd: str) -> Any:
    """Resolve with this machine's PATH and node_modules folders (npm's global root is asked
    for only when nothing closer has the package)."""
    import os
    import shutil
    import subprocess

    from ._notebook import _registry

    near = _registry.node_modules_dirs(cwd, os.environ, None)
    launch = _registry.resolve(entry, shutil.which, near)
    npm = shutil.which("npm")
    if launch.installed or npm is None or entry.distributions[0].kind != "npx":
        return launch
    try:
        done = subprocess.run([npm, "root", "-g"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return launch
    root = done.stdout.strip() if done.returncode == 0 else None
    dirs = _registry.node_modules_dirs(cwd, os.environ, root)
    return _registry.resolve(entry, shutil.which, dirs)


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


def _agents(nb: Notebook, argv: list[str]) -> None:
    parser = _sub_parser(
        "agents", "The agent shortcuts (a vendored ACP registry snapshot) and how each runs here."
    )
    _parse_sub(parser, argv)
    import os

    from ._notebook import _registry

    aliases = {v: k for k, v in _registry.ALIASES.items()}
    for entry in _registry.entries().values():
        launch = _resolve_here(entry, os.getcwd())
        if launch.missing is not None:
            how = f"not available: {launch.missing}"
        elif launch.installed:
            how = f"installed: {shlex.join(launch.argv)}"
        else:
            how = f"not installed; starts with {shlex.join(launch.argv)} (downloads it)"
        alias = f" (or {aliases[entry.id]})" if entry.id in aliases else ""
        _say(f"{entry.id}{alias}: {entry.name} {entry.version}, {how}")


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


def _cancel(nb: Notebook, argv: list[str]) -> None:
    parser = _sub_parser("cancel", "Cancel the session's running turn (session/cancel).")
    parser.add_argument(
        "--session", default=DEFAULT_SESSION, help="session name (default: %(default)s)"
    )
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
    handle = nb.live(nb.agent(args.name))
    session = _resume_call(nb, handle, args.session_id)
    nb.bind(args.session, handle.name, session)
    state = session.state
    _say(
        f"acp: resumed {args.session_id} as session {args.session!r}: "
        f"{len(state.messages)} messages, {len(state.tool_calls)} tool calls, "
        f"{len(state.terminals)} terminals replayed"
    )


def _resume_call(nb: Notebook, handle: AgentHandle, session_id: str) -> Session:
    """``session/resume`` (with the kernel tools' server for an agent that has them)."""
    entries, grant = nb.mcp_servers(handle)
    call = functools.partial(
        handle.agent.resume_session, session_id, handle.cwd, replay=True, mcp_servers=entries
    )
    try:
        session: Session = handle.io.call(call)
    except BaseException:
        if grant is not None and nb.kernel_tools is not None:
            nb.kernel_tools.revoke(grant)
        raise
    if grant is not None and nb.kernel_tools is not None:
        nb.kernel_tools.bind(grant, session)
    return session


def _status(nb: Notebook, argv: list[str]) -> None:
    parser = _sub_parser("status", "The agents, their processes, and the named sessions.")
    _parse_sub(parser, argv)
    handles = nb.agents
    if not handles:
        _say("acp: no agents connected")
    default_name = nb.default_name()
    for name, handle in handles.items():
        proc = handle.agent.process
        if handle.alive:
            life = f"alive (pid {proc.pid if proc else '?'})"
        else:
            life = f"exited ({handle.exit_status})"
        default = " [default]" if name == default_name else ""
        label = visible_text(handle.label, prose=True)
        env = "".join(f", env {key}={REDACTED}" for key in handle.env)
        _say(f"{name}{default}: {label}, {life}, argv {shlex.join(handle.argv)}{env}")
        if not handle.alive:
            tail = handle.stderr_tail().strip()
            tail = visible_text(redact(tail, handle.env), multiline=True)
            if tail:
                _say("  stderr tail:\n    " + tail.replace("\n", "\n    "), multiline=True)
    for name, handle in nb.closed_agents.items():
        if name not in handles:
            label = visible_text(handle.label, prose=True)
            _say(f"{name}: {label}, closed ({handle.exit_status})")
    for named in nb.sessions:
        session = named.session
        state = session.state
        stop = f" ({state.stop_reason})" if state.state == "idle" and state.stop_reason else ""
        if state.state == "ended" and state.turns and state.turns[-1].ended_by:
            stop = f" ({state.turns[-1].ended_by})"
        pending = sum(1 for d in session.permissions if d.pending)
        _say(
            f"session {named.name!r} on {named.agent!r}: {session.id}, "
            f"{state.state or 'new'}{stop}, {pending} pending permission(s)"
        )


def _log(nb: Notebook, argv: list[str]) -> None:
    parser = _sub_parser("log", "The last protocol messages (base64 payloads shortened).")
    parser.add_argument("--name", default=None, help="the agent (default: the default agent)")
    parser.add_argument(
        "-n", type=_positive_int, default=20, help="how many (at least 1; default %(default)s)"
    )
    args = _parse_sub(parser, argv)
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
    from . import _sidepanel

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
    from . import _sidepanel

    parser = _sub_parser(
        "grants",
        "The requests answered with an always option (Always allow / Always reject) in this"
        " kernel: what, when, which session, by whom. The agent keeps such grants; ACP has no"
        " method to list or revoke them.",
    )
    _parse_sub(parser, argv)
    _say(str(nb.io.call(_sidepanel.grants_text, nb)), multiline=True)


def _auth_hint(methods: Sequence[Any], option: str) -> str:
    from ._notebook import _auth

    return _auth.hint(methods, option)


def _auth_cmd(nb: Notebook, argv: list[str]) -> None:
    from ._notebook import _auth, _sign_in

    parser = _sub_parser(
        "auth",
        "Without METHOD: list the agent's sign-in methods (authMethods). With METHOD: sign in"
        " (auth/login for an agent method, then a password field for the key if its _meta"
        " names api-key and the agent still refuses a session; a password field for an env_var"
        " method, whose value"
        " goes only into the agent's environment for its restart; for a terminal method, the"
        " agent's login command in a live terminal in the cell, where you type).",
    )
    parser.add_argument("method", nargs="?", default=None, help="a method id from the list")
    parser.add_argument("--name", default=None, help="the agent (default: the default agent)")
    args = _parse_sub(parser, argv)
    if args.method is None:
        handle, methods = _sign_in.methods(nb, args.name)
        if not methods:
            _say(f"acp: agent {handle.name!r} advertised no sign-in methods")
            return
        option = _name_option(nb, handle.name)
        _say(f"acp: sign-in methods of {handle.name!r} (`%acp auth METHOD{option}` signs in):")
        for method in methods:
            _say("  " + _auth.describe(method))
        return
    what = f"signing in to {args.name or nb.default_name()!r} with {args.method!r}"
    try:
        step = _sign_in.begin(nb, args.name, args.method)
    except KeyboardInterrupt:
        raise TurnInterrupted(f"{what} was interrupted: the request was withdrawn") from None
    if isinstance(step, _sign_in.SignedIn):
        _say(f"acp: signed in to {step.agent!r} with {args.method!r}; `%%acp` cells work now")
    elif isinstance(step, _sign_in.AskKey):
        _say(
            f"acp: {step.agent!r} accepted {args.method!r} without a key but still refuses a"
            f" session ({step.refused}); enter the API key for {args.method!r}: it goes only to"
            " the agent, in its sign-in request (`%acp log` shows ***); it is not shown or"
            " saved"
        )

        def submit(values: dict[str, str]) -> str:
            outcome = _sign_in.sign_in_with_key(nb, step.agent, step.method, values["API key"])
            return _signed_in_line(nb, outcome, values)

        display(_auth.password_form(["API key"], submit, action="Sign in"))
    elif isinstance(step, _sign_in.AskEnv):
        names = ", ".join(step.names)
        if step.refusal is not None:
            _say(
                f"acp: {args.method!r} needs a key in the agent's environment"
                f" ({_one_line(step.refusal)}); enter {names} for {step.agent!r}: the value goes"
                " only into the agent's environment (it restarts with it and signs in); it is"
                " not shown or saved"
            )
        else:
            _say(
                f"acp: enter {names} for {step.agent!r}: the value goes only into the agent's"
                " environment (it restarts with it); it is not shown or saved"
            )

        def restart(values: dict[str, str]) -> str:
            outcome = _sign_in.restart_with(nb, step.agent, values, step.login)
            return _signed_in_line(nb, outcome, values)

        display(_auth.password_form(list(step.names), restart))
    else:
        _login_terminal(nb, step)


def _login_terminal(nb: Notebook, step: Any) -> None:
    """The agent's login command in a PTY shown in the cell; an exit 0 restarts the agent,
    which reads what the login stored."""
    from IPython.core.getipython import get_ipython

    from ._notebook import _login_pty, _sign_in

    handle = nb.agent(step.agent)  # the one to restart: a login outlives no other

    def signed_in() -> str:  # on the login's reader thread, once it exited 0
        return _signed_in_line(nb, _sign_in.after_terminal_login(nb, step.agent), step.env)

    try:
        box, _terminal = _login_pty.sign_in_terminal(
            list(step.argv),
            cwd=step.cwd,
            env=dict(step.env),
            command=step.command,
            agent=step.agent,
            signed_in=signed_in,
            subscribe_closed=lambda callback: nb.events.subscribe("agent_closed", callback),
            is_agent=lambda closed: closed is handle,
            shell=get_ipython(),
            cell_id=nb.cell_id,
        )
    except OSError as exc:
        raise UsageError(f"%acp auth: cannot run `{step.command}`: {exc.strerror}") from None
    _say(
        f"acp: {step.method!r} signs in in the terminal below, running `{step.command}` (in"
        f" {step.cwd}): type there; once it succeeds, {step.agent!r} restarts to pick up"
        " the sign-in (re-running this cell, closing the agent or the kernel stops it)"
    )
    display(box)


def _signed_in_line(nb: Notebook, outcome: Any, secrets: Mapping[str, str]) -> str:
    """A sign-in's outcome as the one line its form or terminal shows, with ``secrets``
    (what the person typed, the agent's environment) redacted."""
    from ._notebook._sign_in import NotSignedIn

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
        raise UsageError(
            f"%acp: unknown subcommand {argv[0]!r}; try one of {', '.join(_SUBCOMMANDS)}"
            " (or %acp --help)"
        )
    try:
        handler(nb, argv[1:])
    except _HelpShown:
        return
    except NotebookError as exc:
        raise UsageError(words(exc, nb)) from None
    except AcpError as exc:  # the agent refused, died, or is busy: one line, no traceback
        raise UsageError(f"%acp {argv[0]}: {_one_line(exc)}") from None


@magics_class
class AcpMagics(Magics):
    """The magics of one kernel; they act on its :class:`Notebook`."""

    noninteractive_timeout = Float(
        None,
        allow_none=True,
        help=f"Seconds a permission request waits when no front end can answer it (nbclient,"
        f" jupyter execute, nbconvert --execute: no widget front end connected), before it is"
        f" answered cancelled and the turn ends. Default: ${TIMEOUT_ENV}, else"
        f" {NONINTERACTIVE_TIMEOUT:g}; 0 waits forever. --timeout on a cell wins.",
    ).tag(config=True)

    def __init__(self, shell: Any = None, *, notebook: Notebook | None = None, **kwargs: Any):
        super().__init__(shell, **kwargs)
        self.notebook = notebook if notebook is not None else Notebook()

    @magic_arguments.magic_arguments()
    @magic_arguments.argument("subcommand", choices=_SUBCOMMANDS, help="what to do")
    @magic_arguments.argument("rest", nargs=argparse.REMAINDER, help="its arguments")
    @line_magic("acp")
    def acp(self, line: str) -> None:
        """Manage ACP agents and sessions.

        %acp connect [AGENT] [--name NAME] [--cwd DIR] [--timeout SECONDS]
                     [--env KEY=VALUE ...] [--protocol {auto,1,2}] [--kernel-tools]
                     [-- ARGV...]
            Launch and initialize an agent: AGENT is a registry shortcut (claude, codex,
            gemini, opencode, ...), else ARGV, else the embedded agent; it is stopped if it
            has not answered initialize after SECONDS (30). --env values are never shown.
            ACP v2 is offered and v1 spoken if the agent answers 1 (--protocol forces one).
        %acp agents                        the agent shortcuts, and which are installed here
        %acp auth [METHOD] [--name NAME]   the agent's sign-in methods; with METHOD, sign in
                                           (auth/login; a password field whose value only
                                           the restarted agent's environment gets; or the
                                           agent's login command in a terminal in the cell)
        %acp cancel [--session NAME]       cancel the session's running turn
        %acp close [--name NAME]           close an agent (pending permissions fail closed)
        %acp sessions [--name NAME] [--all]
                                           the agent's sessions for its directory (--all:
                                           every directory), newest first, with dates
        %acp resume SESSION_ID [--session NAME] [--name NAME]
                                           resume a session and replay its history
        %acp status                        agents, processes and sessions
        %acp log [--name NAME] [-n N]      the last protocol messages (base64 shortened)
        %acp grants                        the requests answered Always allow / Always
                                           reject (the agent keeps them; ACP cannot revoke)
        %acp panel [--no-auto|--auto|--close]
                                           open the JupyterLab side panel (and print a
                                           text summary); it is made (its tab counts
                                           pending requests) on the first connect;
                                           --auto: also open it then; --no-auto: neither

        %acp SUBCOMMAND --help shows a subcommand's options.
        """
        try:
            _acp_line(self.notebook, line)
        except UsageError as exc:
            raise _visible_error(exc) from None

    # The name makes the usage line read "%%acp [...]" (magic_arguments would derive
    # "%acp_cell" from the method's name).
    @magic_arguments.magic_arguments(name="%acp")
    @magic_arguments.argument(
        "--agent",
        default=None,
        metavar="NAME",
        help="the connected agent to talk to (default: the last one connected); its session"
        " is named after it unless --session is given",
    )
    @magic_arguments.argument(
        "--session",
        default=None,
        help=f"session name (default: {DEFAULT_SESSION}, or the --agent's name)",
    )
    @magic_arguments.argument(
        "--new", action="store_true", help="start a new session for this name"
    )
    @magic_arguments.argument(
        "--allow",
        action="append",
        default=[],
        metavar="GLOB",
        help="approve a command when every simple command in it (seen through env, sudo, "
        "nohup, timeout, xargs, ...; each wrapper must match too) matches GLOB, or a tool-call "
        "title does. Only a command read statically is approved: $VAR, $(...), backticks, "
        "globs, $'...', eval, functions, a shell fed its input are always asked about, even "
        "with GLOB '*'. So is an assignment a program sees (NAME=v prog, env/sudo NAME=v, "
        "export, declare -x) unless NAME is harmless: LANG, LANGUAGE, LC_*, TZ, TERM, COLUMNS, "
        "LINES, NO_COLOR, FORCE_COLOR, CLICOLOR, CLICOLOR_FORCE, CI, PYTHONUNBUFFERED, "
        "PYTHONDONTWRITEBYTECODE, PYTHONHASHSEED, SOURCE_DATE_EPOCH (a name for a program, a "
        "search path or code, like PAGER, PATH, LD_*, HOME, GIT_CONFIG_*, never is); and "
        "setting PATH, IFS, HOME, LD_*, BASH_ENV... any other way (for, read, printf -v, "
        "unset, set -k/-a). Approves once, never 'always'",
    )
    @magic_arguments.argument(
        "--deny",
        action="append",
        default=[],
        metavar="GLOB",
        help="reject a command when any simple command in it matches GLOB (or a tool-call "
        "title does): nested ones in $(...), sh -c '...', subshells, functions and loops, "
        "and wrapped ones (env, sudo, xargs, time { ...; }, /bin/rm is rm) included; deny "
        "wins over allow, and a matched deny is never left to a click (reject, else answer "
        "'cancelled'). "
        "A guard rail, not a sandbox: it cannot see code an interpreter runs (python -c, "
        "perl -e), find -delete or -exec, or scripts on disk",
    )
    @magic_arguments.argument(
        "--allow-code",
        action="store_true",
        help="run the Python the agent sends with its run_code kernel tool (%%acp connect"
        " --kernel-tools) without a click; the code card still shows it and its output. Off by"
        " default: each run_code waits for Allow on its card, and a reject, the card's timeout,"
        " Interrupt or the end of the turn leave it unrun",
    )
    @magic_arguments.argument(
        "--timeout",
        type=_positive_seconds,
        default=None,
        metavar="SECONDS",
        help="a permission request still unanswered after SECONDS is answered 'cancelled'"
        " (fail closed), and the turn ends cancelled (default: none while a front end is"
        f" connected; without one, as under jupyter execute, {NONINTERACTIVE_TIMEOUT:g} s or"
        f" ${TIMEOUT_ENV} or %%config AcpMagics.noninteractive_timeout)",
    )
    @magic_arguments.argument(
        "--with",
        dest="with_names",
        action="append",
        default=[],
        metavar="NAMES",
        help="attach these notebook variables (comma-separated) to the prompt, each as a"
        f" summary of at most {PER_OBJECT_CAP:,} characters (a DataFrame's shape, dtypes, nulls"
        " and first rows; an array's shape, dtype, min, max and a sample; a figure as an image"
        f" when the agent takes images), {PER_PROMPT_CAP:,} in all; the cell shows each before"
        " it is sent. A name that is not defined is an error, and nothing is sent",
    )
    @magic_arguments.argument(
        "--cells",
        type=_positive_int,
        default=None,
        metavar="N",
        help="attach the last N executed cells (their input and Out text, from IPython's"
        " history) to the prompt",
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

        {name} is filled in from the notebook's variables; {{ and }} are literal braces.
        The cell waits until the agent is idle (unless --bg). Interrupt cancels the turn.
        Nothing the agent asks for runs without an explicit allow: a click, or an --allow rule.
        Running the cell again continues the same session (the agent sees the earlier turns);
        --new starts a fresh one.
        """
        # Called directly (without the input transformer): run the turn and block until it ends.
        try:
            run = _start_cell(self.notebook, self.shell, line, cell)
        except UsageError as exc:
            raise _visible_error(exc) from None
        if _parse_cell_line(line).bg:
            run.no_waiter()
            return
        try:
            run.wait_blocking()
        except AcpError as exc:
            raise _visible_error(UsageError(turn_failure(exc))) from None
        finally:
            _finish_cell(run)


def _plain_help(doc: str | None) -> str:
    """A magic's docstring as plain text: magic_arguments starts the usage with the
    reStructuredText literal marker "::", which IPython would page as is."""
    text = doc or ""
    if text.startswith("::\n"):
        usage, _, rest = text[3:].lstrip("\n").partition("\n\n")
        text = textwrap.dedent(usage).strip("\n") + "\n\n" + rest
    return text


# What `%acp?` and `%%acp?` page (magic_arguments set these docstrings from the parsers).
AcpMagics.acp.__doc__ = _plain_help(AcpMagics.acp.__doc__)
AcpMagics.acp_cell.__doc__ = _plain_help(AcpMagics.acp_cell.__doc__)


def acp_help() -> str:
    """What ``%acp --help`` prints: the subcommands (the magic's own description)."""
    parser: argparse.ArgumentParser = AcpMagics.acp.parser
    return inspect.cleandoc(parser.description or "")


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


def load_ipython_extension(ipython: Any, notebook: Notebook | None = None) -> None:
    """Register the magics for this kernel's notebook (``_notebook.current()``)."""
    from . import _sidepanel
    from ._notebook._owner import current
    from ._widgets._acks import acknowledge_comms

    nb = notebook if notebook is not None else current()
    _sidepanel.install(nb)  # the side panel listens to the notebook's events
    # Widget edits during an awaiting %%acp cell (a form's fields) must be acknowledged, or the
    # front end holds every later edit of a model (see _widgets/_acks.py).
    acknowledge_comms(getattr(ipython, "kernel", None))
    ipython.register_magics(AcpMagics(ipython, notebook=nb))
    cleanup = ipython.input_transformers_cleanup
    if transform_cell not in cleanup:
        cleanup.append(transform_cell)
    if _pre_run_cell not in ipython.events.callbacks["pre_run_cell"]:
        ipython.events.register("pre_run_cell", _pre_run_cell)
    if _post_run_cell not in ipython.events.callbacks["post_run_cell"]:
        ipython.events.register("post_run_cell", _post_run_cell)
    # the notebook's agents are paced (a cell of the user's own code goes before a background
    # flood): from here on, each cell of the user's own code tells the pacing it runs


def _post_run_cell(result: Any) -> None:
    from IPython.core.getipython import get_ipython

    _notebook_of(get_ipython()).pacing.cell_ended()


_OWN_MAGIC = re.compile(r"\s*%%?acp(?![\w.])")


def _pre_run_cell(info: Any) -> None:
    """The cell about to run; when it showed a turn, its output (the turn's view) is going:
    what that turn's background work asks is then asked in the side panel only."""
    from IPython.core.getipython import get_ipython

    nb = _notebook_of(get_ipython())
    nb.cell_started(getattr(info, "cell_id", None))
    source = getattr(info, "raw_cell", "") or ""
    # %%acp waits for its own turn, %acp for the agent: their output is read at full speed
    nb.pacing.cell_started(magic=_OWN_MAGIC.match(source) is not None)
    shown = nb.cells.get(f"cell:{nb.cell_id}") if nb.cell_id else None
    if shown is not None:
        shown.close_view()


def unload_ipython_extension(ipython: Any) -> None:
    cleanup = ipython.input_transformers_cleanup
    if transform_cell in cleanup:
        cleanup.remove(transform_cell)
    with contextlib.suppress(ValueError):
        ipython.events.unregister("pre_run_cell", _pre_run_cell)
    with contextlib.suppress(ValueError):
        ipython.events.unregister("post_run_cell", _post_run_cell)
    _notebook_of(ipython).pacing.cell_ended()  # no cell will say it ended any more


__all__ = ["AcpMagics", "load_ipython_extension", "run_cell_async", "unload_ipython_extension"]
