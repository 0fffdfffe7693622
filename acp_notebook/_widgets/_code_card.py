"""The code card: Python the agent asks to run in the kernel, with Allow and Reject.

Like the permission card it never decides anything itself: it reports a choice through
``on_choose(allowed, decided_by)`` at most once (``(True, "click")``, ``(False, "click")``,
``(False, "timeout")`` when ``timeout`` seconds pass, ``(False, "closed")`` when it is closed
while open). Its owner (``_kernel_code``) pushes what happened with :meth:`CodeCard.mark` (the
decision line) and :meth:`CodeCard.show_result` (the code's output, shown in the card's own
output area). The code is shown exactly as sent: control and bidi characters are made visible
(``⟨ESC⟩``, ``⟨U+202E RLO⟩``) before it is highlighted, a lone CR (where Python ends a line)
as ``⟨CR⟩`` and a line break, and everything is escaped.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

import ipywidgets  # type: ignore[import-untyped]

from .._protocol._visible import make_visible
from ._asking import AskCard
from ._parts import NO_MATH, STYLE, e, visible, visible_lines

__all__ = ["CodeCard", "foreign_letters", "highlight_python"]

log = logging.getLogger("acp_notebook.widgets")

CodeChoose = Callable[[bool, str], None]
"""``on_choose(allowed, decided_by)``: ``click``, ``timeout`` or ``closed``."""

CODE_STYLE = (
    # wrapped, never scrolled: code 300 spaces to the right of a line is on screen too
    "<style>.acp-code-source{margin:2px 0;padding:4px;white-space:pre-wrap;"
    "overflow-wrap:anywhere;"
    "background:var(--jp-layout-color2,#f6f6f6);font-family:var(--jp-code-font-family,monospace);"
    "font-size:var(--jp-code-font-size,13px);line-height:1.3}"
    ".acp-code-output{margin:2px 0;padding:4px;overflow-x:auto;white-space:pre-wrap;"
    "border-left:3px solid #888;font-family:var(--jp-code-font-family,monospace);"
    "font-size:var(--jp-code-font-size,13px)}.acp-code-error{border-left-color:#b91c1c}</style>"
)


def foreign_letters(code: str) -> list[str]:
    """The letters that are not ASCII in the code's names (not its strings or comments), each
    once, as ``'?' U+0430 CYRILLIC SMALL LETTER A``: a name with one may look exactly like
    another (``safe`` with that letter for its ``a``, and ``safe``) and be another."""
    import io
    import tokenize
    import unicodedata

    names: list[str] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type == tokenize.NAME and not token.string.isascii():
                names.append(token.string)
    except (tokenize.TokenError, SyntaxError):  # not Python: every word then
        names = [w for w in re.findall(r"[^\W\d]\w*", code) if not w.isascii()]
    found: dict[str, None] = {}
    for name in names:
        for ch in name:
            if not ch.isascii():
                found.setdefault(ch, None)
    shown = list(found)[:12]
    return [f"{ch!r} U+{ord(ch):04X} {unicodedata.name(ch, 'unnamed')}" for ch in shown]


def highlight_python(code: str) -> str:
    """``code`` as escaped HTML with inline-styled Pygments spans (no stylesheet needed, so a
    saved notebook shows the colours too). Pygments escapes every character it emits."""
    import importlib

    # Pygments comes with IPython; imported by name, so no type stubs are needed.
    highlight: Any = importlib.import_module("pygments").highlight
    formatter: Any = importlib.import_module("pygments.formatters").HtmlFormatter
    lexer: Any = importlib.import_module("pygments.lexers").PythonLexer
    return str(highlight(code, lexer(), formatter(nowrap=True, noclasses=True)))


class CodeCard(AskCard):
    """A live card for one ``run_code`` request (any thread may call its methods)."""

    kind = "code"
    tool_call_id: str | None = None  # shown in arrival order, not in a tool call's box

    def __init__(
        self,
        code: str,
        on_choose: CodeChoose,
        *,
        who: str = "the agent",
        timeout: float | None = None,
    ) -> None:
        self._begin_asking()  # before any button (see AskCard)
        self.code = code
        self.who = who
        self.timeout = timeout
        self._on_choose = on_choose
        self._decision: str | None = None  # the decision line, once pushed
        self._result: tuple[str, str | None] | None = None  # (output, error), once it ran
        # source=True: a lone CR shows as a line break, as Python reads it (issue 22, #14)
        self.hidden = make_visible(code, source=True).hidden
        self.foreign = foreign_letters(code)
        self._info = ipywidgets.HTML(value=STYLE + CODE_STYLE + self.request_html())
        self._output = ipywidgets.HTML(value="")
        self._allow = ipywidgets.Button(
            description="Allow", button_style="success", layout=ipywidgets.Layout(width="auto")
        )
        self._allow.add_class("acp-code-allow")
        self._reject = ipywidgets.Button(
            description="Reject", button_style="danger", layout=ipywidgets.Layout(width="auto")
        )
        self._reject.add_class("acp-code-reject")
        self._allow.on_click(lambda _b: self._choose(True, "click"))
        self._reject.on_click(lambda _b: self._choose(False, "click"))
        self._buttons = ipywidgets.HBox([self._allow, self._reject])
        super().__init__(children=[self._info, self._buttons, self._status, self._output])
        self.add_class("acp-card")
        self.add_class("acp-code-card")
        with self._lock:
            if self._chosen:  # clicked while the buttons were built
                self._allow.disabled = self._reject.disabled = True
        if timeout is not None:
            self._start_countdown(timeout, lambda: self._choose(False, "timeout"))

    # -- facts -----------------------------------------------------------------------------
    @property
    def buttons(self) -> list[ipywidgets.Button]:
        return [self._allow, self._reject]

    @property
    def decided(self) -> bool:
        return self._decision is not None

    @property
    def outcome_text(self) -> str:
        return self._decision or "pending"

    @property
    def output_text(self) -> str:
        """What the card's output area shows (plain text), empty before the code ran."""
        if self._result is None:
            return ""
        output, error = self._result
        return output + (error or "")

    # -- choosing -------------------------------------------------------------------------
    def _choose(self, allowed: bool, decided_by: str) -> None:
        self._report_once(lambda: self._on_choose(allowed, decided_by), decided_by)

    # -- AskCard ----------------------------------------------------------------------------
    def _disable(self) -> None:
        self._allow.disabled = self._reject.disabled = True

    def _answer_closed(self) -> None:
        self._choose(False, "closed")

    def _owned(self) -> list[Any]:
        return [self._allow, self._reject, self._buttons, self._info, self._status, self._output]

    def mark(self, line: str) -> None:
        """Show the decision line (``Allowed - by a click``, ``Cancelled - ...``) and disable
        both buttons (idempotent: the last line wins)."""
        with self._lock:
            self._chosen = True
            self._decision = line
            self._show_decision(self.decision_html(line))

    def show_result(self, output: str, error: str | None) -> None:
        """Show what the code printed, displayed and returned, and its error, if any."""
        with self._lock:
            self._result = (output, error)
            if self._output.comm is not None:
                self._output.value = self._result_html()

    def _result_html(self) -> str:
        if self._result is None:
            return ""
        output, error = self._result
        html = ""
        if output:
            html += f'<pre class="acp-code-output">{e(visible_lines(output))}</pre>'
        if error:
            html += f'<pre class="acp-code-output acp-code-error">{e(visible_lines(error))}</pre>'
        if not html:
            html = '<div class="acp-code-output">(no output)</div>'
        return html

    # -- rendering --------------------------------------------------------------------------
    def request_html(self) -> str:
        shown = make_visible(self.code, source=True).text
        parts = [
            f'<div class="acp-card-title"><b>🐍 {e(visible(self.who))} asks to run code in'
            " the kernel</b></div>",
            f'<pre class="acp-code-source">{highlight_python(shown)}</pre>',
        ]
        if self.hidden:
            parts.append(
                '<div class="acp-card-warning">⚠ hidden characters made visible: '
                f"{e(', '.join(self.hidden))}</div>"
            )
        if self.foreign:
            parts.append(
                '<div class="acp-card-warning">⚠ names with letters that are not ASCII (a name'
                f" may look like another): {e(visible(', '.join(self.foreign)))}</div>"
            )
        return '<div class="acp-card-request">' + "".join(parts) + "</div>"

    def transcript_html(self, call: Any = None) -> str:
        return (
            f'<div class="acp-card acp-code-card {NO_MATH}">{CODE_STYLE}{self.request_html()}'
            f"<div><b>{e(self.outcome_text)}</b></div>{self._result_html()}</div>"
        )

    def transcript_text(self, call: Any = None) -> list[str]:
        lines = [f"Code request: {visible(self.who)} asks to run code in the kernel"]
        shown = make_visible(self.code, source=True).text  # only \n and tab are left raw
        lines += [f"    {line}" for line in shown.split("\n")]
        if self.hidden:
            lines.append(f"  warning: hidden characters made visible: {', '.join(self.hidden)}")
        if self.foreign:
            lines.append(
                "  warning: names with letters that are not ASCII (a name may look like"
                f" another): {visible(', '.join(self.foreign))}"
            )
        lines.append(f"  decision: {self.outcome_text}")
        if self._result is not None:
            output, error = self._result
            if output:
                lines.append("  output:")
                lines += [f"    {line}" for line in visible_lines(output).splitlines()]
            if error:
                lines.append("  error:")
                lines += [f"    {line}" for line in visible_lines(error).splitlines()]
        return lines

    def static_bundle(self) -> dict[str, str]:
        return {
            "text/plain": "\n".join(self.transcript_text()),
            "text/html": STYLE + self.transcript_html(),
        }

    def __repr__(self) -> str:
        return f"CodeCard({self.code[:40]!r}, {self.outcome_text!r})"
