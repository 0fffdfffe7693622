"""acp_notebook._protocol._config: session config options and available commands."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter, ValidationError

from acp_notebook._protocol._config import (
    AvailableCommand,
    Command,
    SessionConfigBoolean,
    SessionConfigOption,
    SessionConfigSelect,
    SessionConfigSelectGroup,
    TextCommandInput,
    UnknownAvailableCommand,
    UnknownCommandInput,
    UnknownSessionConfigOption,
)

options: TypeAdapter[object] = TypeAdapter(SessionConfigOption)
commands: TypeAdapter[object] = TypeAdapter(AvailableCommand)

SELECT = {
    "type": "select",
    "configId": "model",
    "name": "Model",
    "currentValue": "fast",
    "options": [{"value": "fast", "name": "Fast"}, {"value": "slow", "name": "Slow"}],
}


def test_a_flat_select() -> None:
    option = options.validate_python(SELECT)
    assert isinstance(option, SessionConfigSelect)
    assert option.config_id == "model"
    assert [o.value for o in option.options] == ["fast", "slow"]  # type: ignore[union-attr]
    assert option.to_wire() == SELECT


def test_a_grouped_select() -> None:
    grouped = {
        **SELECT,
        "options": [{"groupId": "g", "name": "G", "options": [{"value": "fast", "name": "F"}]}],
    }
    option = options.validate_python(grouped)
    assert isinstance(option, SessionConfigSelect)
    assert isinstance(option.options[0], SessionConfigSelectGroup)


@pytest.mark.parametrize(
    "bad",
    [
        {**SELECT, "options": []},
        {**SELECT, "options": [{"groupId": "g", "name": "G", "options": []}]},
        {k: v for k, v in SELECT.items() if k != "currentValue"},
    ],
    ids=["no options", "empty group", "no current value"],
)
def test_a_select_needs_options_and_a_value(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        options.validate_python(bad)


def test_a_boolean_takes_only_a_bool() -> None:
    flag = {"type": "boolean", "configId": "x", "name": "X", "currentValue": True}
    assert isinstance(options.validate_python(flag), SessionConfigBoolean)
    with pytest.raises(ValidationError):
        options.validate_python({**flag, "currentValue": "true"})


def test_an_unknown_option_type_is_kept() -> None:
    future = {"type": "slider", "configId": "t", "min": 0}
    option = options.validate_python(future)
    assert isinstance(option, UnknownSessionConfigOption)
    assert option.to_wire() == future


def test_a_category_is_an_open_string() -> None:
    option = options.validate_python({**SELECT, "category": "_vendor_thing"})
    assert isinstance(option, SessionConfigSelect)
    assert option.category == "_vendor_thing"


def test_commands_with_text_input_unknown_input_and_unknown_type() -> None:
    command = commands.validate_python(
        {
            "type": "command",
            "name": "web",
            "description": "Search",
            "input": {"type": "text", "hint": "q"},
        }
    )
    assert isinstance(command, Command)
    assert isinstance(command.input, TextCommandInput)
    assert command.input.hint == "q"
    other = commands.validate_python(
        {"type": "command", "name": "n", "description": "d", "input": {"type": "file"}}
    )
    assert isinstance(other, Command)
    assert isinstance(other.input, UnknownCommandInput)
    assert other.input.raw == {"type": "file"}
    assert isinstance(commands.validate_python({"type": "macro", "x": 1}), UnknownAvailableCommand)


def test_a_command_needs_a_description() -> None:
    with pytest.raises(ValidationError):
        commands.validate_python({"type": "command", "name": "n"})
