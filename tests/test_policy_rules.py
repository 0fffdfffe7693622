"""``--allow`` / ``--deny`` policies (``_policy._rules``), without a kernel or an agent.

A command subject is parsed as a shell does (tree-sitter's bash grammar) into its simple
commands: deny rejects if any of them (nested ones and wrapped ones included) matches; allow
approves only a command that can be read statically, every simple command matching a rule.
Anything else is left to a person (``decide`` returns None). tests/adversarial/test_policy_corpus.py
runs a corpus of commands under dash and bash to check that what is approved does what it says.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from acp_notebook._policy._rules import (
    MAX_DENY_TEXTS,
    Policy,
    PolicyDecision,
    simple_commands,
)
from acp_notebook._protocol import RequestPermissionRequest
from acp_notebook._protocol._permission import tool_call_command_unknown

ASK = None  # the policy does not decide: a person is asked
ONCE = ("allow_once", "allow_always", "reject_once", "reject_always")

QUICKSTART_LOOP = (
    "for bar in '#' '##' '###' '####' '#####'; do"
    " printf '\\r\\033[36mbuilding\\033[0m [%-5s]' $bar; sleep 0.2; done;"
    " printf ' \\033[1;32mdone\\033[0m\\n'"
)


def request(
    subject: dict[str, Any] | None, kinds: tuple[str, ...] = ONCE
) -> RequestPermissionRequest:
    payload: dict[str, Any] = {
        "sessionId": "s1",
        "title": "May I?",
        "options": [{"optionId": k.replace("_", "-"), "name": k, "kind": k} for k in kinds],
    }
    if subject is not None:
        payload["subject"] = subject
    return RequestPermissionRequest.model_validate(payload)


def command(text: str, kinds: tuple[str, ...] = ONCE) -> RequestPermissionRequest:
    return request({"type": "command", "command": text, "cwd": "/w"}, kinds)


def request_with_title(title: str, kinds: tuple[str, ...]) -> RequestPermissionRequest:
    call = {"toolCallId": "c1", "kind": "edit", "status": "pending", "title": title}
    return request({"type": "tool_call", "toolCall": call}, kinds)


def tool_call(title: str | None) -> RequestPermissionRequest:
    call: dict[str, Any] = {"toolCallId": "c1", "kind": "edit", "status": "pending"}
    if title is not None:
        call["title"] = title
    return request({"type": "tool_call", "toolCall": call})


def outcome(decision: PolicyDecision | None) -> tuple[str, str] | None:
    """(option id, rule) of a decision; the option id also says allow or reject."""
    if decision is None:
        return None
    option_id = decision.option_id or "cancelled"  # None: the request is answered cancelled
    assert decision.allow == option_id.startswith("allow"), decision
    return option_id, decision.rule


def allowed(*globs: str) -> tuple[str, str]:
    return "allow-once", ", ".join(f"--allow {g!r}" for g in globs)


def denied(glob: str) -> tuple[str, str]:
    return "reject-once", f"--deny {glob!r}"


# -- issue 10, findings 1, 4 and 8: the exact repros ---------------------------------------------

# Finding 1: shlex and the shell read quotes differently; each of these ran `touch` (the last two
# under bash only) while the old policy approved it.
FINDING_1 = [
    (Policy(allow=("echo *",)), "echo hi #'\ntouch X\n#'"),  # a quote inside a comment
    (Policy(allow=("echo *",)), "echo hi <<EOF\necho '\nEOF\ntouch X\n#'"),  # in a here-document
    (Policy(allow=("echo *",)), "echo $'\\''; touch X #'"),  # ANSI-C: $'\'' is one quote
    (Policy(allow=("*",)), "y=$'\\x24(touch X)'; echo ${y@P}"),  # prompt expansion runs $(...)
]


@pytest.mark.parametrize(("policy", "text"), FINDING_1)
def test_finding_1_allow_does_not_approve_what_the_shell_reads_as_another_command(
    policy: Policy, text: str
) -> None:
    assert policy.decide(command(text)) is None


def test_finding_1_the_comment_is_read_as_a_comment() -> None:
    # dash and bash run `echo hi` and `touch X`: allowing both approves it, as the shell reads it.
    policy = Policy(allow=("echo *", "touch X"))
    assert outcome(policy.decide(command("echo hi #'\ntouch X\n#'"))) == allowed(
        "echo *", "touch X"
    )


# Finding 4: `--allow '*' --deny 'rm *'` approved all of these.
NO_RM = Policy(allow=("*",), deny=("rm *",))
FINDING_4 = [
    ("X=1 rm x", denied("rm *")),
    ("env rm x", denied("rm *")),
    ("command rm x", denied("rm *")),
    ("\\rm x", denied("rm *")),
    ("$'rm' x", denied("rm *")),  # bash reads `rm`
    ("$RM x", ASK),  # not readable statically: a person decides
    ("rm${IFS}x", ASK),
    ("/bin/rm x", denied("rm *")),
    ("sudo rm x", denied("rm *")),
    ("sh -c 'rm x'", denied("rm *")),
    ("echo $(rm x)", denied("rm *")),
]


@pytest.mark.parametrize(("text", "expected"), FINDING_4)
def test_finding_4_deny_sees_wrapped_and_prefixed_forms(
    text: str, expected: tuple[str, str] | None
) -> None:
    assert outcome(NO_RM.decide(command(text))) == expected


def test_finding_8_a_rule_never_grants_allow_always() -> None:
    assert ECHO.decide(command("echo hi", ("reject_once", "allow_always"))) is None
    assert WRITE.decide(request_with_title("Write a.txt", ("allow_always",))) is None


# -- allow: every simple command must match, nothing may be substituted ---------------------------

ECHO = Policy(allow=("echo *",))

ECHO_CASES = [
    # the reported bypasses
    ("echo hi; touch PWNED", ASK),
    ("echo $(touch PWNED2)", ASK),
    ("echo a\ntouch b", ASK),
    ("echo ok && touch PWNED4", ASK),
    # every separator
    ("echo ok || touch x", ASK),
    ("echo ok | sh", ASK),
    ("echo ok |& sh", ASK),
    ("echo ok & touch x", ASK),
    ("echo ok;touch x", ASK),
    ("echo ok\r\ntouch x", ASK),
    ("echo ok;\n;touch x", ASK),
    # subshells and groups
    ("(touch x)", ASK),
    ("echo ok;(touch x)", ASK),
    ("(echo ok)|touch x", ASK),
    ("{ touch x; }", ASK),
    # substitutions: always asked, even when quoted or holding only allowed commands
    ('echo "$(touch x)"', ASK),
    ("echo `touch x`", ASK),
    ('echo "`echo x`"', ASK),
    ("echo $(echo ok)", ASK),
    ("echo $((1 + 2))", ASK),
    ("echo <(touch x)", ASK),
    ("echo >(touch x)", ASK),
    ("echo '$(literal)'", allowed("echo *")),  # the parser knows a quoted `$(` is text
    ("echo $\\\n(touch x)", ASK),  # a line continuation cannot hide one
    ("echo \\$\\(x\\)", allowed("echo *")),  # nor can backslashes; escaped, it is text
    ("echo $''(touch x)", ASK),  # nor empty quotes
    # quoting that does not parse
    ("echo 'unclosed", ASK),
    ('echo "unclosed', ASK),
    ("echo hi \\", ASK),
    # `#` is never taken for a comment that could hide a command
    ("echo a#b; touch x", ASK),
    ("echo # ; touch x", ASK),
    # what the glob sees is the whole simple command
    ("LC_ALL=C echo hi", allowed("echo *")),  # a harmless assignment in front is looked through
    ("FOO=1 echo hi", ASK),  # any other name may make a program run other code
    ("TZ=UTC LANG=C.UTF-8 COLUMNS=80 NO_COLOR=1 echo hi", allowed("echo *")),
    ("PATH=. echo hi", ASK),  # unless it changes which program runs
    ("/bin/echo hi", allowed("echo *")),  # a system directory: compared by basename
    ("./echo hi", ASK),  # anywhere else it is a program on disk, not `echo`
    ("echo", ASK),  # `echo *` needs a space
    ("", ASK),
    (";", ASK),
    # allowed
    ("echo hi", allowed("echo *")),
    ("echo hi > out.txt", None),  # a redirection that writes a file needs a rule with `>`
    ("echo hi 2>&1 >>log &>/dev/null", None),
    ("echo hi 2>&1 >&2 >/dev/null 2>/dev/null", allowed("echo *")),  # no file written
    ("echo hi 2>/dev/stderr", None),  # stderr may be a file
    ("echo hi &>/dev/null rm x", None),  # bash's &>: dash reads `echo hi &` and `>/dev/null rm x`
    ("echo 'a;b'", allowed("echo *")),  # a quoted operator is one word
    ('echo "a && b | c & d"', allowed("echo *")),
    ("echo 'a\ntouch b'", allowed("echo *")),  # a quoted newline too
    ("echo a\\\ntouch b", allowed("echo *")),  # a line continuation: `echo atouch b`
    ("echo hi; echo there", allowed("echo *")),
    ("echo a && echo b || echo c | echo d", allowed("echo *")),
    ("echo $HOME ${USER:-me}", ASK),  # an expansion is not a literal word
    ("echo hi;", allowed("echo *")),
    ("echo hi &", allowed("echo *")),
    ("echo hi\n", allowed("echo *")),
    ("(echo a; echo b)", allowed("echo *")),
    ("echo hi # a comment", allowed("echo *")),
]


@pytest.mark.parametrize(("text", "expected"), ECHO_CASES)
def test_allow_echo(text: str, expected: tuple[str, str] | None) -> None:
    assert outcome(ECHO.decide(command(text))) == expected


# Several rules: each simple command may match a different one; the rule names all it used.
TOOLS = Policy(allow=("printf *", "sleep *", "echo*", "[ *", "cat *"))

TOOLS_CASES = [
    (QUICKSTART_LOOP, allowed("printf *", "sleep *")),
    ("sleep 1; echo later", allowed("sleep *", "echo*")),
    ("echo later; sleep 1; echo again", allowed("echo*", "sleep *")),
    ("for f in a b; do echo $f; done", allowed("echo*")),
    ("for f in a b\ndo\n  echo $f\ndone", allowed("echo*")),
    ("for f; do echo $f; done", ASK),  # the positional parameters are not known
    ("for f in a b; do touch $f; done", ASK),
    ("for f in $(ls); do echo $f; done", ASK),  # the header's words may hold a substitution
    ("for ((i = 0; i < 3; i++)); do echo $i; done", ASK),  # not a `for NAME` header
    ("if [ -f x ]; then cat x; else echo no; fi", allowed("[ *", "cat *", "echo*")),
    ("if [ -f x ]; then rm x; fi", ASK),
    ("if [ -f x ]; then cat x; elif rm x; then echo; fi", ASK),
    ("while true; do sleep 1; done", ASK),  # the condition is a command too: `true`
    ("until sleep 1; do echo; done", allowed("sleep *", "echo*")),
    ("while sleep 1; do touch x; done", ASK),
    ("{ echo a; sleep 1; }", allowed("echo*", "sleep *")),
    ("! echo a", allowed("echo*")),
    ("time sleep 1", ASK),  # `time` is a program in dash: it needs a rule of its own
    ("(echo a; sleep 1) | cat -n", allowed("echo*", "sleep *", "cat *")),
    ("cat x | sh", ASK),
]


@pytest.mark.parametrize(("text", "expected"), TOOLS_CASES)
def test_allow_several_rules(text: str, expected: tuple[str, str] | None) -> None:
    assert outcome(TOOLS.decide(command(text))) == expected


def test_allow_while_with_its_condition_allowed() -> None:
    policy = Policy(allow=("sleep *", "true"))
    decision = policy.decide(command("while true; do sleep 1; done"))
    assert outcome(decision) == allowed("true", "sleep *")


# `*` is not special: it matches every simple command, but a substitution is still asked about.
EVERYTHING = Policy(allow=("*",))

EVERYTHING_CASES = [
    ("sleep 1; echo later", allowed("*")),
    ("rm -rf build && make", allowed("*")),
    ("anything at all", allowed("*")),
    ("echo $(date)", ASK),
    ("echo `date`", ASK),
    ("diff <(ls a) <(ls b)", ASK),
    ("echo 'oops", ASK),
    ("", ASK),
]


@pytest.mark.parametrize(("text", "expected"), EVERYTHING_CASES)
def test_allow_star(text: str, expected: tuple[str, str] | None) -> None:
    assert outcome(EVERYTHING.decide(command(text))) == expected


# -- deny: any simple command, anywhere, or the whole string --------------------------------------

NO_TOUCH = Policy(allow=("*",), deny=("touch *",))

DENY_CASES = [
    ("touch x", denied("touch *")),
    ("echo ok && touch PWNED4", denied("touch *")),
    ("echo ok; touch x", denied("touch *")),
    ("echo ok\ntouch x", denied("touch *")),
    ("echo ok | touch x", denied("touch *")),
    ("echo ok & touch x", denied("touch *")),
    ("(touch x)", denied("touch *")),
    ("{ touch x; }", denied("touch *")),
    ("echo $(touch x)", denied("touch *")),
    ('echo "$(touch x)"', denied("touch *")),
    ("echo `touch x`", denied("touch *")),
    ('echo "`touch x`"', denied("touch *")),
    ("echo <(touch x)", denied("touch *")),
    ("cat >(touch x)", denied("touch *")),
    ("echo $(echo $(touch x))", denied("touch *")),
    ('echo "$(echo "$(touch x)")"', denied("touch *")),
    ("echo $\\\n(touch x)", denied("touch *")),
    ('echo "$\\\n(touch x)"', denied("touch *")),  # a continuation inside double quotes
    ("if true; then touch x; fi", denied("touch *")),
    ("for f in a; do touch $f; done", denied("touch *")),
    ("while true; do touch x; done", denied("touch *")),
    ("time touch x", denied("touch *")),
    ("! touch x", denied("touch *")),
    ("'touch' x", denied("touch *")),
    ("\\touch x", denied("touch *")),
    ("t'ou'ch x", denied("touch *")),
    # unbalanced quotes: a best-effort split still finds it
    ("touch x 'unclosed", denied("touch *")),
    ("echo 'unclosed; touch x", denied("touch *")),  # best effort: pieces read alone
    ('echo "$(touch x', denied("touch *")),
    # a quoted `touch` is an argument, not a command
    ("echo 'touch x'", allowed("*")),
    ("echo touch x", allowed("*")),
    ("echo 'a; touch x'", allowed("*")),
]


@pytest.mark.parametrize(("text", "expected"), DENY_CASES)
def test_deny(text: str, expected: tuple[str, str] | None) -> None:
    assert outcome(NO_TOUCH.decide(command(text))) == expected


def test_deny_matches_the_whole_string_too() -> None:
    policy = Policy(allow=("*",), deny=("echo hi; *",))
    assert outcome(policy.decide(command("echo hi; ls"))) == denied("echo hi; *")
    assert outcome(policy.decide(command("ls; echo hi"))) == allowed("*")


def test_deny_sees_a_command_with_its_leading_keyword() -> None:
    policy = Policy(allow=("*",), deny=("time *",))
    assert outcome(policy.decide(command("echo a; time make"))) == denied("time *")


def test_deny_names_the_first_matching_rule_in_order() -> None:
    policy = Policy(deny=("ls *", "rm *", "touch *"))
    assert outcome(policy.decide(command("touch a; rm b"))) == denied("rm *")


def test_deny_wins_over_allow() -> None:
    policy = Policy(allow=("rm *", "echo *"), deny=("rm *",))
    assert outcome(policy.decide(command("rm x"))) == denied("rm *")
    assert outcome(policy.decide(command("echo a; rm x"))) == denied("rm *")
    assert outcome(policy.decide(command("echo a"))) == allowed("echo *")


def test_no_rules_decide_nothing() -> None:
    assert Policy().decide(command("echo hi")) is None
    assert Policy.from_globs(None, None) == Policy()
    assert Policy.from_globs(["a"], ["b"]) == Policy(("a",), ("b",))


# -- which option is picked -----------------------------------------------------------------------

PICK_CASES = [
    # (policy, offered kinds, expected option id or ASK)
    (ECHO, ("reject_once", "allow_always", "allow_once"), "allow-once"),
    (ECHO, ("reject_once", "allow_always"), ASK),  # a rule never grants allow_always
    (ECHO, ("reject_once", "reject_always", "_snooze"), ASK),  # never an invented option
    (NO_TOUCH, ("allow_once", "reject_always", "reject_once"), "reject-once"),
    (NO_TOUCH, ("allow_once", "reject_always"), "reject-always"),
    (NO_TOUCH, ("allow_once", "allow_always"), "cancelled"),  # never allow, never a click
    (NO_TOUCH, ("allow_once",), "cancelled"),
]


@pytest.mark.parametrize(("policy", "kinds", "expected"), PICK_CASES)
def test_picks_an_offered_option(
    policy: Policy, kinds: tuple[str, ...], expected: str | None
) -> None:
    text = "echo hi" if policy is ECHO else "touch x"
    decision = policy.decide(command(text, kinds))
    assert (decision.option_id or "cancelled" if decision else None) == expected
    if decision is not None:
        assert decision.allow is (policy is ECHO)


# -- tool-call subjects: the whole title ----------------------------------------------------------

WRITE = Policy(allow=("Write *",), deny=("Write secrets*",))

TITLE_CASES = [
    (tool_call("Write hello.txt"), allowed("Write *")),
    (tool_call("Write hello.txt; rm x"), allowed("Write *")),  # a title is not shell
    (tool_call("Write secrets.env"), denied("Write secrets*")),
    (tool_call("Read hello.txt"), ASK),
    (tool_call(None), ASK),
    (request(None), ASK),
    (request({"type": "_mcp_tool", "server": "files", "tool": "rm"}), ASK),
]


@pytest.mark.parametrize(("req", "expected"), TITLE_CASES)
def test_tool_call_titles(req: RequestPermissionRequest, expected: tuple[str, str] | None) -> None:
    assert outcome(WRITE.decide(req)) == expected


# -- the splitting itself -------------------------------------------------------------------------

SPLIT_CASES = [
    ("a b; c", ["a b", "c"]),
    ("a 'b c' \"d e\"", ["a b c d e"]),
    ("a;(b)|c", ["a", "b", "c"]),  # shlex groups `;(` and `)|`; they are cut apart
    ("a >f 2>&1 <in", ["a > f 2>&1 < in"]),
    ("a &>>log && b", None),  # bash's &>> (dash: `a &` then `>>log`)
    ("if a; then b; elif c; then d; else e; fi", ["a", "b", "c", "d", "e"]),
    ("while ! a; do b; done > out", ["a > out", "b > out"]),  # a loop's redirection joins each
    ("for x in 1 2; do a $x; done", ["a 1", "a 2"]),  # a loop over literal words, unrolled
    ("for = in 1; do a; done", None),  # not a NAME: it does not parse
    ("{ a; } ; ( b )", ["a", "b"]),
    ("case y in y) a;; z) b;; esac", ["a", "b"]),  # every arm
    ("case $x in y) a;; esac", None),
    (
        "sudo -u bob env TZ=UTC nice -n 5 rm x",
        [
            "sudo -u bob env TZ=UTC nice -n 5 rm x",
            "env TZ=UTC nice -n 5 rm x",
            "nice -n 5 rm x",
            "rm x",
        ],
    ),
    ("time command rm x", ["time command rm x", "rm x"]),  # `command` runs the same program
    ("sh -c 'a; b'", ["a", "b", "sh -c a; b"]),
    ("a 'b", None),
]


@pytest.mark.parametrize(("text", "expected"), SPLIT_CASES)
def test_simple_commands(text: str, expected: list[str] | None) -> None:
    assert simple_commands(text) == expected


NOT_STATIC = [
    "echo $HOME",
    "echo ${x}",
    "echo $(a)",
    "echo $((1))",
    "echo `a`",
    "a <(b)",
    "a >(b)",
    "a $\\\n(b)",
    "echo ${y@P}",
    "echo $'a'",
    'echo $"a"',
    "ls *.py",
    "echo {a,b}",
    "f() { a; }",
    "alias a=b",
    "eval a",
    ". ./x",
    "source x",
    "trap 'a' EXIT",
    "(( x ))",
    "[[ -f x ]]",
    "x=$(a)",
    "a=(1 2)",
    'sh -c "$x"',
    "sh",
    "echo a | bash",
    "sh <<EOF\na\nEOF",
    "python3 <<EOF\na\nEOF",
    "bash -i -c a",
    "env -S 'a b'",
    "xargs -I{} a {}",
    "declare -i x",
    "printf -v 'a[$(b)]' x",
    "PATH=/tmp a",
    "LD_PRELOAD=x.so a",
    "export PATH=/tmp",
    "echo hi |",
    "echo 'unclosed",
    "cat <<A <<B\na\nA\nb\nB",
]


@pytest.mark.parametrize("text", NOT_STATIC)
def test_what_is_not_read_statically_is_asked_even_under_star(text: str) -> None:
    assert simple_commands(text) is None
    assert EVERYTHING.decide(command(text)) is None


def test_deep_nesting_fails_closed() -> None:
    deep = "echo " + "$(echo " * 3000 + "hi" + ")" * 3000
    assert EVERYTHING.decide(command(deep)) is None
    assert outcome(NO_TOUCH.decide(command("{ " * 3000 + "touch x; " + "}; " * 3000))) == denied(
        "touch *"
    )


@pytest.mark.process
def test_the_parser_is_imported_on_first_use_only() -> None:
    """``%load_ext acp_notebook`` must not pay for tree-sitter."""
    code = (
        "import sys, acp_notebook, acp_notebook._magics, acp_notebook._notebook._cells,"
        " acp_notebook._policy._rules;"
        "print(sorted(m for m in sys.modules"
        " if m.startswith(('tree_sitter', 'acp_notebook._policy._shell'))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def test_a_very_long_command_is_left_to_a_person() -> None:
    long = "echo " + "a" * 100_000
    assert EVERYTHING.decide(command(long)) is None
    assert outcome(NO_TOUCH.decide(command("touch x " + "a" * 100_000))) == denied("touch *")


# -- adversarial review: a deny is never left to a click; judging never raises ------------------


def test_a_matched_deny_without_a_reject_option_answers_cancelled() -> None:
    """No reject_* option offered: the decision selects nothing (``settle(None, "policy",
    rule)`` answers ``cancelled``); tests/adversarial/test_policy_kernel.py checks the wire."""
    for kinds in (("allow_once",), ("allow_once", "allow_always"), ("other",)):
        decision = NO_TOUCH.decide(command("touch x", kinds))
        assert decision == PolicyDecision(None, "--deny 'touch *'", False), kinds
        title = WRITE.decide(request_with_title("Write secrets.txt", kinds))
        assert title == PolicyDecision(None, "--deny 'Write secrets*'", False), kinds


SURROGATES = [
    (NO_RM, "rm x \ud800", denied("rm *")),
    (NO_RM, "r\ud800m x", denied("rm *")),  # an agent's runtime may drop it: `rm x`
    (NO_RM, "sh -c 'echo \udcff; rm x'", denied("rm *")),
    (NO_RM, "echo \ud800", ASK),  # never approved
    (NO_RM, "echo \udcff", ASK),
    (EVERYTHING, "ls \udfff", ASK),
]


@pytest.mark.parametrize(("policy", "text", "expected"), SURROGATES)
def test_a_lone_surrogate_is_never_approved_and_deny_still_sees_through_it(
    policy: Policy, text: str, expected: tuple[str, str] | None
) -> None:
    assert outcome(policy.decide(command(text))) == expected


FALLBACK = [
    ("rm x", denied("rm *")),
    ("echo a; rm x", denied("rm *")),  # a piece between operators
    ("echo $(rm x)", denied("rm *")),
    ("echo a && rm x | cat", denied("rm *")),
    ("echo hi", ASK),  # never approved when judging failed
    ("ls", ASK),
]


@pytest.mark.parametrize(("text", "expected"), FALLBACK)
def test_when_judging_raises_allow_asks_and_deny_still_matches(
    text: str, expected: tuple[str, str] | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from acp_notebook._policy import _shell

    def broken(command: str) -> Any:
        raise RuntimeError("the parser failed")

    monkeypatch.setattr(_shell, "read_command", broken)
    assert outcome(NO_RM.decide(command(text))) == expected
    assert outcome(NO_RM.decide(command(text, ("allow_once",)))) == (
        None if expected is None else ("cancelled", expected[1])
    )


# An assignment a program sees (a prefix, `env`, `sudo`, `export`, `declare -x`) is read
# statically only for a harmless name; other assignments not for a risky name, nor an
# upper-case one (it may be exported already); loops, `read` and `printf -v` assign too.
ASSIGNMENTS = [
    ("LANG=C LC_ALL=C TZ=UTC TERM=dumb COLUMNS=80 LINES=24 echo hi", allowed("*")),
    ("NO_COLOR=1 FORCE_COLOR=0 CLICOLOR=0 CLICOLOR_FORCE=1 CI=1 echo hi", allowed("*")),
    ("PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PYTHONHASHSEED=0 python3 t.py", allowed("*")),
    ("SOURCE_DATE_EPOCH=0 env LANG=C sudo TZ=UTC make", allowed("*")),
    ("export LANG=C; declare -x TZ=UTC; echo hi", allowed("*")),
    ("x=1; for f in a; do echo $f; done; read line < in; printf -v out %s a", allowed("*")),
    ("set -euo pipefail; echo hi", allowed("*")),
    ("PAGER=cat git log", ASK),  # names a program
    ("EDITOR=vi git commit", ASK),
    ("GIT_CONFIG_PARAMETERS=\"'core.pager=sh'\" git log", ASK),  # code
    ("PYTHONPATH=. python3 t.py", ASK),  # a path searched for code
    ("NODE_OPTIONS='--require ./x.js' node t.js", ASK),
    ("HOME=. git status", ASK),  # a path searched for configuration
    ("X=1 echo hi", ASK),
    ("x=1 echo hi", ASK),
    ("env X=1 echo hi", ASK),
    ("sudo X=1 echo hi", ASK),
    ("env -u PATH ls", ASK),
    ("export X=1; echo hi", ASK),
    ("export x=1; echo hi", ASK),
    ("declare -x x=1", ASK),
    ("X=1; echo hi", ASK),  # upper case: it may be exported already
    ("for X in a; do echo hi; done", ASK),
    ("for PATH in .; do ls; done", ASK),
    ("read PATH < f; ls", ASK),
    ("read -a IFS < f; ls", ASK),
    ("read -d x -a LD_PRELOAD < f; ls", ASK),
    ("printf -v PATH %s .; ls", ASK),
    ("wait -p PATH", ASK),
    ("mapfile PATH < f", ASK),
    ("getopts a PATH", ASK),
    ("unset PATH; ls", ASK),
    ("unset IFS; ls", ASK),
    ("export -n PATH; ls", ASK),
    ("export PATH; ls", ASK),
    ("local -n ref=PATH; ref=.; ls", ASK),
    ("builtin export PATH=.; ls", ASK),
    ("builtin read PATH < f; ls", ASK),
    ("set -k; ls PATH=.", ASK),
    ("set -a; x=1; ls", ASK),
    ("set -o allexport; ls", ASK),
    ("set -o keyword; ls", ASK),
    ("set -eo posix; ls", ASK),
    ("bash -a -c ls", ASK),
    ("bash -k -c ls", ASK),
    ("bash -o allexport -c ls", ASK),
    ("echo hi {PATH}>/dev/null; ls", ASK),
    ("exec {IFS}>&1; echo a b", ASK),
]


@pytest.mark.parametrize(("text", "expected"), ASSIGNMENTS)
def test_assignments_only_to_harmless_names_are_read_statically(
    text: str, expected: tuple[str, str] | None
) -> None:
    assert outcome(EVERYTHING.decide(command(text))) == expected


TIME_KEYWORD = [
    "time { rm x; }",
    "time -p { rm x; }",
    "time (rm x)",
    "time if rm x; then :; fi",
    "time while rm x; do :; done",
    "time for f in a; do rm x; done",
    "time case a in a) rm x;; esac",
    "time ! rm x",
    "! time { echo a | rm x; }",
    "time { time (rm x); }",
    "coproc { rm x; }",
    "coproc name { rm x; }",
]


@pytest.mark.parametrize("text", TIME_KEYWORD)
def test_deny_sees_a_compound_command_after_bash_time_keyword(text: str) -> None:
    assert outcome(NO_RM.decide(command(text))) == denied("rm *")
    assert Policy(allow=("*",)).decide(command(text)) is None  # never read statically


# -- issue 22, findings 6 and 7: real agents' shapes ----------------------------------------------


def execute_call(
    title: str | None, raw: Any = None, text: str | None = None, kind: str | None = "execute"
) -> RequestPermissionRequest:
    """A tool-call subject as real agents send it: ``raw`` its rawInput, ``text`` a text
    content block (where Kimi puts its command)."""
    call: dict[str, Any] = {"toolCallId": "c1", "status": "pending"}
    if kind is not None:
        call["kind"] = kind
    if title is not None:
        call["title"] = title
    if raw is not None:
        call["rawInput"] = raw
    if text is not None:
        call["content"] = [{"type": "content", "content": {"type": "text", "text": text}}]
    return request({"type": "tool_call", "toolCall": call})


STAR_NO_RM = Policy(allow=("*",), deny=("rm *",))

AGENT_SHAPES = [
    # Cline: the command in rawInput.commands, the title `run_commands: <command>`
    execute_call("run_commands: rm -f x", {"commands": ["rm -f x"]}),
    execute_call("run_commands", {"commands": ["rm -f x"]}),  # the list alone
    execute_call("run_commands", {"commands": ["ls", "rm -f x"]}),  # each one judged
    execute_call("run_commands", {"commands": [["rm", "-f", "x"]]}),
    execute_call("run_commands", {"commands": ["ls #", "rm -f x"]}),  # not one line
    # Kimi: the title `Shell: <command>`, the command only as text content
    execute_call("Shell: rm -f x", {}, "rm -f x"),
    execute_call("Shell: rm -f x"),
    execute_call("Shell", None, "rm -f x"),
    execute_call("Shell", None, "rm -f x", kind=None),
    execute_call("Shell: rm -f x", kind="other"),
    execute_call("Shell: rm -f x", {"command": "ls"}),  # the command is ls; the title says more
    # other agents: cmd, script, an argv list
    execute_call("Run", {"cmd": "rm -f x"}),
    execute_call("Run", {"script": "ls\nrm -f x"}),
    execute_call("Run", {"argv": ["rm", "-f", "x"]}),
    execute_call("Run", ["rm", "-f", "x"]),
    execute_call("Run", {"command": "rm", "args": ["-f", "x"]}),
    execute_call(None, {"command": "rm -f x"}),  # no title: the command is still judged
]


@pytest.mark.parametrize("req", AGENT_SHAPES)
def test_finding_6_deny_sees_the_command_wherever_the_agent_puts_it(
    req: RequestPermissionRequest,
) -> None:
    assert outcome(STAR_NO_RM.decide(req)) == denied("rm *")


@pytest.mark.parametrize(
    ("req", "expected"),
    [
        (execute_call("run_commands", {"commands": ["ls -l", "pwd"]}), allowed("ls *", "pwd")),
        (execute_call("run_commands", {"commands": ["ls -l", "cat x"]}), ASK),  # not every one
        (execute_call("Run", {"cmd": ["ls", "-l"]}), allowed("ls *")),
        (execute_call("Run", {"script": "ls -l; pwd"}), allowed("ls *", "pwd")),
        (execute_call("Run", {"cmd": "ls -l", "script": "cat x"}), ASK),  # every key is judged
        (execute_call("Shell: ls -l", None, "ls -l"), ASK),  # a title or text never approves
    ],
)
def test_finding_6_allow_needs_every_command_read(
    req: RequestPermissionRequest, expected: tuple[str, str] | None
) -> None:
    policy = Policy(allow=("ls *", "pwd", "Shell*"), deny=("rm *",))
    assert outcome(policy.decide(req)) == expected


@pytest.mark.parametrize(
    "req",
    [
        execute_call("Run"),  # no input at all
        execute_call("Run", {"path": "x"}),  # no key that names a command
        execute_call("Shell: ls -l", None, "ls -l"),  # only a title and text (Kimi)
        execute_call("Run", {"command": 7}),  # a command of another shape
        execute_call("Run", {"cmd": "ls", "command": {"x": 1}}),  # one of them unreadable
    ],
)
def test_finding_6_an_execute_call_whose_command_is_unknown_is_asked_while_a_deny_is_set(
    req: RequestPermissionRequest,
) -> None:
    assert STAR_NO_RM.decide(req) is None
    assert tool_call_command_unknown(req)


def test_finding_6_without_a_deny_rule_the_title_still_decides_a_call_without_a_command() -> None:
    assert outcome(Policy(allow=("*",)).decide(execute_call("Run"))) == allowed("*")
    assert not tool_call_command_unknown(execute_call("Run", {"command": "ls"}))
    assert not tool_call_command_unknown(execute_call("Edit a.py", {}, kind="edit"))
    # (a command of another shape is asked, deny or not)
    assert Policy(allow=("*",)).decide(execute_call("Run", {"command": 7})) is None


def test_finding_6_text_of_a_call_that_only_reads_is_not_judged_as_a_command() -> None:
    read = execute_call("Read notes.md", {"path": "notes.md"}, "rm -f x", kind="read")
    assert outcome(STAR_NO_RM.decide(read)) == allowed("*")


def test_finding_6_a_call_with_more_text_blocks_than_are_judged_is_asked() -> None:
    call = execute_call("Run", None, "ls", kind="other").subject.tool_call.to_wire()  # type: ignore[union-attr]
    block = {"type": "content", "content": {"type": "text", "text": "ls"}}
    call["content"] = [block] * MAX_DENY_TEXTS
    fits = request({"type": "tool_call", "toolCall": call})
    assert outcome(STAR_NO_RM.decide(fits)) == allowed("*")
    call["content"] = [block] * MAX_DENY_TEXTS + [
        {"type": "content", "content": {"type": "text", "text": "rm -f x"}}
    ]
    over = request({"type": "tool_call", "toolCall": call})
    assert STAR_NO_RM.decide(over) is None
    assert outcome(Policy(allow=("*",)).decide(over)) == allowed("*")  # no deny: nothing to see


# -- round 3: options a rule's `*` does not cover, titles read as commands, unknown input -------


@pytest.mark.parametrize(
    ("rules", "text", "expected"),
    [
        (("rm -i *",), "rm -i x", allowed("rm -i *")),
        (("rm -i *",), "rm -i -f x", ASK),
        (("rm -i *",), "rm -i -rf x", ASK),
        (("rm -i *",), "rm -i --force x", ASK),
        (("rm -i *",), "rm -i --forc x", ASK),  # getopt takes a prefix
        (("rm -i *",), "rm -i --interactive=never x", ASK),
        (("rm -i *",), "rm -i --interactive=always x", allowed("rm -i *")),
        (("rm -f *",), "rm -f x", allowed("rm -f *")),  # the rule names it
        (("rm *",), "rm -f x", ASK),
        (("*",), "rm -rf x", allowed("*")),  # `*` alone, as for writes
        (("git log*",), "git log --oneline", allowed("git log*")),
        (("git log*",), "git log --output=.bashrc", ASK),
        (("git log*",), "git log --outp .bashrc", ASK),
        (("git log*",), "git log -p --ext-diff", ASK),  # runs the configured diff program
        (("git log --output=* *",), "git log --output=x -3", allowed("git log --output=* *")),
        (("find . -name *",), "find . -name x", allowed("find . -name *")),
        (("find . -name *",), "find . -name x -delete", ASK),
        (("find . -name *",), "find . -name x -exec rm {} ;", ASK),
        (("find * -delete",), "find . -name x -delete", allowed("find * -delete")),
        (("sort *",), "sort -o out f", ASK),
        (("sort *",), "sort -rn f", allowed("sort *")),
        (("sed *",), "sed -i s/a/b/ f", ASK),
        (("sed *",), "sed -n 1p f", allowed("sed *")),
        (("sudo *", "rm -i *"), "sudo rm -i -f x", ASK),  # the wrapped command too
        (("ls *", "rm *"), "ls | xargs rm", ASK),  # xargs may add `-f`
        (("ls -l", "*"), "ls -l | xargs rm", allowed("ls -l", "*")),
    ],
)
def test_a_rules_star_does_not_cover_an_option_that_deletes_writes_or_runs(
    rules: tuple[str, ...], text: str, expected: tuple[str, str] | None
) -> None:
    assert outcome(Policy(allow=rules).decide(command(text))) == expected


@pytest.mark.parametrize(
    ("rules", "req", "expected"),
    [
        # Gemini: the command is the title of an execute call, judged as a command
        (("ls *",), execute_call("ls -l"), allowed("ls *")),
        (("ls *",), execute_call("ls -l; rm -f x"), ASK),
        (("ls *",), execute_call("ls -l $(rm -f x)"), ASK),
        (("echo *",), execute_call("echo hi > ~/.bashrc"), ASK),
        # Kimi: `Shell: command` under a rule `Shell: GLOB`
        (("Shell: ls *",), execute_call("Shell: ls -l"), allowed("Shell: ls *")),
        (("Shell: ls *",), execute_call("Shell: ls -l; rm -f x"), ASK),
        (("Shell: ls *",), execute_call("Shell: ls -l", kind="other"), allowed("Shell: ls *")),
        (("Shell: ls *",), execute_call("Shell: ls -l\nrm x", kind="other"), ASK),
        (("Shell*",), execute_call("Shell: ls -l; rm -f x"), ASK),  # judged whole
        (("Shell: *",), execute_call("Shell: ls -l; pwd"), allowed("Shell: *")),
        # not a command: a name, matched as text
        (("Write *",), tool_call("Write a.txt; rm x"), allowed("Write *")),
        (("mcp__fs__*",), execute_call("mcp__fs__read (x)", kind="other"), allowed("mcp__fs__*")),
    ],
)
def test_a_title_that_is_a_command_is_judged_as_one(
    rules: tuple[str, ...], req: RequestPermissionRequest, expected: tuple[str, str] | None
) -> None:
    assert outcome(Policy(allow=rules).decide(req)) == expected


@pytest.mark.parametrize(
    "raw",
    [{"cmd_line": "ls"}, {"arguments": {"command": "ls"}}, {"args": ["ls"]}, {"input": "ls\n"}],
)
def test_an_other_call_with_input_under_unknown_keys_is_asked_while_a_deny_is_set(
    raw: dict[str, Any],
) -> None:
    req = execute_call("run_shell", raw, kind="other")
    assert STAR_NO_RM.decide(req) is None
    assert tool_call_command_unknown(req)
    assert outcome(Policy(allow=("*",)).decide(req)) == allowed("*")  # no deny: the title
    as_text = execute_call("run (shell MCP Server)", None, '{"cmd": "ls"}', kind="other")
    assert STAR_NO_RM.decide(as_text) is None
    numbers = execute_call("count", {"n": 3}, kind="other")  # no text: it names no command
    assert outcome(STAR_NO_RM.decide(numbers)) == allowed("*")
