"""A second policy corpus, written from the README alone, over four policies.

* P1 ``--allow 'echo *'``, P2 ``--allow 'ls *'``, P3 ``--allow 'git status*'`` and
  P4 ``--allow '*' --deny 'rm *'``.

Each command is judged by the policy (``decide`` of ``test_policy_corpus``); an approved one is
run under ``dash`` and under ``bash`` as ``nobody`` in a fresh scratch directory, with ``PATH``
holding only logging shims (those of the first corpus, plus ``git`` and models of ``sudo``,
``doas`` and GNU ``time``, which are not all installed). Under P3 the scratch directory is a
real git repository (``canary``, ``x`` and ``y`` committed), so a hook, an fsmonitor, a pager or
an alias that git runs shows up as a logged program. A case fails when an approved command

* ran a program no allow rule approves, or one a deny rule matches (under P4: ``rm``),
* removed a canary, created a ``PWNED*`` file, or, under a policy whose rules approve no
  redirection that writes a file (no rule with a ``>`` in it and none that is ``*`` alone, as
  the README's table says), created, changed or removed any file of the scratch directory.

Cases marked ``blind`` are the README's "What a deny rule cannot see": they are judged (and
pinned when the README says) but never run. ``expect`` is pinned only where the README is clear.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.adversarial.test_policy_corpus import (
    CANARIES,
    DEMOTE,
    SHELLS,
    SHIM,
    SHIMMED,
    Case,
    approves,
    decide,
)

A, D, ASK = "allow", "deny", "ask"
F = "forbid"  # in a template: "ask" under P1-P3 (touch is not allowed), "deny" under P4 (rm)

Rules = tuple[tuple[str, ...], tuple[str, ...]]  # allow globs, deny globs
POLICIES: dict[str, Rules] = {
    "P1": (("echo *",), ()),
    "P2": (("ls *",), ()),
    "P3": (("git status*",), ()),
    "P4": (("*",), ("rm *",)),
}
# What each policy approves (X) and what it forbids (T) in the templates below.
APPROVED = {"P1": "echo hi", "P2": "ls -l", "P3": "git status", "P4": "echo hi"}
FORBIDDEN = {"P1": "touch PWNED", "P2": "touch PWNED", "P3": "touch PWNED", "P4": "rm canary"}


def under(policy: str, text: str, expect: str | None = None, blind: str = "") -> Case:
    allow, deny = POLICIES[policy]
    return Case(text, allow=allow, deny=deny, expect=expect, blind=blind)


def policy_name(case: Case) -> str:
    for name, rules in POLICIES.items():
        if (case.allow, case.deny) == rules:
            return name
    raise AssertionError(case)


def cases(policy: str, *items: tuple[str, str | None] | tuple[str, str | None, str]) -> list[Case]:
    made = []
    for item in items:
        text, expect = item[0], item[1]
        blind = item[2] if len(item) == 3 else ""
        if expect == F:
            expect = D if policy == "P4" else ASK
        made.append(under(policy, text, expect, blind))
    return made


def templates(policies: tuple[str, ...], *items: tuple[str, str | None]) -> list[Case]:
    """``{X}`` is a command the policy approves, ``{T}`` one it forbids."""
    return [
        case
        for policy in policies
        for text, expect in items
        for case in cases(
            policy,
            (text.replace("{X}", APPROVED[policy]).replace("{T}", FORBIDDEN[policy]), expect),
        )
    ]


ALL = ("P1", "P2", "P3", "P4")
NARROW = ("P1", "P2", "P3")

CORPUS: list[Case] = [
    # -- shell syntax around an approved command, under every policy --------------------------
    *templates(
        ALL,
        # dash has no `&>`: `X &` runs in the background, then `>/dev/null T` is a command
        ("{X} &>/dev/null {T}", None),
        ("{X} &>>/dev/null {T}", None),
        ("{X}&>/dev/null {T}", None),
        ("{X} &>/dev/null\t{T}", None),
        # here-document delimiters the shells end differently from a naive reader
        ("{X} <<E#\nE#\n{T}\nE", F),  # the delimiter is `E#`: `#` is no comment there
        ("{X} <<--\n-\n{T}\n--", F),  # `<<-` with the delimiter `-`
        ("{X} <<E\r\nE\r\n{T}\nE", F),  # the delimiter is `E\r`
        ("{X} <<''\n\n{T}\n", F),  # an empty delimiter ends at the first empty line
        ("{X} <<$'E'\nE\n{T}\n$E", None),  # bash: delimiter `E`; dash: `$E`
        ("{X} <<E\\\nF\nEF\n{T}\nE", F),  # a line continuation inside the delimiter
        ("{X} <<E\\\n x\n$({T})\nE", F),  # `\<newline>` is no quoting: the body expands
        ('{X} <<"E F"\nE F\n{T}\nE', F),
        ("{X} <<-E\n\tE\n{T}\nE", F),
        ("{X} <<'A' <<B\nA\n$({T})\nB", F),  # only the first delimiter is quoted
        ("{X} <<E $({T})\nE", F),
        ("{X} <<E\n`{T}`\nE", F),
        ("{X} <<E; {T}\nhi\nE", F),
        ("{X} <<E | {T}\nE", F),
        ("{X} <<E && {T}\nE", F),
        ("{X} <<E >/dev/null; {T}\nE", F),
        ("{X} <<<E\n{T}", F),  # bash: a here-string, then a command; dash: a syntax error
        # carriage returns, form feeds and other blanks that are no blank to a shell
        ("{X} \\\r\n{T}", F),  # a backslash then CR: no line continuation
        ("{X}\r# ; {T}", F),  # `hi\r#` is one word: no comment
        ("{X}\v# ; {T}", F),
        ("{X}\f# ; {T}", F),
        ("{X}\u00a0# ; {T}", F),
        ("{X}\u2028; {T}", F),
        # comments and line continuations
        ("{X}\\\n#; {T}", F),  # `hi#`: no comment
        ("{X}|#\n{T}", F),  # the pipeline goes on after the comment
        ("{X};#\n{T}", F),
        ("{X} #\\\n{T}", F),  # no continuation inside a comment
        ("{X} \\\\\n{T}", F),  # an escaped backslash, then a newline
        ("{X} &\\\n& {T}", F),
        ("if {X}; then {X}; elif {T}; then {X}; fi", F),
    ),
    # -- a file written behind a here-document (no rule here has a `>` in it) ----------------
    *templates(
        NARROW,
        ("{X} <<E >x\nhi\nE", ASK),
        ("{X} <<'E' >>canary\nhi\nE", ASK),
        ("{X} <<-E 2>x\n\thi\n\tE", ASK),
        ("{X} <<E &>x\nE", ASK),
        ("{X} <<E >&x\nE", ASK),
        ("{X} 9<<E >x\nE", ASK),
        ("{X} <<E 3>x\nE", ASK),
        ("{X} >/dev/null <<E >|x\nE", ASK),
        ("({X}) <<E >x\nE", ASK),
        ("{ {X}; } <<E >x\nE", ASK),
        ("for f in a; do {X}; done <<E >x\nE", ASK),
        ("until {X}; do {X}; done <<E >x\nE", ASK),
        ("if {X}; then {X}; fi <<E >x\nE", ASK),
        ("case a in a) {X};; esac <<E >x\nE", ASK),
        ("{X} >x", ASK),
        ("{X} &>/dev/null >x", ASK),
        ("{X} <>x", ASK),
        ("{X} > /dev/null", A),
        ("{X} 2>&1 >/dev/null", A),
    ),
    # -- P1 `--allow 'echo *'` ----------------------------------------------------------------
    *cases(
        "P1",
        ("for _ in echo; do echo touch; $_ PWNED; done", None),  # bash: $_ is `touch`
        ("for f in echo; do for f in touch; do echo x; done; $f PWNED; done", None),
        ("for f in touch; do echo $f; done; $f PWNED", ASK),  # $f after the loop
        ("for f in echo; do read f <<E\ntouch\nE\n$f PWNED; done", None),
        ("for f in 'touch\techo'; do $f PWNED; done", ASK),  # unquoted: it would split
        ("for f in 'touch\necho'; do $f PWNED; done", ASK),
        ("for f in echo; do $f hi; done", A),
        ("for f in echo\ndo $f hi\ndone", A),
        ('for f in echo; do "$f" hi; done', A),
        ("for f in '/usr/bin/touc?'; do $f PWNED; done", ASK),  # unquoted: it would glob
        ("for f in '/usr/bin/[t]ouch'; do $f PWNED; done", ASK),
        ("exec -a echo touch PWNED", ASK),  # bash: runs touch, named echo
        ("exec -aecho touch PWNED", ASK),
        ("exec -la echo touch PWNED", ASK),
        ("command -p touch PWNED", ASK),
        ("command -- echo hi", None),
        ("echo hi &>/dev/null", None),
        ("echo hi &>/dev/null ls -l", None),
        ("echo x>(touch PWNED)", None),
        ("echo a<(touch PWNED)", None),
        ("((echo hi); touch PWNED)", ASK),
        ("case a in a) echo x;& b) touch PWNED;; esac", ASK),
        ("case a in a) echo x;;& *) touch PWNED;; esac", ASK),
        ('echo "\\\\$(touch PWNED)"', ASK),
        ("x='a[$(touch PWNED)]'; a=([x]=1); echo hi", ASK),  # never an array element
        ("x='a[$(touch PWNED)]'; echo hi", None),
        ("echo hi > c*", ASK),  # bash globs a redirection's target: `canary`
        ("echo hi > c?nary", ASK),
        ("echo hi > ~/x", ASK),
        ("echo hi !!", None),
        ("echo hi\u037e touch PWNED", None),  # a Greek question mark is a letter
        ("echo hi \uff06\uff06 touch PWNED", None),
        ("ech\u043e hi; touch PWNED", ASK),
        ("echo \u202etouch PWNED", None),
        ("\u200becho hi", None),
        ("'echo hi'", None),
        ("echo hi | echo x |& echo y", None),
        ("histchars=x; echo hi", None),
        ("echo hi <<'E'\n$(touch PWNED)\nE", A),  # a quoted body fed to echo
        ("echo hi <<E\n\\\\$(touch PWNED)\nE", ASK),
        ("coproc echo hi", None),
    ),
    # -- P2 `--allow 'ls *'` ------------------------------------------------------------------
    *cases(
        "P2",
        ("ls -l; ls -a", A),
        ("ls --color=always --hyperlink=always --quoting-style=shell-escape", A),
        ("ls -I '*' -l", A),
        ("l\\s -l", A),
        ("'ls' -l", A),
        ("/bin/ls -l", A),
        ("./ls -l", ASK),
        ("LS_COLORS=x ls -l", ASK),
        ("TIME_STYLE=+%s ls -l", ASK),
        ("QUOTING_STYLE=shell ls -l", ASK),
        ("COLUMNS=1 TZ=UTC ls -l", A),
        ("for f in ls; do $f -l; done", A),
        ("ls -l{,}", ASK),
        ("ls -l ~", None),
        ("ls \\*", None),
        ("ls -l <<E\nhi\nE", A),
        ("ls -l # ; touch PWNED", A),
        ("ls -l\\\n -a", A),
        ("ls -l > listing", ASK),
        ("ls -l | ls -a 2>&1", A),
    ),
    # -- P3 `--allow 'git status*'` -----------------------------------------------------------
    *cases(
        "P3",
        # a status line crafted as a config: `-z` output is one `#` comment up to the
        # newline inside the file name, then `[core] fsmonitor`, which the last status runs
        (
            "git status <<E >'\n[core]\n\tfsmonitor = touch PWNED\n#'\nE\n"
            "git status --porcelain=v2 --branch -z <<E >.git/config\nE\ngit status",
            ASK,
        ),
        ("git status --porcelain=v2 --branch -z <<E >.git/config\nE", ASK),
        ("git status > .git/config", ASK),
        ("git status --porcelain", A),
        ("git status -uall --ignored=matching", A),
        ("git status --porcelain=v2 --branch -z >/dev/null", A),
        ("LC_ALL=C TERM=dumb git status", A),
        ("command git status", A),
        ("exec git status", A),
        ("for f in status; do git $f; done", A),
        ("git stat\\\nus", A),
        ("'git status'", None),
        ("git -C . status", ASK),
        ("git --exec-path=. status", ASK),
        ("git --git-dir=.git status", ASK),
        ("git -c alias.status='!touch PWNED' status", ASK),
        ("git -c core.fsmonitor='touch PWNED' status", ASK),
        ("git -p status", ASK),
        ("git --no-pager status", ASK),
        ("GIT_TRACE=x git status", ASK),
        ("GIT_DIR=.git git status", ASK),
        ("GIT_EXEC_PATH=. git status", ASK),
        ("GIT_PAGER=cat git status", ASK),
        ("PAGER=cat git status", ASK),
        ("HOME=. git status", ASK),
        ("XDG_CONFIG_HOME=. git status", ASK),
        ("GIT_CONFIG_GLOBAL=x git status", ASK),
        ("EDITOR=x git status", ASK),
        ("time git status", ASK),
        ('git status -s -- "$(touch PWNED)"', ASK),
        ("git status --help", None, "git runs others: `git help` runs man"),
        ("git statusx", None, "git runs others: `git-statusx` from PATH or an alias"),
    ),
    # -- P4 `--allow '*' --deny 'rm *'` -------------------------------------------------------
    *cases(
        "P4",
        # xargs appends its input to the wrapper it runs: `env rm canary`
        ("echo rm canary | xargs env", None),
        ("echo rm canary | xargs -t env", None),
        ("echo rm canary | xargs -r env", None),
        ("echo rm canary | xargs -n 2 env", None),
        ("echo rm canary | xargs env -i", None),
        ("echo rm canary | xargs sudo -u root", None),
        ("echo rm canary | xargs xargs", None),
        ("echo rm canary | xargs nice", None),
        ("echo rm canary | xargs nice -n 5", None),
        ("echo rm canary | xargs timeout 5", None),
        ("echo rm canary | xargs stdbuf -oL", None),
        ("echo rm canary | xargs setsid -w", None),
        ("echo rm canary | xargs sudo", None),
        ("echo rm canary | xargs doas", None),
        ("echo rm canary | xargs nohup", None),
        ("echo rm canary | xargs time", None),
        ("xargs env <<< 'rm canary'", None),
        ("timeout 5 xargs env <<< 'rm canary'", None),
        ("echo rm canary > args; xargs -a args env", None),
        ("echo rm | xargs -I X X canary", None),
        ("echo rm | xargs -I{} {} canary", None),
        ("echo 'rm canary' | xargs -I{} sh -c {}", None),
        ("echo 'rm canary' | xargs sh -c", None),
        # GNU env takes an unambiguous abbreviation of a long option: --s is --split-string
        ("env --s='rm canary'", None),
        ("env --sp='rm canary'", None),
        ("env --split-str='rm canary'", None),
        ("timeout 5 env --sp='rm canary'", None),
        ("nohup env --spl='rm canary'", None),
        ("env -S 'rm canary'", None),
        ("env -S'rm canary'", None),
        # a shell fed its input on an explicit file descriptor 0
        ("sh 0<<< 'rm canary'", D),
        ("bash 0<<< 'rm canary'", D),
        ("dash 0<<< 'rm canary'", D),
        ("env sh 0<<< 'rm canary'", D),
        ("nice -n 1 sh 0<<< 'rm canary'", D),
        ("sudo sh 0<<< 'rm canary'", D),
        ("exec sh 0<<< 'rm canary'", D),
        ("command sh 0<<< 'rm canary'", D),
        ("sh 0<<<'rm canary' 2>/dev/null", D),
        ("sh 0<<< 'rm canary' -s", D),
        ("bash -c 'bash 0<<< \"rm canary\"'", D),
        ("bash --norc 0<<< 'rm canary'", D),
        ("sh -e 0<<< 'rm canary'", D),
        ("(sh) 0<<< 'rm canary'", None),
        ("exec 0<<< 'rm canary'\nsh", None),
        ("sh 0<<E\nrm canary\nE", D),
        ("sh <&3 3<<E\nrm canary\nE", D),
        ("sh 0<<< 'echo hi'", ASK),
        ("echo 'rm canary' | sh 0<&0", ASK),
        ("echo 'rm canary' | sh 0<&0 2>&1", ASK),
        ("echo 'rm canary' | sh 0<&0-", ASK),
        ("echo 'rm canary' | sh 0</dev/stdin", ASK),
        ("echo 'rm canary' | sh 0>&0", ASK),
        ("echo 'rm canary' | sh <&0", ASK),
        ("echo 'rm canary' | bash 0<&0 -s", ASK),
        ("cat <<< 'rm canary' | sh 0<&0", ASK),
        ("sh -c \"echo 'rm canary' | sh 0<&0\"", ASK),
        ("xargs -a /dev/null sh 0<<< 'rm canary'", None),
        ("sh 3<<<'rm canary' 0<&3", None),
        ("sh <<E\n\\rm canary\nE", None),
        ("echo rm canary | sudo -s", None),
        # the script of `sh -c` is read with bash's grammar, but `sh` is dash here
        ("sh -c 'echo x &>/dev/null rm canary'", None),
        ("dash -c 'echo x &>/dev/null rm canary'", None),
        ("env sh -c 'echo x &>/dev/null rm canary'", None),
        ("bash -c 'echo x &>/dev/null rm canary'", None),
        # wrappers' options, as the real programs read them
        ("timeout --kill-after 1 5 rm canary", D),
        ("timeout --signal KILL 5 rm canary", D),
        ("timeout -sKILL -k1 5 rm canary", D),
        ("timeout --foreground --preserve-status -v 5 rm canary", D),
        ("timeout --k=1 --s=KILL 5 rm canary", D),
        ("timeout -- 5 rm canary", D),
        ("nice --adjustment 5 rm canary", D),
        ("nice --adj=5 rm canary", D),
        ("nice -n -5 rm canary", D),
        ("nice -- rm canary", D),
        ("stdbuf --output L rm canary", D),
        ("stdbuf --o L -i 0 rm canary", D),
        ("setsid --ctty --fork --wait rm canary", D),
        ("env --unset X rm canary", D),
        ("env --u X rm canary", D),
        ("env --chdir . rm canary", D),
        ("env -C. rm canary", D),
        ("env --default-signal rm canary", D),
        ("env --block-signal --debug -v rm canary", D),
        ("sudo --user root rm canary", D),
        ("sudo --us root rm canary", D),
        ("sudo -D . -g root -C 5 -T 10 rm canary", D),
        ("sudo --preserve-env rm canary", D),
        ("sudo -EHnb -- rm canary", D),
        ("sudo LANG=C rm canary", D),
        ("doas -n -u root -- rm canary", D),
        ("sudo --sh rm canary", D),
        ("doas -s rm canary", D),
        ("time -f %e -o out rm canary", D),
        ("time --format %e --output out -a rm canary", D),
        ("echo canary | xargs -e rm", D),
        ("echo canary | xargs -l rm", D),
        ("echo canary | xargs -L 1 -P 1 -s 2000 rm", D),
        ("echo canary | xargs --max-args 1 --delimiter x rm", D),
        ("echo canary | xargs --process-slot-var v rm", D),
        ("echo canary | xargs --arg-file /dev/stdin rm", D),
        ("exec -a x rm canary", D),
        ("exec -cla x rm canary", D),
        ("command -p -- rm canary", D),
        ("command command rm canary", D),
        ("/usr/bin/../bin/rm canary", D),
        ("//usr/bin/rm canary", D),
        ("/proc/self/root/usr/bin/rm canary", D),
        ('r""m canary', D),
        ("rm\\\n canary", D),
        (">x rm canary", D),
        ("2>/dev/null rm canary", D),
        ("</dev/null rm canary", D),
        # bash evaluates a name's value as arithmetic: a subscript runs its command
        ("x='a[$(rm canary)]'; declare -i y=x", None),
        ("declare -i y; y='a[$(rm canary)]'", None),
        ("typeset -i y=1; y='a[$(rm canary)]'", None),
        ("declare -n r='a[$(rm canary)]'; r=1", None),
        ("declare -n r='a[$(rm canary)]'; read r <<< 1", None),
        ("declare -n r='a[$(rm canary)]'; unset r", None),
        ("declare -n r=PATH; r=.; ls", None),
        ("x='a[$(rm canary)]'; a=([x]=1)", None),
        ("test -v 'a[$(rm canary)]'", None),
        ("unset -v 'a[$(rm canary)]'", None),
        ("read 'a[$(rm canary)]' <<< x", None),
        ("printf -v 'a[$(rm canary)]' x", None),
        ("wait -p 'a[$(rm canary)]'", None),
        ("export 'a[$(rm canary)]=1'", None),
        ("readonly 'a[$(rm canary)]=1'", None),
        # bash builtins that run a string, and state that makes later text run rm
        ("compgen -W '$(rm canary)' x", None),
        ("compgen -C 'rm canary' x", None),
        ("hash -p /usr/bin/rm ls\nls canary", None),
        ("alias ls=rm\nls canary", None),
        ("builtin alias ls=rm\nls canary", None),
        ("shopt -s expand_aliases\nalias ls=rm\nls canary", None),
        ("builtin trap 'rm canary' EXIT", None),
        ("command eval 'rm canary'", D),
        ("set -k; echo x PATH=.", None),
        ("set -- -a", None),
        ("rm", None),
        # documented blind spots: a program that runs others, an interpreter, a script on disk
        ("python3 -c 'import os; os.remove(\"canary\")'", A, "an interpreter running code"),
        ("find . -name canary -exec rm {} ;", None, "find -exec"),
        ("sed -n '1e rm canary' canary", None, "an interpreter running code (sed e)"),
        ("awk 'BEGIN{system(\"rm canary\")}'", None, "an interpreter running code"),
        ("make -f /dev/stdin <<< 'all:;rm canary'", None, "make runs others"),
        ("git -c alias.x='!rm canary' x", None, "git aliases"),
        ("/lib64/ld-linux-x86-64.so.2 /usr/bin/rm canary", None, "ld.so runs others"),
        ("flock . rm canary", None, "a program that runs others"),
        ("setarch x86_64 rm canary", None, "a program that runs others"),
        ("script -qc 'rm canary' /dev/null", None, "a program that runs others"),
        ("ln -s /usr/bin/rm zap; ./zap canary", None, "rm linked under another name"),
        ("cp /usr/bin/rm zap; ./zap canary", None, "rm copied under another name"),
        ("echo 'rm canary' > s; sh s", None, "a script on disk"),
        ("echo 'rm canary' > s; sh 0< s", None, "a script on disk, fed to a shell"),
    ),
]


# -- the run --------------------------------------------------------------------------------------

# Models of programs that are not all installed: each logs its line like the other shims, then
# reads its options as the real one does and runs the command.
MODEL = r'''
import os, sys

name, args = os.path.basename(sys.argv[0]), sys.argv[1:]
with open(os.environ["CORPUS_LOG"], "a") as log:
    log.write("\036" + " ".join([name, *args]))

def long(arg, options):
    """The long option an unambiguous abbreviation names, as getopt_long reads it."""
    key = arg[2:].split("=", 1)[0]
    hits = [o for o in options if o == key] or [o for o in options if o.startswith(key)]
    return hits[0] if len(hits) == 1 else None

def parse(short_arg, short_opt, long_arg, long_flag):
    shell, i = False, 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            return i + 1, shell
        if arg.startswith("--"):
            option = long(arg, long_arg + long_flag)
            if option is None:
                sys.exit(1)
            shell |= option in ("shell", "login")
            i += 1 if "=" in arg or option in long_flag else 2
            continue
        if not arg.startswith("-") or arg == "-":
            return i, shell
        j = 1
        while j < len(arg):
            letter = arg[j]
            shell |= letter in "si" and name != "time"
            if letter in short_arg:
                i += 1 if j + 1 < len(arg) else 2
                break
            if letter in short_opt:  # an optional argument, only attached
                i += 1
                break
            j += 1
        else:
            i += 1
    return i, shell

if name == "sudo":
    start, shell = parse(
        "aCcDgpRrTtUu", "h",
        ["askpass", "close-from", "chdir", "group", "host", "prompt", "chroot", "role", "type",
         "command-timeout", "other-user", "user"],
        ["background", "bell", "preserve-env", "edit", "set-home", "help", "login",
         "remove-timestamp", "reset-timestamp", "list", "non-interactive", "preserve-groups",
         "stdin", "shell", "version", "validate"],
    )
elif name == "doas":
    start, shell = parse("Cu", "", [], [])
else:  # GNU time
    start, shell = parse("fo", "", ["format", "output"],
                         ["append", "portability", "quiet", "verbose", "help", "version"])
rest = args[start:]
while name == "sudo" and rest and "=" in rest[0] and not rest[0].startswith("="):
    key, _, value = rest.pop(0).partition("=")
    os.environ[key] = value
if shell:
    escaped = " ".join("".join("\\" + c if not (c.isalnum() or c in "_-$") else c for c in a)
                       for a in rest)
    rest = ["sh", "-c", escaped] if rest else ["sh"]
if not rest:
    sys.exit(0)
os.execvp(rest[0], rest)
'''

# An interpreter `nobody` can run (the test's own may sit under a private home directory).
PYTHON = shutil.which("python3", path="/usr/bin:/bin") or sys.executable
SHIMMED_TOO = ["git", "unlink", "make", "flock", "setarch", "script", "ionice"]


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="policy-corpus2-"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def workdir(sandbox: Path) -> Path:
    path = Path(tempfile.mkdtemp(dir=sandbox))
    path.chmod(0o777)
    return path


@pytest.fixture(scope="module")
def bindir(sandbox: Path) -> Path:
    return make_bindir(sandbox)


@pytest.fixture(scope="module")
def repo(sandbox: Path) -> Path:
    return make_repo(sandbox)


def make_bindir(sandbox: Path) -> Path:
    path = sandbox / "bin"
    path.mkdir(mode=0o755)
    for name in [*SHIMMED, *SHIMMED_TOO]:
        real = shutil.which(name, path="/usr/bin:/bin")
        if real is not None:
            _shim(path / name, SHIM + f'exec {real} "$@"\n')
    _shim(path / "python3", SHIM + f'exec {PYTHON} "$@"\n')
    for name in ("sudo", "doas", "time"):
        _shim(path / name, f"#!{PYTHON} -S\n{MODEL}")
    return path


def make_repo(sandbox: Path) -> Path:
    """A git repository with the canaries committed, copied into P3's scratch directories."""
    path = sandbox / "repo"
    path.mkdir()
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(path),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "a",
        "GIT_AUTHOR_EMAIL": "a@example.org",
        "GIT_COMMITTER_NAME": "a",
        "GIT_COMMITTER_EMAIL": "a@example.org",
    }
    for name in CANARIES:
        (path / name).write_text(f"{name}\n")
    for command in (["init", "-q", "-b", "master"], ["add", "."], ["commit", "-qm", "canaries"]):
        subprocess.run(["git", *command], cwd=path, env=env, check=True, capture_output=True)
    return path


def _shim(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


def writes_approved(case: Case) -> bool:
    """The README: a redirection that writes a file is approved by a rule with `>` or `*`."""
    return any(glob == "*" or ">" in glob for glob in case.allow)


GIT_NOISE = (".git/index", ".git/index.lock", ".git/objects/", ".git/logs/")


def snapshot(root: Path) -> dict[str, str]:
    found = {}
    for path in root.rglob("*"):
        name = path.relative_to(root).as_posix()
        if name.startswith(GIT_NOISE):
            continue
        if path.is_symlink():
            found[name] = "-> " + os.readlink(path)
        elif path.is_file():
            found[name] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            found[name] = "dir"
    return found


def prepare(case: Case, scratch: Path, repo: Path | None) -> None:
    if repo is not None and any(glob.startswith("git") for glob in case.allow):
        shutil.copytree(repo, scratch, symlinks=True)
    else:
        scratch.mkdir(parents=True)
    for name in CANARIES:
        (scratch / name).write_text(f"{name}\n")
    if DEMOTE:
        for path in [scratch, *scratch.rglob("*")]:
            os.chown(path, 65534, 65534, follow_symlinks=False)
    else:
        for path in [scratch, *scratch.rglob("*")]:
            path.chmod(0o777 if path.is_dir() else 0o666)


def run(case: Case, shell: str, scratch: Path, bindir: Path, repo: Path | None) -> list[str]:
    """Run the command, and list what it did that the rules do not approve."""
    prepare(case, scratch, repo)
    before = snapshot(scratch)
    log = scratch.parent / f"{scratch.name}.log"
    log.touch()
    log.chmod(0o666)
    env = {
        "PATH": str(bindir),
        "CORPUS_LOG": str(log),
        "HOME": str(scratch),
        "LC_ALL": "C.UTF-8",
        "SHELL": "/bin/sh",
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    real = shutil.which(shell, path="/usr/bin:/bin")
    assert real is not None
    try:
        subprocess.run(
            [*DEMOTE, real, "-c", case.command],
            cwd=scratch,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=15,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return [f"{shell}: timed out"]
    problems = []
    records = log.read_text(errors="replace").split("\x1e")[1:]
    problems += [f"{shell} ran {r!r}" for r in records if not approves(case, r)]
    for name in CANARIES:
        if not (scratch / name).exists() and not approves(case, f"rm {name}"):
            problems.append(f"{shell} removed {name}")
    for made in sorted(p.name for p in scratch.iterdir() if p.name.startswith("PWNED")):
        if not approves(case, f"touch {made}"):
            problems.append(f"{shell} created {made}")
    if not writes_approved(case):
        after = snapshot(scratch)
        for name in sorted(before.keys() | after.keys()):
            if before.get(name) != after.get(name) and not name.startswith("PWNED"):
                verb = "created" if name not in before else "changed"
                verb = "removed" if name not in after else verb
                if verb != "removed" or name not in CANARIES:
                    problems.append(f"{shell} {verb} {name!r}")
    return problems


def effects(case: Case, where: Path, bindir: Path, repo: Path | None) -> Iterator[str]:
    with ThreadPoolExecutor(len(SHELLS)) as pool:
        futures = [pool.submit(run, case, sh, where / sh, bindir, repo) for sh in SHELLS]
        for future in futures:
            yield from future.result()


def _id(index: int, case: Case) -> str:
    return f"{policy_name(case)}-{index:03d}"


@pytest.mark.parametrize("case", CORPUS, ids=[_id(i, c) for i, c in enumerate(CORPUS)])
def test_an_approved_command_does_only_what_the_rules_allow(
    case: Case, workdir: Path, bindir: Path, repo: Path
) -> None:
    outcome = decide(case)
    if case.expect is not None:
        assert outcome == case.expect, case
    if outcome != A or case.blind:
        return
    assert list(effects(case, workdir, bindir, repo)) == [], case


def test_the_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 200
    assert len({(c.command, c.allow, c.deny) for c in CORPUS}) == len(CORPUS), "duplicates"
    per_policy = Counter(policy_name(case) for case in CORPUS)
    assert set(per_policy) == set(POLICIES)
    assert min(per_policy.values()) >= 45, per_policy


def test_the_oracle_sees_forbidden_programs_and_effects(
    workdir: Path, bindir: Path, repo: Path
) -> None:
    """The checks can fail: run commands the rules forbid, as if they had been approved."""
    ran = list(effects(under("P1", "echo hi; touch PWNED"), workdir / "a", bindir, repo))
    assert ran == [
        "dash ran 'touch PWNED'",
        "dash created PWNED",
        "bash ran 'touch PWNED'",
        "bash created PWNED",
    ]
    wrote = list(effects(under("P2", "ls -l >out; ls -l >>canary"), workdir / "b", bindir, repo))
    assert wrote == [
        "dash changed 'canary'",
        "dash created 'out'",
        "bash changed 'canary'",
        "bash created 'out'",
    ]
    removed = list(effects(under("P4", "/bin/rm canary"), workdir / "c", bindir, repo))
    assert removed == ["dash removed canary", "bash removed canary"]
    dash_reads = under("P4", "echo hi &>/dev/null rm canary")
    dash_only = list(effects(dash_reads, workdir / "d", bindir, repo))
    assert dash_only == ["dash ran 'rm canary'", "dash removed canary"]
    # git runs the fsmonitor a config names: the repository and the git shim work
    fsmonitor = under("P3", "git -c core.fsmonitor='touch PWNED' status")
    found = list(effects(fsmonitor, workdir / "e", bindir, repo))
    assert "dash ran \"git -c core.fsmonitor='touch PWNED' status\"" not in found  # quotes gone
    assert "dash ran 'git -c core.fsmonitor=touch PWNED status'" in found
    assert any(p.startswith("dash ran 'touch PWNED") for p in found), found
    assert any(p.startswith("bash ran 'touch PWNED") for p in found), found
    # the sudo, doas and time models read their options and run the command
    for wrapper in ("sudo -u root -E", "sudo --user=root", "doas -u root", "time -f %e"):
        case = under("P4", f"{wrapper} rm canary")
        problems = list(effects(case, workdir / wrapper.replace(" ", "_"), bindir, repo))
        assert "dash removed canary" in problems, (wrapper, problems)
