"""Session config options (``SessionConfigOption``) and slash commands (``AvailableCommand``)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, Tag

from ._base import UNKNOWN_TAG, UnknownVariant, WireModel, open_union_discriminator

__all__ = [
    "AVAILABLE_COMMAND_TYPES",
    "CONFIG_OPTION_TYPES",
    "AvailableCommand",
    "AvailableCommandInput",
    "Command",
    "SessionConfigBoolean",
    "SessionConfigOption",
    "SessionConfigOptionCategory",
    "SessionConfigSelect",
    "SessionConfigSelectGroup",
    "SessionConfigSelectOption",
    "TextCommandInput",
    "UnknownAvailableCommand",
    "UnknownCommandInput",
    "UnknownSessionConfigOption",
]

SessionConfigOptionCategory = str
"""Open enum: ``mode``, ``model``, ``model_config``, ``thought_level`` or custom/future."""


class SessionConfigSelectOption(WireModel):
    value: str
    name: str
    description: str | None = None


class SessionConfigSelectGroup(WireModel):
    group_id: str
    name: str
    options: list[SessionConfigSelectOption] = Field(min_length=1)


class _ConfigOptionBase(WireModel):
    config_id: str
    name: str
    description: str | None = None
    category: SessionConfigOptionCategory | None = None


class SessionConfigSelect(_ConfigOptionBase):
    """A single choice among ``options`` (flat, or in groups)."""

    type: Literal["select"] = "select"
    current_value: str
    options: list[SessionConfigSelectOption] | list[SessionConfigSelectGroup] = Field(min_length=1)


class SessionConfigBoolean(_ConfigOptionBase):
    type: Literal["boolean"] = "boolean"
    current_value: bool


class UnknownSessionConfigOption(UnknownVariant):
    tag_key = "type"


CONFIG_OPTION_TYPES: dict[str, type[WireModel]] = {
    "select": SessionConfigSelect,
    "boolean": SessionConfigBoolean,
}

SessionConfigOption = Annotated[
    Annotated[SessionConfigSelect, Tag("select")]
    | Annotated[SessionConfigBoolean, Tag("boolean")]
    | Annotated[UnknownSessionConfigOption, Tag(UNKNOWN_TAG)],
    open_union_discriminator("type", "type", frozenset(CONFIG_OPTION_TYPES)),
]


class TextCommandInput(WireModel):
    type: Literal["text"] = "text"
    hint: str


class UnknownCommandInput(UnknownVariant):
    tag_key = "type"


AvailableCommandInput = Annotated[
    Annotated[TextCommandInput, Tag("text")] | Annotated[UnknownCommandInput, Tag(UNKNOWN_TAG)],
    open_union_discriminator("type", "type", frozenset({"text"})),
]


class Command(WireModel):
    type: Literal["command"] = "command"
    name: str
    description: str
    input: AvailableCommandInput | None = None


class UnknownAvailableCommand(UnknownVariant):
    tag_key = "type"


AVAILABLE_COMMAND_TYPES: dict[str, type[WireModel]] = {"command": Command}

AvailableCommand = Annotated[
    Annotated[Command, Tag("command")] | Annotated[UnknownAvailableCommand, Tag(UNKNOWN_TAG)],
    open_union_discriminator("type", "type", frozenset(AVAILABLE_COMMAND_TYPES)),
]
