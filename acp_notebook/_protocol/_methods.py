"""Session methods: new, list, delete, resume, prompt, cancel, close, config, cancellations."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, Tag

from ._base import UNKNOWN_TAG, UnknownVariant, WireModel, open_union_discriminator
from ._config import AvailableCommand, SessionConfigOption
from ._content import ContentBlock
from ._initialize import EnvVariable

__all__ = [
    "CancelRequestNotification",
    "CancelSessionNotification",
    "CancelTerminalRequest",
    "CancelTerminalResponse",
    "CancelToolCallRequest",
    "CancelToolCallResponse",
    "CloseSessionRequest",
    "CloseSessionResponse",
    "DeleteSessionRequest",
    "DeleteSessionResponse",
    "HttpHeader",
    "ListSessionsRequest",
    "ListSessionsResponse",
    "McpServer",
    "McpServerHttp",
    "McpServerStdio",
    "NewSessionRequest",
    "NewSessionResponse",
    "PromptRequest",
    "PromptResponse",
    "ReplayFrom",
    "ReplayFromStart",
    "RequestId",
    "ResumeSessionRequest",
    "ResumeSessionResponse",
    "SessionInfo",
    "SetSessionConfigOptionBooleanRequest",
    "SetSessionConfigOptionIdRequest",
    "SetSessionConfigOptionRequest",
    "SetSessionConfigOptionResponse",
    "UnknownMcpServer",
    "UnknownReplayFrom",
    "UnknownSetSessionConfigOptionRequest",
]

RequestId = int | str


# -- MCP servers (tagged by ``type``) ------------------------------------------------------


class HttpHeader(WireModel):
    name: str
    value: str


class McpServerHttp(WireModel):
    type: Literal["http"] = "http"
    name: str
    url: str
    headers: list[HttpHeader] | None = None


class McpServerStdio(WireModel):
    type: Literal["stdio"] = "stdio"
    name: str
    command: str
    args: list[str] | None = None
    env: list[EnvVariable] | None = None


class UnknownMcpServer(UnknownVariant):
    tag_key = "type"


McpServer = Annotated[
    Annotated[McpServerHttp, Tag("http")]
    | Annotated[McpServerStdio, Tag("stdio")]
    | Annotated[UnknownMcpServer, Tag(UNKNOWN_TAG)],
    open_union_discriminator("type", "type", frozenset({"http", "stdio"})),
]


# -- session/new, session/list, session/delete ---------------------------------------------


class NewSessionRequest(WireModel):
    cwd: str
    additional_directories: list[str] | None = None
    mcp_servers: list[McpServer] | None = None


class NewSessionResponse(WireModel):
    session_id: str
    config_options: list[SessionConfigOption] | None = None
    available_commands: list[AvailableCommand] | None = None


class SessionInfo(WireModel):
    session_id: str
    cwd: str
    additional_directories: list[str] | None = None
    title: str | None = None
    updated_at: str | None = None


class ListSessionsRequest(WireModel):
    cwd: str | None = None
    cursor: str | None = None


class ListSessionsResponse(WireModel):
    sessions: list[SessionInfo]
    next_cursor: str | None = None


class DeleteSessionRequest(WireModel):
    session_id: str


class DeleteSessionResponse(WireModel):
    pass


# -- session/resume ------------------------------------------------------------------------


class ReplayFromStart(WireModel):
    """Replay the whole conversation before answering ``session/resume``."""

    type: Literal["start"] = "start"


class UnknownReplayFrom(UnknownVariant):
    tag_key = "type"


ReplayFrom = Annotated[
    Annotated[ReplayFromStart, Tag("start")] | Annotated[UnknownReplayFrom, Tag(UNKNOWN_TAG)],
    open_union_discriminator("type", "type", frozenset({"start"})),
]


class ResumeSessionRequest(WireModel):
    """Without ``replay_from`` (or with ``None``) the agent must not replay history."""

    session_id: str
    cwd: str
    additional_directories: list[str] | None = None
    mcp_servers: list[McpServer] | None = None
    replay_from: ReplayFrom | None = None


class ResumeSessionResponse(WireModel):
    config_options: list[SessionConfigOption] | None = None
    available_commands: list[AvailableCommand] | None = None


# -- session/prompt, session/cancel, session/close -----------------------------------------


class PromptRequest(WireModel):
    session_id: str
    prompt: list[ContentBlock] = Field(min_length=1)


class PromptResponse(WireModel):
    """``{"messageId": ...}`` from current agents, ``{}`` from older v2 drafts."""

    message_id: str | None = None


class CancelSessionNotification(WireModel):
    """Params of the ``session/cancel`` notification."""

    session_id: str


class CloseSessionRequest(WireModel):
    session_id: str


class CloseSessionResponse(WireModel):
    pass


# -- session/set_config_option (tagged by ``type``) ----------------------------------------


class SetSessionConfigOptionIdRequest(WireModel):
    """Select ``value`` for a ``select`` option."""

    type: Literal["id"] = "id"
    session_id: str
    config_id: str
    value: str


class SetSessionConfigOptionBooleanRequest(WireModel):
    type: Literal["boolean"] = "boolean"
    session_id: str
    config_id: str
    value: bool


class UnknownSetSessionConfigOptionRequest(UnknownVariant):
    tag_key = "type"


SetSessionConfigOptionRequest = Annotated[
    Annotated[SetSessionConfigOptionIdRequest, Tag("id")]
    | Annotated[SetSessionConfigOptionBooleanRequest, Tag("boolean")]
    | Annotated[UnknownSetSessionConfigOptionRequest, Tag(UNKNOWN_TAG)],
    open_union_discriminator("type", "type", frozenset({"id", "boolean"})),
]


class SetSessionConfigOptionResponse(WireModel):
    config_options: list[SessionConfigOption]


# -- cancellations -------------------------------------------------------------------------


class CancelTerminalRequest(WireModel):
    """Only when the terminal advertised ``capabilities.cancel``."""

    session_id: str
    terminal_id: str


class CancelTerminalResponse(WireModel):
    pass


class CancelToolCallRequest(WireModel):
    """Only when the tool call advertised ``capabilities.cancel``."""

    session_id: str
    tool_call_id: str


class CancelToolCallResponse(WireModel):
    pass


class CancelRequestNotification(WireModel):
    """Params of ``$/cancel_request``: the peer should abort request ``request_id``."""

    request_id: RequestId
