"""Issue 22, findings 1-5: shell constructs the policy approved without understanding them.

Each case is a command and the rules it was approved under on 3c4bfcf. Two tests per case:
the command really does the forbidden thing when a shell runs it (in a scratch folder, with a
canary ``c`` or ``victim``), so the case is a real attack; and the policy no longer approves it
(a person is asked, or a deny rejects). The positive model (``_shell_model``) is why: a
construct outside its table is asked, even under ``--allow '*'``.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from acp_notebook._policy._rules import Policy
from acp_notebook._protocol import RequestPermissionRequest

ECHO = Policy(("echo *",))
LS = Policy(("ls *",))
GIT = Policy(("git status*",))
EXACT_GIT = Policy(("git status",))
STAR_NO_RM = Policy(("*",), ("rm *",))
ARITH = "x='a[$(rm c)]'; "  # bash evaluates `b[x]`'s subscript, then x's value, then $(rm c)


def request(command: str) -> RequestPermissionRequest:
    payload: dict[str, Any] = {
        "sessionId": "s1",
        "title": "run",
        "subject": {"type": "command", "command": command, "cwd": "/tmp"},
        "options": [
            {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
            {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
        ],
    }
    return RequestPermissionRequest.model_validate(payload)


# (finding, policy, command, shells that really do the harm, the harm: "truncated",
# "overwritten" or "removed")
CASES: list[tuple[int, Policy, str, tuple[str, ...], str]] = [
    (1, ECHO, "echo ok; > victim", ("dash", "bash"), "truncated"),
    (1, ECHO, "echo ok && >victim", ("dash", "bash"), "truncated"),
    (1, ECHO, "echo ok | >victim", ("dash", "bash"), "truncated"),
    (1, ECHO, "(>victim); echo ok", ("dash", "bash"), "truncated"),
    (1, ECHO, "if echo ok; then >victim; fi", ("dash", "bash"), "truncated"),
    (1, ECHO, "case a in a) >victim;; esac; echo ok", ("dash", "bash"), "truncated"),
    (1, ECHO, "for f in a; do >victim; done; echo ok", ("dash", "bash"), "truncated"),
    (1, ECHO, "echo ok # \\\n>victim", ("dash", "bash"), "truncated"),
    (1, LS, "ls .; > victim", ("dash", "bash"), "truncated"),
    (1, GIT, "git status; > victim", ("dash", "bash"), "truncated"),
    (2, EXACT_GIT, "{ git status; } > victim", ("dash", "bash"), "overwritten"),
    (2, Policy(("echo ok",)), "( echo ok ) > victim", ("dash", "bash"), "overwritten"),
    (2, Policy(("echo *", "false")), "while false; do echo; done > victim", ("bash",), "truncated"),
    (3, STAR_NO_RM, "env 1=1 rm c", ("dash", "bash"), "removed"),
    (3, STAR_NO_RM, "env 'X%=1' rm c", ("dash", "bash"), "removed"),
    (3, STAR_NO_RM, "env -i 1=1 rm c", ("dash", "bash"), "removed"),
    (3, STAR_NO_RM, "nice env 1=1 rm c", ("dash", "bash"), "removed"),
    (3, STAR_NO_RM, "env 'BASH_FUNC_echo%%=() { rm c; }' bash -c 'echo hi'", ("bash",), "removed"),
    (4, STAR_NO_RM, ARITH + "printf -v 'b[x]' hi", ("bash",), "removed"),
    (4, STAR_NO_RM, ARITH + "test -v 'b[x]'", ("bash",), "removed"),
    (4, STAR_NO_RM, ARITH + "[ -v 'b[x]' ]", ("bash",), "removed"),
    (4, STAR_NO_RM, ARITH + "read 'b[x]' <<< 1", ("bash",), "removed"),
    (4, STAR_NO_RM, ARITH + "declare 'b[x]=1'", ("bash",), "removed"),
    (4, STAR_NO_RM, ARITH + "typeset 'b[x]=1'", ("bash",), "removed"),
    (5, STAR_NO_RM, "set -H -o history\necho rm c\n!-1:1-2", ("bash",), "removed"),
    (5, STAR_NO_RM, "set -H -o history\necho c\n^echo^rm", ("bash",), "removed"),
]
IDS = [f"finding{f}-{i}" for i, (f, *_rest) in enumerate(CASES)]


@pytest.mark.parametrize(("finding", "policy", "command", "shells", "harm"), CASES, ids=IDS)
@pytest.mark.process
def test_the_command_was_a_real_attack(
    tmp_path: Path, finding: int, policy: Policy, command: str, shells: tuple[str, ...], harm: str
) -> None:
    for shell in shells:
        path = shutil.which(shell)
        assert path is not None, f"{shell} is needed"
        scratch = tmp_path / shell
        scratch.mkdir()
        subprocess.run(["git", "init", "-q", str(scratch)], check=True)
        (scratch / "victim").write_text("precious\n")
        (scratch / "c").write_text("canary\n")
        subprocess.run(
            [path, "-c", command], cwd=scratch, capture_output=True, timeout=30, check=False
        )
        if harm == "truncated":
            assert (scratch / "victim").read_text() == "", (shell, command)
        elif harm == "overwritten":
            assert (scratch / "victim").read_text() != "precious\n", (shell, command)
        else:
            assert not (scratch / "c").exists(), (shell, command)


@pytest.mark.parametrize(("finding", "policy", "command", "shells", "harm"), CASES, ids=IDS)
def test_the_policy_no_longer_approves_it(
    finding: int, policy: Policy, command: str, shells: tuple[str, ...], harm: str
) -> None:
    decision = policy.decide(request(command))
    assert decision is None or not decision.allow, (command, decision)


@pytest.mark.parametrize(
    "command",
    [
        "env 1=1 rm c",
        "env 'X%=1' rm c",
        "env -i 1=1 rm c",
        "nice env 1=1 rm c",
        "sudo 1=1 rm c",
        "env 'BASH_FUNC_echo%%=() { rm c; }' bash -c 'echo hi'",
    ],
)
def test_deny_sees_the_program_after_env_operands_of_any_name(command: str) -> None:
    """GNU env takes every leading operand with `=` as an assignment: deny reads past them,
    and a function exported as BASH_FUNC_ is read for deny as the code it is."""
    decision = STAR_NO_RM.decide(request(command))
    assert decision is not None and not decision.allow and decision.rule == "--deny 'rm *'"


@pytest.mark.parametrize(
    "command",
    [
        "echo x > ~/.bashrc",
        "echo x >> f",
        "echo x >| f",
        "echo x >& f",
        "{ echo x; } > f",
        "echo x 2> f",
    ],
)
def test_a_rule_without_a_redirection_does_not_approve_a_write(command: str) -> None:
    decision = ECHO.decide(request(command))
    assert decision is None, command
    assert Policy(("echo *>*",)).decide(request(command)) is not None, command


@pytest.mark.parametrize(
    ("policy", "command"),
    [
        (Policy(("echo * > *",)), "echo ok > out.txt"),  # a write: a rule with a `>` approves
        (STAR_NO_RM, "make > log 2>&1"),  # and so does `*` alone
        (Policy(("echo *", "> log")), "echo ok; > log"),  # a redirection alone needs its rule
        (Policy(("git status > f",)), "{ git status; } > f"),  # the compound's joins its commands
        (STAR_NO_RM, "x=1; printf -v out %s x; read -r line <<< 1; test -v x; declare y=2"),
        (STAR_NO_RM, "set -euo pipefail; echo 'hi!x' \"done!\" hi\\!x; [ ! -f x ]"),
        (STAR_NO_RM, "env LANG=C ls"),
    ],
)
def test_what_the_model_lists_is_still_approved(policy: Policy, command: str) -> None:
    decision = policy.decide(request(command))
    assert decision is not None and decision.allow, command
