"""``--allow`` / ``--deny`` glob policies for permission requests.

A tool-call subject is judged by its title: the first ``--deny`` glob matching the whole title
rejects, else the first ``--allow`` glob matching it approves.

A command subject is a shell string, and one line of shell can run many programs
(``echo hi; touch x``), so its globs are matched against each *simple command* in it:

* the string is split (with :mod:`shlex`, so quotes are respected) on ``;``, ``&&``, ``||``,
  ``|``, ``|&``, ``&``, newlines, ``(`` and ``)``; a simple command is matched as its words (quotes
  removed) joined with single spaces. Redirections stay part of it as words of their own, so
  ``echo *`` covers ``echo hi > f`` and ``echo hi 2>&1`` is seen as ``echo hi 2 >& 1``;
* leading shell keywords (``if``, ``then``, ``do``, ``!``, ``{``, ``time``, ...) are dropped before
  matching, pieces that only close a block (``done``, ``fi``, ``}``, ...) are skipped, and a
  ``for NAME in WORDS`` header, which runs nothing by itself, is skipped too;
* **deny** rejects when a deny glob matches the whole string, or any simple command, including
  those inside ``$(...)``, backticks, ``<(...)`` and ``>(...)`` (quoted or not);
* **allow** approves only when *every* simple command matches some allow glob, the quoting
  parses, and the string holds no command or process substitution (``$(``, a backtick, ``<(``,
  ``>(``; checked without regard to quotes). A substitution is always asked about, whatever the
  globs, even ``--allow '*'``; otherwise ``*`` matches any simple command.

This is a matcher, not a shell: anything it cannot vouch for falls to a person. A quoted word made
only of operator characters (``';'``, ``\\;``) is taken for an operator, which can only make allow
ask more often. What an allowed program does with its arguments (``sh -c``, ``xargs``,
``find -exec``) is up to the glob: ``--allow 'sh *'`` allows whatever ``sh`` is told to run.

Deny wins over allow. A decision picks an *offered* option: ``allow_once`` (else ``allow_always``)
for allow, ``reject_once`` (else ``reject_always``) for deny. It never invents an option id: when
no option of the needed kind is offered, the policy does not decide and a person is asked.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ._protocol import RequestPermissionRequest

ALLOW_KINDS = ("allow_once", "allow_always")
REJECT_KINDS = ("reject_once", "reject_always")

# Characters shlex groups into operator tokens; runs of them are cut into bash's operators.
_PUNCTUATION = "();<>|&\n"
_OPERATORS = sorted(
    {";;&", "<<<", "<<-", "&>>", "&&", "||", "|&", ";;", ";&", "<<", ">>", "<>", ">|", ">&", "<&"}
    | {"&>", ";", "&", "|", "(", ")", "<", ">", "\n"},
    key=len,
    reverse=True,
)
# Operators that end a simple command (the rest are redirections and stay in it).
_SEPARATORS = frozenset({";", "&&", "||", "|", "|&", "&", "\n", ";;", ";&", ";;&", "(", ")"})
_LEADING_WORDS = frozenset(
    {"do", "then", "else", "elif", "if", "while", "until", "!", "{", "(", "time"}
)
_CLOSERS = frozenset({"done", "fi", "esac", "}", ")"})
# Command and process substitution (arithmetic ``$((`` included), found on the raw text.
_SUBSTITUTION = re.compile(r"\$\(|`|<\(|>\(")
_OPENERS = re.compile(r"[$<>]\(")


@dataclass(frozen=True)
class PolicyDecision:
    option_id: str
    rule: str  # e.g. "--deny 'rm *'", or "--allow 'printf *', --allow 'sleep *'"
    allow: bool


@dataclass(frozen=True)
class Policy:
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()

    @classmethod
    def from_globs(cls, allow: Sequence[str] | None, deny: Sequence[str] | None) -> Policy:
        return cls(tuple(allow or ()), tuple(deny or ()))

    def decide(self, request: RequestPermissionRequest) -> PolicyDecision | None:
        subject = request.subject
        if getattr(subject, "type", None) == "command":
            return self._decide_command(request, str(getattr(subject, "command", "")))
        target = subject_target(request)
        if target is None:
            return None
        for pattern in self.deny:
            if fnmatch.fnmatchcase(target, pattern):
                return _pick(request, REJECT_KINDS, _rule("--deny", [pattern]), allow=False)
        for pattern in self.allow:
            if fnmatch.fnmatchcase(target, pattern):
                return _pick(request, ALLOW_KINDS, _rule("--allow", [pattern]), allow=True)
        return None

    def _decide_command(
        self, request: RequestPermissionRequest, command: str
    ) -> PolicyDecision | None:
        if self.deny:
            candidates = deny_candidates(command)
            for pattern in self.deny:
                if any(fnmatch.fnmatchcase(text, pattern) for text in candidates):
                    return _pick(request, REJECT_KINDS, _rule("--deny", [pattern]), allow=False)
        if not self.allow or has_substitution(command):
            return None
        commands = simple_commands(command)
        if not commands:  # quoting does not parse, or nothing to run
            return None
        used: list[str] = []
        for text in commands:
            glob = next((g for g in self.allow if fnmatch.fnmatchcase(text, g)), None)
            if glob is None:
                return None
            if glob not in used:
                used.append(glob)
        return _pick(request, ALLOW_KINDS, _rule("--allow", used), allow=True)


def subject_target(request: RequestPermissionRequest) -> str | None:
    """The whole text a subject is known by: the command, or the tool call's title."""
    subject = request.subject
    kind = getattr(subject, "type", None)
    if kind == "command":
        return str(getattr(subject, "command", ""))
    if kind == "tool_call":
        title = getattr(getattr(subject, "tool_call", None), "title", None)
        return title if isinstance(title, str) else None
    return None


def has_substitution(command: str) -> bool:
    """Whether the command may contain a command or process substitution (quotes not regarded).

    Line continuations, backslashes and quote marks are removed first, so ``$\\(`` or ``$''(``
    cannot hide one; removing characters never separates a ``$(`` that was already there.
    """
    flat = re.sub(r"[\\'\"]", "", command.replace("\\\n", ""))
    return _SUBSTITUTION.search(flat) is not None


def simple_commands(command: str) -> list[str] | None:
    """The simple commands an allow rule must each match; None when the quoting does not parse."""
    segments, complete = _segments(command)
    if not complete:
        return None
    return [text for words in segments if (text := _matchable(words)) is not None]


def deny_candidates(command: str) -> list[str]:
    """Every text a deny glob is tried on: the whole string, its simple commands (with and
    without leading keywords), and those of each substitution body found in it."""
    candidates = [command]
    flat = command.replace("\\\n", "")
    for text in [flat, *_substitution_bodies(flat)]:
        segments, complete = _segments(text)
        if not complete:  # best effort: also split as if there were no quotes at all
            segments += _segments(text, quoting=False)[0]
        for words in segments:
            candidates.append(" ".join(words))
            if (stripped := _matchable(words)) is not None:
                candidates.append(stripped)
    return list(dict.fromkeys(candidates))


def _substitution_bodies(text: str) -> Iterator[str]:
    """The text inside each ``$(``, ``<(``, ``>(`` (nested ones too) and each pair of backticks.

    Parentheses are counted without regard to quotes; an unclosed body runs to the end.
    """
    for match in _OPENERS.finditer(text):
        depth, start = 1, match.end()
        end = start
        while end < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            end += 1
        yield text[start : end - 1] if depth == 0 else text[start:]
    yield from text.split("`")[1::2]


def _segments(command: str, *, quoting: bool = True) -> tuple[list[list[str]], bool]:
    """Split into the word lists of simple commands; the flag is False when quoting failed
    (the lists then hold what came before the failure)."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=_PUNCTUATION)
    lexer.whitespace = " \t"  # newlines separate commands; shlex would skip them
    lexer.whitespace_split = True  # a word runs to a blank or an operator, as in the shell
    lexer.commenters = ""  # never hide text as a comment: `a#b` is a word, not `a`
    if not quoting:
        lexer.quotes = lexer.escapedquotes = lexer.escape = ""
    segments: list[list[str]] = [[]]
    complete = True
    try:
        for token in lexer:
            for part in _operators(token) if token and set(token) <= set(_PUNCTUATION) else [token]:
                if part in _SEPARATORS:
                    segments.append([])
                else:
                    segments[-1].append(part)
    except ValueError:  # no closing quotation, or a backslash at the very end
        complete = False
    return [words for words in segments if words], complete


def _operators(run: str) -> Iterator[str]:
    """Cut a run of operator characters (``;(`` or ``)|``, as shlex groups them) into operators."""
    while run:
        op = next(o for o in _OPERATORS if run.startswith(o))
        yield op
        run = run[len(op) :]


def _matchable(words: list[str]) -> str | None:
    """The text a glob sees for one simple command, or None when the piece runs nothing itself."""
    rest = list(words)
    while rest and rest[0] in _LEADING_WORDS:
        rest.pop(0)
    if not rest or all(word in _CLOSERS for word in rest):
        return None
    # A loop header `for NAME` or `for NAME in WORDS`; the body's commands follow `do`.
    loop = rest[0] == "for" and len(rest) > 1 and rest[1].isidentifier()
    if loop and (len(rest) == 2 or rest[2] == "in"):
        return None
    return " ".join(rest)


def _rule(flag: str, patterns: Sequence[str]) -> str:
    return ", ".join(f"{flag} {pattern!r}" for pattern in patterns)


def _pick(
    request: RequestPermissionRequest, kinds: Sequence[str], rule: str, *, allow: bool
) -> PolicyDecision | None:
    for kind in kinds:
        for option in request.options:
            if option.kind == kind:
                return PolicyDecision(option.option_id, rule, allow)
    return None
