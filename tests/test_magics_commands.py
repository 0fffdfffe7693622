"""``%acp`` / ``%%acp`` failure paths, in process (no kernel): connect timeouts and interrupts,
failed connects, busy sessions, refused or dead agents, option parsing, closed agents."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from IPython.core.error import UsageError

from acp_notebook._magics import AcpMagics, _cell, _commands, _words
from acp_notebook._notebook._owner import Notebook
from tests.kernel_driver import process_gone

PY = sys.executable


@pytest.fixture
def acp(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[SimpleNamespace]:
    """Run ``%acp`` lines in this process; what they display is kept in ``shown``."""
    nb = Notebook()
    nb.set_panel_auto(make=False)
    magics = AcpMagics(None, notebook=nb)
    monkeypatch.setattr(_commands, "embedded_agent_argv", lambda: _embedded(tmp_path))
    monkeypatch.chdir(tmp_path)
    shown: list[Any] = []
    monkeypatch.setattr(_words, "display", lambda obj, **kw: shown.append(obj))

    def start_cell(shell: Any, line: str, body: str) -> Any:
        return _cell._start_cell(nb, shell, line, body)

    try:
        yield SimpleNamespace(run=magics.acp, shown=shown, nb=nb, start_cell=start_cell)
    finally:
        nb.shutdown()


def _embedded(tmp_path: Path) -> list[str]:
    return [PY, "-m", "acp_notebook.agent", "--data-dir", str(tmp_path / "agent-data")]


def _sleeper(pid_file: Path, stderr: str = "") -> str:
    """An agent that never answers: writes its pid (and some stderr), then sleeps.

    The pid goes in under another name first, then is renamed: a test that waits for the
    file to exist must never find it empty (CI, stop 42: an interrupt landed between the
    file's creation and its write).
    """
    part = f"{pid_file}.part"
    code = (
        f"import os, sys, time; open({part!r}, 'w').write(str(os.getpid()));"
        f" os.replace({part!r}, {str(pid_file)!r});"
        f" sys.stderr.write({stderr!r}); sys.stderr.flush(); time.sleep(1000)"
    )
    return f"-- {PY} -c {code!r}"


# -- 1. connect timeout and interrupt -----------------------------------------------------------


@pytest.mark.process
def test_connect_times_out_and_stops_the_agent(acp: SimpleNamespace, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    start = time.monotonic()
    with pytest.raises(UsageError) as info:
        acp.run(f"connect --timeout 0.5 {_sleeper(pid_file, 'still thinking')}")
    assert time.monotonic() - start < 10
    message = str(info.value)
    assert "did not answer `initialize` within 0.5 s" in message
    assert "\n" not in message and "its stderr is shown above" in message
    (box,) = acp.shown
    plain = box._repr_mimebundle_()["text/plain"]
    assert "did not answer `initialize` within 0.5 s" in plain and "still thinking" in plain
    assert process_gone(int(pid_file.read_text()))
    assert not acp.nb.agents


@pytest.mark.process
def test_interrupted_connect_stops_the_agent(acp: SimpleNamespace, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"

    def interrupt_once_started() -> None:
        deadline = time.monotonic() + 60
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGINT)  # what Interrupt does to a kernel

    threading.Thread(target=interrupt_once_started, daemon=True).start()
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        acp.run(f"connect {_sleeper(pid_file)}")
    assert time.monotonic() - start < 15
    assert process_gone(int(pid_file.read_text()))
    assert not acp.nb.agents


# -- 2. a failed connect is an error, and says what the agent did ---------------------------------


@pytest.mark.process
def test_failed_connect_raises_and_names_what_the_agent_wrote(acp: SimpleNamespace) -> None:
    with pytest.raises(UsageError) as info:
        acp.run(f"""connect -- {PY} -c "print('not json')" """)
    message = str(info.value)
    assert "could not connect" in message and "exited with code 0" in message
    assert "a line that is not JSON-RPC: 'not json'" in message
    # one problem, no stderr: the one line says it all, and no box above repeats it (issue 25,
    # finding 20); with stderr the box shows the whole story
    assert acp.shown == []
    with pytest.raises(UsageError) as info:
        acp.run(f"""connect -- {PY} -c "import sys; print('not json'); sys.exit('it broke')" """)
    assert "its stderr is shown above" in str(info.value)
    (box,) = acp.shown
    bundle = box._repr_mimebundle_()
    assert bundle["text/plain"].startswith("Could not connect")
    assert "not JSON-RPC" in bundle["text/plain"] and "acp-error" in bundle["text/html"]
    assert "it broke" in bundle["text/plain"]


# -- 3. a failed reconnect keeps the agent that works ---------------------------------------------


@pytest.mark.process
def test_failed_reconnect_keeps_the_old_agent_and_a_good_one_replaces_it(
    acp: SimpleNamespace, capsys: pytest.CaptureFixture[str]
) -> None:
    acp.run("connect --name a2")
    old = acp.nb.agents["a2"]
    with pytest.raises(UsageError, match="there is no program 'no-such-thing-acp-test'"):
        acp.run("connect --name a2 -- no-such-thing-acp-test")
    assert acp.nb.agents["a2"] is old and old.alive
    acp.run("connect --name a2")
    new = acp.nb.agents["a2"]
    assert new is not old and new.alive and not old.alive and old.closed
    assert "replaces the previous 'a2'" in capsys.readouterr().out


# -- 4. one line, not a traceback -----------------------------------------------------------------


@pytest.mark.process
def test_busy_session_refused_resume_and_dead_agent_are_one_line_errors(
    acp: SimpleNamespace,
) -> None:
    acp.run("connect")
    shell = SimpleNamespace(user_ns={}, execution_count=1)
    named = acp.nb.session("default")
    handle, session = acp.nb.agent(named.agent), named.session
    handle.io.call(session.start_turn, "still running")  # as a --bg turn would be
    with pytest.raises(UsageError) as busy:
        acp.start_cell(shell, "", "hello")
    text = str(busy.value)
    assert "session 'default' is busy" in text
    assert "%acp cancel --session default" in text and "--session NAME" in text

    with pytest.raises(UsageError) as refused:
        acp.run("resume nope")
    assert str(refused.value).startswith("%acp resume: ") and "nope" in str(refused.value)

    assert handle.agent.process is not None
    handle.agent.process.send_signal_to_group(signal.SIGKILL)
    deadline = time.monotonic() + 30
    while handle.alive and time.monotonic() < deadline:
        time.sleep(0.02)
    with pytest.raises(UsageError) as dead:
        acp.run("sessions")
    assert "has exited (signal SIGKILL)" in str(dead.value)
    with pytest.raises(UsageError, match="has exited"):
        acp.start_cell(shell, "--new", "hello")


# -- 5, 6, 8. options ---------------------------------------------------------------------------


def test_subcommand_help_prints_and_returns(
    acp: SimpleNamespace, capsys: pytest.CaptureFixture[str]
) -> None:
    acp.run("connect --help")
    out = capsys.readouterr()
    assert "usage: %acp connect" in out.out and "--timeout SECONDS" in out.out
    assert out.err == ""
    acp.run("log -h")
    assert "usage: %acp log" in capsys.readouterr().out
    for line in ("--help", "-h", "help"):
        acp.run(line)
        out = capsys.readouterr().out
        assert "%acp connect [AGENT] [--name NAME]" in out and "%acp resume SESSION_ID" in out


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("connect --bogus", "unrecognized arguments: --bogus"),
        ("connect --timeout 0", "--timeout: must be a positive number of seconds"),
        ("connect --timeout -3", "--timeout: must be a positive number of seconds"),
        ("log -n 0", "-n: must be at least 1, not 0"),
        ("log -n -2", "-n: must be at least 1, not -2"),
        ("log -n x", "-n: not a whole number"),
        ("resume", "the following arguments are required: session_id"),
    ],
)
def test_bad_options_are_one_clean_usage_error(
    acp: SimpleNamespace, capsys: pytest.CaptureFixture[str], line: str, expected: str
) -> None:
    with pytest.raises(UsageError) as info:
        acp.run(line)
    message = str(info.value)
    sub = line.split()[0]
    assert message.startswith(f"%acp {sub}: ") and expected in message
    assert message.count("usage:") == 1 and f"usage: %acp {sub}" in message
    assert "\n" not in message and ": 2;" not in message
    assert capsys.readouterr().err == ""  # argparse printed nothing of its own


def test_cell_help_names_the_cell_magic_and_says_what_timeout_does() -> None:
    doc = AcpMagics.acp_cell.__doc__
    assert doc is not None
    assert "%%acp [--agent NAME] [--session SESSION]" in doc and "acp_cell" not in doc
    flat = " ".join(doc.split())
    assert "reject" not in flat.split("--timeout SECONDS", 1)[1].split("--bg", 1)[0]
    assert "is answered 'cancelled' (fail closed), and the turn ends cancelled" in flat


# -- 10, 11. closed agents, one label -------------------------------------------------------------


@pytest.mark.process
def test_closed_agent_is_gone_and_labels_agree(
    acp: SimpleNamespace, capsys: pytest.CaptureFixture[str]
) -> None:
    acp.run("connect --name emb")
    handle = acp.nb.agents["emb"]
    assert handle.agent.info is not None
    label = f"{handle.agent.info.title or handle.agent.info.name} {handle.agent.info.version}"
    acp.run("status")
    out = capsys.readouterr().out
    assert f"connected 'emb': {label} (pid" in out
    assert f"emb [default]: {label}, alive" in out

    acp.run("close")
    assert capsys.readouterr().out == "acp: closed 'emb'\n"
    acp.run("status")
    status = capsys.readouterr().out
    assert "no agents connected" in status and "[default]" not in status
    assert f"emb: {label}, closed" in status
    with pytest.raises(UsageError, match="no agent connected \\('emb' was closed\\)"):
        acp.run("close")
    with pytest.raises(UsageError, match="no agent named 'emb' \\(it was closed\\)"):
        acp.run("close --name emb")
    with pytest.raises(UsageError, match="no agent connected"):
        acp.start_cell(SimpleNamespace(user_ns={}, execution_count=1), "", "hello")


@pytest.mark.process  # the embedded agent, as a process
def test_exporting_a_trace_where_no_file_can_be_written_is_one_line(
    acp: SimpleNamespace, tmp_path: Path
) -> None:
    # review of issue 28: a folder, a symlink or a missing folder gave a traceback
    acp.run("connect --trace")
    (tmp_path / "elsewhere").write_text("keep")
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "elsewhere")
    for target, why in [
        (tmp_path, "Is a directory"),
        (tmp_path / "link.jsonl", "it is a symbolic link, which is never followed"),
        (tmp_path / "no" / "t.jsonl", "No such file or directory"),
    ]:
        with pytest.raises(UsageError) as info:
            acp.run(f"log --export {target}")
        assert str(info.value) == f"%acp log: cannot write {target}: {why}"
    assert (tmp_path / "elsewhere").read_text() == "keep"
    acp.run(f"log --export {tmp_path / 'ok.jsonl'}")
    assert (tmp_path / "ok.jsonl").read_text().startswith('{"type": "header"')
