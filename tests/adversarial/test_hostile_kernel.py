"""Hostile agents in a real kernel: an agent that dies mid-turn, and one whose title, version
and stderr carry terminal escapes and bidi overrides."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tests.adversarial.test_fail_closed_kernel import HOSTILE
from tests.kernel_driver import Execution, Kernel, SharedKernel, kernel_for_test

RAW = ("\x1b", "\u202e", "\u202c", "\x07")


def run_failing(k: Kernel, code: str) -> tuple[dict[str, Any], Execution]:
    """Run a cell that should fail; its execute_reply (what Run All looks at) and record."""
    execution = k.submit(code)
    k.wait_for(lambda: execution.done, f"idle after {code[:40]!r}")
    while True:
        reply = k.kc.get_shell_msg(timeout=30)
        if reply["parent_header"].get("msg_id") == execution.msg_id:
            return reply["content"], execution


def test_an_agent_dying_mid_turn_ends_the_cell_with_one_line(
    shared_kernel: SharedKernel, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    work = tmp_path / "w"
    work.mkdir()
    with kernel_for_test(shared_kernel, tmp_path, request) as k:
        k.run(f"%acp connect -- {sys.executable} {HOSTILE} die_mid_turn {work}")
        error, cell = run_failing(k, "%%acp -o t\ngo\n")
        status = k.run("%acp status").text()
        done = k.run("print(t.done, t.state.ended_by)").text()
    assert error["status"] == "error" and error["ename"] == "UsageError"
    assert error["evalue"] == (
        "%%acp: the turn failed: the agent exited with code 3; its last stderr line: fatal: out"
        " of tokens (`%acp status` shows more, `%acp connect` starts a new agent)"
    )
    # No traceback: IPython shows a UsageError as its one line.
    assert "ExceptionGroup" not in cell.text() and "Traceback" not in cell.text()
    # The view, its saved transcript, and %acp status say the agent exited, not "running".
    assert "ended: the agent exited with code 3" in cell.text()
    assert "ended: the agent exited with code 3" in cell.html()
    assert "(running)" not in cell.text() + cell.html()
    assert "h1, ended (the agent exited with code 3)" in status
    assert "exited (exit 3)"  # _exit.exit_label in status
    assert "True the agent exited with code 3" in done


def test_hidden_characters_are_visible_in_every_plain_text_output(
    shared_kernel: SharedKernel, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    work = tmp_path / "w"
    work.mkdir()
    with kernel_for_test(shared_kernel, tmp_path, request) as k:
        k.panel_view = False  # no front end holds the panel: `%acp panel` prints it as text
        connect = k.run(f"%acp connect -- {sys.executable} {HOSTILE} control_chars {work}")
        error, _cell = run_failing(k, "%%acp\ngo\n")
        outputs = {
            "connect": connect.text(),
            "turn failed": error.get("evalue", ""),
            "status": k.run("%acp status").text(),
            "log": k.run("%acp log -n 50").text(),
            "panel": k.run("%acp panel").text(),
        }
    for where, text in outputs.items():
        assert text, where
        for ch in RAW:
            assert ch not in text, f"{where} prints {ch!r} raw: {text!r}"
    assert "U+202E" in outputs["connect"] and "ESC" in outputs["connect"]
    assert "U+202E" in outputs["turn failed"] and "fatal:" in outputs["turn failed"]
    assert "U+202E" in outputs["status"]
