"""Finding 15 of issue 22: one message can build unbounded UI. Each cap has a test here: open
permission cards and questions per cell (`CellRun`, an agent served in memory), the diff a card,
a turn view and the saved notebook show, the tool calls a turn lists, `%acp sessions`. The
form field cap is in test_widgets_elicitation.py, the 59 MB write in test_cells_services.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from _runs import start_run
from test_cells import COMMAND_REQUEST, QUESTION, Scripted
from test_widgets_turn import apply, session

from acp_notebook._notebook._cells import MAX_OPEN_PERMISSIONS, MAX_OPEN_QUESTIONS, CellRun
from acp_notebook._policy._rules import Policy
from acp_notebook._protocol import DiffToolCallContent, RequestPermissionRequest
from acp_notebook._widgets import PermissionCard, TurnView
from acp_notebook._widgets._parts import (
    DIFF_PARSED_CHARS,
    DIFF_SHOWN_CHARS,
    DIFF_SHOWN_LINES,
    content_html,
)
from acp_notebook._widgets._turn import MAX_LISTED_TOOL_CALLS

CANCELLED = {"outcome": {"outcome": "cancelled"}}


@pytest.fixture
def scripted(tmp_path: Path) -> Iterator[Scripted]:
    made = Scripted(tmp_path, panel=False)
    yield made
    made.nb.shutdown()


def _wait(run: CellRun, condition: Any) -> None:
    """Wait, on the I/O thread, until ``condition()`` holds (the agent's requests are on
    their way: no decision is waited for with a sleep)."""

    async def wait() -> None:
        with anyio.fail_after(60):
            while not condition():
                await anyio.sleep(0.005)

    run.io.call(wait)


def _command(command: str) -> dict[str, Any]:
    return {
        **COMMAND_REQUEST,
        "title": f"Run `{command}`?",
        "subject": {"type": "command", "command": command, "cwd": "/w"},
    }


# -- open permission cards and questions per cell -----------------------------------------------


def test_permission_requests_past_the_open_cap_are_cancelled_and_counted_on_one_line(
    scripted: Scripted,
) -> None:
    """2,000 requests at once made 2,000 cards. Past `MAX_OPEN_PERMISSIONS` open ones a request
    is answered cancelled without a card, even one an ``--allow`` rule would allow."""
    run = start_run(scripted.nb, policy=Policy.from_globs(["make *"], []))
    held = [scripted.ask("session/request_permission", _command(f"rm x{i}")) for i in range(16)]
    assert len(held) == MAX_OPEN_PERMISSIONS
    _wait(run, lambda: len(run.cards) == MAX_OPEN_PERMISSIONS)
    extra = 200
    # past the cap: `make watch` is allowed by the rule, and still not allowed
    make = _command("make watch")
    answers = [scripted.ask("session/request_permission", make) for _ in range(extra)]
    assert all(a.result(30) == CANCELLED for a in answers)
    assert len(run.cards) == MAX_OPEN_PERMISSIONS  # no card past the cap
    overflow = run.overflow
    assert overflow is not None and overflow.permissions == extra
    cards = run.io.call(lambda: run.view.cards)
    assert cards.count(overflow) == 1  # one line, updated in place
    line = overflow.transcript_text()[0]
    assert f"{extra:,} permission requests" in line
    assert f"at most {MAX_OPEN_PERMISSIONS} cards open" in line
    refused = [d for d in run.session.permissions if d.decided_by == "overflow"]
    assert len(refused) == extra and not any(d.allowed for d in refused)
    assert "Not asked" in run.io.call(run.view.static_html)
    # an answered card frees its place: the next request gets a card (and the rule)
    run.cards[0].buttons[1].click()  # Reject
    assert held[0].result(30) != CANCELLED
    allowed = scripted.ask("session/request_permission", _command("make watch"))
    assert allowed.result(30) == {"outcome": {"outcome": "selected", "optionId": "yes"}}
    assert len(run.cards) == MAX_OPEN_PERMISSIONS + 1
    assert overflow.permissions == extra


def test_questions_past_the_open_cap_are_cancelled_and_counted(scripted: Scripted) -> None:
    run = start_run(scripted.nb)
    held = [scripted.ask("elicitation/create", QUESTION) for _ in range(MAX_OPEN_QUESTIONS)]
    _wait(run, lambda: len(run.forms) == MAX_OPEN_QUESTIONS)
    answers = [scripted.ask("elicitation/create", QUESTION) for _ in range(50)]
    assert all(a.result(30) == {"action": "cancel"} for a in answers)
    assert len(run.forms) == MAX_OPEN_QUESTIONS
    assert run.overflow is not None and run.overflow.questions == 50
    assert "50 questions" in run.overflow.transcript_text()[0]
    assert not any(h.done() for h in held)


def test_a_form_past_the_field_cap_is_answered_cancel_with_its_reason(scripted: Scripted) -> None:
    from acp_notebook._client._elicitation import MAX_FORM_FIELDS

    properties = {f"f{i}": {"type": "boolean"} for i in range(3_000)}
    form = {**QUESTION, "requestedSchema": {"type": "object", "properties": properties}}
    run = start_run(scripted.nb)
    assert scripted.ask("elicitation/create", form).result(30) == {"action": "cancel"}
    [card] = run.forms
    assert card.fields == {} and card.buttons == {}
    [decision] = run.session.elicitations
    assert decision.decided_by == "invalid"
    assert f"3,000 fields (at most {MAX_FORM_FIELDS} are shown)" in decision.detail


# -- --timeout counts from a request's arrival ---------------------------------------------------


def test_the_card_countdown_counts_from_the_requests_arrival(scripted: Scripted) -> None:
    import time

    run = start_run(scripted.nb, timeout=30)
    assert run.card_timeout() == 30
    left = run.card_timeout(since=time.time() - 10)
    assert left is not None and 19 <= left <= 20
    assert run.card_timeout(since=time.time() - 100) == 0.0


# -- the diff a card and the saved notebook show -------------------------------------------------


def _diff(lines: int, *, width: int = 10) -> DiffToolCallContent:
    body = "".join(f"+{'x' * width}{i}\n" for i in range(lines))
    head = "diff --git a/f b/f\nnew file mode 100644\n--- /dev/null\n+++ b/f\n"
    patch = f"{head}@@ -0,0 +1,{lines} @@\n"
    return DiffToolCallContent.model_validate(
        {
            "type": "diff",
            "changes": [{"operation": "add", "path": "f", "fileType": "text"}],
            "patch": {"format": "git_patch", "text": patch + body},
        }
    )


def test_a_diff_shows_at_most_its_cap_of_lines_then_counts_the_rest() -> None:
    lines = 100_000
    html = content_html(_diff(lines))
    shown = html.count('class="acp-diff-add"')
    assert shown == DIFF_SHOWN_LINES - 1  # and the hunk header
    assert f"… {lines + 1 - DIFF_SHOWN_LINES:,} more lines of the diff not shown" in html
    assert len(html) < 4 * DIFF_SHOWN_CHARS


def test_a_diff_of_long_lines_stops_at_its_cap_of_characters() -> None:
    html = content_html(_diff(50, width=DIFF_SHOWN_CHARS // 10))
    assert html.count('class="acp-diff-add"') < 12
    assert "more lines of the diff not shown" in html
    assert len(html) < 2 * DIFF_SHOWN_CHARS
    one = content_html(_diff(1, width=3 * DIFF_SHOWN_CHARS))  # one line: cut in it
    assert "x…</span>" in one and len(one) < 2 * DIFF_SHOWN_CHARS


def test_a_60_mb_diff_is_neither_parsed_whole_nor_saved_whole() -> None:
    """One 60 MB diff put 86 MB of HTML into the saved notebook."""
    lines = 5_000_000  # 12 characters a line: 60 MB
    item = _diff(lines)
    assert len(item.patch.text) > 50 * DIFF_PARSED_CHARS  # type: ignore[union-attr]
    html = content_html(item)
    assert len(html) < 4 * DIFF_SHOWN_CHARS
    assert f"… {lines + 1 - DIFF_SHOWN_LINES:,} more lines of the diff not shown" in html
    request = RequestPermissionRequest.model_validate(
        {
            "sessionId": "s1",
            "title": "Write f",
            "options": COMMAND_REQUEST["options"],
            "subject": {
                "type": "tool_call",
                "toolCall": {"toolCallId": "w", "title": "Write f", "content": [item.to_wire()]},
            },
        }
    )
    card = PermissionCard(request, lambda *_: None)
    saved = json.dumps(card.static_bundle())
    assert len(saved) < 4 * DIFF_SHOWN_CHARS
    card.close_quietly()


def test_a_turn_saves_a_capped_diff() -> None:
    state, turn = session()
    view = TurnView(turn, "edit")
    edit = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "e1",
        "title": "Edit f",
        "kind": "edit",
        "content": [_diff(200_000).to_wire()],
    }
    apply(state, edit, view=view)
    view.refresh()
    assert len(view.static_html()) < 4 * DIFF_SHOWN_CHARS + 20_000
    assert "more lines of the diff not shown" in view.static_html()
    view.close_all()


# -- tool calls listed per turn ------------------------------------------------------------------


def _models() -> int:
    from ipywidgets.widgets.widget import _instances

    return len(_instances)


def test_a_turn_lists_at_most_its_cap_of_tool_calls_and_counts_the_rest() -> None:
    """10,000 tool calls in one turn: the first `MAX_LISTED_TOOL_CALLS` are listed, the rest
    counted on one line updated in place, live and in the saved transcript."""
    state, turn = session()
    before = _models()
    view = TurnView(turn, "work")
    total = 10_000
    for i in range(total):
        call = {
            "sessionUpdate": "tool_call_update",
            "toolCallId": f"c{i}",
            "title": f"step {i}",
            "kind": "read",
            "status": "completed",
        }
        apply(state, call, view=view)
        if i % 1000 == 0:
            view.refresh()
    view.refresh()
    assert len(view._calls) == MAX_LISTED_TOOL_CALLS
    assert _models() - before < 3 * MAX_LISTED_TOOL_CALLS + 50
    more = f"… {total - MAX_LISTED_TOOL_CALLS:,} more tool calls not listed"
    assert more in view._more_calls.value and view._more_calls in view.children
    text = view.static_text()
    assert more in text and f"step {MAX_LISTED_TOOL_CALLS - 1}" in text
    assert f"step {MAX_LISTED_TOOL_CALLS} [" not in text
    html = view.static_html()
    assert more in html and html.count('class="acp-tool-call"') == MAX_LISTED_TOOL_CALLS
    assert len(turn.tool_calls) == total  # the state keeps them all
    view.close_all()


def test_a_card_for_a_tool_call_past_the_cap_is_still_shown() -> None:
    state, turn = session()
    view = TurnView(turn, "work")
    for i in range(MAX_LISTED_TOOL_CALLS + 1):
        apply(state, {"sessionUpdate": "tool_call_update", "toolCallId": f"c{i}"}, view=view)
    late = f"c{MAX_LISTED_TOOL_CALLS}"
    request = RequestPermissionRequest.model_validate(
        {
            "sessionId": "s1",
            "title": "Run it?",
            "options": COMMAND_REQUEST["options"],
            "subject": {"type": "tool_call", "toolCall": {"toolCallId": late, "title": "x"}},
        }
    )
    card = PermissionCard(request, lambda *_: None)
    view.add_card(card)
    assert card in view._timeline.children
    assert "1 more tool call not listed" in view._more_calls.value
    view.close_all()


# -- %acp sessions -------------------------------------------------------------------------------


def test_acp_sessions_prints_at_most_its_cap_of_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`%acp sessions --all` over 100,000 sessions put 4.8 MB into the cell."""
    from contextlib import asynccontextmanager

    from _memory import scripted_agent

    from acp_notebook._magics._commands import MAX_SESSIONS_SHOWN, SESSION_LINE_CHARS, _sessions
    from acp_notebook._notebook._owner import Notebook

    total = 20_000

    async def handler(method: str, params: Any) -> Any:
        if method == "session/list":
            sessions = [
                {
                    "sessionId": f"id{i}",
                    "cwd": "/w",
                    "title": "t" * (5 * SESSION_LINE_CHARS if i == 59 else 5),  # newest
                    "updatedAt": f"2026-01-01T00:00:{i % 60:02d}Z",
                }
                for i in range(total)
            ]
            return {"sessions": sessions}
        from acp_notebook._connection._errors import MethodNotFound

        raise MethodNotFound(method)

    @asynccontextmanager
    async def connector(**options: Any) -> Any:
        async with scripted_agent(handler, **options) as (agent, _peer):
            yield agent

    nb = Notebook(connector=lambda argv, cwd, env: connector)
    nb.set_panel_auto(make=False)
    try:
        nb.connect("many", ["(scripted)"], str(tmp_path))
        capsys.readouterr()
        _sessions(nb, ["--all"])
        out = capsys.readouterr().out
    finally:
        nb.shutdown()
    lines = out.splitlines()
    assert lines[0].startswith(f"acp: {total} session(s)")
    rows = [line for line in lines[1:] if " id" in line]
    assert len(rows) == MAX_SESSIONS_SHOWN
    assert lines[-1] == (
        f"  … {total - MAX_SESSIONS_SHOWN:,} more (older) sessions not shown"
        f" (at most {MAX_SESSIONS_SHOWN})"
    )
    assert all(len(line) <= SESSION_LINE_CHARS + 1 for line in lines[1:])
    assert any(line.endswith("t…") for line in rows)  # the long one, cut
    assert len(out) < 40_000
