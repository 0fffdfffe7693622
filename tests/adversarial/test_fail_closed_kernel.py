"""The fail-closed matrix in a real kernel: ways a permission request reaches a notebook
(Interrupt, ``--timeout``, ``%acp cancel``, a card whose cell has ended, kernel shutdown,
policies) and, for each, what the hostile agent was answered and that nothing ran."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.kernel_driver import Kernel, acp_kernel, new_cell_id

HOSTILE = Path(__file__).parent / "agents" / "hostile.py"
CANCELLED = {"outcome": {"outcome": "cancelled"}}


def received(work: Path) -> list[dict[str, Any]]:
    path = work / "received.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def answers(work: Path) -> list[dict[str, Any]]:
    return [m for m in received(work) if "method" not in m and m.get("id", 0) >= 100]


def pwned(work: Path) -> list[str]:
    return sorted(p.name for p in work.glob("PWNED-*"))


@pytest.fixture
def work(tmp_path: Path) -> Path:
    path = tmp_path / "agent-work"
    path.mkdir()
    return path


@contextmanager
def hostile_kernel(
    tmp_path: Path, work: Path, mode: str, idle_delay: str = "0.3"
) -> Iterator[Kernel]:
    """A kernel with the hostile agent connected in ``mode``."""
    with acp_kernel(tmp_path) as k:
        k.run(f"%env IDLE_DELAY={idle_delay}")
        k.run(f"%acp connect -- {sys.executable} {HOSTILE} {mode} {work}")
        yield k


def interrupt_when_waiting(k: Kernel, code: str) -> Any:
    cell = k.submit(code, new_cell_id())
    k.wait_for(k.cell_waiting, "the cell to await its turn")
    k.km.interrupt_kernel()
    k.wait_for(lambda: cell.done, "the cell to end after the interrupt")
    return cell


def live_buttons(k: Kernel) -> list[str]:
    return [
        cid
        for label in ("Allow once", "Always allow", "Allow", "Reject")
        for cid in k.buttons(label)
        if not k.models[cid].get("disabled")
    ]


def test_interrupt_then_a_request_under_allow_star_is_cancelled(tmp_path: Path, work: Path) -> None:
    with hostile_kernel(tmp_path, work, "ask_after_cancel") as k:
        interrupt_when_waiting(k, "%%acp --allow '*' -o t\ngo\n")
        k.wait_for(lambda: answers(work), "our answer to the request after the cancel")
        out = k.run("print([(d.decided_by, d.option_id) for d in t.permissions])").text()
    assert answers(work)[0]["result"] == CANCELLED
    assert "('cancel', None)" in out
    assert pwned(work) == []


def test_a_card_whose_cell_has_ended_can_never_approve(tmp_path: Path, work: Path) -> None:
    """The agent asks after the cancel and never goes idle: the cell ends by itself after its
    wait; no live button may be left that a click could use to approve."""
    with hostile_kernel(tmp_path, work, "ask_after_cancel", idle_delay="never") as k:
        interrupt_when_waiting(k, "%%acp -o t\ngo\n")
        k.wait_for(lambda: answers(work), "our answer to the request after the cancel")
        k.run("pass")  # let the kernel publish what it had queued
        for button in live_buttons(k):  # whatever a person could still click
            k.click(button)
        k.run("import time; time.sleep(0.5)")
    assert answers(work)[0]["result"] == CANCELLED
    assert pwned(work) == []


def test_timeout_answers_cancelled_and_then_cancels_the_turn(tmp_path: Path, work: Path) -> None:
    with hostile_kernel(tmp_path, work, "ask_then_wait") as k:
        k.run("%%acp --timeout 0.5 -o t\ngo\n")
        out = k.run("print(t.stop_reason, [d.decided_by for d in t.permissions])").text()
    methods = [
        m.get("method") or ("answer" if m.get("id", 0) >= 100 else "") for m in received(work)
    ]
    assert answers(work)[0]["result"] == CANCELLED
    assert "session/cancel" in methods, methods
    assert methods.index("answer") < methods.index("session/cancel")
    assert "cancelled ['timeout']" in out
    assert pwned(work) == []


def test_acp_cancel_answers_a_pending_request(tmp_path: Path, work: Path) -> None:
    with hostile_kernel(tmp_path, work, "ask_then_wait") as k:
        cell = k.submit("%%acp --bg -o t\ngo\n", new_cell_id())
        k.wait_for(lambda: k.buttons("Allow once"), "the card")
        k.wait_for(lambda: cell.done, "the --bg cell to return")
        k.run("%acp cancel")
        k.wait_for(lambda: answers(work), "our answer")
        k.run("import time\nwhile not t.done: time.sleep(0.05)")
    assert answers(work)[0]["result"] == CANCELLED
    assert pwned(work) == []


def test_policy_never_grants_allow_always(tmp_path: Path, work: Path) -> None:
    """Under ``--allow '*'``, a request whose only allow option is ``allow_always`` goes to a
    person (here nobody answers before the timeout)."""
    with hostile_kernel(tmp_path, work, "allow_always_only") as k:
        k.run("%%acp --allow '*' --timeout 1 -o t\ngo\n")
        out = k.run("print([d.decided_by for d in t.permissions])").text()
    assert "['timeout']" in out
    assert answers(work)[0]["result"] == CANCELLED
    assert pwned(work) == []


def test_kernel_shutdown_with_a_pending_request_runs_nothing(tmp_path: Path, work: Path) -> None:
    with hostile_kernel(tmp_path, work, "ask_then_wait") as k:
        k.submit("%%acp\ngo\n", new_cell_id())
        k.wait_for(lambda: k.buttons("Allow once"), "the card")
        k.km.shutdown_kernel(now=False)
    assert all(a["result"] == CANCELLED for a in answers(work))
    assert pwned(work) == []
