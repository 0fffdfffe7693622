"""What a kernel tool sent to the agent, shown in the cell of the turn that asked for it.

Privacy is visible: a ``%%acp --with`` object is listed before the prompt goes; a kernel tool's
answer (``list_variables``, ``inspect_variable``, ``notebook_history``) goes while the turn runs,
so the cell shows it as it goes: one line (the tool, what it was asked about, how many
characters went), and the text itself folded in a ``<details>`` (escaped, hidden characters made
visible), in the live view and in the saved notebook alike. ``run_code`` has its own card.

A cell shows at most `MAX_SENT_CARDS` of them; the answers past that are counted in one more
card (how many, how many characters in all), updated in place, so an agent calling a tool in a
loop cannot flood the cell, the front end or the saved notebook.
"""

from __future__ import annotations

from typing import Any

import ipywidgets  # type: ignore[import-untyped]

from ._asking import close_deep
from ._parts import NO_MATH, STYLE, e, visible, visible_lines

__all__ = ["MAX_SENT_CARDS", "SentCard", "SentMore"]

MAX_SENT_CARDS = 20


class _Sent(ipywidgets.HTML):  # type: ignore[misc]
    """What both kinds of card share: arrival order, the saved bundle, closing."""

    tool_call_id: str | None = None  # shown in arrival order, not in a tool call's box

    def transcript_html(self, call: Any = None) -> str:
        raise NotImplementedError

    def transcript_text(self, call: Any = None) -> list[str]:
        raise NotImplementedError

    def static_bundle(self) -> dict[str, str]:
        return {
            "text/plain": "\n".join(self.transcript_text()),
            "text/html": STYLE + self.transcript_html(),
        }

    def close_quietly(self) -> None:
        self.close()

    def close(self) -> None:
        for name in ("layout", "style"):
            model = getattr(self, name, None)
            if isinstance(model, ipywidgets.Widget):
                close_deep(model)
        super().close()


class SentCard(_Sent):
    """One kernel tool answer that went to the agent (built from a ``ToolEvent``)."""

    def __init__(self, tool: str, about: str, text: str, *, error: bool = False) -> None:
        self.tool = tool
        self.about = about
        self.text = text
        self.error = error
        super().__init__(value=STYLE + self.transcript_html())
        self.add_class("acp-sent")

    def _head(self) -> str:
        about = f"({self.about})" if self.about else ""
        what = "an error" if self.error else f"{len(self.text):,} characters"
        return f"Sent to the agent: kernel tool {self.tool}{about}, {what}"

    def transcript_html(self, call: Any = None) -> str:
        return (
            f'<div class="acp-sent {NO_MATH}"><details><summary>📤 {e(visible(self._head()))}'
            f'</summary><pre class="acp-sent-text">{e(visible_lines(self.text))}</pre>'
            "</details></div>"
        )

    def transcript_text(self, call: Any = None) -> list[str]:
        return [visible(self._head())]

    def __repr__(self) -> str:
        return f"SentCard({self._head()!r})"


class SentMore(_Sent):
    """The answers past `MAX_SENT_CARDS` in a cell: counted, not shown one by one."""

    def __init__(self) -> None:
        self.count = 0
        self.chars = 0
        super().__init__(value="")
        self.add_class("acp-sent")

    def add(self, text: str) -> None:
        """One more answer went to the agent (call it on one thread: the I/O thread)."""
        self.count += 1
        self.chars += len(text)
        self.value = STYLE + self.transcript_html()

    def _head(self) -> str:
        word = "answer" if self.count == 1 else "answers"
        return (
            f"Sent to the agent: {self.count:,} more kernel tool {word}, {self.chars:,}"
            f" characters in all (a cell lists the first {MAX_SENT_CARDS} one by one)"
        )

    def transcript_html(self, call: Any = None) -> str:
        return f'<div class="acp-sent {NO_MATH}">📤 {e(self._head())}</div>'

    def transcript_text(self, call: Any = None) -> list[str]:
        return [self._head()]

    def __repr__(self) -> str:
        return f"SentMore({self.count}, {self.chars})"
