"""_record.Record without a kernel: the slot it displays, the snapshots it writes into it, and
the empty slot it leaves (the real kernel and agent: tests/test_static_live.py)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from acp_notebook._notebook import _record
from acp_notebook._notebook._record import (
    RUNNING_NOTE,
    SLOT_CLASS,
    Record,
    running_bundle,
    slot_bundle,
)

BUNDLE = {"text/plain": "> hi\n$ echo hi\nhi\n[exit 0]", "text/html": "<div>turn</div>"}


class _View:
    def static_bundle(self) -> dict[str, str]:
        return dict(BUNDLE)


class _IO:
    """Runs a coroutine function on a thread of its own, as the cell's I/O thread would."""

    def submit(
        self, fn: Callable[..., Coroutine[Any, Any, Any]], *args: Any
    ) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        thread = threading.Thread(target=lambda: future.set_result(asyncio.run(fn(*args))))
        thread.start()
        return future


class _Run:
    def __init__(self) -> None:
        self.view, self.io, self.changes, self.done = _View(), _IO(), 0, None


@pytest.fixture
def shown(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, str], str]]:
    """(display | update, bundle, display_id) in the order the record sent them."""
    calls: list[tuple[str, dict[str, str], str]] = []
    monkeypatch.setattr(
        _record, "display", lambda b, raw, display_id: calls.append(("display", b, display_id))
    )
    monkeypatch.setattr(
        _record,
        "update_display",
        lambda b, raw, display_id: calls.append(("update", b, display_id)),
    )
    return calls


def test_the_slot_holds_snapshots_while_running_and_ends_empty(
    shown: list[tuple[str, dict[str, str], str]],
) -> None:
    run = _Run()
    record = Record(run)  # type: ignore[arg-type]
    assert shown == [("display", slot_bundle(), record.display_id)]

    async def turn() -> None:
        run.changes = 1
        await record.snapshot()
        await record.snapshot()  # nothing changed since: nothing sent
        record.close()
        run.changes = 2
        await record.snapshot()  # closed: nothing sent

    asyncio.run(turn())
    assert shown[1:] == [
        ("update", running_bundle(BUNDLE), record.display_id),
        ("update", slot_bundle(), record.display_id),
    ]
    assert record.updates == 2


def test_a_running_transcript_is_headed_by_the_note() -> None:
    bundle = running_bundle(BUNDLE)
    assert bundle["text/plain"] == f"[{RUNNING_NOTE}]\n\n{BUNDLE['text/plain']}"
    assert bundle["text/html"].startswith(f'<div class="{SLOT_CLASS} acp-static-running">')
    assert bundle["text/html"].endswith(f"{BUNDLE['text/html']}</div>")
    assert slot_bundle() == {"text/plain": "", "text/html": f'<div class="{SLOT_CLASS}"></div>'}
