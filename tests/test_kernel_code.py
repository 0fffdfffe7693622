"""``run_code`` behind approval (``_kernel_code.request_code``) without a kernel: a scripted agent
served in memory holds the turn open (it ends only on the idle update the test sends), a
thread waits for the turn as a ``%%acp`` cell does (``CellRun.wait_blocking``: the code runs
there, between its waits), and another thread calls ``request_code`` as the MCP server does.

Every path but an explicit allow leaves the code unrun: each test's code would write a file,
and the file never appears."""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from _memory import scripted_agent
from _runs import start_run

from acp_notebook._connection._errors import MethodNotFound
from acp_notebook._notebook._cells import CellRun
from acp_notebook._notebook._kernel_code import NO_WAITER, CodeOutcome, request_code
from acp_notebook._notebook._owner import Notebook
from acp_notebook._policy._rules import Policy

SID = "s1"
GUARD = 30.0  # seconds: only a guard against hanging, never an assertion on speed


class Held:
    """A notebook whose agent's turns end only when the test says so (``idle``)."""

    def __init__(self, tmp_path: Path) -> None:
        self.peers: list[Any] = []
        self.received: list[str] = []

        async def handler(method: str, params: Any) -> Any:
            raise MethodNotFound(method)

        async def on_note(method: str, params: Any) -> None:
            self.received.append(method)

        @asynccontextmanager
        async def connector(**options: Any) -> Any:
            async with scripted_agent(handler, **options) as (agent, peer):
                peer.set_notification_handler(on_note)
                self.peers.append(peer)
                yield agent

        self.nb = Notebook(connector=lambda argv, cwd, env: connector)
        self.nb.set_panel_auto(make=False)
        self.nb.connect("held", ["(scripted)"], str(tmp_path))
        self.ns: dict[str, Any] = {"target": str(tmp_path / "made.txt")}
        self.target = tmp_path / "made.txt"

    def idle(self, stop_reason: str = "end_turn") -> None:
        update = {"sessionUpdate": "state_update", "state": "idle", "stopReason": stop_reason}
        self.nb.io.call(
            self.peers[-1].notify, "session/update", {"sessionId": SID, "update": update}
        )

    def request(self, code: str, **kw: Any) -> concurrent.futures.Future[CodeOutcome]:
        """``request_code`` from another thread, as the MCP server calls it."""
        got: list[concurrent.futures.Future[CodeOutcome]] = []
        caller = threading.Thread(
            target=lambda: got.append(request_code(self.nb, SID, code, namespace=self.ns, **kw))
        )
        caller.start()
        caller.join(GUARD)
        return got[0]


@pytest.fixture
def held(tmp_path: Path) -> Iterator[Held]:
    made = Held(tmp_path)
    yield made
    made.nb.shutdown()


WRITE = (
    "with open(target, 'w') as f:\n    f.write('ran')\nmade = 41 + 1\nprint('made', made)\nmade * 2"
)


def waiting(run: CellRun) -> concurrent.futures.Future[Any]:
    """A thread that waits for the turn as the cell's thread does (and runs its code)."""
    done: concurrent.futures.Future[Any] = concurrent.futures.Future()

    def wait() -> None:
        try:
            done.set_result(run.wait_blocking())
        except BaseException as exc:
            done.set_exception(exc)

    threading.Thread(target=wait, daemon=True).start()
    return done


def card_of(run: CellRun, n: int = 1) -> Any:
    """The n-th code card the run shows (the request reaches the I/O thread soon)."""

    async def shown() -> Any:
        import anyio

        with anyio.fail_after(GUARD):
            while len(run.code) < n or run.code[n - 1].card is None:
                await anyio.sleep(0.005)  # the request is on its way to the I/O thread
        return run.code[n - 1].card

    return run.io.call(shown)


def allow(card: Any) -> None:
    card.buttons[0].click()


def reject(card: Any) -> None:
    card.buttons[1].click()


def test_an_allowed_request_runs_in_the_namespace_on_the_waiting_thread(held: Held) -> None:
    run = start_run(held.nb)
    waiter = waiting(run)
    future = held.request(WRITE)
    card = card_of(run)
    assert not held.target.exists() and not future.done()  # nothing runs before the allow
    assert [b.description for b in card.buttons] == ["Allow", "Reject"]
    allow(card)
    outcome = future.result(GUARD)
    assert outcome == CodeOutcome(True, "made 42\n84\n", None, "allowed")
    assert held.target.read_text() == "ran" and held.ns["made"] == 42
    assert card.outcome_text == "Allowed - by a click; ran"
    assert card.output_text == "made 42\n84\n"
    held.idle()
    waiter.result(GUARD)
    text = run.view.static_text()
    assert "Code request:" in text and "with open(target, 'w')" in text and "made 42" in text


def test_the_code_card_says_who_allowed_it(held: Held, monkeypatch: pytest.MonkeyPatch) -> None:
    from acp_notebook._widgets import _sender

    monkeypatch.setattr(_sender, "sender", lambda: "Alice")
    run = start_run(held.nb)
    waiter = waiting(run)
    future = held.request(WRITE)
    card = card_of(run)
    allow(card)
    assert future.result(GUARD).ran
    assert card.outcome_text == "Allowed - by a click from Alice; ran"
    held.idle()
    waiter.result(GUARD)


def test_the_code_runs_on_the_thread_that_waits(held: Held) -> None:
    run = start_run(held.nb)
    seen: list[int] = []
    held.ns["ident"] = lambda: seen.append(threading.get_ident())
    idents: list[int] = []

    def wait() -> None:
        idents.append(threading.get_ident())
        run.wait_blocking()

    waiter = threading.Thread(target=wait, daemon=True)
    waiter.start()
    future = held.request("ident()")
    allow(card_of(run))
    assert future.result(GUARD).ran
    held.idle()
    waiter.join(GUARD)
    assert seen == idents


def test_a_reject_leaves_the_code_unrun(held: Held) -> None:
    run = start_run(held.nb)
    waiter = waiting(run)
    future = held.request(WRITE)
    card = card_of(run)
    reject(card)
    outcome = future.result(GUARD)
    assert (outcome.ran, outcome.reason) == (False, "rejected")
    allow(card)  # a late click on a stale view changes nothing
    held.idle()
    waiter.result(GUARD)
    assert not held.target.exists() and "made" not in held.ns
    assert card.outcome_text.startswith("Not run - the user rejected")


def test_a_timed_out_card_fails_closed_and_cancels_the_turn(held: Held) -> None:
    run = start_run(held.nb)
    waiter = waiting(run)
    future = held.request(WRITE, timeout=0.2)
    outcome = future.result(GUARD)
    assert (outcome.ran, outcome.reason) == (False, "timeout")
    card = card_of(run)
    allow(card)  # too late
    assert "session/cancel" in wait_for(lambda: held.received, "the cancel")
    held.idle("cancelled")
    waiter.result(GUARD)
    assert not held.target.exists()


def test_the_end_of_the_turn_closes_an_open_card(held: Held) -> None:
    run = start_run(held.nb)
    waiter = waiting(run)
    future = held.request(WRITE)
    card = card_of(run)
    held.idle()
    outcome = future.result(GUARD)
    assert (outcome.ran, outcome.reason) == (False, "turn-ended")
    waiter.result(GUARD)
    allow(card)
    assert not held.target.exists()
    assert card.outcome_text.startswith("Not run - the turn ended")


def test_an_allowed_request_the_cell_has_not_run_yet_is_dropped_at_the_end(held: Held) -> None:
    run = start_run(held.nb)  # nobody waits yet: the allowed code stays queued
    future = held.request(WRITE)
    allow(card_of(run))
    wait_for(lambda: run.code[0].state == "queued", "the allow")
    held.idle()
    assert future.result(GUARD).reason == "turn-ended"
    waiting(run).result(GUARD)  # the cell waits only now: nothing is left to run
    assert not held.target.exists()


def test_closing_the_agent_fails_an_open_card_closed(held: Held) -> None:
    run = start_run(held.nb)
    waiter = waiting(run)
    future = held.request(WRITE)
    card = card_of(run)
    held.nb.close("held")
    assert future.result(GUARD).reason == "shutdown"
    allow(card)  # a click after the close: nothing runs
    assert card.outcome_text.startswith("Not run - the agent was closed")
    held.nb.shutdown()  # (the scripted agent's turn never ended: the waiting thread stops)
    with pytest.raises(concurrent.futures.CancelledError):
        waiter.result(GUARD)
    assert not held.target.exists()


def test_a_kernel_shutdown_fails_an_open_card_closed(held: Held) -> None:
    run = start_run(held.nb)
    waiting(run)
    future = held.request(WRITE)
    card_of(run)
    held.nb.shutdown()
    assert future.result(GUARD).reason == "shutdown"
    assert not held.target.exists()
    late = held.request(WRITE)  # the notebook is gone: refused at once
    assert late.result(GUARD).reason in ("no-turn", "shutdown")


def test_a_session_whose_turn_is_cancelled_gets_no_card(held: Held) -> None:
    run = start_run(held.nb)
    waiter = waiting(run)
    held.nb.io.call(run.session.cancel)  # the agent has not confirmed it yet (no idle)
    outcome = held.request(WRITE).result(GUARD)
    assert (outcome.ran, outcome.reason) == (False, "cancelled")
    assert run.code[0].card is None  # nobody was asked
    held.idle("cancelled")
    waiter.result(GUARD)
    assert not held.target.exists()


def test_a_cancel_after_the_allow_drops_the_queued_code(held: Held) -> None:
    run = start_run(held.nb)
    future = held.request(WRITE)
    allow(card_of(run))
    wait_for(lambda: run.code[0].state == "queued", "the allow")
    held.nb.io.call(run.session.cancel)
    waiter = waiting(run)  # the cell's thread gets to the queued code only after the cancel
    assert future.result(GUARD).reason == "cancelled"
    held.idle("cancelled")
    waiter.result(GUARD)
    assert not held.target.exists()


def test_no_turn_no_card(held: Held) -> None:
    outcome = held.request(WRITE).result(GUARD)
    assert (outcome.ran, outcome.reason) == (False, "no-turn")
    run = start_run(held.nb)
    waiter = waiting(run)
    held.idle()
    waiter.result(GUARD)
    assert held.request(WRITE).result(GUARD).reason == "no-turn"  # that turn is over
    assert not held.target.exists() and run.code == []


def test_a_bg_cell_never_runs_code(held: Held) -> None:
    run = start_run(held.nb)
    run.no_waiter()  # what %%acp --bg does: nothing waits for the turn
    future = held.request(WRITE)
    allow(card_of(run))
    outcome = future.result(GUARD)
    assert (outcome.ran, outcome.reason, outcome.error) == (False, "no-turn", NO_WAITER)
    held.idle()
    assert not held.target.exists()


def test_allow_code_runs_without_a_click_and_says_so(held: Held) -> None:
    run = start_run(held.nb, policy=Policy.from_globs([], [], allow_code=True))
    waiter = waiting(run)
    outcome = held.request(WRITE).result(GUARD)
    assert (outcome.ran, outcome.reason) == (True, "policy")
    assert held.target.read_text() == "ran"
    card = run.code[0].card
    assert card.outcome_text == "Allowed - by policy --allow-code; ran"
    held.idle()
    waiter.result(GUARD)


def test_allow_code_is_off_by_default() -> None:
    assert Policy().allow_code is False
    assert Policy.from_globs(["*"], []).allow_code is False


def test_an_error_is_returned_with_its_traceback(held: Held) -> None:
    run = start_run(held.nb)
    waiter = waiting(run)
    future = held.request("print('before')\n1 / 0")
    allow(card_of(run))
    outcome = future.result(GUARD)
    assert outcome.ran and outcome.reason == "allowed" and outcome.output == "before\n"
    assert outcome.error is not None and "ZeroDivisionError" in outcome.error
    assert "<agent code" in outcome.error and "1 / 0" in outcome.error
    assert "_kernel_code" not in outcome.error  # the agent's frames only
    assert run.code[0].card.outcome_text == "Allowed - by a click; failed"
    held.idle()
    waiter.result(GUARD)


def wait_for(predicate: Any, what: str) -> Any:
    done = threading.Event()
    deadline = GUARD
    while deadline > 0:
        value = predicate()
        if value:
            return value
        done.wait(0.01)  # polling a test's condition, not timing the code under test
        deadline -= 0.01
    raise AssertionError(f"timed out waiting for {what}")


def test_a_request_its_caller_gave_up_never_runs(held: Held) -> None:
    """The MCP server's await was cancelled (the agent's client timed out, the connection
    closed): the open card settles, and a later Allow runs nothing."""
    run = start_run(held.nb)
    waiter = waiting(run)
    future = held.request(WRITE)
    card = card_of(run)
    assert future.cancel()
    wait_for(lambda: card.decided, "the card to settle")
    assert (
        card.outcome_text
        == "Not run - the agent stopped waiting for the answer (its tool call was given up)"
    )
    allow(card)
    held.idle()
    waiter.result(GUARD)
    assert not held.target.exists() and run.code[0].state == "done"


def test_a_request_given_up_before_its_card_gets_no_card(held: Held) -> None:
    run = start_run(held.nb)
    waiter = waiting(run)
    future = request_code(held.nb, SID, WRITE, namespace=held.ns)
    future.cancel()  # before the I/O thread shows the card (or just after: either way)
    wait_for(lambda: run.code and run.code[0].state == "done", "the request to settle")
    held.idle()
    waiter.result(GUARD)
    assert not held.target.exists()
    assert run.code[0].card is None or run.code[0].card.decided
