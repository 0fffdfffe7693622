"""A hostile agent's ``run_code``: floods of requests, code too long to show, and requests
racing the end of the turn. The invariant everywhere: a request runs only after an explicit
allow, and its outcome never lies (``ran`` exactly when its code left its mark)."""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from _runs import start_run

from acp_notebook._notebook._cells import CellRun
from acp_notebook._notebook._kernel_code import MAX_CODE, MAX_OPEN, CodeOutcome, request_code
from tests.test_kernel_code import GUARD, SID, Held, allow, card_of, wait_for, waiting


@pytest.fixture
def held(tmp_path: Path) -> Iterator[Held]:
    made = Held(tmp_path)
    yield made
    made.nb.shutdown()


def mark(n: int) -> str:
    """Code that leaves mark ``n`` (a file named after it) in the test's directory."""
    return f"import pathlib\npathlib.Path(target).with_name('mark-{n}').touch()"


def marks(held: Held) -> set[int]:
    return {int(p.name.split("-")[1]) for p in held.target.parent.glob("mark-*")}


def flood(held: Held, count: int) -> list[concurrent.futures.Future[CodeOutcome]]:
    """``count`` requests at once, from 8 threads (as parallel tool calls arrive)."""
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        calls = [
            pool.submit(request_code, held.nb, SID, mark(n), namespace=held.ns)
            for n in range(count)
        ]
        return [call.result(GUARD) for call in calls]


def click_every_card(run: CellRun, stop: threading.Event) -> None:
    """A person clicking Allow on every card as fast as cards come, until ``stop``."""
    while not stop.is_set():
        for request in list(run.code):
            if request.card is not None and not request.card.decided:
                allow(request.card)
        stop.wait(0.001)


def test_a_flood_of_requests_gets_a_bounded_number_of_cards(held: Held) -> None:
    run = start_run(held.nb)
    waiter = waiting(run)
    futures = flood(held, 200)
    wait_for(
        lambda: len(run.code) == 200 and all(r.state != "asked" or r.card for r in run.code),
        "every request to be seen",
    )
    cards = [r.card for r in run.code if r.card is not None]
    assert len(cards) == MAX_OPEN  # the rest were refused without a card
    # a refusal reaches its caller's future just after the request's state changes: wait for
    # them (under coverage one was counted before its future was done)
    wait_for(lambda: sum(f.done() for f in futures) >= 200 - MAX_OPEN, "the refusals")
    refused = [f.result(GUARD) for f in futures if f.done() and not f.result().ran]
    assert len(refused) == 200 - MAX_OPEN
    assert {o.reason for o in refused} == {"refused"}
    assert marks(held) == set()  # nothing ran unasked
    for card in cards:
        allow(card)
    outcomes = [f.result(GUARD) for f in futures]
    ran = {n for n, o in enumerate(outcomes) if o.ran}
    assert len(ran) == MAX_OPEN
    held.idle()
    waiter.result(GUARD)
    assert marks(held) == ran  # exactly the allowed ones left their mark


def test_code_too_long_to_show_is_refused_unseen(held: Held) -> None:
    run = start_run(held.nb)
    waiter = waiting(run)
    code = mark(0) + "\n#" + "x" * MAX_CODE
    outcome = held.request(code).result(GUARD)
    assert (outcome.ran, outcome.reason) == (False, "refused")
    assert outcome.error is not None and "too long" in outcome.error
    assert run.code[0].card is None
    held.idle()
    waiter.result(GUARD)
    assert marks(held) == set()


def test_requests_racing_the_end_of_the_turn_never_lie(held: Held) -> None:
    """Requests arrive while the test clicks Allow on every card it sees and the turn ends
    in the middle: each outcome says ``ran`` exactly when its mark exists."""
    for _round in range(3):
        run = start_run(held.nb)
        waiter = waiting(run)
        base = 1000 * _round
        for old in held.target.parent.glob("mark-*"):
            old.unlink()
        stop = threading.Event()

        clicking = threading.Thread(target=click_every_card, args=(run, stop), daemon=True)
        clicking.start()
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            calls = [
                pool.submit(request_code, held.nb, SID, mark(base + n), namespace=held.ns)
                for n in range(24)
            ]
            card_of(run)  # at least one card is up before the turn ends
            held.idle()
            futures = [call.result(GUARD) for call in calls]
        outcomes = {base + n: f.result(GUARD) for n, f in enumerate(futures)}
        waiter.result(GUARD)
        stop.set()
        clicking.join(GUARD)
        left = marks(held)
        assert {n for n, o in outcomes.items() if o.ran} == left
        assert all(
            o.reason in ("allowed", "turn-ended", "no-turn", "refused") for o in outcomes.values()
        ), outcomes
