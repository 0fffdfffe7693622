"""The fail-closed matrix in a real kernel: ways a permission request reaches a notebook
(Interrupt, ``--timeout``, ``%acp cancel``, a card whose cell has ended, kernel shutdown,
policies) and, for each, what the hostile agent was answered and that nothing ran."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.adversarial.test_fail_closed_client import HOSTILE, answers, pwned, received
from tests.kernel_driver import Kernel, SharedKernel, kernel_for_test, new_cell_id

CANCELLED = {"outcome": {"outcome": "cancelled"}}


@pytest.fixture
def work(tmp_path: Path) -> Path:
    path = tmp_path / "agent-work"
    path.mkdir()
    return path


@contextmanager
def hostile_kernel(
    shared: SharedKernel,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    work: Path,
    mode: str,
    idle_delay: str = "0.3",
) -> Iterator[Kernel]:
    """A kernel with the hostile agent connected in ``mode``: the module's, reset, or one of
    its own for a row marked ``own_kernel`` (it interrupts the kernel or shuts it down)."""
    with kernel_for_test(shared, tmp_path, request) as k:
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


def _decided_by(k: Kernel) -> str:
    return k.run("print([d.decided_by for d in t.permissions])").text().strip()


def interrupt_then_ask_under_allow_star(k: Kernel, work: Path) -> str:
    interrupt_when_waiting(k, "%%acp --allow '*' -o t\ngo\n")
    k.wait_for(lambda: answers(work), "our answer to the request after the cancel")
    return _decided_by(k)


def click_a_card_whose_cell_has_ended(k: Kernel, work: Path) -> str:
    """The agent asks after the cancel and never goes idle: the cell ends by itself after its
    wait. Whatever button is left, a person clicks it."""
    interrupt_when_waiting(k, "%%acp -o t\ngo\n")
    k.wait_for(lambda: answers(work), "our answer to the request after the cancel")
    k.run("pass")  # let the kernel publish what it had queued
    left = live_buttons(k)
    for button in left:
        k.click(button)
    k.settle()  # the clicks (if any) are handled, and whatever they queued has run
    assert left == [], "a card of an ended cell still has live buttons"
    return _decided_by(k)


def let_the_timeout_pass(k: Kernel, work: Path) -> str:
    k.run("%%acp --timeout 0.5 -o t\ngo\n")
    assert "cancelled" in k.run("print(t.stop_reason)").text()  # the turn ended, cancelled
    methods = [
        m.get("method") or ("answer" if m.get("id", 0) >= 100 else "") for m in received(work)
    ]
    assert "session/cancel" in methods, methods
    assert methods.index("answer") < methods.index("session/cancel")
    return _decided_by(k)


def run_acp_cancel(k: Kernel, work: Path) -> str:
    cell = k.submit("%%acp --bg -o t\ngo\n", new_cell_id())
    k.wait_for(lambda: k.buttons("Allow once"), "the card")
    k.wait_for(lambda: cell.done, "the --bg cell to return")
    k.run("%acp cancel")
    k.wait_for(lambda: answers(work), "our answer")
    k.run("import time\nwhile not t.done: time.sleep(0.05)")
    return _decided_by(k)


def allow_star_with_only_allow_always(k: Kernel, work: Path) -> str:
    """The policy never grants a persistent allow: a person is asked (nobody answers here)."""
    k.run("%%acp --allow '*' --timeout 1 -o t\ngo\n")
    return _decided_by(k)


def allow_star_with_duplicate_ids(k: Kernel, work: Path) -> str:
    k.run("%%acp --allow '*' -o t\ngo\n")
    assert live_buttons(k) == []
    return _decided_by(k)


def shut_the_kernel_down(k: Kernel, work: Path) -> None:
    """The kernel is gone afterwards: only the agent's side can be checked."""
    k.submit("%%acp\ngo\n", new_cell_id())
    k.wait_for(lambda: k.buttons("Allow once"), "the card")
    k.km.shutdown_kernel(now=False)


ROWS = [
    # (path, agent mode, IDLE_DELAY, what the notebook does, how the decision log says it ended)
    (
        "interrupt, then a request under --allow '*'",
        "ask_after_cancel",
        "0.3",
        interrupt_then_ask_under_allow_star,
        "['cancel']",
    ),
    (
        "a card whose cell has ended",
        "ask_after_cancel",
        "never",
        click_a_card_whose_cell_has_ended,
        "['cancel']",
    ),
    ("--timeout", "ask_then_wait", "0.3", let_the_timeout_pass, "['timeout']"),
    ("%acp cancel", "ask_then_wait", "0.3", run_acp_cancel, "['cancel']"),
    (
        "--allow '*' and only allow_always",
        "allow_always_only",
        "0.3",
        allow_star_with_only_allow_always,
        "['timeout']",
    ),
    (
        "--allow '*' and duplicate option ids",
        "duplicate_ids",
        "0.3",
        allow_star_with_duplicate_ids,
        "['invalid']",
    ),
    ("kernel shutdown", "ask_then_wait", "0.3", shut_the_kernel_down, None),
]


#: the rows that interrupt the kernel or shut it down
OWN_KERNEL = (
    interrupt_then_ask_under_allow_star,
    click_a_card_whose_cell_has_ended,
    shut_the_kernel_down,
)


@pytest.mark.parametrize(
    ("path", "mode", "idle_delay", "drive", "decided_by"),
    [
        pytest.param(
            *row, id=row[0], marks=[pytest.mark.own_kernel] if row[3] in OWN_KERNEL else []
        )
        for row in ROWS
    ],
)
def test_fail_closed_matrix_in_a_kernel(
    path: str,
    mode: str,
    idle_delay: str,
    drive: Any,
    decided_by: str | None,
    shared_kernel: SharedKernel,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    work: Path,
) -> None:
    with hostile_kernel(shared_kernel, tmp_path, request, work, mode, idle_delay) as k:
        logged = drive(k, work)
    assert logged == decided_by, path
    got = answers(work)
    # At a kernel shutdown the agent may be killed before it reads our answer.
    assert got or drive is shut_the_kernel_down, "the agent got no answer"
    assert all(a["result"] == CANCELLED for a in got), got
    assert pwned(work) == [], "the hostile agent ran its command"
