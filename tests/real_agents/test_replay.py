"""A trace exported from a real agent's session replays through `acp-notebook-agent --replay`
to the same transcript: pydantic-acp (a real v1 agent, pinned in the `test` extra) recorded
with `%acp connect --trace`, a turn with a card clicked, exported with `%acp log --export`,
then played back to the same cell in a kernel of its own."""

from __future__ import annotations

import re
import shlex
import sys
from functools import partial
from pathlib import Path

import pytest

from acp_notebook._connection._trace import read_trace
from tests.kernel_driver import Kernel, acp_kernel, new_cell_id
from tests.real_agents.test_v1_peers import PYDANTIC_AGENT

CELL = "%%acp\nadd, then delete a file\n"


def _turn_with_a_click(k: Kernel) -> str:
    cell = k.submit(CELL, new_cell_id())
    button = k.wait_for(partial(k.buttons, "Allow"), "the allow button of delete_file")
    k.click(button[0])
    k.wait_for(partial(getattr, cell, "done"), "the cell to finish after the click")
    assert cell.error is None, cell.text()
    return cell.text()


def _masked(text: str, *roots: Path) -> str:
    for root in roots:
        text = text.replace(str(root), "ROOT")
    return re.sub(r"pid \d+", "pid PID", text)


def test_a_real_v1_agents_trace_replays_to_the_same_transcript(tmp_path: Path) -> None:
    pytest.importorskip("pydantic_acp")  # the `test` extra pins it
    trace = tmp_path / "pydantic.jsonl"
    recorded, replayed = tmp_path / "recorded", tmp_path / "replayed"
    recorded.mkdir()
    replayed.mkdir()
    with acp_kernel(recorded) as k:
        argv = shlex.join([sys.executable, str(PYDANTIC_AGENT)])
        out = k.run(f"%acp connect --trace --name real -- {argv}").text()
        assert "Pydantic ACP 1.10.0" in out and "acp: protocol v1; " in out
        first = _masked(_turn_with_a_click(k), recorded)
        k.run(f"%acp log --export {trace} --name real")
    assert (recorded / "work" / "deleted.txt").exists()  # the real tool ran after the click
    methods = [f.message().get("method") for f in read_trace(trace).frames]
    assert "session/request_permission" in methods and methods[0] == "initialize"
    with acp_kernel(replayed) as k:
        argv = shlex.join([sys.executable, "-m", "acp_notebook.agent", "--replay", str(trace)])
        out = k.run(f"%acp connect --name real -- {argv}").text()
        assert "Pydantic ACP 1.10.0" in out and "acp: protocol v1; " in out
        second = _masked(_turn_with_a_click(k), replayed, recorded)
    assert second == first
    assert "All done: I added and I deleted." in second
    assert not (replayed / "work" / "deleted.txt").exists()  # a replay runs nothing
