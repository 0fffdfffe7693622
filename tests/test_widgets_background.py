"""The "still running" section of a turn view: background items after the turn's idle."""

from __future__ import annotations

from typing import Any

from acp_notebook._state import SessionState
from acp_notebook._widgets import TurnView
from tests.test_widgets_turn import apply, chunk, out

TERM = {
    "sessionUpdate": "terminal_update",
    "terminalId": "t1",
    "command": "tail -f build.log",
    "size": {"cols": 100, "rows": 30},
    "capabilities": {"cancel": {}},
}
CALL = {
    "sessionUpdate": "tool_call_update",
    "toolCallId": "c1",
    "title": "Index the repository",
    "status": "in_progress",
    "capabilities": {"cancel": {}},
}


def idle(
    background: list[dict[str, Any]] | None, reason: str | None = "end_turn"
) -> dict[str, Any]:
    update: dict[str, Any] = {"sessionUpdate": "state_update", "state": "idle"}
    if reason is not None:
        update["stopReason"] = reason
    if background is not None:
        update["background"] = background
    return update


def started(
    *updates: dict[str, Any], stops: list[tuple[str, str]] | None = None
) -> tuple[SessionState, TurnView]:
    state = SessionState("s")
    turn = state.begin_turn("go")
    calls = stops if stops is not None else []
    view = TurnView(
        turn,
        "go",
        on_cancel_terminal=lambda tid: calls.append(("terminal", tid)),
        on_cancel_tool_call=lambda cid: calls.append(("tool_call", cid)),
    )
    apply(state, *updates, view=view)
    view.refresh()
    return state, view


def text(view: TurnView) -> str:
    section = view.background
    assert section is not None
    return " ".join(w.value for w in section.widgets() if hasattr(w, "value"))


def stop_shown(view: TurnView, key: tuple[str, str]) -> bool:
    section = view.background
    assert section is not None
    return bool(section.rows[key].stop.layout.display != "none")


def test_a_background_terminal_stays_live_after_idle_and_shows_its_exit() -> None:
    bg = [{"type": "terminal", "terminalId": "t1"}]
    state, view = started(TERM, out("t1", b"started\r\n"), idle(bg))
    assert view.background_running
    assert "still running: 1" in text(view) and "tail -f build.log" in text(view)
    assert stop_shown(view, ("terminal", "t1"))
    assert view.background in view.children
    widget = view.terminal_widgets["t1"]
    assert (widget.cols, widget.rows) == (100, 30)  # the terminal's size
    fed = view._terms["t1"].fed
    apply(state, out("t1", b"tick 0\r\n"), view=view)  # after idle: still fed
    assert view._terms["t1"].fed == fed + len(b"tick 0\r\n")

    apply(
        state,
        {
            "sessionUpdate": "terminal_update",
            "terminalId": "t1",
            "exitStatus": {"signal": "SIGTERM"},
        },
        idle([], None),
        view=view,
    )
    view.refresh()
    assert not view.background_running
    assert "background work ended" in text(view) and "signal SIGTERM" in text(view)
    assert not stop_shown(view, ("terminal", "t1"))
    assert widget.exit_status == {"signal": "SIGTERM"}


def test_stop_buttons_call_terminal_cancel_and_tool_call_cancel() -> None:
    stops: list[tuple[str, str]] = []
    bg = [{"type": "terminal", "terminalId": "t1"}, {"type": "tool_call", "toolCallId": "c1"}]
    _state, view = started(TERM, CALL, idle(bg), stops=stops)
    section = view.background
    assert section is not None
    assert "still running: 2" in text(view) and "in_progress" in text(view)
    section.rows[("terminal", "t1")].stop.click()
    section.rows[("tool_call", "c1")].stop.click()
    assert stops == [("terminal", "t1"), ("tool_call", "c1")]


def test_an_item_without_cancel_gets_no_stop_and_a_left_item_shows_its_final_state() -> None:
    call = {**CALL, "capabilities": None}
    bg = [{"type": "tool_call", "toolCallId": "c1"}]
    state, view = started(call, idle(bg))
    assert not stop_shown(view, ("tool_call", "c1"))
    apply(state, {**CALL, "status": "completed"}, idle([], None), view=view)
    view.refresh()
    assert "completed" in text(view) and "background work ended" in text(view)


def test_a_stop_error_is_shown_on_the_item() -> None:
    bg = [{"type": "terminal", "terminalId": "t1"}]
    _state, view = started(TERM, idle(bg))
    view.stop_failed("terminal", "t1", "cannot stop t1 now")
    assert "stop failed: cannot stop t1 now" in text(view)
    assert stop_shown(view, ("terminal", "t1"))  # still running: it can be tried again


def test_no_section_without_background_or_for_an_earlier_turn() -> None:
    _state, view = started(TERM, idle(None))
    assert view.background is None and not view.background_running
    bg = [{"type": "terminal", "terminalId": "t1"}]
    state, view = started(TERM, idle(bg))
    assert view.background_running
    state.begin_turn("next")  # the next turn of the session: this one's section stops
    assert not view.turn.background


def test_a_later_turn_carries_on_the_background_work_an_earlier_turn_started() -> None:
    # claude-agent-acp: a background command of the first prompt runs on through a second one
    # that reports no output of it; the second turn's view shows it live and stoppable.
    stops: list[tuple[str, str]] = []
    bg = [{"type": "terminal", "terminalId": "t1"}]
    state, _view = started(TERM, out("t1", b"tick 0\r\n"), idle(bg))
    turn2 = state.begin_turn("next")
    view2 = TurnView(turn2, "next", on_cancel_terminal=lambda tid: stops.append(("terminal", tid)))
    apply(state, {"sessionUpdate": "state_update", "state": "running", "background": bg})
    apply(state, chunk("m2", "Second answer"), idle(bg), view=view2)
    view2.refresh()
    assert turn2.background == [("terminal", "t1")]
    assert "still running: 1" in text(view2) and "tail -f build.log" in text(view2)
    # a live view from where this turn began: what came before is the first cell's (issue 25,
    # finding 6: it was copied in full into every later turn), and its note says so
    live = view2.terminal_widgets["t1"]
    live.flush()
    assert live.data == b"" and "started in an earlier cell" in live.note
    fed = view2._terms["t1"].fed
    apply(state, out("t1", b"tick 1\r\n"), view=view2)
    assert view2._terms["t1"].fed == fed + len(b"tick 1\r\n")
    live.flush()
    assert live.data == b"tick 1\r\n"
    view2.background.rows[("terminal", "t1")].stop.click()  # type: ignore[union-attr]
    assert stops == [("terminal", "t1")]


def test_an_earlier_turns_section_says_a_later_turn_carries_its_work_on() -> None:
    bg = [{"type": "terminal", "terminalId": "t1"}]
    state, view = started(TERM, idle(bg))
    state.begin_turn("next")  # the work goes on, shown by the next turn's view
    view.refresh()
    assert "background work ended" not in text(view)
    assert "carried on by a later turn" in text(view)
    assert not stop_shown(view, ("terminal", "t1"))  # the later turn's view stops it
    assert "running" not in text(view).replace("carried on", "")


def test_the_error_stop_reason_is_shown_in_the_footer() -> None:
    _state, view = started(idle(None, "error"))
    assert "failed" in view._footer.value
    _state, view = started(
        {**idle(None, "error"), "error": {"code": -32603, "message": "model overloaded"}}
    )
    assert "failed: model overloaded" in view._footer.value


def test_a_size_change_after_idle_resizes_the_live_terminal() -> None:
    bg = [{"type": "terminal", "terminalId": "t1"}]
    state, view = started(TERM, out("t1", b"x"), idle(bg))
    resize = {
        "sessionUpdate": "terminal_update",
        "terminalId": "t1",
        "size": {"cols": 132, "rows": 9},
    }
    apply(state, resize, view=view)
    view.refresh()
    widget = view.terminal_widgets["t1"]
    assert (widget.cols, widget.rows) == (132, 9)  # the xterm view resizes on change:cols/rows
