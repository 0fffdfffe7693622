"""``initialize``, capabilities, auth methods and ``auth/login`` / ``auth/logout``."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, Tag

from ._base import UNKNOWN_TAG, UnknownVariant, WireModel, open_union_discriminator

__all__ = [
    "AUTH_METHOD_TYPES",
    "PROTOCOL_VERSION",
    "AgentAuthCapabilities",
    "AgentCapabilities",
    "AuthMethod",
    "AuthMethodAgent",
    "AuthMethodTerminal",
    "ClientAuthCapabilities",
    "ClientCapabilities",
    "ElicitationCapabilities",
    "ElicitationFormCapabilities",
    "ElicitationUrlCapabilities",
    "EnvVariable",
    "Implementation",
    "InitializeRequest",
    "InitializeResponse",
    "LoginAuthRequest",
    "LoginAuthResponse",
    "LogoutAuthRequest",
    "LogoutAuthResponse",
    "McpCapabilities",
    "McpHttpCapabilities",
    "McpStdioCapabilities",
    "PromptAudioCapabilities",
    "PromptCapabilities",
    "PromptEmbeddedContextCapabilities",
    "PromptImageCapabilities",
    "SessionAdditionalDirectoriesCapabilities",
    "SessionCapabilities",
    "SessionDeleteCapabilities",
    "TerminalAuthCapabilities",
    "UnknownAuthMethod",
    "looks_like_v1_initialize_response",
]

PROTOCOL_VERSION = 2

_ProtocolVersion = Annotated[int, Field(ge=0, le=65535)]


class Implementation(WireModel):
    name: str
    title: str | None = None
    version: str


# -- client capabilities -------------------------------------------------------------------


class TerminalAuthCapabilities(WireModel):
    pass


class ClientAuthCapabilities(WireModel):
    terminal: TerminalAuthCapabilities | None = None


class ElicitationFormCapabilities(WireModel):
    pass


class ElicitationUrlCapabilities(WireModel):
    pass


class ElicitationCapabilities(WireModel):
    form: ElicitationFormCapabilities | None = None
    url: ElicitationUrlCapabilities | None = None


class ClientCapabilities(WireModel):
    auth: ClientAuthCapabilities | None = None
    elicitation: ElicitationCapabilities | None = None


# -- agent capabilities --------------------------------------------------------------------


class PromptImageCapabilities(WireModel):
    pass


class PromptAudioCapabilities(WireModel):
    pass


class PromptEmbeddedContextCapabilities(WireModel):
    pass


class PromptCapabilities(WireModel):
    image: PromptImageCapabilities | None = None
    audio: PromptAudioCapabilities | None = None
    embedded_context: PromptEmbeddedContextCapabilities | None = None


class McpStdioCapabilities(WireModel):
    pass


class McpHttpCapabilities(WireModel):
    pass


class McpCapabilities(WireModel):
    stdio: McpStdioCapabilities | None = None
    http: McpHttpCapabilities | None = None


class SessionDeleteCapabilities(WireModel):
    pass


class SessionAdditionalDirectoriesCapabilities(WireModel):
    pass


class SessionCapabilities(WireModel):
    prompt: PromptCapabilities | None = None
    mcp: McpCapabilities | None = None
    delete: SessionDeleteCapabilities | None = None
    additional_directories: SessionAdditionalDirectoriesCapabilities | None = None


class AgentAuthCapabilities(WireModel):
    pass


class AgentCapabilities(WireModel):
    session: SessionCapabilities | None = None
    auth: AgentAuthCapabilities | None = None


# -- auth methods (tagged by ``type``) -----------------------------------------------------


class EnvVariable(WireModel):
    name: str
    value: str


class AuthMethodAgent(WireModel):
    """The agent handles authentication itself (``auth/login`` with this method id)."""

    type: Literal["agent"] = "agent"
    method_id: str
    name: str
    description: str | None = None


class AuthMethodTerminal(WireModel):
    """The user authenticates by running the agent binary with ``args`` / ``env``."""

    type: Literal["terminal"] = "terminal"
    method_id: str
    name: str
    description: str | None = None
    args: list[str] | None = None
    env: list[EnvVariable] | None = None


class UnknownAuthMethod(UnknownVariant):
    tag_key = "type"

    @property
    def method_id(self) -> Any:
        return self.raw.get("methodId")

    @property
    def name(self) -> Any:
        return self.raw.get("name")


AUTH_METHOD_TYPES: dict[str, type[WireModel]] = {
    "agent": AuthMethodAgent,
    "terminal": AuthMethodTerminal,
}

AuthMethod = Annotated[
    Annotated[AuthMethodAgent, Tag("agent")]
    | Annotated[AuthMethodTerminal, Tag("terminal")]
    | Annotated[UnknownAuthMethod, Tag(UNKNOWN_TAG)],
    open_union_discriminator("type", "type", frozenset(AUTH_METHOD_TYPES)),
]


# -- initialize / auth ---------------------------------------------------------------------


class InitializeRequest(WireModel):
    """Params of ``initialize`` (pass ``protocol_version=PROTOCOL_VERSION``)."""

    protocol_version: _ProtocolVersion
    info: Implementation
    capabilities: ClientCapabilities | None = None


class InitializeResponse(WireModel):
    """A v1 body (``agentInfo`` / ``agentCapabilities``, no ``info``) fails validation."""

    protocol_version: _ProtocolVersion
    info: Implementation
    capabilities: AgentCapabilities | None = None
    auth_methods: list[AuthMethod] | None = None


def looks_like_v1_initialize_response(result: Any) -> bool:
    """True for an ``initialize`` result shaped like ACP v1 (a v1-only agent)."""
    if not isinstance(result, dict):
        return False
    if "info" not in result and ("agentInfo" in result or "agentCapabilities" in result):
        return True
    version = result.get("protocolVersion")
    return type(version) is int and version < PROTOCOL_VERSION


class LoginAuthRequest(WireModel):
    method_id: str


class LoginAuthResponse(WireModel):
    pass


class LogoutAuthRequest(WireModel):
    pass


class LogoutAuthResponse(WireModel):
    pass
