"""The question card: a form built from an ``elicitation/create`` request's schema, or a URL.

Like the permission card it never settles the decision itself. It reports an answer through
``on_answer(action, content, decided_by)``, at most once:

* ``("accept", content, "click")`` on Submit, only when the content passes the requested
  schema (otherwise each field shows why, inline, and nothing is reported);
* ``("decline", None, "click")`` / ``("cancel", None, "click")`` on Decline / Cancel;
* ``("cancel", None, "timeout")`` when ``timeout`` seconds pass without an answer;
* ``("cancel", None, "closed")`` when the card is closed while the question is open.

A URL is shown with the domain a browser would open (``_url``: as the WHATWG parser reads it,
in punycode), escaped with its hidden characters visible, as a link
(``target=_blank rel="noopener noreferrer"``) only when a person reads it as a browser does
(http or https; no backslash, user name, whitespace or hidden character), else as text with
the reasons; nothing opens it but a click. A field of a type this library does not know is a
text field with its raw schema.
"""

from __future__ import annotations

import contextvars
import json
import logging
import threading
from collections.abc import Callable
from typing import Any

import ipywidgets  # type: ignore[import-untyped]
from ipywidgets.widgets.widget_string import HTMLStyle  # type: ignore[import-untyped]

from .. import _protocol as p
from .._client._elicitation import message_of, schema_of, too_many_fields
from ._acks import acknowledge_running_kernel
from ._asking import AskCard
from ._parts import NO_MATH, STYLE, e, visible, visible_lines
from ._sender import clicked_by
from ._url import read_url

__all__ = ["AnswerCallback", "ElicitationCard", "url_domain"]

log = logging.getLogger("acp_notebook.widgets")

AnswerCallback = Callable[[str, "dict[str, Any] | None", str], None]

_FORMAT_HINT = {
    "email": "name@example.org",
    "uri": "https://…",
    "date": "YYYY-MM-DD",
    "date-time": "YYYY-MM-DDThh:mm:ssZ",
}


def url_domain(url: str) -> str:
    """The host a browser opens for ``url`` (lower case, punycode, visible; ``_url``), or
    ``""`` when it finds none."""
    return visible(read_url(url).host or "")


#: the form's own layout: a checkbox sits left of its label, on one row
_FORM_STYLE = """<style>
.acp-elicit-field{margin-bottom:4px}
.acp-elicit-field.acp-elicit-boolean{flex-direction:row;flex-wrap:wrap;align-items:center}
.acp-elicit-boolean>.widget-checkbox{order:-1;margin-right:6px;height:auto;align-self:center}
.acp-elicit-boolean>.widget-checkbox>input{margin:0}
.acp-elicit-boolean>.widget-html:not(:first-child){flex-basis:100%}
.acp-elicit-hint{color:var(--jp-ui-font-color2,#666);margin-left:6px}
</style>"""


def _span(low: Any, high: Any, unit: str = "") -> str:
    """``2 to 12 characters``, ``at least 1``, ``at most 9``, or ``""``."""
    tail = f" {unit}" if unit else ""
    if low is not None and high is not None:
        return f"{low} to {high}{tail}"
    if low is not None:
        return f"at least {low}{tail}"
    if high is not None:
        return f"at most {high}{tail}"
    return ""


def _hint(prop: Any, required: bool) -> str:
    """What a person should know before typing: limits, how to pick several, and that an
    optional number without a default is only sent when changed."""
    hints: list[str] = []
    if isinstance(prop, p.StringPropertySchema) and p.property_choices(prop) is None:
        hints.append(_span(prop.min_length, prop.max_length, "characters"))
    elif isinstance(prop, (p.IntegerPropertySchema, p.NumberPropertySchema)):
        hints.append(_span(prop.minimum, prop.maximum))
        if not required and prop.default is None:
            hints.append("left out unless you change it")
    elif isinstance(prop, p.MultiSelectPropertySchema):
        count = _span(prop.min_items, prop.max_items)
        hints.append(f"choose {count}" if count else "")
        hints.append("Ctrl/\u2318-click to choose several")
    return "; ".join(h for h in hints if h)


def _label(name: str, prop: Any, required: bool) -> str:
    title = getattr(prop, "title", None) or name
    star = ' <span class="acp-elicit-required" title="required">*</span>' if required else ""
    hint = _hint(prop, required)
    small = f' <small class="acp-elicit-hint">{e(visible(hint))}</small>' if hint else ""
    return f"<b>{e(visible(title))}</b>{star}{small}"


class _FormModels:
    """The layout and style models every field of one form shares: ipywidgets makes a Layout
    (and a style) per widget otherwise, 275 models for a 20-field form, and JupyterLab's
    ``perComm`` setting gives each model a kernel subshell of its own (ipykernel ran out of
    zmq sockets at about 200)."""

    def __init__(self) -> None:
        self.html_layout = ipywidgets.Layout()
        self.html_style = HTMLStyle()
        self.input_layout = ipywidgets.Layout(width="auto")
        self.box_layout = ipywidgets.Layout()

    def html(self, value: str) -> ipywidgets.HTML:
        return ipywidgets.HTML(value=value, layout=self.html_layout, style=self.html_style)

    def widgets(self) -> list[Any]:
        return [self.html_layout, self.html_style, self.input_layout, self.box_layout]


class _Field:
    """One form field: its widget, how to read it, and its inline error line."""

    def __init__(self, name: str, prop: Any, required: bool, shared: _FormModels) -> None:
        self.name = name
        self.prop = prop
        self.required = required
        self.touched = False
        self.error = shared.html("")
        self.widget = self._make(prop, shared.input_layout)
        self.widget.observe(self._touch, names="value")
        parts = [shared.html(_label(name, prop, required)), self.widget]
        description = getattr(prop, "description", None)
        if description:
            parts.append(shared.html(f"<small>{e(visible_lines(description))}</small>"))
        if isinstance(prop, p.UnknownPropertySchema):
            raw = json.dumps(prop.to_wire(), indent=1, sort_keys=True, default=str)
            parts.append(
                shared.html(
                    f'<pre class="acp-generic">unknown field type: {e(visible_lines(raw))}</pre>'
                )
            )
        parts.append(self.error)
        self.box = ipywidgets.VBox(parts, layout=shared.box_layout)
        self.box.add_class("acp-elicit-field")
        if isinstance(prop, p.BooleanPropertySchema):
            self.box.add_class("acp-elicit-boolean")

    def _touch(self, _change: Any) -> None:
        self.touched = True
        self.show_error(None)  # the old error no longer describes the new value

    def _make(self, prop: Any, layout: ipywidgets.Layout) -> Any:
        choices = p.property_choices(prop)
        if isinstance(prop, p.StringPropertySchema) and choices is not None:
            options: list[tuple[str, Any]] = [(visible(label), v) for v, label in choices]
            if prop.default not in {v for v, _ in choices}:
                options.insert(0, ("(choose)", None))
            if prop.default in {v for v, _ in choices}:
                return ipywidgets.Dropdown(options=options, value=prop.default, layout=layout)
            # index 0 shows "(choose)" (a value of None would show an empty box)
            return ipywidgets.Dropdown(options=options, index=0, layout=layout)
        if isinstance(prop, p.StringPropertySchema):
            hint = _FORMAT_HINT.get(prop.format or "", "")
            if prop.max_length is not None:
                hint = (hint + " " if hint else "") + f"(at most {prop.max_length} characters)"
            return ipywidgets.Text(value=prop.default or "", placeholder=hint, layout=layout)
        if isinstance(prop, p.IntegerPropertySchema):
            start = prop.default if prop.default is not None else prop.minimum or 0
            return ipywidgets.IntText(value=start, layout=layout)
        if isinstance(prop, p.NumberPropertySchema):
            number = prop.default if prop.default is not None else prop.minimum or 0.0
            return ipywidgets.FloatText(value=float(number), layout=layout)
        if isinstance(prop, p.BooleanPropertySchema):
            return ipywidgets.Checkbox(value=bool(prop.default), indent=False, layout=layout)
        if isinstance(prop, p.MultiSelectPropertySchema):
            options = [(visible(label), v) for v, label in choices or []]
            known = {v for _, v in options}
            picked = tuple(v for v in prop.default or [] if v in known)
            rows = max(2, min(len(options), 8))  # no empty rows under a short list
            return ipywidgets.SelectMultiple(
                options=options, value=picked, rows=rows, layout=layout
            )
        return ipywidgets.Text(value="", placeholder="text", layout=layout)

    def read(self) -> tuple[bool, Any]:
        """``(present, value)``: what this field contributes to the content."""
        value = self.widget.value
        prop = self.prop
        if isinstance(self.widget, ipywidgets.Text):
            return (value != "", value)
        if isinstance(self.widget, ipywidgets.Dropdown):
            return (value is not None, value)
        if isinstance(self.widget, ipywidgets.SelectMultiple):
            has_default = getattr(prop, "default", None) is not None
            return (bool(value) or has_default or self.touched or self.required, list(value))
        # numbers and booleans always hold a value: only sent when meant
        has_default = getattr(prop, "default", None) is not None
        return (self.required or has_default or self.touched, value)

    def show_error(self, message: str | None) -> None:
        self.error.value = (
            "" if not message else f'<span class="acp-card-warning">{e(message)}</span>'
        )

    def widgets(self) -> list[Any]:
        return [*self.box.children, self.box]


_FIX_FIRST = '<span class="acp-card-warning">fix the marked fields first</span>'

QuestionOutcome = tuple[str | None, str | None, str, Any]
"""``(action, decided_by, detail, content)``: a settled question as its card shows it."""


class ElicitationCard(AskCard):
    """A live card for one question (any thread may call its methods). It holds the request
    (a snapshot) and a callback, never the client's decision: its owner pushes the outcome
    with :meth:`mark_decided`."""

    kind = "question"
    #: questions are not anchored in a tool call's box: the turn view shows them in order
    tool_call_id: str | None = None

    def __init__(
        self,
        request: Any,
        on_answer: AnswerCallback,
        *,
        timeout: float | None = None,
        outcome: QuestionOutcome | None = None,
    ) -> None:
        # While a cell awaits its turn the kernel must acknowledge each edit of the form, or
        # the browser sends only the first one per field (see _acks).
        acknowledge_running_kernel()
        self._begin_asking()  # before any button (see AskCard)
        self.request = request
        self.message = message_of(request)
        self.schema = schema_of(request)
        self.timeout = timeout
        self._on_answer = on_answer
        self._outcome: QuestionOutcome | None = None
        #: the last Submit's check, when it runs off the main thread (see _click_handler)
        self._checker: threading.Thread | None = None
        self.fields: dict[str, _Field] = {}
        #: why the form is not built (too many fields), or None
        self.refused = too_many_fields(request)
        self._info = ipywidgets.HTML(value=STYLE + _FORM_STYLE + self.request_html())
        schema = self.schema
        self._models = _FormModels()
        if schema is not None and self.refused is None:
            required = set(schema.required or [])
            for name, prop in schema.properties.items():
                self.fields[name] = _Field(name, prop, name in required, self._models)
        self._buttons: dict[str, ipywidgets.Button] = {}
        known = schema is not None or isinstance(request, p.UrlElicitationRequest)
        known = known and self.refused is None
        labels = [("accept", "Submit" if schema is not None else "Accept", "success")]
        labels += [("decline", "Decline", "danger"), ("cancel", "Cancel", "")]
        for action, label, style in labels if known else []:
            button = ipywidgets.Button(description=label, button_style=style)
            button.add_class(f"acp-elicit-{action}")
            button.on_click(self._click_handler(action))
            self._buttons[action] = button
        self._button_box = ipywidgets.HBox(list(self._buttons.values()))
        for item in self.fields.values():
            item.widget.observe(self._edited, names="value")
        self._form = ipywidgets.VBox([f.box for f in self.fields.values()])
        super().__init__(children=[self._info, self._form, self._button_box, self._status])
        self.add_class("acp-card")
        self.add_class("acp-elicit")
        if outcome is not None:
            self.mark_decided(*outcome)
        elif not known:
            self._report("cancel", None, "invalid")
        elif timeout is not None:
            self._start_countdown(timeout, lambda: self._report("cancel", None, "timeout"))

    # -- facts -----------------------------------------------------------------------------
    @property
    def decided(self) -> bool:
        return self._outcome is not None

    @property
    def buttons(self) -> dict[str, ipywidgets.Button]:
        return dict(self._buttons)

    def content(self) -> dict[str, Any]:
        """What Submit would send now."""
        out: dict[str, Any] = {}
        for name, item in self.fields.items():
            present, value = item.read()
            if present:
                out[name] = value
        return out

    # -- answering -----------------------------------------------------------------------
    def _click_handler(self, action: str) -> Callable[[Any], None]:
        def click(_button: Any) -> None:
            if action != "accept":
                self._report(action, None, "click")
            elif self._has_pattern():
                # A pattern is the agent's code (issue 22, finding 12): its check (bounded by
                # PATTERN_BUDGET) runs in a thread of its own, never on the kernel's main one.
                # run in a copy of the click's context: the kernel's current parent (who
                # clicked, ``_sender``) is a context variable a new thread would not inherit
                clicked = contextvars.copy_context()
                checker = threading.Thread(
                    target=clicked.run,
                    args=(self._submit_logged,),
                    name="acp-question-check",
                    daemon=True,
                )
                self._checker = checker
                checker.start()
            else:
                self.submit()

        return click

    def _has_pattern(self) -> bool:
        schema = self.schema
        return schema is not None and any(
            isinstance(prop, p.StringPropertySchema) and bool(prop.pattern)
            for prop in schema.properties.values()
        )

    def _submit_logged(self) -> None:
        try:
            self.submit()
        except Exception:  # a thread of its own: nothing above it would see this
            log.exception("checking the question's answer failed")

    def wait_checked(self, timeout: float | None = None) -> bool:
        """Wait for the last Submit's check to end (one that runs in a thread of its own);
        False if it still runs after ``timeout`` seconds."""
        checker = self._checker
        if checker is None:
            return True
        checker.join(timeout)
        return not checker.is_alive()

    def _edited(self, _change: Any) -> None:
        """A field changed: "fix the marked fields" waits for the next Submit."""
        with self._lock:
            if self._status.value == _FIX_FIRST:
                self._status.value = ""

    def submit(self) -> bool:
        """Check the form; report ``accept`` with its content when valid. True if reported."""
        content: dict[str, Any] | None = None
        schema = self.schema
        if schema is not None:
            content = self.content()
            errors = p.content_errors(schema, content)
            for name, item in self.fields.items():
                item.show_error(errors.get(name))
            if errors:
                with self._lock:
                    if self._outcome is None and not self._chosen:
                        self._status.value = _FIX_FIRST
                return False
        self._report("accept", content, "click")
        return True

    def _report(self, action: str, content: dict[str, Any] | None, by: str) -> None:
        self._report_once(lambda: self._on_answer(action, content, by), by)

    # -- AskCard ----------------------------------------------------------------------------
    def _disable(self) -> None:
        for button in self._buttons.values():
            button.disabled = True
        for item in self.fields.values():
            item.widget.disabled = True

    def _answer_closed(self) -> None:
        self._report("cancel", None, "closed")

    def _owned(self) -> list[Any]:
        owned: list[Any] = [*self._buttons.values(), self._button_box, self._info, self._status]
        for item in self.fields.values():
            owned += item.widgets()
        return [*owned, self._form, *self._models.widgets()]

    def mark_decided(
        self, action: str | None, decided_by: str | None, detail: str = "", content: Any = None
    ) -> None:
        """Show the outcome and disable the form (idempotent)."""
        with self._lock:
            self._outcome = (action, decided_by, detail, content)
            self._show_decision(self.decision_html(self.outcome_text))

    @property
    def outcome_text(self) -> str:
        if self._outcome is None:
            return "waiting for an answer"
        action, by, detail, content = self._outcome
        how = f"by {by}"
        why = f" ({visible(detail)})" if detail else ""
        named = clicked_by(by, visible(detail) if detail else "")
        if named is not None:  # who clicked (``_sender``)
            how, why = named, ""
        if action == "accept":
            sent = f": {json.dumps(content, sort_keys=True)}" if content is not None else ""
            return f"accepted {how}{visible(sent)}"
        if action == "decline":
            return f"declined {how}{why}"
        return f"cancelled {how}{why}"

    # -- text --------------------------------------------------------------------------------
    def request_html(self) -> str:
        html = (
            f'<div class="acp-card-title {NO_MATH}"><b>Question:</b> '
            f"{e(visible_lines(self.message))}</div>"
        )
        request = self.request
        if isinstance(request, p.UrlElicitationRequest):
            url = visible(request.url)
            read = read_url(request.url)
            domain = visible(read.host or "")
            if read.linkable:
                link = (
                    f'<a href="{e(request.url)}" target="_blank" rel="noopener noreferrer">'
                    f"{e(url)}</a>"
                )
                note = "<div><small>opens only when you click it</small></div>"
            else:  # text only: a person could read it otherwise than a browser does
                link = f"<code>{e(url)}</code>"
                note = (
                    '<div class="acp-card-warning">⚠ not a link: '
                    f"{e('; '.join(read.refusals))}. Open it only if you trust it.</div>"
                )
            html += (
                f"<div>domain: <b>{e(domain or '(none)')}</b></div><div>open: {link}</div>{note}"
            )
        elif isinstance(request, p.UnknownElicitationRequest):
            html += f"<div>unknown question mode {e(visible(str(request.tag)))!s}</div>"
        refused = too_many_fields(request)
        if refused is not None:
            html += f'<div class="acp-card-warning">{e(refused)}</div>'
        return html

    def transcript_text(self, call: Any = None) -> list[str]:
        lines = [f"Question: {visible_lines(self.message)}"]
        request = self.request
        if isinstance(request, p.UrlElicitationRequest):
            lines.append(f"  url: {visible(request.url)} (domain {url_domain(request.url) or '-'})")
            refusals = read_url(request.url).refusals
            if refusals:
                lines.append(f"  not a link: {'; '.join(refusals)}")
        for name, item in self.fields.items():
            kind = str(getattr(item.prop, "type", None) or getattr(item.prop, "tag", "?"))
            mark = " (required)" if item.required else ""
            lines.append(f"  field {visible(name)}: {visible(kind)}{mark}")
        lines.append(f"  answer: {self.outcome_text}")
        return lines

    def transcript_html(self, call: Any = None) -> str:
        body = "<br>".join(e(line) for line in self.transcript_text()[1:])
        return f'<div class="acp-card {NO_MATH}">{self.request_html()}<div>{body}</div></div>'

    def static_bundle(self) -> dict[str, str]:
        return {
            "text/plain": "\n".join(self.transcript_text()),
            "text/html": STYLE + self.transcript_html(),
        }

    def __repr__(self) -> str:
        return f"ElicitationCard({self.message!r}, {self.outcome_text!r})"
