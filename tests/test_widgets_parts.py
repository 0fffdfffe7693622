"""_widgets/_parts: the shared pieces of the cards and the turn view (escaping, hidden
characters, generic payloads, links, terminal references, change-only updates, countdowns)."""

from __future__ import annotations

import threading

import ipywidgets  # type: ignore[import-untyped]

from acp_notebook._protocol import ResourceLink, TerminalToolCallContent
from acp_notebook._widgets._parts import (
    block_html,
    content_html,
    content_text,
    generic_html,
    generic_text,
    set_children,
    set_if_changed,
    start_countdown,
    tool_call_header_html,
    tool_call_header_text,
)


def test_generic_payloads_show_hidden_characters_and_are_escaped() -> None:
    payload = {"name": "invoice\u202etxt.exe", "html": "<script>"}
    text = generic_text(payload)
    assert "\u202e" not in text and "⟨U+202E RLO⟩" in text
    markup = generic_html(payload, "raw <input>")
    assert "<script>" not in markup and "&lt;script&gt;" in markup
    assert "<summary>raw &lt;input&gt;</summary>" in markup


def test_only_safe_links_are_links() -> None:
    safe = block_html(ResourceLink(type="resource_link", name="docs", uri="https://example.org/a"))
    assert (
        '<a href="https://example.org/a"' in safe and 'rel="noopener noreferrer nofollow"' in safe
    )
    unsafe = block_html(ResourceLink(type="resource_link", name="x", uri="javascript:alert(1)"))
    assert "<a " not in unsafe and "<code>javascript:alert(1)</code>" in unsafe


def test_a_terminal_reference_is_labelled_by_the_caller() -> None:
    item = TerminalToolCallContent(type="terminal", terminal_id="t<1>")
    assert (
        content_html(item) == '<div class="acp-terminal-ref">terminal: <code>terminal</code></div>'
    )
    labelled = content_html(item, lambda terminal_id: f"not started ({terminal_id})")
    assert "<code>not started (t&lt;1&gt;)</code>" in labelled
    assert content_text(item) == []  # the caller draws the terminal itself


def test_unchanged_values_and_children_send_nothing() -> None:
    html = ipywidgets.HTML("a")
    box = ipywidgets.VBox([html])
    changes: list[str] = []
    html.observe(lambda change: changes.append(change["name"]), names="value")
    box.observe(lambda change: changes.append(change["name"]), names="children")
    try:
        set_if_changed(html, "value", "a")
        set_children(box, [html])
        assert changes == []
        set_if_changed(html, "value", "b")
        set_children(box, [])
        assert changes == ["value", "children"]
    finally:
        box.close()
        html.close()


def test_a_list_is_the_same_as_the_tuple_a_trait_keeps_of_it() -> None:
    # a Dropdown keeps its options as a tuple: set from a list at every clock render of the
    # side panel (its agent picker), they were validated again each time, for nothing
    probe = ipywidgets.Dropdown(options=["a"])
    assert probe.options == ("a",)
    probe.close()
    set_to: list[object] = []

    class Picker:
        options: object = ("a", "b")

        def __setattr__(self, name: str, value: object) -> None:
            set_to.append(value)
            object.__setattr__(self, name, value)

    picker = Picker()
    set_if_changed(picker, "options", ["a", "b"])
    assert set_to == []
    set_if_changed(picker, "options", ["a", "b", "c"])
    assert set_to == [("a", "b", "c")]


def test_a_countdown_expires_once_unless_stopped() -> None:
    status = ipywidgets.HTML("")
    expired = threading.Event()
    try:
        start_countdown(
            0.05,
            lock=threading.Lock(),
            stop=threading.Event(),
            status=status,
            on_expire=expired.set,
            name="t-expire",
        ).join(10)
        assert expired.is_set()
        assert "cancels in 1 s" in status.value
        stopped = threading.Event()
        stopped.set()
        called: list[int] = []
        start_countdown(
            5,
            lock=threading.Lock(),
            stop=stopped,
            status=status,
            on_expire=lambda: called.append(1),
            name="t-stop",
        ).join(10)
        assert called == []
    finally:
        status.close()


def test_a_tool_calls_kind_and_status_read_as_words_not_protocol_names() -> None:
    # Issue 25, finding 22: "execute" and "other" were protocol jargon on every tool call.
    html = tool_call_header_html("ls -l", "execute", "in_progress", [])
    assert 'title="tool kind: execute">command</span>' in html
    assert ">in progress</span>" in html and ">execute<" not in html
    assert tool_call_header_text("ls -l", "execute", "in_progress", []) == [
        "Tool call: ls -l [command] - in progress"
    ]
    # "other" says nothing: no badge at all
    assert "acp-tool-kind" not in tool_call_header_html("lookup", "other", "completed", [])
    assert tool_call_header_text("lookup", "other", "completed", []) == [
        "Tool call: lookup - completed"
    ]
    # the kinds whose names are words already, and unknown ones (hidden characters shown), as sent
    assert ">edit</span>" in tool_call_header_html("a.py", "edit", "completed", [])
    odd = tool_call_header_html("x", "poke\u202e", "completed", [])
    assert "poke\u202e" not in odd and "acp-tool-kind" in odd
