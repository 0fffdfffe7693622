"""``--allow`` / ``--deny`` glob policies for permission requests.

A tool-call subject is judged by its title: the first ``--deny`` glob matching the whole title
rejects, else the first ``--allow`` glob matching it approves. When the tool call carries a
command (a ``rawInput.command``, as v1 agents send: a string, or a list of strings joined as a
shell would read them), a deny glob matching the title still rejects, and otherwise the command
is judged as a command subject is: then the title alone never approves.

A command subject is a shell string. It is parsed with tree-sitter's bash grammar
(:mod:`acp_notebook._shell`) into the simple commands it can run, nested ones included, and each
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
  with any arguments added (``rm *`` does; ``rm -i`` does not), and without any unless
  ``xargs -r`` is given. Allow compares a program named with a path by its
  basename only in ``/bin``, ``/usr/bin``, ``/sbin``, ``/usr/sbin`` and ``/usr/local/bin``:
  ``./echo hi`` is not ``echo hi``.

What neither can see: what a program does once it runs. An interpreter running code
(``python -c``, ``perl -e``, ``node -e``), ``find -delete`` and ``find -exec``, ``git`` aliases,
``make``, scripts on disk, and programs that run others besides the wrappers above (``watch``,
``flock``, ``su -c``, ``ssh``). A deny rule is a guard rail, not a sandbox.

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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._protocol import RequestPermissionRequest
from ._protocol._tool_calls import raw_input_command

if TYPE_CHECKING:
    from ._shell import Layer, Reading

ALLOW_KINDS = ("allow_once", "allow_always")
REJECT_KINDS = ("reject_once", "reject_always")
_POLICY_ALLOWS = ("allow_once",)  # a rule approves one request: never allow_always
# What only a `*` in a glob can match: the arguments xargs adds, which nobody has seen.
_UNSEEN_ARGS = ("\x00", "\x00 -\x01 \x00/\x02")
# Where the fallback (when judging failed) cuts a command into pieces for deny.
_OPERATORS = r"\n|;|&&|\|\||\||&|\$\(|\(|\)|`|\{|\}"


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
        if target is None:
            return None
        for pattern in self.deny:
            if fnmatch.fnmatchcase(target, pattern):
                return _deny(request, pattern)
        command = tool_call_command(request)
        if command is not None:
            return self._decide_command(request, command)
        for pattern in self.allow:
            if fnmatch.fnmatchcase(target, pattern):
                return _pick(request, _POLICY_ALLOWS, _rule("--allow", [pattern]), allow=True)
        return None

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


def tool_call_command(request: RequestPermissionRequest) -> str | None:
    """The command a tool-call subject runs, as a shell string: its ``rawInput.command``
    (whatever the tool call's ``kind``) when that is a string, or a list of strings joined as a
    shell would read them (``["bash", "-lc", "ls"]``, as codex sends); else None.

    An ``execute`` tool call whose ``rawInput.command`` is there but neither is judged as a
    lone NUL character, a command no allow glob approves: a person decides."""
    subject = request.subject
    if getattr(subject, "type", None) != "tool_call":
        return None
    call = getattr(subject, "tool_call", None)
    raw = getattr(call, "raw_input", None)
    if not isinstance(raw, dict) or "command" not in raw:
        return None
    command = raw_input_command(raw)
    if command is not None:
        return command
    return _UNREADABLE if getattr(call, "kind", None) == "execute" else None


_UNREADABLE = "\x00"


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


def _allows(glob: str, layer: Layer) -> bool:
    if layer.writes and ">" not in glob and glob != "*":  # `echo *`: not `echo x > ~/.bashrc`
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
