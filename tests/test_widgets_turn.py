"""TurnView: rendering from real update models, cheap refreshes, terminal feeding, transcripts."""

from __future__ import annotations

import base64
import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import comm
import pytest

from acp_notebook._protocol import RequestPermissionRequest, parse_session_update
from acp_notebook._state import SessionState, TerminalState, TurnState
from acp_notebook._widgets import PermissionCard, TerminalWidget, TurnView
from acp_notebook._widgets._parts import STYLE
from acp_notebook._widgets._turn import LIVE_TEXT

Published = list[tuple[str, str, Any]]
#: what a saved terminal says keeps the lines it left out (issue 25, finding 14)
KEEPS = "(`-o` keeps them all; the live view scrolls back 10,000 lines)"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def apply(state: SessionState, *updates: dict[str, Any], view: TurnView | None = None) -> None:
    """Apply updates as the bridge does: state first, then the view notes the arrival order."""
    for update in updates:
        model = parse_session_update(update)
        state.apply(model)
        if view is not None:
            view.note_update(model)


def chunk(message_id: str, text: str, kind: str = "agent_message_chunk") -> dict[str, Any]:
    return {
        "sessionUpdate": kind,
        "messageId": message_id,
        "content": {"type": "text", "text": text},
    }


def out(terminal_id: str, data: bytes) -> dict[str, Any]:
    return {"sessionUpdate": "terminal_output_chunk", "terminalId": terminal_id, "data": b64(data)}


RUN = {
    "sessionUpdate": "tool_call_update",
    "toolCallId": "call_1",
    "title": "Run tests",
    "kind": "execute",
    "status": "in_progress",
    "locations": [{"path": "tests/test_x.py", "line": 3}],
    "content": [{"type": "terminal", "terminalId": "term_1"}],
}
TERM = {
    "sessionUpdate": "terminal_update",
    "terminalId": "term_1",
    "command": "pytest -q",
    "cwd": "/work",
    "size": {"cols": 100, "rows": 30},
    "capabilities": {"cancel": {}},
}
EDIT = {
    "sessionUpdate": "tool_call_update",
    "toolCallId": "call_2",
    "title": "Edit files",
    "kind": "edit",
    "status": "completed",
    "content": [
        {
            "type": "diff",
            "changes": [
                {"operation": "modify", "path": "src/a.py"},
                {"operation": "add", "path": "logo.png", "fileType": "binary"},
            ],
            "patch": {
                "format": "git_patch",
                "text": "diff --git a/src/a.py b/src/a.py\n--- a/src/a.py\n+++ b/src/a.py\n"
                "@@ -1,2 +1,2 @@\n x = 1\n-y = <old>\n+y = <new>\n",
            },
        }
    ],
}
IDLE = {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}


@pytest.fixture
def published(monkeypatch: pytest.MonkeyPatch) -> Published:
    """Every comm message any widget sends (open, update, custom, close)."""
    sent: Published = []

    def publish(self: Any, msg_type: str, data: Any = None, *args: Any, **kwargs: Any) -> None:
        sent.append((msg_type, self.comm_id, data))

    monkeypatch.setattr(comm.DummyComm, "publish_msg", publish)
    return sent


@pytest.fixture
def make_view() -> Iterator[Callable[..., TurnView]]:
    made: list[TurnView] = []

    def make(turn: TurnState, prompt: str = "do it", **kwargs: Any) -> TurnView:
        view = TurnView(turn, prompt, **kwargs)
        made.append(view)
        return view

    yield make
    for view in made:
        view.close_all()


def session(prompt: str = "do it") -> tuple[SessionState, TurnState]:
    state = SessionState("s1")
    return state, state.begin_turn(prompt)


def all_html(widget: Any) -> str:
    """The concatenated HTML values of a widget tree."""
    parts = [str(getattr(widget, "value", ""))] if hasattr(widget, "value") else []
    for child in getattr(widget, "children", ()):
        parts.append(all_html(child))
    return "".join(parts)


def call_html(view: TurnView, call_id: str) -> str:
    """What the view shows of a tool call: its row of HTML, or its box's HTML parts."""
    part = view._calls[call_id]
    return all_html(part.box) if part.boxed else part.fragment


def flush_terminals(view: TurnView) -> None:
    for widget in view.terminal_widgets.values():
        widget.flush()


# -- markdown ------------------------------------------------------------------------------------


def test_agent_messages_render_as_escaped_markdown(make_view: Callable[..., TurnView]) -> None:
    state, turn = session()
    apply(
        state, chunk("m1", "# Title\n<script>alert(1)</script> "), chunk("m1", "[x](javascript:1)")
    )
    view = make_view(turn, "<b>prompt</b>")
    html = all_html(view)
    assert "<h1>Title</h1>" in html
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert 'href="javascript' not in html
    assert "&lt;b&gt;prompt&lt;/b&gt;" in html


# -- parts ---------------------------------------------------------------------------------------


def test_plan_thoughts_tool_calls_diffs_usage_and_stop(make_view: Callable[..., TurnView]) -> None:
    state, turn = session()
    apply(
        state,
        chunk("th", "thinking <hard>", "agent_thought_chunk"),
        {
            "sessionUpdate": "plan_update",
            "plan": {
                "type": "items",
                "planId": "p",
                "entries": [
                    {"content": "read", "priority": "high", "status": "completed"},
                    {"content": "write <code>", "priority": "low", "status": "in_progress"},
                ],
            },
        },
        RUN,
        EDIT,
        {"sessionUpdate": "usage_update", "used": 1200, "size": 200000},
    )
    view = make_view(turn)
    assert view._thoughts in view.children and view._thoughts.selected_index is None
    assert "thinking &lt;hard&gt;" in view._thoughts_html.value
    assert "write &lt;code&gt;" in view._plan.value and "completed" in view._plan.value
    html = all_html(view)
    assert "Run tests" in html and "execute" in html and "in_progress" in html
    assert "tests/test_x.py:3" in html
    assert '<details open class="acp-diff-fold">' in html  # one collapsible block per file
    assert "modify src/a.py (+1 -1)" in html and "add logo.png [binary]" in html
    assert '<span class="acp-diff-add">+y = &lt;new&gt;</span>' in html
    assert "working" in view._footer.value and "1200 / 200000" in view._footer.value
    apply(state, IDLE)
    view.refresh()
    assert "finished" in view._footer.value


def test_unknown_updates_and_notices_render_generically(make_view: Callable[..., TurnView]) -> None:
    state, turn = session()
    apply(
        state,
        {"sessionUpdate": "_vendor_thing", "payload": "<img src=x onerror=alert(1)>"},
        {"sessionUpdate": "notice", "severity": "warning", "title": "Rate <limited>"},
    )
    view = make_view(turn)
    assert view._extras in view.children
    html = view._extras.value
    assert "&lt;img src=x onerror=alert(1)&gt;" in html and "<img" not in html
    assert "Rate &lt;limited&gt;" in html and "_vendor_thing" in html


# -- refresh cost --------------------------------------------------------------------------------


def test_refresh_without_change_sends_nothing(
    make_view: Callable[..., TurnView], published: Published
) -> None:
    state, turn = session()
    apply(state, chunk("th", "hmm", "agent_thought_chunk"), chunk("m1", "hello"), RUN, TERM)
    apply(state, out("term_1", b"line 1\r\n"), EDIT, {"sessionUpdate": "_x", "a": 1})
    view = make_view(turn)
    view.refresh()
    flush_terminals(view)
    before = len(published)
    view.refresh()
    view.refresh()
    assert published[before:] == []
    apply(state, chunk("m1", " world"))
    view.refresh()
    updates = [data for kind, _, data in published[before:] if kind == "comm_msg"]
    assert [u["method"] for u in updates] == ["update"]  # only the message's HTML changed
    assert updates[0]["state"] == {"value": view._messages["m1"][0].value}
    assert "hello world" in view._messages["m1"][0].value


def test_order_follows_note_update(make_view: Callable[..., TurnView]) -> None:
    state, turn = session()
    view = make_view(turn)
    for update in (RUN, chunk("m1", "after the tool call")):
        model = parse_session_update(update)
        state.apply(model)
        view.note_update(model)
    view.refresh()
    boxes = view._timeline.children
    assert boxes[0] is view.call_shown_in("call_1")
    assert boxes[1] is view._messages["m1"][0]
    text = view.static_bundle()["text/plain"]
    assert text.index("Tool call: Run tests") < text.index("after the tool call")


# -- terminals -----------------------------------------------------------------------------------


def test_terminal_bytes_are_fed_once_each(
    make_view: Callable[..., TurnView], monkeypatch: pytest.MonkeyPatch
) -> None:
    fed: list[bytes] = []
    original = TerminalWidget.feed

    def spy(self: TerminalWidget, data: bytes) -> None:
        fed.append(data)
        original(self, data)

    monkeypatch.setattr(TerminalWidget, "feed", spy)
    state, turn = session()
    apply(state, RUN, TERM, out("term_1", b"one\r\n"))
    view = make_view(turn)
    widget = view.terminal_widgets["term_1"]
    view.refresh()
    apply(state, out("term_1", b"\x1b[31mtwo\x1b[0m\r\n"), out("term_1", b"three"))
    view.refresh()
    view.refresh()
    assert fed == [b"one\r\n", b"\x1b[31mtwo\x1b[0m\r\nthree"]
    assert widget.data == state.terminals["term_1"].data
    assert (widget.command, widget.cwd, widget.cols, widget.rows) == ("pytest -q", "/work", 100, 30)
    assert widget.can_cancel and widget.exit_status is None
    assert widget in view._calls["call_1"].box.children  # shown inside its tool call
    apply(
        state,
        {"sessionUpdate": "terminal_update", "terminalId": "term_1", "exitStatus": {"exitCode": 2}},
    )
    view.refresh()
    assert widget.exit_status == {"exitCode": 2}


def test_new_bytes_reach_an_existing_terminal_without_a_refresh(
    make_view: Callable[..., TurnView],
) -> None:
    """Bytes must not wait for the (throttled) refresh: note_update hands them on at once, so
    the terminal's coalescer can send them within its 40 ms. The exit badge goes out only after
    the last bytes."""
    state, turn = session()
    apply(state, RUN, TERM, out("term_1", b"one\r\n"))
    view = make_view(turn)  # its constructor refreshes once: the terminal view exists now
    widget = view.terminal_widgets["term_1"]
    sent: list[tuple[str, Any]] = []
    widget.send = lambda content, buffers=None: sent.append(("msg", bytes(buffers[0])))
    widget.observe(lambda change: sent.append(("exit", change["new"])), names="exit_status")
    apply(state, out("term_1", b"two\r\n"), out("term_1", b"three"), view=view)
    assert widget.data == b"one\r\ntwo\r\nthree"  # no refresh() in between
    apply(state, out("term_1", b"!"), view=view)
    apply(
        state,
        {"sessionUpdate": "terminal_update", "terminalId": "term_1", "exitStatus": {"exitCode": 0}},
        view=view,
    )
    view.refresh()
    assert sent[-1] == ("exit", {"exitCode": 0})
    assert b"".join(data for kind, data in sent if kind == "msg").endswith(b"three!")


def test_snapshot_replacement_resets_the_terminal(make_view: Callable[..., TurnView]) -> None:
    state, turn = session()
    apply(state, TERM, out("term_1", b"old output\n"))
    view = make_view(turn)
    widget = view.terminal_widgets["term_1"]
    sent: list[dict[str, Any]] = []
    widget.send = lambda content, buffers=None: sent.append(content)
    # A bigger snapshot: the byte count alone would not reveal the replacement.
    snapshot = b"a much longer replacement snapshot\n"
    apply(
        state,
        {
            "sessionUpdate": "terminal_update",
            "terminalId": "term_1",
            "output": {"data": b64(snapshot)},
        },
    )
    view.refresh()
    assert widget.data == snapshot
    assert [m["type"] for m in sent] == ["reset"]
    apply(state, out("term_1", b"more"))
    view.refresh()
    widget.flush()
    assert widget.data == snapshot + b"more"
    assert [m["type"] for m in sent] == ["reset", "chunk"]


def test_terminal_generation_and_since() -> None:
    term = TerminalState("t", max_bytes=64)
    term.append(b"abc\n")
    assert term.generation == 0 and term.since(1) == b"bc\n" and term.since(4) == b""
    term.replace(b"xyz")
    assert term.generation == 1 and term.total_bytes == 3 and term.since(0) == b"xyz"
    term.append(b"\n" + b"0123456789\n" * 10)
    assert term.omitted_bytes > 0
    assert term.since(0) == term.data  # an offset already dropped starts at the first kept byte
    assert term.since(term.total_bytes - 3) == b"89\n"


def test_unanchored_terminal_and_cancel_callback(make_view: Callable[..., TurnView]) -> None:
    cancelled: list[str] = []
    state, turn = session()
    apply(state, TERM, out("term_1", b"x"))
    view = make_view(turn, on_cancel_terminal=cancelled.append)
    widget = view.terminal_widgets["term_1"]
    assert view._terminals in view.children and widget in view._terminals.children
    widget._handle_view_msg(widget, {"type": "cancel"}, [])
    assert cancelled == ["term_1"]
    apply(state, RUN)  # now a tool call anchors it: it moves into the tool call
    view.refresh()
    assert view._terminals not in view.children
    assert widget in view._calls["call_1"].box.children


# -- cards ---------------------------------------------------------------------------------------


def permission(subject: dict[str, Any] | None) -> RequestPermissionRequest:
    payload: dict[str, Any] = {
        "sessionId": "s1",
        "title": "Run pytest?",
        "options": [
            {"optionId": "ok", "name": "Allow", "kind": "allow_once"},
            {"optionId": "no", "name": "Reject", "kind": "reject_once"},
        ],
    }
    if subject is not None:
        payload["subject"] = subject
    return RequestPermissionRequest.model_validate(payload)


def test_cards_go_with_their_tool_call(make_view: Callable[..., TurnView]) -> None:
    state, turn = session()
    apply(state, RUN, TERM)
    view = make_view(turn)
    choices: list[tuple[str | None, str]] = []
    subject = {"type": "command", "command": "pytest -q", "cwd": "/work", "toolCallId": "call_1"}
    card = PermissionCard(permission(subject), lambda o, b: choices.append((o, b)))
    loose = PermissionCard(permission(None), lambda o, b: choices.append((o, b)))
    view.add_card(card)
    view.add_card(loose)
    assert card in view._calls["call_1"].box.children
    assert loose in view._timeline.children
    card.buttons[0].click()
    card.mark_decided("ok", "click")
    view.close_all()  # the loose card was never answered: it fails closed
    assert choices == [("ok", "click"), (None, "closed")]


def test_a_terminal_asked_about_waits_then_a_refusal_says_not_run_with_the_agents_words(
    make_view: Callable[..., TurnView],
) -> None:
    # claude-agent-acp's order (issue 25, finding 1): the terminal and its command come before
    # the permission request; after a "No" the tool result arrives as the output snapshot.
    state, turn = session()
    apply(state, RUN, TERM)
    view = make_view(turn)
    subject = {"type": "tool_call", "toolCall": {"toolCallId": "call_1", "title": "pytest -q"}}
    card = PermissionCard(permission(subject), lambda o, b: None)
    view.add_card(card)
    [widget] = view.terminal_widgets.values()
    assert (widget.phase, widget.label) == ("waiting", "waiting for approval")
    card.mark_decided("no", "click")
    words = b"User refused permission to run tool"
    snapshot = {"sessionUpdate": "terminal_update", "terminalId": "term_1"}
    apply(state, {**snapshot, "output": {"data": b64(words)}}, {**snapshot, "exitStatus": {}})
    view.refresh()
    assert (widget.phase, widget.label, widget.note) == ("not-run", "not run", words.decode())
    assert widget.data == b""  # the words are the note, never the screen's bytes
    text = view.static_text()
    assert "agent: User refused permission to run tool" in text and "[not run]" in text
    assert "[exited]" not in text and "[running]" not in text
    html = view.static_html()
    assert '<div class="acp-terminal-note">User refused permission to run tool</div>' in html


def test_a_running_terminal_carries_when_it_started(make_view: Callable[..., TurnView]) -> None:
    state, turn = session()
    apply(state, RUN, TERM)
    view = make_view(turn)
    [widget] = view.terminal_widgets.values()
    assert widget.phase == "running" and widget.started_at > 0 and widget.note == ""


def test_a_later_turn_shows_a_carried_on_terminal_from_where_it_began(
    make_view: Callable[..., TurnView],
) -> None:
    # Issue 25, finding 6: a command left running in the background was copied in full into
    # every later turn. Its output before a turn began stays with the cell that started it.
    state, first = session("start the build")
    apply(state, TERM, out("term_1", b"one\n"))
    idle = {**IDLE, "background": [{"type": "terminal", "terminalId": "term_1"}]}
    apply(state, out("term_1", b"two\n"), idle)
    second = state.begin_turn("what next?")
    apply(state, out("term_1", b"three\n"))
    view = make_view(second, "what next?")
    view.refresh()
    [widget] = view.terminal_widgets.values()
    widget.flush()
    assert widget.data == b"three\n"  # not one, two: they are the first cell's
    assert widget.note == "started in an earlier cell, which shows its output until this turn began"
    text = view.static_text()
    assert "three" in text and "one" not in text and "two" not in text
    assert "note: started in an earlier cell" in text  # ours, not the agent's
    # the first turn's own view keeps it whole
    own = make_view(first, "start the build")
    own.refresh()
    [mine] = own.terminal_widgets.values()
    mine.flush()
    assert mine.data == b"one\ntwo\nthree\n" and mine.note == ""


# -- static output -------------------------------------------------------------------------------


def full_turn(make_view: Callable[..., TurnView]) -> tuple[TurnView, SessionState]:
    state, turn = session("run the tests")
    view = make_view(turn, "run the tests")
    apply(
        state,
        chunk("m1", "Running **tests** <now>."),
        RUN,
        TERM,
        out("term_1", b"\x1b[32m3 passed\x1b[0m\r\n10%\r100%\r\n"),
        {"sessionUpdate": "terminal_update", "terminalId": "term_1", "exitStatus": {"exitCode": 0}},
        EDIT,
        {"sessionUpdate": "tool_call_update", "toolCallId": "call_1", "status": "completed"},
        chunk("m2", "All good."),
        IDLE,
        view=view,
    )
    return view, state


def test_static_bundle_is_a_deterministic_transcript(make_view: Callable[..., TurnView]) -> None:
    bundles = []
    for _ in range(2):
        view, _state = full_turn(make_view)
        subject = {
            "type": "command",
            "command": "pytest -q",
            "cwd": "/work",
            "toolCallId": "call_1",
        }
        card = PermissionCard(permission(subject), lambda o, b: None)
        view.add_card(card)
        card.mark_decided("ok", "policy", "--allow 'pytest*'")
        bundles.append(view.static_bundle())
    assert bundles[0] == bundles[1]
    text = bundles[0]["text/plain"]
    assert text == "\n".join(
        [
            "> run the tests",
            "",
            "Running **tests** <now>.",
            "",
            "Tool call: Run tests [command] - completed",
            "  at tests/test_x.py:3",
            # the card first: it was asked before the command ran (issue 25, finding 17)
            "  Permission request: Run pytest?",
            "    command: pytest -q",
            "    cwd: /work",
            "    options: Allow [allow once], Reject [reject once]",
            "    decision: Approved: Allow - by policy --allow 'pytest*' · allow once",
            "  $ pytest -q  (in /work)",
            "  3 passed",
            "  100%",
            "  [exit 0]",
            "",
            "Tool call: Edit files [edit] - completed",
            "  diff: modify src/a.py (+1 -1)",
            "  diff: add logo.png [binary]",
            "",
            "All good.",
            "",
            "finished",
        ]
    )
    assert not re.search(r"0x[0-9a-f]{6,}|[0-9a-f]{32}", text)
    html = bundles[0]["text/html"]
    assert "Running <strong>tests</strong> &lt;now&gt;." in html
    assert "ansi-green-fg" in html and "3 passed" in html
    # the transcript carries its own colours: JupyterLab only colours ansi-* spans in text
    # outputs, and nbconvert's page style is not there when the HTML is shown elsewhere
    assert re.search(r"\.acp-turn-static \.ansi-green-fg\{color:#[0-9a-f]{6}\}", html)
    assert "Approved: Allow - by policy" in html and "finished" in html
    assert "<now>" not in html


def test_static_bundle_sends_nothing(
    make_view: Callable[..., TurnView], published: Published
) -> None:
    view, state = full_turn(make_view)
    view.refresh()
    flush_terminals(view)
    apply(state, chunk("m3", "late words"))  # not refreshed yet: the transcript still has them
    before = len(published)
    text = view.static_bundle()["text/plain"]
    assert published[before:] == []
    assert text.endswith("All good.\n\nlate words\n\nfinished")


def test_live_display_text_is_deterministic(make_view: Callable[..., TurnView]) -> None:
    view, _state = full_turn(make_view)
    bundle = view._repr_mimebundle_()
    assert bundle is not None
    assert bundle["text/plain"] == LIVE_TEXT == ""
    assert repr(view) == "<TurnView 'run the tests'>"
    assert "application/vnd.jupyter.widget-view+json" in bundle


def test_huge_terminal_transcript_is_capped(make_view: Callable[..., TurnView]) -> None:
    state, turn = session()
    apply(state, TERM, out("term_1", b"".join(b"line %06d\n" % i for i in range(60000))))
    view = make_view(turn)
    bundle = view.static_bundle()
    text = bundle["text/plain"]
    assert "line 059999" in text and "line 059800\n" in text and "line 059799" not in text
    # the lines before the converted tail are counted too
    note = "… 59,800 earlier lines not saved in the notebook " + KEEPS
    assert note in text and note in bundle["text/html"]
    assert len(text) < 4000 and len(bundle["text/html"]) < 8000


def test_seq_3000_saves_only_its_last_200_lines(make_view: Callable[..., TurnView]) -> None:
    state, turn = session("$ seq 1 3000")
    view = make_view(turn, "$ seq 1 3000")
    output = "".join(f"{i}\n" for i in range(1, 3001)).encode()
    apply(state, RUN, TERM, out("term_1", output[:7000]), out("term_1", output[7000:]), view=view)
    apply(state, {"sessionUpdate": "terminal_update", "terminalId": "term_1", "exitStatus": {}})
    view.refresh()
    bundle = view.static_bundle()
    note = "… 2,800 earlier lines not saved in the notebook " + KEEPS
    text, html = bundle["text/plain"], bundle["text/html"]
    body = text.split(note + "\n", 1)[1].split("\n  [exited]", 1)[0]
    assert body.split("\n") == [f"  {i}" for i in range(2801, 3001)]
    assert f'<span class="acp-omitted">{note}</span>\n2801\n2802\n' in html
    assert "\n3000</pre>" in html and "\n2800\n" not in html
    assert len(text) < 2500 and len(html) - html.index("<div class=") < 3000
    assert view.static_bundle() == bundle  # deterministic
    # everything is still there for the live view and for `-o`
    assert turn.terminals["term_1"].data == output
    flush_terminals(view)
    assert view.terminal_widgets["term_1"].data == output


def test_static_terminal_caps_bytes_and_a_single_huge_line() -> None:
    from acp_notebook._widgets._static import STATIC_BYTES, cap_tail

    wide = [f"{i:04d} " + "x" * 995 for i in range(60)]  # 60 lines of 1000 characters
    text, html = cap_tail("\n".join(wide), "\n".join(wide))
    lines = text.split("\n")
    assert (
        lines[0]
        == "… 44 earlier lines not saved in the notebook (the live view scrolls back 10,000 lines)"
    )
    assert lines[1].startswith("0044 ") and lines[-1].startswith("0059 ")
    assert len(text.encode()) <= STATIC_BYTES + 100 and len(html.encode()) <= STATIC_BYTES + 200
    # one line of 100 KB (no newline at all): its end, marked as cut; coloured HTML stays safe
    huge = "a<b" * 40_000
    text, html = cap_tail(huge, '<span class="ansi-red-fg">' + huge.replace("<", "&lt;"))
    assert text.startswith("…") and text.endswith("a<b") and len(text.encode()) <= STATIC_BYTES + 3
    assert html.startswith("…") and "<b" not in html and "<span" not in html
    assert cap_tail("ok\n", "<b>ok</b>\n") == ("ok\n", "<b>ok</b>\n")  # it fits: as it is


def test_exit_status_has_a_short_repr() -> None:
    state, turn = session()
    for status, shown in (
        ({"exitCode": 0}, "ExitStatus(exit_code=0)"),
        ({"signal": "SIGTERM"}, "ExitStatus(signal='SIGTERM')"),
        ({}, "ExitStatus()"),
    ):
        apply(state, {**TERM, "exitStatus": status})
        exit_status = turn.terminals["term_1"].exit_status
        assert repr(exit_status) == str(exit_status) == shown
        assert exit_status.to_wire() == status  # still the wire model underneath
    assert turn.terminals["term_1"].exit_label == "exited"


HIDDEN = "\u202e\x1b\x07"


def test_hidden_characters_are_visible_outside_the_card(
    make_view: Callable[..., TurnView],
) -> None:
    prompt = "$ echo \u202eexe.txt\x1b[2K\x07\nsecond\tline"  # e.g. from {var} interpolation
    state, turn = session(prompt)
    view = make_view(turn, prompt)
    apply(
        state,
        {
            "sessionUpdate": "plan_update",
            "plan": {
                "type": "items",
                "planId": "p",
                "entries": [{"content": "step \u202e1", "priority": "high", "status": "pending"}],
            },
        },
        {
            **RUN,
            "title": "Run \u202etxt.exe",
            "locations": [{"path": "src/\u202ecod.py", "line": 3}],
            "rawInput": {"command": "echo \u202eexe.txt", "why": "two\nlines"},
            "content": [
                {"type": "content", "content": {"type": "text", "text": "out\x1b[31m\u202e"}},
                {"type": "terminal", "terminalId": "term_1"},
            ],
        },
        {**TERM, "command": "echo \u202eexe.txt\x07", "cwd": "/w\u202e"},
        out("term_1", b"fine\n"),
        chunk("m1", "said \u202eit\x1b[1m"),
        IDLE,
        view=view,
    )
    view.refresh()
    bundle = view.static_bundle()
    widget = view.terminal_widgets["term_1"]
    shown = {
        "live": all_html(view),
        "html": bundle["text/html"],
        "text": bundle["text/plain"],
        "header": widget.command + widget.cwd,  # the live terminal's header is text too
    }
    for where, value in shown.items():
        assert not set(HIDDEN) & set(value), where
        assert "⟨U+202E RLO⟩" in value, where
    text = bundle["text/plain"]
    assert text.startswith("> $ echo ⟨U+202E RLO⟩exe.txt⟨ESC⟩[2K⟨BEL⟩\n> second\tline\n")
    assert "Tool call: Run ⟨U+202E RLO⟩txt.exe [command]" in text
    assert "  at src/⟨U+202E RLO⟩cod.py:3" in text
    assert "  [pending] step ⟨U+202E RLO⟩1" in text
    assert "  out⟨ESC⟩[31m⟨U+202E RLO⟩" in text and "said ⟨U+202E RLO⟩it⟨ESC⟩[1m" in text
    for html in (shown["live"], shown["html"]):
        assert "$ echo ⟨U+202E RLO⟩exe.txt⟨ESC⟩[2K⟨BEL⟩\nsecond\tline</div>" in html
        # the raw input keeps its layout (newlines, indentation) and stays escaped
        assert "{\n  &quot;command&quot;: &quot;echo ⟨U+202E RLO⟩exe.txt&quot;," in html
        assert "&quot;why&quot;: &quot;two\\nlines&quot;\n}" in html
        assert "src/⟨U+202E RLO⟩cod.py:3" in html and "step ⟨U+202E RLO⟩1" in html
    assert widget.command == "echo ⟨U+202E RLO⟩exe.txt⟨BEL⟩" and widget.cwd == "/w⟨U+202E RLO⟩"


def test_agent_prose_keeps_joiners(make_view: Callable[..., TurnView]) -> None:
    state, turn = session()
    view = make_view(turn)
    apply(state, chunk("m1", "dev: 👨\u200d💻, \u05e9\u200f!"), view=view)
    view.refresh()
    assert "👨\u200d💻, \u05e9\u200f!" in all_html(view)
    assert "👨\u200d💻, \u05e9\u200f!" in view.static_bundle()["text/plain"]


# -- lifetime and threads ------------------------------------------------------------------------


def test_close_all_closes_every_model(
    make_view: Callable[..., TurnView], published: Published
) -> None:
    view, state = full_turn(make_view)
    view.add_card(PermissionCard(permission(None), lambda o, b: None))
    turn = view.turn
    before = len(published)
    again = TurnView(turn, "again")
    again.add_card(PermissionCard(permission(None), lambda o, b: None))
    apply(
        state,
        {"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": "q", "entries": []}},
    )
    again.refresh()
    flush_terminals(again)
    opened = {cid for kind, cid, _ in published[before:] if kind == "comm_open"}
    assert len(opened) > 20
    again.close_all()
    closed = {cid for kind, cid, _ in published[before:] if kind == "comm_close"}
    assert opened == closed  # every model it made (layouts and styles too) is closed
    count = len(published)
    again.refresh()  # a closed view ignores refreshes
    assert len(published) == count
    assert view.comm is not None  # the other view of the same turn is untouched


def test_refresh_from_another_thread_while_updates_arrive(
    make_view: Callable[..., TurnView],
) -> None:
    state, turn = session()
    apply(state, TERM)
    view = make_view(turn)
    lock = threading.Lock()  # the bridge applies updates and refreshes on its IO thread
    stop = threading.Event()

    def refresher() -> None:
        while not stop.is_set():
            with lock:
                view.refresh()

    thread = threading.Thread(target=refresher)
    thread.start()
    expected = b""
    try:
        for i in range(200):
            data = b"%d\n" % i
            expected += data
            with lock:
                apply(state, out("term_1", data))
    finally:
        stop.set()
        thread.join()
    view.refresh()
    assert view.terminal_widgets["term_1"].data == expected


# -- many terminals ------------------------------------------------------------------------------


def many_terminals(
    state: SessionState, view: TurnView, n: int, output: bytes = b"ok\n", text: bool = False
) -> None:
    """``n`` tool calls, each running a terminal that prints ``output`` and exits (or, with
    ``text``, holding a line of text instead: the same turn without terminals)."""
    for i in range(n):
        content = (
            {"type": "content", "content": {"type": "text", "text": f"step {i}"}}
            if text
            else {"type": "terminal", "terminalId": f"t{i}"}
        )
        call = {
            "sessionUpdate": "tool_call_update",
            "toolCallId": f"c{i}",
            "title": f"step {i}",
            "kind": "execute",
            "status": "completed",
            "content": [content],
        }
        updates: list[dict[str, Any]] = [call]
        if not text:
            exited = {"exitCode": i % 3}
            updates += [
                {"sessionUpdate": "terminal_update", "terminalId": f"t{i}", "command": f"echo {i}"},
                out(f"t{i}", output),
                {"sessionUpdate": "terminal_update", "terminalId": f"t{i}", "exitStatus": exited},
            ]
        apply(state, *updates, view=view)
        if i % 50 == 0:
            view.refresh()
    view.refresh()


def opened_models(published: Published, since: int = 0) -> dict[str, str]:
    """comm id -> model name of every widget model opened (each one is a message to every
    front end, and a model it keeps)."""
    return {
        cid: str(data.get("state", {}).get("_model_name"))
        for kind, cid, data in published[since:]
        if kind == "comm_open"
    }


def test_a_thousand_terminals_make_a_bounded_number_of_models(
    make_view: Callable[..., TurnView], published: Published
) -> None:
    """Finding: 1,000 terminals in one turn made 10,000 widget models (a cell of 12 s)."""
    from acp_notebook._widgets._turn import MAX_LIVE_TERMINALS

    state, turn = session()
    view = make_view(turn)
    many_terminals(state, view, 1000)
    models = opened_models(published)
    terminals = [cid for cid, name in models.items() if name == "TerminalModel"]
    assert len(terminals) == MAX_LIVE_TERMINALS == len(view.terminal_widgets)
    assert len(models) < 3.2 * 1000 + 300, len(models)  # was 10,026
    # beyond the cap a terminal costs no more models than a line of text would
    text_state, text_turn = session()
    before = len(published)
    text_view = make_view(text_turn)
    many_terminals(text_state, text_view, 1000, text=True)
    # (a live terminal's call: its header, its box, the terminal and the terminal's layout)
    assert len(models) <= len(opened_models(published, before)) + 4 * MAX_LIVE_TERMINALS + 20
    # every byte is still in the turn's state (what -o gives)
    assert len(turn.terminals) == 1000 and all(t.data == b"ok\n" for t in turn.terminals.values())


def test_terminals_past_the_cap_are_listed_and_open_on_demand(
    make_view: Callable[..., TurnView],
) -> None:
    from acp_notebook._widgets._turn import MAX_LIVE_TERMINALS

    state, turn = session()
    view = make_view(turn)
    n = MAX_LIVE_TERMINALS + 5
    many_terminals(state, view, n, output=b"\x1b[31mred\x1b[0m line\n" * 3)
    assert set(view.terminal_widgets) == {f"t{i}" for i in range(MAX_LIVE_TERMINALS)}
    listing = view.terminal_list
    assert listing is not None and listing in view.children
    labels = [label for label, _ in listing.picker.options]
    assert [value for _, value in listing.picker.options] == [
        f"t{i}" for i in range(MAX_LIVE_TERMINALS, n)
    ]
    assert labels[0] == f"#1  $ echo {MAX_LIVE_TERMINALS}  ·  exit {MAX_LIVE_TERMINALS % 3}"
    assert "5 more terminals" in listing.summary.value
    # where the tool call would show the live view it says where the terminal went
    assert "not shown live" in call_html(view, f"c{MAX_LIVE_TERMINALS}")
    # open one: its live view appears in its tool call with every byte the state kept
    listing.picker.value = f"t{MAX_LIVE_TERMINALS + 2}"
    listing.open_button.click()
    widget = view.terminal_widgets[f"t{MAX_LIVE_TERMINALS + 2}"]
    assert widget in view._calls[f"c{MAX_LIVE_TERMINALS + 2}"].box.children
    assert widget.data == turn.terminals[f"t{MAX_LIVE_TERMINALS + 2}"].data
    assert widget.exit_status == {"exitCode": (MAX_LIVE_TERMINALS + 2) % 3}
    assert f"t{MAX_LIVE_TERMINALS + 2}" not in [v for _, v in listing.picker.options]
    assert "4 more terminals" in listing.summary.value
    # the next terminal still goes to the list: the cap counts views made on their own
    many_terminals(state, view, 0)
    apply(
        state,
        {"sessionUpdate": "terminal_update", "terminalId": "late", "command": "ls"},
        view=view,
    )
    listing.picker.value = f"t{MAX_LIVE_TERMINALS + 3}"
    view.refresh()
    assert "late" not in view.terminal_widgets
    assert "late" in [v for _, v in listing.picker.options]
    assert listing.picker.value == f"t{MAX_LIVE_TERMINALS + 3}"  # a new row keeps the pick
    assert listing.picker.options[-1][0] == "#6  $ ls  ·  running"  # numbers stay put


def test_opening_runs_on_the_state_thread_and_closing_closes_the_list(
    make_view: Callable[..., TurnView], published: Published
) -> None:
    from acp_notebook._widgets._turn import MAX_LIVE_TERMINALS

    queued: list[tuple[Any, ...]] = []
    state, turn = session()
    view = make_view(turn, call_soon=lambda fn, *args: queued.append((fn, *args)))
    many_terminals(state, view, MAX_LIVE_TERMINALS + 1)
    listing = view.terminal_list
    assert listing is not None
    listing.open_button.click()  # the first row is picked
    tid = f"t{MAX_LIVE_TERMINALS}"
    assert tid not in view.terminal_widgets and len(queued) == 1  # nothing read on this thread
    fn, *args = queued.pop()
    fn(*args)  # what the I/O thread runs
    assert tid in view.terminal_widgets
    assert view.terminal_list is listing and listing not in view.children  # nothing left to list
    view.close_all()
    opened = {cid for kind, cid, _ in published if kind == "comm_open"}
    closed = {cid for kind, cid, _ in published if kind == "comm_close"}
    assert opened == closed


def test_terminal_list_labels_are_visible_text(make_view: Callable[..., TurnView]) -> None:
    from acp_notebook._widgets._turn import MAX_LIVE_TERMINALS

    state, turn = session()
    view = make_view(turn)
    many_terminals(state, view, MAX_LIVE_TERMINALS)
    cmd = "echo \x1b[2K\u202e<b>x</b>"
    apply(state, {"sessionUpdate": "terminal_update", "terminalId": "z", "command": cmd}, view=view)
    view.refresh()
    listing = view.terminal_list
    assert listing is not None
    label = listing.picker.options[0][0]
    assert "\x1b" not in label and "\u202e" not in label
    assert "⟨ESC⟩[2K⟨U+202E RLO⟩<b>x</b>" in label and label.endswith("running")


def test_static_transcript_of_a_thousand_terminals_is_bounded(
    make_view: Callable[..., TurnView],
) -> None:
    from acp_notebook._widgets._turn import MAX_LIVE_TERMINALS

    state, turn = session()
    view = make_view(turn)
    output = b"".join(b"line %d of many\n" % i for i in range(150))  # 2 KB each
    many_terminals(state, view, 1000, output=output)
    bundle = view.static_bundle()
    text, html = bundle["text/plain"], bundle["text/html"]
    assert len(text) < 300_000, len(text)  # was 2.3 MB
    assert len(html) < 600_000, len(html)
    assert text.count("line 149 of many") == MAX_LIVE_TERMINALS
    # the rest are named with their exit status, then counted
    assert "$ echo 40" in text and "[exit 1]" in text
    assert re.search(r"output of 968 more terminals not saved in the notebook", text)
    assert re.search(r"and 768 more terminals not saved in the notebook", text)
    assert "768 more terminals" in html
    assert view.static_bundle() == bundle  # deterministic
    assert all(t.data == output for t in turn.terminals.values())  # -o keeps every byte


def test_one_tool_call_with_a_thousand_terminals(
    make_view: Callable[..., TurnView], published: Published
) -> None:
    """The flood agent's shape: one tool call announces 1,000 terminals before they start."""
    from acp_notebook._widgets._turn import MAX_LIVE_TERMINALS

    state, turn = session()
    view = make_view(turn)
    call = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c",
        "title": "flood",
        "kind": "execute",
        "status": "in_progress",
        "content": [{"type": "terminal", "terminalId": f"t{i}"} for i in range(1000)],
    }
    apply(state, call, view=view)
    view.refresh()  # all 1,000 referenced, none started
    assert "1,000 terminals: 1,000 not started" in call_html(view, "c")
    for i in range(1000):
        apply(
            state,
            {"sessionUpdate": "terminal_update", "terminalId": f"t{i}", "command": f"echo {i}"},
            out(f"t{i}", b"x\n"),
            view=view,
        )
        if i % 100 == 0:
            view.refresh()
    view.refresh()
    models = opened_models(published)
    assert sum(1 for name in models.values() if name == "TerminalModel") == MAX_LIVE_TERMINALS
    assert len(models) < 250, len(models)  # was 2,069 (1,000 terminal views)
    html = call_html(view, "c")
    assert "968 terminals: 968 not shown live" in html


# -- issue 11: what a person reads ---------------------------------------------------------------

LS_CALL = {
    "sessionUpdate": "tool_call_update",
    "toolCallId": "call_ls",
    "title": "ls -la /srv",
    "kind": "execute",
    "status": "completed",
    "content": [{"type": "terminal", "terminalId": "term_ls"}],
}
LS_TERM = {
    "sessionUpdate": "terminal_update",
    "terminalId": "term_ls",
    "command": "ls -la /srv",
    "cwd": "/work",
}
LS_SUBJECT = {
    "type": "command",
    "command": "ls -la /srv",
    "cwd": "/work",
    "toolCallId": "call_ls",
    "terminalId": "term_ls",
}


def ls_turn(make_view: Callable[..., TurnView]) -> tuple[TurnView, PermissionCard]:
    state, turn = session("list it")
    view = make_view(turn, "list it")
    apply(state, LS_CALL, LS_TERM, view=view)
    payload = {
        "sessionId": "s1",
        "title": "Run `ls -la /srv`?",
        "subject": LS_SUBJECT,
        "options": [{"optionId": "ok", "name": "Allow once", "kind": "allow_once"}],
    }
    card = PermissionCard(RequestPermissionRequest.model_validate(payload), lambda o, b: None)
    view.add_card(card)
    card.mark_decided("ok", "click")
    apply(
        state,
        out("term_ls", b"total 0\n"),
        {
            "sessionUpdate": "terminal_update",
            "terminalId": "term_ls",
            "exitStatus": {"exitCode": 0},
        },
        IDLE,
        view=view,
    )
    view.refresh()
    return view, card


def test_the_command_is_shown_once_per_tool_call(make_view: Callable[..., TurnView]) -> None:
    view, card = ls_turn(make_view)
    bundle = view.static_bundle()
    # the prompt does not name it; the tool call does, once, in the text and in the HTML
    assert bundle["text/plain"].count("ls -la /srv") == 1, bundle["text/plain"]
    assert bundle["text/html"].count("ls -la /srv") == 1
    # live: the terminal widget's header names it; no other part of the call does
    live = call_html(view, "call_ls")
    assert "ls -la /srv" not in live
    assert view.terminal_widgets["term_ls"].command == "ls -la /srv"
    assert "Run this command?" in card._info.value


def test_a_long_command_keeps_its_title_beside_a_live_terminal(
    make_view: Callable[..., TurnView],
) -> None:
    # a live terminal's header is one line, cut with "…": the call's header keeps the whole
    long = "printf '%s\\n' " + " ".join(f"word{i}" for i in range(20))
    state, turn = session()
    view = make_view(turn)
    apply(state, {**LS_CALL, "title": long}, {**LS_TERM, "command": long}, view=view)
    view.refresh()
    assert view.terminal_widgets["term_ls"].command == long
    assert "word19" in call_html(view, "call_ls")
    apply(state, {**LS_CALL, "title": "ls -la /srv"}, LS_TERM, view=view)
    view.refresh()
    header = call_html(view, "call_ls")
    assert "ls -la /srv" not in header and "word19" not in header  # short: the terminal says it


def test_a_card_still_names_a_command_its_tool_call_does_not_show(
    make_view: Callable[..., TurnView],
) -> None:
    state, turn = session()
    view = make_view(turn)
    apply(state, {**LS_CALL, "title": "List files", "content": []}, view=view)
    payload = {
        "sessionId": "s1",
        "title": "Run `rm -rf /srv`?",
        "subject": {**LS_SUBJECT, "command": "rm -rf /srv"},
        "options": [{"optionId": "ok", "name": "Allow once", "kind": "allow_once"}],
    }
    card = PermissionCard(RequestPermissionRequest.model_validate(payload), lambda o, b: None)
    view.add_card(card)
    assert "$ rm -rf /srv" in card._info.value  # what is approved is always on screen
    assert "$ rm -rf /srv" in view.static_bundle()["text/html"]
    assert "command: rm -rf /srv" in view.static_bundle()["text/plain"]


def test_a_card_does_not_repeat_the_diff_its_tool_call_shows(
    make_view: Callable[..., TurnView],
) -> None:
    state, turn = session()
    view = make_view(turn)
    apply(state, {**EDIT, "status": "pending"}, view=view)
    subject = {
        "type": "tool_call",
        "toolCall": {k: v for k, v in EDIT.items() if k != "sessionUpdate"},
    }
    subject["toolCall"]["status"] = "pending"
    card = PermissionCard(permission(subject), lambda o, b: None)
    view.add_card(card)
    card.mark_decided("ok", "click")
    assert call_html(view, "call_2").count("y = &lt;new&gt;") == 1
    assert "pending" not in card._info.value.replace(STYLE, "")
    html = view.static_bundle()["text/html"]
    assert html.count("y = &lt;new&gt;") == 1
    # a request whose diff differs from the tool call's still shows its own
    other = {**subject, "toolCall": {**subject["toolCall"], "content": []}}
    other["toolCall"]["content"] = [
        {"type": "diff", "changes": [{"operation": "delete", "path": "src/b.py"}]}
    ]
    card2 = PermissionCard(permission(other), lambda o, b: None)
    view.add_card(card2)
    assert "src/b.py" in card2._info.value
    assert "src/b.py" in view.static_bundle()["text/html"]


@pytest.mark.parametrize(
    ("updates", "footer"),
    [
        ([IDLE], "finished"),
        ([{**IDLE, "stopReason": "cancelled"}], "cancelled"),
        ([{**IDLE, "stopReason": "max_tokens"}], "stopped: the reply reached its token limit"),
        ([{"sessionUpdate": "state_update", "state": "requires_action"}], "waiting for you"),
        ([{"sessionUpdate": "state_update", "state": "running"}], "working…"),
    ],
)
def test_the_footer_speaks_plainly(
    make_view: Callable[..., TurnView], updates: list[dict[str, Any]], footer: str
) -> None:
    state, turn = session()
    view = make_view(turn)
    apply(state, *updates, view=view)
    view.refresh()
    assert view.footer_text(turn) == footer
    assert "stop reason" not in view._footer.value and "requires_action" not in view._footer.value


def test_a_card_asking_is_waiting_for_you_without_a_state_update(
    make_view: Callable[..., TurnView],
) -> None:
    # Issue 25, finding 10: a v1 agent sends no requires_action; its card asks all the same.
    state, turn = session()
    view = make_view(turn)
    apply(state, RUN, view=view)
    card = PermissionCard(permission(None), lambda o, b: None)
    view.add_card(card)
    assert view.footer_text(turn) == "waiting for you"
    card.mark_decided("ok", "click")
    assert view.footer_text(turn) == "working…"


def test_a_command_run_under_an_always_answer_says_so_when_the_turn_ends(
    make_view: Callable[..., TurnView],
) -> None:
    # Issue 25, finding 12: after "Always allow" the agent asks no more; a later turn whose
    # command ran without a card says that it ran under the session's "always" answers.
    held = [0]
    state, turn = session()
    view = make_view(turn, grants=lambda: held[0])
    done = {**RUN, "status": "completed"}
    apply(state, done, TERM, IDLE, view=view)
    view.refresh()
    assert view.footer_text(turn) == "finished"  # no "always" answer: nothing to say
    held[0] = 1
    note = "1 tool call ran without asking, under the 1 “always allow” answer of this session"
    assert view.footer_text(turn) == f"finished · {note} (%acp grants)"
    assert note in view.static_text() and note in view.static_html()
    # a call that was asked about in this turn ran under its own card, not under the grant
    state, turn = session()
    asked = make_view(turn, grants=lambda: 1)
    subject = {"type": "tool_call", "toolCall": {"toolCallId": "call_1", "title": "pytest -q"}}
    card = PermissionCard(permission(subject), lambda o, b: None)
    asked.add_card(card)
    card.mark_decided("ok", "click")
    apply(state, done, TERM, IDLE, view=asked)
    assert asked.footer_text(turn) == "finished"
    # a call that only reads, or is still pending, is not counted
    state, turn = session()
    reading = make_view(turn, grants=lambda: 2)
    read = {**RUN, "kind": "read", "content": [], "status": "completed"}
    apply(state, read, {**RUN, "toolCallId": "call_9", "status": "pending"}, TERM, IDLE)
    assert reading.footer_text(turn) == "finished"


def test_a_failed_or_ended_turn_says_why(make_view: Callable[..., TurnView]) -> None:
    state, turn = session()
    view = make_view(turn)
    state.end_turn("the agent exited with code 3")
    assert view.footer_text(turn) == "ended: the agent exited with code 3"


def test_a_running_turn_shows_a_spinner_and_its_elapsed_time(
    make_view: Callable[..., TurnView],
) -> None:
    now = [100.0]
    state, turn = session()
    view = make_view(turn, clock=lambda: now[0])
    assert 'class="acp-spinner"' in view._footer.value and "0 s" in view._footer.value
    now[0] += 65.4
    view.refresh()
    assert "1 min 5 s" in view._footer.value
    before = view._footer.value
    now[0] += 0.3  # the label only changes with the whole second
    view.refresh()
    assert view._footer.value == before
    apply(state, IDLE, view=view)
    view.refresh()
    assert 'class="acp-spinner"' not in view._footer.value
    assert "finished" in view._footer.value
    # the saved transcript has no times in it (nbval compares it)
    assert "min" not in view.static_bundle()["text/plain"]
    assert 'class="acp-spinner"' not in view.static_bundle()["text/html"]


def test_the_widget_output_has_no_stray_text(make_view: Callable[..., TurnView]) -> None:
    view, _state = full_turn(make_view)
    bundle = view._repr_mimebundle_()
    assert bundle is not None
    assert bundle["text/plain"] == ""  # nbconvert shows it when it cannot draw the widget
    assert "live view" not in view.static_bundle()["text/plain"]


def test_the_static_terminal_is_monospace_with_a_normal_line_height(
    make_view: Callable[..., TurnView],
) -> None:
    view, _state = full_turn(make_view)
    html = view.static_bundle()["text/html"]
    pre = re.search(r'<pre class="acp-terminal-body" style="([^"]*)"', html)
    assert pre is not None, html  # inline: an nbconvert page has none of our CSS
    assert "font-family:var(--jp-code-font-family,monospace)" in pre.group(1)
    assert "line-height:1.3" in pre.group(1)


def test_diff_hunk_header_follows_the_theme() -> None:
    rule = re.search(r"\.acp-diff-hunk\{([^}]*)\}", STYLE)
    assert rule is not None and "var(--jp-" in rule.group(1)
    # and the diff lines are code in an nbconvert page too (it styles a bare <pre> its own way)
    rule = re.search(r"\.acp-turn pre\.acp-diff-body,[^{]*\{([^}]*)\}", STYLE)
    assert rule is not None and "font-family:var(--jp-code-font-family,monospace)" in rule.group(1)


def test_a_title_that_differs_from_the_running_command_stays(
    make_view: Callable[..., TurnView],
) -> None:
    # hostile: the call is titled "ls", the request is for "ls", the terminal runs "rm -rf ~"
    state, turn = session()
    view = make_view(turn)
    apply(state, {**LS_CALL, "title": "ls"}, {**LS_TERM, "command": "rm -rf ~"}, view=view)
    payload = {
        "sessionId": "s1",
        "title": "Run `ls`?",
        "subject": {**LS_SUBJECT, "command": "ls"},
        "options": [{"optionId": "ok", "name": "Allow once", "kind": "allow_once"}],
    }
    card = PermissionCard(RequestPermissionRequest.model_validate(payload), lambda o, b: None)
    view.add_card(card)
    view.refresh()
    assert ">ls</span>" in call_html(view, "call_ls")  # the title is not dropped
    assert view.terminal_widgets["term_ls"].command == "rm -rf ~"
    text = view.static_bundle()["text/plain"]
    assert "Tool call: ls [command]" in text and "$ rm -rf ~" in text


# -- terminals as text, for a front end without the labextension (issue 26) ----------------------


def _wait_for(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 10  # a guard: the redraw is due within TEXT_VIEW_INTERVAL
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def test_terminals_as_text_replace_the_terminal_widget_and_stay_current(
    make_view: Callable[..., TurnView], published: Published
) -> None:
    made: list[TerminalWidget] = []
    state, turn = session()
    apply(state, RUN, TERM, out("term_1", b"alpha\r\n"))
    view = make_view(turn, on_terminal=made.append)
    widget = view.terminal_widgets["term_1"]
    assert made == [widget]
    box = view._calls["call_1"].box
    assert widget in box.children and not view.text_terminals

    view.use_text_terminals()
    text = widget.text_view()
    assert view.text_terminals and text in box.children and widget not in box.children
    assert "alpha" in text.value and "pytest -q" in text.value
    published.clear()
    apply(state, out("term_1", b"bravo\r\n\x1b[31mcharlie\x1b[0m\r\n"))
    view.refresh()
    widget.flush()
    _wait_for(lambda: "charlie" in text.value, "the text view's redraw")
    assert "bravo" in text.value
    # no bytes go to a view that cannot load the terminal's model
    custom = [m for m in published if m[1] == widget.model_id and m[2].get("method") == "custom"]
    assert custom == []
    apply(
        state,
        {"sessionUpdate": "terminal_update", "terminalId": "term_1", "exitStatus": {"exitCode": 2}},
    )
    view.refresh()
    _wait_for(lambda: "exit 2" in text.value, "the exit in the text view")
    assert "\x1b" not in text.value  # colours as markup, not escape codes


def test_a_view_told_at_its_start_shows_text_and_a_loose_terminal_too(
    make_view: Callable[..., TurnView],
) -> None:
    state, turn = session()
    apply(state, TERM, out("term_1", b"loose\r\n"))  # no tool call anchors it
    view = make_view(turn, text_terminals=True)
    widget = view.terminal_widgets["term_1"]
    assert widget.text_view() in view._terminals.children
    assert widget not in view._terminals.children
    assert "loose" in widget.text_view().value


def test_a_ready_from_a_view_is_reported() -> None:
    seen: list[TerminalWidget] = []
    widget = TerminalWidget()
    try:
        widget.on_ready(seen.append)
        widget._handle_view_msg(widget, {"type": "ready", "token": "t"}, [])
        assert seen == [widget]
    finally:
        widget.close()


@pytest.mark.parametrize(
    ("raw_output", "shown"),
    [
        ({"stdout": "total 0\nkeep.txt\n", "exit_code": 0}, "keep.txt"),  # Cline-like
        ("hello from a string", "hello from a string"),  # pydantic-acp
        ([{"type": "text", "text": "block text"}], "block text"),
        ({"output": "out", "stderr": "warn: \x1b[31mred\u202e"}, "warn: "),
    ],
)
def test_a_result_only_in_raw_output_shows_as_text(
    make_view: Callable[..., TurnView], raw_output: Any, shown: str
) -> None:
    # finding 4: a result only in rawOutput showed only as a folded JSON blob
    state, turn = session()
    view = make_view(turn)
    call = {"sessionUpdate": "tool_call_update", "toolCallId": "c", "title": "run_commands",
            "kind": "execute", "status": "completed", "rawOutput": raw_output}  # fmt: skip
    apply(state, call, view=view)
    view.refresh()
    live = call_html(view, "c")
    unfolded = live.split("<details>", 1)[0]  # before the folded JSON
    assert 'class="acp-generic acp-raw-output"' in unfolded and shown in unfolded
    bundle = view.static_bundle()
    assert f"  {shown}" in bundle["text/plain"] or shown in bundle["text/plain"].split("\n")[2:]
    static = bundle["text/html"].split("<details>", 1)[0]
    assert "acp-raw-output" in static and shown in static
    for text in (live, bundle["text/html"], bundle["text/plain"]):
        assert "\x1b" not in text and "\u202e" not in text  # made visible, never raw


def test_raw_output_is_not_shown_twice_when_the_call_has_content(
    make_view: Callable[..., TurnView],
) -> None:
    state, turn = session()
    view = make_view(turn)
    said = {"type": "content", "content": {"type": "text", "text": "SAME"}}
    call = {"sessionUpdate": "tool_call_update", "toolCallId": "c", "title": "t",
            "status": "completed", "rawOutput": {"output": "SAME"}, "content": [said]}  # fmt: skip
    apply(state, call, view=view)
    view.refresh()
    assert "acp-raw-output" not in call_html(view, "c")
    assert view.static_bundle()["text/plain"].count("SAME") == 1


def test_a_long_raw_output_is_cut_and_says_how_much() -> None:
    from acp_notebook._widgets._parts import RAW_OUTPUT_CHARS, raw_output_text

    assert raw_output_text({"output": "", "stdout": "hello"}) == "hello"  # empty: the next key
    text = raw_output_text({"output": "x" * (RAW_OUTPUT_CHARS + 5)})
    assert text is not None and text.endswith("(5 more characters of output)")
    assert raw_output_text({"exit_code": 1}) is None and raw_output_text("  ") is None


def test_a_tool_call_left_open_says_so_after_the_turn(make_view: Callable[..., TurnView]) -> None:
    state, turn = session()
    view = make_view(turn)
    apply(state, {"sessionUpdate": "tool_call_update", "toolCallId": "c", "title": "edit"},
          {"sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled"},
          view=view)  # fmt: skip
    view.refresh()
    live = call_html(view, "c")
    assert "cancelled" in live and "the agent left it open when the turn ended" in live
    text = view.static_bundle()["text/plain"]
    assert "Tool call: edit - cancelled" in text
    assert "(the agent left it open when the turn ended)" in text
