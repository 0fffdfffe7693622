"""The side panel renders on change, not on a clock (acp_notebook/_sidepanel/_panel.py):
with nothing happening it renders no section but the clock's (background work, the log); an
agent that dies by itself, a turn and a close each render it. Without a kernel: the embedded
agent runs as a subprocess, the panel's widgets live in this process."""

from __future__ import annotations

import itertools
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import ipywidgets  # type: ignore[import-untyped]
import pytest
from _runs import start_run

from acp_notebook._notebook._facts import LogMark, log_mark, log_text
from acp_notebook._notebook._owner import Notebook
from acp_notebook._sidepanel import SidePanel, _panel, install

pytestmark = pytest.mark.process


def wait_until(check: Callable[[], bool], what: str, limit: float = 30) -> None:
    end = time.monotonic() + limit
    while not check():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        threading.Event().wait(0.01)


def made_panel(tmp_path: Path, *, shown: bool) -> SidePanel:
    nb = Notebook()
    nb.set_panel_auto(make=False)
    argv = [sys.executable, "-m", "acp_notebook.agent", "--data-dir", str(tmp_path / "data")]
    nb.connect("embedded", argv, str(tmp_path))
    install(nb)
    made = SidePanel(nb)
    if shown:
        made.panel.rendered = True  # as a front end's view of it reports
    made.start()
    return made


@pytest.fixture
def panel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SidePanel]:
    monkeypatch.setattr(_panel, "CLOCK_INTERVAL", 0.2)
    made = made_panel(tmp_path, shown=True)
    made.nb.attach_panel(made)
    try:
        yield made
    finally:
        made.close()
        made.nb.shutdown()


def idle(panel: SidePanel, seconds: float) -> tuple[int, int]:
    """The renders (full, clock) made while nothing happens for ``seconds``: an observation
    window, not a wait for something."""
    before = dict(panel.renders)
    threading.Event().wait(seconds)
    return panel.renders["full"] - before["full"], panel.renders["clock"] - before["clock"]


def test_nothing_changing_renders_only_the_clocks_sections(panel: SidePanel) -> None:
    wait_until(lambda: panel.renders["full"] >= 1, "the first render")
    before = dict(panel.renders)
    # background work's elapsed times and the log still age: two clock renders (however long
    # a loaded machine takes for them), and no full render meanwhile
    wait_until(lambda: panel.renders["clock"] >= before["clock"] + 2, "two clock renders")
    assert panel.renders["full"] == before["full"]  # the old refresher: 4 a second


def test_the_log_is_rendered_again_only_when_something_was_logged(
    panel: SidePanel, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the log's text is made from the whole protocol log (its secrets looked for, the last
    # lines serialized): an idle kernel with an agent used to make it at every clock render
    made: list[LogMark] = []  # the log's mark at each making of its text
    texts: list[str] = []

    def counted(nb: Notebook, handle: Any, *args: Any) -> str:
        made.append(log_mark(handle))
        texts.append(text := log_text(nb, handle, *args))
        return text

    monkeypatch.setattr(_panel, "log_text", counted)
    wait_until(lambda: panel.renders["full"] >= 1, "the first render")
    before = dict(panel.renders)
    wait_until(lambda: panel.renders["clock"] >= before["clock"] + 3, "three clock renders")
    run = start_run(panel.nb, "hello")
    assert run.done is not None and run.done.result(30) == "end_turn"
    wait_until(lambda: "session/prompt" in panel._log_pre.value, "the turn's messages shown")
    assert "session/prompt" in "".join(texts)
    before = dict(panel.renders)
    wait_until(lambda: panel.renders["clock"] >= before["clock"] + 3, "three more")
    assert made  # (the turn)
    # never made twice from the same log
    assert not any(b.same(a) for a, b in itertools.pairwise(made))


def test_an_idle_panel_sends_no_widget_message(
    panel: SidePanel, monkeypatch: pytest.MonkeyPatch
) -> None:
    # each clock render sets what ages, only where it changed: with no background work and
    # nothing logged, nothing did (the log's agent picker used to be sent at each render)
    sent: list[tuple[str, Any]] = []
    send = ipywidgets.Widget._send

    def counted(widget: Any, msg: Any, buffers: Any = None) -> None:
        sent.append((type(widget).__name__, msg))
        send(widget, msg, buffers)

    wait_until(lambda: panel.renders["full"] >= 1, "the first render")
    monkeypatch.setattr(ipywidgets.Widget, "_send", counted)
    before = dict(panel.renders)
    wait_until(lambda: panel.renders["clock"] >= before["clock"] + 3, "three clock renders")
    assert panel.renders["full"] == before["full"]
    assert sent == []


def test_a_panel_no_front_end_shows_ages_nothing_until_one_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # made when the first agent connects (the sidebar tab counts pending requests), also in a
    # front end without the extension: nobody sees its clock's sections, so none is rendered
    monkeypatch.setattr(_panel, "CLOCK_INTERVAL", 0.05)
    made = made_panel(tmp_path, shown=False)
    made.nb.attach_panel(made)
    try:
        wait_until(lambda: made.renders["full"] >= 1, "the first render")
        assert idle(made, 0.5) == (0, 0)  # ten clock intervals
        # a front end says it shows the panel: every section at once, then the clock's again
        made.panel._handle_front_end_msg(made.panel, {"type": "rendered"}, [])
        assert made.shows_requests
        wait_until(lambda: made.renders["full"] >= 2, "a render for the front end")
        before = made.renders["clock"]
        wait_until(lambda: made.renders["clock"] >= before + 2, "two clock renders")
    finally:
        made.close()
        made.nb.shutdown()


def test_a_turn_renders_and_then_the_panel_is_quiet_again(panel: SidePanel) -> None:
    wait_until(lambda: panel.renders["full"] >= 1, "the first render")
    before = panel.renders["full"]
    run = start_run(panel.nb, "hello")
    assert run.done is not None and run.done.result(30) == "end_turn"
    wait_until(lambda: panel.renders["full"] > before, "a render of the turn")
    wait_until(lambda: "idle" in _session_text(panel), "the session shown idle")
    full, _clock = idle(panel, 0.8)
    assert full == 0


def test_an_agent_that_dies_by_itself_is_rendered_exited(panel: SidePanel) -> None:
    wait_until(lambda: panel.renders["full"] >= 1, "the first render")
    handle = panel.nb.agent("embedded")
    assert handle.agent.process is not None
    os.kill(handle.agent.process.pid, signal.SIGKILL)  # no event: only its end tells
    wait_until(lambda: "exited" in _agents_text(panel), "the agent shown exited")
    assert 'data-state="exited"' in _agents_text(panel)


def _agents_text(panel: SidePanel) -> str:
    return "".join(row.info.value for row in panel._agent_rows.values())


def _session_text(panel: SidePanel) -> str:
    return "".join(row.info.value for row in panel._session_rows.values())
