"""A turn's tool calls cost what they show (issue 29): rows of shared HTML widgets, a box only
for a call with a card or a live terminal, a bounded number of messages per refresh."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import comm
import pytest

from acp_notebook._protocol import RequestPermissionRequest, parse_session_update
from acp_notebook._state import SessionState, TurnState
from acp_notebook._widgets import PermissionCard, TurnView
from acp_notebook._widgets._calls import GROUP_CALLS, GROUP_CHARS
from acp_notebook._widgets._transcript import MAX_LISTED_TOOL_CALLS

Published = list[tuple[str, str, Any]]
AGENT = Path(__file__).parent / "adversarial" / "agents" / "toolcalls_agent.py"


def _agent() -> Any:
    spec = importlib.util.spec_from_file_location("toolcalls_agent", AGENT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: the three updates of tool call n, as the scripted agent of the kernel tests sends them
call_updates: Callable[[int], list[dict[str, Any]]] = _agent().call_updates


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


def apply(state: SessionState, view: TurnView, *updates: dict[str, Any]) -> None:
    for update in updates:
        model = parse_session_update(update)
        state.apply(model)
        view.note_update(model)


def run_calls(state: SessionState, view: TurnView, calls: range, refresh_every: int) -> int:
    """Apply every update of ``calls`` and refresh every ``refresh_every`` updates (as the
    cell refreshes every 100 ms while updates stream); the number of refreshes."""
    refreshes = 0
    count = 0
    for n in calls:
        for update in call_updates(n):
            apply(state, view, update)
            count += 1
            if count % refresh_every == 0:
                view.refresh()
                refreshes += 1
    view.refresh()
    return refreshes + 1


def opened(published: Published, since: int = 0) -> dict[str, dict[str, Any]]:
    return {
        cid: dict(data.get("state", {}))
        for kind, cid, data in published[since:]
        if kind == "comm_open"
    }


def shown_html(view: TurnView) -> str:
    return "".join(str(getattr(child, "value", "")) for child in view._timeline.children)


def test_a_thousand_tool_calls_make_a_few_dozen_models(
    views: list[TurnView], published: Published
) -> None:
    """Finding: a turn of 1,000 tool calls made 4 models per listed call (1,241 models, in a
    real kernel); every listed call still shows its status, title, kind and content."""
    state, turn, view = new_view(views)
    before = len(published)
    run_calls(state, view, range(1000), refresh_every=30)
    models = opened(published, before)
    groups = -(-MAX_LISTED_TOOL_CALLS // GROUP_CALLS)
    assert len(models) <= groups + 25, len(models)  # was 1,241 (4 per listed call)
    html = shown_html(view)
    for n in range(MAX_LISTED_TOOL_CALLS):
        call = turn.tool_calls[f"call-{n}"]
        assert call.status == "completed"
        assert f"src/module_{n}.py</span>" in html  # the title (the header escapes it)
    assert html.count("acp-status-completed") == MAX_LISTED_TOOL_CALLS
    assert html.count('class="acp-tool-call"') == MAX_LISTED_TOOL_CALLS
    assert "line 7: the quick brown fox" in html  # text content
    assert "value = 10</span>" in html and "acp-diff-add" in html  # the 10th call's diff
    assert 'title="tool kind: edit"' in html and 'title="tool kind: read"' in html
    assert "700 more tool calls" in all_values(view)


def all_values(widget: Any) -> str:
    parts = [str(getattr(widget, "value", ""))]
    for child in getattr(widget, "children", ()):
        parts.append(all_values(child))
    return "".join(parts)


def test_rows_share_one_layout_and_one_style(views: list[TurnView], published: Published) -> None:
    """ipywidgets 8 makes a Layout and a style model per widget unless given one: the groups
    (and the view's other HTML parts) all point at the same two."""
    state, _turn, view = new_view(views)
    before = len(published)
    run_calls(state, view, range(200), refresh_every=50)
    html_models = [s for s in opened(published, before).values() if s["_model_name"] == "HTMLModel"]
    assert len(html_models) >= 200 // GROUP_CALLS
    assert len({s["layout"] for s in html_models}) == 1
    assert len({s["style"] for s in html_models}) == 1
    names = [s["_model_name"] for s in opened(published, before).values()]
    assert names.count("LayoutModel") <= 3 and names.count("HTMLStyleModel") <= 1


def test_a_refresh_sends_only_the_groups_that_changed(
    views: list[TurnView], published: Published
) -> None:
    state, _turn, view = new_view(views)
    run_calls(state, view, range(100), refresh_every=1000)
    groups = [c for c in view._timeline.children if "acp-tool-calls" in c._dom_classes]
    assert len(groups) == 100 // GROUP_CALLS
    before = len(published)
    view.refresh()
    assert published[before:] == []  # nothing changed, nothing sent
    apply(
        state,
        view,
        {"sessionUpdate": "tool_call_update", "toolCallId": "call-30", "status": "failed"},
    )
    view.refresh()
    updated = {cid for kind, cid, _ in published[before:] if kind == "comm_msg"}
    assert updated == {groups[1].model_id}  # call 30 is in the second group, and only it went
    assert "acp-status-failed" in groups[1].value


def test_the_message_rate_is_bounded_by_the_refreshes(
    views: list[TurnView], published: Published
) -> None:
    """However many updates come, a refresh sends a few messages: the groups that changed,
    the timeline's children when a group is added, the footer and the "more" line."""
    state, _turn, view = new_view(views)
    before = len(published)
    refreshes = run_calls(state, view, range(1000), refresh_every=30)
    sent = [kind for kind, _cid, _data in published[before:] if kind in ("comm_open", "comm_msg")]
    assert len(sent) <= 6 * refreshes, (len(sent), refreshes)
    # and it grows with the refreshes, not with the updates (3,000 here)
    assert len(sent) < 1000


def test_groups_stay_small(views: list[TurnView]) -> None:
    """A group holds at most GROUP_CALLS calls or about GROUP_CHARS characters; a call longer
    than that is a group of its own (a change re-sends its whole group)."""
    state, _turn, view = new_view(views)
    run_calls(state, view, range(60), refresh_every=1000)
    big = "x" * (GROUP_CHARS + 10)
    apply(
        state,
        view,
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "big",
            "title": "big",
            "status": "completed",
            "content": [{"type": "content", "content": {"type": "text", "text": big}}],
        },
    )
    run_calls(state, view, range(60, 70), refresh_every=1000)
    groups = [c for c in view._timeline.children if "acp-tool-calls" in c._dom_classes]
    counts = [c.value.count('class="acp-tool-call"') for c in groups]
    assert counts == [GROUP_CALLS, GROUP_CALLS, 60 - 2 * GROUP_CALLS, 1, 10]
    assert big in groups[3].value
    assert all(len(c.value) <= GROUP_CHARS for i, c in enumerate(groups) if i != 3)


def permission(tool_call_id: str) -> RequestPermissionRequest:
    return RequestPermissionRequest.model_validate(
        {
            "sessionId": "s1",
            "title": "Edit?",
            "options": [
                {"optionId": "ok", "name": "Allow", "kind": "allow_once"},
                {"optionId": "no", "name": "Reject", "kind": "reject_once"},
            ],
            "subject": {
                "type": "tool_call",
                "toolCall": {"toolCallId": tool_call_id, "title": "Edit src/module_9.py"},
            },
        }
    )


def test_a_call_with_a_card_gets_its_own_box_in_place(views: list[TurnView]) -> None:
    state, _turn, view = new_view(views)
    run_calls(state, view, range(12), refresh_every=1000)
    card = PermissionCard(permission("call-9"), lambda o, b: None)
    view.add_card(card)
    part = view._calls["call-9"]
    assert part.boxed and card in part.box.children
    children = view._timeline.children
    assert children.index(part.box) == 1  # after the group of calls 0-8, before 10-11
    first, second = children[0].value, children[2].value
    assert first.count('class="acp-tool-call"') == 9 and "module_8.py" in first
    assert second.count('class="acp-tool-call"') == 2 and "module_10.py" in second
    # the box shows what the row showed: header, diff, input and output
    box_html = all_values(part.box)
    assert "Edit src/module_9.py" in box_html and "value = 10" in box_html
    assert re.search(r"input", box_html) and re.search(r"output", box_html)


def test_rows_and_boxes_name_their_call_escaped(views: list[TurnView]) -> None:
    """The front end keeps what a person folded in a call by the call's name (src/folds.ts):
    a row names it, and a box names it in its header; an agent's id is escaped as an
    attribute value."""
    state, _turn, view = new_view(views)
    hostile = 'call-"><script>x</script>'
    update = {**call_updates(0)[0], "toolCallId": hostile}
    apply(state, view, update, *call_updates(1), *call_updates(2))
    view.add_card(PermissionCard(permission("call-2"), lambda o, b: None))
    view.refresh()
    rows = view._timeline.children[0].value
    assert 'data-acp-call="call-&quot;&gt;&lt;script&gt;x&lt;/script&gt;"' in rows
    assert 'data-acp-call="call-1"' in rows and "<script>" not in rows
    header = view._calls["call-2"].header
    assert header is not None and header.value.startswith('<div data-acp-call="call-2">')


def test_a_call_with_a_live_terminal_gets_its_own_box(views: list[TurnView]) -> None:
    state, _turn, view = new_view(views)
    run_calls(state, view, range(3), refresh_every=1000)
    apply(
        state,
        view,
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "run",
            "title": "make",
            "kind": "execute",
            "status": "in_progress",
            "content": [{"type": "terminal", "terminalId": "t1"}],
        },
    )
    view.refresh()
    assert not view._calls["run"].boxed  # a terminal not started yet is a line of text
    assert "not started" in view._calls["run"].fragment
    apply(state, view, {"sessionUpdate": "terminal_update", "terminalId": "t1", "command": "make"})
    view.refresh()
    part = view._calls["run"]
    widget = view.terminal_widgets["t1"]
    assert part.boxed and widget in part.box.children
    assert view.call_shown_in("run") is part.box in view._timeline.children
    assert view.call_shown_in("call-0") is view._timeline.children[0]


def test_closing_the_view_closes_the_groups_and_boxes(
    views: list[TurnView], published: Published
) -> None:
    state, _turn, view = new_view(views)
    before = len(published)
    view.refresh()
    run_calls(state, view, range(80), refresh_every=10)
    view.add_card(PermissionCard(permission("call-9"), lambda o, b: None))
    view.close_all()
    opened_ids = set(opened(published, before))
    closed = {cid for kind, cid, _ in published[before:] if kind == "comm_close"}
    assert opened_ids and opened_ids <= closed
