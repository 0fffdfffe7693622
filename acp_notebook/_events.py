"""A tiny in-process event bus between the notebook layer and its extra views (the side panel).

Events (name: arguments), emitted by ``_magics`` / ``_cells``:

* ``agent_connected``: (AgentHandle) — main thread
* ``agent_closed``: (AgentHandle) — main thread
* ``turn_started``: (CellRun) — main thread, after the cell's view is displayed
* ``turn_ended``: (CellRun) — I/O thread
* ``permission``: (CellRun, PermissionDecision) — I/O thread, after the cell's card exists
* ``session_update``: (CellRun, update) — I/O thread (for every update of a running turn)

Subscribers must be quick and must not raise; failures are logged and ignored.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger("acp_notebook.events")

_subscribers: dict[str, list[Callable[..., None]]] = {}


def subscribe(event: str, callback: Callable[..., None]) -> Callable[[], None]:
    _subscribers.setdefault(event, []).append(callback)

    def unsubscribe() -> None:
        callbacks = _subscribers.get(event, [])
        if callback in callbacks:
            callbacks.remove(callback)

    return unsubscribe


def emit(event: str, *args: Any) -> None:
    for callback in list(_subscribers.get(event, ())):
        try:
            callback(*args)
        except Exception:
            log.exception("%s subscriber failed", event)
