"""The permission card: what the agent asks, one button per offered option, and the outcome.

The card never settles a decision itself. It reports a choice through
``on_choose(option_id, decided_by)``, at most once:

* ``(option_id, "click")`` when a button is pressed;
* ``(None, "timeout")`` when ``timeout`` seconds pass without an answer;
* ``(None, "closed")`` when the card is closed while the decision is still open.

The owner settles the decision (thread-safely) and then calls :meth:`PermissionCard.mark_decided`
with what really happened, which may differ (a policy, a cancel, the side panel ...).
Any path that is not a clear click ends in ``None``: the card fails closed.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from typing import Any

import ipywidgets  # type: ignore[import-untyped]

from .._permission import PermissionDecision
from .._protocol import CommandPermissionSubject, ToolCallPermissionSubject, is_set
from .._visible import make_visible
from ._parts import (
    NO_MATH,
    STYLE,
    content_html,
    content_text,
    e,
    generic_html,
    generic_text,
    tool_call_header_html,
    tool_call_header_text,
    visible,
    visible_lines,
    wire,
)

__all__ = [
    "ChooseCallback",
    "PermissionCard",
    "button_style",
    "close_deep",
    "describe_decision",
]

log = logging.getLogger("acp_notebook.widgets")

ChooseCallback = Callable[[str | None, str], None]
"""``on_choose(option_id, decided_by)``; ``decided_by`` is ``click``, ``timeout`` or ``closed``."""


def close_deep(widget: Any) -> None:
    """Close a widget and the layout/style models ipywidgets made for it."""
    for name in ("layout", "style"):
        child = getattr(widget, name, None)
        if isinstance(child, ipywidgets.Widget):
            child.close()
    widget.close()


def button_style(kind: str) -> str:
    """ipywidgets ``button_style`` for a permission option kind; unknown kinds are neutral."""
    if kind.startswith("allow_"):
        return "primary" if kind == "allow_always" else "success"
    if kind.startswith("reject_"):
        return "warning" if kind == "reject_always" else "danger"
    return ""


_BY = {
    "click": "by a click",
    "panel": "from the side panel",
    "handler": "by the permission handler",
    "timeout": "no answer before the timeout",
    "cancel": "the turn was cancelled",
    "closed": "the card was closed",
    "error": "the permission handler failed",
    "invalid": "the answer was not an offered option",
    "no-handler": "nothing could answer",
    "withdrawn": "withdrawn by the agent",
}


def describe_decision(
    decision: PermissionDecision, option_id: str | None, decided_by: str | None, detail: str = ""
) -> str:
    """One line: what was decided and by what (deterministic)."""
    option = next((o for o in decision.request.options if o.option_id == option_id), None)
    if option is None:
        verb = "Cancelled"
    else:
        kind = str(option.kind)
        word = "Approved" if kind.startswith("allow") else "Rejected"
        if not kind.startswith(("allow", "reject")):
            word = "Chose"
        verb = f"{word}: {visible(option.name)}"
    if decided_by == "policy":
        by = f"by policy {detail}" if detail else "by a policy rule"
    else:
        by = _BY.get(decided_by or "", f"by {decided_by or 'an unknown path'}")
        if detail and decided_by not in ("click", "panel", "timeout", "closed"):
            by += f" ({detail})"
    return visible(f"{verb} - {by}")


def _hidden_warning(*texts: str) -> str | None:
    names: list[str] = []
    for text in texts:
        for name in make_visible(text).hidden:
            if name not in names:
                names.append(name)
    if not names:
        return None
    return "hidden characters made visible: " + ", ".join(names)


class PermissionCard(ipywidgets.VBox):  # type: ignore[misc]
    """A live card for one :class:`PermissionDecision` (any thread may call its methods)."""

    def __init__(
        self,
        decision: PermissionDecision,
        on_choose: ChooseCallback,
        *,
        timeout: float | None = None,
    ) -> None:
        self.decision = decision
        self.timeout = timeout
        self._on_choose = on_choose
        self._lock = threading.RLock()
        self._chosen = False  # on_choose was called (or the card was closed)
        self._outcome: tuple[str | None, str | None, str] | None = None
        self._stop = threading.Event()
        # Everything the click path touches exists before the first button does: a front end
        # (or a fast client) may click a button the moment its model is announced, while this
        # constructor is still running in another thread.
        self._timer: threading.Thread | None = None
        self._info = ipywidgets.HTML(value=STYLE + self.request_html(with_ids=True))
        self._status = ipywidgets.HTML(value="")
        self._buttons: list[ipywidgets.Button] = []
        for option in decision.request.options:
            button = ipywidgets.Button(
                description=visible(option.name),
                button_style=button_style(str(option.kind)),
                tooltip=visible(str(option.kind)),
                layout=ipywidgets.Layout(width="auto"),  # the whole label, never "Allo…"
            )
            button.on_click(self._click_handler(option.option_id))
            self._buttons.append(button)
        self._button_box = ipywidgets.HBox(
            self._buttons, layout=ipywidgets.Layout(flex_flow="row wrap")
        )
        super().__init__(children=[self._info, self._button_box, self._status])
        self.add_class("acp-card")
        with self._lock:
            if self._chosen and self._outcome is None:  # clicked while the buttons were built
                for button in self._buttons:
                    button.disabled = True
        if not decision.pending:
            self.mark_decided(decision.option_id, decision.decided_by, decision.detail)
        elif timeout is not None:
            self._start_countdown(timeout)

    # -- facts -----------------------------------------------------------------------------
    @property
    def subject(self) -> Any:
        return self.decision.request.subject

    @property
    def tool_call_id(self) -> str | None:
        """The tool call this request is about, when the subject names one."""
        subject = self.subject
        if isinstance(subject, CommandPermissionSubject):
            return subject.tool_call_id
        if isinstance(subject, ToolCallPermissionSubject):
            return subject.tool_call.tool_call_id
        return None

    @property
    def terminal_id(self) -> str | None:
        subject = self.subject
        return subject.terminal_id if isinstance(subject, CommandPermissionSubject) else None

    @property
    def decided(self) -> bool:
        return self._outcome is not None

    @property
    def outcome_text(self) -> str:
        """``pending`` or the line :meth:`mark_decided` shows."""
        outcome = self._outcome
        if outcome is None:
            return "pending"
        return describe_decision(self.decision, *outcome)

    @property
    def buttons(self) -> list[ipywidgets.Button]:
        return list(self._buttons)

    @property
    def status_html(self) -> str:
        return str(self._status.value)

    # -- choosing -------------------------------------------------------------------------
    def _click_handler(self, option_id: str) -> Callable[[Any], None]:
        def click(_button: Any) -> None:
            self._choose(option_id, "click")

        return click

    def _choose(self, option_id: str | None, decided_by: str) -> None:
        with self._lock:
            if self._chosen or self._outcome is not None:
                return
            self._chosen = True
            self._stop.set()
        # Report first: the answer must reach the owner even if updating the card fails.
        status = '<span class="acp-card-status">answer sent…</span>'
        try:
            self._on_choose(option_id, decided_by)
        except Exception:  # the owner's bug must not break the comm handler or the timer
            log.exception("permission card callback failed")
            status = '<span class="acp-card-warning">the answer could not be sent</span>'
        if decided_by == "closed":
            return
        try:
            with self._lock:
                if self._outcome is None:  # mark_decided may have run already
                    for button in self._buttons:
                        button.disabled = True
                    self._status.value = status
        except Exception:
            log.exception("updating the permission card failed")

    def mark_decided(self, option_id: str | None, decided_by: str | None, detail: str = "") -> None:
        """Show the outcome and disable every button (idempotent)."""
        with self._lock:
            self._outcome = (option_id, decided_by, detail)
            self._stop.set()
            if self._status.comm is None:
                return  # closed already
            with self.hold_sync():
                for button, option in zip(
                    self._buttons, self.decision.request.options, strict=True
                ):
                    button.disabled = True
                    if option.option_id == option_id:
                        button.icon = "check"
                self._status.value = (
                    f'<span class="acp-card-decision"><b>{e(self.outcome_text)}</b></span>'
                )

    # -- countdown -------------------------------------------------------------------------
    def _start_countdown(self, timeout: float) -> None:
        deadline = time.monotonic() + max(0.0, timeout)
        self._timer = threading.Thread(
            target=self._countdown, args=(deadline,), name="acp-permission-countdown", daemon=True
        )
        self._timer.start()

    def _countdown(self, deadline: float) -> None:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            seconds = math.ceil(remaining)
            with self._lock:
                if self._stop.is_set():
                    return
                self._status.value = (
                    f'<span class="acp-card-countdown">No answer in {seconds} s: cancelled</span>'
                )
            # Wake at the next whole second (at most one label update per second).
            if self._stop.wait(remaining - (seconds - 1)):
                return
        self._choose(None, "timeout")

    # -- lifetime ---------------------------------------------------------------------------
    def close_quietly(self) -> None:
        """Close without reporting anything: the owner settles the decision itself."""
        with self._lock:
            self._chosen = True
        self.close()

    def close(self) -> None:
        """Close the card and its children; an open decision fails closed first."""
        with self._lock:
            open_decision = not self._chosen and self._outcome is None and self.decision.pending
        if open_decision:
            self._choose(None, "closed")
        self._stop.set()
        for child in [*self._buttons, self._button_box, self._info, self._status]:
            close_deep(child)
        for name in ("layout", "style"):
            model = getattr(self, name, None)
            if isinstance(model, ipywidgets.Widget):
                model.close()
        super().close()

    # -- rendering --------------------------------------------------------------------------
    def request_html(self, *, with_ids: bool = False) -> str:
        """The request (title, description, subject), every agent string escaped."""
        request = self.decision.request
        parts = [f'<div class="acp-card-title"><b>🔐 {e(visible(request.title))}</b></div>']
        if request.description:
            parts.append(
                f'<div class="acp-card-description" style="white-space:pre-wrap">'
                f"{e(visible_lines(request.description))}</div>"
            )
        subject = request.subject
        if isinstance(subject, CommandPermissionSubject):
            parts.append(
                f'<div class="acp-card-command">$ {e(make_visible(subject.command).text)}</div>'
                f'<div>in <code class="acp-card-cwd">{e(make_visible(subject.cwd).text)}</code>'
                "</div>"
            )
            warning = _hidden_warning(subject.command, subject.cwd)
            if warning:
                parts.append(f'<div class="acp-card-warning">⚠ {e(warning)}</div>')
            if with_ids and (subject.terminal_id or subject.tool_call_id):
                refs = []
                if subject.terminal_id:
                    refs.append(f"terminal <code>{e(visible(subject.terminal_id))}</code>")
                if subject.tool_call_id:
                    refs.append(f"tool call <code>{e(visible(subject.tool_call_id))}</code>")
                parts.append(f'<div class="acp-card-refs">for {" · ".join(refs)}</div>')
        elif isinstance(subject, ToolCallPermissionSubject):
            call = subject.tool_call
            status = call.status if is_set(call, "status") else None
            parts.append(tool_call_header_html(call.title, call.kind, status, call.locations or []))
            for item in call.content or []:
                parts.append(content_html(item))
        elif subject is not None:
            parts.append(generic_html(wire(subject), "subject (unknown type)"))
        return '<div class="acp-card-request">' + "".join(parts) + "</div>"

    def transcript_html(self) -> str:
        options = ", ".join(
            f'<span class="acp-badge">{e(visible(o.name))} ({e(visible(str(o.kind)))})</span>'
            for o in self.decision.request.options
        )
        return (
            f'<div class="acp-card {NO_MATH}">{self.request_html()}<div>options: {options}</div>'
            f"<div><b>{e(self.outcome_text)}</b></div></div>"
        )

    def transcript_text(self) -> list[str]:
        request = self.decision.request
        lines = [f"Permission request: {visible(request.title)}"]
        if request.description:
            lines += [f"  {line}" for line in visible_lines(request.description).splitlines()]
        subject = request.subject
        if isinstance(subject, CommandPermissionSubject):
            lines.append(f"  command: {make_visible(subject.command).text}")
            lines.append(f"  cwd: {make_visible(subject.cwd).text}")
            warning = _hidden_warning(subject.command, subject.cwd)
            if warning:
                lines.append(f"  warning: {warning}")
        elif isinstance(subject, ToolCallPermissionSubject):
            call = subject.tool_call
            status = call.status if is_set(call, "status") else None
            head = tool_call_header_text(call.title, call.kind, status, call.locations or [])
            lines += [f"  {line}" for line in head]
            for item in call.content or []:
                lines += [f"    {line}" for line in content_text(item)]
        elif subject is not None:
            lines.append("  subject: " + generic_text(wire(subject)).replace("\n", "\n  "))
        options = ", ".join(f"{visible(o.name)} ({visible(str(o.kind))})" for o in request.options)
        lines.append(f"  options: {options}")
        lines.append(f"  decision: {self.outcome_text}")
        return lines

    def static_bundle(self) -> dict[str, str]:
        """Deterministic ``text/plain`` and escaped ``text/html`` of request and decision."""
        return {
            "text/plain": "\n".join(self.transcript_text()),
            "text/html": STYLE + self.transcript_html(),
        }

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle: dict[str, Any] = super()._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = self.static_bundle()["text/plain"]
        return bundle

    def __repr__(self) -> str:
        return f"PermissionCard({self.decision.request.title!r}, {self.outcome_text!r})"
