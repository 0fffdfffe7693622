"""A turn's mode line (_widgets/_mode.py) and the mode in the turn's transcripts."""

from __future__ import annotations

from collections.abc import Callable

from acp_notebook._state import SessionState
from acp_notebook._widgets import TurnView
from acp_notebook._widgets._mode import ModeLine
from acp_notebook._widgets._transcript import ModeShown, mode_text


def test_the_mode_is_read_while_the_turn_runs_and_kept_once_it_is_done() -> None:
    said: list[ModeShown | None] = [("Ask", None)]
    line = ModeLine(lambda: said[-1])
    try:
        assert line.sync(running=True) and "Ask" in line.value
        said.append(("Full access (agent-full-access)", "runs commands without asking"))
        assert line.sync(running=True)
        assert "⚠ in this mode the agent runs commands without asking" in line.value
        said.append(None)
        assert line.sync(running=False)  # done: what the turn ran in stays
        assert line.shown == said[1]
    finally:
        line.close()


def test_mode_words_escape_and_make_hidden_characters_visible() -> None:
    line = ModeLine(lambda: ("<b>x</b>\u202e", "does <i>things</i>"))
    try:
        line.sync(running=True)
        assert "<b>x</b>" not in line.value and "&lt;b&gt;x&lt;/b&gt;" in line.value
        assert "\u202e" not in line.value and "<i>" not in line.value
    finally:
        line.close()
    assert mode_text((None, "never asks before it runs a command")) == [
        "⚠ the agent never asks before it runs a command"
    ]
    assert mode_text(None) == [] and ModeLine(None).sync(running=True) is False
    done_at_once = ModeLine(lambda: ("Ask", None))  # a turn over before its first refresh
    try:
        assert done_at_once.sync(running=False) and "Ask" in done_at_once.value
    finally:
        done_at_once.close()


def test_the_turns_transcripts_say_the_mode_under_the_prompt() -> None:
    state = SessionState("s1")
    turn = state.begin_turn("do it")
    read: Callable[[], ModeShown | None] = lambda: ("Auto review (agent)", "lets a model approve")  # noqa: E731
    view = TurnView(turn, "do it", mode=read)
    try:
        bundle = view.static_bundle()
        lines = bundle["text/plain"].splitlines()
        assert lines[:3] == [
            "> do it",
            "mode: Auto review (agent)",
            "⚠ in this mode the agent lets a model approve",
        ]
        assert 'class="acp-turn-unasked"' in bundle["text/html"]
        assert view.mode_shown == ("Auto review (agent)", "lets a model approve")
    finally:
        view.close_all()
