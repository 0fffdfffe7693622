"""Why an agent could not be connected, told from the errors' and problems' fields.

Nothing here reads another layer's wording: what happened comes from the error's own fields
(``status`` and ``stderr_tail`` of `AgentExited` and `StoppedBeforeInitialize`: a timeout, or
lines that are not ACP), what the agent sent wrong from the `Problem` values the connection
and the client reported.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._client._errors import StoppedBeforeInitialize
from .._connection._errors import AgentExited, ConnectionClosed
from .._connection._jsonrpc import Problem

__all__ = ["STDERR_HEADING", "ConnectFailed", "describe_problem"]

STDERR_HEADING = "; last lines of its stderr:\n"


def _what_happened(error: BaseException) -> tuple[str, str | None]:
    """(what happened, in words; the agent's stderr tail, or None when the error has none)."""
    if isinstance(error, AgentExited | StoppedBeforeInitialize):
        return error.status, error.stderr_tail
    if isinstance(error, OSError) and not isinstance(error, TimeoutError):
        return f"cannot start it: {_start_failure(error)}", None
    return str(error) or type(error).__name__, None


def _start_failure(error: OSError) -> str:
    """Why the agent's program could not be started, in words (no ``[Errno 2]``)."""
    program = error.filename
    if isinstance(error, FileNotFoundError) and program is not None:
        return f"there is no program {str(program)!r} (is it installed, and on PATH?)"
    if isinstance(error, PermissionError) and program is not None:
        return f"{str(program)!r} is not a program this user may run"
    reason = error.strerror or str(error) or type(error).__name__
    return f"{reason} ({str(program)!r})" if program is not None else reason


def describe_problem(problem: Problem) -> str:
    """A problem as a clause: "it wrote a line that is not JSON-RPC: 'x'"."""
    if problem.kind == "unparsable":
        return f"it wrote a line that is not JSON-RPC: {problem.preview!r}"
    return f"it sent something wrong: {problem}"


class ConnectFailed(Exception):
    """``open_agent`` failed: ``error`` is what ``connect`` raised, ``problems`` what went
    wrong on the connection before (lines that are not JSON-RPC, ...). ``str()`` is the whole
    story (with the agent's stderr tail); ``summary`` is one line without the stderr."""

    def __init__(self, error: BaseException, problems: Sequence[Problem]) -> None:
        self.error = error
        self.problems = list(problems)
        head, stderr_tail = _what_happened(error)
        tail = (stderr_tail or "").rstrip()
        if stderr_tail is not None and not tail:
            head += " (its stderr was empty)"
        if self.problems:
            more = len(self.problems) - 1
            when = "before that " if isinstance(error, ConnectionClosed) else ""
            head += f"; {when}{describe_problem(self.problems[0])}"
            if more:
                head += f" (and {more} more problem{'s' if more > 1 else ''})"
        first, newline, _rest = head.partition("\n")
        self.summary = first + (" (...)" if newline else "")
        """One line, without the stderr tail."""
        self.stderr_tail = tail
        """The agent's stderr tail ("" when it wrote none or there is no process)."""
        if tail:
            self.summary += " (its stderr is shown above)"
        super().__init__(head + (STDERR_HEADING + tail if tail else ""))
