"""Cell runs without a kernel: what ``%%acp`` does, minus the display (tests of `CellRun`, the
record and the panel over agents served in memory, see tests/_memory.py)."""

from __future__ import annotations

import functools

from acp_notebook._notebook._cells import CellRun
from acp_notebook._notebook._owner import Notebook
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
    """Start a turn of session ``default`` in a `CellRun` that answers its requests."""
    from acp_notebook._widgets import TurnView

    named = nb.session("default")
    handle = nb.agent(named.agent)
    io = handle.io
    turn = io.call(named.session.start_turn, prompt)
    view = io.call(lambda: TurnView(turn.state, prompt, call_soon=io.soon))
    run = CellRun(
        key,
        handle,
        named.session,
        turn,
        view,
        policy or Policy.from_globs([], []),
        timeout,
        io,
        nb.events,
    )
    run.panel_shows = functools.partial(panel_shows, nb)
    io.call(run.attach)
    nb.replace_run(run.key, run)
    run.done = io.submit(run.run)
    return run
