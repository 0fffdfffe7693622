"""Which params / result types belong to which method, with ready-made TypeAdapters."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Final

from pydantic import TypeAdapter

from ._elicitation import (
    CompleteElicitationNotification,
    CreateElicitationRequest,
    CreateElicitationResponse,
)
from ._initialize import (
    InitializeRequest,
    InitializeResponse,
    LoginAuthRequest,
    LoginAuthResponse,
    LogoutAuthRequest,
    LogoutAuthResponse,
)
from ._method_names import Method
from ._methods import (
    CancelRequestNotification,
    CancelSessionNotification,
    CancelTerminalRequest,
    CancelTerminalResponse,
    CancelToolCallRequest,
    CancelToolCallResponse,
    CloseSessionRequest,
    CloseSessionResponse,
    DeleteSessionRequest,
    DeleteSessionResponse,
    ListSessionsRequest,
    ListSessionsResponse,
    NewSessionRequest,
    NewSessionResponse,
    PromptRequest,
    PromptResponse,
    ResumeSessionRequest,
    ResumeSessionResponse,
    SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse,
)
from ._permission import RequestPermissionRequest, RequestPermissionResponse
from ._updates import UpdateSessionNotification

__all__ = ["AGENT_METHODS", "CLIENT_METHODS", "PROTOCOL_METHODS", "Method", "MethodSpec"]


@dataclass(frozen=True)
class MethodSpec:
    """``params`` / ``result`` types of one method; ``result`` is None for notifications."""

    name: str
    params: Any
    result: Any = None

    # Made on first use (the models are built then too): making every method's adapters at
    # import built every model of the protocol.
    @functools.cached_property
    def _params_adapter(self) -> TypeAdapter[Any]:
        return TypeAdapter(self.params)

    @functools.cached_property
    def _result_adapter(self) -> TypeAdapter[Any] | None:
        return None if self.result is None else TypeAdapter(self.result)

    @property
    def is_notification(self) -> bool:
        return self.result is None

    def parse_params(self, data: Any) -> Any:
        return self._params_adapter.validate_python({} if data is None else data)

    def parse_result(self, data: Any) -> Any:
        if self._result_adapter is None:
            raise TypeError(f"{self.name} is a notification and has no result")
        return self._result_adapter.validate_python(data)


def _table(*specs: MethodSpec) -> dict[str, MethodSpec]:
    return {spec.name: spec for spec in specs}


AGENT_METHODS: Final = _table(
    MethodSpec(Method.INITIALIZE, InitializeRequest, InitializeResponse),
    MethodSpec(Method.AUTH_LOGIN, LoginAuthRequest, LoginAuthResponse),
    MethodSpec(Method.AUTH_LOGOUT, LogoutAuthRequest, LogoutAuthResponse),
    MethodSpec(Method.SESSION_NEW, NewSessionRequest, NewSessionResponse),
    MethodSpec(Method.SESSION_LIST, ListSessionsRequest, ListSessionsResponse),
    MethodSpec(Method.SESSION_DELETE, DeleteSessionRequest, DeleteSessionResponse),
    MethodSpec(Method.SESSION_RESUME, ResumeSessionRequest, ResumeSessionResponse),
    MethodSpec(Method.SESSION_CLOSE, CloseSessionRequest, CloseSessionResponse),
    MethodSpec(Method.SESSION_PROMPT, PromptRequest, PromptResponse),
    MethodSpec(Method.SESSION_CANCEL, CancelSessionNotification),
    MethodSpec(
        Method.SESSION_SET_CONFIG_OPTION,
        SetSessionConfigOptionRequest,
        SetSessionConfigOptionResponse,
    ),
    MethodSpec(Method.TERMINAL_CANCEL, CancelTerminalRequest, CancelTerminalResponse),
    MethodSpec(Method.TOOL_CALL_CANCEL, CancelToolCallRequest, CancelToolCallResponse),
)
"""Requests and notifications handled by the agent (sent by the client)."""

CLIENT_METHODS: Final = _table(
    MethodSpec(Method.SESSION_UPDATE, UpdateSessionNotification),
    MethodSpec(
        Method.SESSION_REQUEST_PERMISSION, RequestPermissionRequest, RequestPermissionResponse
    ),
    MethodSpec(Method.ELICITATION_CREATE, CreateElicitationRequest, CreateElicitationResponse),
    MethodSpec(Method.ELICITATION_COMPLETE, CompleteElicitationNotification),
)
"""Requests and notifications handled by the client (sent by the agent)."""

PROTOCOL_METHODS: Final = _table(MethodSpec(Method.CANCEL_REQUEST, CancelRequestNotification))
"""Sent by either side."""
