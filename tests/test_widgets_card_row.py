"""A permission request nobody was asked (a rule decided it) costs no widget (issue 29): a
`PermissionRow` is HTML in its tool call's row, with the words, escaping and visible hidden
characters of the card a person would have seen, and the saved transcript says what decided."""

from __future__ import annotations

import html as html_lib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import comm
import ipywidgets  # type: ignore[import-untyped]
import pytest
from _memory import memory_connector
from _runs import start_run

from acp_notebook._notebook._owner import Notebook
from acp_notebook._policy._rules import Policy
from acp_notebook._protocol import RequestPermissionRequest, parse_session_update
from acp_notebook._protocol._visible import make_visible
from acp_notebook._state import SessionState, TurnState
from acp_notebook._widgets import PermissionCard, TurnView
from acp_notebook._widgets._card import DECIDING, PermissionIndex, PermissionRow
from acp_notebook.agent import parse_scenario

Published = list[tuple[str, str, Any]]

OPTIONS = [
    {"optionId": "yes", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "always", "name": "Always allow", "kind": "allow_always"},
    {"optionId": "no", "name": "Reject", "kind": "reject_once"},
]


def request(cmd: str = "true", call_id: str | None = "call-0") -> RequestPermissionRequest:
    subject: dict[str, Any] = {"type": "command", "command": cmd, "cwd": "/work"}
    if call_id is not None:
        subject["toolCallId"] = call_id
    return RequestPermissionRequest.model_validate(
        {"sessionId": "s1", "title": f"Run `{cmd}`?", "options": OPTIONS, "subject": subject}
    )


@pytest.fixture
def published(monkeypatch: pytest.MonkeyPatch) -> Published:
    sent: Published = []

    def publish(self: Any, msg_type: str, data: Any = None, *args: Any, **kwargs: Any) -> None:
        sent.append((msg_type, self.comm_id, data))

    monkeypatch.setattr(comm.DummyComm, "publish_msg", publish)
    return sent


@pytest.fixture
def views() -> Iterator[list[TurnView]]:
    made: list[TurnView] = []
    yield made
    for view in made:
        view.close_all()


def new_view(views: list[TurnView]) -> tuple[SessionState, TurnState, TurnView]:
    state = SessionState("s1")
    turn = state.begin_turn("go")
    view = TurnView(turn, "go")
    views.append(view)
    return state, turn, view


def add_call(state: SessionState, view: TurnView, n: int, title: str = "true") -> None:
    for update in (
        {"sessionUpdate": "tool_call_update", "toolCallId": f"call-{n}", "title": title,
         "kind": "execute", "status": "pending"},
        {"sessionUpdate": "tool_call_update", "toolCallId": f"call-{n}", "status": "completed"},
    ):  # fmt: skip
        model = parse_session_update(update)
        state.apply(model)
        view.note_update(model)


def shown_html(view: TurnView) -> str:
    return "".join(str(getattr(child, "value", "")) for child in view._timeline.children)


def opened(published: Published, since: int) -> list[dict[str, Any]]:
    return [dict(d.get("state", {})) for kind, _c, d in published[since:] if kind == "comm_open"]


# -- the row alone ----------------------------------------------------------------------------
def test_a_row_says_what_the_card_says(published: Published) -> None:
    """The decision line, the transcript (text and HTML) and the verdict are the card's own."""
    outcome = ("yes", "policy", "--allow 'true'")
    before = len(published)
    row = PermissionRow(request())
    assert published[before:] == []  # no widget, no message
    card = PermissionCard(request(), lambda o, b: None)
    try:
        assert (row.verdict, row.outcome_text) == ("asking", "pending")
        assert DECIDING in row.row_html()
        for shown in (row, card):
            shown.mark_decided(*outcome)
        assert row.outcome_text == card.outcome_text
        assert row.outcome_text == "Approved: Allow once - by policy --allow 'true' · allow once"
        assert row.verdict == card.verdict == "allowed"
        assert row.transcript_text() == card.transcript_text()
        assert row.transcript_html() == card.transcript_html()
        assert row.static_bundle() == card.static_bundle()
        # the decision line as the settled card shows it, with its kind badge
        assert card.status_html in row.row_html()
        assert "Approved: Allow once - by policy --allow &#x27;true&#x27;" in row.row_html()
        assert DECIDING not in row.row_html()
    finally:
        card.close()


@pytest.mark.parametrize(
    ("option", "by", "detail", "words"),
    [
        ("no", "policy", "--deny 'rm *'", "Rejected: Reject - by policy --deny 'rm *'"),
        (None, "policy", "--deny 'rm *'", "Cancelled - by policy --deny 'rm *'"),
        (None, "cancel", "the turn ended", "Cancelled - the turn was cancelled (the turn ended)"),
    ],
)
def test_every_way_of_deciding_is_said_as_on_the_card(
    option: str | None, by: str, detail: str, words: str
) -> None:
    row = PermissionRow(request("rm -rf build"), outcome=(option, by, detail))
    assert row.outcome_text.startswith(words)
    assert html_lib.escape(words) in row.row_html()
    assert row.verdict == "refused"


def test_a_push_counts_once_and_a_repeat_is_no_change() -> None:
    row = PermissionRow(request())
    row.mark_decided("yes", "policy", "--allow 'true'")
    assert row.revision == 1
    row.mark_decided("yes", "policy", "--allow 'true'")
    assert row.revision == 1  # the view renders it again only when it changed
    row.mark_decided(None, "cancel", "")
    assert row.revision == 2 and row.outcome_text.startswith("Cancelled")


def test_the_command_and_the_rule_are_escaped() -> None:
    evil = "<img src=x onerror=alert(1)> & </div><script>x()</script>"
    row = PermissionRow(request(evil), outcome=("yes", "policy", "--allow '<b>*'"))
    shown = row.row_html()
    assert "<img" not in shown and "<script" not in shown and "<b>*" not in shown
    assert "&lt;img src=x onerror=alert(1)&gt; &amp; &lt;/div&gt;" in shown
    assert "--allow &#x27;&lt;b&gt;*&#x27;" in shown
    # balanced: the agent's text closes none of the row's own elements
    assert shown.count("<div") == shown.count("</div>")


def test_control_and_bidi_characters_are_made_visible_as_on_the_card() -> None:
    sneaky = "ls \u202erm -rf ~\u202c\x1b[2K\x07 #\u200b"
    row = PermissionRow(request(sneaky), outcome=("yes", "policy", "--allow 'ls *'"))
    card = PermissionCard(request(sneaky), lambda o, b: None)
    try:
        shown = row.row_html()
        for raw in ("\u202e", "\u202c", "\x1b", "\x07", "\u200b"):
            assert raw not in shown
        assert html_lib.escape(make_visible(sneaky).text) in shown
        assert row.request_html() == card.request_html()  # the card's own rendering
        assert "hidden characters made visible" in shown
        text = "\n".join(row.transcript_text())
        assert "\u202e" not in text and "\x1b" not in text
    finally:
        card.close()


def test_a_kept_transcript_follows_the_outcome_and_the_call(views: list[TurnView]) -> None:
    """The transcript of a request is kept between renders (the saved record renders every
    request every few seconds), and made again when its outcome or its tool call changed."""
    state, turn, _view = new_view(views)
    add_call(state, _view, 0, title="true")
    call = turn.tool_calls["call-0"]
    row = PermissionRow(request())
    first = row.transcript_text(call)
    assert row.transcript_text(call) == first and "  decision: pending" in first
    assert "Permission request: Run this command?" in first  # the call's title shows it
    assert not any(line.startswith("  command:") for line in first)
    row.mark_decided("yes", "policy", "--allow 'true'")
    assert row.transcript_text(call)[-1].startswith("  decision: Approved: Allow once")
    model = parse_session_update(
        {"sessionUpdate": "tool_call_update", "toolCallId": "call-0", "title": "Run it"}
    )
    state.apply(model)
    call = turn.tool_calls["call-0"]
    assert "  command: true" in row.transcript_text(call)  # the title no longer shows it
    assert "  command: true" in row.transcript_text(None)  # no call: the request says it
    assert "$ true" in row.transcript_html(None) and "$ true" in row.transcript_html(call)


def test_the_index_finds_the_requests_about_a_terminal_or_its_calls() -> None:
    index = PermissionIndex()
    by_terminal = PermissionRow(
        RequestPermissionRequest.model_validate(
            {"sessionId": "s1", "title": "Run?", "options": OPTIONS,
             "subject": {"type": "command", "command": "ls", "cwd": "/w", "terminalId": "t1",
                         "toolCallId": "c1"}}
        )
    )  # fmt: skip
    by_call = PermissionRow(request(call_id="c2"))
    other = PermissionRow(request(call_id="c3"))
    for row in (by_terminal, by_call, other):
        index.add(row)
    assert index.about("t1", set()) == [by_terminal]
    assert index.about("t1", {"c1", "c2"}) == [by_terminal, by_call]  # each once
    assert index.about("t9", {"c3"}) == [other]
    assert index.about("t9", set()) == []


# -- in the turn's view -----------------------------------------------------------------------
def test_rule_decided_requests_are_rows_of_the_shared_groups(
    views: list[TurnView], published: Published
) -> None:
    """200 requests a rule decided, each about its own tool call: no model of their own (the
    cards made 35 each), every row says its decision, and the saved transcript does too."""
    state, _turn, view = new_view(views)
    view.refresh()
    before = len(published)
    rows = []
    for n in range(200):
        add_call(state, view, n)
        row = PermissionRow(request(call_id=f"call-{n}"))
        view.add_card(row)
        rows.append(row)
        row.mark_decided("yes", "policy", "--allow 'true'")
        if n % 20 == 19:
            view.refresh()
    view.refresh()
    models = opened(published, before)
    assert not any(m.get("_model_name") == "ButtonModel" for m in models)
    assert len(models) <= 200 // 25 + 2, len(models)  # the groups of rows, nothing per request
    shown = shown_html(view)
    assert shown.count("Approved: Allow once - by policy --allow &#x27;true&#x27;") == 200
    assert shown.count('class="acp-tool-call"') == 200
    assert all(not view._calls[f"call-{n}"].boxed for n in range(200))
    text = view.static_text()
    assert text.count("decision: Approved: Allow once - by policy --allow 'true' · allow once") == (
        200
    )
    assert view.cards == rows


def test_a_row_shows_its_decision_on_the_next_refresh(
    views: list[TurnView], published: Published
) -> None:
    state, _turn, view = new_view(views)
    add_call(state, view, 0)
    row = PermissionRow(request())
    view.add_card(row)
    view.refresh()
    assert DECIDING in shown_html(view)
    before = len(published)
    view.refresh()
    assert published[before:] == []  # nothing changed, nothing sent
    row.mark_decided("no", "policy", "--deny 'true'")
    view.refresh()
    assert DECIDING not in shown_html(view)
    assert "Rejected: Reject - by policy --deny" in shown_html(view)
    sent = [kind for kind, _c, _d in published[before:]]
    assert sent.count("comm_msg") == 1 and "comm_open" not in sent  # one group re-sent


def test_a_row_without_a_tool_call_is_a_row_of_its_own_in_arrival_order(
    views: list[TurnView],
) -> None:
    state, _turn, view = new_view(views)
    add_call(state, view, 0, title="first")
    view.refresh()
    row = PermissionRow(request("make", call_id=None), outcome=("yes", "policy", "--allow make"))
    view.add_card(row)
    add_call(state, view, 1, title="second")
    view.refresh()
    shown = shown_html(view)
    assert shown.index("first") < shown.index("by policy --allow make") < shown.index("second")
    assert len(view._timeline.children) == 1  # all three in one group
    items = [kind for kind, _item in view.static_items()]
    assert items == ["call", "card", "call"]
    assert "decision: Approved: Allow once - by policy --allow make" in view.static_text()
    assert "by policy --allow make" in view.static_html()


def test_a_call_with_a_live_terminal_shows_its_row_in_its_header(views: list[TurnView]) -> None:
    state, _turn, view = new_view(views)
    for update in (
        {"sessionUpdate": "tool_call_update", "toolCallId": "call-0", "title": "make",
         "kind": "execute", "status": "in_progress",
         "content": [{"type": "terminal", "terminalId": "t1"}]},
        {"sessionUpdate": "terminal_update", "terminalId": "t1", "command": "make"},
    ):  # fmt: skip
        model = parse_session_update(update)
        state.apply(model)
        view.note_update(model)
    view.add_card(PermissionRow(request("make"), outcome=("yes", "policy", "--allow make")))
    view.refresh()
    part = view._calls["call-0"]
    assert part.boxed and part.header is not None
    assert "by policy --allow make" in part.header.value
    assert part.slots == []  # no widget for the request


def test_a_finished_turn_keeps_no_group_its_rows_left(
    views: list[TurnView], published: Published
) -> None:
    """A call shown as a row while its command is decided becomes a box when its terminal
    starts: the group that showed it is empty then, and closed once the turn is done (so a
    re-run cell keeps the same models whatever the refreshes caught)."""
    state, turn, view = new_view(views)
    add_call(state, view, 0, title="make")
    view.add_card(PermissionRow(request("make"), outcome=("yes", "policy", "--allow make")))
    view.refresh()
    [group] = view._groups.widgets()
    assert group in view._timeline.children and not view._calls["call-0"].boxed
    for update in (
        {"sessionUpdate": "tool_call_update", "toolCallId": "call-0",
         "content": [{"type": "terminal", "terminalId": "t1"}]},
        {"sessionUpdate": "terminal_update", "terminalId": "t1", "command": "make"},
    ):  # fmt: skip
        model = parse_session_update(update)
        state.apply(model)
        view.note_update(model)
    view.refresh()
    assert view._calls["call-0"].boxed and group not in view._timeline.children
    assert view._groups.widgets() == [group]  # kept while the turn runs: rows may come back
    before, group_id = len(published), group.model_id
    state.end_turn("the agent exited")
    view.refresh()
    assert view._groups.widgets() == [] and group.comm is None
    closed = [cid for kind, cid, _d in published[before:] if kind == "comm_close"]
    assert closed == [group_id]  # the group alone: not the shared layout and style
    assert turn.done


def test_a_refused_row_says_its_terminal_never_ran(views: list[TurnView]) -> None:
    state, _turn, view = new_view(views)
    model = parse_session_update(
        {"sessionUpdate": "terminal_update", "terminalId": "t1", "command": "rm -rf build"}
    )
    state.apply(model)
    subject = {"type": "command", "command": "rm -rf build", "cwd": "/w", "terminalId": "t1"}
    req = RequestPermissionRequest.model_validate(
        {"sessionId": "s1", "title": "Run?", "options": OPTIONS, "subject": subject}
    )
    row = PermissionRow(req)
    view.add_card(row)
    term = state.terminals["t1"]
    assert view.terminal_phase(term).state == "waiting"
    row.mark_decided("no", "policy", "--deny 'rm *'")
    assert view.terminal_phase(term).state == "not-run"


def test_closing_the_view_leaves_no_model_of_a_row(
    views: list[TurnView], published: Published
) -> None:
    state, _turn, view = new_view(views)
    before = len(published)
    for n in range(30):
        add_call(state, view, n)
        view.add_card(PermissionRow(request(call_id=f"call-{n}"), outcome=("yes", "policy", "")))
    view.refresh()
    view.close_all()
    opened_ids = {cid for kind, cid, _ in published[before:] if kind == "comm_open"}
    closed = {cid for kind, cid, _ in published[before:] if kind == "comm_close"}
    assert opened_ids and opened_ids <= closed


# -- in a cell's run ---------------------------------------------------------------------------
def ask_scenario(commands: list[str]) -> str:
    lines = []
    for n, cmd in enumerate(commands):
        subject = {"type": "command", "command": cmd, "cwd": "/w", "toolCallId": f"c{n}"}
        update = {"sessionUpdate": "tool_call_update", "toolCallId": f"c{n}", "title": cmd,
                  "kind": "execute", "status": "pending"}  # fmt: skip
        options = OPTIONS
        lines.append(json.dumps({"update": update}))
        lines.append(json.dumps({"permission": {"title": "Run?", "options": options,
                                                "subject": subject}}))  # fmt: skip
    lines.append(json.dumps({"stopReason": "end_turn"}))
    return "\n".join(lines)


@pytest.fixture
def nb(tmp_path: Path) -> Iterator[Notebook]:
    scenario = parse_scenario(ask_scenario(["rm -rf build", "ls", "true"]))
    notebook = Notebook(
        connector=lambda argv, cwd, env: memory_connector(
            data_dir=tmp_path / "agent", scenario=scenario
        )
    )
    notebook.set_panel_auto(make=False)
    notebook.connect("mem", ["(in memory)"], str(tmp_path))
    yield notebook
    notebook.shutdown()


def widgets_in(widget: Any) -> list[Any]:
    found = [widget]
    for child in getattr(widget, "children", ()):
        found += widgets_in(child)
    return found


def test_a_cell_shows_a_rule_decision_as_a_row_and_asks_a_person_with_a_card(nb: Notebook) -> None:
    """``--deny 'rm *' --allow ls --allow true``: two rules decide (rows, no widget); the
    third request is asked with a card: the policy leaves it to a person."""
    policy = Policy.from_globs(["ls"], ["rm *"])
    run = start_run(nb, policy=policy)
    decisions = run.session.permissions

    async def all_asked() -> None:
        import anyio

        with anyio.fail_after(30):
            while len(run.asked) < 3:
                await anyio.sleep(0.005)  # the agent's requests are on their way

    run.io.call(all_asked)
    rows = [c for c in run.cards if isinstance(c, PermissionRow)]
    cards = [c for c in run.cards if isinstance(c, PermissionCard)]
    assert [r.request.subject.command for r in rows] == ["rm -rf build", "ls"]
    assert [c.request.subject.command for c in cards] == ["true"]
    assert rows[0].outcome_text == "Rejected: Reject - by policy --deny 'rm *' · reject once"
    assert rows[1].outcome_text == "Approved: Allow once - by policy --allow 'ls' · allow once"
    assert [(d.option_id, d.decided_by) for d in decisions[:2]] == [("no", "policy"),
                                                                    ("yes", "policy")]  # fmt: skip
    run.io.call(run.view.refresh)
    buttons = [w for w in widgets_in(run.view) if isinstance(w, ipywidgets.Button)]
    assert {b.description for b in buttons} >= {"Allow once", "Reject"}
    assert len([b for b in buttons if b.description == "Allow once"]) == 1  # the card's only
    [card] = cards
    card.buttons[0].click()
    assert run.done is not None and run.done.result(30) == "end_turn"
    text = run.view.static_text()
    assert "decision: Rejected: Reject - by policy --deny 'rm *'" in text
    assert "decision: Approved: Allow once - by policy --allow 'ls'" in text
    assert "decision: Approved: Allow once - by a click" in text
