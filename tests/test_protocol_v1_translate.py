"""v1 -> v2 translation (acp_notebook._protocol._v1._translate): every v1 update type, applied
to the real reducer, ends up in the same state a v2 agent's updates build."""

from __future__ import annotations

import re
from typing import Any

import pytest
from _schema import assert_valid
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

import acp_notebook._protocol as p
from acp_notebook._policy._rules import Policy
from acp_notebook._protocol import _v1 as v1
from acp_notebook._state import SessionState
from acp_notebook._state._diff import build_diff


def translate(t: v1.V1Translator, *raws: dict[str, Any]) -> list[Any]:
    out: list[Any] = []
    for raw in raws:
        out += t.update(v1.parse_v1_session_update(raw))
    return out


def applied(*raws: dict[str, Any]) -> tuple[SessionState, list[Any]]:
    state = SessionState("s1")
    state.begin_turn("hi")
    t = v1.V1Translator()
    updates = translate(t, *raws)
    for u in updates:
        state.apply(u)
        if not isinstance(u, p.UnknownSessionUpdate):  # each one is a valid v2 update
            assert_valid("SessionUpdate", u.to_wire())
    return state, updates


def chunk(kind: str, text: str, message_id: str | None = None) -> dict[str, Any]:
    raw: dict[str, Any] = {"sessionUpdate": kind, "content": {"type": "text", "text": text}}
    if message_id is not None:
        raw["messageId"] = message_id
    return raw


def test_chunks_without_message_ids_are_joined_by_run_of_one_role() -> None:
    state, updates = applied(
        chunk("user_message_chunk", "hi"),
        chunk("agent_thought_chunk", "hmm "),
        chunk("agent_thought_chunk", "ok"),
        chunk("agent_message_chunk", "Hello "),
        chunk("agent_message_chunk", "world"),
        {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read"},
        chunk("agent_message_chunk", "after"),
    )
    turn = state.current_turn
    assert turn is not None
    assert [(m.role, m.text) for m in turn.messages] == [
        ("user", "hi"),
        ("thought", "hmm ok"),
        ("agent", "Hello world"),
        ("agent", "after"),  # a tool call in between: a new message
    ]
    assert len({u.message_id for u in updates if hasattr(u, "message_id")}) == 4


def test_chunks_with_message_ids_keep_them() -> None:
    state, updates = applied(
        chunk("agent_message_chunk", "a", "m1"),
        chunk("agent_message_chunk", "b", "m2"),
        chunk("agent_message_chunk", "c", "m1"),
    )
    assert [u.message_id for u in updates] == ["m1", "m2", "m1"]
    assert state.messages["m1"].text == "ac"


def test_a_new_turn_starts_a_new_message() -> None:
    t = v1.V1Translator()
    first = translate(t, chunk("agent_message_chunk", "a"))
    t.begin_turn()
    second = translate(t, chunk("agent_message_chunk", "b"))
    assert first[0].message_id != second[0].message_id


def test_tool_call_creates_and_update_patches_with_diff_and_terminal_content() -> None:
    state, updates = applied(
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "t1",
            "title": "Edit a.py",
            "kind": "edit",
            "rawInput": {"path": "/w/a.py"},
            "content": [
                {
                    "type": "diff",
                    "path": "/w/a.py",
                    "oldText": "x = 1\ny = 2\n",
                    "newText": "x = 1\ny = 3\n",
                },
                {"type": "diff", "path": "/w/new.py", "newText": "print(1)"},
            ],
            "locations": [{"path": "/w/a.py", "line": 2}],
        },
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "t1",
            "status": "completed",
            "content": [
                {"type": "content", "content": {"type": "text", "text": "done"}},
                {"type": "terminal", "terminalId": "term1"},
            ],
        },
        {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "title": None},
    )
    created = updates[0]
    assert isinstance(created, p.ToolCallUpdate)
    assert created.status == "pending"  # v1's default, set on creation
    diff, new_file = created.content or []
    assert isinstance(diff, p.DiffToolCallContent) and diff.patch is not None
    view = build_diff([c.to_wire() for c in diff.changes], diff.patch.to_wire())
    lines = [(ln.kind, ln.text) for h in view.entries[0].file.hunks for ln in h.lines]  # type: ignore[union-attr]
    assert ("del", "y = 2") in lines and ("add", "y = 3") in lines
    assert isinstance(new_file, p.DiffToolCallContent)
    assert new_file.changes[0].to_wire()["operation"] == "add"
    added = build_diff([new_file.changes[0].to_wire()], new_file.patch.to_wire())  # type: ignore[union-attr]
    assert added.entries[0].file is not None and added.entries[0].file.new_file
    # the update patches only what it sends: kind and locations stay
    patch = updates[1]
    assert not p.is_set(patch, "kind") and not p.is_set(patch, "locations")
    call = state.tool_calls["t1"]
    assert call.status == "completed" and call.kind == "edit"
    assert [type(c) for c in call.content] == [p.ContentToolCallContent, p.TerminalToolCallContent]
    assert "t1" in state.terminal("term1").tool_call_ids
    # v1 reads an update's null as "unchanged" (its Option fields), never as a v2 clear
    assert call.title == "Edit a.py"
    assert not p.is_set(updates[2], "title") and not p.is_set(updates[2], "status")


def test_plan_commands_modes_config_usage_info_and_notice() -> None:
    t = v1.V1Translator()
    options = t.session_setup(
        v1.V1SessionModeState.model_validate(
            {
                "currentModeId": "ask",
                "availableModes": [{"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}],
            }
        ),
        [{"id": "model", "name": "Model", "type": "select", "currentValue": "a",
          "options": [{"value": "a", "name": "A"}]}],
    )  # fmt: skip
    assert [o.config_id for o in options] == ["mode", "model"]
    assert options[0].current_value == "ask"
    state = SessionState("s1")
    state.begin_turn("x")
    updates = translate(
        t,
        {"sessionUpdate": "plan",
         "entries": [{"content": "step", "priority": "high", "status": "pending"}]},
        {"sessionUpdate": "available_commands_update", "availableCommands": [
            {"name": "web", "description": "search", "input": {"hint": "query"}},
            {"name": "plain", "description": "no input"}]},
        {"sessionUpdate": "current_mode_update", "currentModeId": "code"},
        {"sessionUpdate": "config_option_update", "configOptions": [
            {"id": "fast", "name": "Fast", "type": "boolean", "currentValue": True}]},
        {"sessionUpdate": "usage_update", "used": 10, "size": 100},
        {"sessionUpdate": "session_info_update", "title": "T"},
        {"sessionUpdate": "notice", "severity": "warning", "title": "careful"},
        {"sessionUpdate": "compaction_update", "compactionId": "c1", "status": "in_progress"},
        {"sessionUpdate": "compaction_summary_chunk", "compactionId": "c1",
         "content": {"type": "text", "text": "sum"}},
    )  # fmt: skip
    for u in updates:
        assert_valid("SessionUpdate", u.to_wire())
        state.apply(u)
    tags = [u.session_update for u in updates]
    assert tags == [
        "plan_update", "available_commands_update", "config_option_update",
        "config_option_update", "usage_update", "session_info_update", "notice",
        "compaction_update", "compaction_summary_chunk",
    ]  # fmt: skip
    plan = state.current_turn.plan  # type: ignore[union-attr]
    assert plan is not None and [e.content for e in plan.entries] == ["step"]
    commands = updates[1].available_commands
    assert commands[0].input.hint == "query" and commands[1].input is None
    mode = updates[2].config_options[0]
    assert (mode.config_id, mode.current_value) == ("mode", "code")
    assert [o.config_id for o in updates[3].config_options] == ["mode", "fast"]
    assert state.problems == []


def test_unknown_variants_are_kept_and_malformed_ones_raise() -> None:
    t = v1.V1Translator()
    raw = {"sessionUpdate": "_custom_thing", "x": 1}
    (kept,) = translate(t, raw)
    assert isinstance(kept, p.UnknownSessionUpdate) and kept.to_wire() == raw
    (call,) = translate(
        t,
        {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "x",
         "content": [{"type": "_future", "blob": 1}]},
    )  # fmt: skip
    assert isinstance(call.content[0], p.UnknownToolCallContent)
    assert call.content[0].to_wire() == {"type": "_future", "blob": 1}
    for bad in (
        {"sessionUpdate": "tool_call", "toolCallId": "t"},  # no title
        {"sessionUpdate": "agent_message_chunk"},  # no content
        {"sessionUpdate": "plan", "entries": "nope"},
        {"sessionUpdate": 3},
        {"content": {"type": "text", "text": "x"}},  # no tag
    ):
        with pytest.raises(ValidationError):
            v1.parse_v1_session_update(bad)


def test_prompt_response_becomes_the_idle_update() -> None:
    t = v1.V1Translator()
    response = v1.V1PromptResponse.model_validate({"stopReason": "cancelled", "usage": {"x": 1}})
    idle = t.end_turn(response)
    assert isinstance(idle, p.IdleStateUpdate) and idle.stop_reason == "cancelled"
    state = SessionState("s1")
    turn = state.begin_turn("x")
    state.apply(idle)
    assert turn.done and turn.stop_reason == "cancelled"
    with pytest.raises(ValidationError):
        v1.V1PromptResponse.model_validate({})


def permission(
    call: dict[str, Any], kinds: tuple[str, ...] = ("allow_once", "reject_once")
) -> p.RequestPermissionRequest:
    raw = {
        "sessionId": "s1",
        "toolCall": call,
        "options": [{"optionId": k, "name": k, "kind": k} for k in kinds],
    }
    request = v1.V1Translator().permission(v1.V1RequestPermissionRequest.model_validate(raw))
    assert_valid("RequestPermissionRequest", request.to_wire())
    return request


def test_permission_request_names_its_tool_call_as_the_subject() -> None:
    request = permission({"toolCallId": "pending", "title": "shout", "rawInput": {"text": "hi"}})
    assert request.title == "shout"
    assert isinstance(request.subject, p.ToolCallPermissionSubject)
    assert request.subject.tool_call.raw_input == {"text": "hi"}
    assert [o.kind for o in request.options] == ["allow_once", "reject_once"]
    # no title: its name, else its id
    assert permission({"toolCallId": "t9", "name": "bash"}).title == "bash"
    assert permission({"toolCallId": "t9"}).title == "tool call t9"
    with pytest.raises(ValidationError):  # no options: nothing to answer
        v1.V1RequestPermissionRequest.model_validate(
            {"sessionId": "s", "toolCall": {"toolCallId": "t"}, "options": []}
        )
    with pytest.raises(ValidationError):  # no toolCall
        v1.V1RequestPermissionRequest.model_validate({"sessionId": "s", "options": []})


def test_policy_sees_the_title_and_an_execute_tool_calls_command() -> None:
    run = {"toolCallId": "t", "title": "Run a command", "kind": "execute"}
    policy = Policy.from_globs(["Run *", "ls *"], ["rm *"])
    rm = permission({**run, "rawInput": {"command": "rm -rf build"}})
    decided = policy.decide(rm)
    assert decided is not None and not decided.allow and decided.option_id == "reject_once"
    # the title matches an allow, but a command is there: only the command can approve
    curl = permission({**run, "rawInput": {"command": "curl x | sh"}})
    assert policy.decide(curl) is None
    ls = permission({**run, "rawInput": {"command": "ls -la"}})
    decided = policy.decide(ls)
    assert decided is not None and decided.allow and decided.option_id == "allow_once"
    # a deny on the title rejects whatever the command
    assert Policy.from_globs(["ls *"], ["Run *"]).decide(ls).allow is False  # type: ignore[union-attr]
    # no kind (or another kind) does not hide the command: it is judged all the same (the
    # title "Run *" approved `rm x` here before)
    titled = permission(
        {"toolCallId": "t", "title": "Run a command", "rawInput": {"command": "rm x"}}
    )
    assert policy.decide(titled).allow is False  # type: ignore[union-attr]
    titled = permission({**titled.subject.tool_call.to_wire(), "kind": "other"})  # type: ignore[union-attr]
    assert policy.decide(titled).allow is False  # type: ignore[union-attr]
    # no command: the title decides, as before
    plain = permission({"toolCallId": "t", "title": "Run a command", "rawInput": {"x": 1}})
    assert policy.decide(plain).allow is True  # type: ignore[union-attr]


def test_a_command_given_as_a_list_is_judged_as_the_shell_would_read_it() -> None:
    run = {"toolCallId": "t", "title": "Run a command", "kind": "execute"}
    policy = Policy.from_globs(["Run *", "ls *", "bash -lc *"], ["rm *"])
    # codex sends ["bash", "-lc", "..."]: the script inside is read, and `rm` found
    wrapped = permission({**run, "rawInput": {"command": ["bash", "-lc", "ls; rm -rf /"]}})
    decided = policy.decide(wrapped)
    assert decided is not None and not decided.allow
    ls = permission({**run, "rawInput": {"command": ["ls", "-la", "my dir"]}})
    decided = policy.decide(ls)
    assert decided is not None and decided.allow and "ls *" in decided.rule
    # an execute tool whose command is neither a string nor a list of strings: a person
    for odd in (7, {"argv": ["ls"]}, [], ["ls", 3]):
        strange = permission({**run, "rawInput": {"command": odd}})
        assert policy.decide(strange) is None, odd
        assert Policy.from_globs(["*"], []).decide(strange) is None, odd


def test_invalid_default_on_error_fields_read_as_absent_and_are_reported() -> None:
    raw = {
        "sessionUpdate": "tool_call",
        "toolCallId": "t1",
        "title": "Run",
        "kind": 7,  # not a string: read as absent (the default kind)
        "content": [
            {"type": "content", "content": {"type": "text", "text": "ok"}},
            {"type": "diff", "path": 3, "newText": "x"},  # an invalid item: left out
        ],
        "locations": "nowhere",
    }
    with pytest.raises(ValidationError):
        v1.parse_v1_session_update(raw)  # the strict parse refuses it
    update, notes = v1.parse_v1_session_update_lenient(raw)
    assert isinstance(update, v1.V1ToolCall)
    assert not p.is_set(update, "kind") and not p.is_set(update, "locations")
    assert len(update.content or []) == 1
    assert sorted(notes) == sorted(
        ["invalid 'kind' left out", "invalid 'locations' left out",
         "1 invalid item(s) of 'content' left out"]
    )  # fmt: skip
    # what is not default-on-error still fails the whole update
    for bad in (
        {**raw, "title": 5},  # a tool_call's title is required
        {**raw, "toolCallId": None},
        {"sessionUpdate": "agent_message_chunk", "content": 5},
    ):
        with pytest.raises(ValidationError):
            v1.parse_v1_session_update_lenient(bad)
    # a permission request's toolCall is read the same way; its options never are
    request, notes = v1.parse_v1_permission_request(
        {"sessionId": "s", "toolCall": {"toolCallId": "t", "title": "x", "status": 3},
         "options": [{"optionId": "a", "name": "A", "kind": "allow_once"}]}
    )  # fmt: skip
    assert notes == ["invalid 'status' left out"] and request.tool_call.title == "x"
    with pytest.raises(ValidationError):
        v1.parse_v1_permission_request(
            {"sessionId": "s", "toolCall": {"toolCallId": "t"},
             "options": [{"optionId": "a", "name": "A"}]}
        )  # fmt: skip


# -- the terminal extension in _meta (claude-agent-acp, older codex-acp) ---------------------


def test_meta_terminal_extension_becomes_a_display_terminal() -> None:
    # the shapes claude-agent-acp 0.101.0 sends a client that sets _meta.terminal_output
    state, updates = applied(
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "toolu_1",
            "title": "`ls -la`",
            "kind": "execute",
            "rawInput": {"command": "ls -la"},
            "_meta": {"terminal_info": {"terminal_id": "toolu_1"}},
        },
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "toolu_1",
            "content": [{"type": "terminal", "terminalId": "toolu_1"}],
            "_meta": {"terminal_output": {"terminal_id": "toolu_1", "data": "a\r\nb é\r\n"}},
        },
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "toolu_1",
            "_meta": {"terminal_output_delta": {"terminal_id": "toolu_1", "data": "c\r\n"}},
        },
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "toolu_1",
            "status": "failed",
            "_meta": {"terminal_exit": {"terminal_id": "toolu_1", "exit_code": 2, "signal": None}},
        },
    )
    term = state.terminals["toolu_1"]
    assert term.command == "ls -la"
    assert term.text.splitlines() == ["a", "b é", "c"]
    assert term.exit_status is not None and term.exit_status.exit_code == 2
    assert [u.session_update for u in updates].count("terminal_output_chunk") == 2
    assert state.tool_calls["toolu_1"].status == "failed"


def test_meta_terminal_reads_both_key_spellings_and_ignores_what_it_cannot_read() -> None:
    state, _ = applied(
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "c1",
            "title": "run",
            "kind": "execute",
            "rawInput": {"command": ["bash", "-lc", "make test"]},
            "_meta": {
                "terminal_info": {"terminalId": "t-9"},
                "terminal_output": {"terminalId": "t-9", "data": "ok\n"},
            },
        },
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "c1",
            "_meta": {
                "terminal_output": {"terminalId": "t-9", "data": 17},  # not text: nothing
                "terminal_exit": {"terminalId": "t-9", "exitCode": None, "signal": "SIGKILL"},
            },
        },
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "c1",
            "_meta": {"terminal_info": "t-10", "terminal_output": {"data": "lost"}},  # no id
        },
    )
    assert list(state.terminals) == ["t-9"]
    term = state.terminals["t-9"]
    assert term.command == "bash -lc 'make test'"
    assert term.text == "ok\n"
    assert term.exit_status.exit_code is None and term.exit_status.signal == "SIGKILL"


def test_meta_terminal_gets_its_command_when_the_input_comes_later() -> None:
    # claude-agent-acp announces the terminal on the first report, whose rawInput is {} while
    # the input streams; the command comes in the next update, the output as plain text
    state, _ = applied(
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "toolu_2",
            "title": "Terminal",
            "kind": "execute",
            "rawInput": {},
            "content": [{"type": "terminal", "terminalId": "toolu_2"}],
            "_meta": {"terminal_info": {"terminal_id": "toolu_2"}},
        },
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "toolu_2",
            "rawInput": {"command": "printf 'one\\ntwo\\n'"},
        },
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "toolu_2",
            "_meta": {"terminal_output": {"terminal_id": "toolu_2", "data": "one\ntwo\r\nthree"}},
        },
    )
    term = state.terminals["toolu_2"]
    assert term.command == "printf 'one\\ntwo\\n'"
    assert term.data == b"one\r\ntwo\r\nthree"  # lone line feeds as a terminal expects them


def test_finding_7_a_permission_is_merged_with_the_tool_call_the_session_knows() -> None:
    raw = {
        "sessionId": "s1",
        "toolCall": {"toolCallId": "effect-1"},  # Mistral Vibe: the id only
        "options": [{"optionId": "yes", "name": "Yes", "kind": "allow_once"}],
    }
    asked = v1.V1RequestPermissionRequest.model_validate(raw)
    assert v1.V1Translator().permission(asked).title == "tool call effect-1"  # nothing known
    known = {"toolCallId": "effect-1", "title": "bash", "kind": "execute",
             "rawInput": {"command": "rm -f x"}}  # fmt: skip
    request = v1.V1Translator().permission(asked, known)
    assert_valid("RequestPermissionRequest", request.to_wire())
    assert request.title == "bash"
    assert request.subject.tool_call.raw_input == {"command": "rm -f x"}  # type: ignore[union-attr]
    decided = Policy.from_globs(["*"], ["rm *"]).decide(request)
    assert decided is not None and not decided.allow
    # what the request says itself wins, field by field (v1 reads a null as unchanged)
    raw["toolCall"] = {"toolCallId": "effect-1", "title": "list", "rawInput": None}
    asked = v1.V1RequestPermissionRequest.model_validate(raw)
    request = v1.V1Translator().permission(asked, known)
    assert request.title == "list"
    assert request.subject.tool_call.raw_input == {"command": "rm -f x"}  # type: ignore[union-attr]
    # only a name known: the name is the title
    raw["toolCall"] = {"toolCallId": "effect-1"}
    asked = v1.V1RequestPermissionRequest.model_validate(raw)
    named = {"toolCallId": "effect-1", "name": "shell"}
    assert v1.V1Translator().permission(asked, named).title == "shell"


@given(st.text(alphabet="ab\r\né\ud800", max_size=20))
def test_terminal_bytes_turns_each_lone_line_feed_into_cr_lf(text: str) -> None:
    """`terminal_bytes` takes a shortcut (str.replace) for text without a CR: the same bytes
    as the rule (a regex: every LF without a CR before it becomes CR LF; UTF-8, lone
    surrogates replaced)."""
    expected = re.sub(r"(?<!\r)\n", "\r\n", text).encode("utf-8", "replace")
    assert v1.terminal_bytes(text) == expected
