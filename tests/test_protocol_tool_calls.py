"""acp_notebook._protocol._tool_calls: tool call fields, content, diffs."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter, ValidationError

from acp_notebook._protocol._base import is_set
from acp_notebook._protocol._content import TextContent
from acp_notebook._protocol._tool_calls import (
    DIFF_CHANGE_OPERATIONS,
    TOOL_CALL_CONTENT_TYPES,
    ContentToolCallContent,
    DiffChange,
    DiffMove,
    DiffToolCallContent,
    TerminalToolCallContent,
    ToolCallContent,
    ToolCallFields,
    ToolCallLocation,
    UnknownDiffChange,
    UnknownToolCallContent,
    call_command_unknown,
    content_texts,
    raw_input_command,
    raw_input_commands,
    title_command,
)

contents: TypeAdapter[object] = TypeAdapter(ToolCallContent)
changes: TypeAdapter[object] = TypeAdapter(DiffChange)


def test_every_diff_operation_maps_to_its_model() -> None:
    for operation, model in DIFF_CHANGE_OPERATIONS.items():
        payload: dict[str, object] = {"operation": operation, "path": "b"}
        if operation in ("move", "copy"):
            payload["oldPath"] = "a"
        change = changes.validate_python(payload)
        assert type(change) is model
        assert change.to_wire() == payload  # type: ignore[attr-defined]


def test_move_needs_the_old_path() -> None:
    with pytest.raises(ValidationError):
        changes.validate_python({"operation": "move", "path": "b"})
    move = changes.validate_python({"operation": "move", "path": "b", "oldPath": "a"})
    assert isinstance(move, DiffMove)
    assert move.old_path == "a"


def test_an_unknown_operation_is_kept_under_its_tag() -> None:
    change = changes.validate_python({"operation": "chmod", "path": "x", "mode": 493})
    assert isinstance(change, UnknownDiffChange)
    assert change.tag == "chmod"


def test_tool_call_content_variants() -> None:
    assert set(TOOL_CALL_CONTENT_TYPES) == {"content", "diff", "terminal"}
    content = contents.validate_python(
        {"type": "content", "content": {"type": "text", "text": "x"}}
    )
    assert isinstance(content, ContentToolCallContent)
    assert isinstance(content.content, TextContent)
    diff = contents.validate_python(
        {
            "type": "diff",
            "changes": [{"operation": "add", "path": "n"}],
            "patch": {"format": "git_patch", "text": "+x"},
        }
    )
    assert isinstance(diff, DiffToolCallContent)
    assert diff.patch is not None
    assert diff.patch.text == "+x"
    terminal = contents.validate_python({"type": "terminal", "terminalId": "t1"})
    assert isinstance(terminal, TerminalToolCallContent)
    assert terminal.terminal_id == "t1"
    assert isinstance(contents.validate_python({"type": "map", "x": 1}), UnknownToolCallContent)


def test_a_diff_needs_its_changes() -> None:
    with pytest.raises(ValidationError):
        contents.validate_python({"type": "diff", "patch": {"format": "git_patch", "text": ""}})


def test_fields_are_patch_fields() -> None:
    omitted = ToolCallFields.from_wire({"toolCallId": "c"})
    cleared = ToolCallFields.from_wire({"toolCallId": "c", "title": None, "rawInput": None})
    assert not is_set(omitted, "title")
    assert is_set(cleared, "title")
    assert is_set(cleared, "raw_input")
    assert omitted.to_wire() == {"toolCallId": "c"}
    assert cleared.to_wire() == {"toolCallId": "c", "title": None, "rawInput": None}


def test_statuses_and_kinds_are_open_strings() -> None:
    fields = ToolCallFields.from_wire({"toolCallId": "c", "status": "_mine", "kind": "teleport"})
    assert (fields.status, fields.kind) == ("_mine", "teleport")


def test_a_location_line_starts_at_one() -> None:
    assert ToolCallLocation(path="p", line=1).line == 1
    with pytest.raises(ValidationError):
        ToolCallLocation(path="p", line=0)


# -- issue 22, finding 6: where agents put an execute call's command ---------------------------

COMMAND_SHAPES = [
    ({"command": "rm -f x"}, ("rm -f x",)),
    ({"command": ["bash", "-lc", "rm -f x"]}, ("bash -lc 'rm -f x'",)),  # codex
    ({"commands": ["rm -f x"]}, ("rm -f x",)),  # Cline's run_commands
    ({"commands": ["ls", ["rm", "-f", "my file"]]}, ("ls", "rm -f 'my file'")),
    ({"commands": "rm -f x"}, ("rm -f x",)),
    ({"cmd": "rm -f x"}, ("rm -f x",)),
    ({"cmd": ["rm", "-f", "x"]}, ("rm -f x",)),
    ({"script": "ls\nrm -f x"}, ("ls\nrm -f x",)),
    ({"argv": ["rm", "-f", "x"]}, ("rm -f x",)),
    (["rm", "-f", "x"], ("rm -f x",)),  # the whole input an argv list
    ({"command": "rm", "args": ["-f", "x"]}, ("rm -f x",)),  # program and arguments apart
    ({"command": "ls", "cmd": "rm -f x"}, ("ls", "rm -f x")),  # several keys: each one judged
    ({"command": "touch x", "commands": ["touch x"]}, ("touch x",)),  # Copilot: once, not twice
    ({"commands": ["ls", "rm x", "ls"]}, ("ls", "rm x")),
    ({"path": "a.py"}, ()),
    ("rm -f x", ()),  # not an object: no key names a command
    (None, ()),
]


@pytest.mark.parametrize(("raw", "expected"), COMMAND_SHAPES)
def test_every_shape_of_command_is_read(raw: object, expected: tuple[str, ...]) -> None:
    reading = raw_input_commands(raw)
    assert reading.commands == expected
    assert not reading.unreadable
    assert raw_input_command(raw) == ("\n".join(expected) if expected else None)


@pytest.mark.parametrize(
    "raw",
    [
        {"command": 7},
        {"command": []},
        {"command": ["ls", 3]},
        {"commands": []},
        {"commands": ["ls", 3]},
        {"commands": ["ls", []]},
        {"cmd": {"argv": ["ls"]}},
        {"script": None},
        {"command": "rm", "args": "-f x"},
        {"command": "ls", "cmd": 7},  # one readable key does not hide an unreadable one
        ["rm", 3],
        [],
    ],
)
def test_a_command_of_another_shape_is_unreadable(raw: object) -> None:
    assert raw_input_commands(raw).unreadable


@pytest.mark.parametrize(
    ("title", "expected"),
    [
        ("run_commands: rm -f x", "rm -f x"),  # Cline
        ("Shell: rm -f x", "rm -f x"),  # Kimi
        ("Run command:   rm -f x", "rm -f x"),
        ("Shell:rm -f x", "rm -f x"),
        ("Shell", None),
        ("rm -f x", None),
        (": rm -f x", None),
        ("Shell: ", None),
    ],
)
def test_a_title_of_the_form_name_colon_command(title: str, expected: str | None) -> None:
    assert title_command(title) == expected


def test_the_text_content_of_a_tool_call() -> None:
    call = ToolCallFields.from_wire(
        {
            "toolCallId": "c",
            "content": [
                {"type": "content", "content": {"type": "text", "text": "rm -f x"}},
                {"type": "terminal", "terminalId": "t"},
                {"type": "content", "content": {"type": "text", "text": "ls"}},
            ],
        }
    )
    assert content_texts(call) == ["rm -f x", "ls"]
    assert content_texts(ToolCallFields.from_wire({"toolCallId": "c"})) == []


@pytest.mark.parametrize(
    ("kind", "raw", "text", "unknown"),
    [
        ("execute", None, None, True),
        ("execute", {"command": "ls"}, None, False),
        ("execute", {"command": 7}, None, True),
        ("other", {"cmd_line": "rm -f x"}, None, True),
        ("other", {"arguments": {"command": "rm -f x"}}, None, True),
        (None, {"bash_command": "rm -f x"}, None, True),
        ("other", {"args": ["rm", "-f", "x"]}, None, True),
        ("other", "rm -f x", None, True),
        ("other", {"x": 1, "y": [True, None]}, None, False),  # no text: no command
        ("other", None, '{"cmd": "rm -f x"}', True),  # arguments as JSON text
        ("other", None, '{"cmd": ', True),  # JSON-like text that does not parse
        ("other", None, "rm -f x", False),  # text: deny reads it as a command
        ("other", {}, None, False),
        ("other", {"command": "ls"}, None, False),
        ("read", {"path": "a"}, None, False),
        ("edit", {"path": "a", "cmd": {"x": 1}}, None, False),
        ("switch_mode", {"mode": "code"}, None, False),
    ],
)
def test_a_call_whose_command_cannot_be_read(
    kind: str | None, raw: object, text: str | None, unknown: bool
) -> None:
    wire: dict[str, object] = {"toolCallId": "c", "title": "t"}
    if kind is not None:
        wire["kind"] = kind
    if raw is not None:
        wire["rawInput"] = raw
    if text is not None:
        wire["content"] = [{"type": "content", "content": {"type": "text", "text": text}}]
    assert call_command_unknown(ToolCallFields.model_validate(wire)) is unknown
