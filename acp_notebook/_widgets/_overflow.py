"""One line that counts the requests a cell did not ask about because too many were open.

A cell shows at most ``_cells.MAX_OPEN_PERMISSIONS`` undecided permission cards and
``_cells.MAX_OPEN_QUESTIONS`` undecided questions at once. A request past that is answered
cancelled without a card (never allowed) and counted here: one card per cell, updated in place,
in the live view and in the saved notebook alike, so 2,000 requests at once cost one line.
"""

from __future__ import annotations

from typing import Any

import ipywidgets  # type: ignore[import-untyped]

from ._asking import close_deep
from ._parts import NO_MATH, STYLE, e

__all__ = ["OverflowCard"]


def _count(number: int, one: str, many: str) -> str:
    return f"{number:,} {one if number == 1 else many}"


class OverflowCard(ipywidgets.HTML):  # type: ignore[misc]
    """How many permission requests and questions of a cell were answered cancelled because
    ``permissions_cap`` / ``questions_cap`` of them were open already."""

    #: shown in arrival order, not in a tool call's box
    tool_call_id: str | None = None

    def __init__(self, permissions_cap: int, questions_cap: int) -> None:
        self.permissions_cap = permissions_cap
        self.questions_cap = questions_cap
        self.permissions = 0
        self.questions = 0
        super().__init__(value="")
        self.add_class("acp-overflow")

    def add(self, kind: str) -> None:
        """One more request of ``kind`` (``permission`` or ``question``) was refused (call it on
        one thread: the I/O thread)."""
        if kind == "permission":
            self.permissions += 1
        else:
            self.questions += 1
        self.value = STYLE + self.transcript_html()

    def _line(self) -> str:
        parts = []
        if self.permissions:
            what = _count(self.permissions, "permission request", "permission requests")
            parts.append(f"{what} (a cell keeps at most {self.permissions_cap} cards open)")
        if self.questions:
            what = _count(self.questions, "question", "questions")
            parts.append(f"{what} (a cell keeps at most {self.questions_cap} open)")
        return "Not asked, answered cancelled: " + "; ".join(parts)

    def transcript_html(self, call: Any = None) -> str:
        return f'<div class="acp-overflow acp-card-warning {NO_MATH}">{e(self._line())}</div>'

    def transcript_text(self, call: Any = None) -> list[str]:
        return [self._line()]

    def static_bundle(self) -> dict[str, str]:
        return {"text/plain": self._line(), "text/html": STYLE + self.transcript_html()}

    def close_quietly(self) -> None:
        self.close()

    def close(self) -> None:
        for name in ("layout", "style"):
            model = getattr(self, name, None)
            if isinstance(model, ipywidgets.Widget):
                close_deep(model)
        super().close()

    def __repr__(self) -> str:
        return f"OverflowCard({self.permissions}, {self.questions})"
