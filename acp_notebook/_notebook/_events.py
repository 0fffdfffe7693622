"""The notebook's event bus: how its extra views (the side panel) hear what happens.

One :class:`Events` belongs to each :class:`~acp_notebook._notebook._owner.Notebook`. Events (name:
arguments, the thread they are emitted on):

* ``agent_connected``: (AgentHandle) - the thread that connected it (main, or a panel worker)
* ``agent_closed``: (AgentHandle) - likewise
* ``turn_started``: (CellRun) - main thread, after the cell's view is displayed
* ``turn_ended``: (CellRun) - I/O thread
* ``permission``: (CellRun, Asked) - I/O thread, after the cell's card exists
* ``permission_settled``: (CellRun, Asked) - I/O thread, after every card of it was updated
* ``elicitation``: (CellRun, ElicitationDecision) - I/O thread
* ``session_update``: (CellRun, update) - I/O thread (for every update of a running turn)

Subscribers must be quick and must not raise; failures are logged and ignored.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

__all__ = ["Events"]

log = logging.getLogger("acp_notebook.events")


class Events:
    """Named events with subscribers, called in the emitting thread."""

    def __init__(self) -> None:
        self._subscribers: dict[str, list[Callable[..., None]]] = {}

    def subscribe(self, event: str, callback: Callable[..., None]) -> Callable[[], None]:
        self._subscribers.setdefault(event, []).append(callback)

        def unsubscribe() -> None:
            callbacks = self._subscribers.get(event, [])
            if callback in callbacks:
                callbacks.remove(callback)

        return unsubscribe

    def emit(self, event: str, *args: Any) -> None:
        for callback in list(self._subscribers.get(event, ())):
            try:
                callback(*args)
            except Exception:
                log.exception("%s subscriber failed", event)
