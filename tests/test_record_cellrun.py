"""_notebook._record over a real turn: a cell's saved record (the slot and its updates).

tests/test_record.py drives `Record` with a stand-in run; here the run is a real `CellRun`
over the embedded agent in memory, and IPython's ``display`` and ``update_display`` are
replaced by recorders, so what the record sends is seen directly."""

from __future__ import annotations

import asyncio
import html
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from _memory import memory_connector
from _runs import start_run

from acp_notebook._notebook import _record
from acp_notebook._notebook._cells import CellRun
from acp_notebook._notebook._owner import Notebook
from acp_notebook._notebook._record import (
    RUNNING_CLASS,
    RUNNING_NOTE,
    SLOT_CLASS,
    Record,
    running_bundle,
    slot_bundle,
)
from acp_notebook.agent import parse_scenario

SCENARIO = "\n".join(
    json.dumps(step)
    for step in [
        {
            "permission": {
                "title": "Run `make`?",
                "options": [
                    {"optionId": "yes", "name": "Allow", "kind": "allow_once"},
                    {"optionId": "no", "name": "Reject", "kind": "reject_once"},
                ],
                "subject": {"type": "command", "command": "make", "cwd": "/w"},
            }
        },
        {
            "update": {
                "sessionUpdate": "message",
                "messageId": "m",
                "role": "agent",
                "content": {"type": "text", "text": "all built"},
            }
        },
        {"stopReason": "end_turn"},
    ]
)


class Sent:
    """What the record displayed (``display``) and updated (``update_display``)."""

    def __init__(self) -> None:
        self.displayed: list[tuple[dict[str, str], str]] = []
        self.updated: list[tuple[dict[str, str], str]] = []

    def display(self, bundle: dict[str, str], *, raw: bool, display_id: str) -> None:
        assert raw
        self.displayed.append((bundle, display_id))

    def update_display(self, bundle: dict[str, str], *, raw: bool, display_id: str) -> None:
        assert raw
        self.updated.append((bundle, display_id))


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> Sent:
    recorder = Sent()
    monkeypatch.setattr(_record, "display", recorder.display)
    monkeypatch.setattr(_record, "update_display", recorder.update_display)
    return recorder


@pytest.fixture
def nb(tmp_path: Path) -> Iterator[Notebook]:
    scenario = parse_scenario(SCENARIO)
    notebook = Notebook(
        connector=lambda argv, cwd, env: memory_connector(
            data_dir=tmp_path / "agent", scenario=scenario
        )
    )
    notebook.set_panel_auto(make=False)
    notebook.connect("mem", ["(in memory)"], str(tmp_path))
    yield notebook
    notebook.shutdown()


def start(nb: Notebook) -> CellRun:
    return start_run(nb, "build it", key="cell:r1")


def wait_asked(run: CellRun) -> None:
    async def first() -> None:
        with anyio.fail_after(30):
            while not run.asked:
                await anyio.sleep(0.005)  # the agent's request is on its way

    run.io.call(first)


def allow_and_finish(run: CellRun) -> None:
    wait_asked(run)
    run.cards[0].buttons[0].click()  # "Allow", in the cell
    assert run.done is not None
    run.done.result(30)


def test_the_bundles() -> None:
    assert slot_bundle() == {"text/plain": "", "text/html": f'<div class="{SLOT_CLASS}"></div>'}
    running = running_bundle({"text/plain": "so far", "text/html": "<p>so far</p>"})
    assert running["text/plain"] == f"[{RUNNING_NOTE}]\n\nso far"
    assert running["text/html"].startswith(f'<div class="{SLOT_CLASS} {RUNNING_CLASS}">')
    assert running["text/html"].endswith("<p>so far</p></div>")
    assert html.escape(RUNNING_NOTE) in running["text/html"]


def test_a_record_starts_as_an_empty_slot_of_its_own(nb: Notebook, sent: Sent) -> None:
    run = start(nb)
    one, two = Record(run), Record(run)
    assert [bundle for bundle, _ in sent.displayed] == [slot_bundle(), slot_bundle()]
    assert [i for _, i in sent.displayed] == [one.display_id, two.display_id]
    assert one.display_id != two.display_id
    assert sent.updated == []
    allow_and_finish(run)


def test_a_snapshot_is_written_only_after_a_change(nb: Notebook, sent: Sent) -> None:
    run = start(nb)
    wait_asked(run)
    record = Record(run)

    async def twice() -> None:
        await record.snapshot()
        await record.snapshot()

    asyncio.run(twice())
    assert record.updates == 1
    [(bundle, display_id)] = sent.updated
    assert display_id == record.display_id
    assert bundle["text/plain"].startswith(f"[{RUNNING_NOTE}]")
    assert "make" in bundle["text/plain"]
    allow_and_finish(run)
    asyncio.run(record.snapshot())
    assert record.updates == 2
    assert "all built" in sent.updated[-1][0]["text/plain"]


def test_close_empties_the_slot_once_and_stops_snapshots(nb: Notebook, sent: Sent) -> None:
    run = start(nb)
    wait_asked(run)
    record = Record(run)
    record.close()
    record.close()
    assert sent.updated == [(slot_bundle(), record.display_id)]
    allow_and_finish(run)  # something changed, but the record is closed
    asyncio.run(record.snapshot())
    assert record.updates == 1


def test_a_background_record_keeps_the_final_transcript(
    nb: Notebook, sent: Sent, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_record, "SNAPSHOT_INTERVAL", 0.01)
    run = start(nb)
    wait_asked(run)

    async def main() -> Record:
        record = Record(run, bg=True)
        record.start()
        await asyncio.sleep(0)
        await asyncio.to_thread(allow_and_finish, run)
        assert record._task is not None
        await asyncio.wait_for(record._task, 30)
        return record

    record = asyncio.run(main())
    final = sent.updated[-1][0]
    assert not final["text/plain"].startswith(f"[{RUNNING_NOTE}]")  # the end, not "so far"
    assert "all built" in final["text/plain"]
    updates = record.updates
    record.close()  # the slot already holds the end: nothing more is sent
    assert record.updates == updates


def test_a_cell_record_task_is_cancelled_by_close(nb: Notebook, sent: Sent) -> None:
    run = start(nb)
    wait_asked(run)

    async def main() -> asyncio.Task[Any]:
        record = Record(run)
        record.start()
        async with asyncio.timeout(30):  # its first snapshot is written: the task now waits
            while record.updates < 1:
                await asyncio.sleep(0.005)
        record.close()
        assert record._task is not None
        with pytest.raises(asyncio.CancelledError):
            await record._task
        return record._task

    task = asyncio.run(main())
    assert task.cancelled()
    assert sent.updated[-1][0] == slot_bundle()
    allow_and_finish(run)
