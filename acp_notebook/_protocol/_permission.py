"""``session/request_permission``: subjects, options and outcomes."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, Tag

from ._base import UNKNOWN_TAG, UnknownVariant, WireModel, open_union_discriminator
from ._tool_calls import ToolCallFields, call_command_unknown, raw_input_commands

__all__ = [
    "PERMISSION_OPTION_KINDS",
    "PERMISSION_OUTCOMES",
    "PERMISSION_SUBJECT_TYPES",
    "CancelledPermissionOutcome",
    "CommandPermissionSubject",
    "PermissionOption",
    "PermissionOptionKind",
    "RequestPermissionOutcome",
    "RequestPermissionRequest",
    "RequestPermissionResponse",
    "RequestPermissionSubject",
    "SelectedPermissionOutcome",
    "ToolCallPermissionSubject",
    "UnknownPermissionOutcome",
    "UnknownPermissionSubject",
]

PermissionOptionKind = str
"""Open enum, see :data:`PERMISSION_OPTION_KINDS`; unknown kinds are only UI hints."""

PERMISSION_OPTION_KINDS = frozenset({"allow_once", "allow_always", "reject_once", "reject_always"})


class ToolCallPermissionSubject(WireModel):
    """The permission is about a tool call; ``tool_call`` applies like a tool-call upsert."""

    type: Literal["tool_call"] = "tool_call"
    tool_call: ToolCallFields


class CommandPermissionSubject(WireModel):
    """The agent wants to run ``command`` in ``cwd`` (self-contained, not a patch)."""

    type: Literal["command"] = "command"
    command: str
    cwd: str
    tool_call_id: str | None = None
    terminal_id: str | None = None


class UnknownPermissionSubject(UnknownVariant):
    tag_key = "type"


PERMISSION_SUBJECT_TYPES: dict[str, type[WireModel]] = {
    "tool_call": ToolCallPermissionSubject,
    "command": CommandPermissionSubject,
}

RequestPermissionSubject = Annotated[
    Annotated[ToolCallPermissionSubject, Tag("tool_call")]
    | Annotated[CommandPermissionSubject, Tag("command")]
    | Annotated[UnknownPermissionSubject, Tag(UNKNOWN_TAG)],
    open_union_discriminator("type", "type", frozenset(PERMISSION_SUBJECT_TYPES)),
]


class PermissionOption(WireModel):
    option_id: str
    name: str
    kind: PermissionOptionKind


class RequestPermissionRequest(WireModel):
    """Params of ``session/request_permission`` (agent -> client request)."""

    session_id: str
    title: str
    description: str | None = None
    subject: RequestPermissionSubject | None = None
    options: list[PermissionOption] = Field(min_length=1)


class SelectedPermissionOutcome(WireModel):
    outcome: Literal["selected"] = "selected"
    option_id: str


class CancelledPermissionOutcome(WireModel):
    outcome: Literal["cancelled"] = "cancelled"


class UnknownPermissionOutcome(UnknownVariant):
    """An outcome this library does not know: never to be read as approval."""

    tag_key = "outcome"


PERMISSION_OUTCOMES: dict[str, type[WireModel]] = {
    "selected": SelectedPermissionOutcome,
    "cancelled": CancelledPermissionOutcome,
}

RequestPermissionOutcome = Annotated[
    Annotated[SelectedPermissionOutcome, Tag("selected")]
    | Annotated[CancelledPermissionOutcome, Tag("cancelled")]
    | Annotated[UnknownPermissionOutcome, Tag(UNKNOWN_TAG)],
    open_union_discriminator("outcome", "outcome", frozenset(PERMISSION_OUTCOMES)),
]


class RequestPermissionResponse(WireModel):
    """Result of ``session/request_permission``."""

    outcome: RequestPermissionOutcome

    @classmethod
    def selected(cls, option_id: str) -> RequestPermissionResponse:
        return cls(outcome=SelectedPermissionOutcome(option_id=option_id))

    @classmethod
    def cancelled(cls) -> RequestPermissionResponse:
        return cls(outcome=CancelledPermissionOutcome())


# -- what a tool-call subject runs: read by the policy, the client's services and the card --


def tool_call_commands(request: RequestPermissionRequest) -> tuple[str, ...]:
    """The commands a tool-call subject's ``rawInput`` names (whatever the tool call's
    ``kind``), each as a shell string: under ``command``, ``commands``, ``cmd``, ``script`` or
    ``argv``, a string or an argv list (``["bash", "-lc", "ls"]``, as codex sends), or the
    whole input as an argv list (``_tool_calls.raw_input_commands``, the one reading). Each is
    judged on its own, as a command subject is; empty for any other subject."""
    call = getattr(request.subject, "tool_call", None)
    if getattr(request.subject, "type", None) != "tool_call" or call is None:
        return ()
    return raw_input_commands(getattr(call, "raw_input", None)).commands


def tool_call_command(request: RequestPermissionRequest) -> str | None:
    """The commands of :func:`tool_call_commands` as one text, one a line; None when none."""
    commands = tool_call_commands(request)
    return "\n".join(commands) if commands else None


def tool_call_command_unknown(request: RequestPermissionRequest) -> bool:
    """A tool call that may run a command this client cannot read (``_tool_calls.
    call_command_unknown``): an ``execute`` call with none under a key this client reads or one
    of another shape, or an ``other`` call whose input sits under other keys or comes as JSON
    text. While a deny rule is set no rule approves it (no deny rule could see what it runs),
    and its card says the command is not known."""
    call = getattr(request.subject, "tool_call", None)
    if getattr(request.subject, "type", None) != "tool_call" or not isinstance(
        call, ToolCallFields
    ):
        return False
    return call_command_unknown(call)
