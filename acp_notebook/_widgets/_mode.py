"""A turn's mode line: the session's mode, and one visible line when the agent acts without
asking in it (`_transcript.ModeShown`, read from the notebook layer on each refresh)."""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets  # type: ignore[import-untyped]

from ._parts import set_if_changed
from ._transcript import ModeShown, mode_html

__all__ = ["ModeLine"]


class ModeLine(ipywidgets.HTML):  # type: ignore[misc]
    """The mode as the turn runs in it: read while the turn runs, kept once it is done."""

    def __init__(self, read: Callable[[], ModeShown | None] | None) -> None:
        super().__init__()
        self._read = read
        #: the mode as last read (what the saved transcript says the turn ran in)
        self.shown: ModeShown | None = None

    def sync(self, running: bool) -> bool:
        """Read the mode (while ``running``) and show it; whether there is one to show."""
        if self._read is not None and (running or self.shown is None):
            self.shown = self._read()  # (a turn done before its first refresh: read once)
        set_if_changed(self, "value", mode_html(self.shown))
        return self.shown is not None
