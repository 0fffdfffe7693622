"""Method names of the stable v2 surface: plain strings, no model.

A module of its own so that dispatching on a name (the embedded agent does it for every
request) does not import the method table, which imports every model of the protocol.
"""

from __future__ import annotations

from typing import Final

__all__ = ["Method"]


class Method:
    """Method names of the stable v2 surface."""

    INITIALIZE: Final = "initialize"
    AUTH_LOGIN: Final = "auth/login"
    AUTH_LOGOUT: Final = "auth/logout"
    SESSION_NEW: Final = "session/new"
    SESSION_LIST: Final = "session/list"
    SESSION_DELETE: Final = "session/delete"
    SESSION_RESUME: Final = "session/resume"
    SESSION_CLOSE: Final = "session/close"
    SESSION_PROMPT: Final = "session/prompt"
    SESSION_CANCEL: Final = "session/cancel"
    SESSION_SET_CONFIG_OPTION: Final = "session/set_config_option"
    TERMINAL_CANCEL: Final = "terminal/cancel"
    TOOL_CALL_CANCEL: Final = "tool_call/cancel"
    SESSION_UPDATE: Final = "session/update"
    SESSION_REQUEST_PERMISSION: Final = "session/request_permission"
    ELICITATION_CREATE: Final = "elicitation/create"
    ELICITATION_COMPLETE: Final = "elicitation/complete"
    CANCEL_REQUEST: Final = "$/cancel_request"
