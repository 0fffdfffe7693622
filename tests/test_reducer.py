from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_notebook._protocol import parse_session_update
from acp_notebook._protocol._updates import Cost
from acp_notebook._state import SessionState, ansi_to_html, ansi_to_text
from acp_notebook._state._reducer import UsageState


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def feed(state: SessionState, updates: list[dict[str, Any]]) -> None:
    for update in updates:
        state.apply(parse_session_update(update))


def chunk(kind: str, message_id: str, text: str) -> dict[str, Any]:
    return {
        "sessionUpdate": kind,
        "messageId": message_id,
        "content": {"type": "text", "text": text},
    }


def lines(text: str) -> list[dict[str, Any]]:
    """``session/update`` notifications, one JSON message a line -> their ``update``s."""
    out = []
    for line in text.strip().splitlines():
        msg = json.loads(line)
        assert msg["method"] == "session/update"
        out.append(msg["params"]["update"])
    return out


# -- example exchanges from the spec pages (terminal-output RFD, tool-calls page, an
#    adapter's prompt-lifecycle page) and the v2 protocol notes -----------------------

PROMPT_LIFECYCLE = """
{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"session-1","update":{"sessionUpdate":"state_update","state":"running"}}}
{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"session-1","update":{"sessionUpdate":"agent_message_chunk","messageId":"assistant-1","content":{"type":"text","text":"Hello"}}}}
{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"session-1","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}}}
"""

TERMINAL_RFD = [
    {"sessionUpdate": "tool_call_update", "toolCallId": "call_001", "title": "Run tests",
     "kind": "execute", "status": "in_progress",
     "content": [{"type": "terminal", "terminalId": "term_001"}]},
    {"sessionUpdate": "terminal_update", "terminalId": "term_001", "command": "cargo test",
     "cwd": "/workspace/project", "output": {"data": "cnVubmluZyAxMjMgdGVzdHMNCg=="},
     "exitStatus": {"exitCode": 0, "signal": None}},
    {"sessionUpdate": "terminal_output_chunk", "terminalId": "term_001", "data": "cGFzc2VkDQo="},
]  # fmt: skip

TOOL_CALLS_PAGE = [
    {"sessionUpdate": "tool_call_update", "toolCallId": "call_002", "title": "Analyse",
     "content": [{"type": "content",
                  "content": {"type": "text", "text": "Analysis complete. Found 3 issues."}}]},
    {"sessionUpdate": "tool_call_content_chunk", "toolCallId": "call_002",
     "content": {"type": "diff",
                 "changes": [{"operation": "modify",
                              "path": "/home/user/project/src/config.json",
                              "fileType": "text", "mimeType": "application/json"}],
                 "patch": {"format": "git_patch",
                           "text": "diff --git /home/user/project/src/config.json "
                                   "/home/user/project/src/config.json\n"
                                   "--- /home/user/project/src/config.json\n"
                                   "+++ /home/user/project/src/config.json\n"
                                   "@@ -1,3 +1,3 @@\n {\n-  \"debug\": false\n"
                                   "+  \"debug\": true\n }\n"}}},
    {"sessionUpdate": "tool_call_content_chunk", "toolCallId": "call_002",
     "content": {"type": "diff",
                 "changes": [{"operation": "modify", "path": "/home/user/project/assets/logo.png",
                              "fileType": "binary", "mimeType": "image/png"}]}},
    {"sessionUpdate": "tool_call_update", "toolCallId": "call_002", "status": "completed",
     "locations": [{"path": "/home/user/project/src/main.py", "line": 42}]},
]  # fmt: skip


def test_prompt_lifecycle_example() -> None:
    state = SessionState("session-1")
    turn = state.begin_turn("Hello")
    feed(state, lines(PROMPT_LIFECYCLE))
    assert turn.text == "Hello"
    assert turn.done and turn.stop_reason == "end_turn"
    assert state.state == "idle" and not state.busy
    assert state.current_turn is None


def test_terminal_rfd_example() -> None:
    state = SessionState()
    turn = state.begin_turn("run the tests")
    feed(state, TERMINAL_RFD)
    term = state.terminals["term_001"]
    assert term.data == b"running 123 tests\r\npassed\r\n"
    assert term.text == "running 123 tests\npassed\n"
    assert term.command == "cargo test" and term.cwd == "/workspace/project"
    assert term.exit_status is not None and term.exit_status.exit_code == 0
    assert term.tool_call_ids == ["call_001"]
    call = state.tool_calls["call_001"]
    assert call.status == "in_progress"  # independent of the terminal's exit
    assert call.terminal_ids == ["term_001"]
    assert turn.terminals == {"term_001": term}
    assert turn.tool_calls == {"call_001": call}


def test_exit_status_signal_empty_and_cleared() -> None:
    state = SessionState()
    feed(state, [{"sessionUpdate": "terminal_update", "terminalId": "t",
                  "exitStatus": {"signal": "SIGTERM"}}])  # fmt: skip
    term = state.terminals["t"]
    assert term.exit_status.signal == "SIGTERM" and term.exit_status.exit_code is None
    feed(state, [{"sessionUpdate": "terminal_update", "terminalId": "t", "exitStatus": None}])
    assert not term.exited
    feed(state, [{"sessionUpdate": "terminal_update", "terminalId": "t", "exitStatus": {}}])
    assert term.exited
    feed(state, [{"sessionUpdate": "terminal_update", "terminalId": "t", "command": "x"}])
    assert term.exited  # omitted leaves it


def test_terminal_patch_rules() -> None:
    state = SessionState()
    feed(state, [{"sessionUpdate": "terminal_update", "terminalId": "t", "command": "make",
                  "cwd": "/w", "size": {"cols": 80, "rows": 24},
                  "capabilities": {"cancel": {}}, "_meta": {"a": 1, "b": 2}}])  # fmt: skip
    term = state.terminals["t"]
    feed(state, [{"sessionUpdate": "terminal_update", "terminalId": "t", "cwd": None,
                  "_meta": {"a": None, "c": 3}}])  # fmt: skip
    assert term.command == "make" and term.cwd is None
    assert term.size.cols == 80 and term.capabilities.cancel is not None
    assert term.meta == {"b": 2, "c": 3}
    feed(state, [{"sessionUpdate": "terminal_update", "terminalId": "t", "size": None,
                  "capabilities": None, "command": "make all", "_meta": None}])  # fmt: skip
    assert term.size is None and term.capabilities is None and term.meta is None
    assert term.command == "make all"


def test_snapshot_replaces_and_chunks_append() -> None:
    state = SessionState()
    feed(state, [
        {"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": b64(b"old\n")},
        {"sessionUpdate": "terminal_update", "terminalId": "t", "output": {"data": b64(b"new\n")}},
        {"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": b64(b"more")},
    ])  # fmt: skip
    assert state.terminals["t"].data == b"new\nmore"
    feed(state, [{"sessionUpdate": "terminal_update", "terminalId": "t", "output": None}])
    assert state.terminals["t"].data == b""


def test_chunks_decoded_one_by_one() -> None:
    # "YQ==" + "Yg==" is not valid base64 as one string; each chunk alone is.
    state = SessionState()
    feed(state, [
        {"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": "YQ=="},
        {"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": "Yg=="},
    ])  # fmt: skip
    assert state.terminals["t"].data == b"ab"


def test_invalid_base64_reported_and_only_that_update_dropped() -> None:
    state = SessionState()
    feed(state, [
        {"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": b64(b"one ")},
        {"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": "!!not base64"},
        {"sessionUpdate": "terminal_update", "terminalId": "t", "command": "evil",
         "output": {"data": "@@@"}},
        {"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": b64(b"two")},
    ])  # fmt: skip
    term = state.terminals["t"]
    assert term.data == b"one two"
    assert term.command is None  # the bad snapshot's update is dropped as a whole
    assert len(state.problems) == 2
    assert "terminal_output_chunk for 't': invalid base64" in state.problems[0]
    assert "terminal_update for 't': invalid base64" in state.problems[1]


def test_tool_calls_page_example() -> None:
    state = SessionState()
    feed(state, TOOL_CALLS_PAGE)
    call = state.tool_calls["call_002"]
    assert call.status == "completed"
    assert [c.type for c in call.content] == ["content", "diff", "diff"]
    assert call.content[0].content.text == "Analysis complete. Found 3 issues."
    assert call.content[1].patch.format == "git_patch"
    assert call.content[2].patch is None
    assert call.locations[0].line == 42


def test_tool_call_upsert_rules() -> None:
    state = SessionState()
    feed(state, [{"sessionUpdate": "tool_call_update", "toolCallId": "c", "title": "Read"}])
    call = state.tool_calls["c"]
    assert call.status == "pending"  # missing status on creation
    feed(state, [
        {"sessionUpdate": "tool_call_content_chunk", "toolCallId": "c",
         "content": {"type": "content", "content": {"type": "text", "text": "a"}}},
        {"sessionUpdate": "tool_call_content_chunk", "toolCallId": "c",
         "content": {"type": "content", "content": {"type": "text", "text": "b"}}},
    ])  # fmt: skip
    assert len(call.content) == 2
    feed(state, [{"sessionUpdate": "tool_call_update", "toolCallId": "c",
                  "content": [{"type": "content", "content": {"type": "text", "text": "c"}}],
                  "locations": [{"path": "/x"}], "status": "cancelled"}])  # fmt: skip
    assert [c.content.text for c in call.content] == ["c"]  # replaced whole
    assert call.status == "cancelled"
    feed(state, [{"sessionUpdate": "tool_call_update", "toolCallId": "c", "locations": None,
                  "content": [], "status": "_waiting_for_ci", "title": None}])  # fmt: skip
    assert call.content == [] and call.locations == [] and call.title is None
    assert call.status == "_waiting_for_ci"
    feed(state, [{"sessionUpdate": "tool_call_update", "toolCallId": "c", "kind": "execute"}])
    assert call.status == "_waiting_for_ci" and call.kind == "execute"
    feed(state, [{"sessionUpdate": "tool_call_content_chunk", "toolCallId": "c",
                  "content": {"type": "_custom_widget", "x": 1}}])  # fmt: skip
    assert call.content[-1].raw == {"type": "_custom_widget", "x": 1}


def test_messages_chunks_and_whole_updates() -> None:
    state = SessionState()
    turn = state.begin_turn("hi")
    feed(state, [
        {"sessionUpdate": "user_message", "messageId": "u1",
         "content": [{"type": "text", "text": "hi"}]},
        chunk("agent_thought_chunk", "th", "hmm"),
        chunk("agent_message_chunk", "m1", "Hel"),
        chunk("agent_message_chunk", "m1", "lo"),
        {"sessionUpdate": "agent_message", "messageId": "m1",
         "content": [{"type": "text", "text": "Hi"}]},
        chunk("agent_message_chunk", "m1", "!"),
        {"sessionUpdate": "agent_message", "messageId": "m1", "_meta": {"k": 1}},
        chunk("agent_message_chunk", "m2", "Bye"),
    ])  # fmt: skip
    assert state.messages["m1"].text == "Hi!"  # omitted content on the last upsert: unchanged
    assert state.messages["m1"].meta == {"k": 1}
    assert turn.text == "Hi!\n\nBye"
    assert turn.thoughts == "hmm"
    assert [m.role for m in turn.messages] == ["user", "thought", "agent", "agent"]
    feed(state, [{"sessionUpdate": "agent_message", "messageId": "m2", "content": None}])
    assert state.messages["m2"].text == "" and state.messages["m2"].content == []


def test_replay_reset_before_chunked_replay() -> None:
    state = SessionState()
    feed(state, [
        chunk("user_message_chunk", "u1", "stale"),
        {"sessionUpdate": "user_message", "messageId": "u1", "content": []},
        chunk("user_message_chunk", "u1", "fix "),
        chunk("user_message_chunk", "u1", "it"),
    ])  # fmt: skip
    assert state.messages["u1"].text == "fix it"
    assert state.turns == []


def test_everything_else() -> None:
    state = SessionState()
    feed(state, [
        {"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": "p1", "entries": [
            {"content": "Read code", "priority": "high", "status": "completed"},
            {"content": "Fix bug", "priority": "medium", "status": "in_progress"}]}},
        {"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": "p1", "entries": [
            {"content": "Fix bug", "priority": "medium", "status": "cancelled"}]}},
        {"sessionUpdate": "plan_update",
         "plan": {"type": "_markdown", "planId": "p2", "md": "# x"}},
        {"sessionUpdate": "available_commands_update", "availableCommands": [
            {"type": "command", "name": "web", "description": "Search",
             "input": {"type": "text", "hint": "query"}}]},
        {"sessionUpdate": "config_option_update", "configOptions": []},
        {"sessionUpdate": "session_info_update", "title": "Fixing",
         "updatedAt": "2026-01-01T00:00:00Z"},
        {"sessionUpdate": "session_info_update", "updatedAt": None},
        {"sessionUpdate": "usage_update", "used": 10, "size": 100,
         "cost": {"amount": 0.5, "currency": "USD"}},
        {"sessionUpdate": "usage_update", "used": 20, "size": 100},
        {"sessionUpdate": "notice", "severity": "warning", "title": "Rate limited"},
        {"sessionUpdate": "compaction_summary_chunk", "compactionId": "k",
         "content": {"type": "text", "text": "summary"}},
        {"sessionUpdate": "compaction_update", "compactionId": "k", "status": "completed"},
        {"sessionUpdate": "_vendor_thing", "x": [1, 2]},
        {"sessionUpdate": "future_update", "y": True},
    ])  # fmt: skip
    assert [e.status for e in state.plans["p1"].entries] == ["cancelled"]
    assert state.plans["p2"].raw == {"type": "_markdown", "planId": "p2", "md": "# x"}
    assert state.available_commands[0].name == "web"
    assert state.config_options == []
    assert state.title == "Fixing" and state.updated_at is None
    assert (state.usage.used, state.usage.size, state.usage.cost.amount) == (20, 100, 0.5)
    assert state.notices[0].title == "Rate limited"
    assert state.compactions["k"].status == "completed"
    assert len(state.compactions["k"].summary) == 1
    assert [u.raw["sessionUpdate"] for u in state.unknown_updates] == [
        "_vendor_thing",
        "future_update",
    ]
    assert state.problems == []


def test_state_machine_and_turn_membership() -> None:
    state = SessionState()
    assert state.state is None
    feed(state, [{"sessionUpdate": "state_update", "state": "running"}])
    turn = state.begin_turn("do it")
    feed(state, [
        {"sessionUpdate": "state_update", "state": "requires_action"},
        {"sessionUpdate": "state_update", "state": "running"},
        {"sessionUpdate": "tool_call_update", "toolCallId": "a", "title": "A"},
        {"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": "p", "entries": []}},
    ])  # fmt: skip
    assert state.busy and state.current_turn is turn
    feed(state, [{"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn",
                  "background": [{"type": "terminal", "terminalId": "bg"}]}])  # fmt: skip
    assert turn.done and turn.stop_reason == "end_turn" and not state.busy
    assert state.background is not None and state.background[0].terminal_id == "bg"
    # While idle: background updates belong to the session; the last turn shows them.
    feed(state, [
        {"sessionUpdate": "terminal_output_chunk", "terminalId": "bg", "data": b64(b"tick\n")},
        {"sessionUpdate": "tool_call_update", "toolCallId": "a", "status": "completed"},
    ])  # fmt: skip
    assert "bg" in turn.terminals and "bg" in turn.late_ids
    assert "a" not in turn.late_ids
    assert turn.tool_calls["a"].status == "completed"
    assert turn.plan is not None and turn.plan.plan_id == "p"
    turn2 = state.begin_turn("again")
    feed(state, [
        {"sessionUpdate": "state_update", "state": "_thinking_hard"},
        chunk("agent_message_chunk", "m", "x"),
    ])  # fmt: skip
    assert state.busy and state.state == "_thinking_hard"  # unknown: busy, never idle
    assert turn2.text == "x" and turn.text == ""
    feed(state, [{"sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled"}])
    assert turn2.stop_reason == "cancelled" and turn.stop_reason == "end_turn"


def test_million_small_chunks_stay_linear() -> None:
    state = SessionState()
    chunk = {"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": b64(b"x")}
    msg = {"sessionUpdate": "agent_message_chunk", "messageId": "m",
           "content": {"type": "text", "text": "y"}}  # fmt: skip
    u1, u2 = parse_session_update(chunk), parse_session_update(msg)
    for _ in range(200_000):
        state.apply(u1)
        state.apply(u2)
    assert state.terminals["t"].total_bytes == 200_000
    assert len(state.messages["m"].text) == 200_000


# -- HTML escaping ----------------------------------------------------------------

EVIL = '<script>alert(1)</script>" onmouseover="alert(2)" &amp;'


def test_terminal_html_escapes_the_output_bytes() -> None:
    state = SessionState()
    feed(state, [
        {"sessionUpdate": "terminal_update", "terminalId": "t", "command": EVIL, "cwd": "/" + EVIL,
         "output": {"data": b64(b"\x1b[31m%s\x1b]0;%s\x07" % (EVIL.encode(), EVIL.encode()))}},
    ])  # fmt: skip
    term = state.terminals["t"]
    markup = term.html  # what the views show of the output (the views escape the rest)
    assert "<script" not in markup
    assert 'onmouseover="' not in markup
    assert "&amp;amp;" in markup
    assert term.text == EVIL  # the OSC title is dropped


# -- properties -------------------------------------------------------------------

terminal_bytes = st.lists(
    st.sampled_from(
        [b"ok ", b"\n", b"\r", b"\x1b[32m", b"\x1b[0m", b"\x1b[2K", b"\x1b[1A", "é".encode(),
         "😀".encode(), b"\xff", b"\x1b]0;t\x07", b"50%", b"<&>", b"\x08"]
    ),
    max_size=30,
).map(b"".join)  # fmt: skip


@st.composite
def split(draw: st.DrawFn, data: bytes) -> list[bytes]:
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=10)))
    return [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]


@settings(max_examples=150, deadline=None)
@given(st.data(), terminal_bytes)
def test_snapshot_replay_equals_live_stream(draw: st.DataObject, data: bytes) -> None:
    pieces = draw.draw(split(data))
    live = SessionState()
    feed(live, [{"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": b64(p)}
                for p in pieces])  # fmt: skip
    replay = SessionState()
    feed(replay, [{"sessionUpdate": "terminal_update", "terminalId": "t",
                   "output": {"data": b64(data)}}])  # fmt: skip
    a, b = live.terminal("t"), replay.terminal("t")
    assert a.data == b.data == data
    assert a.text == b.text == ansi_to_text(data)
    assert a.html == b.html == ansi_to_html(data)
    # Reading in between does not change the result.
    mid = SessionState()
    for p in pieces:
        feed(mid, [{"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": b64(p)}])
        _ = mid.terminal("t").text, mid.terminal("t").html
    assert mid.terminal("t").text == a.text and mid.terminal("t").html == a.html


@settings(max_examples=150, deadline=None)
@given(st.data(), terminal_bytes, st.integers(8, 64))
def test_memory_limit_is_chunking_invariant(draw: st.DataObject, data: bytes, limit: int) -> None:
    data = data * 3
    pieces = draw.draw(split(data))
    one = SessionState(terminal_max_bytes=limit)
    many = SessionState(terminal_max_bytes=limit)
    feed(one, [{"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": b64(data)}])
    for p in pieces:
        feed(many, [{"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": b64(p)}])
        _ = many.terminal("t").text
    a, b = one.terminal("t"), many.terminal("t")
    assert a.data == b.data and a.text == b.text and a.html == b.html
    assert len(a.data) <= limit
    assert a.total_bytes == b.total_bytes == len(data)
    assert a.omitted_bytes + len(a.data) == len(data)
    assert data.endswith(a.data)
    if a.omitted_bytes:
        assert a.text.startswith(f"[… {a.omitted_bytes} bytes omitted …]\n")


def test_memory_limit_cuts_at_line_start() -> None:
    state = SessionState(terminal_max_bytes=64)
    lines = b"".join(b"line %03d\n" % i for i in range(100))
    feed(state, [{"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": b64(lines)}])
    term = state.terminals["t"]
    assert term.total_bytes == len(lines)
    assert term.data.startswith(b"line ") and len(term.data) <= 64
    assert term.text.endswith("line 099\n")
    assert term.text.startswith(f"[… {len(lines) - len(term.data)} bytes omitted …]\nline ")


ANCHOR = {"sessionUpdate": "tool_call_update", "toolCallId": "c", "title": "Run",
          "content": [{"type": "terminal", "terminalId": "t"}]}  # fmt: skip


@settings(max_examples=100, deadline=None)
@given(terminal_bytes, terminal_bytes, st.integers(0, 3))
def test_anchor_and_terminal_updates_in_any_order(first: bytes, second: bytes, at: int) -> None:
    updates: list[dict[str, Any]] = [
        {"sessionUpdate": "terminal_update", "terminalId": "t", "command": "make",
         "output": {"data": b64(first)}},
        {"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": b64(second)},
        {"sessionUpdate": "terminal_update", "terminalId": "t", "exitStatus": {"exitCode": 2}},
    ]  # fmt: skip
    reference = SessionState()
    feed(reference, [ANCHOR, *updates])
    state = SessionState()
    feed(state, [*updates[:at], ANCHOR, *updates[at:]])
    a, b = reference.terminals["t"], state.terminals["t"]
    assert (b.data, b.text, b.command, b.exit_status.exit_code) == (
        a.data,
        a.text,
        a.command,
        a.exit_status.exit_code,
    )
    assert b.data == first + second
    assert b.tool_call_ids == ["c"] and state.tool_calls["c"].terminal_ids == ["t"]


def test_a_terminal_holds_no_more_than_its_cap_plus_one_block() -> None:
    """Issue 10, finding 3: the store's memory, not only what it shows, is within the cap.
    (It used to keep up to half the cap more, not compacted yet, in a bytearray that
    over-allocates and is copied when it grows.)"""
    import gc
    import tracemalloc

    from acp_notebook._state._terminal import BLOCK_BYTES, TerminalState

    cap = 4 * 2**20
    chunk = b"".join(b"line %06d of a flood\n" % i for i in range(3_000))  # ~66 KB
    gc.collect()
    tracemalloc.start()
    try:
        term = TerminalState("t", max_bytes=cap)
        for _ in range(64 * 2**20 // len(chunk)):
            term.append(chunk)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert term.total_bytes > 15 * cap and len(term.data) <= cap
    assert held <= cap + 2 * BLOCK_BYTES + len(chunk), held
    assert peak <= cap + 3 * BLOCK_BYTES + 2 * len(chunk), peak  # no copy of the whole store
    assert term.data.endswith(chunk) and term.data.startswith(b"line ")


@settings(max_examples=300, deadline=None)
@given(st.data(), terminal_bytes, st.integers(8, 64), st.integers(1, 40), st.integers(1, 50))
def test_block_storage_keeps_the_same_bytes_whatever_the_block_size(
    draw: st.DataObject, data: bytes, limit: int, block: int, own: int
) -> None:
    """The kept bytes, offsets and text do not depend on how the store cuts its blocks
    (``own``: the size from which a chunk is a block of its own)."""
    from unittest import mock

    from acp_notebook._state import _terminal

    data = data * 4
    one = _terminal.TerminalState("t", max_bytes=limit)
    one.append(data)
    pieces = draw.draw(split(data))
    with (
        mock.patch.object(_terminal, "BLOCK_BYTES", block),
        mock.patch.object(_terminal, "OWN_BLOCK_BYTES", own),
    ):
        many = _terminal.TerminalState("t", max_bytes=limit)
        for piece in pieces:
            many.append(piece)
            assert many.data == data[many.omitted_bytes : many.total_bytes]
        offset = draw.draw(st.integers(0, len(data) + 2))
        assert many.since(offset) == one.since(offset)
        assert (many.data, many.text, many.html) == (one.data, one.text, one.html)
    assert many.omitted_bytes == one.omitted_bytes and many.total_bytes == len(data)


@pytest.mark.parametrize(
    "amount, shown",
    [
        (0.0009800000000000002, "0.00098 USD"),  # issue 25, finding 15: float noise
        (12.5, "12.5 USD"),
        (3, "3 USD"),
        (0.0, "0 USD"),
        (1234.56789123, "1234.567891 USD"),
        (2e-9, "2e-09 USD"),
    ],
)
def test_cost_text_has_no_float_noise(amount: float, shown: str) -> None:
    usage = UsageState()
    assert usage.cost_text == ""
    usage.cost = Cost(amount=amount, currency="USD")
    assert usage.cost_text == shown


def test_tool_calls_left_open_are_closed_when_the_turn_ends_but_background_work_is_not() -> None:
    # finding 4: Copilot leaves a cancelled tool call "pending" after the turn
    state = SessionState()
    turn = state.begin_turn("go")
    feed(state, [
        {"sessionUpdate": "tool_call_update", "toolCallId": "p", "title": "P"},
        {"sessionUpdate": "tool_call_update", "toolCallId": "r", "status": "in_progress"},
        {"sessionUpdate": "tool_call_update", "toolCallId": "d", "status": "completed"},
        {"sessionUpdate": "tool_call_update", "toolCallId": "f", "status": "failed"},
        {"sessionUpdate": "tool_call_update", "toolCallId": "bg", "status": "in_progress"},
        {"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "in_progress",
         "content": [{"type": "terminal", "terminalId": "term-bg"}]},
        {"sessionUpdate": "tool_call_update", "toolCallId": "live", "status": "in_progress",
         "content": [{"type": "terminal", "terminalId": "term-live"}]},
        {"sessionUpdate": "terminal_output_chunk", "terminalId": "term-live", "data": b64(b"..")},
        {"sessionUpdate": "tool_call_update", "toolCallId": "ended", "status": "in_progress",
         "content": [{"type": "terminal", "terminalId": "term-ended"}]},
        {"sessionUpdate": "terminal_update", "terminalId": "term-ended",
         "exitStatus": {"exitCode": 0, "signal": None}},
        {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn",
         "background": [{"type": "tool_call", "toolCallId": "bg"},
                        {"type": "terminal", "terminalId": "term-bg"}]},
    ])  # fmt: skip
    calls = turn.tool_calls
    assert {i: (c.status, c.left_open) for i, c in calls.items()} == {
        "p": ("cancelled", True),
        "r": ("cancelled", True),
        "d": ("completed", False),
        "f": ("failed", False),
        "bg": ("in_progress", False),
        "t": ("in_progress", False),
        "live": ("in_progress", False),  # its command still runs: not called cancelled
        "ended": ("cancelled", True),
    }
    # a late status from the agent wins
    feed(state, [{"sessionUpdate": "tool_call_update", "toolCallId": "r", "status": "completed"}])
    assert (calls["r"].status, calls["r"].left_open) == ("completed", False)


def test_a_turn_ended_without_idle_closes_its_open_tool_calls_too() -> None:
    state = SessionState()
    turn = state.begin_turn("go")
    feed(state, [{"sessionUpdate": "tool_call_update", "toolCallId": "p", "title": "P"}])
    state.end_turn("the agent exited (code 3)")
    assert turn.tool_calls["p"].status == "cancelled" and turn.tool_calls["p"].left_open


def test_a_message_keeps_its_text_not_a_model_per_chunk() -> None:
    from acp_notebook._protocol import TextContent

    state = SessionState("s")
    chunks = [
        {"type": "text", "text": "a"},
        {"type": "text", "text": "b"},
        {"type": "image", "data": "AA==", "mimeType": "image/png"},
        {"type": "text", "text": "c", "annotations": {"priority": 1}},
        {"type": "text", "text": "d"},
    ]
    for block in chunks:
        update = {"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": block}
        state.apply(parse_session_update(update))
    for n in range(3000):  # past the pieces joined at a time
        state.apply_text_chunk("agent", "m", str(n))
    msg = state.messages["m"]
    tail = "".join(str(n) for n in range(3000))
    assert msg.text == "abcd" + tail
    wires = [block.to_wire() for block in msg.content]
    assert wires == [
        {"type": "text", "text": "ab"},
        chunks[2],
        chunks[3],
        {"type": "text", "text": "d" + tail},
    ]
    # runs of plain text are kept as spans of the text: the annotated block alone is a model
    assert [type(b).__name__ for b in msg._blocks] == [
        "list",
        "ImageContent",
        "TextContent",
        "list",
    ]
    assert sum(type(b) is TextContent for b in msg._blocks) == 1
    assert msg.revision == 5 + 3000
