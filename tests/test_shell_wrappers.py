"""_policy._shell_wrappers: how far to skip into a wrapper to reach the program it runs."""

from __future__ import annotations

import pytest

from acp_notebook._policy._shell_text import Word
from acp_notebook._policy._shell_wrappers import wrapped


def words(*texts: str) -> list[Word]:
    return [Word(t, True) for t in texts]


def test_a_program_that_is_not_a_wrapper() -> None:
    assert wrapped("ls", words("ls", "-l")) is None


@pytest.mark.parametrize(
    "line, skip",
    [
        ("sudo rm x", 1),
        ("sudo -u root rm x", 3),
        ("sudo -uroot rm x", 2),
        ("sudo -nE rm x", 2),  # bundled flags
        ("timeout 5 rm x", 2),  # one positional operand (the duration)
        ("timeout --signal=KILL 5 rm x", 3),
        ("timeout -s KILL 5 rm x", 4),
        ("nice -10 rm x", 2),
        ("nice -n 5 rm x", 3),
        ("env -- rm x", 2),
        ("env - rm x", 2),  # for env, `-` is an option (an empty environment)
        ("nohup - x", 1),  # for others it is the program
        ("xargs -0r rm", 2),
        ("xargs -n1 rm", 2),
        ("stdbuf -o0 rm", 2),
    ],
)
def test_skips_the_wrappers_options(line: str, skip: int) -> None:
    found = wrapped(line.split()[0], words(*line.split()))
    assert found is not None
    assert found[0] == skip
    assert found[2] is True


def test_transparent_wrappers_run_the_same_program() -> None:
    for name in ("command", "builtin", "exec"):
        found = wrapped(name, words(name, "ls"))
        assert found == (1, True, True)
    assert wrapped("sudo", words("sudo", "ls")) == (1, False, True)


@pytest.mark.parametrize(
    "line",
    [
        "env -S rm_x",  # -S splits a string into more words
        "env --frobnicate rm",  # an option not known here
        "xargs -I{} rm {}",  # the program's words are rewritten
        "sudo -i",
        "sudo -s ls",
        "coproc ls",
    ],
)
def test_what_cannot_be_read_statically(line: str) -> None:
    found = wrapped(line.split()[0], words(*line.split()))
    assert found is not None
    assert found[2] is False


def test_a_non_literal_word_makes_it_not_static() -> None:
    found = wrapped("sudo", [Word("sudo", True), Word("$PROG", False)])
    assert found == (1, False, False)


def test_the_skip_never_passes_the_end() -> None:
    assert wrapped("timeout", words("timeout")) == (1, False, True)
    # a dangling option that takes a value: the skip stops at the end, no program is reached
    assert wrapped("sudo", words("sudo", "-u")) == (2, False, True)
