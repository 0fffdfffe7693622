"""``Notebook.start_cell`` (acp_notebook/_notebook/_start.py): the one command a ``%%acp`` cell
calls, over the embedded agent served in memory (no kernel, no display)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from _memory import memory_connector

from acp_notebook._notebook._errors import DEFAULT_SESSION, SessionBusy
from acp_notebook._notebook._owner import Notebook
from acp_notebook._notebook._start import CellRequest
from acp_notebook._policy._rules import Policy
from acp_notebook.agent import parse_scenario

# A turn that waits on a permission request: it stays in flight until someone answers.
ASKS = json.dumps(
    {
        "permission": {
            "title": "Run `make`?",
            "options": [
                {"optionId": "yes", "name": "Allow", "kind": "allow_once"},
                {"optionId": "no", "name": "Reject", "kind": "reject_once"},
            ],
            "subject": {"type": "command", "command": "make", "cwd": "/w"},
        }
    }
)
ENDS = json.dumps({"stopReason": "end_turn"})


def notebook(tmp_path: Path, scenario: str) -> Notebook:
    parsed = parse_scenario(scenario)
    nb = Notebook(
        connector=lambda argv, cwd, env: memory_connector(
            data_dir=tmp_path / "agent", scenario=parsed
        )
    )
    nb.set_panel_auto(make=False)
    nb.connect("mem", ["(in memory)"], str(tmp_path))
    return nb


@pytest.fixture
def nb(tmp_path: Path) -> Iterator[Notebook]:
    notebook_ = notebook(tmp_path, "\n".join([ASKS, ENDS]))
    yield notebook_
    notebook_.shutdown()


def test_a_cell_talks_in_the_default_session_or_in_its_agents(nb: Notebook) -> None:
    plain = nb.start_cell(CellRequest("cell:a", "hello"))
    named = nb.start_cell(CellRequest("cell:b", "hello", agent="mem"))
    assert (plain.session_name, named.session_name) == (DEFAULT_SESSION, "mem")
    assert plain.run.session is not named.run.session
    assert nb.runs == [plain.run, named.run]  # registered under their keys, not begun yet
    assert plain.run.done is None


def test_the_cells_policy_and_timeouts_reach_its_run(nb: Notebook) -> None:
    policy = Policy.from_globs(["make"], ["rm *"])
    shown = []
    started = nb.start_cell(
        CellRequest(
            "cell:a",
            "hello",
            policy=policy,
            timeout=7.0,
            unattended_timeout=3.0,
            panel_shows=lambda: shown.append(1) or True,
        )
    )
    run = started.run
    assert (run.policy, run.timeout, run.unattended_timeout) == (policy, 7.0, 3.0)
    assert run.panel_shows() is True and shown == [1]
    assert started.turn is run.turn and started.view is run.view


def test_a_session_with_a_turn_in_flight_is_busy_and_the_turn_goes_on(nb: Notebook) -> None:
    first = nb.start_cell(CellRequest("cell:a", "hello"))
    nb.begin_cell(first)
    with pytest.raises(SessionBusy) as caught:
        nb.start_cell(CellRequest("cell:b", "again"))
    assert caught.value.session == DEFAULT_SESSION
    assert not first.turn.done
    assert nb.runs == [first.run]  # the busy cell registered nothing


def test_running_a_cell_again_replaces_its_run_and_says_the_session_goes_on(
    tmp_path: Path,
) -> None:
    nb = notebook(tmp_path, ENDS)
    try:
        first = nb.start_cell(CellRequest("cell:a", "hello"))
        nb.begin_cell(first)
        assert first.run.done is not None
        first.run.done.result(timeout=30)
        again = nb.start_cell(CellRequest("cell:a", "hello again"))
        assert again.continues and again.run.session is first.run.session
        assert nb.runs == [again.run]
        assert again.turn.state.index == first.turn.state.index + 1
        # without a cell id (nbval), a key is an execution count: no telling it ran before
        nb.begin_cell(again)
        assert again.run.done is not None
        again.run.done.result(timeout=30)
        other = nb.start_cell(CellRequest("exec:1", "x"))
        nb.begin_cell(other)
        assert other.run.done is not None
        other.run.done.result(timeout=30)
        repeat = nb.start_cell(CellRequest("exec:1", "x"))
        assert repeat.run.session is other.run.session and not repeat.continues
    finally:
        nb.shutdown()
