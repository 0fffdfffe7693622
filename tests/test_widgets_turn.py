"""TurnView: rendering from real update models, cheap refreshes, terminal feeding, transcripts."""

from __future__ import annotations

import base64
import re
import threading
from collections.abc import Callable, Iterator
from typing import Any

import comm
import pytest

from acp_notebook._permission import PermissionDecision
from acp_notebook._protocol import RequestPermissionRequest, parse_session_update
from acp_notebook._state import SessionState, TerminalState, TurnState
from acp_notebook._widgets import PermissionCard, TerminalWidget, TurnView, render_markdown
from acp_notebook._widgets._turn import LIVE_TEXT

Published = list[tuple[str, str, Any]]


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


def flush_terminals(view: TurnView) -> None:
    for widget in view.terminal_widgets.values():
        widget.flush()


# -- markdown ------------------------------------------------------------------------------------


def test_markdown_escapes_html_and_refuses_dangerous_links() -> None:
    html = render_markdown("**hi** <script>alert(1)</script> [x](javascript:alert(1))")
    assert "<strong>hi</strong>" in html
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "<a" not in html and "[x](javascript:alert(1))" in html
    for url in ("JaVaScript:alert(1)", "java\tscript:alert(1)", "data:text/html,x", "vbscript:x"):
        assert "<a" not in render_markdown(f"[x]({url})"), url
    link = render_markdown("[ok](https://example.org/a?b=1&c=2)")
    assert 'href="https://example.org/a?b=1&amp;c=2"' in link and 'rel="noopener' in link
    assert '<a href="src/a.py"' in render_markdown("[file](src/a.py)")
    image = render_markdown("![chart](https://example.org/c.png)")
    assert "<img" not in image and "[image: chart]" in image  # never fetched by itself


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
    assert "stop reason: end_turn" in view._footer.value


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
    assert boxes[0] is view._calls["call_1"].box
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


def permission(subject: dict[str, Any] | None) -> PermissionDecision:
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
    return PermissionDecision(RequestPermissionRequest.model_validate(payload))


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
            "Tool call: Run tests [execute] - completed",
            "  at tests/test_x.py:3",
            "  $ pytest -q  (in /work)",
            "  3 passed",
            "  100%",
            "  [exit 0]",
            "  Permission request: Run pytest?",
            "    command: pytest -q",
            "    cwd: /work",
            "    options: Allow [allow once], Reject [reject once]",
            "    decision: Approved: Allow - by policy --allow 'pytest*' · allow once",
            "",
            "Tool call: Edit files [edit] - completed",
            "  diff: modify src/a.py (+1 -1)",
            "  diff: add logo.png [binary]",
            "",
            "All good.",
            "",
            "stop reason: end_turn",
        ]
    )
    assert not re.search(r"0x[0-9a-f]{6,}|[0-9a-f]{32}", text)
    html = bundles[0]["text/html"]
    assert "Running <strong>tests</strong> &lt;now&gt;." in html
    assert "ansi-green-fg" in html and "3 passed" in html
    # the transcript carries its own colours: JupyterLab only colours ansi-* spans in text
    # outputs, and nbconvert's page style is not there when the HTML is shown elsewhere
    assert re.search(r"\.acp-turn-static \.ansi-green-fg\{color:#[0-9a-f]{6}\}", html)
    assert "Approved: Allow - by policy" in html and "stop reason: end_turn" in html
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
    assert text.endswith("All good.\n\nlate words\n\nstop reason: end_turn")


def test_live_display_text_is_deterministic(make_view: Callable[..., TurnView]) -> None:
    view, _state = full_turn(make_view)
    bundle = view._repr_mimebundle_()
    assert bundle is not None
    assert bundle["text/plain"] == LIVE_TEXT == repr(view)
    assert "application/vnd.jupyter.widget-view+json" in bundle


def test_huge_terminal_transcript_is_capped(make_view: Callable[..., TurnView]) -> None:
    state, turn = session()
    apply(state, TERM, out("term_1", b"".join(b"line %06d\n" % i for i in range(60000))))
    view = make_view(turn)
    bundle = view.static_bundle()
    text = bundle["text/plain"]
    assert "line 059999" in text and "line 059800\n" in text and "line 059799" not in text
    # the lines before the converted tail are counted too
    note = "… 59,800 earlier lines not saved in the notebook (the live view and `-o` keep them)"
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
    note = "… 2,800 earlier lines not saved in the notebook (the live view and `-o` keep them)"
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
    assert lines[0] == "… 44 earlier lines not saved in the notebook (the live view keeps them)"
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
    assert "Tool call: Run ⟨U+202E RLO⟩txt.exe [execute]" in text
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
