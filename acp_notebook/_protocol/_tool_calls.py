"""Tool calls: ``ToolCallUpdate`` fields, ``ToolCallContent`` (content, diff, terminal)."""

from __future__ import annotations

import shlex
from typing import Annotated, Any, Literal

from pydantic import Field, Tag

from ._base import UNKNOWN_TAG, UnknownVariant, WireModel, open_union_discriminator
from ._content import ContentBlock

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


def raw_input_command(raw_input: Any) -> str | None:
    """A tool call's ``rawInput.command`` as one shell string: a string as it is, a list of
    strings joined as a shell would read them (``["bash", "-lc", "ls"]``, as codex sends);
    None for anything else (no command, or one of another shape)."""
    if not isinstance(raw_input, dict):
        return None
    command = raw_input.get("command")
    if isinstance(command, str):
        return command
    if isinstance(command, list) and command and all(isinstance(c, str) for c in command):
        return shlex.join(command)
    return None
