"""The agent side panel, kernel side: one :class:`SidePanel` per notebook, fed by its events.

The panel shows the agents, their sessions, an approval inbox of every pending permission,
the terminals of recent turns (second views of the cells' terminal models) and a protocol log.
Everything is an ipywidgets model; the labextension places the :class:`AgentPanel` in the right
sidebar (no server extension, no extra channel).

Threading: every widget change of the panel happens in the bridge's I/O thread (where session
state lives), under the panel's lock. Events only record that something changed and wake a
refresher task in the I/O thread, which brings the widgets up to date at most every
``REFRESH_INTERVAL`` seconds and only sends values that changed, so a flood of updates costs a
bounded number of widget messages. With nothing changed it renders nothing; a slow clock
(``CLOCK_INTERVAL``) refreshes only what ages by itself: background work's elapsed times and the
protocol log. Button callbacks (main thread) never block: closing and
restarting an agent run in a worker thread, a choice goes to the I/O thread.

Rooms: ``_panel`` (``SidePanel``: its sections, refreshed on change), ``_html`` (the facts as
HTML); here, the notebook's panel (open, close, current) and its event subscriptions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._notebook._bridge import AgentHandle
from .._notebook._facts import handles_of, status_text
from .._notebook._owner import Notebook
from ._panel import SidePanel

__all__ = ["SidePanel", "close_panel", "current", "install", "open_panel", "summary_text"]


def summary_text(nb: Notebook) -> str:
    """The panel's information as text (read in the I/O thread)."""
    panel = current(nb)
    if panel is not None:
        return str(panel.io.call(panel.summary))
    return str(nb.io.call(status_text, nb, handles_of(nb), nb.runs))


def current(nb: Notebook) -> SidePanel | None:
    """The notebook's open panel, if any."""
    panel = nb.panel
    if not isinstance(panel, SidePanel) or panel.closed or panel.io.stopped:
        return None  # (its I/O thread ended at shutdown)
    return panel


def open_panel(nb: Notebook, show: bool = True) -> SidePanel:
    """Create the panel if needed and (``show``) ask the front ends to open it."""
    install(nb)
    panel = current(nb)
    if panel is None:
        panel = SidePanel(nb)
        panel.start()
        nb.attach_panel(panel)
    if show:
        panel.panel.show()
    return panel


def close_panel(nb: Notebook) -> None:
    panel = nb.detach_panel()
    if isinstance(panel, SidePanel):
        panel.close()


def panel_shows(nb: Notebook) -> bool:
    """Whether the notebook's panel is open in a front end (``CellRun.panel_shows``)."""
    panel = current(nb)
    return panel is not None and panel.shows_requests


def install(nb: Notebook) -> None:
    """Subscribe the panel to the notebook's events (once per notebook)."""
    if not nb.install_once("sidepanel"):
        return

    def connected(handle: AgentHandle) -> None:
        panel = current(nb)
        if panel is not None:
            panel.on_agent(handle)
        elif nb.panel_auto_make and not nb.panel_made_once:
            # Made the first time an agent connects, so the sidebar tab counts pending
            # requests; revealed only with `%acp panel --auto`.
            nb.panel_auto_made()
            open_panel(nb, show=nb.panel_auto_show)

    def forward(method: str) -> Callable[..., None]:
        def call(*args: Any) -> None:
            panel = current(nb)
            if panel is not None:
                getattr(panel, method)(*args)

        return call

    nb.events.subscribe("agent_connected", connected)
    for event, method in (
        ("agent_closed", "mark_dirty"),
        ("turn_started", "on_turn"),
        ("turn_ended", "mark_dirty"),
        ("permission", "on_permission"),
        ("permission_settled", "on_settled"),
        ("elicitation", "on_question"),
        ("elicitation_settled", "on_settled"),
        ("session_update", "mark_dirty"),
    ):
        nb.events.subscribe(event, forward(method))
