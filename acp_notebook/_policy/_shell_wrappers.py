"""The wrappers ``_shell`` looks through (``env``, ``sudo``, ``xargs``, ...) and their options."""

from __future__ import annotations

import re

from ._shell_text import Word

# name -> (options taking a value, options taking none, transparent, positional operands)
_WRAPPERS: dict[str, tuple[frozenset[str], frozenset[str], bool, int]] = {
    "time": (frozenset({"-f", "-o"}), frozenset({"-p", "-a", "-v", "-q"}), False, 0),
    "command": (frozenset(), frozenset({"-p"}), True, 0),
    "builtin": (frozenset(), frozenset(), True, 0),
    "exec": (frozenset({"-a"}), frozenset({"-c", "-l"}), True, 0),
    "nohup": (frozenset(), frozenset(), False, 0),
    "env": (frozenset({"-u", "-C"}), frozenset({"-i", "-", "-0", "-v"}), False, 0),
    "nice": (frozenset({"-n"}), frozenset(), False, 0),
    "timeout": (
        frozenset({"-s", "-k"}),
        frozenset({"-v", "--foreground", "--preserve-status"}),
        False,
        1,
    ),
    "stdbuf": (frozenset({"-i", "-o", "-e"}), frozenset(), False, 0),
    "xargs": (
        frozenset({"-a", "-d", "-E", "-L", "-n", "-P", "-s", "-I"}),
        frozenset({"-0", "-r", "-t", "-p", "-x", "--null", "--no-run-if-empty", "--verbose"})
        | frozenset({"--exit", "--open-tty", "-o"}),
        False,
        0,
    ),
    "sudo": (
        frozenset({"-u", "-g", "-p", "-C", "-h", "-D", "-r", "-t", "-T", "-U", "-R"}),
        frozenset({"-E", "-H", "-n", "-k", "-S", "-b", "-P", "-A", "-B", "-N"}),
        False,
        0,
    ),
    "doas": (frozenset({"-u", "-C"}), frozenset({"-n", "-L"}), False, 0),
    "setsid": (frozenset(), frozenset({"-f", "-w", "-c"}), False, 0),
    "coproc": (frozenset(), frozenset(), False, 0),
    "busybox": (frozenset(), frozenset(), False, 0),
    "toybox": (frozenset(), frozenset(), False, 0),
}
_LONG_WITH_VALUE = frozenset(
    {"--signal", "--kill-after", "--adjustment", "--unset", "--chdir", "--user", "--group"}
    | {"--input", "--output", "--error", "--arg-file", "--delimiter", "--max-args", "--eof"}
    | {"--max-lines", "--max-procs", "--max-chars", "--prompt", "--close-from", "--host"}
)
# Options whose value may be glued on (`-n5`, `-uroot`), and long options with `=`.
_GLUED = re.compile(r"(-[a-zA-Z])(.+)")


def wrapped(name: str, words: list[Word]) -> tuple[int, bool, bool] | None:
    """(words to skip to reach the wrapped program, transparent, read statically), or None when
    ``name`` is not a wrapper or runs no program here."""
    spec = _WRAPPERS.get(name)
    if spec is None:
        return None
    takes_value, flags, transparent, operands = spec
    static = all(w.literal for w in words)
    i = 1
    while i < len(words):
        word = words[i].text
        if word == "--":
            i += 1
            break
        if not word.startswith("-") or (word == "-" and name != "env"):
            break
        if name == "env" and (word == "-S" or word.startswith(("-S", "--split-string"))):
            static = False
        if (name == "nice" and re.fullmatch(r"-\d+", word)) or (
            word.startswith("--") and word.split("=", 1)[0] in _LONG_WITH_VALUE and "=" in word
        ):
            i += 1
        elif word in takes_value or word in _LONG_WITH_VALUE:
            i += 2
        elif (
            word in flags
            or ((glued := _GLUED.fullmatch(word)) and glued.group(1) in takes_value)
            or (name == "xargs" and re.fullmatch(r"-[ie]\S*|-l\d*", word))
            or (len(word) > 2 and word[1] != "-" and all(f"-{c}" in flags for c in word[1:]))
        ):
            i += 1
        else:  # an option not known here: skip it, and say the command is not read
            static = False
            i += 1
    if name == "xargs" and any(w.text.startswith(("-I", "-i", "--replace")) for w in words[1:i]):
        static = False
    if name == "coproc":  # `coproc NAME { ...; }`: a name may come first
        static = False
    if name in ("sudo", "doas") and any(w.text in ("-i", "-s", "-e", "-l") for w in words[1:i]):
        static = False
    return min(i + operands, len(words)), transparent, static
