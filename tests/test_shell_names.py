"""acp_notebook._policy._shell_names: which variable assignments and `set` options are static."""

from __future__ import annotations

import pytest

from acp_notebook._policy._shell_names import assignment_problem, set_problems, setter_problems


@pytest.mark.parametrize("name", ["LANG", "LC_ALL", "TZ", "PYTHONUNBUFFERED", "NO_COLOR"])
def test_harmless_names_are_static_even_exported(name: str) -> None:
    assert assignment_problem(name, "an assignment to", exported=True) is None


@pytest.mark.parametrize("name", ["PATH", "IFS", "LD_PRELOAD", "BASH_ENV", "PS1", "HOME"])
def test_risky_names_are_never_static(name: str) -> None:
    assert assignment_problem(name, "set", exported=False) == f"set {name}"


def test_exported_and_upper_case_names() -> None:
    assert assignment_problem("foo", "x", exported=True) == "x foo, exported (not a harmless name)"
    assert assignment_problem("FOO", "x", exported=False) == (
        "x FOO (upper case: it may be exported already)"
    )
    assert assignment_problem("foo", "x", exported=False) is None
    assert assignment_problem("my_Var", "x", exported=False) is None


def test_the_name_is_what_comes_before_a_value_and_must_be_a_plain_identifier() -> None:
    assert assignment_problem("PATH=/tmp", "x", exported=False) == "x PATH"
    assert assignment_problem("x+=1", "x", exported=False) is None
    # bash evaluates a subscript as arithmetic (`b[$(rm c)]`, or `b[x]` with x holding that)
    for name in ("LD_LIBRARY_PATH[0]", "arr[1]=v", "b[x]", "1", "X%", "BASH_FUNC_f%%", "é"):
        assert assignment_problem(name, "x", exported=False) == (
            f"x {name.split('=')[0]!r}, not a plain identifier"
        )
    # no prefix match: PATHS is not PATH (but is upper case)
    assert assignment_problem("PATHS", "x", exported=False) == (
        "x PATHS (upper case: it may be exported already)"
    )


def test_read_printf_wait_name_their_targets() -> None:
    assert setter_problems("read", ["-r", "line"]) == []
    assert setter_problems("read", ["PATH"]) == ["`read` of PATH"]
    assert setter_problems("read", ["--", "PATH"]) == ["`read` of PATH"]
    assert setter_problems("read", ["-a", "IFS"]) == ["`read -a` of IFS"]
    assert setter_problems("read", ["-p", "PATH", "x"]) == []  # a prompt, not a name
    assert setter_problems("printf", ["-v", "IFS", "%s", "x"]) == ["`printf -v` of IFS"]
    assert setter_problems("printf", ["-vIFS", "%s"]) == ["`printf -v` of IFS"]
    assert setter_problems("printf", ["%s", "IFS"]) == []  # operands are not names
    assert setter_problems("wait", ["-p", "var"]) == []
    assert setter_problems("wait", ["-p", "HOME"]) == ["`wait -p` of HOME"]


def test_declaration_builtins() -> None:
    assert setter_problems("export", ["PATH=."]) == ["`export` of PATH"]
    assert setter_problems("export", ["foo=1"]) == [
        "`export` of foo, exported (not a harmless name)"
    ]
    assert setter_problems("export", ["LANG=C"]) == []
    assert setter_problems("declare", ["foo=1"]) == []
    assert setter_problems("declare", ["-x", "foo=1"]) == [
        "`declare` of foo, exported (not a harmless name)"
    ]
    assert setter_problems("declare", ["-r", "foo=1"]) == []
    assert setter_problems("declare", ["-n", "foo=1"]) == ["`declare -n`"]
    assert setter_problems("unset", ["PATH"]) == ["`unset` of PATH"]


def test_set_options() -> None:
    assert set_problems(["-euo", "pipefail"]) == []
    assert set_problems(["+x"]) == []
    assert set_problems(["-e", "--", "-a"]) == []  # after `--` come positional parameters
    assert set_problems(["-k"]) == ["`set -k`"]
    assert set_problems(["-a"]) == ["`set -a`"]
    assert set_problems(["-o", "posix"]) == ["`set -o posix`"]
    assert set_problems(["-o"]) == ["`set -o `"]
    assert set_problems(["-ea"]) == ["`set -ea`"]
