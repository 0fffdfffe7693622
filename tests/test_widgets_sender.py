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
    assert "\u202e" not in name and "RLO" in name
    assert name.endswith("x") and name.count("x") == MAX_NAME - len("\u202eevil")
