"""acp_notebook._notebook._events: named events, subscribers called in order, failures contained."""

from __future__ import annotations

import logging

import pytest

from acp_notebook._notebook._events import Events


def test_subscribers_hear_their_event_in_order_with_its_arguments() -> None:
    events = Events()
    heard: list[tuple[str, tuple[object, ...]]] = []
    events.subscribe("a", lambda *args: heard.append(("first", args)))
    events.subscribe("a", lambda *args: heard.append(("second", args)))
    events.subscribe("b", lambda *args: heard.append(("b", args)))
    events.emit("a", 1, "x")
    assert heard == [("first", (1, "x")), ("second", (1, "x"))]
    events.emit("nobody listens")
    assert len(heard) == 2


def test_unsubscribe_stops_it_and_is_idempotent() -> None:
    events = Events()
    heard: list[int] = []
    unsubscribe = events.subscribe("a", heard.append)
    events.emit("a", 1)
    unsubscribe()
    unsubscribe()
    events.emit("a", 2)
    assert heard == [1]


def test_a_failing_subscriber_is_logged_and_the_rest_still_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    events = Events()
    heard: list[int] = []

    def broken(_n: int) -> None:
        raise RuntimeError("subscriber bug")

    events.subscribe("a", broken)
    events.subscribe("a", heard.append)
    with caplog.at_level(logging.ERROR, logger="acp_notebook.events"):
        events.emit("a", 7)
    assert heard == [7]
    assert "a subscriber failed" in caplog.text
    assert "subscriber bug" in caplog.text


def test_a_subscriber_may_unsubscribe_while_the_event_is_emitted() -> None:
    events = Events()
    heard: list[str] = []
    unsubscribers = []

    def once(_x: object) -> None:
        heard.append("once")
        unsubscribers[0]()

    unsubscribers.append(events.subscribe("a", once))
    events.subscribe("a", lambda _x: heard.append("after"))
    events.emit("a", None)
    events.emit("a", None)
    assert heard == ["once", "after", "after"]
