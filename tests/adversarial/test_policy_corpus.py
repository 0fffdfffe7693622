"""The policy corpus: each command is judged by ``--allow``/``--deny`` rules, then really run.

Every case runs under ``dash`` and under ``bash`` (``[shell, "-c", command]``, no other shell in
between) in a fresh scratch directory, with ``PATH`` holding only logging shims: each shim
records its name and arguments, then runs the real program. A case fails when the policy
*approved* the command and the run did what the rules forbid:

* a logged program invocation that the rules do not approve (no allow glob matches it, or a
  deny glob does), or
* a file effect the rules do not approve: a canary (``canary``, ``x``, ``y``) removed, as if by
  ``rm NAME``, or a ``PWNED*`` file created, as if by ``touch NAME``.

Commands the policy leaves to a person (None) or rejects may do anything: they never run
unapproved. Cases marked ``blind`` are the documented blind spots (an interpreter running code,
``find -delete``, a script on disk): the policy approves them under the rules given, and their
effects are not checked; they are here to pin what the README says deny cannot see.
Then 300 generated commands (shell syntax glued at random around forbidden commands) go through
the same judge and the same runs.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_notebook._policy._rules import Policy
from acp_notebook._protocol import RequestPermissionRequest

SHELLS = ("dash", "bash")
CANARIES = ("canary", "x", "y")


@dataclass(frozen=True)
class Case:
    command: str
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    expect: str | None = None  # "allow", "deny" or "ask" when pinned
    blind: str = ""  # a documented blind spot: why its effects are not checked

    def __str__(self) -> str:
        return f"{self.allow}/{self.deny}: {self.command!r}"


STAR_NO_RM = {"allow": ("*",), "deny": ("rm *",)}
STAR_NO_TOUCH = {"allow": ("*",), "deny": ("touch *",)}
ECHO = {"allow": ("echo *",)}
ECHO_PRINTF = {"allow": ("echo *", "printf *")}
TOOLS = {"allow": ("echo *", "printf *", "cat *", "ls*", "sleep *", "[ *", "true", "grep *")}


def cases(rules: dict[str, tuple[str, ...]], *items: tuple[str, str | None]) -> list[Case]:
    return [Case(text, expect=expect, **rules) for text, expect in items]


A, D, ASK = "allow", "deny", "ask"

CORPUS: list[Case] = [
    # -- issue 10, finding 1: what shlex and the shell read differently
    *cases(
        ECHO,
        ("echo hi #'\ntouch PWNED\n#'", ASK),
        ("echo hi <<EOF\necho '\nEOF\ntouch PWNED\n#'", ASK),
        ("echo $'\\''; touch PWNED #'", ASK),
        ("echo hi # a comment", A),
        ("echo a#b; touch PWNED", ASK),
        ("echo hi # ; touch PWNED", A),  # all a comment: only `echo hi` runs
        ("echo '#'; touch PWNED", ASK),
        ("echo hi # \\\ntouch PWNED", ASK),  # no continuation inside a comment
        ('echo "#\'"\ntouch PWNED', ASK),
    ),
    Case("y=$'\\x24(touch PWNED)'; echo ${y@P}", allow=("*",), expect=ASK),
    Case("y='$(touch PWNED)'; echo ${y@P}", allow=("*",), expect=ASK),
    Case("echo hi #'\ntouch PWNED\n#'", allow=("echo *", "touch PWNED"), expect=A),
    # -- finding 4: `--allow '*' --deny 'rm *'`
    *cases(
        STAR_NO_RM,
        ("rm canary", D),
        ("X=1 rm canary", D),
        ("env rm canary", D),
        ("env -i rm canary", D),
        ("env -u HOME rm canary", D),
        ("env X=1 Y=2 rm canary", D),
        ("env -- rm canary", D),
        ("command rm canary", D),
        ("command -p rm canary", D),
        ("builtin command rm canary", D),
        ("exec rm canary", D),
        ("nohup rm canary", D),
        ("nice rm canary", D),
        ("nice -n 5 rm canary", D),
        ("nice -5 rm canary", D),
        ("timeout 5 rm canary", D),
        ("timeout -s KILL -k 1 5 rm canary", D),
        ("timeout --signal=KILL 5 rm canary", D),
        ("time rm canary", D),
        ("time -p rm canary", D),
        ("stdbuf -oL rm canary", D),
        ("stdbuf -o L -e 0 rm canary", D),
        ("echo canary | xargs rm", D),
        ("echo canary | xargs -0 -r rm", D),
        ("echo canary | xargs -n 1 rm -f", D),
        ("sudo rm canary", D),
        ("sudo -u root -E rm canary", D),
        ("doas rm canary", D),
        ("setsid rm canary", D),
        ("sudo env X=1 nice -n 1 timeout 5 rm canary", D),
        ("\\rm canary", D),
        ("'rm' canary", D),
        ('"rm" canary', D),
        ("r'm' canary", D),
        ("r\\m canary", D),
        ("r\\\nm canary", D),  # a line continuation inside the word
        ("$'rm' canary", D),
        ("$'\\x72m' canary", D),
        ("$'\\162m' canary", D),
        ("$RM canary", ASK),
        ("RM=rm; $RM canary", ASK),
        ("rm${IFS}canary", ASK),
        ("${RM:-rm} canary", ASK),
        ("/bin/rm canary", D),
        ("/usr/bin/rm canary", D),
        ("../../usr/bin/rm canary", D),
        ("sh -c 'rm canary'", D),
        ("bash -c 'rm canary'", D),
        ("dash -c 'rm canary'", D),
        ("sh -e -c 'rm canary'", D),
        ("sh -ec 'rm canary'", D),
        ("sh -c \"sh -c 'rm canary'\"", D),
        ("sh -c 'rm \"$1\"' sh canary", D),
        ('sh -c "$CMD"', ASK),
        ("echo $(rm canary)", D),
        ('echo "$(rm canary)"', D),
        ("echo `rm canary`", D),
        ('echo "`rm canary`"', D),
        ("echo $(echo $(rm canary))", D),
        ("cat <(rm canary)", D),
        ("echo > >(rm canary)", D),
        ('echo "${x:-$(rm canary)}"', D),
        ("x=$(rm canary)", D),
        ("X=$(rm canary) echo hi", D),
        ("(rm canary)", D),
        ("{ rm canary; }", D),
        ("echo ok; rm canary", D),
        ("echo ok && rm canary", D),
        ("false || rm canary", D),
        ("echo ok | rm canary", D),
        ("echo ok |& rm canary", D),
        ("echo ok & rm canary", D),
        ("rm canary &", D),
        ("echo ok\nrm canary", D),
        ("! rm canary", D),
        ("if true; then rm canary; fi", D),
        ("if rm canary; then :; fi", D),
        ("while true; do rm canary; break; done", D),
        ("until rm canary; do :; done", D),
        ("for f in canary; do rm $f; done", D),
        ("for f in a; do rm canary; done", D),
        ("case a in a) rm canary;; esac", D),
        ("case a in b) :;; *) rm canary;; esac", D),
        ("f() { rm canary; }; f", D),
        ("function f { rm canary; }; f", D),
        ("sh <<EOF\nrm canary\nEOF", D),
        ("sh <<'EOF'\nrm canary\nEOF", D),
        ("bash <<-EOF\n\trm canary\n\tEOF", D),
        ("sh <<< 'rm canary'", D),
        ("cat <<EOF\n$(rm canary)\nEOF", D),
        ("cat <<EOF\n$\\\n(rm canary)\nEOF", D),
        ('echo "$\\\n(rm canary)"', D),
        ("echo 'rm canary' | sh", ASK),
        ("eval 'rm canary'", D),
        ("eval rm canary", D),
        ("alias e='rm canary'\ne", ASK),
        ("trap 'rm canary' EXIT", ASK),
        ("{rm,canary}", ASK),  # bash: brace expansion runs `rm canary`
        ("echo rm canary", A),
        ("echo 'rm canary'", A),
        ("echo 'a; rm canary'", A),
        ('echo "a && rm canary"', A),
        ("echo a\\;rm canary", A),
        ("echo hi\uff1brm canary", A),  # a fullwidth semicolon is part of the word
        ("rm\u00a0canary", None),  # NBSP is no blank: one word, a program nobody has
        ("r\u043c canary", A),  # Cyrillic em: a program nobody has
        ("ls; touch PWNED", A),
        ("rm", None),  # `rm *` needs a space
    ),
    # -- the blind spots the README names: approved under '*', effects not checked
    Case("find . -name canary -delete", expect=A, blind="find -delete", **STAR_NO_RM),
    Case("find . -name canary -exec rm {} +", blind="find -exec", **STAR_NO_RM),
    Case(
        "python3 -c 'import os; os.remove(\"canary\")'",
        expect=A,
        blind="an interpreter running code",
        **STAR_NO_RM,
    ),
    Case(
        "perl -e 'unlink \"canary\"'", expect=A, blind="an interpreter running code", **STAR_NO_RM
    ),
    # -- --allow 'echo *': what runs must be echo and nothing else
    *cases(
        ECHO,
        ("echo hi", A),
        ("echo hi > out.txt", ASK),  # a write needs a rule with a `>` (issue 22)
        ("echo hi 2>&1 >>log.txt", ASK),
        ("echo hi 2>&1 >/dev/null", A),
        ("echo 'a;b'", A),
        ('echo "a && b | c & d"', A),
        ("echo 'a\ntouch PWNED'", A),
        ("echo a\\\ntouch PWNED", A),  # `echo atouch PWNED`
        ("echo hi; echo there", A),
        ("echo a && echo b || echo c | echo d", A),
        ("(echo a; echo b)", A),
        ("{ echo a; }", A),
        ("echo hi &", A),
        ("echo '$(touch PWNED)'", A),
        ("echo \\$\\(touch PWNED\\)", A),
        ("echo ~", A),
        ("/bin/echo hi", A),
        ("LC_ALL=C echo hi", A),
        ("X=1 echo hi", ASK),  # not a harmless name: a person decides
        ("echo hi; touch PWNED", ASK),
        ("echo hi\ntouch PWNED", ASK),
        ("echo hi & touch PWNED", ASK),
        ("echo hi | touch PWNED", ASK),
        ("echo hi && touch PWNED", ASK),
        ("echo $(touch PWNED)", ASK),
        ("echo `touch PWNED`", ASK),
        ("echo <(touch PWNED)", ASK),
        ("echo hi > $(touch PWNED)", ASK),
        ("echo $((1 + 2))", ASK),
        ("echo $HOME", ASK),
        ("echo ${y@P}", ASK),
        ("echo {a,b}", ASK),
        ("echo *", ASK),  # a pathname pattern: names from the directory
        ("echo ?anary", ASK),
        ("echo [c]anary", ASK),
        ("echo $'hi'", ASK),
        ('echo $"hi"', ASK),
        ("echo 'unclosed", ASK),
        ("echo hi |", ASK),
        ("sudo echo hi", ASK),  # the wrapper must be allowed too
        ("nohup echo hi", ASK),
        ("env echo hi", ASK),
        ("command echo hi", A),  # `command` runs the same program
        ("time echo hi", ASK),  # bash: a keyword; dash: the program `time`: it needs a rule
        ("echo hi | xargs echo", ASK),
        ("./echo hi", ASK),
        ("PATH=. echo hi", ASK),
        ("echo() { touch PWNED; }; echo hi", ASK),
        ("alias echo='touch PWNED'\necho hi", ASK),
        ("eval echo hi", ASK),
        ("sh -c 'echo hi'", ASK),
        ("echo hi | sh", ASK),
        ("sh <<EOF\necho hi\nEOF", ASK),
        ("exec echo hi", A),
        ("builtin echo hi", A),
    ),
    # -- several rules, loops, tests and redirections
    *cases(
        TOOLS,
        (
            "for bar in '#' '##' '###'; do printf '\\r[%-3s]' $bar; sleep 0; done; printf '\\n'",
            A,
        ),
        ("for f in a b; do echo $f; done", A),
        ('for f in "a b" c; do echo "$f"; done', A),
        ("for f in 'a b'; do echo $f; done", ASK),  # unquoted: it would split
        ("for f in '*'; do echo $f; done", ASK),  # unquoted: it would glob
        ("for f in a; do f=touch; $f PWNED; done", ASK),
        ("for f in echo; do $f hi; done", A),
        ("for f in touch; do $f PWNED; done", ASK),
        ("for f in a b; do touch $f; done", ASK),
        ("for f in $(touch PWNED); do echo $f; done", ASK),
        ("for f; do echo $f; done", ASK),
        ("for ((i = 0; i < 2; i++)); do echo $i; done", ASK),
        ("if [ -f canary ]; then cat canary; else echo no; fi", A),
        ("if [ -f canary ]; then touch PWNED; fi", ASK),
        ("[ -f canary ] && echo yes", A),
        ("[ -v 'a[$(touch PWNED)]' ]", ASK),  # bash evaluates the subscript
        ("[[ -f canary ]] && echo yes", ASK),
        ("while false; do sleep 0; done", ASK),  # `false` is not allowed
        ("until true; do sleep 0; done", A),
        ("cat < canary", A),
        ("cat canary | grep -c can", A),
        ("ls -a | cat -n", A),
        ("ls", A),
        ("cat <<'EOF' > made.py\nprint(1)\nEOF", ASK),  # a write needs a rule with `>`
        ("cat <<EOF > made.txt\nplain\nEOF", ASK),
        ("cat <<EOF > made.txt\n$HOME\nEOF", ASK),
        ("cat <<EOF\n`touch PWNED`\nEOF", ASK),
        ("cat <<EOF | sh\ntouch PWNED\nEOF", ASK),
        ("cat > made.txt <<EOF && touch PWNED\nhi\nEOF", ASK),
        ("cat <<EOF 2>/dev/null; touch PWNED\nhi\nEOF", ASK),
        ("python3 <<EOF\nopen('PWNED', 'w')\nEOF", ASK),
        ("printf -v 'a[$(touch PWNED)]' x", ASK),  # bash evaluates the subscript
        ("printf '%s\\n' a b", A),
        ("printf 'touch PWNED' | sh", ASK),
        ("(( x ))", ASK),
        ("x='a[$(touch PWNED)]'; (( x ))", ASK),
        ("x='a[$(touch PWNED)]'; echo $((x))", ASK),
        ("declare -i x; x='a[$(touch PWNED)]'", ASK),
        ("let 'x = a[$(touch PWNED)]'", ASK),
        ("echo a; x=1", A),
        ("export X=1; echo $X", ASK),
        ("export PATH=.; ls", ASK),
        ("IFS=/; echo a/b", ASK),
        ("echo hi > /dev/null 2>&1", A),
        ("exec 3>&1; echo hi >&3", ASK),  # `exec` itself is not allowed here
        ("true && echo ok", A),
        ("sleep 0 &", A),
        ("mapfile -C 'touch PWNED' -c 1 a < canary", ASK),
        ("source ./script.sh", ASK),
        (". ./script.sh", ASK),
        ("coproc touch PWNED", ASK),
        ("select f in a; do touch PWNED; done", ASK),
        ("echo \u2028touch PWNED", A),  # a line separator is no newline to a shell
    ),
    # -- nested shells under a narrow allow
    Case("sh -c 'echo hi'", allow=("sh -c *", "echo *"), expect=A),
    Case("sh -c 'echo hi; touch PWNED'", allow=("sh -c *", "echo *"), expect=ASK),
    Case("bash -c 'echo hi' && touch PWNED", allow=("bash *", "echo *"), expect=ASK),
    Case('sh -c "$X"', allow=("sh *",), expect=ASK),
    Case("sh -c 'touch PWNED'", allow=("sh *",), expect=ASK),
    Case("bash -lc 'echo hi'", allow=("bash *", "echo *"), expect=ASK),
    Case("zsh -c 'echo hi'", allow=("zsh *", "echo *"), expect=ASK),
    Case("sh script.sh", allow=("sh *",), expect=A, blind="a script on disk"),
    Case("sh", allow=("sh*",), expect=ASK),
    # -- wrappers under allow: the wrapper and the wrapped must both be allowed
    Case("nohup echo hi", allow=("nohup *", "echo *"), expect=A),
    Case("nohup touch PWNED", allow=("nohup *", "echo *"), expect=ASK),
    Case("sudo -u root echo hi", allow=("sudo *", "echo *"), expect=A),
    Case("sudo -u root touch PWNED", allow=("sudo *", "echo *"), expect=ASK),
    Case("sudo -s", allow=("sudo *",), expect=ASK),
    Case("env -S 'touch PWNED'", allow=("env *",), expect=ASK),
    Case("env TZ=UTC echo hi", allow=("env *", "echo *"), expect=A),
    Case("env X=1 echo hi", allow=("env *", "echo *"), expect=ASK),
    Case("env PATH=. echo hi", allow=("env *", "echo *"), expect=ASK),
    Case("timeout 5 sleep 0", allow=("timeout *", "sleep *"), expect=A),
    Case("timeout 5 touch PWNED", allow=("timeout *", "sleep *"), expect=ASK),
    Case("echo PWNED | xargs touch", allow=("echo *", "xargs *"), expect=ASK),
    Case("echo a b | xargs -r echo", allow=("echo *", "xargs *"), expect=A),
    Case("echo a b | xargs echo", allow=("echo *", "xargs *"), expect=ASK),  # may run bare `echo`
    Case("echo a b | xargs echo", allow=("echo*", "xargs *"), expect=A),
    Case("echo a | xargs echo -n", allow=("echo -n", "echo *", "xargs *"), expect=A),
    Case("echo PWNED | xargs -I{} touch {}", allow=("*",), expect=ASK),
    Case("echo a | xargs echo", allow=("echo", "xargs *"), expect=ASK),  # extra arguments
    Case("stdbuf -oL echo hi", allow=("stdbuf *", "echo *"), expect=A),
    Case("nice -n 5 touch PWNED", allow=("nice *", "echo *"), expect=ASK),
    Case("time sleep 0", allow=("sleep *",), expect=ASK),
    Case("time sleep 0", allow=("time *", "sleep *"), expect=A),
    # -- deny a program with arguments
    Case("touch PWNED", expect=D, **STAR_NO_TOUCH),
    Case("env touch PWNED", expect=D, **STAR_NO_TOUCH),
    Case("echo $(tou\\\nch PWNED)", expect=D, **STAR_NO_TOUCH),
    Case("t\\ouch PWNED", expect=D, **STAR_NO_TOUCH),
    Case("$'\\x74ouch' PWNED", expect=D, **STAR_NO_TOUCH),
    Case("$'\\u0074ouch' PWNED", expect=ASK, **STAR_NO_TOUCH),  # not decoded: a person
    Case("t{ouch,} PWNED", expect=ASK, **STAR_NO_TOUCH),
    Case("trap 'touch PWNED' EXIT", expect=ASK, **STAR_NO_TOUCH),
    Case("echo ok; touch PWNED # ; echo", expect=D, **STAR_NO_TOUCH),
    Case("ls > listing.txt", expect=ASK, allow=("ls *",)),  # a write: a rule with a `>` only
    Case("touch ok.txt", expect=A, allow=("touch ok.txt",)),
    # -- found while fuzzing: tree-sitter reads these differently from the shells
    *cases(
        STAR_NO_TOUCH,
        ("cat <<-\tE\n\t$(touch PWNED)\n\tE", D),  # a `<<-` body's substitution
        ("cat <<E\n`touch PWNED`\n  x\nE", D),  # backticks in a here-document
        ("cat <<'E'; touch PWNED\nhi\nE", D),  # does not parse: read piece by piece
        ("sh - <<< 'touch PWNED'", D),
        ("sh /dev/stdin <<< 'touch PWNED'", D),
        ("sh -s <<< 'touch PWNED'", D),
        ("echo 'import os' | python3", ASK),
        ('python3 - <<< \'open("PWNED", "w")\'', ASK),
        ("busybox sh -c 'touch PWNED'", D),
        ("a[$(touch PWNED)]=1", D),
        ("eval 'touch PWNED'", D),
        ("tou\\\nch PWNED", D),
        ('echo "$\\\n(touch PWNED)"', D),
        ("((touch PWNED))", D),  # dash has no `((`: two subshells
        ("(" * 600 + "touch PWNED" + ")" * 600, D),  # too deep to walk: read in pieces
    ),
    Case(
        "echo 'touch PWNED' > s.sh; sh s.sh",
        expect=A,
        blind="a script on disk, written by the same command",
        **STAR_NO_TOUCH,
    ),
    # -- adversarial review (tests/adversarial/test_probe.py): bash's `time` keyword before a
    # compound command (tree-sitter reads `time { rm canary` as one command, `}` as another)
    *cases(
        STAR_NO_RM,
        ("time { rm canary; }", D),
        ("time -p { rm canary; }", D),
        ("time -p -- { rm canary; }", D),
        ("! time { rm canary; }", D),
        ("time (rm canary)", D),
        ("time if true; then rm canary; fi", D),
        ("time while rm canary; do break; done", D),
        ("time until rm canary; do :; done", D),
        ("time for f in a; do rm canary; done", D),
        ("time ! rm canary", D),
        ("time { X=1 rm canary; }", D),
        ("time { time { rm canary; }; }", D),
        ("time case a in a) rm canary;; esac", D),
        ("time [[ -n a ]] && rm canary", D),
        ("coproc { rm canary; }", D),
        ("time { echo hi; }", ASK),
    ),
    # -- variables that pick the program or how it runs, set without `NAME=value`, and
    # assignments a program sees: only harmless names are read statically
    *cases(
        TOOLS,
        ("for PATH in .; do ls -l; done", ASK),
        ("for LD_PRELOAD in ./x.so; do ls -l; done", ASK),
        ("for IFS in a; do echo a; done", ASK),
        ("for F in a; do echo $F; done", ASK),  # upper case: it may be exported already
        ("read PATH <<E\n.\nE\nls -l", ASK),
        ("read PATH <<< .; ls -l", ASK),
        ("read -r -a PATH <<< .; ls -l", ASK),
        ("read -raPATH <<< .; ls -l", ASK),
        ("read -r IFS <<< x; echo a", ASK),
        ("printf -v PATH %s .; ls -l", ASK),
        ("printf -vPATH %s .; ls -l", ASK),
        ("printf PATH", A),  # a format, not a name
        ("wait -p PATH; ls", ASK),
        ("mapfile -t PATH < canary; ls", ASK),
        ("getopts a PATH; ls", ASK),
        ("set -k; ls -l PATH=.", ASK),  # bash: PATH=. is an assignment for ls
        ("set -a; X=1; ls", ASK),
        ("set -o allexport; ls", ASK),
        ("unset PATH; ls", ASK),
        ("export -n PATH; ls", ASK),
        ("export GIT_DIR=.; ls", ASK),
        ("declare -x FOO=1; ls", ASK),
        ("typeset -gx foo=1; ls", ASK),
        ("builtin export PATH=.; ls", ASK),
        ("command declare PATH=.; ls", ASK),
        ("echo hi {PATH}>/dev/null; ls", ASK),  # bash: {PATH}> assigns PATH a number
        ("X=1 ls", ASK),
        ("PAGER=cat ls", ASK),
        ("HOME=. ls", ASK),
        ("LC_ALL=C TZ=UTC COLUMNS=80 ls", A),
        ("x=1; echo hi", A),
        ("for f in a b; do echo $f; done; f=2", A),
    ),
    Case("read line < canary; echo hi", allow=("read *", "echo *"), expect=A),
    Case("export LANG=C.UTF-8; echo hi", allow=("export *", "echo *"), expect=A),
    Case("unset f; echo hi", allow=("unset *", "echo *"), expect=A),
    Case("set -euo pipefail; echo hi", allow=("set *", "echo *"), expect=A),
    Case("set -e -o pipefail; echo hi", allow=("set *", "echo *"), expect=A),
    Case("set -o posix; echo hi", allow=("set *", "echo *"), expect=ASK),
    Case("bash -a -c 'X=1; echo hi'", allow=("bash *", "echo *"), expect=ASK),
    Case("bash -o allexport -c 'echo hi'", allow=("bash *", "echo *"), expect=ASK),
    Case("bash -O extglob -c 'echo hi'", allow=("bash *", "echo *"), expect=ASK),
    Case("bash -o pipefail -c 'echo hi'", allow=("bash *", "echo *"), expect=A),
    Case("env -u PATH ls", allow=("env *", "ls*"), expect=ASK),
    Case("env -u foo ls", allow=("env *", "ls*"), expect=A),
    Case("env GIT_PAGER=x ls", allow=("env *", "ls*"), expect=ASK),
    Case("sudo GIT_DIR=. ls", allow=("sudo *", "ls*"), expect=ASK),
    Case("env TZ=UTC LANG=C ls", allow=("env *", "ls*"), expect=A),
    # an allowed program made to run other code by an assignment prefix
    *cases(
        {"allow": ("git status*",)},
        (
            "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='touch PWNED'"
            " git status",
            ASK,
        ),
        ("GIT_CONFIG_PARAMETERS=\"'core.fsmonitor=touch PWNED'\" git status", ASK),
        ("env GIT_CONFIG_PARAMETERS=\"'core.pager=touch PWNED'\" git status", ASK),
        ("GIT_EXTERNAL_DIFF='touch PWNED' git status", ASK),
    ),
    Case("GIT_DIR=x rm canary", expect=D, **STAR_NO_RM),  # deny still looks through
    Case("env PAGER=x rm canary", expect=D, **STAR_NO_RM),
]


# -- the run --------------------------------------------------------------------------------------

SHIMMED = [
    "rm",
    "touch",
    "ls",
    "cat",
    "echo",
    "printf",
    "sleep",
    "true",
    "false",
    "env",
    "nice",
    "timeout",
    "nohup",
    "stdbuf",
    "xargs",
    "setsid",
    "sh",
    "bash",
    "dash",
    "grep",
    "find",
    "head",
    "tail",
    "wc",
    "mkdir",
    "cp",
    "mv",
    "sort",
    "tee",
    "date",
    "id",
    "pwd",
    "test",
    "perl",
    "chmod",
    "ln",
    "sed",
    "awk",
    "expr",
    "seq",
    "tr",
    "cut",
]

SHIM = """#!/bin/dash
IFS=' '
printf '\\036%s' "${0##*/}${*:+ $*}" >> "$CORPUS_LOG"
"""
# sudo, doas and time are not all installed: these drop their options and run the rest.
SKIP_OPTIONS = """while [ $# -gt 0 ]; do
  case $1 in
    -u|-g|-p|-C|-h|-D|-r|-t|-T|-U|-R|-f|-o) shift 2 ;;
    --) shift; break ;;
    -*) shift ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] && exec "$@"
"""


# As root, the commands run as `nobody`: a command approved by mistake cannot touch the system.
SETPRIV = shutil.which("setpriv")
DEMOTE = (
    [SETPRIV, "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
    if SETPRIV and os.geteuid() == 0
    else []
)


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Path]:
    """A directory `nobody` can use (pytest's tmp_path is private to its user)."""
    root = Path(tempfile.mkdtemp(prefix="policy-corpus-"))
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
    path = sandbox / "bin"
    path.mkdir(mode=0o755)
    for name in SHIMMED:
        real = shutil.which(name, path="/usr/bin:/bin")
        assert real is not None, name
        _shim(path / name, SHIM + f'exec {real} "$@"\n')
    _shim(path / "python3", SHIM + f'exec {sys.executable} "$@"\n')
    for name in ("sudo", "doas", "time"):
        _shim(path / name, SHIM + SKIP_OPTIONS)
    return path


def _shim(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


def decide(case: Case) -> str:
    payload: dict[str, Any] = {
        "sessionId": "s1",
        "title": "run",
        "options": [
            {"optionId": kind, "name": kind, "kind": kind}
            for kind in ("allow_once", "allow_always", "reject_once", "reject_always")
        ],
        "subject": {"type": "command", "command": case.command, "cwd": "/w"},
    }
    decision = Policy(case.allow, case.deny).decide(
        RequestPermissionRequest.model_validate(payload)
    )
    if decision is None:
        return ASK
    return A if decision.allow else D


def approves(case: Case, text: str) -> bool:
    """Whether the rules, read as globs on one program invocation, approve it.

    The policy matches a command with its redirections (``cat < f`` is covered by ``cat *``);
    a shim sees only the arguments, so an invocation also counts as covered when a glob
    matches it with more words after it.
    """
    if any(fnmatch.fnmatchcase(text, glob) for glob in case.deny):
        return False
    return any(
        fnmatch.fnmatchcase(text, glob) or fnmatch.fnmatchcase(f"{text} \x00", glob)
        for glob in case.allow
    )


def run(case: Case, shell: str, scratch: Path, bindir: Path) -> list[str]:
    """Run the command, and list what it did that the rules do not approve."""
    scratch.mkdir(parents=True)
    scratch.chmod(0o777)
    for name in CANARIES:
        (scratch / name).write_text(f"{name}\n")
        (scratch / name).chmod(0o666)
    log = scratch.parent / f"{scratch.name}.log"
    log.touch()
    log.chmod(0o666)  # the shims, maybe run as nobody, append to it
    env = {"PATH": str(bindir), "CORPUS_LOG": str(log), "HOME": str(scratch), "LC_ALL": "C.UTF-8"}
    real = shutil.which(shell, path="/usr/bin:/bin")
    assert real is not None
    try:
        subprocess.run(
            [*DEMOTE, real, "-c", case.command],
            cwd=scratch,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=10,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return [f"{shell}: timed out"]
    problems = []
    records = log.read_text(errors="replace").split("\x1e")[1:] if log.exists() else []
    problems += [f"{shell} ran {r!r}" for r in records if not approves(case, r)]
    for name in CANARIES:
        if not (scratch / name).exists() and not approves(case, f"rm {name}"):
            problems.append(f"{shell} removed {name}")
    for made in sorted(p.name for p in scratch.iterdir() if p.name.startswith("PWNED")):
        if not approves(case, f"touch {made}"):
            problems.append(f"{shell} created {made}")
    return problems


def effects(case: Case, where: Path, bindir: Path) -> Iterator[str]:
    with ThreadPoolExecutor(len(SHELLS)) as pool:
        futures = [pool.submit(run, case, sh, where / sh, bindir) for sh in SHELLS]
        for future in futures:
            yield from future.result()


@pytest.mark.parametrize("case", CORPUS, ids=[f"{i:03d}" for i in range(len(CORPUS))])
def test_an_approved_command_does_only_what_the_rules_allow(
    case: Case, workdir: Path, bindir: Path
) -> None:
    outcome = decide(case)
    if case.expect is not None:
        assert outcome == case.expect, case
    if outcome != A or case.blind:
        return
    assert list(effects(case, workdir, bindir)) == [], case


def test_the_corpus_is_large_and_approves_enough() -> None:
    assert len(CORPUS) >= 150
    assert len({(c.command, c.allow, c.deny) for c in CORPUS}) == len(CORPUS), "duplicates"
    outcomes = [decide(case) for case in CORPUS]
    checked = [c for c, o in zip(CORPUS, outcomes, strict=True) if o == A and not c.blind]
    assert len(checked) >= 40, len(checked)
    assert outcomes.count(D) >= 60
    assert outcomes.count(ASK) >= 60


def test_the_oracle_sees_a_forbidden_program_and_a_forbidden_effect(
    workdir: Path, bindir: Path
) -> None:
    """The checks can fail: run commands the rules forbid, as if they had been approved."""
    ran = list(effects(Case("echo hi; touch PWNED", allow=("echo *",)), workdir / "a", bindir))
    assert ran == [
        "dash ran 'touch PWNED'",
        "dash created PWNED",
        "bash ran 'touch PWNED'",
        "bash created PWNED",
    ]
    removed = list(effects(Case("/bin/rm canary", **STAR_NO_RM), workdir / "b", bindir))
    assert removed == ["dash removed canary", "bash removed canary"]
    bash_only = list(
        effects(Case("{touch,PWNED}", allow=("*",), deny=("touch *",)), workdir / "c", bindir)
    )
    assert bash_only == ["bash ran 'touch PWNED'", "bash created PWNED"]
    assert os.listdir(workdir / "a" / "dash") != []


# -- generated commands: shell syntax glued at random around forbidden commands -------------------

# No `/`, `~` or `..`: whatever a generated command does stays in its scratch directory.
PIECES = [
    *["echo", "echo", "cat", "printf", " ", " ", "\t", "\n", ";", "&", "|", "&&", "||", "#"],
    *["'", '"', "\\", "\\\n", "$", "$(", ")", "(", "`", "{", "}", "<<", "<<-", "<<'E'", "<<E"],
    *["\nE\n", "E", "touch PWNED", " touch PWNED", "\ntouch PWNED", "rm canary", "x", "a", "="],
    *["$'", "\\'", "\r", ">", "<", "2>&1", "${", "$((", "))", "!", "*", "?", "[", "]", ",", "if"],
    *["then", "fi", "do", "done", "for", "in", "case", "esac", ";;", "\\$", "\\`", '\\"', "\u00a0"],
    *["<<<", "<(", ">(", "t", "o", "u", "c", "h", "sh", "-c", "eval", "exec", "command", "env "],
    *["sudo ", "nohup ", "xargs ", "X=1 ", "timeout 1 ", "r", "m", "\\t"],
]
GENERATED_RULES = [
    {"allow": ("echo *",)},
    {"allow": ("echo *", "cat *", "printf *")},
    {"allow": ("*",), "deny": ("touch *", "rm *")},
]


@settings(max_examples=300, derandomize=True, deadline=None)
@given(
    start=st.sampled_from(["echo ", "cat ", "", "t", "r", "\\", "$"]),
    pieces=st.lists(st.sampled_from(PIECES), min_size=1, max_size=14),
)
def test_generated_commands_do_only_what_is_approved(
    start: str, pieces: list[str], sandbox: Path, bindir: Path
) -> None:
    command = start + "".join(pieces)
    for rules in GENERATED_RULES:
        case = Case(command, **rules)
        if decide(case) == A:
            where = Path(tempfile.mkdtemp(dir=sandbox))
            where.chmod(0o777)
            assert list(effects(case, where, bindir)) == [], case
