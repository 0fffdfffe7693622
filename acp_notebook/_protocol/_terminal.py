"""Display-only terminal objects shared by ``terminal_update`` and ``terminal/cancel``."""

from __future__ import annotations

import base64

from pydantic import Field

from ._base import WireModel

__all__ = [
    "TerminalCancelCapabilities",
    "TerminalCapabilities",
    "TerminalExitStatus",
    "TerminalOutput",
    "TerminalSize",
]


class TerminalOutput(WireModel):
    """A replacement snapshot of all bytes to keep for a terminal (``data`` is base64)."""

    data: str

    def data_bytes(self) -> bytes:
        return base64.b64decode(self.data)


class TerminalExitStatus(WireModel):
    """Present means the process exited; ``{}`` means exited with unknown details."""

    exit_code: int | None = None
    signal: str | None = None


class TerminalSize(WireModel):
    cols: int = Field(ge=1, le=65535)
    rows: int = Field(ge=1, le=65535)


class TerminalCancelCapabilities(WireModel):
    pass


class TerminalCapabilities(WireModel):
    cancel: TerminalCancelCapabilities | None = None
