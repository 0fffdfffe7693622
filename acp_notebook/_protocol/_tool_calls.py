"""Tool calls: ``ToolCallUpdate`` fields, ``ToolCallContent`` (content, diff, terminal)."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field, Tag

from ._base import UNKNOWN_TAG, UnknownVariant, WireModel, open_union_discriminator
from ._content import ContentBlock, TextContent

__all__ = [
    "DIFF_CHANGE_OPERATIONS",
    "DIFF_FILE_TYPES",
    "DIFF_PATCH_FORMATS",
    "TOOL_CALL_CONTENT_TYPES",
    "TOOL_CALL_STATUSES",
    "TOOL_KINDS",
    "ContentToolCallContent",
    "DiffAdd",
    "DiffChange",
    "DiffCopy",
    "DiffDelete",
    "DiffFileType",
    "DiffModify",
    "DiffMove",
    "DiffPatch",
    "DiffToolCallContent",
    "TerminalToolCallContent",
    "ToolCallCancelCapabilities",
    "ToolCallCapabilities",
    "ToolCallContent",
    "ToolCallFields",
    "ToolCallLocation",
    "ToolCallStatus",
    "ToolKind",
    "UnknownDiffChange",
    "UnknownToolCallContent",
]

ToolCallStatus = str
"""Open enum, see :data:`TOOL_CALL_STATUSES`; custom values start with ``_``."""
ToolKind = str
"""Open enum, see :data:`TOOL_KINDS`; custom values start with ``_``."""
DiffFileType = str
"""Open enum: ``text``, ``binary``, ``directory``, ``symlink`` or custom/future."""

TOOL_CALL_STATUSES = frozenset(
    {"pending", "in_progress", "paused", "completed", "failed", "cancelled"}
)
TOOL_KINDS = frozenset(
    {
        "read",
        "edit",
        "delete",
        "move",
        "search",
        "execute",
        "think",
        "fetch",
        "switch_mode",
        "other",
    }
)
DIFF_FILE_TYPES = frozenset({"text", "binary", "directory", "symlink"})
DIFF_PATCH_FORMATS = frozenset({"git_patch"})


class ToolCallLocation(WireModel):
    path: str
    line: int | None = Field(default=None, ge=1)


# -- diff changes (tagged by ``operation``) ------------------------------------------------


class _DiffChangeBase(WireModel):
    file_type: DiffFileType | None = None
    mime_type: str | None = None


class DiffAdd(_DiffChangeBase):
    operation: Literal["add"] = "add"
    path: str


class DiffDelete(_DiffChangeBase):
    operation: Literal["delete"] = "delete"
    path: str


class DiffModify(_DiffChangeBase):
    operation: Literal["modify"] = "modify"
    path: str


class DiffMove(_DiffChangeBase):
    operation: Literal["move"] = "move"
    old_path: str
    path: str


class DiffCopy(_DiffChangeBase):
    operation: Literal["copy"] = "copy"
    old_path: str
    path: str


class UnknownDiffChange(UnknownVariant):
    tag_key = "operation"


DIFF_CHANGE_OPERATIONS: dict[str, type[WireModel]] = {
    "add": DiffAdd,
    "delete": DiffDelete,
    "modify": DiffModify,
    "move": DiffMove,
    "copy": DiffCopy,
}

DiffChange = Annotated[
    Annotated[DiffAdd, Tag("add")]
    | Annotated[DiffDelete, Tag("delete")]
    | Annotated[DiffModify, Tag("modify")]
    | Annotated[DiffMove, Tag("move")]
    | Annotated[DiffCopy, Tag("copy")]
    | Annotated[UnknownDiffChange, Tag(UNKNOWN_TAG)],
    open_union_discriminator("operation", "operation", frozenset(DIFF_CHANGE_OPERATIONS)),
]


class DiffPatch(WireModel):
    """Renderable patch text; ``format`` is ``git_patch`` or a custom/future format."""

    format: str
    text: str


# -- tool call content (tagged by ``type``) -------------------------------------------------


class ContentToolCallContent(WireModel):
    type: Literal["content"] = "content"
    content: ContentBlock


class DiffToolCallContent(WireModel):
    """``changes`` is authoritative; ``patch`` is optional rendering text."""

    type: Literal["diff"] = "diff"
    changes: list[DiffChange]
    patch: DiffPatch | None = None


class TerminalToolCallContent(WireModel):
    """A display anchor for an agent-owned terminal (see ``terminal_update``)."""

    type: Literal["terminal"] = "terminal"
    terminal_id: str


class UnknownToolCallContent(UnknownVariant):
    tag_key = "type"


TOOL_CALL_CONTENT_TYPES: dict[str, type[WireModel]] = {
    "content": ContentToolCallContent,
    "diff": DiffToolCallContent,
    "terminal": TerminalToolCallContent,
}

ToolCallContent = Annotated[
    Annotated[ContentToolCallContent, Tag("content")]
    | Annotated[DiffToolCallContent, Tag("diff")]
    | Annotated[TerminalToolCallContent, Tag("terminal")]
    | Annotated[UnknownToolCallContent, Tag(UNKNOWN_TAG)],
    open_union_discriminator("type", "type", frozenset(TOOL_CALL_CONTENT_TYPES)),
]


class ToolCallCancelCapabilities(WireModel):
    pass


class ToolCallCapabilities(WireModel):
    cancel: ToolCallCancelCapabilities | None = None


class ToolCallFields(WireModel):
    """The schema's ``ToolCallUpdate`` object without a ``sessionUpdate`` tag.

    Used as the ``toolCall`` of a permission subject; the session update variant
    :class:`ToolCallUpdate` extends it. Every field but ``tool_call_id`` is a patch field:
    use :func:`is_set` to tell omitted from ``null``.
    """

    tool_call_id: str
    name: str | None = None
    title: str | None = None
    kind: ToolKind | None = None
    status: ToolCallStatus | None = None
    content: list[ToolCallContent] | None = None
    locations: list[ToolCallLocation] | None = None
    raw_input: Any = None
    raw_output: Any = None
    capabilities: ToolCallCapabilities | None = None


#: The ``rawInput`` keys agents put an execute call's command under, in the order they are read:
#: ``command`` (most agents; codex an argv list), ``commands`` (Cline's ``run_commands``: a list
#: of commands), ``cmd`` and ``script`` (others), ``argv`` (an argv list under its own name).
COMMAND_KEYS = ("command", "commands", "cmd", "script", "argv")


@dataclass(frozen=True)
class RawInputCommands:
    """What a tool call's ``rawInput`` says it runs: each command as one shell string, in the
    order given (a policy judges each one apart: joined into one text, a comment or an open
    quote at the end of one would hide the next), and whether a command key held a value of
    another shape (then what it runs is not known)."""

    commands: tuple[str, ...] = ()
    unreadable: bool = False


def _argv(value: Any) -> str | None:
    """A non-empty list of strings joined as a shell would read it back; else None."""
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return shlex.join(value)
    return None


def _one_command(value: Any) -> str | None:
    """A string as it is, an argv list joined (``["bash", "-lc", "ls"]``); else None."""
    return value if isinstance(value, str) else _argv(value)


def _read_key(raw: dict[str, Any], key: str) -> list[str] | None:
    """The commands under ``key`` (None when its value is of another shape)."""
    value = raw[key]
    if key == "commands" and isinstance(value, list):
        found = [_one_command(item) for item in value]
        if not found or any(c is None for c in found):
            return None
        return [c for c in found if c is not None]
    command = _one_command(value)
    if command is None:
        return None
    if key in ("command", "cmd") and "args" in raw:
        # a program and its arguments apart, as ``terminal/create`` takes them
        args = raw["args"]
        if args == []:
            return [command]
        joined = _argv(args)
        return None if joined is None else [f"{command} {joined}"]
    return [command]


def raw_input_commands(raw_input: Any) -> RawInputCommands:
    """Every command a tool call's ``rawInput`` names, under any of :data:`COMMAND_KEYS` (a
    key present with a value of another shape marks the reading ``unreadable``), or the whole
    input when it is itself an argv list; a command named twice counts once. This is the one
    reading of a tool call's command: the policy, the card and the v1 translator all use it."""
    if isinstance(raw_input, list):
        command = _argv(raw_input)
        return (
            RawInputCommands(unreadable=True) if command is None else RawInputCommands((command,))
        )
    if not isinstance(raw_input, dict):
        return RawInputCommands()
    commands: list[str] = []
    unreadable = False
    for key in COMMAND_KEYS:
        if key in raw_input:
            found = _read_key(raw_input, key)
            if found is None:
                unreadable = True
            else:
                commands += found
    # once each: Copilot names one command under both ``command`` and ``commands``
    return RawInputCommands(tuple(dict.fromkeys(commands)), unreadable)


def raw_input_command(raw_input: Any) -> str | None:
    """The commands of :func:`raw_input_commands` as one text to show (one a line), or None
    when it names none."""
    commands = raw_input_commands(raw_input).commands
    return "\n".join(commands) if commands else None


# ``Name: command``, as Cline (``run_commands: rm -f x``) and Kimi (``Shell: rm -f x``) title an
# execute call: a short name of word characters (spaces, dots and dashes inside), a colon.
_NAMED_TITLE = re.compile(r"\s*[A-Za-z_][\w .-]{0,63}:\s*(\S.*)", re.DOTALL)


def title_command(title: str) -> str | None:
    """The command part of a title of the form ``Name: command``, else None. What a title says
    is the agent's words: only a deny rule reads it, it never approves."""
    found = _NAMED_TITLE.fullmatch(title)
    return found.group(1).rstrip() if found else None


def content_texts(call: ToolCallFields) -> list[str]:
    """The text blocks of a tool call's content (where Kimi puts an execute call's command)."""
    texts: list[str] = []
    for item in call.content or []:
        if isinstance(item, ContentToolCallContent) and isinstance(item.content, TextContent):
            texts.append(item.content.text)
    return texts


#: Tool kinds whose calls do not run a command: a read, an edit, a search ... (their title is a
#: name, their text content is not a command).
NOT_COMMAND_KINDS = frozenset(
    {"read", "edit", "delete", "move", "search", "think", "fetch", "switch_mode"}
)


def _holds_text(value: Any, depth: int = 0) -> bool:
    """Whether a tool's input holds a string as a value anywhere (a number or a boolean is no
    command); nested deeper than 32 levels counts as holding one."""
    if isinstance(value, str):
        return bool(value)
    if depth > 32:
        return True
    if isinstance(value, dict):
        return any(_holds_text(item, depth + 1) for item in value.values())
    if isinstance(value, list):
        return any(_holds_text(item, depth + 1) for item in value)
    return False


def _json_arguments(text: str) -> bool:
    """Whether a text block is a JSON object or array holding text: a tool's arguments sent as
    text (Gemini CLI's MCP calls), which no reading of a command here looks into."""
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return False
    try:
        arguments = json.loads(stripped)
    except (ValueError, RecursionError):
        return True  # it looks like arguments but cannot be read: not known
    return isinstance(arguments, (dict, list)) and _holds_text(arguments)


def call_command_unknown(call: ToolCallFields) -> bool:
    """Whether a tool call may run a command this client cannot read: an ``execute`` call that
    names none under :data:`COMMAND_KEYS` (or one of another shape), or a call of kind
    ``other``, of no kind or of a kind not known here whose ``rawInput`` holds text under other
    keys (``cmd_line``, ``code``, ``arguments.command``, ``{"owner": "x"}`` ...; numbers and
    booleans are no command), or that sends such arguments as JSON text. While a deny rule is
    set, no rule approves it."""
    if call.kind in NOT_COMMAND_KINDS:
        return False
    reading = raw_input_commands(call.raw_input)
    if reading.unreadable:
        return True
    if reading.commands:
        return False
    if call.kind == "execute":
        return True
    if _holds_text(call.raw_input):
        return True
    return any(_json_arguments(text) for text in content_texts(call))
