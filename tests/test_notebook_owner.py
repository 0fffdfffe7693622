"""``Notebook``, the notebook layer's owner, without a kernel or a subprocess: its agents are
embedded agents served in memory (``tests/_memory.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from _memory import memory_connector

from acp_notebook._connection._jsonrpc import for_log
from acp_notebook._magics import words
from acp_notebook._notebook._errors import (
    AgentGone,
    NoSuchAgent,
    NoSuchSession,
    SessionOfAnotherAgent,
)
from acp_notebook._notebook._failures import ConnectFailed
from acp_notebook._notebook._owner import LogLine, Notebook, shorten_base64
from acp_notebook._notebook._redact import redact


@pytest.fixture
def nb(tmp_path: Path) -> Iterator[Notebook]:
    notebook = Notebook(
        connector=lambda argv, cwd, env: memory_connector(data_dir=tmp_path / "agent")
    )
    notebook.set_panel_auto(make=False)
    yield notebook
    notebook.shutdown()


def _failing(*_args: Any, **_kwargs: Any) -> Any:
    @asynccontextmanager
    async def refuse() -> Any:
        raise OSError(2, "No such file or directory: 'nope'")
        yield  # pragma: no cover

    return refuse()


def test_connect_makes_the_default_and_replaces_only_once_initialized(
    nb: Notebook, tmp_path: Path
) -> None:
    events: list[tuple[str, str]] = []
    nb.events.subscribe("agent_connected", lambda h: events.append(("connected", h.name)))
    nb.events.subscribe("agent_closed", lambda h: events.append(("closed", h.name)))
    first, replaced = nb.connect("a", ["x"], str(tmp_path))
    assert replaced is None and nb.default_name() == "a" and nb.agents == {"a": first}
    with pytest.raises(ConnectFailed):
        nb.connect("a", ["nope"], str(tmp_path), connector=_failing())
    assert nb.agents == {"a": first} and first.alive  # a failed connect changes nothing
    second, replaced = nb.connect("a", ["x"], str(tmp_path))
    assert replaced is first and not first.alive and first.closed
    assert nb.agents == {"a": second}
    assert events == [("connected", "a"), ("closed", "a"), ("connected", "a")]


def test_the_notebooks_agents_are_read_under_its_pacing(nb: Notebook, tmp_path: Path) -> None:
    # each connection the notebook holds asks the kernel's pacing before a batch of lines (no
    # process global: an agent opened elsewhere in the kernel is read freely)
    handle, _ = nb.connect("a", ["x"], str(tmp_path))
    assert handle.agent.connection.pace is nb.pacing


def test_close_forgets_the_agents_sessions_and_fails_its_lookups(
    nb: Notebook, tmp_path: Path
) -> None:
    nb.connect("a", ["x"], str(tmp_path))
    b, _ = nb.connect("b", ["x"], str(tmp_path))
    named = nb.session("work", agent="a")
    assert nb.name_of(named.session) == "work" and nb.named("work") == named
    nb.close("a")
    assert nb.sessions == [] and nb.name_of(named.session) is None
    with pytest.raises(NoSuchAgent) as gone:
        nb.agent("a")
    assert (gone.value.name, gone.value.known, gone.value.closed) == ("a", ("b",), "a")
    assert nb.default_name() == "b" and nb.agent() is b
    with pytest.raises(NoSuchSession) as no_session:
        nb.named("work")
    assert no_session.value.known == ()
    assert words(gone.value, nb) == "no agent named 'a' (it was closed); connected: 'b'"


def test_sessions_by_name_and_by_agent(nb: Notebook, tmp_path: Path) -> None:
    nb.connect("a", ["x"], str(tmp_path))
    nb.connect("b", ["x"], str(tmp_path))
    default = nb.session("default")
    assert default.agent == "b"  # the default agent: the one connected last
    assert nb.session("default") is default  # reused
    assert nb.session("default", new=True).session is not default.session
    assert nb.session("a").agent == "a"  # a session named after an agent talks to it
    with pytest.raises(SessionOfAnotherAgent) as clash:
        nb.session("a", agent="b")
    assert (clash.value.name, clash.value.agent, clash.value.wanted) == ("a", "a", "b")
    with pytest.raises(NoSuchAgent) as unknown:
        nb.session("x", agent="nobody")
    assert unknown.value.known == ("a", "b")


def test_resume_names_the_replayed_session_and_refuses_an_unknown_id(
    nb: Notebook, tmp_path: Path
) -> None:
    from acp_notebook._connection._errors import RpcError

    nb.connect("a", ["x"], str(tmp_path))
    first = nb.session("default")
    sid = first.session.id

    async def talk() -> None:
        turn = await first.session.prompt("remember this")
        await turn.wait()

    nb.agent("a").io.call(talk)
    nb.connect("b", ["x"], str(tmp_path))  # another agent process, the same session store
    again = nb.resume("again", sid, agent="b")
    assert (again.name, again.agent, again.session.id) == ("again", "b", sid)
    assert again.session is not first.session
    assert nb.session("again") is again  # named here from now on
    replayed = again.session.state.messages.values()
    assert any("remember this" in m.text for m in replayed)  # the history came back
    with pytest.raises(RpcError):
        nb.resume("nope", "no-such-session", agent="b")
    assert "nope" not in [named.name for named in nb.sessions]


def test_an_exited_agent_is_gone_with_its_status(nb: Notebook, tmp_path: Path) -> None:
    handle, _ = nb.connect("a", ["x"], str(tmp_path))
    handle.io.call(handle._stop.set)  # the agent's connection ends by itself
    handle._done.result(10)
    with pytest.raises(AgentGone) as gone:
        nb.live(handle)
    assert gone.value.name == "a" and gone.value.exit_status == "exited"
    assert "has exited (exited)" in words(gone.value, nb)
    assert nb.agent("a") is handle  # exited, not closed: still listed for its stderr


def test_reconnect_starts_it_again_with_its_environment(nb: Notebook, tmp_path: Path) -> None:
    seen: list[dict[str, str]] = []
    nb.connector = lambda argv, cwd, env: (seen.append(dict(env)), memory_connector())[1]
    old, _ = nb.connect("a", ["x"], str(tmp_path), env={"TOKEN": "s3cret-token"})
    fresh, replaced = nb.reconnect("a", {"MORE": "1"})
    assert replaced is old and fresh.env == {"TOKEN": "s3cret-token", "MORE": "1"}
    assert fresh.argv == ["x"] and fresh.cwd == str(tmp_path)


def test_log_lines_shorten_base64_and_redact_env_values(nb: Notebook, tmp_path: Path) -> None:
    handle, _ = nb.connect("a", ["x"], str(tmp_path), env={"TOKEN": "s3cret-token"})
    handle.agent.connection.log.append(("recv", {"data": "QUJD" * 40, "note": "s3cret-token"}))
    *_, last = nb.log("a", 3)
    assert isinstance(last, LogLine) and last.direction == "recv"
    assert "s3cret-token" not in last.text and "***" in last.text
    assert "(+136 chars)" in last.text and str(last).startswith("<- {")
    first = nb.log("a", 50)[0]
    assert str(first).startswith('-> {"jsonrpc": "2.0"') and "initialize" in first.text
    assert nb.log("a", 1, compact=True)[0].text.startswith('{"data":"QUJD')


def test_log_hides_the_api_key_sent_with_a_sign_in_and_wherever_it_is_echoed(
    nb: Notebook, tmp_path: Path
) -> None:
    handle, _ = nb.connect("a", ["x"], str(tmp_path))
    log = handle.agent.connection.log
    huge = "AIzaHuge-" + "k" * 5000  # its line is over LOG_WHOLE_BYTES: the log keeps a copy
    for sent in ({"api-key": "k1"}, {"api-key": "AIzaSecret-123", "other": 1}, {"api-key": huge}):
        params = {"methodId": "gemini-api-key", "_meta": sent}
        message = {"jsonrpc": "2.0", "id": 9, "method": "authenticate", "params": params}
        log.append(("send", for_log(message) if sent["api-key"] is huge else message))
    log.append(("recv", {"jsonrpc": "2.0", "id": 9, "error": {"message": "bad AIzaSecret-123"}}))
    short, other, shortened, echoed = (line.text for line in nb.log("a", 4))
    assert '"_meta": {"api-key": "***"}' in short and "k1" not in short
    assert '"api-key": "***", "other": 1' in other and "AIzaSecret" not in other
    assert '"api-key": "***"' in shortened and "AIzaHuge" not in shortened
    assert "AIzaSecret" not in echoed and "bad ***" in echoed
    assert log[-3][1]["params"]["_meta"]["api-key"] == "AIzaSecret-123"  # left as it was


def test_redact_and_shorten() -> None:
    assert redact("a s3cret b ab", {"K": "s3cret", "SHORT": "ab"}) == "a *** b ab"
    text = '{"data": "' + "A" * 100 + '"}'
    assert shorten_base64(text) == '{"data":"' + "A" * 24 + '…(+76 chars)"}'


def test_shutdown_closes_every_agent_and_stops_the_io_thread(nb: Notebook, tmp_path: Path) -> None:
    a, _ = nb.connect("a", ["x"], str(tmp_path))
    io = nb.io
    nb.shutdown()
    assert nb.agents == {} and not a.alive and io.stopped
    assert nb.io is not io  # a later use starts a new one


def test_the_panel_rendered_by_the_labextension_says_the_extension_is_here() -> None:
    from acp_notebook._widgets import AgentPanel

    class Panel:  # what _sidepanel attaches: the SidePanel holds its AgentPanel as .panel
        def __init__(self) -> None:
            self.panel = AgentPanel()

    nb = Notebook()
    holder = Panel()
    try:
        assert nb.extension is None
        nb.attach_panel(holder)
        nb.extension_missing()
        assert nb.extension is False
        holder.panel._handle_front_end_msg(holder.panel, {"type": "rendered"}, [])
        assert nb.extension is True  # another client with the extension: seen wins
        nb.extension_missing()
        assert nb.extension is True
    finally:
        holder.panel.close()
        nb.shutdown()


def test_a_panel_no_front_end_renders_tells_the_kernel_the_extension_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import time

    from acp_notebook._notebook import _owner
    from acp_notebook._widgets import AgentPanel

    class Panel:
        def __init__(self) -> None:
            self.panel = AgentPanel()

    monkeypatch.setattr(_owner, "PANEL_WAIT", 0.05)
    made: list[Panel] = []
    quiet, shown = Notebook(), Notebook()
    try:
        for nb in (quiet, shown):
            nb.cell_started("cell-1")  # a cell a front end ran (it came with a cell id)
            made.append(Panel())
            nb.attach_panel(made[-1])
        made[1].panel._handle_front_end_msg(made[1].panel, {"type": "rendered"}, [])
        deadline = time.monotonic() + 10
        while quiet.extension is None and time.monotonic() < deadline:
            time.sleep(0.01)  # polls the condition; the deadline is a guard
        assert quiet.extension is False
        assert shown.extension is True
        headless = Notebook()  # no cell id, no widget front end: nothing is concluded
        made.append(Panel())
        headless.attach_panel(made[-1])
        time.sleep(0.2)  # the subject: four times the wait passes and nothing is decided
        assert headless.extension is None
        headless.shutdown()
    finally:
        for holder in made:
            holder.panel.close()
        quiet.shutdown()
        shown.shutdown()


def test_the_classic_notebooks_panel_answers_without_a_sidebar(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The nbextension holds the panel's model but has no sidebar: the kernel learns that the
    extension's views render here (so its terminals stay live), while ``%acp panel`` and the
    cards keep to the cell (the panel is not rendered)."""
    import time

    from acp_notebook._notebook import _owner
    from acp_notebook._widgets import AgentPanel

    class Panel:
        def __init__(self) -> None:
            self.panel = AgentPanel()

    monkeypatch.setattr(_owner, "PANEL_WAIT", 0.05)
    nb = Notebook()
    holder = Panel()
    seen: list[bool] = []
    try:
        nb.cell_started("cell-1")
        holder.panel.on_rendered(lambda: seen.append(True))
        nb.attach_panel(holder)
        holder.panel._handle_front_end_msg(holder.panel, {"type": "rendered", "sidebar": False}, [])
        assert seen == [True] and nb.extension is True
        assert holder.panel.answered and not holder.panel.rendered
        time.sleep(0.2)  # the subject: four times the panel's wait passes, nothing changes
        assert nb.extension is True and not nb.unstyled
    finally:
        holder.panel.close()
        nb.shutdown()


def test_a_view_on_an_unstyled_page_keeps_live_terminals_and_shows_the_turn_once() -> None:
    """VS Code with the nbextension: terminals render (a ``ready`` came), but no stylesheet of
    ours hides the transcript while the live view shows, so the transcript replaces the view
    when the turn ends, and the view's terminals are not switched to text."""
    from acp_notebook._notebook._start import shows_text

    class View:
        text_terminals = False
        switched = 0

        def use_text_terminals(self) -> None:
            self.switched += 1

    class Run:
        view = View()

    nb = Notebook()
    try:
        run: Any = Run()
        nb.extension_seen()
        assert not shows_text(nb, run)
        nb.extension_seen(unstyled=True)
        assert nb.unstyled and nb.extension is True
        assert shows_text(nb, run) and run.view.switched == 0
        nb.extension_seen()  # a later styled view does not make the page styled again
        assert nb.unstyled
    finally:
        nb.shutdown()


def test_a_panel_on_an_unstyled_page_says_so_for_turns_without_terminals() -> None:
    """VS Code with the nbextension: its panel model says the page lacks our styles, so a turn
    that opens no terminal (no ``ready`` to say it) shows once too."""
    from acp_notebook._widgets import AgentPanel

    class Panel:
        def __init__(self) -> None:
            self.panel = AgentPanel()

    nb = Notebook()
    holder = Panel()
    try:
        nb.attach_panel(holder)
        message = {"type": "rendered", "sidebar": False, "unstyled": True}
        holder.panel._handle_front_end_msg(holder.panel, message, [])
        assert nb.extension is True and nb.unstyled
        assert not holder.panel.rendered
    finally:
        holder.panel.close()
        nb.shutdown()
