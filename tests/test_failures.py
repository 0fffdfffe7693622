"""`ConnectFailed`: the story of a failed connect, told from the errors' and problems' fields."""

from __future__ import annotations

from pathlib import Path

import pytest

import acp_notebook
from acp_notebook._client._errors import InitializeTimeout, UnsupportedProtocolVersion
from acp_notebook._connection._errors import AgentExited
from acp_notebook._connection._jsonrpc import BadLine, Problem
from acp_notebook._notebook._failures import ConnectFailed, describe_problem

NOT_JSON = BadLine.of("Expecting value: line 1 column 2 (char 1)", b"not json", None)
TOO_LONG = Problem("too_long", "discarded a line of 9000 bytes (limit 4096 bytes)")


def test_an_exit_after_a_bad_line_names_both_on_one_line() -> None:
    error = AgentExited(0, None, "")
    failed = ConnectFailed(error, [NOT_JSON])
    expected = (
        f"{error.status} (its stderr was empty);"
        " before that it wrote a line that is not JSON-RPC: 'not json'"
    )
    assert str(failed) == failed.summary == expected
    assert failed.error is error and failed.problems == [NOT_JSON]


def test_the_stderr_tail_comes_from_the_field_and_the_summary_points_to_it() -> None:
    error = AgentExited(3, None, "boom\nbang\n")
    failed = ConnectFailed(error, [])
    assert str(failed) == f"{error.status}; last lines of its stderr:\nboom\nbang"
    assert failed.summary == f"{error.status} (its stderr is shown above)"
    assert failed.stderr_tail == "boom\nbang"


def test_an_initialize_timeout_keeps_its_stderr() -> None:
    failed = ConnectFailed(InitializeTimeout(0.5, "still thinking"), [])
    assert str(failed) == (
        "the agent did not answer `initialize` within 0.5 s and was stopped;"
        " last lines of its stderr:\nstill thinking"
    )
    assert failed.summary == (
        "the agent did not answer `initialize` within 0.5 s and was stopped"
        " (its stderr is shown above)"
    )
    assert "\n" not in failed.summary


def test_a_program_that_cannot_start_and_an_error_with_no_stderr() -> None:
    # the program is named, in words; no "[Errno 2]"
    failed = ConnectFailed(FileNotFoundError(2, "No such file or directory", "/x/agent"), [])
    assert (
        str(failed)
        == failed.summary
        == ("cannot start it: there is no program '/x/agent' (is it installed, and on PATH?)")
    )
    failed = ConnectFailed(PermissionError(13, "Permission denied", "/x/agent"), [])
    assert failed.summary == "cannot start it: '/x/agent' is not a program this user may run"
    failed = ConnectFailed(FileNotFoundError(2, "No such file or directory"), [])
    assert failed.summary == "cannot start it: No such file or directory"
    failed = ConnectFailed(OSError(8, "Exec format error", "/x/agent"), [])
    assert failed.summary == "cannot start it: Exec format error ('/x/agent')"
    refused = UnsupportedProtocolVersion("the agent answered protocol version 1")
    failed = ConnectFailed(refused, [TOO_LONG, TOO_LONG, NOT_JSON])
    assert failed.summary == (
        "the agent answered protocol version 1; it sent something wrong:"
        " discarded a line of 9000 bytes (limit 4096 bytes) (and 2 more problems)"
    )
    assert failed.stderr_tail == ""


def test_a_message_of_several_lines_is_summarised_by_its_first() -> None:
    failed = ConnectFailed(RuntimeError("first\nsecond"), [])
    assert failed.summary == "first (...)" and str(failed) == "first\nsecond"


@pytest.mark.parametrize(
    ("problem", "clause"),
    [
        (NOT_JSON, "it wrote a line that is not JSON-RPC: 'not json'"),
        (TOO_LONG, "it sent something wrong: discarded a line of 9000 bytes (limit 4096 bytes)"),
        (
            Problem("not_jsonrpc", "message is not an object or array", "42"),
            "it sent something wrong: message is not an object or array: '42'",
        ),
    ],
)
def test_describe_problem_reads_the_kind_not_the_wording(problem: Problem, clause: str) -> None:
    assert describe_problem(problem) == clause


def test_no_module_above_the_connection_parses_its_wording() -> None:
    """The acceptance check of issue 12: the stderr heading and the bad-line wording are
    written by the layers that own them, and read by nobody."""
    package = Path(acp_notebook.__file__).parent
    owners = {
        "last lines of its stderr": {"_errors.py", "_agent.py", "_failures.py"},
        "unparsable line": {"_jsonrpc.py"},
    }
    found = [
        f"{path.relative_to(package)}: {words!r}"
        for path in sorted(package.rglob("*.py"))
        for words, allowed in owners.items()
        if words in path.read_text("utf-8") and path.name not in allowed
    ]
    assert found == []
    split = "partition(" + '"; last'  # (spelt apart, so that `git grep` does not find it here)
    assert not any(split in path.read_text("utf-8") for path in package.rglob("*.py"))
