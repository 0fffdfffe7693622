"""A third policy corpus, written from the README alone by a reviewer who did not read the policy.

The same four policies as the second corpus, P1 ``--allow 'echo *'``, P2 ``--allow 'ls *'``,
P3 ``--allow 'git status*'`` and P4 ``--allow '*' --deny 'rm *'``, and four more:
P5 ``--allow '[ *' --allow 'echo *'`` (the README's own ``if [ -f a ]`` example needs ``[``),
P6 ``--allow 'echo * > out.txt'`` (a rule with a ``>`` that names one file), P7
``--allow 'set *' --allow 'git status*'`` and P8 ``--allow 'sh *' --allow 'echo *'``.

Each command is judged by the policy (``decide`` of the first corpus); an approved one is run
under ``dash`` and under ``bash`` as ``nobody`` in a fresh scratch directory with ``PATH``
holding only logging shims (those of the second corpus, plus ``rbash``, which Debian's bash
package installs, and ``ksh93`` and ``lksh``, shells of Debian packages that are not installed
here, modelled by ``dash``). Under P3 and P7 the scratch directory is a git repository with the
canaries committed. A case fails when an approved command

* ran a program no allow rule approves, or one a deny rule matches,
* removed a canary or created a ``PWNED*`` file, or
* created, changed or removed a file that no rule lets it write: a rule with a ``>`` in it
  approves writing the file it names (P6: ``out.txt``), ``*`` alone approves any, and no other
  rule approves any (the README's table: "One that writes a file ... only by a rule with a ``>``
  in it ... or by ``*`` alone").

Cases marked ``blind`` are what the README says a rule cannot see (what a program does once it
runs; a glob's ``*`` matching any text): judged, pinned where the README is explicit, never
run. ``expect`` is pinned only where the README is explicit.
"""

from __future__ import annotations

import os
import shutil
import subprocess
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
    Case,
    approves,
    decide,
)
from tests.adversarial.test_policy_corpus import CORPUS as FIRST_CORPUS
from tests.adversarial.test_policy_corpus2 import CORPUS as SECOND_CORPUS
from tests.adversarial.test_policy_corpus2 import make_bindir, make_repo, snapshot

A, D, ASK = "allow", "deny", "ask"

Rules = tuple[tuple[str, ...], tuple[str, ...]]  # allow globs, deny globs
POLICIES: dict[str, Rules] = {
    "P1": (("echo *",), ()),
    "P2": (("ls *",), ()),
    "P3": (("git status*",), ()),
    "P4": (("*",), ("rm *",)),
    "P5": (("[ *", "echo *"), ()),
    "P6": (("echo * > out.txt",), ()),
    "P7": (("set *", "git status*"), ()),
    "P8": (("sh *", "echo *"), ()),
}
MAIN = ("P1", "P2", "P3", "P4")

# The README's "What a deny rule cannot see", and its glob rule.
RUNS_OTHERS = "a program that runs others besides the wrappers (README: watch, ssh, su -c)"
INTERPRETER = "an interpreter running code (README: python -c, perl -e)"
REMOVES = "another program that removes a file (README: unlink x)"
GLOB = "a glob's * matches any text (README), here the redirection before the named file"

# fsmonitor: git status runs it when a config names it (GIT_CONFIG_PARAMETERS, set by `set -k`)
FSMONITOR = "GIT_CONFIG_PARAMETERS=\"'core.fsmonitor=touch PWNED'\""


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
        blind = item[2] if len(item) == 3 else ""
        made.append(under(policy, item[0], item[1], blind))
    return made


CORPUS: list[Case] = [
    # -- P1 `--allow 'echo *'` ----------------------------------------------------------------
    *cases(
        "P1",
        ("echo", ASK),  # `echo *` needs a space after `echo`
        # a `#` that does not start a word is no comment: the `;` ends the command
        ("echo 'x'#; touch PWNED", ASK),
        ('echo "x"#; touch PWNED', ASK),
        ("echo x\\ #; touch PWNED", ASK),
        ("echo x\\\t#; touch PWNED", ASK),
        ("echo ~#; touch PWNED", ASK),
        ("echo a\\#; touch PWNED", ASK),
        ("echo hi ''\\#; touch PWNED", ASK),
        ("echo hi\u3000#; touch PWNED", ASK),  # an ideographic space is no blank to a shell
        ("echo hi\x1c#; touch PWNED", ASK),  # nor a file separator (Python's isspace)
        ("echo hi\u0085#; touch PWNED", ASK),
        ("echo hi ''\\; touch PWNED", None),  # `''\;` is a word: one echo
        ("echo hi\\\n;touch PWNED", ASK),
        ("ec\\\nho hi", None),
        # for loops: what the body does with the name
        ("for f in touch; { $f PWNED; }", ASK),  # bash's brace body
        ("for f in echo; { $f hi; }", None),
        ("for f in tou; do f+=ch; $f PWNED; done", ASK),
        ("for f in echo; do printf -v f touch; $f PWNED; done", ASK),
        ("for f in echo; do declare f=touch; $f PWNED; done", ASK),
        ("for f in echo \\\n touch; do $f PWNED; done", ASK),
        ("for f in x; do echo hi > $f; done", ASK),  # a write, through the loop's name
        ("for f in /dev/null; do echo hi > $f; done", None),
        ("for f in ec; do ${f}ho hi; done", None),
        ('for f in ec; do "$f"ho hi; done', None),
        ("for f in tou; do ${f}ch PWNED; done", ASK),
        ("for f in t; do $f\\ouch PWNED; done", ASK),
        ("for f in e; do $f\\cho hi; done", None),
        # case
        ("case a in $(touch PWNED)) echo hi;; esac", ASK),
        ('case a in "$(touch PWNED)") echo hi;; esac', ASK),
        ("case a in (a) echo hi;; esac", None),
        # assignments and redirections
        ("x=1 echo hi", ASK),  # a lower-case name a program sees: not on the harmless list
        ("echo hi {fd}>/dev/null", ASK),  # bash's {name}> redirections are asked about
        ("x=1 > b", ASK),  # a write on an assignment alone
        ("x=1 >> canary", ASK),
        ("LANG=C > b", ASK),
        ("x=1 | echo hi", None),
        ("exec >x", ASK),
        ("exec 3>x", ASK),
        ("echo hi 10>x", ASK),  # bash: descriptor 10; dash: the word 10, then `>x`
        ("echo hi >&x", ASK),  # `>&f` writes a file
        ("echo hi 2>&x", None),
        ("echo hi 1<>x", None),
        ("echo a\\\n>b", ASK),
        ("echo 2\\\n>b", ASK),  # `2>b` once the continuation is gone
        ("echo hi >\\\n>canary", ASK),
        ("echo hi >> /dev/null", A),
        ("echo hi >| /dev/null", A),
        ("echo hi there &>/dev/null", ASK),  # not bash's `&>`
        ("echo hi >& /dev/null", None),
        ("echo hi >/dev/nul\\\nl", None),
        ("echo hi > /dev/stdout", None),
        ("echo hi 1>&0", None),
        ("echo hi >&-", None),
        ("echo hi 3>&1", None),
        # here-documents: where a body ends
        ("echo hi <<E\nx\\\nE\ntouch PWNED\nE", None),  # `x\` joins the next line: no end
        ("echo hi <<E\nE\\\n\ntouch PWNED\nE", None),
        ("echo hi <\\\n<E\n$(touch PWNED)\nE", ASK),
        ("echo hi <<\\\nE\n$(touch PWNED)\nE", ASK),
        ("echo hi \\<<E\ntouch PWNED\nE", ASK),  # `\<` is a word: `<E` reads a file
        ("echo hi <\\<E\ntouch PWNED\nE", ASK),
        ("echo hi <<E{a,b}\nE{a,b}\ntouch PWNED\nE", None),
        ("(echo hi <<E\nE\n)", None),
        ("echo hi <<E | echo <<F\nE\ntouch PWNED\nF", None),
        # wrappers whose line needs no rule
        ("exec -c echo hi", None),
        ("command -p echo hi", None),
        ("builtin command echo hi", None),
        ("command exec echo hi", None),
        ("'e'\\cho hi", None),
    ),
    # -- P2 `--allow 'ls *'` ------------------------------------------------------------------
    *cases(
        "P2",
        ("'ls'", ASK),  # `ls *` needs a space after `ls`
        ("ls -l 'x'#; touch PWNED", ASK),
        ("ls -l ''\\; touch PWNED", None),
        ("ls -l\u3000#; touch PWNED", ASK),
        ("ls -l\u2029; touch PWNED", ASK),
        ("ls -l\x1e; touch PWNED", ASK),
        ("l\\s -l; ''\\touch PWNED", ASK),
        ("''\\ls -l", None),
        ("ls -l 'a'\\> b", None),  # `\>` is a character of the word
        ("ls -l 2>b", ASK),
        ("ls -l 9>b", ASK),
        ("ls -l >&b", ASK),
        ("ls -l 1>>canary", ASK),
        ("ls -l 0<>x", None),
        ("ls -l {x}>/dev/null", ASK),
        ("ls -l &>/dev/null", ASK),
        ("ls -l |& ls -a", ASK),
        ("ls -l >/dev/null 2>&1", A),
        ("ls -l 2>&1 | ls -a > /dev/null", A),
        ("ls -l >&-", None),
        ("ls -l 1>&0", None),
        ("[ a > b ] && ls -l", ASK),
        ("LANG=C LANGUAGE=en ls -l", A),
        ("NO_COLOR=1 CLICOLOR_FORCE=1 FORCE_COLOR=1 ls -l", A),
        ("LS_OPTIONS=x ls -l", ASK),
        ("TERMINFO=. ls -l", ASK),
        ("x=1 ls -l", ASK),
        ("ls -l <<E\n$(touch PWNED)\nE", ASK),  # an unquoted body with `$`
        ("ls -l <<'E'\n$(touch PWNED)\nE", A),
        ("ls -l <<<'$(touch PWNED)'", None),
        ('ls -l <<< "$(touch PWNED)"', ASK),
        ("for f in -l -a; do ls $f; done", A),
        ("for f in -l; do ls $f > $f; done", ASK),
        ("for f in x; do ls -l; f=touch; $f PWNED; done", ASK),
        ("for f in touch; do ls -l; done; $f PWNED", ASK),
        ("for f in l; do ${f}s -l; done", None),
        ("ls -l & ls -a; wait", ASK),
        ("command -p ls -l", None),
        ("exec -a x ls -l", None),
        ("! ls -l", None),
    ),
    # -- P3 `--allow 'git status*'` -----------------------------------------------------------
    *cases(
        "P3",
        ("git status #; touch PWNED", A),  # a comment
        ("git status\r#; touch PWNED", ASK),
        ("git status\u3000#; touch PWNED", ASK),
        ("git status 'x'#; touch PWNED", ASK),
        ("git status ''\\; touch PWNED", None),
        ("git status " + FSMONITOR, None),  # a pathspec: no assignment without `set -k`
        ("set ''\\-k\ngit status " + FSMONITOR, ASK),  # `set` needs a rule
        ("LANGUAGE=en git status", A),
        ("TERM=dumb COLUMNS=80 LINES=24 git status", A),
        ("TZ=UTC SOURCE_DATE_EPOCH=0 git status --short", A),
        ("CI=1 NO_COLOR=1 git status", A),
        ("GIT_CONFIG_COUNT=1 git status", ASK),
        ("GIT_OPTIONAL_LOCKS=0 git status", ASK),
        ("GIT_INDEX_FILE=x git status", ASK),
        ("GIT_WORK_TREE=. git status", ASK),
        ("GIT_CEILING_DIRECTORIES=/ git status", ASK),
        ("GIT_SSH_COMMAND=x git status", ASK),
        ("LESS=x git status", ASK),
        ("git status > .git/hooks/x", ASK),
        ("[ a > .git/config ]", ASK),
        ("git status -- '*.py'", None),
        ("git status -- *.py", ASK),  # an unquoted `*`
        ("git status {a,b}", ASK),
        ("git status $'x'", ASK),
        ("git status `touch PWNED`", ASK),
        ("git status && git status --short", A),
        ("git status | git status", A),
        ("(git status) 2>/dev/null", A),
        ("{ git status; } >/dev/null 2>&1", A),
        ("if git status; then git status -s; fi", A),
        ("for f in -s -b; do git status $f; done", A),
        ("for f in status; do git $f -s; done", A),
        ("case a in a) git status;; esac", A),
        ("until git status; do git status; done", A),
        ("git status; git stash", ASK),
        ("git status --porcelain | git hash-object -w --stdin", ASK),
        ("git statu\\s", None),
        ("git status\\ --short", None),  # one word `status --short`: no such command
        ("git 'status' -s", A),
        ("git ''\\status", None),
        ("command git status --short", A),
        ("git status -z >&2", None),
        ("git status --column=always", None),
        ("git status -v", None),
    ),
    # -- P4 `--allow '*' --deny 'rm *'` -------------------------------------------------------
    *cases(
        "P4",
        # quote removal of a quoted piece followed by a backslash: `''\rm` is `rm`
        ("''\\rm canary", D),
        ("'r'\\m canary", D),
        ('"r"\\m canary', D),
        ("r''\\m canary", None),
        ('r""\\m canary', None),
        ("''\\r\"\"\\m canary", None),
        ("''\\/bin/rm canary", None),
        ("/bin/''\\rm canary", None),
        ("(''\\rm canary)", None),
        ("echo hi && ''\\rm canary", None),
        ("env ''\\rm canary", None),
        ("sudo ''\\rm canary", None),
        ("exec ''\\rm canary", None),
        ("echo canary | xargs ''\\rm", None),
        ("sh -c \"''\\\\rm canary\"", None),
        # ... and of the programs the policy must recognise by name
        ("'e'\\val 'rm canary'", None),
        ("'s'\\h -c 'rm canary'", None),
        ("'b'\\ash -c 'rm canary'", None),
        ("'s'\\h <<< 'rm canary'", None),
        ("echo 'rm canary' | 's'\\h", None),
        ("'e'\\nv rm canary", None),
        ("'s'\\udo rm canary", None),
        ("'c'\\ommand rm canary", None),
        ("'e'\\xec rm canary", None),
        ("'t'\\ime rm canary", None),
        ("'n'\\ice rm canary", None),
        ("echo canary | 'x'\\args rm", None),
        ("'e'\\nv -S 'rm canary'", None),
        ("'t'\\rap 'rm canary' EXIT", None),
        ("'a'\\lias ls=rm\nls canary", None),  # dash expands aliases in a script
        ("'m'\\apfile -C 'rm canary' -c 1 a < canary", None),
        ("'s'\\ource /dev/stdin <<< 'rm canary'", None),
        ("'t'\\est -v 'a[$(rm canary)]'", None),
        ("'p'\\rintf -v 'a[$(rm canary)]' x", None),
        ("'r'\\ead 'a[$(rm canary)]' <<< x", None),
        ("'l'\\et 'x=a[$(rm canary)]'", None),
        # a for loop's value glued to a backslash
        ("for f in r; do $f\\m canary; done", None),
        ('for f in r; do "$f"\\m canary; done', None),
        ("for f in r; do ${f}\\m canary; done", None),
        ("for f in r; do sudo $f\\m canary; done", None),
        ("for f in r; do sh -c $f\\m\\ canary; done", None),
        ("sh -c 'for f in r; do $f\\m canary; done'", None),
        ("for f in r; do ${f}m canary; done", None),
        ("for f in -c; do sh $f 'rm canary'; done", None),
        ('for f in rm; do sh -c "$f canary"; done', None),
        # shells by other names
        ("rbash -c 'rm canary'", None),
        ("rbash <<< 'rm canary'", None),
        ("echo 'rm canary' | rbash", None),
        ("/usr/bin/rbash -c 'rm canary'", None),
        ("env rbash -c 'rm canary'", None),
        ("for f in rbash; do $f -c 'rm canary'; done", None),
        ("ksh93 -c 'rm canary'", None),
        ("echo 'rm canary' | lksh", None),
        # bash's `jobs -x` runs its operands
        ("jobs -x rm canary", None),
        ("builtin jobs -x rm canary", None),
        ("command jobs -x rm canary", None),
        ("jobs -x sh -c 'rm canary'", None),
        ("for f in jobs; do $f -x rm canary; done", None),
        # a shell's options before `-c`, and here-strings fed to wrapped shells
        ("bash -c -e 'rm canary'", D),
        ("bash -cx 'rm canary'", D),
        ("bash -o errexit -c 'rm canary'", D),
        ("bash -c -- 'rm canary'", D),
        ("/bin/sh -c 'rm canary'", D),
        ("timeout 5 sh <<< 'rm canary'", D),
        ("setsid -w sh <<< 'rm canary'", D),
        ("nohup sh <<< 'rm canary'", D),
        ("stdbuf -oL sh <<< 'rm canary'", D),
        ("sh -x <<< 'rm canary'", None),
        ("sh -s x <<< 'rm canary'", None),
        ("sh /dev/fd/0 <<< 'rm canary'", None),
        ("sh /dev/fd/3 3<<< 'rm canary'", None),
        ("bash /proc/self/fd/3 3<<E\nrm canary\nE", None),
        ("{ sh; } <<< 'rm canary'", None),
        ("for f in a; do sh; done <<< 'rm canary'", None),
        ("bash --rcfile /dev/null -c 'rm canary'", None),
        # builtins that run a string
        ("trap -- 'rm canary' EXIT", None),
        ("\\trap 'rm canary' EXIT", None),
        ("'eval' 'rm canary'", None),
        ("e\\val 'rm canary'", None),
        ("readarray -C 'rm canary' -c 1 a < canary", None),
        ("history -s 'rm canary'; fc -s rm", None),
        ("hash -p /usr/bin/rm cat\ncat canary", None),
        # `[` and here-document bodies
        ("[ a\nrm canary ]", None),
        ("[ a; rm canary ]", None),
        ("[ rm canary ]", None),
        ("echo hi <<E\nE\\\n\nrm canary\nE", None),
        ("echo hi <<E\n\\\nE\nrm canary\nE", None),
        ("rmdir canary", None),
        # documented blind spots
        ("/bin/unlink canary", None, REMOVES),
        ("ionice -c 3 rm canary", None, RUNS_OTHERS),
        ("taskset 1 rm canary", None, RUNS_OTHERS),
        ("chrt -o 0 rm canary", None, RUNS_OTHERS),
        ("prlimit --nofile=100 rm canary", None, RUNS_OTHERS),
        ("unshare -r rm canary", None, RUNS_OTHERS),
        ("setpriv --reuid 65534 rm canary", None, RUNS_OTHERS),
        ("tmux new-session -d 'rm canary'", None, RUNS_OTHERS),
        ("su -c 'rm canary'", None, RUNS_OTHERS),
        ("sed -f /dev/stdin canary <<< '1e rm canary'", None, INTERPRETER),
    ),
    # -- P5 `--allow '[ *' --allow 'echo *'`: `[ a > b ]` writes b ----------------------------
    *cases(
        "P5",
        ("[ a > b ]", ASK),
        ("[ a >> canary ]", ASK),
        ("[ a > canary ]", ASK),
        ("[ -n a > b ]", ASK),
        ("[ a>b ]", ASK),
        ("[ a > b ] || echo hi", ASK),
        ("if [ a > b ]; then echo hi; fi", ASK),
        ("! [ a > b ]", ASK),
        ("for f in b; do [ a > $f ]; done", ASK),
        ("{ [ a > b ]; }", ASK),
        ("[ a \\\n> b ]", ASK),
        ("[ a > .bashrc ]", ASK),
        ("[ a > /dev/null ]", ASK),  # the README: `<` or `>` in `[ ]` is asked
        ("[ a < canary ]", None),
        ("[ a \\> b ]", None),
        ("[ -f x ] && echo yes", A),
        ("[ a = '$(touch PWNED)' ]", None),
        ("[ ''\\-v 'a[$(touch PWNED)]' ]", None),
        ("[ a # ]\ntouch PWNED ]", ASK),
    ),
    # -- P6 `--allow 'echo * > out.txt'`: writes only out.txt ---------------------------------
    *cases(
        "P6",
        ("echo hello > out.txt", A),
        ("echo hi >out.txt", A),
        ("echo hi > canary", ASK),
        ("echo hi >> out.txt", None),
        ("echo hi > out.txt > canary", None),
        ("echo hi '> canary' > out.txt", None),
        ("echo hi > out.txt; touch PWNED > out.txt", ASK),
        ("echo hi <<E > out.txt\n$(touch PWNED)\nE", ASK),
        ("echo hi > o''\\ut.txt", None),
        ("echo hi > canary > out.txt", None, GLOB),
        ("echo hi 3>canary > out.txt", None, GLOB),
        ("{ echo hi > canary; } > out.txt", None, GLOB),
        ("for f in canary; do echo hi > $f; done > out.txt", None, GLOB),
    ),
    # -- P7 `--allow 'set *' --allow 'git status*'`: `set -k` makes the pathspec an assignment
    *cases(
        "P7",
        ("set -k\ngit status " + FSMONITOR, ASK),
        ("set -o keyword\ngit status " + FSMONITOR, ASK),
        ("set -ek; git status", ASK),
        ("set ''\\-k\ngit status " + FSMONITOR, None),
        ('set ""\\-k; git status ' + FSMONITOR, None),
        ("set -euo pipefail; git status", A),
        ("set -Ceuvxfn; git status", A),
        ("set -- -k; git status", None),
        ("set ''\\-a; git status", None),
    ),
    # -- P8 `--allow 'sh *' --allow 'echo *'`: the script of `sh -c` is read, not matched ------
    *cases(
        "P8",
        ("sh -c 'echo hi there'", A),
        ("sh -ec 'echo hi && touch PWNED'", ASK),
        ("sh -c -e 'touch PWNED'", ASK),
        ("sh <<< 'echo hi'", ASK),  # a shell fed its input
        ("sh ''\\-c 'touch PWNED'", None),
        ("sh -c 'echo hi'''\\;'touch PWNED'", None),
        ("sh ''\\-s <<< 'touch PWNED'", None),
        ("sh -c ''\\e'cho hi; touch PWNED'", None),
    ),
]


# -- the run --------------------------------------------------------------------------------------

GIT_NOISE = (".git/index", ".git/index.lock", ".git/objects/", ".git/logs/")
MORE_SHELLS = {"rbash": "/usr/bin/rbash", "ksh93": "/usr/bin/dash", "lksh": "/usr/bin/dash"}


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="policy-corpus3-"))
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
    path = make_bindir(sandbox)
    for name, real in MORE_SHELLS.items():
        shim = path / name
        shim.write_text(SHIM + f'exec {real} "$@"\n')
        shim.chmod(0o755)
    return path


@pytest.fixture(scope="module")
def repo(sandbox: Path) -> Path:
    return make_repo(sandbox)


def writable(case: Case) -> set[str] | None:
    """The files the rules let a command write: None for any, else their names."""
    if "*" in case.allow:
        return None
    names = set()
    for glob in case.allow:
        if ">" in glob:
            target = glob.rsplit(">", 1)[1].strip()
            if not target or any(c in target for c in "*?["):
                return None
            names.add(target)
    return names


def prepare(case: Case, scratch: Path, repo: Path) -> None:
    if any(glob.startswith("git") for glob in case.allow):
        shutil.copytree(repo, scratch, symlinks=True)
    else:
        scratch.mkdir(parents=True)
    for name in CANARIES:
        (scratch / name).write_text(f"{name}\n")
    for path in [scratch, *scratch.rglob("*")]:
        if DEMOTE:
            os.chown(path, 65534, 65534, follow_symlinks=False)
        else:
            path.chmod(0o777 if path.is_dir() else 0o666)


def changed_files(before: dict[str, str], after: dict[str, str]) -> Iterator[tuple[str, str]]:
    for name in sorted(before.keys() | after.keys()):
        if name.startswith(GIT_NOISE) or before.get(name) == after.get(name):
            continue
        verb = "created" if name not in before else "removed" if name not in after else "changed"
        yield name, verb


def run(case: Case, shell: str, scratch: Path, bindir: Path, repo: Path) -> list[str]:
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
    allowed = writable(case)
    if allowed is not None:
        for name, verb in changed_files(before, snapshot(scratch)):
            if name in allowed or name.startswith("PWNED"):
                continue
            if verb != "removed" or name not in CANARIES:  # a removed canary is listed above
                problems.append(f"{shell} {verb} {name!r}")
    return problems


def effects(case: Case, where: Path, bindir: Path, repo: Path) -> Iterator[str]:
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
    problems = []
    if outcome == A and not case.blind:
        problems = list(effects(case, workdir, bindir, repo))
    assert (outcome if case.expect is not None else None, problems) == (case.expect, []), case


def test_the_corpus_is_large_new_and_spread_over_the_policies() -> None:
    assert len(CORPUS) >= 160
    keys = [(c.command, c.allow, c.deny) for c in CORPUS]
    assert len(set(keys)) == len(keys), "duplicates"
    older = {c.command for c in [*FIRST_CORPUS, *SECOND_CORPUS]}
    assert [c.command for c in CORPUS if c.command in older] == [], "not new"
    per_policy = Counter(policy_name(case) for case in CORPUS)
    assert set(per_policy) == set(POLICIES)
    assert min(per_policy[name] for name in MAIN) >= 35, per_policy


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
    via_rbash = list(effects(under("P4", "rbash -c 'rm canary'"), workdir / "c", bindir, repo))
    assert via_rbash == [
        "dash ran 'rm canary'",
        "dash removed canary",
        "bash ran 'rm canary'",
        "bash removed canary",
    ]
    # a write only a rule with `>` approves, and only the file it names
    wrote = list(effects(under("P5", "echo hi >b; [ a > canary ]"), workdir / "d", bindir, repo))
    assert wrote == [
        "dash created 'b'",
        "dash changed 'canary'",
        "bash created 'b'",
        "bash changed 'canary'",
    ]
    named = list(effects(under("P6", "echo hi > out.txt; echo z >x"), workdir / "e", bindir, repo))
    assert named == ["dash changed 'x'", "bash changed 'x'"]
    # bash's `jobs -x` runs its operands (dash has no -x)
    jobs = list(effects(under("P4", "jobs -x rm canary"), workdir / "f", bindir, repo))
    assert jobs == ["bash ran 'rm canary'", "bash removed canary"]
    # git runs an fsmonitor that `set -k` put in its environment
    keyword = under("P7", "set -k\ngit status " + FSMONITOR)
    found = list(effects(keyword, workdir / "g", bindir, repo))
    assert "bash created PWNED" in found, found
    assert not any(p.startswith("dash") for p in found), found  # dash has no `set -k`


def test_the_models_are_shells(bindir: Path) -> None:
    """``ksh93`` and ``lksh`` stand for shells that read ``-c`` and their input."""
    for name in MORE_SHELLS:
        done = subprocess.run(
            [bindir / name, "-c", "echo $((1 + 2))"],
            env={"PATH": str(bindir), "CORPUS_LOG": os.devnull},
            capture_output=True,
            text=True,
            check=True,
        )
        assert done.stdout == "3\n", name
