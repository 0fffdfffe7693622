"""acp_notebook._protocol._terminal: display-only terminal objects."""

from __future__ import annotations

import base64

import pytest
from pydantic import ValidationError

from acp_notebook._protocol._base import is_set
from acp_notebook._protocol._terminal import (
    TerminalCapabilities,
    TerminalExitStatus,
    TerminalOutput,
    TerminalSize,
)


def test_output_decodes_its_bytes() -> None:
    raw = b"\x1b[31mred\x1b[0m\r\n\xff"
    assert TerminalOutput(data=base64.b64encode(raw).decode()).data_bytes() == raw
    assert TerminalOutput(data="").data_bytes() == b""


def test_an_empty_exit_status_means_exited_with_unknown_details() -> None:
    status = TerminalExitStatus.from_wire({})
    assert status.exit_code is None
    assert status.signal is None
    assert not is_set(status, "exit_code")
    full = TerminalExitStatus.from_wire({"exitCode": 3, "signal": "SIGTERM"})
    assert (full.exit_code, full.signal) == (3, "SIGTERM")


@pytest.mark.parametrize("cols, rows", [(0, 24), (80, 0), (65536, 24), (80, 65536)])
def test_size_limits(cols: int, rows: int) -> None:
    with pytest.raises(ValidationError):
        TerminalSize(cols=cols, rows=rows)


def test_size_extremes_are_allowed() -> None:
    assert TerminalSize(cols=1, rows=65535).to_wire() == {"cols": 1, "rows": 65535}


def test_cancel_capability_presence() -> None:
    assert TerminalCapabilities.from_wire({}).cancel is None
    assert TerminalCapabilities.from_wire({"cancel": {}}).cancel is not None
