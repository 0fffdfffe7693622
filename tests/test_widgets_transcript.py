"""A turn's static transcript (acp_notebook/_widgets/_transcript.py): which terminals keep their
output, which only their header, and what is counted; the elapsed times a footer reads."""

from __future__ import annotations

from acp_notebook._state import TerminalState
from acp_notebook._widgets._transcript import (
    MAX_LIVE_TERMINALS,
    STATIC_LISTED_TERMINALS,
    StaticTerminals,
    _elapsed,
    terminal_transcript,
)


def terminal(n: int) -> TerminalState:
    term = TerminalState(f"t{n}")
    term.command, term.cwd = f"echo {n}", "/w"
    term.append(f"output {n}\n".encode())
    return term


def test_static_terminals_keep_output_then_headers_then_only_a_count() -> None:
    shown = StaticTerminals()
    extra = 3
    total = MAX_LIVE_TERMINALS + STATIC_LISTED_TERMINALS + extra
    kept = [shown.next(terminal(n)) for n in range(total)]
    with_output = kept[:MAX_LIVE_TERMINALS]
    headers = kept[MAX_LIVE_TERMINALS : MAX_LIVE_TERMINALS + STATIC_LISTED_TERMINALS]
    assert all(t is not None and "output" in t[0] for t in with_output)
    assert all(
        t is not None and "output" not in t[0] and t[0].startswith("$ echo") for t in headers
    )
    assert kept[-extra:] == [None] * extra
    notes = shown.notes()
    assert notes[0].startswith(f"… the output of {STATIC_LISTED_TERMINALS + extra:,} more")
    assert notes[1].startswith(f"… and {extra:,} more terminals not saved")


def test_a_few_terminals_leave_no_note() -> None:
    shown = StaticTerminals()
    assert shown.next(terminal(1)) == terminal_transcript(terminal(1))
    assert shown.notes() == []


def test_elapsed_times_read_in_the_largest_units() -> None:
    assert [_elapsed(s) for s in (-1, 59.9, 61, 3599, 3661)] == [
        "0 s",
        "59 s",
        "1 min 1 s",
        "59 min 59 s",
        "1 h 1 min",
    ]
