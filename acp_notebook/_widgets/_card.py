"""The permission card: what the agent asks, one button per offered option, and the outcome.

The card never settles a decision itself. It reports a choice through
``on_choose(option_id, decided_by)``, at most once:

* ``(option_id, "click")`` when a button is pressed;
* ``(None, "timeout")`` when ``timeout`` seconds pass without an answer;
* ``(None, "closed")`` when the card is closed while the decision is still open;
* ``(None, "invalid")`` at once when the request cannot be answered unambiguously
  (:func:`invalid_options`: duplicate option ids ...); such a card has no live button.

Each button is styled by its option's kind (green allow, red reject, neutral for a kind this
library does not know) and has the kind beside it as a badge; a name that reads as the
opposite of the kind ("Reject" for an ``allow_once``) gets a visible warning.

When the decision settles, the owner pushes it with :meth:`PermissionCard.mark_decided`
with what really happened, which may differ (a policy, a cancel, the side panel ...).
Any path that is not a clear click ends in ``None``: the card fails closed.

A request nobody is asked (a rule decided it) gets no card: a :class:`PermissionRow` shows it
as HTML in its tool call's row, with the same words (both are :class:`PermissionFacts`).
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from collections.abc import Callable
from typing import Any

import ipywidgets  # type: ignore[import-untyped]

from .._client._permission import invalid_options
from .._protocol import (
    CommandPermissionSubject,
    PermissionOption,
    RequestPermissionRequest,
    ToolCallPermissionSubject,
)
from .._protocol._permission import tool_call_command_unknown, tool_call_commands
from .._protocol._visible import make_visible
from ._asking import AskCard
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
    tool_title,
    visible,
    visible_lines,
    wire,
)
from ._sender import clicked_by

__all__ = [
    "ChooseCallback",
    "PermissionCard",
    "PermissionFacts",
    "PermissionIndex",
    "PermissionRow",
    "button_style",
    "describe_decision",
    "kind_badge",
    "name_warning",
]

log = logging.getLogger("acp_notebook.widgets")

# An execute tool call whose command cannot be read (none under a key this client reads, or one
# of another shape): whatever its title or text says, that is not what a rule judged.
_UNKNOWN_COMMAND = (
    "not known: the agent did not send it in a form this client reads (a title or text is "
    "only the agent's description of it); while a --deny rule is set, no --allow rule "
    "approves it"
)

ChooseCallback = Callable[[str | None, str], None]
"""``on_choose(option_id, decided_by)``: ``click``, ``timeout``, ``closed`` or ``invalid``."""


_KIND_BADGES = {
    "allow_once": "allow once",
    "allow_always": "allow always",
    "reject_once": "reject once",
    "reject_always": "reject always",
}
UNKNOWN_KIND = "unknown kind"


def kind_badge(kind: str) -> str:
    """What a button says its option does: ``allow once`` ... or ``unknown kind``."""
    return _KIND_BADGES.get(kind, UNKNOWN_KIND)


def _effect(kind: str) -> str | None:
    """``allow`` or ``reject`` for the four known kinds; None for any other."""
    return kind.partition("_")[0] if kind in _KIND_BADGES else None


def button_style(kind: str) -> str:
    """ipywidgets ``button_style`` for a permission option kind: green for the allow kinds, red
    for the reject kinds, neutral for any other (``allow_forever`` too: only the four kinds of
    the protocol are known). The ``always`` kinds get a class of their own as well."""
    return {"allow": "success", "reject": "danger"}.get(_effect(kind) or "", "")


def _kind_classes(kind: str) -> list[str]:
    effect = _effect(kind)
    if effect is None:
        return ["acp-kind-unknown"]
    classes = [f"acp-kind-{effect}"]
    if kind.endswith("_always"):
        classes.append("acp-kind-always")
    return classes


# Words a name is read by (after NFKC and casefolding). A reject word, or an allow word right
# after a negation ("don't allow", "do not run"), makes a name read as reject; otherwise an
# allow word makes it read as allow ("Yes, and don't ask again"), and a negation without one
# as reject ("Never", "Not now").
_ALLOW_WORDS = frozenset({
    "allow", "allowed", "allows", "approve", "approved", "accept", "accepted", "yes", "y", "ok",
    "okay", "run", "proceed", "continue", "confirm", "grant", "permit", "execute", "go", "sure",
})  # fmt: skip
_REJECT_WORDS = frozenset({
    "reject", "rejected", "rejects", "deny", "denied", "denies", "no", "n", "nope", "cancel",
    "cancelled", "canceled", "stop", "abort", "decline", "refuse", "block", "disallow", "forbid",
    "skip",
})  # fmt: skip
_NEGATIONS = frozenset({"not", "don't", "dont", "never"})
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")


def _reads_as(name: str) -> str | None:
    """``allow``, ``reject`` or None: what the name of an option says it does."""
    # Hidden characters must not split a word ("Re<ZWSP>ject"): read the name without them.
    bare = "".join(
        ch if make_visible(ch).text == ch else "" if unicodedata.category(ch) == "Cf" else " "
        for ch in name
    )
    text = unicodedata.normalize("NFKC", bare).casefold().replace("\u2019", "'")
    words = _WORD.findall(text)
    if len(words) > 1:
        # "y" and "n" answer only standing alone: in a longer name a single letter is part of
        # something else (Claude's "Yes, and don't ask again for printf 'a\n' commands")
        words = [word for word in words if len(word) > 1]
    allow = False
    for index, word in enumerate(words):
        if word in _REJECT_WORDS:
            return "reject"
        if word in _ALLOW_WORDS:
            before = words[max(0, index - 2) : index]
            if any(w in _NEGATIONS for w in before):
                return "reject"
            allow = True
    if allow:
        return "allow"
    # a negation with no allow word at all ("Never", "Not now") reads as reject
    return "reject" if any(w in _NEGATIONS for w in words) else None


def name_warning(option: PermissionOption) -> str | None:
    """``⚠ the agent named this 'Reject' but it ALLOWS`` when an option's name reads as the
    opposite of its kind; None otherwise (and for unknown kinds, which do neither)."""
    kind = str(option.kind)
    effect = _effect(kind)
    reads = _reads_as(option.name)
    if effect is None or reads is None or reads == effect:
        return None
    does = "ALLOWS" if effect == "allow" else "REJECTS"
    return f"⚠ the agent named this '{visible(option.name)}' but it {does}"


def _option_label(option: PermissionOption) -> str:
    """``Reject [allow once] ⚠ the agent named this 'Reject' but it ALLOWS`` (plain text)."""
    kind = str(option.kind)
    badge = kind_badge(kind)
    if badge == UNKNOWN_KIND:
        badge = f"{UNKNOWN_KIND}: {visible(kind)}"
    label = f"{visible(option.name)} [{badge}]"
    return " ".join([label, *_option_warnings(option)])


def _option_warnings(option: PermissionOption) -> list[str]:
    """A name that reads as the opposite of its kind; hidden characters in a name."""
    warnings = [w for w in [name_warning(option)] if w]
    hidden = _hidden_warning(option.name)
    if hidden:
        warnings.append(f"⚠ {hidden} in this name")
    return warnings


#: Words that make a name say its option lasts ("Always allow", "Yes, and don't ask again").
_LASTING_WORDS = frozenset({"always", "again", "forever", "never", "permanently", "all"})


def _says_kind(option: PermissionOption) -> bool:
    """Whether the option's name already says what its kind does: the same effect, and lasting
    exactly when the kind is an ``*_always`` one (``Allow once``, ``Always allow``, ``Yes``)."""
    kind = str(option.kind)
    effect = _effect(kind)
    if effect is None or _reads_as(option.name) != effect:
        return False
    text = unicodedata.normalize("NFKC", option.name).casefold().replace("\u2019", "'")
    lasting = bool(_LASTING_WORDS.intersection(_WORD.findall(text)))
    return lasting == kind.endswith("_always")


def option_badge_html(option: PermissionOption) -> str:
    """What is shown beside an option's button: its kind as a badge only when the name does
    not already say it (the button's colour and tooltip always do), and the warning when the
    name misleads. Empty when there is nothing to add: a label is not said twice."""
    kind = str(option.kind)
    warnings = _option_warnings(option)
    html = ""
    if warnings or not _says_kind(option):
        classes = " ".join(["acp-badge", "acp-kind-badge", *_kind_classes(kind)])
        html = f'<span class="{classes}">{e(kind_badge(kind))}</span>'
    for warning in warnings:
        html += f' <span class="acp-card-warning acp-kind-mismatch">{e(warning)}</span>'
    return html


#: The kernel tools' MCP server and its tool that runs code (acp_notebook/_kernel/_tools.py):
#: an agent may ask its own permission to call it; the kernel's code card follows.
_RUN_CODE_TITLES = ("mcp__notebook__run_code", "run_code")


def _code_html(call: Any) -> list[str]:
    """A tool call that carries code to run (``rawInput.code``): the code on the card, and for
    the notebook's own run_code, that the code card follows (issue 25, finding 5: Claude asked
    about ``mcp__notebook__run_code`` with no code shown)."""
    raw = getattr(call, "raw_input", None)
    code = raw.get("code") if isinstance(raw, dict) else None
    if not isinstance(code, str) or not code:
        return []
    parts = [f'<pre class="acp-card-code">{e(visible_lines(code))}</pre>']
    if (getattr(call, "title", None) or "") in _RUN_CODE_TITLES:
        parts.append(
            '<div class="acp-card-note">This lets the agent ask to run it: the kernel\'s code'
            " card follows, and nothing runs before you allow it there too.</div>"
        )
    return parts


_BY = {
    "click": "by a click",
    "panel": "from the side panel",
    "handler": "by the permission handler",
    "timeout": "no answer before the timeout",
    "cancel": "the turn was cancelled",
    "closed": "the card was closed",
    "error": "the permission handler failed",
    "invalid": "the answer was not an offered option",  # or the request: see describe
    "no-handler": "nothing could answer",
    "withdrawn": "withdrawn by the agent",
    "earlier": "by the allow of the agent's own request",
    "overflow": "not asked: too many requests of the cell were open",
}


def describe_decision(
    request: RequestPermissionRequest,
    option_id: str | None,
    decided_by: str | None,
    detail: str = "",
    *,
    with_kind: bool = True,
) -> str:
    """One line: what was decided, by what, and the kind of the option chosen (deterministic):
    ``Approved: Reject - by a click · allow once`` (without the kind unless ``with_kind``)."""
    option = next((o for o in request.options if o.option_id == option_id), None)
    kind = ""
    if option is None:
        verb = "Cancelled"
    else:
        kind = str(option.kind)
        word = {"allow": "Approved", "reject": "Rejected"}.get(_effect(kind) or "", "Chose")
        verb = f"{word}: {visible(option.name)}"
    invalid = invalid_options(request) if decided_by == "invalid" else None
    if invalid is not None:
        by = f"invalid request: {invalid}"
    elif decided_by == "policy":
        by = f"by policy {detail}" if detail else "by a policy rule"
    elif (named := clicked_by(decided_by, detail)) is not None:  # who clicked
        by = named
    else:
        by = _BY.get(decided_by or "", f"by {decided_by or 'an unknown path'}")
        if detail and decided_by not in ("click", "panel", "timeout", "closed"):  # "earlier": it
            by += f" ({detail})"
    line = f"{verb} - {by}"
    if option is not None and with_kind:
        line += f" · {kind_badge(kind)}"
    return visible(line)


def _hidden_warning(*texts: str) -> str | None:
    names: list[str] = []
    for text in texts:
        for name in make_visible(text).hidden:
            if name not in names:
                names.append(name)
    if not names:
        return None
    return "hidden characters made visible: " + ", ".join(names)


Outcome = tuple[str | None, str | None, str]
"""``(option_id, decided_by, detail)``: a settled decision as a card shows it."""


class PermissionFacts:
    """What every form of a permission request knows and shows: the request (a snapshot), the
    outcome once its owner pushed it (``mark_decided``), the tool call whose box shows it, and
    every rendering of it (live HTML, the decision line, the saved transcript). The interactive
    card (`PermissionCard`) and a request nobody was asked (`PermissionRow`) are its two forms,
    so both say the same words."""

    request: RequestPermissionRequest
    #: why the request cannot be answered unambiguously (duplicate option ids ...), else None
    invalid: str | None
    _outcome: Outcome | None
    _call: Any  # the tool call whose box (or row) shows the request (show_with)

    # -- facts -----------------------------------------------------------------------------
    @property
    def subject(self) -> Any:
        return self.request.subject

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
    def verdict(self) -> str:
        """``asking`` until decided, then ``allowed`` (an ``allow_*`` option was chosen) or
        ``refused`` (anything else: a reject, a cancel, a timeout, a close)."""
        outcome = self._outcome
        if outcome is None:
            return "asking"
        kind = next((str(o.kind) for o in self.request.options if o.option_id == outcome[0]), "")
        return "allowed" if kind.startswith("allow") else "refused"

    @property
    def outcome_text(self) -> str:
        """``pending`` or the line :meth:`mark_decided` shows."""
        outcome = self._outcome
        if outcome is None:
            return "pending"
        return describe_decision(self.request, *outcome)

    def _decision_html(self, option_id: str | None, decided_by: str | None, detail: str) -> str:
        """The settled line, the chosen kind as a badge beside it (the kind classes colour it)."""
        line = describe_decision(self.request, option_id, decided_by, detail, with_kind=False)
        html = f'<span class="acp-card-decision"><b>{e(line)}</b></span>'
        option = next((o for o in self.request.options if o.option_id == option_id), None)
        if option is not None:
            kind = str(option.kind)
            classes = " ".join(["acp-badge", "acp-kind-badge", *_kind_classes(kind)])
            html += f' <span class="{classes} acp-card-decision-kind">{e(kind_badge(kind))}</span>'
        return html

    # -- the tool call around the request ---------------------------------------------------
    def show_with(self, call: Any) -> None:
        """The request sits with tool call ``call`` (a ``ToolCallState``, read on the thread
        that applies updates): what the call already shows, the request does not repeat (see
        :meth:`request_html`)."""
        self._call = call

    def _command(self) -> str | None:
        """The one command this request asks to run: a command subject's, or the one command
        of a tool call subject (``tool_call_commands``: what ``--allow``/``--deny`` judge)."""
        subject = self.subject
        if isinstance(subject, CommandPermissionSubject):
            return subject.command
        if isinstance(subject, ToolCallPermissionSubject):
            commands = tool_call_commands(self.request)
            return commands[0] if len(commands) == 1 else None
        return None

    def _command_shown(self, call: Any) -> bool:
        """The box of ``call`` shows this request's command, character for character: as the
        call's title (or its terminal's header, which replaces an equal title)."""
        command = self._command()
        if call is None or not command or "\n" in command:
            return False
        title = getattr(call, "title", None)
        return isinstance(title, str) and visible(title) == visible(command)

    def _title(self, call: Any) -> str:
        """The request's title; once the box shows the command, the command in it reads
        "this command" (it is on screen right above, in full), and a title that is only the
        command asks "Run this command?"."""
        title = tool_title(visible(self.request.title))
        command = visible(self._command() or "")
        if command and self._command_shown(call):
            if title.strip(" `") == command:
                return "Run this command?"
            title = title.replace(f"`{command}`", "this command")
            title = title.replace(command, "this command")
        return title

    @staticmethod
    def _same_call(subject: ToolCallPermissionSubject, call: Any) -> tuple[bool, bool]:
        """Whether the box of ``call`` shows this request's (title, content) already."""
        if call is None:
            return False, False
        asked = subject.tool_call
        same_title = (asked.title or None) == (getattr(call, "title", None) or None)
        asked_content = [wire(c) for c in asked.content or []]
        shown = [wire(c) for c in getattr(call, "content", None) or []]
        return same_title, bool(asked_content) and asked_content == shown

    # -- rendering --------------------------------------------------------------------------
    def request_html(self, *, call: Any = None) -> str:
        """The request (title, description, subject), every agent string escaped. In the box
        of tool call ``call``, what the box shows already is left out: the command when it is
        the call's title, a tool call's header and content when they are the call's own."""
        request = self.request
        parts = [f'<div class="acp-card-title"><b>🔐 {e(self._title(call))}</b></div>']
        if self.invalid is not None:
            parts.append(
                f'<div class="acp-card-warning">⚠ invalid request: {e(self.invalid)}; '
                "it is answered cancelled</div>"
            )
        if request.description:
            parts.append(
                f'<div class="acp-card-description" style="white-space:pre-wrap">'
                f"{e(visible_lines(request.description))}</div>"
            )
        subject = request.subject
        if isinstance(subject, CommandPermissionSubject):
            if not self._command_shown(call):
                parts.append(
                    f'<div class="acp-card-command">$ {e(make_visible(subject.command).text)}</div>'
                )
            parts.append(
                f'<div>in <code class="acp-card-cwd">{e(make_visible(subject.cwd).text)}</code>'
                "</div>"
            )
            warning = _hidden_warning(subject.command, subject.cwd)
            if warning:
                parts.append(f'<div class="acp-card-warning">⚠ {e(warning)}</div>')
        elif isinstance(subject, ToolCallPermissionSubject):
            asked = subject.tool_call
            same_title, same_content = self._same_call(subject, call)
            if not same_title:
                parts.append(
                    tool_call_header_html(
                        asked.title,
                        asked.kind,
                        None,
                        asked.locations or [],
                        with_status=False,
                        # the card's own title says it already
                        with_title=visible(asked.title or "") != visible(request.title),
                    )
                )
            if not same_content:
                for item in asked.content or []:
                    parts.append(content_html(item))
            parts += _code_html(asked)
            commands = tool_call_commands(request)
            # what --allow/--deny judge: on the card, unless the box right above shows it whole
            for command in () if self._command_shown(call) else commands:
                parts.append(
                    f'<div class="acp-card-command">$ {e(make_visible(command).text)}</div>'
                )
            warning = _hidden_warning(*commands) if commands else None
            if warning:
                parts.append(f'<div class="acp-card-warning">⚠ {e(warning)}</div>')
            if tool_call_command_unknown(request):
                parts.append(f'<div class="acp-card-warning">⚠ command {e(_UNKNOWN_COMMAND)}</div>')
        elif subject is not None:
            parts.append(generic_html(wire(subject), "subject (unknown type)"))
        return '<div class="acp-card-request">' + "".join(parts) + "</div>"

    def _kept(self, kind: str, call: Any, make: Callable[[], Any]) -> Any:
        """``make()``, kept while the outcome and tool call ``call`` (its revision) stay the
        same: the saved transcript renders every request again every few seconds while the
        turn runs (a turn of 1,000 requests spent most of its kernel time there)."""
        key = (self._outcome, getattr(call, "revision", None))
        kept = self.__dict__.setdefault("_renders", {})
        last = kept.get(kind)
        if last is not None and last[0] == key and last[1] is call:
            return last[2]
        value = make()
        kept[kind] = (key, call, value)
        return value

    def transcript_html(self, call: Any = None) -> str:
        """The card for a static transcript (``call``: as in :meth:`request_html`)."""
        return str(self._kept("html", call, lambda: self._transcript_html(call)))

    def transcript_text(self, call: Any = None) -> list[str]:
        """Plain lines of the card (``call``: as in :meth:`request_html`)."""
        return list(self._kept("text", call, lambda: self._transcript_text(call)))

    def _transcript_html(self, call: Any) -> str:
        options = ", ".join(
            f"{e(visible(o.name))} {option_badge_html(o)}" for o in self.request.options
        )
        return (
            f'<div class="acp-card {NO_MATH}">{self.request_html(call=call)}'
            f"<div>options: {options}</div><div><b>{e(self.outcome_text)}</b></div></div>"
        )

    def _transcript_text(self, call: Any) -> list[str]:
        request = self.request
        lines = [f"Permission request: {self._title(call)}"]
        if request.description:
            lines += [f"  {line}" for line in visible_lines(request.description).splitlines()]
        subject = request.subject
        if isinstance(subject, CommandPermissionSubject):
            if not self._command_shown(call):
                lines.append(f"  command: {make_visible(subject.command).text}")
            lines.append(f"  cwd: {make_visible(subject.cwd).text}")
            warning = _hidden_warning(subject.command, subject.cwd)
            if warning:
                lines.append(f"  warning: {warning}")
        elif isinstance(subject, ToolCallPermissionSubject):
            asked = subject.tool_call
            same_title, same_content = self._same_call(subject, call)
            if not same_title:
                head = tool_call_header_text(
                    asked.title, asked.kind, None, asked.locations or [], with_status=False
                )
                lines += [f"  {line}" for line in head]
            if not same_content:
                for item in asked.content or []:
                    lines += [f"    {line}" for line in content_text(item)]
            commands = tool_call_commands(request)
            for command in () if self._command_shown(call) else commands:
                lines.append(f"  command: {make_visible(command).text}")
            warning = _hidden_warning(*commands) if commands else None
            if warning:
                lines.append(f"  warning: {warning}")
            if tool_call_command_unknown(request):
                lines.append(f"  command: {_UNKNOWN_COMMAND}")
        elif subject is not None:
            lines.append("  subject: " + generic_text(wire(subject)).replace("\n", "\n  "))
        if self.invalid is not None:
            lines.append(f"  invalid request: {self.invalid}")
        options = ", ".join(_option_label(o) for o in request.options)
        lines.append(f"  options: {options}")
        lines.append(f"  decision: {self.outcome_text}")
        return lines

    def static_bundle(self) -> dict[str, str]:
        """Deterministic ``text/plain`` and escaped ``text/html`` of request and decision."""
        return {
            "text/plain": "\n".join(self.transcript_text()),
            "text/html": STYLE + self.transcript_html(),
        }


class PermissionCard(PermissionFacts, AskCard):
    """A live card for one permission request (any thread may call its methods).

    It holds the request (a snapshot: the agent's message, validated) and a callback; never
    the client's decision. Its owner pushes the outcome with :meth:`mark_decided`; ``outcome``
    makes a card that shows a decision made already (the side panel, a late view).
    """

    kind = "permission"

    def __init__(
        self,
        request: RequestPermissionRequest,
        on_choose: ChooseCallback,
        *,
        timeout: float | None = None,
        outcome: Outcome | None = None,
    ) -> None:
        self._begin_asking()  # before any button (see AskCard)
        self.request = request
        self.timeout = timeout
        self._on_choose = on_choose
        self._outcome: tuple[str | None, str | None, str] | None = None
        # A request that cannot be answered unambiguously (duplicate ids ...) gets no live
        # button: the client answers it cancelled before any card sees it, and should one reach
        # a card undecided, the card answers it cancelled itself.
        self.invalid = invalid_options(request)
        self._call: Any = None  # the tool call whose box shows this card (show_with)
        self._info = ipywidgets.HTML(value=STYLE + self.request_html())
        self._buttons: list[ipywidgets.Button] = []
        self._badges: list[ipywidgets.HTML] = []
        self._option_html: list[str] = []
        groups: list[ipywidgets.HBox] = []
        # An invalid request gets no buttons at all (not even disabled ones): its options may
        # be thousands, and none of them can be chosen.
        for option in request.options if self.invalid is None else ():
            kind = str(option.kind)
            button = ipywidgets.Button(
                description=visible(option.name),  # styled by kind, never by name
                button_style=button_style(kind),
                tooltip=kind_badge(kind) if _effect(kind) else visible(kind),
                layout=ipywidgets.Layout(width="auto"),  # the whole label, never "Allo…"
            )
            for name in _kind_classes(kind):
                button.add_class(name)
            button.on_click(self._click_handler(option.option_id))
            self._buttons.append(button)
            said = option_badge_html(option)
            self._option_html.append(said)
            parts: list[Any] = [button]
            if said:  # a badge (a widget model) only where it adds something
                badge = ipywidgets.HTML(value=said, layout=ipywidgets.Layout(width="auto"))
                self._badges.append(badge)
                parts.append(badge)
            group = ipywidgets.HBox(parts)
            group.add_class("acp-card-option")
            groups.append(group)
        self._button_box = ipywidgets.HBox(groups, layout=ipywidgets.Layout(flex_flow="row wrap"))
        super().__init__(children=[self._info, self._button_box, self._status])
        self.add_class("acp-card")
        with self._lock:
            if self._chosen and self._outcome is None:  # clicked while the buttons were built
                for button in self._buttons:
                    button.disabled = True
        if outcome is not None:
            self.mark_decided(*outcome)
        elif self.invalid is not None:
            self._choose(None, "invalid")
        elif timeout is not None:
            self._start_countdown(timeout, lambda: self._choose(None, "timeout"))

    # -- facts -----------------------------------------------------------------------------
    @property
    def buttons(self) -> list[ipywidgets.Button]:
        return list(self._buttons)

    @property
    def option_html(self) -> list[str]:
        """What is beside each button, in option order: its kind badge where the name does not
        say it, any warning; ``""`` where the button says it all."""
        return list(self._option_html)

    # -- choosing -------------------------------------------------------------------------
    def _click_handler(self, option_id: str) -> Callable[[Any], None]:
        def click(_button: Any) -> None:
            if self.invalid is None:  # a stale view may still click a disabled button
                self._choose(option_id, "click")

        return click

    def _choose(self, option_id: str | None, decided_by: str) -> None:
        self._report_once(lambda: self._on_choose(option_id, decided_by), decided_by)

    # -- AskCard ----------------------------------------------------------------------------
    def _disable(self) -> None:
        for button in self._buttons:
            button.disabled = True

    def _answer_closed(self) -> None:
        self._choose(None, "closed")

    def _owned(self) -> list[Any]:
        groups = list(self._button_box.children)
        return [*self._buttons, *self._badges, *groups, self._button_box, self._info, self._status]

    def mark_decided(self, option_id: str | None, decided_by: str | None, detail: str = "") -> None:
        """Show the outcome and disable every button (idempotent)."""
        with self._lock:
            self._outcome = (option_id, decided_by, detail)
            if self._status.comm is not None:
                shown = self.request.options if self.invalid is None else []
                for button, option in zip(self._buttons, shown, strict=True):
                    if option.option_id == option_id:
                        button.icon = "check"
            self._show_decision(self._decision_html(option_id, decided_by, detail))

    # -- the tool call around the card ------------------------------------------------------
    def show_with(self, call: Any) -> None:
        """The card sits in the box of tool call ``call`` (a ``ToolCallState``, read on the
        thread that applies updates): what that box already shows, the card does not repeat
        (see :meth:`request_html`)."""
        with self._lock:
            self._call = call
            if self._info.comm is not None:
                value = STYLE + self.request_html(call=call)
                if self._info.value != value:
                    self._info.value = value

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle: dict[str, Any] = super()._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = self.static_bundle()["text/plain"]
        return bundle

    def __repr__(self) -> str:
        return f"PermissionCard({self.request.title!r}, {self.outcome_text!r})"


class PermissionIndex:
    """The permission requests of a view (cards and rows) by the terminal and the tool call
    each is about: a terminal's header and its saved transcript read them on every refresh,
    so a turn of 1,000 requests must not look through all of them for each terminal."""

    def __init__(self) -> None:
        self._about: dict[tuple[str, str], list[PermissionFacts]] = {}

    def add(self, request: PermissionFacts) -> None:
        for kind, key in (("terminal", request.terminal_id), ("call", request.tool_call_id)):
            if key is not None:
                self._about.setdefault((kind, key), []).append(request)

    def about(self, terminal_id: str, call_ids: set[str]) -> list[PermissionFacts]:
        """The requests about terminal ``terminal_id`` or one of the calls ``call_ids``."""
        found = list(self._about.get(("terminal", terminal_id), ()))
        for call_id in call_ids:
            found += [r for r in self._about.get(("call", call_id), ()) if r not in found]
        return found


#: What a row says of a request a rule took but whose outcome is not pushed yet (the client
#: settles the decision right after the rule answered: a row shows it only between the two).
DECIDING = "deciding…"


class PermissionRow(PermissionFacts):
    """A permission request nobody was asked about: an ``--allow``/``--deny`` rule decided it,
    or it was settled before anything showed it. It makes no widget (a turn of 1,000 such
    requests must not open 35,000 models): its tool call's row shows it as HTML
    (:meth:`row_html`: the request as the card shows it, and the card's decision line), and
    the saved transcript says what decided it with the card's words (`PermissionFacts`).

    Its owner pushes the outcome with :meth:`mark_decided`, as to a card; ``revision`` counts
    those pushes, so the view knows when to render the row again. Any thread may call it."""

    def __init__(self, request: RequestPermissionRequest, *, outcome: Outcome | None = None):
        self.request = request
        self.invalid = invalid_options(request)
        self._call = None
        self._lock = threading.Lock()
        self._outcome = None
        self.revision = 0
        if outcome is not None:
            self.mark_decided(*outcome)

    def mark_decided(self, option_id: str | None, decided_by: str | None, detail: str = "") -> None:
        """Record the outcome (idempotent); the next refresh of the view shows it."""
        with self._lock:
            outcome = (option_id, decided_by, detail)
            if outcome != self._outcome:
                self._outcome = outcome
                self.revision += 1

    def row_html(self, call: Any = None) -> str:
        """The request and its decision, as HTML for the row of tool call ``call`` (or a row of
        its own): every agent string escaped, hidden characters made visible, as on a card."""
        outcome = self._outcome
        if outcome is None:
            status = f'<span class="acp-card-status">{e(DECIDING)}</span>'
        else:
            status = self._decision_html(*outcome)
        return (
            f'<div class="acp-card acp-card-row {NO_MATH}">{self.request_html(call=call)}'
            f'<div class="acp-card-outcome">{status}</div></div>'
        )

    @property
    def buttons(self) -> list[Any]:
        """None: nobody is asked."""
        return []

    def close_quietly(self) -> None:
        """Nothing to close (no widget); as a card's, for the owner that closes its cards."""

    close = close_quietly

    def __repr__(self) -> str:
        return f"PermissionRow({self.request.title!r}, {self.outcome_text!r})"
