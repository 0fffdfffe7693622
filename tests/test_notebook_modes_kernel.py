"""Modes from a cell, in a real kernel with the embedded agent (modes ``ask`` and ``plan``):
`%acp connect --mode`, `%acp mode`, `%acp config`, and the mode in every turn's header."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kernel_driver import Kernel, SharedKernel, kernel_for_test, new_cell_id


@pytest.fixture
def kern(
    shared_kernel: SharedKernel, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Kernel]:
    """The module's kernel, reset."""
    with kernel_for_test(shared_kernel, tmp_path, request) as k:
        yield k


def _connect(k: Kernel, tmp_path: Path, options: str = "") -> str:
    data = tmp_path / "agent-data"
    argv = f"{sys.executable} -m acp_notebook.agent --data-dir {data}"
    return k.run(f"%acp connect {options} -- {argv}").text()


def test_connect_mode_starts_every_session_in_it_and_the_turn_header_says_so(
    kern: Kernel, tmp_path: Path
) -> None:
    out = _connect(kern, tmp_path, "--mode plan")
    assert "every new session of 'python3' starts in mode 'plan'" in out
    text = kern.run("%%acp\n$ touch made.txt\n", new_cell_id()).text()
    assert "mode: Plan\n" in text  # the static transcript's header, after the prompt
    assert "(plan mode) I would run `touch made.txt`, and did not." in text
    assert not list(tmp_path.rglob("made.txt"))  # plan mode ran nothing
    # another session of the same agent starts in the mode too
    other = kern.run("%%acp --session second\n$ touch made.txt\n", new_cell_id()).text()
    assert "mode: Plan\n" in other and not list(tmp_path.rglob("made.txt"))
    headers = [m for m in kern.models.values() if "acp-turn-mode" in str(m.get("value", ""))]
    assert headers and all("Plan" in str(m["value"]) for m in headers)


def test_mode_shows_and_switches_the_mode_and_the_next_turn_asks_again(
    kern: Kernel, tmp_path: Path
) -> None:
    _connect(kern, tmp_path, "--mode plan")
    shown = kern.run("%acp mode").text()
    assert shown.splitlines() == ["acp: the mode is Plan", "    other modes: ask"]
    switched = kern.run("%acp mode Ask").text()  # a name, in any case
    assert switched.splitlines()[0] == "acp: the mode is now Ask"
    cell = kern.submit("%%acp\n$ touch made.txt\n", new_cell_id())
    [allow] = kern.wait_for(lambda: kern.buttons("Allow once"), "the card of the command")
    assert not list(tmp_path.rglob("made.txt"))  # ask mode: a card first, nothing ran
    kern.click(allow)
    kern.wait_for(lambda: cell.done, "the cell after the click")
    assert "mode: Ask\n" in cell.text() and list(tmp_path.rglob("made.txt"))
    config = kern.run("%acp config").text()
    assert config.strip() == "acp: mode [mode] (Mode): Ask; values: ask, plan"
    assert kern.run("%acp config mode plan").text().strip() == (
        "acp: mode [mode] (Mode): Plan; values: ask, plan"
    )


def test_an_unknown_mode_is_one_line_with_the_choices_and_sends_no_prompt(
    kern: Kernel, tmp_path: Path
) -> None:
    _connect(kern, tmp_path, "--mode yolo")
    refused = kern.run("%%acp\n$ touch made.txt\n", new_cell_id(), ok=False)
    [line] = [x for x in refused.text().splitlines() if "UsageError" in x]
    assert line == (
        "UsageError: a new session of 'python3' could not be put in mode 'yolo', so no"
        " prompt was sent: mode has no value 'yolo'; its values: ask, plan. Pick another with"
        " `%acp mode VALUE` (or `%acp connect ... --mode VALUE`)"
    )
    assert not list(tmp_path.rglob("made.txt"))
    bad = kern.run("%acp mode yolo", ok=False).text()
    assert "mode has no value 'yolo'; its values: ask, plan" in bad
    # the default session starts in a mode the agent has; other new sessions still refuse
    assert kern.run("%acp mode plan").text().startswith("acp: the mode is now Plan")
    text = kern.run("%%acp\n$ touch made.txt\n", new_cell_id()).text()
    assert "mode: Plan\n" in text and not list(tmp_path.rglob("made.txt"))
    other = kern.run("%%acp --session other\n$ touch made.txt\n", new_cell_id(), ok=False)
    assert "could not be put in mode 'yolo'" in other.text()
    unknown = kern.run("%acp config nosuch 1", ok=False).text()
    assert "UsageError: the session has no an option" not in unknown
    assert "the session has no option 'nosuch'; its options: mode" in unknown


def test_a_mode_for_one_new_session_leaves_the_agents_other_sessions_in_theirs(
    kern: Kernel, tmp_path: Path
) -> None:
    # review: `%acp mode X --session NEW` had become the mode of every later session
    _connect(kern, tmp_path, "--mode plan")
    typo = kern.run("%acp mode plam --session scratch", ok=False).text()
    assert "could not be put in mode 'plam'" in typo and "its values: ask, plan" in typo
    assert kern.run("%acp mode ask --session other").text().startswith("acp: the mode is now Ask")
    text = kern.run("%%acp --session third\n$ touch made.txt\n", new_cell_id()).text()
    assert "mode: Plan\n" in text and not list(tmp_path.rglob("made.txt"))
    default = kern.run("%%acp\n$ touch made.txt\n", new_cell_id()).text()
    assert "mode: Plan\n" in default and not list(tmp_path.rglob("made.txt"))


def test_a_resumed_session_is_put_in_the_agents_mode_too(kern: Kernel, tmp_path: Path) -> None:
    # review: %acp resume skipped --mode, and its prompts ran in the agent's own default
    _connect(kern, tmp_path)
    kern.run("%%acp\nhello\n", new_cell_id())
    listed = kern.run("%acp sessions").text()
    session_id = next(w for line in listed.splitlines() for w in line.split() if "-" in w)
    kern.run("%acp close")
    _connect(kern, tmp_path, "--mode plan")
    kern.run(f"%acp resume {session_id} --session back")
    text = kern.run("%%acp --session back\n$ touch made.txt\n", new_cell_id()).text()
    assert "mode: Plan\n" in text and not list(tmp_path.rglob("made.txt"))
