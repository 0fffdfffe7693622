"""Real v1 agents driving the notebook's client terminals, through `%%acp` in a real kernel:
fast-agent (passthrough model, ``--shell``) runs its ``execute`` tool through ``terminal/create``
when the client offers terminals. The command is shown on the cell's card and runs only after
the click; its output and exit code are shown in the cell's terminal."""

from __future__ import annotations

import os
import shlex
import sys
from functools import partial
from pathlib import Path
from typing import Any

import pytest

import acp_notebook
from tests.kernel_driver import Kernel, new_cell_id
from tests.real_agents.test_v1_peers import _fast_agent_argv
from tests.test_terminals import wait_gone


def _connect(kern: Kernel, tmp_path: Path) -> None:
    # (no MCP server: its shell tool is the subject here)
    argv = [*_fast_agent_argv(tmp_path / "fa-home", mcp=False), "--shell"]
    out = kern.run(f"%acp connect -- {shlex.join(argv)}").text()
    assert "acp: protocol v1; " in out
    # the kernel runs this checkout's package (PYTHONPATH), not another copy
    where = kern.run("import acp_notebook; print(acp_notebook.__file__)").text().strip()
    assert Path(where).parent == Path(acp_notebook.__file__).parent


COMMAND = "echo hi there; touch ran.txt; exit 3"
BODY = '***CALL_TOOL execute {{"command":"' + COMMAND + '"}}'  # {{ }}: a cell interpolates


def enabled(kern: Kernel, label: str) -> list[str]:
    """The shown buttons with this label that can still be clicked (the cell's card, and the
    side panel's copy of it, are disabled once the request is decided)."""
    return [b for b in kern.buttons(label) if not kern.models[b].get("disabled")]


def _terminal_models(kern: Kernel) -> list[dict[str, Any]]:
    return [s for s in kern.models.values() if s.get("_model_name") == "TerminalModel"]


def test_fast_agent_runs_its_shell_tool_in_a_client_terminal_after_the_click(
    kern: Kernel, tmp_path: Path
) -> None:
    _connect(kern, tmp_path)
    work = tmp_path / "work"
    cell = kern.submit(f"%%acp -o t\n{BODY}\n", new_cell_id())
    # fast-agent asks first (its tool call, whose command the card shows); the client terminal
    # it then creates runs exactly that command (`/bin/sh -lc COMMAND`): one allow is enough
    button = kern.wait_for(partial(kern.buttons, "Allow Once"), "fast-agent's allow-once button")
    assert not (work / "ran.txt").exists()  # nothing ran before the click
    kern.click(button[0])
    kern.wait_for(partial(getattr, cell, "done"), "the cell to finish after the click")
    assert cell.error is None, cell.text()
    assert (work / "ran.txt").exists()
    line = shlex.join(["/bin/sh", "-lc", COMMAND])  # fast-agent's argv, as a shell sees it
    text = cell.text()
    assert f"  command: {COMMAND}\n" in text  # on fast-agent's own card
    assert "decision: Approved: Allow Once - by a click" in text
    assert f"$ {line}  (in {work})\nhi there\n[exit 3]" in text
    assert kern.buttons("Allow") == []  # the client never asked a second time
    [model] = _terminal_models(kern)  # the cell's live xterm terminal
    assert model["command"] == line and model["exit_status"]["exitCode"] == 3
    out = kern.run("print([(x.data, x.exit_status.exit_code) for x in t.terminals.values()])")
    assert out.text().strip() == "[(b'hi there\\r\\n', 3)]"
    out = kern.run("print([d.decided_by for d in t.permissions])")
    assert out.text().strip() == "['click', 'earlier']"  # the command: by the agent's allow


def test_fast_agent_command_rejected_on_the_card_never_runs(kern: Kernel, tmp_path: Path) -> None:
    _connect(kern, tmp_path)
    cell = kern.submit(f"%%acp -o t\n{BODY}\n", new_cell_id())
    button = kern.wait_for(partial(kern.buttons, "Reject Once"), "fast-agent's reject button")
    kern.click(button[0])
    kern.wait_for(partial(getattr, cell, "done"), "the cell to finish after the click")
    assert cell.error is None, cell.text()
    assert "decision: Rejected: Reject Once - by a click" in cell.text()
    assert not (tmp_path / "work" / "ran.txt").exists()
    assert _terminal_models(kern) == []


SDK_AGENT = Path(__file__).with_name("sdk_agent.py")


def _connect_sdk(kern: Kernel) -> None:
    pytest.importorskip("acp")  # agent-client-protocol, pinned in the `test` extra
    out = kern.run(f"%acp connect -- {shlex.join([sys.executable, str(SDK_AGENT)])}").text()
    assert "acp: protocol v1; " in out


def test_python_sdk_agent_write_shows_a_diff_and_writes_only_after_the_click(
    kern: Kernel, tmp_path: Path
) -> None:
    notes = tmp_path / "work" / "notes.txt"
    notes.write_text("one\nTWO\n")
    _connect_sdk(kern)
    cell = kern.submit("%%acp -o t\nfiles\n", new_cell_id())
    button = kern.wait_for(partial(enabled, kern, "Allow"), "the write's allow button")
    assert notes.read_text() == "one\nTWO\n"  # shown, not written
    kern.click(button[0])
    kern.wait_for(lambda: notes.read_text() != "one\nTWO\n", "the write after the click")
    # the read is inside the session's folder: nobody is asked; the command is. Every new
    # Allow is clicked: the side panel may still show a copy of the write's card for a moment
    # after the click (clicking a decided request's copy does nothing), and the command's card
    # has its own copy there too (the first click decides)
    clicked = set(kern.buttons("Allow"))  # the write's (the cell's card, the panel's copy)

    def allow_the_command() -> bool:
        for b in enabled(kern, "Allow"):
            if b not in clicked:
                clicked.add(b)
                kern.click(b)
        return cell.done

    kern.wait_for(allow_the_command, "the cell to finish once the command is allowed")
    assert cell.error is None, cell.text()
    assert notes.read_text() == "one\ntwo\nthree\n"
    text = cell.text()
    print(text)
    assert f"Permission request: Write {notes}" in text
    assert "acp-diff-del" in cell.html() and "acp-diff-add" in cell.html()
    assert (
        "offered terminal=True; wrote notes.txt; line 2 is 'two'; "
        "command exit 4: 'from the sdk'" in text
    )
    assert "$ sh -c 'echo from the sdk; exit 4'" in text
    [model] = _terminal_models(kern)
    assert model["exit_status"]["exitCode"] == 4


def test_python_sdk_agent_rejected_write_leaves_the_file_untouched(
    kern: Kernel, tmp_path: Path
) -> None:
    notes = tmp_path / "work" / "notes.txt"
    original = b"one\r\nTWO \xff\n"
    notes.write_bytes(original)
    _connect_sdk(kern)
    # the write is rejected by a click, the command by policy
    cell = kern.submit("%%acp --deny 'sh *'\nfiles\n", new_cell_id())
    button = kern.wait_for(partial(kern.buttons, "Reject"), "the write's reject button")
    kern.click(button[0])
    kern.wait_for(partial(getattr, cell, "done"), "the cell to finish after the click")
    assert cell.error is None, cell.text()
    assert notes.read_bytes() == original
    text = cell.text()
    assert "write refused (-32001)" in text and "command refused (-32001)" in text
    assert "decision: Rejected: Reject - by policy --deny 'sh *'" in text
    assert _terminal_models(kern) == []


def _pids_running(argv: list[str]) -> list[int]:
    """Processes whose command line is exactly ``argv``."""
    wanted = "\0".join(argv) + "\0"
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if Path(f"/proc/{entry}/cmdline").read_text() == wanted:
                    found.append(int(entry))
            except OSError:
                continue
    return found


@pytest.mark.own_kernel
def test_interrupt_kills_the_client_terminals_command(kern: Kernel, tmp_path: Path) -> None:
    _connect(kern, tmp_path)
    sleeper = ["sleep", "307"]  # (a number nothing else on the machine sleeps for)
    body = '***CALL_TOOL execute {{"command":"' + shlex.join(sleeper) + '"}}'
    cell = kern.submit(f"%%acp -o t\n{body}\n", new_cell_id())
    kern.click(kern.wait_for(partial(kern.buttons, "Allow Once"), "fast-agent's allow")[0])
    [pid] = kern.wait_for(partial(_pids_running, sleeper), "the command to run")
    pgid = os.getpgid(pid)
    kern.wait_for(kern.cell_waiting, "the cell to await its turn (with its own SIGINT handler)")
    kern.km.interrupt_kernel()
    kern.wait_for(partial(getattr, cell, "done"), "the cell to finish after the interrupt")
    assert wait_gone(pgid) == []
    assert _pids_running(sleeper) == []
