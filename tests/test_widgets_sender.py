"""Who clicked: the username in the header of the front-end message being handled."""

from __future__ import annotations

from typing import Any

import pytest
from IPython.core import getipython

from acp_notebook._widgets._sender import MAX_NAME, sender


class _Kernel:
    def __init__(self, parent: Any) -> None:
        self.parent = parent

    def get_parent(self) -> Any:
        return self.parent


class _Shell:
    def __init__(self, parent: Any) -> None:
        self.kernel = _Kernel(parent)


def _with_parent(monkeypatch: pytest.MonkeyPatch, parent: Any) -> None:
    monkeypatch.setattr(getipython, "get_ipython", lambda: _Shell(parent))


def test_the_username_of_the_message_being_handled(monkeypatch: pytest.MonkeyPatch) -> None:
    _with_parent(monkeypatch, {"header": {"username": "  Alice   Smith "}})
    assert sender() == "Alice Smith"


@pytest.mark.parametrize(
    "parent",
    [None, {}, {"header": None}, {"header": {}}, {"header": {"username": 7}}, "x",
     {"header": {"username": ""}}, {"header": {"username": " \t\n"}}],
)  # fmt: skip
def test_no_name_is_empty(monkeypatch: pytest.MonkeyPatch, parent: Any) -> None:
    _with_parent(monkeypatch, parent)
    assert sender() == ""


def test_no_kernel_is_empty(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(getipython, "get_ipython", lambda: None)
    assert sender() == ""

    class Broken:
        @property
        def kernel(self) -> Any:
            raise RuntimeError("no")

    monkeypatch.setattr(getipython, "get_ipython", Broken)
    assert sender() == ""


def test_a_hostile_name_is_cut_and_its_hidden_characters_shown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _with_parent(monkeypatch, {"header": {"username": "\u202eevil" + "x" * 200}})
    name = sender()
    assert "\u202e" not in name and name.startswith("⟨U+202E RLO⟩evil")
    assert len(name) == MAX_NAME and name.endswith("x…")


def test_the_classic_notebooks_placeholder_names_nobody(monkeypatch: pytest.MonkeyPatch) -> None:
    _with_parent(monkeypatch, {"header": {"username": "username"}})  # nbclassic's kernel.js
    assert sender() == ""


def test_hidden_characters_do_not_stretch_the_name_past_its_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _with_parent(monkeypatch, {"header": {"username": "\u200b" * 64}})
    name = sender()
    assert len(name) == MAX_NAME and name.endswith("…") and "\u200b" not in name


def test_a_question_checked_off_the_clicking_thread_names_the_clicker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A field with a pattern is checked on a thread of its own; the answer still carries who
    clicked, read there from the click's context (the kernel's parent is a context variable,
    which a new thread does not inherit)."""
    import contextvars
    import threading

    from pydantic import TypeAdapter

    import acp_notebook._protocol as p
    from acp_notebook._widgets import ElicitationCard, _sender

    clicker: contextvars.ContextVar[str] = contextvars.ContextVar("clicker", default="nobody")
    monkeypatch.setattr(_sender, "sender", clicker.get)
    request = TypeAdapter(p.CreateElicitationRequest).validate_python(
        {
            "sessionId": "s1",
            "mode": "form",
            "message": "Your code?",
            "requestedSchema": {
                "type": "object",
                "properties": {"code": {"type": "string", "pattern": "^[a-z]+$"}},
            },
        }
    )
    answers: list[tuple[str, str, str]] = []

    def on_answer(action: str, content: Any, by: str) -> None:
        answers.append((action, by, _sender.sender()))

    card = ElicitationCard(request, on_answer)
    try:
        card.fields["code"].widget.value = "abc"

        def click() -> None:  # the click's handler, on the thread that got the message
            clicker.set("Bob")
            card.buttons["accept"].click()

        clicking = threading.Thread(target=click)
        clicking.start()
        clicking.join(10)
        assert card.wait_checked(10)
        assert answers == [("accept", "click", "Bob")]
    finally:
        card.close_quietly()


def test_a_named_click_has_one_wording_for_every_card() -> None:
    from acp_notebook._widgets._sender import clicked_by

    assert clicked_by("click", "Bob") == "by a click from Bob"
    assert clicked_by("panel", "Bob") == "from the side panel, by Bob"
    for by, who in [("click", ""), ("panel", ""), ("policy", "--allow x"), ("timeout", "t")]:
        assert clicked_by(by, who) is None
