"""PermissionCard: rendering of subjects, buttons, clicks, countdown, fail-closed paths."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from acp_notebook._client._permission import PermissionDecision
from acp_notebook._protocol import PermissionOption, RequestPermissionRequest
from acp_notebook._widgets import PermissionCard
from acp_notebook._widgets._card import button_style, option_badge_html
from acp_notebook._widgets._parts import STYLE

OPTIONS = [
    {"optionId": "yes", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "always", "name": "Always allow", "kind": "allow_always"},
    {"optionId": "no", "name": "Reject", "kind": "reject_once"},
    {"optionId": "never", "name": "Never", "kind": "reject_always"},
    {"optionId": "other", "name": "Ask later", "kind": "_custom_later"},
]

DIFF = {
    "type": "diff",
    "changes": [{"operation": "modify", "path": "src/app.py"}],
    "patch": {
        "format": "git_patch",
        "text": "diff --git a/src/app.py b/src/app.py\n--- a/src/app.py\n+++ b/src/app.py\n"
        "@@ -1 +1 @@\n-debug = False\n+debug = True\n",
    },
}


def request(subject: dict[str, Any] | None = None, **extra: Any) -> RequestPermissionRequest:
    payload: dict[str, Any] = {"sessionId": "s1", "title": "Run a command", "options": OPTIONS}
    if subject is not None:
        payload["subject"] = subject
    payload.update(extra)
    return RequestPermissionRequest.model_validate(payload)


def command(cmd: str = "ls -la", cwd: str = "/work") -> dict[str, Any]:
    return {"type": "command", "command": cmd, "cwd": cwd, "toolCallId": "c1", "terminalId": "t1"}


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str | None, str]] = []
        self.called = threading.Event()

    def __call__(self, option_id: str | None, decided_by: str) -> None:
        self.calls.append((option_id, decided_by))
        self.called.set()


@pytest.fixture
def make_card() -> Iterator[Callable[..., tuple[PermissionCard, Recorder]]]:
    made: list[PermissionCard] = []

    def make(
        req: RequestPermissionRequest | None = None, **kwargs: Any
    ) -> tuple[PermissionCard, Recorder]:
        rec = Recorder()
        card = PermissionCard(req or request(command()), rec, **kwargs)
        made.append(card)
        return card, rec

    yield make
    for card in made:
        card.close()


def test_one_button_per_option_styled_by_kind(make_card: Callable[..., Any]) -> None:
    card, _ = make_card()
    assert [b.description for b in card.buttons] == [o["name"] for o in OPTIONS]
    assert [b.button_style for b in card.buttons] == [
        "success",
        "success",
        "danger",
        "danger",
        "",
    ]
    assert button_style("_custom") == "" and button_style("future_kind") == ""
    assert button_style("allow_forever") == ""  # an unknown kind is neutral, whatever its name
    assert not any(b.disabled for b in card.buttons)
    # the persistent kinds look different from the one-time ones
    classes = [set(b._dom_classes) for b in card.buttons]
    assert "acp-kind-always" in classes[1] and "acp-kind-always" not in classes[0]
    assert "acp-kind-always" in classes[3] and "acp-kind-unknown" in classes[4]


def test_a_button_says_its_kind_once(make_card: Callable[..., Any]) -> None:
    # Issue 25, finding 16: "Allow once [allow once]" said it twice. A name that says its kind
    # gets no badge (the colour and the tooltip say it); an unknown kind keeps one.
    card, _ = make_card()
    badges = card.option_html
    assert badges[:4] == ["", "", "", ""]  # Allow once, Always allow, Reject, Never
    assert ">unknown kind</span>" in badges[4] and "acp-kind-unknown" in badges[4]
    tips = [b.tooltip for b in card.buttons]
    assert tips == ["allow once", "allow always", "reject once", "reject always", "_custom_later"]
    # each button sits in one box, with a badge only where it adds something
    for group, button in zip(card._button_box.children, card.buttons, strict=True):
        assert group.children[0] is button
    assert [len(g.children) for g in card._button_box.children] == [1, 1, 1, 1, 2]
    text = card.static_bundle()["text/plain"]
    assert (
        "options: Allow once [allow once], Always allow [allow always], Reject [reject once], "
        "Never [reject always], Ask later [unknown kind: _custom_later]"
    ) in text
    html = card.static_bundle()["text/html"]
    assert "Always allow" in html and "unknown kind" in html and ">allow always<" not in html


def test_closing_a_card_closes_its_badges(make_card: Callable[..., Any]) -> None:
    card, _ = make_card()
    parts = [
        *card._button_box.children,
        *(c for g in card._button_box.children for c in g.children),
    ]
    card.close()
    assert all(p.comm is None for p in parts)


def test_click_reports_the_option_once_and_disables(make_card: Callable[..., Any]) -> None:
    card, rec = make_card()
    card.buttons[2].click()
    card.buttons[0].click()  # a second click (or a stale view) must not answer again
    assert rec.calls == [("no", "click")]
    assert all(b.disabled for b in card.buttons)
    card.mark_decided("no", "click")
    assert card.outcome_text == "Rejected: Reject - by a click · reject once"
    assert "Rejected: Reject" in card.status_html
    card.close()
    assert rec.calls == [("no", "click")]  # closing after a decision asks nothing more


def test_closing_an_open_card_fails_closed(make_card: Callable[..., Any]) -> None:
    card, rec = make_card()
    card.close()
    assert rec.calls == [(None, "closed")]
    assert card.comm is None and all(b.comm is None for b in card.buttons)


def test_countdown_reaching_zero_fails_closed(make_card: Callable[..., Any]) -> None:
    _card, rec = make_card(timeout=0.2)
    assert rec.called.wait(10), "the timeout never fired"
    assert rec.calls == [(None, "timeout")]


def test_countdown_label_then_decision_stops_it(make_card: Callable[..., Any]) -> None:
    labels: list[str] = []
    shown = threading.Event()
    card, rec = make_card(timeout=30)

    def seen(change: dict[str, Any]) -> None:
        labels.append(change["new"])
        shown.set()

    card._status.observe(seen, "value")
    if "cancels in" not in card.status_html:
        assert shown.wait(10)
    assert re.search(r"cancels in \d+ s", card.status_html + "".join(labels))
    card.mark_decided("yes", "policy", "--allow 'ls *'")
    assert card.outcome_text == "Approved: Allow once - by policy --allow 'ls *' · allow once"
    assert all(b.disabled for b in card.buttons)
    assert card.buttons[0].icon == "check"
    card.close()
    assert rec.calls == []  # decided by the policy: the card never answered


@pytest.mark.parametrize(
    ("option_id", "decided_by", "detail", "text"),
    [
        (None, "timeout", "", "Cancelled - no answer before the timeout"),
        (None, "cancel", "", "Cancelled - the turn was cancelled"),
        ("always", "panel", "", "Approved: Always allow - from the side panel · allow always"),
        ("other", "click", "", "Chose: Ask later - by a click · unknown kind"),
        (None, "closed", "", "Cancelled - the card was closed"),
        (None, "error", "handler raised X", "Cancelled - the permission handler failed"),
    ],
)
def test_mark_decided_says_what_and_by_what(
    make_card: Callable[..., Any], option_id: str | None, decided_by: str, detail: str, text: str
) -> None:
    card, rec = make_card()
    card.mark_decided(option_id, decided_by, detail)
    assert card.outcome_text.startswith(text)
    assert all(b.disabled for b in card.buttons)
    card.close()
    assert rec.calls == []


def test_already_decided_decision_renders_decided(make_card: Callable[..., Any]) -> None:
    decision = PermissionDecision(request(command()))
    decision.settle("no", "policy", "--deny 'rm *'")
    rec = Recorder()
    outcome = (decision.option_id, decision.decided_by, decision.detail)
    card = PermissionCard(decision.request, rec, timeout=0.05, outcome=outcome)
    try:
        assert all(b.disabled for b in card.buttons)
        assert card.outcome_text == "Rejected: Reject - by policy --deny 'rm *' · reject once"
    finally:
        card.close()
    assert rec.calls == []


def test_command_hidden_characters_are_made_visible(make_card: Callable[..., Any]) -> None:
    cmd = "echo safe\x1b[2K\rrm -rf ~ \u202ecod.exe"
    card, _ = make_card(request(command(cmd, "/tmp/\u2066x")))
    html = card._info.value
    assert "\x1b" not in html and "\u202e" not in html and "\r" not in html and "\u2066" not in html
    assert "⟨ESC⟩" in html and "⟨CR⟩" in html and "⟨U+202E RLO⟩" in html and "⟨U+2066 LRI⟩" in html
    assert 'class="acp-card-warning"' in html
    text = card.static_bundle()["text/plain"]
    assert "warning: hidden characters made visible: ESC, CR, U+202E RLO, U+2066 LRI" in text
    assert "\x1b" not in text


def test_description_and_option_kinds_show_hidden_characters(
    make_card: Callable[..., Any],
) -> None:
    options = [{"optionId": "x", "name": "Go", "kind": "_vendor\u202ekind"}]
    req = request(command(), description="first \u202eline\x1b[2K\nsecond", options=options)
    card, _ = make_card(req)
    card.mark_decided("x", "handler", "handler said \u202e\x07")
    bundle = card.static_bundle()
    for where, out in (("live", card._info.value + card.status_html), *bundle.items()):
        assert "\u202e" not in out and "\x1b" not in out and "\x07" not in out, where
    text = bundle["text/plain"]
    assert "  first ⟨U+202E RLO⟩line⟨ESC⟩[2K\n  second" in text  # the newline is kept
    assert "options: Go [unknown kind: _vendor⟨U+202E RLO⟩kind]" in text
    assert "by the permission handler (handler said ⟨U+202E RLO⟩⟨BEL⟩)" in text
    assert card.buttons[0].tooltip == "_vendor⟨U+202E RLO⟩kind"


def test_permission_decision_repr_is_short_and_deterministic() -> None:
    decision = PermissionDecision(request(command(), title="Run `ls`?"))
    assert repr(decision) == "<PermissionDecision 'Run `ls`?' pending>"
    decision.settle("yes", "policy", "--allow 'ls*'")
    assert repr(decision) == "<PermissionDecision 'Run `ls`?' allow_once by policy --allow 'ls*'>"
    assert str([decision]) == f"[{decision!r}]"
    timed_out = PermissionDecision(request(command(), title="Run \u202e?"))
    timed_out.settle(None, "timeout", "no answer before the timeout")
    assert repr(timed_out) == (
        "<PermissionDecision 'Run \\u202e?' cancelled by timeout (no answer before the timeout)>"
    )
    for shown in (repr(decision), repr(timed_out)):
        assert "meta" not in shown and not re.search(r"0x[0-9a-f]+", shown)


def test_make_visible_modes() -> None:
    from acp_notebook._protocol._visible import make_visible, visible_text

    text = "a\r\nb\tc\n\r\x1b\u202e漢字 👨\u200d💻"
    strict = make_visible(text)
    assert strict.text == "a⟨CR⟩⟨LF⟩\nb⟨TAB⟩c⟨LF⟩\n⟨CR⟩⟨ESC⟩⟨U+202E RLO⟩漢字 👨⟨U+200D ZWJ⟩💻"
    assert strict.hidden == ("CR", "LF", "TAB", "ESC", "U+202E RLO", "U+200D ZWJ")
    # layout kept (CR LF is a line break, a lone CR is not), joiners marked
    lines = "a\nb\tc\n⟨CR⟩⟨ESC⟩⟨U+202E RLO⟩漢字 👨⟨U+200D ZWJ⟩💻"
    assert visible_text(text, multiline=True) == lines
    assert visible_text(text, prose=True) == lines.replace("⟨U+200D ZWJ⟩", "\u200d")
    assert visible_text(lines, multiline=True) == lines  # markers stay as they are


def test_plain_command_has_no_warning(make_card: Callable[..., Any]) -> None:
    card, _ = make_card()
    assert 'class="acp-card-warning"' not in card._info.value
    assert "$ ls -la" in card._info.value


def test_tool_call_subject_shows_its_diff(make_card: Callable[..., Any]) -> None:
    subject = {
        "type": "tool_call",
        "toolCall": {
            "toolCallId": "c9",
            "title": "Edit <app>",
            "kind": "edit",
            "locations": [{"path": "src/app.py", "line": 1}],
            "content": [DIFF],
        },
    }
    card, _ = make_card(request(subject))
    html = card._info.value
    assert "Edit &lt;app&gt;" in html and "<app>" not in html
    assert 'class="acp-diff-add"' in html and "+debug = True" in html
    assert "src/app.py:1" in html
    assert card.tool_call_id == "c9"
    text = card.static_bundle()["text/plain"]
    assert "Tool call: Edit <app> [edit]\n" in text  # no snapshot status: the card has its own
    assert "diff: modify src/app.py (+1 -1)" in text


def test_unknown_subject_is_shown_as_escaped_json(make_card: Callable[..., Any]) -> None:
    card, _ = make_card(request({"type": "_browser", "url": "<img src=x onerror=alert(1)>"}))
    html = card._info.value
    assert "&lt;img src=x onerror=alert(1)&gt;" in html and "<img" not in html
    assert card.tool_call_id is None


def test_title_and_description_are_escaped(make_card: Callable[..., Any]) -> None:
    req = request(
        command(), title="<script>alert(1)</script>", description="<b>bold</b>\nsecond line"
    )
    card, _ = make_card(req)
    bundle = card.static_bundle()
    for html in (card._info.value, bundle["text/html"]):
        assert "<script>alert" not in html and "<b>bold" not in html
        assert "&lt;script&gt;" in html and "&lt;b&gt;bold" in html
    assert "Permission request: <script>alert(1)</script>" in bundle["text/plain"]
    assert "  second line" in bundle["text/plain"]


def test_static_bundle_is_deterministic(make_card: Callable[..., Any]) -> None:
    one, _ = make_card()
    two, _ = make_card()
    for card in (one, two):
        card.mark_decided("yes", "click")
    assert one.static_bundle() == two.static_bundle()
    text = one.static_bundle()["text/plain"]
    assert "0x" not in text and "t1" not in text and "c1" not in text  # no ids, no addresses
    assert text.endswith("decision: Approved: Allow once - by a click · allow once")
    assert one._repr_mimebundle_()["text/plain"] == text


def test_a_failing_callback_does_not_escape(make_card: Callable[..., Any]) -> None:
    def broken(option_id: str | None, decided_by: str) -> None:
        raise RuntimeError("boom")

    card = PermissionCard(request(command()), broken)
    try:
        card.buttons[0].click()  # logged, not raised into the comm handler
        assert all(b.disabled for b in card.buttons)
        assert "could not be sent" in card.status_html  # and the card says so
    finally:
        card.close()


def test_close_quietly_reports_nothing(make_card: Callable[..., Any]) -> None:
    card, rec = make_card(timeout=30)
    card.close_quietly()
    assert rec.calls == [] and card.comm is None


def test_a_click_during_construction_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    """A front end may click a button as soon as its model is announced, while the card is
    still being built in the I/O thread. That click must still reach the owner (this race
    once lost clicks in the kernel tests)."""
    import ipywidgets

    from acp_notebook._widgets import _card

    real_button = ipywidgets.Button
    made: list[Any] = []

    def button_after_clicking_the_first(**kwargs: Any) -> Any:
        if len(made) == 1:
            made[0].click()  # lands while the card is still building its other buttons
        made.append(real_button(**kwargs))
        return made[-1]

    monkeypatch.setattr(_card.ipywidgets, "Button", button_after_clicking_the_first)
    rec = Recorder()
    card = PermissionCard(request(command()), rec)
    monkeypatch.setattr(_card.ipywidgets, "Button", real_button)
    try:
        assert rec.calls == [("yes", "click")]
        # every button ends up disabled, including those made after the click
        assert len(card.buttons) == len(OPTIONS) and all(b.disabled for b in card.buttons)
    finally:
        card.close()
    assert rec.calls == [("yes", "click")]  # closing after the click asks nothing more


def test_a_failing_card_update_still_reports_the_click(make_card: Callable[..., Any]) -> None:
    card, rec = make_card()

    class Broken:
        @property
        def value(self) -> str:
            return ""

        @value.setter
        def value(self, _v: str) -> None:
            raise RuntimeError("the status widget is gone")

    status = card._status
    card._status = Broken()
    try:
        card.buttons[1].click()  # the card cannot show "answer sent", but the answer is sent
        assert rec.calls == [("always", "click")]
    finally:
        card._status = status


def test_the_settled_line_names_the_kind_chosen(make_card: Callable[..., Any]) -> None:
    card, _ = make_card()
    card.mark_decided("always", "click")
    assert card.outcome_text == "Approved: Always allow - by a click · allow always"
    status = card.status_html
    # the line itself, then the kind as a badge beside it
    assert '<span class="acp-card-decision"><b>Approved: Always allow - by a click</b></span>' in (
        status
    )
    assert "acp-card-decision-kind" in status and ">allow always</span>" in status
    assert "acp-kind-always" in status
    logged = PermissionDecision(card.request)
    logged.settle("always", "click")
    assert repr(logged).endswith("allow_always by click>")  # the log says the same kind
    cancelled, _ = make_card()
    cancelled.mark_decided(None, "cancel")
    assert "acp-card-decision-kind" not in cancelled.status_html


# -- issue 11: what a person reads on a card -----------------------------------------------------


def edit_subject(status: str = "pending") -> dict[str, Any]:
    return {
        "type": "tool_call",
        "toolCall": {
            "toolCallId": "c9",
            "title": "Write app.py",
            "kind": "edit",
            "status": status,
            "content": [DIFF],
        },
    }


def test_a_decided_tool_call_card_shows_no_pending_state(make_card: Callable[..., Any]) -> None:
    # The subject is a snapshot taken when the agent asked: its "pending" is not the card's state.
    card, _ = make_card(request(edit_subject()))
    card.mark_decided("yes", "click")
    shown = card._info.value.replace(STYLE, "") + card.status_html
    assert "pending" not in shown and "○" not in shown
    assert "Approved: Allow once" in card.status_html
    text = "\n".join(card.transcript_text())
    assert "pending" not in text
    assert "decision: Approved: Allow once - by a click · allow once" in text
    assert "pending" not in card.transcript_html()


def test_a_card_has_no_ids_fold(make_card: Callable[..., Any]) -> None:
    # Issue 25, finding 16: every card had an "ids" fold a person reads nothing in.
    card, _ = make_card(request(command()))
    info = card._info.value
    assert "<summary>ids</summary>" not in info and "<code>t1</code>" not in info


def test_countdown_says_when_it_will_cancel(make_card: Callable[..., Any]) -> None:
    labels: list[str] = []
    shown = threading.Event()
    card, _ = make_card(timeout=30)

    def seen(change: dict[str, Any]) -> None:
        labels.append(change["new"])
        shown.set()

    card._status.observe(seen, "value")
    if "cancels in" not in card.status_html:
        assert shown.wait(10)
    seen_labels = card.status_html + "".join(labels)
    assert re.search(r"no answer yet: cancels in \d+ s", seen_labels)
    assert "cancelled" not in seen_labels  # not past tense while it counts down


def test_a_tool_calls_command_is_on_the_card_as_the_policy_judges_it(
    make_card: Callable[..., Any],
) -> None:
    # a v1 agent's execute tool call: the title is the agent's words, the command is what runs
    # (and what --allow/--deny judge), so the card shows it, escaped and made visible
    call = {
        "toolCallId": "c3",
        "title": "Run tests",
        "kind": "execute",
        "rawInput": {"command": "pytest <x> && rm -rf ~ \u202eoops"},
    }
    card, _ = make_card(request({"type": "tool_call", "toolCall": call}))
    html = card._info.value
    assert "$ pytest &lt;x&gt; &amp;&amp; rm -rf ~ ⟨U+202E RLO⟩oops" in html
    assert "<x>" not in html and "\u202e" not in html
    text = card.static_bundle()["text/plain"]
    assert "  command: pytest <x> && rm -rf ~ ⟨U+202E RLO⟩oops\n" in text
    assert "warning: hidden characters made visible: U+202E RLO" in text
    # a list is shown joined, as the policy reads it
    call["rawInput"] = {"command": ["bash", "-lc", "ls -la"]}
    card, _ = make_card(request({"type": "tool_call", "toolCall": call}))
    assert "  command: bash -lc 'ls -la'\n" in card.static_bundle()["text/plain"]
    # no command: the card says it is not known (issue 22, finding 6)
    call["rawInput"] = {"path": "a.py"}
    card, _ = make_card(request({"type": "tool_call", "toolCall": call}))
    assert "  command: not known: " in card.static_bundle()["text/plain"]


def test_finding_6_an_execute_call_whose_command_is_not_known_says_so(
    make_card: Callable[..., Any],
) -> None:
    # Kimi: the title names a command, the input does not; whatever the title says, the card
    # says the command that runs is not known (the title is the agent's words, escaped)
    call = {
        "toolCallId": "c4",
        "title": "Shell: <b>ls</b>\u202e",
        "kind": "execute",
        "content": [{"type": "content", "content": {"type": "text", "text": "ls"}}],
    }
    card, _ = make_card(request({"type": "tool_call", "toolCall": call}))
    html = card._info.value
    assert "⚠ command not known: the agent did not send it" in html
    assert "<b>ls</b>" not in html and "\u202e" not in html
    text = card.static_bundle()["text/plain"]
    assert "  command: not known: " in text
    # several commands (Cline's rawInput.commands): each on its own line
    call["rawInput"] = {"commands": ["ls", "rm -f <x>"]}
    card, _ = make_card(request({"type": "tool_call", "toolCall": call}))
    html = card._info.value
    assert "$ ls</div>" in html and "$ rm -f &lt;x&gt;</div>" in html
    assert "not known" not in html
    assert "  command: ls\n  command: rm -f <x>\n" in card.static_bundle()["text/plain"]
    # a call that is not an execute one and names no command: nothing about a command
    call = {"toolCallId": "c5", "title": "Edit a.py", "kind": "edit", "rawInput": {"path": "a"}}
    card, _ = make_card(request({"type": "tool_call", "toolCall": call}))
    assert "not known" not in card._info.value


@pytest.mark.parametrize(
    "name, kind, badge",
    [
        ("Yes", "allow_once", ""),
        ("No", "reject_once", ""),
        ("Yes, and don't ask again", "allow_always", ""),
        # Claude names the command's words in it; a "\n" there is no "n" (no false warning)
        ("Yes, and don't ask again for printf 'compiled\\n' commands", "allow_always", ""),
        ("n", "reject_once", ""),  # a single letter answers when it stands alone
        ("Yes", "allow_always", "allow always"),  # the name does not say it lasts
        ("Allow", "reject_once", "reject once"),  # and a warning: the name misleads
        ("Later", "reject_once", "reject once"),  # the name says nothing of its effect
    ],
)
def test_a_badge_only_where_the_name_does_not_say_the_kind(
    name: str, kind: str, badge: str
) -> None:
    html = option_badge_html(PermissionOption.model_validate(
        {"optionId": "o", "name": name, "kind": kind}
    ))  # fmt: skip
    if badge:
        assert f">{badge}</span>" in html
    else:
        assert html == ""
    assert ("ALLOWS" in html or "REJECTS" in html) == (name == "Allow")


def test_a_tool_call_card_names_its_command_once() -> None:
    # claude-agent-acp: the request's title is the command, the tool call's title too, and its
    # terminal header shows it: the card asks "Run this command?" and does not repeat it.
    from acp_notebook._state import ToolCallState  # the box the card sits in

    payload = {
        "sessionId": "s1",
        "title": "rm -rf data",
        "subject": {"type": "tool_call", "toolCall": {
            "toolCallId": "c1", "title": "rm -rf data", "kind": "execute",
            "rawInput": {"command": "rm -rf data"},
        }},
        "options": [{"optionId": "y", "name": "Yes", "kind": "allow_once"}],
    }  # fmt: skip
    card = PermissionCard(RequestPermissionRequest.model_validate(payload), lambda o, b: None)
    try:
        assert card._info.value.count("rm -rf data") == 2  # alone: title and command line
        call = ToolCallState("c1")
        call.title = "rm -rf data"
        card.show_with(call)
        info = card._info.value
        assert "rm -rf data" not in info and "Run this command?" in info
        assert "command: rm -rf data" not in "\n".join(card.transcript_text(call))
        # a box whose title differs (or a second command) keeps the command on the card
        call.title = "Terminal"
        card.show_with(call)
        assert '<div class="acp-card-command">$ rm -rf data</div>' in card._info.value
    finally:
        card.close()


def test_a_card_about_run_code_shows_the_code_and_says_the_code_card_follows() -> None:
    # Issue 25, finding 5: Claude asks its own permission for mcp__notebook__run_code first; the
    # card said only that raw name, with no code.
    code = "df.describe()\nprint('<b>')"
    payload = {
        "sessionId": "s1",
        "title": "mcp__notebook__run_code",
        "subject": {"type": "tool_call", "toolCall": {
            "toolCallId": "c1", "title": "mcp__notebook__run_code", "rawInput": {"code": code},
        }},
        "options": [{"optionId": "y", "name": "Yes", "kind": "allow_once"}],
    }  # fmt: skip
    card = PermissionCard(RequestPermissionRequest.model_validate(payload), lambda o, b: None)
    try:
        info = card._info.value
        assert "run_code (MCP server &quot;notebook&quot;)" in info
        assert "mcp__notebook__run_code" not in info
        shown = "df.describe()\nprint(&#x27;&lt;b&gt;&#x27;)"  # escaped, lines kept
        assert f'<pre class="acp-card-code">{shown}</pre>' in info
        assert "the kernel's code card follows" in info
    finally:
        card.close()
