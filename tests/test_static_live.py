"""A ``%%acp`` cell's saved record is written as the turn goes (real kernel, real agent).

What a front end saves while a turn runs, or keeps after its kernel died mid-turn, must be a
readable transcript marked as cut short; the final transcript replaces it when the turn ends.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from acp_notebook._notebook._record import RUNNING_NOTE, SLOT_CLASS
from tests.kernel_driver import Execution, Kernel, SharedKernel, kernel_for_test, new_cell_id

LONG_TURN = "%%acp --allow 'echo *' --allow 'sleep *'\n$ echo ran-first\n$ sleep 6\n"


@pytest.fixture
def k(
    shared_kernel: SharedKernel, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Kernel]:
    """The module's kernel, reset, with the embedded agent connected."""
    with kernel_for_test(shared_kernel, tmp_path, request) as kern:
        data = tmp_path / "agent-data"
        kern.run(f"%acp connect -- {sys.executable} -m acp_notebook.agent --data-dir {data}")
        yield kern


def _display_id(msg: dict[str, Any]) -> str | None:
    display_id: str | None = msg["content"].get("transient", {}).get("display_id")
    return display_id


def _slot(cell: Execution) -> dict[str, Any]:
    slots = [
        m
        for m in cell.of_type("display_data")
        if SLOT_CLASS in m["content"]["data"].get("text/html", "")
    ]
    assert len(slots) == 1, [m["content"]["data"] for m in cell.of_type("display_data")]
    return slots[0]


def _updates(cell: Execution, display_id: str) -> list[dict[str, Any]]:
    return [m for m in cell.of_type("update_display_data") if _display_id(m) == display_id]


def _saved(cell: Execution) -> list[dict[str, str]]:
    """The outputs a front end saves: display_data, each updated in place by display_id."""
    outputs: list[dict[str, str]] = []
    where: dict[str, list[int]] = {}
    for m in cell.messages:
        display_id = _display_id(m)
        if m["msg_type"] == "display_data":
            if display_id is not None:
                where.setdefault(display_id, []).append(len(outputs))
            outputs.append(m["content"]["data"])
        elif m["msg_type"] == "update_display_data" and display_id is not None:
            for index in where.get(display_id, []):
                outputs[index] = m["content"]["data"]
    return outputs


def test_transcript_is_saved_while_the_turn_runs_and_replaced_at_its_end(k: Kernel) -> None:
    cell = k.submit(LONG_TURN, new_cell_id())
    slot = k.wait_for(lambda: any(SLOT_CLASS in str(m["content"]) for m in cell.messages), "slot")
    slot = _slot(cell)
    display_id = _display_id(slot)
    assert display_id
    # the slot starts empty (what nbval sees, as updates are ignored there) ...
    assert slot["content"]["data"]["text/plain"] == ""

    # ... and before the turn ends it holds the transcript so far, marked as still running
    def running_with_output() -> list[dict[str, Any]]:
        return [
            m
            for m in _updates(cell, display_id)
            if "ran-first" in m["content"]["data"]["text/plain"]
        ]

    early = k.wait_for(running_with_output, "a running transcript with the first command")[0]
    assert not cell.done
    data = early["content"]["data"]
    assert data["text/plain"].startswith(f"[{RUNNING_NOTE}]")
    assert "$ sleep 6" in data["text/plain"]
    assert RUNNING_NOTE in data["text/html"] and "acp-turn-static" in data["text/html"]
    # a person reading a notebook saved now sees that record
    saved_now = _saved(cell)
    assert any(RUNNING_NOTE in out.get("text/plain", "") for out in saved_now)

    k.wait_for(lambda: cell.done, "the end of the turn")
    assert cell.error is None, cell.error
    # at the end: one final transcript, not marked; the slot emptied again
    saved = _saved(cell)
    transcripts = [out for out in saved if "acp-turn-static" in out.get("text/html", "")]
    assert len(transcripts) == 1, saved
    final = transcripts[0]["text/plain"]
    assert RUNNING_NOTE not in final
    assert "ran-first" in final and "$ sleep 6" in final
    assert _updates(cell, display_id)[-1]["content"]["data"]["text/plain"] == ""
    assert not any(RUNNING_NOTE in out.get("text/plain", "") for out in saved)


def test_bg_turn_slot_ends_with_the_final_transcript(k: Kernel) -> None:
    cell = k.run("%%acp --bg --allow 'echo *'\n$ echo in-the-background\n", new_cell_id())
    display_id = _display_id(_slot(cell))
    assert display_id

    def final_update() -> list[dict[str, Any]]:
        return [
            m
            for m in _updates(cell, display_id)
            if "in-the-background" in m["content"]["data"]["text/plain"]
            and RUNNING_NOTE not in m["content"]["data"]["text/plain"]
        ]

    last = k.wait_for(final_update, "the bg turn's final transcript in its slot")[-1]
    text = last["content"]["data"]["text/plain"]
    assert "in-the-background" in text and RUNNING_NOTE not in text
    # it carries its own cell's parent header, so it lands in that cell
    assert last["parent_header"]["msg_id"] == cell.msg_id


def test_record_updates_stay_few_while_a_terminal_streams(k: Kernel) -> None:
    """Measured: how many update_display_data one turn costs, with output every 0.1 s."""
    ticks = " ".join(str(i) for i in range(30))
    loop = f"for i in {ticks}; do echo tick $i; sleep 0.2; done"
    code = f"%%acp --allow 'echo *' --allow 'sleep *'\n$ {loop}\n"
    cell = k.run(code, new_cell_id())
    display_id = _display_id(_slot(cell))
    assert display_id
    updates = _updates(cell, display_id)
    starts = [m["header"]["date"] for m in cell.messages]
    seconds = (max(starts) - min(starts)).total_seconds()
    size = sum(len(str(m["content"])) for m in updates)
    print(f"record: {len(updates)} updates in {seconds:.1f} s, {size} chars")  # -s shows it
    # at most one per SNAPSHOT_INTERVAL (2 s) while running, plus the first and the emptying
    assert 2 <= len(updates) <= seconds / 2 + 3
