"""Real v1 agents driving the notebook's client terminals, through `%%acp` in a real kernel:
fast-agent (passthrough model, ``--shell``) runs its ``execute`` tool through ``terminal/create``
when the client offers terminals. The command is shown on the cell's card and runs only after
the click; its output and exit code are shown in the cell's terminal."""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

import acp_notebook
from tests.kernel_driver import Kernel, acp_kernel, new_cell_id
from tests.real_agents.test_v1_peers import _fast_agent_argv


@pytest.fixture
def kern(tmp_path: Path) -> Iterator[Kernel]:
    with acp_kernel(tmp_path) as k:
        yield k


def _connect(kern: Kernel, tmp_path: Path) -> None:
    argv = [*_fast_agent_argv(tmp_path / "fa-home"), "--shell"]
    out = kern.run(f"%acp connect -- {shlex.join(argv)}").text()
    assert "acp: protocol v1; " in out
    # the kernel runs this checkout's package (PYTHONPATH), not another copy
    where = kern.run("import acp_notebook; print(acp_notebook.__file__)").text().strip()
    assert Path(where).parent == Path(acp_notebook.__file__).parent


COMMAND = "echo hi there; touch ran.txt; exit 3"
BODY = '***CALL_TOOL execute {{"command":"' + COMMAND + '"}}'  # {{ }}: a cell interpolates


def _terminal_models(kern: Kernel) -> list[dict[str, Any]]:
    return [s for s in kern.models.values() if s.get("_model_name") == "TerminalModel"]


def test_fast_agent_runs_its_shell_tool_in_a_client_terminal_after_the_click(
    kern: Kernel, tmp_path: Path
) -> None:
    _connect(kern, tmp_path)
    work = tmp_path / "work"
    cell = kern.submit(f"%%acp -o t\n{BODY}\n", new_cell_id())
    # fast-agent asks first (its tool call), then the client asks for the command itself
    button = kern.wait_for(partial(kern.buttons, "Allow Once"), "fast-agent's allow-once button")
    kern.click(button[0])
    button = kern.wait_for(partial(kern.buttons, "Allow"), "the client terminal's allow button")
    assert not (work / "ran.txt").exists()  # nothing ran before the second click
    kern.click(button[0])
    kern.wait_for(partial(getattr, cell, "done"), "the cell to finish after the clicks")
    assert cell.error is None, cell.text()
    assert (work / "ran.txt").exists()
    line = shlex.join(["/bin/sh", "-lc", COMMAND])  # fast-agent's argv, as a shell sees it
    text = cell.text()
    assert f"Permission request: Run {line}\n  command: {line}\n  cwd: {work}" in text
    assert "decision: Approved: Allow - by a click" in text
    assert f"$ {line}  (in {work})\nhi there\n[exit 3]" in text
    [model] = _terminal_models(kern)  # the cell's live xterm terminal
    assert model["command"] == line and model["exit_status"]["exitCode"] == 3
    out = kern.run("print([(x.data, x.exit_status.exit_code) for x in t.terminals.values()])")
    assert out.text().strip() == "[(b'hi there\\r\\n', 3)]"


def test_fast_agent_command_rejected_on_the_card_never_runs(kern: Kernel, tmp_path: Path) -> None:
    _connect(kern, tmp_path)
    cell = kern.submit(f"%%acp -o t\n{BODY}\n", new_cell_id())
    button = kern.wait_for(partial(kern.buttons, "Allow Once"), "fast-agent's allow-once button")
    kern.click(button[0])  # the agent's own allow is not enough: the client asks again
    button = kern.wait_for(partial(kern.buttons, "Reject"), "the client terminal's reject")
    kern.click(button[0])
    kern.wait_for(partial(getattr, cell, "done"), "the cell to finish after the clicks")
    assert cell.error is None, cell.text()
    assert "decision: Rejected: Reject - by a click" in cell.text()
    assert not (tmp_path / "work" / "ran.txt").exists()
    assert _terminal_models(kern) == []
