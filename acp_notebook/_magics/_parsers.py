"""The options of ``%acp`` and ``%%acp`` (``magic_arguments``: their parsers are also their
help, ``%acp?`` and ``%%acp?``), and the sub-parsers of the ``%acp`` subcommands."""

from __future__ import annotations

import argparse
import difflib
import inspect
import shlex
import textwrap
from collections.abc import Sequence
from typing import Any, Literal, NoReturn

import IPython.core.magic as _magic
from IPython.core import magic_arguments as _magic_arguments
from IPython.core.error import UsageError

from .._kernel._context import PER_OBJECT_CAP, PER_PROMPT_CAP
from .._notebook._errors import DEFAULT_SESSION, NONINTERACTIVE_TIMEOUT, TIMEOUT_ENV


def usage(parser: argparse.ArgumentParser) -> str:
    """The parser's usage line as "usage: %acp log [--name NAME] [-n N]" (one line)."""
    usage = " ".join(parser.format_usage().split())
    usage = usage.replace(":: ", "", 1)  # magic_arguments' formatter starts with "::"
    return usage if usage.startswith("usage:") else f"usage: {usage}"


# IPython 8 ships these without hints (or exports) and IPython 9 with hints that reject
# methods: use them untyped, so the module type-checks the same under both.
magic_arguments: Any = _magic_arguments


line_magic: Any = _magic.line_magic


cell_magic: Any = _magic.cell_magic


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
    "mode",
    "config",
)


def did_you_mean(word: str, choices: Sequence[str]) -> str:
    """``; did you mean 'connect'?`` for a word close to one of ``choices``, else ``""``."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.75)
    return f"; did you mean {close[0]!r}?" if close else ""


def _option_hint(message: str, parser: argparse.ArgumentParser) -> str:
    """For argparse's "unrecognized arguments: --alow ..." the closest real option, if any."""
    if "unrecognized arguments:" not in message:
        return ""
    words = message.split("unrecognized arguments:", 1)[1].split()
    options = [o for action in parser._actions for o in action.option_strings]
    for word in words:
        if word.startswith("-"):
            hint = did_you_mean(word.split("=", 1)[0], options)
            if hint:
                return hint
    return ""


class _HelpShown(Exception):
    """A subcommand's ``--help`` was printed: the magic returns normally."""


class _SubParser(argparse.ArgumentParser):
    """A subcommand's parser: ``--help`` prints and returns, a bad option is one UsageError."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}{_option_hint(message, self)} ({usage(self)})")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if status == 0:  # after --help
            raise _HelpShown
        raise UsageError(f"{self.prog}: {(message or '').strip() or 'error'} ({usage(self)})")


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


def _plain_help(doc: str | None) -> str:
    """A magic's docstring as plain text: magic_arguments starts the usage with the
    reStructuredText literal marker "::", which IPython would page as is."""
    text = doc or ""
    if text.startswith("::\n"):
        usage, _, rest = text[3:].lstrip("\n").partition("\n\n")
        text = textwrap.dedent(usage).strip("\n") + "\n\n" + rest
    return text


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
@magic_arguments.argument("--new", action="store_true", help="start a new session for this name")
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
def cell_options(line: str, cell: str) -> None:
    """Send the cell body to the agent as a prompt and show the turn live.

    {name} is filled in from the notebook's variables; {{ and }} are literal braces.
    The cell waits until the agent is idle (unless --bg). Interrupt cancels the turn.
    Nothing the agent asks for runs without an explicit allow: a click, or an --allow rule.
    Running the cell again continues the same session (the agent sees the earlier turns);
    --new starts a fresh one.
    """


def parse_cell_line(line: str) -> argparse.Namespace:
    """A ``%%acp`` line's options; a malformed one is a UsageError naming the usage."""
    try:
        argv = shlex.split(line)
    except ValueError as exc:
        raise UsageError(f"%%acp: {exc}") from None
    # The parser built by magic_arguments; its errors are UsageErrors (without the usage line).
    parser: argparse.ArgumentParser = cell_options.parser
    try:
        return parser.parse_args(argv)
    except UsageError as exc:
        hint = _option_hint(str(exc), parser)
        raise UsageError(f"%%acp: {exc}{hint} ({usage(parser)})") from None


@magic_arguments.magic_arguments(name="acp")
@magic_arguments.argument("subcommand", choices=_SUBCOMMANDS, help="what to do")
@magic_arguments.argument("rest", nargs=argparse.REMAINDER, help="its arguments")
def acp_options(line: str) -> None:
    """Manage ACP agents and sessions.

    %acp connect [AGENT] [--name NAME] [--cwd DIR] [--timeout SECONDS]
                 [--env KEY=VALUE ...] [--protocol {auto,1,2}] [--kernel-tools]
                 [--mode MODE] [--trace] [-- ARGV...]
        Launch and initialize an agent: AGENT is a registry shortcut (claude, codex,
        copilot, qwen, cline, ...: see %acp agents; words after -- are added to its
        command), else ARGV, else the embedded agent; it is stopped if it has not
        answered initialize after SECONDS (30). --env values are never shown.
        ACP v2 is offered and v1 spoken if the agent answers 1 (--protocol forces one).
        --mode: every new session starts in MODE, or no prompt is sent.
    %acp agents [AGENT] [--installed]  the ACP registry's agents: installed here or not,
                                       how each starts, its protocol, what it needs,
                                       whether it asks before acting
    %acp mode [MODE] [--session NAME]  the session's mode (and the others); with MODE,
                                       switch to it (a turn's header shows the mode)
    %acp config [ID VALUE] [--session NAME]
                                       the session's config options; with ID VALUE,
                                       set one
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
    %acp log [--name NAME] [-n N] [--export PATH]
                                       the last protocol messages (base64 shortened);
                                       --export writes a trace file (every frame with
                                       connect --trace), keys and --env values redacted
    %acp grants                        the requests answered Always allow / Always
                                       reject (the agent keeps them; ACP cannot revoke)
    %acp panel [--no-auto|--auto|--close]
                                       open the JupyterLab side panel (and print a
                                       text summary); it is made (its tab counts
                                       pending requests) on the first connect;
                                       --auto: also open it then; --no-auto: neither

    %acp SUBCOMMAND --help shows a subcommand's options.
    """


def acp_help() -> str:
    """What ``%acp --help`` prints: the subcommands (the magic's own description)."""
    parser: argparse.ArgumentParser = acp_options.parser
    return inspect.cleandoc(parser.description or "")
