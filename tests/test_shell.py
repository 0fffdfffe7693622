"""acp_notebook._policy._shell: read_command finds every simple command a string runs, as layers,
and says whether the whole string can be read statically."""

from __future__ import annotations

import pytest

from acp_notebook._policy._shell import MAX_CHARS, Reading, allow_program, basename, read_command


def texts(reading: Reading) -> list[list[str]]:
    return [[layer.text(basename=False) for layer in command] for command in reading.commands]


@pytest.mark.parametrize(
    "command, found",
    [
        ("ls -la", [["ls -la"]]),
        ("echo 'a b' \"c\\$d\"", [["echo a b c$d"]]),  # words after quote removal
        ("r\\\nm x", [["rm x"]]),  # a line continuation inside a word
        ("ls | grep x && cat f", [["ls"], ["grep x"], ["cat f"]]),
        ("ls > out.txt", [["ls > out.txt"]]),  # redirections are part of the command
        ("sh -c 'ls; pwd'", [["ls"], ["pwd"], ["sh -c ls; pwd"]]),  # a shell's -c literal
        ("for i in a b; do echo $i; done", [["echo a"], ["echo b"]]),  # literal loop values
        ("set -euo pipefail; ls", [["set -euo pipefail"], ["ls"]]),
        ("LANG=C ls", [["ls"]]),
    ],
)
def test_static_commands(command: str, found: list[list[str]]) -> None:
    reading = read_command(command)
    assert reading.static, reading.reasons
    assert reading.reasons == []
    assert texts(reading) == found


@pytest.mark.parametrize(
    "command, reason, inner",
    [
        ("rm $X", "an expansion", "rm $X"),
        ("echo $(rm -rf /)", "a command substitution", "rm -rf /"),
        ("f() { rm x; }; f", "a function definition", "rm x"),
        ("eval ls", "`eval`", "ls"),
        ("PATH=/tmp ls", "an assignment to PATH", "ls"),
        ("FOO=1 ls", "an assignment to FOO, exported (not a harmless name)", "ls"),
        ("set -a; ls", "`set -a`", "ls"),
        ("echo $'a\\x41'", "ANSI-C quoting (dash and bash read it differently)", "echo aA"),
        ("bash <<EOF\nrm x\nEOF\n", "bash reading commands from its input", "rm x"),
    ],
)
def test_dynamic_commands_say_why_and_still_show_what_runs(
    command: str, reason: str, inner: str
) -> None:
    reading = read_command(command)
    assert not reading.static
    assert reason in reading.reasons
    assert any(inner in layers for layers in texts(reading))


def test_a_non_literal_word_is_kept_as_source_text() -> None:
    assert texts(read_command('rm "$X"/*')) == [['rm "$X"/*']]


def test_wrappers_are_peeled_into_layers() -> None:
    reading = read_command("sudo env X=1 rm x")
    assert texts(reading) == [["sudo env X=1 rm x", "env X=1 rm x", "rm x"]]
    assert not reading.static  # X is upper case, and exported to rm
    (layers,) = read_command("command ls").commands
    assert [layer.needs_allow for layer in layers] == [False, True]


def test_xargs_adds_arguments_and_without_r_runs_bare() -> None:
    (layers,) = read_command("xargs rm").commands
    assert layers[1].extra_args
    assert layers[1].bare
    (layers,) = read_command("xargs -r rm").commands
    assert layers[1].extra_args
    assert not layers[1].bare


def test_basename_in_layer_text_and_allow_program() -> None:
    (layers,) = read_command("/usr/bin/rm -f x").commands
    assert layers[0].text(basename=True) == "rm -f x"
    assert layers[0].text(basename=False) == "/usr/bin/rm -f x"
    assert allow_program("/usr/bin/rm") == "rm"
    assert allow_program("/tmp/rm") == "/tmp/rm"  # not a system directory
    assert allow_program("rm") == "rm"
    assert basename("/tmp/rm") == "rm"
    assert basename("rm") == "rm"


def test_a_reason_is_recorded_once() -> None:
    reading = read_command("rm $X $Y $Z")
    assert reading.reasons.count("an expansion") == 1


def test_too_long_is_dynamic_without_parsing() -> None:
    reading = read_command("a" * (MAX_CHARS + 1))
    assert not reading.static
    assert reading.reasons == [f"longer than {MAX_CHARS} characters"]
    assert reading.commands == []
    assert read_command("a" * MAX_CHARS).static


def test_nesting_too_deep_is_dynamic_but_still_read_for_deny() -> None:
    reading = read_command("(" * 5000 + "rm x" + ")" * 5000)
    assert not reading.static
    assert "nested too deeply" in reading.reasons
    assert any("rm x" in layer.text(basename=False) for c in reading.commands for layer in c)
