"""Cell runs without a kernel: what ``%%acp`` does, minus the display (tests of `CellRun`, the
record and the panel over agents served in memory, see tests/_memory.py)."""

from __future__ import annotations

import functools

from acp_notebook._notebook._cells import CellRun
from acp_notebook._notebook._owner import Notebook
from acp_notebook._notebook._start import CellRequest
from acp_notebook._policy._rules import Policy
from acp_notebook._sidepanel import panel_shows


def start_run(
    nb: Notebook,
    prompt: str = "clean up",
    *,
    key: str = "cell:c1",
    policy: Policy | None = None,
    timeout: float | None = None,
) -> CellRun:
    """Start a turn of session ``default`` in a `CellRun` that answers its requests, as
    ``%%acp`` does (``Notebook.start_cell``), minus the display."""
    request = CellRequest(
        key,
        prompt,
        policy=policy or Policy(),
        timeout=timeout,
        panel_shows=functools.partial(panel_shows, nb),
    )
    started = nb.start_cell(request)
    nb.begin_cell(started)
    return started.run
