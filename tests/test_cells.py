"""``CellRun`` without a kernel or a subprocess: the embedded agent is served in memory
(``tests/_memory.py``), the run is the session's permission handler, and every card of a
request (the cell's, the panel's) is updated by a push when the decision settles."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _memory import memory_connector
from _runs import start_run

from acp_notebook._notebook._cells import CellRun
from acp_notebook._notebook._owner import Notebook
from acp_notebook._policy._rules import Policy
from acp_notebook._sidepanel import SidePanel, install
from acp_notebook.agent import parse_scenario

ASK = {
    "permission": {
        "title": "Run `rm -rf build`?",
        "options": [
            {"optionId": "yes", "name": "Allow", "kind": "allow_once"},
            {"optionId": "no", "name": "Reject", "kind": "reject_once"},
        ],
        "subject": {"type": "command", "command": "rm -rf build", "cwd": "/w"},
    }
}
SCENARIO = "\n".join(
    [
        json.dumps(ASK),
        json.dumps(
            {
                "update": {
                    "sessionUpdate": "message",
                    "messageId": "m",
                    "role": "agent",
                    "content": {"type": "text", "text": "done"},
                }
            }
        ),
        json.dumps({"stopReason": "end_turn"}),
    ]
)


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


def start(nb: Notebook, policy: Policy | None = None, timeout: float | None = None) -> CellRun:
    return start_run(nb, policy=policy, timeout=timeout)


def asked(nb: Notebook, run: CellRun) -> Any:
    """Wait (on the decision's own event, never a sleep) until the run shows the request."""

    async def first() -> Any:
        import anyio

        with anyio.fail_after(30):
            while not run.asked:
                await anyio.sleep(0.005)  # the agent's request is on its way (not a decision)
        return run.asked[0]

    return run.io.call(first)


def settled_and_seen(run: CellRun, what: Any) -> list[Any]:
    """Register, on the I/O thread, a callback that runs right after the run's own one when
    the decision settles, and records what every card shows at that moment."""
    seen: list[Any] = []
    decision = run.session.permissions[0]

    def record(d: Any) -> None:
        seen.append(what())

    run.io.call(decision.when_settled, record)
    return seen


def wait_settled(run: CellRun) -> Any:
    decision = run.session.permissions[0]

    async def wait() -> Any:
        import anyio

        with anyio.fail_after(30):
            await decision.done.wait()
        return decision

    return run.io.call(wait)


def with_panel(nb: Notebook) -> SidePanel:
    """A panel that follows the notebook's events, without its refresh loop: whatever it shows
    of a decision then came by a push."""
    install(nb)
    panel = SidePanel(nb)
    nb.io.call(panel._scan)
    panel.panel.rendered = True  # as a front end's view of it reports
    nb.attach_panel(panel)
    return panel


def test_a_click_in_the_panel_updates_the_cells_card_in_the_same_loop_turn(nb: Notebook) -> None:
    panel = with_panel(nb)
    run = start(nb)
    item = asked(nb, run)
    cell_card = run.cards[0]
    [entry] = panel._entries  # the panel got its own card of the same request
    assert entry.card is not cell_card and entry.card in item.cards
    assert not cell_card.decided and not entry.card.decided
    seen = settled_and_seen(
        run, lambda: (cell_card.outcome_text, entry.card.decided, list(panel._entries))
    )
    entry.card.buttons[0].click()  # "Allow", in the panel (the main thread)
    decision = wait_settled(run)
    assert decision.decided_by == "panel" and decision.option_id == "yes"
    # When the decision settled, the cell's card already said so, and the inbox was empty.
    assert seen == [("Approved: Allow - from the side panel · allow once", True, [])]
    assert run.done is not None and run.done.result(30) == "end_turn"


def test_a_click_in_the_cell_updates_the_panels_card(nb: Notebook) -> None:
    panel = with_panel(nb)
    run = start(nb)
    item = asked(nb, run)
    [entry] = panel._entries
    seen = settled_and_seen(run, lambda: (entry.card.outcome_text, item.outcome))
    run.cards[0].buttons[1].click()  # "Reject", in the cell
    assert wait_settled(run).decided_by == "click"
    assert seen == [("Rejected: Reject - by a click · reject once", ("no", "click", ""))]


def test_a_click_names_who_made_it_on_every_card(
    nb: Notebook, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The username of the click's message (``_widgets._sender``) goes with the decision: on
    the card clicked, on the other card of the request, and in the session's decision log."""
    from acp_notebook._widgets import _sender

    monkeypatch.setattr(_sender, "sender", lambda: "Bob")
    panel = with_panel(nb)
    run = start(nb)
    item = asked(nb, run)
    [entry] = panel._entries
    seen = settled_and_seen(run, lambda: (run.cards[0].outcome_text, entry.card.outcome_text))
    entry.card.buttons[0].click()  # "Allow", in the panel
    decision = wait_settled(run)
    assert (decision.decided_by, decision.detail) == ("panel", "Bob")
    line = "Approved: Allow - from the side panel, by Bob · allow once"
    assert seen == [(line, line)] and item.outcome == ("yes", "panel", "Bob")


def test_a_cancel_settles_every_card_closed(nb: Notebook) -> None:
    panel = with_panel(nb)
    run = start(nb)
    asked(nb, run)
    [entry] = panel._entries
    run.io.call(run.cancel)
    decision = wait_settled(run)
    assert decision.option_id is None and decision.decided_by == "cancel"
    for card in (run.cards[0], entry.card):
        assert card.outcome_text.startswith("Cancelled - the turn was cancelled")
        assert all(button.disabled for button in card.buttons)


def test_a_policy_answers_without_a_panel_entry(nb: Notebook) -> None:
    panel = with_panel(nb)
    run = start(nb, Policy.from_globs([], ["rm *"]))
    assert run.done is not None and run.done.result(30) == "end_turn"
    decision = run.session.permissions[0]
    assert (decision.option_id, decision.decided_by) == ("no", "policy")
    assert run.cards[0].outcome_text.startswith("Rejected: Reject - by policy --deny")
    assert panel._entries == []  # nothing for a person to answer


def test_a_countdown_answers_cancelled_and_ends_the_turn(nb: Notebook) -> None:
    run = start(nb, timeout=0.2)
    asked(nb, run)
    decision = wait_settled(run)
    assert decision.option_id is None and decision.decided_by == "timeout"
    assert run.done is not None and run.done.result(30) == "cancelled"
    assert "no answer before the timeout" in run.cards[0].outcome_text


def test_closing_the_cells_card_answers_cancelled(nb: Notebook) -> None:
    run = start(nb)
    asked(nb, run)
    run.cards[0].close()
    assert wait_settled(run).decided_by == "closed"


def test_without_a_run_the_session_answers_cancelled(nb: Notebook) -> None:
    """A turn started by hand (no cell run attached): nobody can answer, so nothing runs."""
    named = nb.session("default")
    io = nb.io
    turn = io.call(named.session.start_turn, "clean up")
    io.call(turn.send)

    async def wait() -> Any:
        import anyio

        with anyio.fail_after(30):
            return await turn.wait()

    assert io.call(wait) == "end_turn"
    [decision] = named.session.permissions
    assert decision.option_id is None and decision.decided_by == "no-handler"


# -- a scripted agent: the test sends what the agent would ----------------------------------------

SID = "s1"
COMMAND_REQUEST = {
    "sessionId": SID,
    "title": "Run `make watch`?",
    "options": [
        {"optionId": "yes", "name": "Allow", "kind": "allow_once"},
        {"optionId": "no", "name": "Reject", "kind": "reject_once"},
    ],
    "subject": {"type": "command", "command": "make watch", "cwd": "/w"},
}
QUESTION = {
    "sessionId": SID,
    "mode": "form",
    "message": "Which branch?",
    "requestedSchema": {
        "type": "object",
        "properties": {"branch": {"type": "string", "title": "Branch"}},
        "required": ["branch"],
    },
}


class Scripted:
    """A notebook whose agent is a bare connection the test speaks for (tests/_memory.py)."""

    def __init__(self, tmp_path: Path, panel: bool) -> None:
        from contextlib import asynccontextmanager

        from _memory import scripted_agent

        self.peers: list[Any] = []
        self.received: list[tuple[str, Any]] = []

        async def handler(method: str, params: Any) -> Any:
            self.received.append((method, params))
            if method in ("terminal/cancel", "tool_call/cancel"):
                return {}
            from acp_notebook._connection._errors import MethodNotFound

            raise MethodNotFound(method)

        @asynccontextmanager
        async def connector(**options: Any) -> Any:
            async with scripted_agent(handler, **options) as (agent, peer):
                self.peers.append(peer)
                yield agent

        self.nb = Notebook(connector=lambda argv, cwd, env: connector)
        self.nb.set_panel_auto(make=False)
        self.nb.connect("scripted", ["(scripted)"], str(tmp_path))
        self.panel = with_panel(self.nb) if panel else None

    @property
    def io(self) -> Any:
        return self.nb.io

    def update(self, update: dict[str, Any]) -> None:
        self.io.call(self.peers[-1].notify, "session/update", {"sessionId": SID, "update": update})

    def idle(self, background: list[dict[str, Any]] | None) -> None:
        update: dict[str, Any] = {
            "sessionUpdate": "state_update",
            "state": "idle",
            "stopReason": "end_turn",
        }
        if background is not None:
            update["background"] = background
        self.update(update)

    def ask(self, method: str, params: dict[str, Any]) -> Any:
        """Send a request as the agent; returns a future of the client's answer."""
        return self.io.submit(self.peers[-1].request, method, params)


@pytest.fixture
def scripted(tmp_path: Path) -> Iterator[Scripted]:
    made = Scripted(tmp_path, panel=True)
    yield made
    made.nb.shutdown()


@pytest.fixture
def no_panel(tmp_path: Path) -> Iterator[Scripted]:
    made = Scripted(tmp_path, panel=False)
    yield made
    made.nb.shutdown()


BG = [{"type": "terminal", "terminalId": "bg1"}]


def test_a_question_is_answered_from_the_panel(scripted: Scripted) -> None:
    run = start(scripted.nb)
    answer = scripted.ask("elicitation/create", QUESTION)
    question = run.io.call(_first, run, "questions")
    assert scripted.panel is not None
    [entry] = scripted.panel._entries
    assert entry.asked is question and entry.card is not run.forms[0]
    entry.card.fields["branch"].widget.value = "main"
    assert entry.card.submit()
    assert answer.result(30) == {"action": "accept", "content": {"branch": "main"}}
    assert run.forms[0].outcome_text == 'accepted by panel: {"branch": "main"}'
    assert run.io.call(lambda: list(scripted.panel._entries)) == []


def test_a_request_for_background_work_after_idle_is_asked_in_its_cell(
    scripted: Scripted,
) -> None:
    run = start(scripted.nb)
    scripted.idle(BG)
    assert run.done is not None and run.done.result(30) == "end_turn"
    answer = scripted.ask("session/request_permission", COMMAND_REQUEST)
    run.io.call(_first, run, "asked")
    assert run.turn.done and len(run.cards) == 1
    run.cards[0].buttons[0].click()
    assert answer.result(30) == {"outcome": {"outcome": "selected", "optionId": "yes"}}
    assert run.session.permissions[0].decided_by == "click"


def test_after_idle_with_its_cell_gone_the_panel_asks(scripted: Scripted) -> None:
    run = start(scripted.nb)
    scripted.idle(BG)
    assert run.done is not None and run.done.result(30) == "end_turn"
    run.close_view()  # the cell ran again, say
    answer = scripted.ask("session/request_permission", COMMAND_REQUEST)
    asked = run.io.call(_first, run, "asked")
    assert run.cards == []  # nobody is asked in a cell that no longer exists
    assert scripted.panel is not None
    [entry] = scripted.panel._entries
    assert entry.asked is asked
    entry.card.buttons[1].click()  # Reject, in the panel
    assert answer.result(30) == {"outcome": {"outcome": "selected", "optionId": "no"}}


def test_after_idle_with_its_cell_gone_and_no_panel_it_is_cancelled(no_panel: Scripted) -> None:
    run = start(no_panel.nb)
    no_panel.idle(BG)
    assert run.done is not None and run.done.result(30) == "end_turn"
    run.close_view()
    answer = no_panel.ask("session/request_permission", COMMAND_REQUEST)
    assert answer.result(30) == {"outcome": {"outcome": "cancelled"}}
    [decision] = run.session.permissions
    assert decision.decided_by == "closed" and "is gone" in decision.detail
    question = no_panel.ask("elicitation/create", QUESTION)
    assert question.result(30) == {"action": "cancel"}


def test_after_idle_without_background_work_it_is_cancelled(scripted: Scripted) -> None:
    run = start(scripted.nb)
    scripted.idle(None)
    assert run.done is not None and run.done.result(30) == "end_turn"
    answer = scripted.ask("session/request_permission", COMMAND_REQUEST)
    assert answer.result(30) == {"outcome": {"outcome": "cancelled"}}
    assert run.session.permissions[0].detail == "the turn ended"
    assert run.cards == []


def test_once_the_background_work_ends_requests_are_cancelled(scripted: Scripted) -> None:
    run = start(scripted.nb)
    scripted.idle(BG)
    assert run.done is not None and run.done.result(30) == "end_turn"
    scripted.update({"sessionUpdate": "state_update", "state": "idle", "background": []})
    answer = scripted.ask("session/request_permission", COMMAND_REQUEST)
    assert answer.result(30) == {"outcome": {"outcome": "cancelled"}}
    assert run.cards == [] and not run.background


def test_a_countdown_after_idle_answers_cancelled_without_a_session_cancel(
    scripted: Scripted,
) -> None:
    run = start(scripted.nb, timeout=0.2)
    scripted.idle(BG)
    assert run.done is not None and run.done.result(30) == "end_turn"
    answer = scripted.ask("session/request_permission", COMMAND_REQUEST)
    assert answer.result(30) == {"outcome": {"outcome": "cancelled"}}
    assert run.session.permissions[0].decided_by == "timeout"
    sent = [m.get("method") for d, m in scripted.peers[-1].log if d == "recv"]
    assert "session/prompt" in sent and "session/cancel" not in sent  # no turn to cancel


def test_the_panel_lists_background_work_and_stops_it(scripted: Scripted) -> None:
    run = start(scripted.nb)
    scripted.update(
        {
            "sessionUpdate": "terminal_update",
            "terminalId": "bg1",
            "command": "make watch",
            "capabilities": {"cancel": {}},
        }
    )
    scripted.idle(BG)
    assert run.done is not None and run.done.result(30) == "end_turn"
    panel = scripted.panel
    assert panel is not None
    run.io.call(panel._sync_background)
    [row] = panel._work_rows.values()
    assert "$ make watch" in row.info.value and "running" in row.info.value
    assert "session <b>default</b> on scripted" in row.info.value
    assert row.extra["stop"].layout.display == ""
    row.extra["stop"].click()

    async def stopped() -> None:
        import anyio

        with anyio.fail_after(30):
            while not any(m.endswith("/cancel") for m, _ in scripted.received):
                await anyio.sleep(0.01)  # the request is on its way to the agent

    run.io.call(stopped)
    stops = [(m, p) for m, p in scripted.received if m.endswith("/cancel")]
    assert stops == [("terminal/cancel", {"sessionId": SID, "terminalId": "bg1"})]
    assert "Background work: 1" in run.io.call(panel.summary)


async def _first(run: CellRun, name: str) -> Any:
    import anyio

    with anyio.fail_after(30):
        while not getattr(run, name):
            await anyio.sleep(0.005)  # the agent's request is on its way (not a decision)
    return getattr(run, name)[0]


def test_after_idle_a_panel_no_front_end_shows_does_not_count(scripted: Scripted) -> None:
    assert scripted.panel is not None
    scripted.panel.panel.rendered = False  # made (on the first connect) but never shown
    run = start(scripted.nb)
    scripted.idle(BG)
    assert run.done is not None and run.done.result(30) == "end_turn"
    run.close_view()
    answer = scripted.ask("session/request_permission", COMMAND_REQUEST)
    assert answer.result(30) == {"outcome": {"outcome": "cancelled"}}
    assert scripted.panel._entries == []
