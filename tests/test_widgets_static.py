"""_widgets/_static: the one static transcript of a terminal, for a turn and for a widget."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from acp_notebook._protocol import TerminalExitStatus
from acp_notebook._state import TerminalState
from acp_notebook._widgets import TerminalWidget, _static
from acp_notebook._widgets._static import (
    STATIC_TERMINAL_BYTES,
    render_state_tail,
    render_tail,
    terminal_transcript,
)
from acp_notebook._widgets._transcript import terminal_transcript as turn_terminal_transcript

SAMPLE = b"\x1b[32mok\x1b[0m\r\nprogress 10%\rprogress 100%\r\n"


class _NoTimer:
    def cancel(self) -> None:
        pass


def _no_timer(_delay: float, _callback: Any) -> _NoTimer:
    return _NoTimer()


@pytest.fixture
def widgets() -> Iterator[list[TerminalWidget]]:
    made: list[TerminalWidget] = []
    yield made
    for widget in made:
        widget.close()


def _pair(
    widgets: list[TerminalWidget],
    data: bytes,
    *,
    command: str,
    cwd: str,
    wire_status: dict[str, Any] | None,
    max_bytes: int = 16 * 2**20,
) -> tuple[TerminalWidget, TerminalState]:
    """The same terminal as a turn's state holds it and as a widget shown on its own."""
    term = TerminalState("t1", max_bytes=max_bytes)
    term.command, term.cwd = command, cwd
    term.append(data)
    if wire_status is not None:
        term.exit_status = TerminalExitStatus.model_validate(wire_status)
    widget = TerminalWidget(
        command=command, cwd=cwd, schedule=_no_timer, budget=None, backlog_limit=max_bytes
    )
    widgets.append(widget)
    widget.feed(data)
    widget.flush()
    if wire_status is not None:
        widget.exit_status = wire_status
    return widget, term


@pytest.mark.parametrize(
    "wire_status", [None, {"exitCode": 0}, {"exitCode": 2}, {"signal": "SIGTERM"}]
)
def test_a_widget_saves_the_transcript_a_turn_saves(
    widgets: list[TerminalWidget], wire_status: dict[str, Any] | None
) -> None:
    # There were two layouts (and two ANSI converters): a widget shown on its own wrote
    # "acp-terminal-static" HTML with the colours dropped, a turn "acp-terminal" with them.
    widget, term = _pair(widgets, SAMPLE, command="make <all>", cwd="/srv", wire_status=wire_status)
    text, html = turn_terminal_transcript(term)
    assert widget.static_bundle() == {"text/plain": text, "text/html": html}
    assert 'class="ansi-green-fg"' in html and "&lt;all&gt;" in html
    assert text.splitlines()[0] == "$ make <all>  (in /srv)"


def test_a_signal_reads_the_same_in_the_widget_and_the_turn(widgets: list[TerminalWidget]) -> None:
    # The state said "[SIGTERM]", the widget "[signal SIGTERM]".
    widget, term = _pair(
        widgets, b"x\n", command="sleep 9", cwd="", wire_status={"signal": "SIGTERM"}
    )
    assert widget.static_bundle()["text/plain"].endswith("\n[signal SIGTERM]")
    assert turn_terminal_transcript(term)[0].endswith("\n[signal SIGTERM]")


def test_a_widget_transcript_shows_hidden_characters_in_the_command(
    widgets: list[TerminalWidget],
) -> None:
    # The widget printed its command as it came; the turn showed control and bidi characters.
    widget, _term = _pair(
        widgets, b"", command="ls \u202etxt.exe\x1b[2J", cwd="/tmp", wire_status={"exitCode": 0}
    )
    text = widget.static_bundle()["text/plain"]
    assert "\u202e" not in text and "\x1b" not in text
    assert "⟨U+202E RLO⟩" in text and "⟨ESC⟩" in text


def test_dropped_bytes_are_noted_in_the_text_and_the_html(widgets: list[TerminalWidget]) -> None:
    # The widget said so in its text only ("[N earlier bytes omitted]"), not in its HTML.
    data = b"".join(b"line %d\n" % i for i in range(40))
    widget, term = _pair(widgets, data, command="seq", cwd="", wire_status=None, max_bytes=64)
    assert widget.omitted_bytes > 0 and term.omitted_bytes > 0
    bundle = widget.static_bundle()
    note = f"[… {widget.omitted_bytes} bytes omitted …]"
    assert bundle["text/plain"].splitlines()[1] == note
    assert f'<span class="acp-omitted">{note}</span>' in bundle["text/html"]


def test_render_tail_converts_only_the_end_and_counts_the_lines_before() -> None:
    line = b"0123456789" * 10 + b"\n"
    data = line * (STATIC_TERMINAL_BYTES // len(line) + 50)
    text, html = render_tail(data)
    first = text.splitlines()[0]
    assert first.startswith("… ") and "earlier lines not saved in the notebook" in first
    left_out = int(first.split()[1].replace(",", ""))
    assert left_out + len(text.splitlines()) - 1 == data.count(b"\n")
    assert html.count("\n") == text.count("\n")


def test_a_terminal_state_renders_as_its_bytes_do_once_per_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    conversions: list[int] = []
    convert = _static.ansi_to_html

    def counted(data: bytes) -> str:
        conversions.append(len(data))
        return convert(data)

    monkeypatch.setattr(_static, "ansi_to_html", counted)
    term = TerminalState("t", max_bytes=4 * STATIC_TERMINAL_BYTES)
    line = b"\x1b[32mok\x1b[0m 0123456789 progress 10%\rprogress 100%\r\n"
    for n in range(2 * STATIC_TERMINAL_BYTES // len(line)):
        term.append(line if n % 7 else line * 3)
    assert render_state_tail(term) == render_tail(term.data)
    assert render_state_tail(term) == render_tail(term.data)
    assert len(conversions) == 3  # the state's twice (the second time from the cache)
    term.append(b"more\n")
    assert render_state_tail(term) == render_tail(term.data)
    assert len(conversions) == 5
    term.append(line * (6 * STATIC_TERMINAL_BYTES // len(line)))  # old lines are dropped
    assert term.omitted_bytes > 0
    assert render_state_tail(term, keeps="x") == render_tail(term.data, keeps="x")


def test_render_tail_applies_redraws_like_the_live_view() -> None:
    # ui-tests/tests/terminal_render.spec.ts reads this same text from xterm's buffer.
    for data in (
        b"one\ntwo\nthree\ncrlf\r\nprogress 10%\rprogress 100%\n",  # from a pipe: bare \n
        b"one\r\ntwo\r\nthree\r\ncrlf\r\r\nprogress 10%\rprogress 100%\r\n",  # a PTY, ONLCR
    ):
        assert render_tail(data)[0] == "one\ntwo\nthree\ncrlf\nprogress 100%\n"
    text, html = render_tail(b"a\x1b[1;31mb\x1b[0m\r\n50%\r100%\nx\bY\n")
    assert text == "ab\n100%\nY\n"
    assert html == 'a<span class="ansi-red-intense-fg ansi-bold">b</span>\n100%\nY\n'


def test_a_listed_terminal_has_no_output_part() -> None:
    text, html = terminal_transcript(command=None, cwd=None, exit_label="running", body=None)
    assert text == "$\n[running]"
    assert "<pre" not in html and '<span class="acp-badge">running</span>' in html
