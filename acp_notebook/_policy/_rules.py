"""``--allow`` / ``--deny`` glob policies for permission requests.

A tool-call subject is judged by its title: the first ``--deny`` glob matching the whole title
rejects, else the first ``--allow`` glob matching it approves; for a call that may run something
(not a read, edit, search ...) only when the title read as a command is approved under the
model below (``Shell: ls *`` judges the command of ``Shell: ls -l`` under ``ls *``; an
``execute`` call's title, Gemini's only copy of its command, is judged whole). When the tool
call carries commands (in ``rawInput`` under ``command``, ``commands``, ``cmd``, ``script`` or
``argv``, each a string or an argv list joined as a shell would read it; see
``_tool_calls.raw_input_commands``), a deny glob matching the title still rejects, and otherwise
each command is judged as a command subject is: any denied rejects, and only all allowed
approve; the title alone never approves. Deny also reads, as commands, the title, the command
of a ``Name: command`` title (Cline's ``run_commands: rm -f x``, Kimi's ``Shell: rm -f x``) and
the text content of a call that may run something (Kimi puts its command there). A call
whose command cannot be read (``_tool_calls.call_command_unknown``: an ``execute`` call with
none, or an ``other`` call whose input holds text under other keys or as JSON text) is never
approved by a rule while any deny rule is set: a person is asked (and its card says why).

A command subject is a shell string. It is parsed with tree-sitter's bash grammar
(:mod:`_policy._shell`) into the simple commands it can run, nested ones included, and each
simple command is matched as its words after quote removal, joined with single spaces, with its
redirections as words (``echo hi > f``; ``2>&1``). Environment assignments in front
(``TZ=UTC make``) are looked through, and so are the wrappers ``env``, ``command``, ``builtin``,
``exec``, ``nohup``, ``nice``, ``timeout``, ``time``, ``stdbuf``, ``xargs``, ``sudo``, ``doas``,
``setsid`` and ``coproc``: ``sudo -u bob env X=1 rm x`` is matched as itself, as
``env X=1 rm x`` and as ``rm x``.

* **deny** rejects when a deny glob matches the whole string, or any of those texts, for any
  simple command found anywhere: in substitutions, subshells, groups, functions, loops, case
  arms, after bash's ``time`` keyword, ``sh -c '...'`` literals and here-documents fed to a
  shell. A program named with a path
  is tried with its basename too (``/bin/rm x`` is ``rm x``). A word that is not literal is
  matched as written (``rm $X`` is ``rm $X``, which ``rm *`` matches).
* **allow** approves only a command that can be read statically, when every simple command
  matches an allow glob. Statically means: it parses; every program, argument and redirection
  target is a literal word (quotes removed; no ``$VAR``, ``${...}``, ``$(...)``, backticks,
  ``$((...))``, ``<(...)``, unquoted ``*``, ``?`` or ``[...]`` patterns, brace expansion,
  ``$'...'`` (which dash and bash read differently)); no function or alias definitions, no
  ``eval``, ``source``, ``trap`` and the like; no ``[[ ]]`` or ``(( ))``; no shell reading
  commands from its input (``sh <<EOF``, ``... | sh``), no here-document fed to an interpreter;
  ``sh -c`` only with a literal script, which is read the same way; an assignment a program sees
  (a prefix, ``env``/``sudo NAME=v``, ``export``, ``declare -x``) only to a name in
  ``_shell_names.HARMLESS_NAME`` (``LANG``, ``LC_*``, ``TZ``, ``TERM``, ``NO_COLOR``, ...: never a
  name that names a program, a path searched for programs, libraries or configuration,
  or code), any other (``x=1``, a loop variable, ``read``/``printf -v``/``wait -p`` targets,
  ``unset``, ``env -u``) only to a harmless or lower-case name that is not ``PATH``, ``IFS``,
  ``HOME``, ``LD_*``, ``BASH_ENV`` and the like; no ``set -k``, ``set -a``, ``mapfile``,
  ``getopts``, ``{name}>``. A ``for NAME in WORDS`` loop over literal words
  is read once per word, when ``$NAME`` is all the body does with the name. Anything else, and a
  command over 100,000 characters, is left to a person, even under ``--allow '*'``.
  For a wrapper, the wrapper's command line and the wrapped one must *both* match an allow glob
  (``--allow 'echo *'`` does not approve ``sudo echo x``), except for ``command``, ``builtin``
  and ``exec``, which run the same program (``time`` is a program in dash, so it needs a rule).
  A program under ``xargs`` also gets arguments read from its input, so the glob must match it
  with any arguments added (``cat *`` does; ``cat -n`` does not; for a program of
  :data:`EFFECT_OPTIONS`, whose added arguments may be such options, only ``*``), and without
  any unless ``xargs -r`` is given. Allow compares a program named with a path by its
  basename only in ``/bin``, ``/usr/bin``, ``/sbin``, ``/usr/sbin`` and ``/usr/local/bin``:
  ``./echo hi`` is not ``echo hi``. A program's name with a blank or a shell character in it
  (``'ls -l; rm x'``) and a redirection to a ``/dev`` file not listed (``< /dev/tcp/h/80``)
  are never static. An option of :data:`EFFECT_OPTIONS` (``rm -f``, ``find -delete``,
  ``git --output``, ``git --ext-diff``, ``sort -o``, ``sed -i``) is approved only by a rule
  that names it as a word, or ``*`` alone: ``rm -i *`` does not approve ``rm -i -f x``.

What neither can see: what a program does once it runs. An interpreter running code
(``python -c``, ``perl -e``, ``node -e``), ``find -delete`` and ``find -exec`` (for deny; allow
sees the options above), ``git`` aliases, ``make``, scripts on disk, and programs that run
others besides the wrappers above (``watch``, ``flock``, ``su -c``, ``ssh``). A deny rule is a
guard rail, not a sandbox.

Deny wins over allow. A decision picks an *offered* option: ``allow_once`` for allow (never
``allow_always``: a rule approves one request, and when ``allow_once`` is not offered a person is
asked), ``reject_once`` (else ``reject_always``) for deny, and when neither is offered no option
(the request is answered ``cancelled``: a matched deny is never left to a click). It never
invents an option id. :meth:`Policy.decide` never raises: when judging fails it still rejects if
a deny glob matches the whole text or a piece between operators, and otherwise asks a person.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from .._protocol import RequestPermissionRequest
from .._protocol._permission import tool_call_command
from .._protocol._tool_calls import (
    NOT_COMMAND_KINDS,
    ToolCallFields,
    call_command_unknown,
    content_texts,
    raw_input_commands,
    title_command,
)

if TYPE_CHECKING:
    from ._shell import Layer, Reading

ALLOW_KINDS = ("allow_once", "allow_always")
REJECT_KINDS = ("reject_once", "reject_always")
_POLICY_ALLOWS = ("allow_once",)  # a rule approves one request: never allow_always
# What only a `*` in a glob can match: the arguments xargs adds, which nobody has seen.
_UNSEEN_ARGS = ("\x00", "\x00 -\x01 \x00/\x02")
# Where the fallback (when judging failed) cuts a command into pieces for deny.
_OPERATORS = r"\n|;|&&|\|\||\||&|\$\(|\(|\)|`|\{|\}"
#: What makes a title of a call that is not an ``execute`` one read as a command: a shell's
#: separators, pipes, substitutions, expansions or redirections (an MCP tool titled
#: ``ls -l; rm x`` is judged as those two commands, not matched as the text ``ls *``).
_SHELL_CHARS = re.compile(r"[;&|`$<>\n\r]")


@dataclass(frozen=True)
class PolicyDecision:
    option_id: str | None  # None: answer `cancelled` (a deny matched, no reject option offered)
    rule: str  # e.g. "--deny 'rm *'", or "--allow 'printf *', --allow 'sleep *'"
    allow: bool


@dataclass(frozen=True)
class Policy:
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    #: ``--allow-code``: the agent's ``run_code`` runs without a click (``_kernel_code``);
    #: it has nothing to do with permission requests, which ``decide`` judges
    allow_code: bool = False

    @classmethod
    def from_globs(
        cls, allow: Sequence[str] | None, deny: Sequence[str] | None, *, allow_code: bool = False
    ) -> Policy:
        return cls(tuple(allow or ()), tuple(deny or ()), allow_code)

    def decide(self, request: RequestPermissionRequest) -> PolicyDecision | None:
        """A decision, or None when a person is to be asked. Never raises: if judging fails,
        a deny glob matching the raw text or a piece of it still rejects, else a person asks."""
        try:
            return self._decide(request)
        except Exception:  # fail closed: never approve, never lose a deny
            return self._fallback(request)

    def _fallback(self, request: RequestPermissionRequest) -> PolicyDecision | None:
        try:
            target = subject_target(request)
        except Exception:  # a subject that cannot even be read: a person
            return None
        if target is None or not self.deny:
            return None
        pieces = [target, *(p.strip() for p in re.split(_OPERATORS, target))]
        command = tool_call_command(request)
        if command is not None:
            pieces += [command, *(p.strip() for p in re.split(_OPERATORS, command))]
        for pattern in self.deny:
            if any(fnmatch.fnmatchcase(text, pattern) for text in pieces):
                return _deny(request, pattern)
        return None

    def _decide(self, request: RequestPermissionRequest) -> PolicyDecision | None:
        subject = request.subject
        if getattr(subject, "type", None) == "command":
            return self._decide_command(request, str(getattr(subject, "command", "")))
        target = subject_target(request)
        call = getattr(subject, "tool_call", None)
        if not isinstance(call, ToolCallFields):
            return None
        for pattern in self.deny:
            if target is not None and fnmatch.fnmatchcase(target, pattern):
                return _deny(request, pattern)
        if self.deny:  # the title's command and the call's text, read as commands, for deny
            texts = _deny_texts(call)
            if texts is None:  # too many to read: a person
                return None
            guard = replace(self, allow=())
            for text in texts:
                denied = guard._decide_command(request, text)
                if denied is not None:
                    return denied
        reading = raw_input_commands(call.raw_input)
        decisions = [self._decide_command(request, c) for c in reading.commands]
        for decided in decisions:
            if decided is not None and not decided.allow:
                return decided
        if reading.unreadable and call.kind == "execute":
            return None  # what it runs is not known: a person
        if reading.commands:  # then only the commands can approve: each one of them
            return _all_allowed(decisions)
        if self.deny and call_command_unknown(call):
            return None  # no deny rule could see its command: never approved by a rule
        if target is None:
            return None
        for pattern in self.allow:
            if fnmatch.fnmatchcase(target, pattern) and self._title_allowed(
                request, call, target, pattern
            ):
                return _pick(request, _POLICY_ALLOWS, _rule("--allow", [pattern]), allow=True)
        return None

    def _title_allowed(
        self, request: RequestPermissionRequest, call: ToolCallFields, title: str, pattern: str
    ) -> bool:
        """Whether ``pattern``, which matches the whole title, approves the call. The title of
        a call that reads, edits, searches ... is its name, matched as text. Otherwise a title
        that is (or ends in) a command is judged as a command subject is, with ``pattern`` the
        only allow rule: ``Name: command`` (Kimi's ``Shell: ls -l``) by a rule ``Name: GLOB``
        as the command under GLOB, and any other title of an ``execute`` call (Gemini's shell
        call has its command only there) or of the form ``Name: command`` as a whole."""
        if call.kind in NOT_COMMAND_KINDS:
            return True
        named, rule = _split_named(title), _split_named(pattern)
        if named is not None and rule is not None and named[0] == rule[0]:
            command, glob = named[1], rule[1]
        elif call.kind == "execute" or named is not None or _SHELL_CHARS.search(title):
            # (a title of another kind with a shell's separators, substitutions or
            # redirections in it is read as the command it looks like, whole)
            command, glob = title, pattern
        else:  # an MCP tool's name (kind `other`): the title is not read as a command
            return True
        judged = replace(self, allow=(glob,), deny=())._decide_command(request, command)
        return judged is not None and judged.allow

    def _decide_command(
        self, request: RequestPermissionRequest, command: str
    ) -> PolicyDecision | None:
        if not self.allow and not self.deny:
            return None
        from ._shell import read_command  # the parser loads on first use, not at %load_ext

        reading = read_command(command)
        if self.deny:
            candidates = deny_candidates(command, reading)
            for pattern in self.deny:
                if any(fnmatch.fnmatchcase(text, pattern) for text in candidates):
                    return _deny(request, pattern)
        if not self.allow or not reading.static or not reading.commands:
            return None
        used: list[str] = []
        for layers in reading.commands:
            for layer in layers:
                if layer.deny_only or not layer.needs_allow:
                    continue
                glob = next((g for g in self.allow if _allows(g, layer)), None)
                if glob is None:
                    return None
                if glob not in used:
                    used.append(glob)
        if not used:
            return None
        return _pick(request, _POLICY_ALLOWS, _rule("--allow", used), allow=True)


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


#: How many text blocks of one tool call's content deny reads as commands (where Kimi puts an
#: execute call's command). Each is parsed on the I/O thread; a real call has one or two. A call
#: with more is never approved by a rule while a deny rule is set: a person is asked.
MAX_DENY_TEXTS = 16
# Tool kinds whose text content is not a command (a file read, a search's results ...).
_NOT_COMMAND_KINDS = frozenset({"read", "edit", "delete", "move", "search", "think", "fetch"})


def _split_named(text: str) -> tuple[str, str] | None:
    """``Name: command`` as (name, command), else None (``_tool_calls.title_command``)."""
    command = title_command(text)
    if command is None:
        return None
    head = text.rstrip()[: -len(command)]
    return head.strip().removesuffix(":").strip(), command


def _deny_texts(call: ToolCallFields) -> list[str] | None:
    """What deny reads as commands besides ``rawInput``: the title (as a shell reads it), its
    command when it is ``Name: command`` (Cline, Kimi), and the text content of a call that may
    run something; None when the content has more than :data:`MAX_DENY_TEXTS` text blocks."""
    texts: list[str] = []
    if isinstance(call.title, str):
        texts.append(call.title)
        named = title_command(call.title)
        if named is not None:
            texts.append(named)
    if call.kind not in _NOT_COMMAND_KINDS:
        content = content_texts(call)
        if len(content) > MAX_DENY_TEXTS:
            return None
        texts += content
    return texts


def _all_allowed(decisions: Sequence[PolicyDecision | None]) -> PolicyDecision | None:
    """One allow for several commands when each was allowed (naming every rule used), else
    None."""
    allowed = [d for d in decisions if d is not None and d.allow]
    if not allowed or len(allowed) != len(decisions):
        return None
    rule = ", ".join(dict.fromkeys(d.rule for d in allowed))
    return PolicyDecision(allowed[0].option_id, rule, True)


def simple_commands(command: str) -> list[str] | None:
    """The texts an allow rule must each match, or None when the command is not read statically."""
    from ._shell import read_command

    reading = read_command(command)
    if not reading.static:
        return None
    return [
        _allow_text(layer)
        for layers in reading.commands
        for layer in layers
        if layer.needs_allow and not layer.deny_only
    ]


def deny_candidates(command: str, reading: Reading | None = None) -> list[str]:
    """Every text a deny glob is tried on: the whole string, and each layer of each simple
    command found, as written and with its program's basename."""
    from ._shell import read_command

    reading = reading or read_command(command)
    candidates = [command]
    for layers in reading.commands:
        for layer in layers:
            for text in (layer.text(basename=False), layer.text(basename=True)):
                candidates.append(text)
                if layer.extra_args:  # xargs adds arguments nobody has seen
                    candidates.append(f"{text} {_UNSEEN_ARGS[0]}")
    return list(dict.fromkeys(candidates))


def _allow_text(layer: Layer) -> str:
    from ._shell import allow_program

    words = [w.text for w in layer.words]
    words[0] = allow_program(words[0])
    return " ".join(words)


def _rm_effect(word: str) -> bool:
    """``rm``'s options that turn its questions off: ``-f`` (alone or in ``-rf``), ``--force``
    and ``--interactive=never`` (getopt takes any prefix of a long option's name)."""
    if word.startswith("--"):
        name, _, value = word.partition("=")
        if len(name) > 2 and "--force".startswith(name):
            return True
        return len(name) > 2 and "--interactive".startswith(name) and value in _NEVER
    return word.startswith("-") and "f" in word[1:]


def _long_option(names: tuple[str, ...], shorts: str) -> Callable[[str], bool]:
    """A test of a word for the long options ``names`` (any prefix of three letters or more,
    ``=value`` or not) and the short option letters ``shorts`` (alone or in a cluster)."""

    def test(word: str) -> bool:
        if word.startswith("--"):
            name = word.partition("=")[0]
            return len(name) > 4 and any(n.startswith(name) for n in names)
        return bool(shorts) and word.startswith("-") and bool(set(word[1:]) & set(shorts))

    return test


_NEVER = frozenset({"never", "no", "none"})
_FIND_EFFECTS = frozenset(
    {"-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls"}
)
#: Options that make a program delete without asking, delete, write a file or run another
#: program. Where a rule's ``*`` would cover one, the rule does not approve it: only a rule
#: that names it (``rm -f *``, ``find * -delete``) or ``*`` alone does.
EFFECT_OPTIONS: dict[str, Callable[[str], bool]] = {
    "rm": _rm_effect,
    "find": _FIND_EFFECTS.__contains__,
    "git": _long_option(("--output", "--ext-diff"), ""),
    "sort": _long_option(("--output",), "o"),
    "sed": _long_option(("--in-place",), "i"),
}


def _unnamed_effect(glob: str, layer: Layer) -> bool:
    """Whether ``layer`` holds an effect option (:data:`EFFECT_OPTIONS`) that ``glob`` does not
    name as a word of its own (compared up to a ``=``), or is a program of that table that
    ``xargs`` gives arguments nobody has seen."""
    words = [w.text for w in layer.words]
    effect = EFFECT_OPTIONS.get(words[0].rsplit("/", 1)[-1]) if words else None
    if effect is None:
        return False
    if layer.extra_args:
        return True
    named = {word.partition("=")[0] for word in glob.split()}
    return any(effect(w) and w.partition("=")[0] not in named for w in words[1:])


def _allows(glob: str, layer: Layer) -> bool:
    if layer.writes and ">" not in glob and glob != "*":  # `echo *`: not `echo x > ~/.bashrc`
        return False
    if glob != "*" and _unnamed_effect(glob, layer):  # `rm -i *`: not `rm -i -f x`
        return False
    text = _allow_text(layer)
    if layer.bare and not fnmatch.fnmatchcase(text, glob):
        return False
    return not layer.extra_args or all(
        fnmatch.fnmatchcase(f"{text} {unseen}", glob) for unseen in _UNSEEN_ARGS
    )


def _rule(flag: str, patterns: Sequence[str]) -> str:
    return ", ".join(f"{flag} {pattern!r}" for pattern in patterns)


def _deny(request: RequestPermissionRequest, pattern: str) -> PolicyDecision:
    """A matched deny is never left to a click: ``reject_once``, else ``reject_always``, else
    no option (the request is answered ``cancelled``)."""
    rule = _rule("--deny", [pattern])
    return _pick(request, REJECT_KINDS, rule, allow=False) or PolicyDecision(None, rule, False)


def _pick(
    request: RequestPermissionRequest, kinds: Sequence[str], rule: str, *, allow: bool
) -> PolicyDecision | None:
    for kind in kinds:
        for option in request.options:
            if option.kind == kind:
                return PolicyDecision(option.option_id, rule, allow)
    return None
