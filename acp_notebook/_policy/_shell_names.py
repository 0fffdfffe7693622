"""Which variable assignments ``_shell`` reads statically: every way a command sets a variable
(``NAME=v``, ``env``/``sudo NAME=v``, ``export``, ``declare``, a ``for`` loop, ``read``,
``printf -v``, ``wait -p``, ``unset``, ``env -u``) and the ``set`` options that change what
an assignment does.

An assignment a program sees (*exported*) is static only for a name in :data:`HARMLESS_NAME`.
Any other is static for a harmless name, or one with a lower-case letter that is not in
:data:`RISKY_NAME` (an upper-case name may be exported already, so setting it changes what
programs see).
"""

from __future__ import annotations

import re

from ._shell_model import SET_FLAGS, SET_NAMES

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Variables that change which program runs, or make a shell or the loader run other code.
RISKY_NAME = re.compile(
    r"PATH|IFS|ENV|BASH_ENV|SHELLOPTS|BASHOPTS|PS\d|PROMPT_COMMAND|CDPATH|GLOBIGNORE|HOME"
    r"|LD_\w*|DYLD_\w*|BASH_FUNC_\w*|GCONV_PATH|BASH_LOADABLES_PATH|BASH_XTRACEFD|POSIXLY_CORRECT"
    r"|EXECIGNORE|BASH_COMPAT|FPATH|TMOUT|OPTIND|OPTARG"
)
# The only names an assignment may give a program's environment: they pick a language, a time
# zone, a terminal's kind, size or colours, Python's buffering or hashing, a build timestamp.
# A name that names a program (PAGER, EDITOR), a path searched for programs, libraries or
# configuration (PATH, LD_*, HOME, PYTHONPATH), or code or options (GIT_CONFIG_*, NODE_OPTIONS,
# PERL5OPT) is never one of them.
HARMLESS_NAME = re.compile(
    r"LANG|LANGUAGE|LC_[A-Z]+|TZ|TERM|COLUMNS|LINES|NO_COLOR|FORCE_COLOR|CLICOLOR|CLICOLOR_FORCE"
    r"|CI|PYTHONUNBUFFERED|PYTHONDONTWRITEBYTECODE|PYTHONHASHSEED|SOURCE_DATE_EPOCH"
)
# Builtins that set the variables named by their arguments (`printf` only with -v; `wait -p`).
SETTERS = frozenset(
    {"read", "printf", "wait", "export", "declare", "typeset", "local", "readonly", "unset"}
)
# For `read`, `printf`, `wait`: (options whose value is a name set, options taking another
# value, whether the operands are names set).
_TARGET_OPTIONS = {"read": ("a", "dinNptu", True), "printf": ("v", "", False)}
_TARGET_OPTIONS["wait"] = ("p", "", False)


def assignment_problem(name: str, how: str, *, exported: bool) -> str | None:
    """Why ``how`` setting ``name`` (``exported``: into a program's environment) is not static,
    or None. ``name`` may carry a subscript or ``=value``: the name is what comes first."""
    name = name.split("=", 1)[0]
    name = name.removesuffix("+")  # `x+=1`
    if not IDENTIFIER.fullmatch(name):  # `b[x]` (bash evaluates the subscript), `X%`, `1`
        return f"{how} {name!r}, not a plain identifier"
    if HARMLESS_NAME.fullmatch(name):
        return None
    if RISKY_NAME.fullmatch(name):
        return f"{how} {name}"
    if exported:
        return f"{how} {name}, exported (not a harmless name)"
    if not re.search("[a-z]", name):
        return f"{how} {name} (upper case: it may be exported already)"
    return None


def setter_problems(name: str, args: list[str]) -> list[str]:
    """What is not static in the variables a builtin sets by name: ``read PATH``,
    ``printf -v IFS``, ``wait -p``, ``export``/``declare``/``unset`` reached as a command
    (``builtin export PATH=.``)."""
    problems: list[str | None] = []
    if name in _TARGET_OPTIONS:
        targets, values, operands = _TARGET_OPTIONS[name]
        i = 0
        while i < len(args):
            arg = args[i]
            if arg == "--" or not arg.startswith("-") or arg == "-":
                if operands:
                    names = args[i + (arg == "--") :]
                    problems += [
                        assignment_problem(n, f"`{name}` of", exported=False) for n in names
                    ]
                break
            for j, letter in enumerate(arg[1:], 2):
                if letter in targets or letter in values:
                    value = arg[j:] or (args[i + 1] if i + 1 < len(args) else "")
                    i += not arg[j:]
                    if letter in targets:
                        how = f"`{name} -{letter}` of"
                        problems.append(assignment_problem(value, how, exported=False))
                    break
            i += 1
        return [p for p in problems if p is not None]
    options = [a for a in args if a[:1] in ("-", "+") and len(a) > 1]
    exported = name == "export" or any(a.startswith("-") and "x" in a for a in options)
    problems += [f"`{name} {o}`" for o in options if not set(o[1:]) <= set("xrgp")]
    problems += [
        assignment_problem(a, f"`{name}` of", exported=exported) for a in args if a not in options
    ]
    return [p for p in problems if p is not None]


def set_problems(args: list[str]) -> list[str]:
    """``set -k`` (assignment words anywhere), ``set -a`` (every assignment exported),
    ``set -o posix`` and the like are never static; ``set -euo pipefail`` is."""
    problems: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-", "--") or arg[:1] not in ("-", "+") or len(arg) < 2:
            break
        letters = arg[1:]
        if letters.endswith("o"):
            option = args[i + 1] if i + 1 < len(args) else ""
            if option not in SET_NAMES:
                problems.append(f"`set {arg} {option}`")
            letters = letters[:-1]
            i += 1
        if not set(letters) <= SET_FLAGS:
            problems.append(f"`set {arg}`")
        i += 1
    return problems
