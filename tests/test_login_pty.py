"""The sign-in terminal's PTY (_notebook/_login_pty.py), with real PTYs and processes: a
login script that prompts with getpass gets what is written, its output and exit come back,
killing it (or closing its widget) leaves no process behind."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from acp_notebook._notebook._login_pty import LoginPty, LoginTerminal, sign_in_terminal
from acp_notebook._widgets._terminal import TerminalWidget

SCRIPT = Path(__file__).parent / "fakes" / "login_script.py"
HANG = 30.0  # hang guard only


class Run:
    """A LoginPty of the login script, its output collected."""

    def __init__(self, mode: str, **kwargs: Any) -> None:
        self._lock = threading.Lock()
        self._out = bytearray()
        self.exits: list[tuple[int | None, str | None]] = []
        self.pty = LoginPty(
            [sys.executable, str(SCRIPT), mode],
            on_output=self._take,
            on_exit=lambda code, sig: self.exits.append((code, sig)),
            **kwargs,
        )
        self.pty.start()

    def _take(self, data: bytes) -> None:
        with self._lock:
            self._out += data

    @property
    def text(self) -> str:
        with self._lock:
            return self._out.decode("utf-8", "replace")

    def until(self, needle: str) -> str:
        deadline = time.monotonic() + HANG
        while needle not in self.text:
            assert time.monotonic() < deadline, f"no {needle!r} in {self.text!r}"
            time.sleep(0.01)
        return self.text

    def ended(self) -> tuple[int | None, str | None]:
        assert self.pty.wait(HANG), self.text
        assert len(self.exits) == 1
        return self.exits[0]


def gone(pid: int) -> bool:
    """The process no longer exists (or is a zombie nobody waits for any more)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except FileNotFoundError:
        return True
    return stat[stat.rindex(b")") + 2 :].split()[0] == b"Z"


def wait_until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + HANG
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def group_members(pgid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(b")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] != b"Z":
            found.append(int(entry))
    return found


def test_a_getpass_login_reads_what_is_written_and_exits_0() -> None:
    run = Run("login")
    run.until("user: ")
    assert run.pty.write(b"ada\r") == 4
    run.until("password: ")
    run.pty.write(b"hunter2\r")
    assert run.ended() == (0, None)
    assert run.pty.exit_code == 0 and run.pty.signal is None and not run.pty.running
    text = run.text
    assert "user: ada\r\n" in text  # the name is echoed by the terminal
    assert "welcome ada" in text
    assert "hunter2" not in text  # getpass turned echo off: the password is not in the output
    assert run.pty.write(b"late\r") == 0  # nothing is written once it ended


def test_a_failed_login_reports_its_exit_code() -> None:
    run = Run("login")
    run.until("user: ")
    run.pty.write(b"ada\r")
    run.until("password: ")
    run.pty.write(b"wrong\r")
    assert run.ended() == (3, None)
    assert "wrong password" in run.text


def test_the_pty_is_the_controlling_terminal_and_ctrl_c_interrupts() -> None:
    run = Run("tty")
    run.until("leader yes")
    assert "ctty yes" in run.text
    run.pty.write(b"\x03")  # Ctrl+C: the line discipline sends SIGINT to the foreground group
    assert run.ended() == (None, "SIGINT")
    assert not run.pty.killed


def test_resize_sets_the_window_size_and_the_command_sees_sigwinch() -> None:
    run = Run("size", cols=100, rows=30)
    run.until("size 100 30")
    run.pty.resize(132, 40)
    run.until("winch 132 40")
    run.pty.write(b"again\r")
    run.until("size 132 40")
    assert (run.pty.cols, run.pty.rows) == (132, 40)
    run.pty.write(b"quit\r")
    assert run.ended() == (0, None)


def test_kill_ends_the_command_and_everything_it_started() -> None:
    run = Run("linger")
    text = run.until("\r\n")
    child = int(text.split("child ")[1].split()[0])
    pid = run.pty.pid
    assert pid is not None and not gone(child)
    members = group_members(pid)
    assert pid in members and child in members and len(members) == 2  # not the watchdog
    run.pty.kill()
    assert run.ended() == (None, "SIGKILL")
    assert run.pty.killed
    wait_until(lambda: all(gone(p) for p in members), f"left behind: {group_members(pid)}")
    run.pty.kill()  # again: nothing happens


def test_a_child_left_behind_by_an_exit_is_killed_too() -> None:
    run = Run("linger")
    text = run.until("\r\n")
    child = int(text.split("child ")[1].split()[0])
    pid = run.pty.pid
    assert pid is not None
    members = group_members(pid)
    run.pty.write(b"\r")
    assert run.ended() == (0, None)
    wait_until(lambda: all(gone(p) for p in members), f"left behind: {group_members(pid)}")
    assert gone(child)


def test_a_command_that_cannot_run_raises_and_leaves_nothing(tmp_path: Path) -> None:
    exits: list[Any] = []
    pty = LoginPty(
        [str(tmp_path / "no-such-login")],
        on_output=lambda _d: None,
        on_exit=lambda code, sig: exits.append((code, sig)),
    )
    with pytest.raises(FileNotFoundError):
        pty.start()
    wait_until(lambda: _running_with("no-such-login") == [], "the launcher is gone")
    assert exits == [] and not pty.running
    with pytest.raises(TypeError):
        LoginPty("login --now", on_output=lambda _d: None)  # a string is never a command


def test_the_environment_and_cwd_reach_the_command(tmp_path: Path) -> None:
    out: list[bytes] = []
    code = "import os; print(os.getcwd(), os.environ['LOGIN_HINT'], os.environ['TERM'])"
    pty = LoginPty(
        [sys.executable, "-c", code],
        cwd=str(tmp_path),
        env={"LOGIN_HINT": "from-the-method"},
        on_output=out.append,
    )
    pty.start()
    assert pty.wait(HANG)
    assert b"".join(out).split() == [
        str(tmp_path).encode(),
        b"from-the-method",
        b"xterm-256color",
    ]


# -- the widget --------------------------------------------------------------------------------


def view_sends(widget: TerminalWidget, content: dict[str, Any]) -> None:
    """What a view's custom message does in the kernel."""
    widget._handle_view_msg(widget, content, [])


def test_the_widget_takes_typed_input_and_shows_the_exit() -> None:
    exits: list[Any] = []
    term = LoginTerminal(
        [sys.executable, str(SCRIPT), "login"],
        command="agent --login",
        on_exit=lambda code, sig: exits.append((code, sig)),
    )
    widget = term.widget
    assert not widget.accepts_input
    term.start()
    assert widget.accepts_input and widget.command == "agent --login"
    wait_until(lambda: b"user: " in widget.data, "the prompt")
    view_sends(widget, {"type": "input", "data": "grace\r"})
    wait_until(lambda: b"password: " in widget.data, "the password prompt")
    view_sends(widget, {"type": "resize", "cols": 90, "rows": 20})
    assert (widget.cols, widget.rows) == (90, 20)
    view_sends(widget, {"type": "input", "data": "hunter2\r"})
    assert term.pty.wait(HANG)
    assert exits == [(0, None)]
    assert widget.exit_status == {"exitCode": 0}
    assert not widget.accepts_input
    assert b"welcome grace" in widget.data and b"hunter2" not in widget.data
    assert "exit 0" in widget.static_bundle()["text/plain"]
    widget.close()


def test_a_lone_surrogate_in_typed_input_is_replaced_not_raised() -> None:
    # JSON (and so a view's message) may carry "\ud800"; UTF-8 cannot.
    term = LoginTerminal([sys.executable, str(SCRIPT), "login"])
    term.start()
    wait_until(lambda: b"user: " in term.widget.data, "the prompt")
    view_sends(term.widget, {"type": "input", "data": "a\ud800b\r"})
    wait_until(lambda: b"password: " in term.widget.data, "the password prompt")
    assert b"user: a?b\r\n" in term.widget.data
    term.widget.close()
    assert term.pty.wait(HANG)


def test_input_is_ignored_unless_the_widget_accepts_it() -> None:
    term = LoginTerminal([sys.executable, str(SCRIPT), "size"])
    term.start()
    wait_until(lambda: b"size 80 24" in term.widget.data, "the first size")
    term.widget.accepts_input = False  # as an agent's terminal: read-only
    view_sends(term.widget, {"type": "resize", "cols": 50, "rows": 10})
    view_sends(term.widget, {"type": "input", "data": "quit\r"})
    term.widget.accepts_input = True
    view_sends(term.widget, {"type": "input", "data": "x\r"})
    wait_until(lambda: term.widget.data.count(b"size 80 24") >= 2, "the size, unchanged")
    assert not term.pty.wait(0.01)  # "quit" never reached it
    assert (term.pty.cols, term.pty.rows) == (80, 24)
    term.widget.close()
    assert term.pty.wait(HANG)


def test_closing_the_widget_kills_the_login() -> None:
    term = LoginTerminal([sys.executable, str(SCRIPT), "login"])
    term.start()
    wait_until(lambda: b"user: " in term.widget.data, "the prompt")
    pid = term.pty.pid
    assert pid is not None
    term.widget.close()
    assert term.pty.wait(HANG)
    assert term.pty.signal == "SIGKILL"
    wait_until(lambda: group_members(pid) == [], "the group is gone")


# -- sign_in_terminal: the status line and what stops it ---------------------------------------


class Bus:
    def __init__(self) -> None:
        self.callbacks: list[Callable[..., None]] = []

    def subscribe(self, callback: Callable[..., None]) -> Callable[[], None]:
        self.callbacks.append(callback)
        return lambda: self.callbacks.remove(callback)


class Events:
    """IPython's ``shell.events``: the two calls used."""

    def __init__(self) -> None:
        self.registered: list[Callable[..., None]] = []

    def register(self, _event: str, callback: Callable[..., None]) -> None:
        self.registered.append(callback)

    def unregister(self, _event: str, callback: Callable[..., None]) -> None:
        self.registered.remove(callback)


class Shell:
    def __init__(self) -> None:
        self.events = Events()


def status_of(box: Any) -> str:
    return str(box.children[1].value)


def start(mode: str, bus: Bus, shell: Any = None, **kwargs: Any) -> tuple[Any, LoginTerminal]:
    return sign_in_terminal(
        [sys.executable, str(SCRIPT), mode],
        cwd=os.getcwd(),
        env={},
        command=f"login {mode}",
        agent="signin",
        signed_in=kwargs.pop("signed_in", lambda: "restarted"),
        subscribe_closed=bus.subscribe,
        is_agent=lambda handle: handle == "the agent",
        shell=shell,
        cell_id="cell-1",
    )


def test_an_exit_0_calls_signed_in_and_says_so() -> None:
    bus = Bus()
    calls: list[str] = []

    def signed_in() -> str:
        calls.append("x")
        return "restarted 'signin'"

    box, term = start("login", bus, signed_in=signed_in)
    assert "type in the terminal" in status_of(box)
    wait_until(lambda: b"user: " in term.widget.data, "the prompt")
    term.pty.write(b"ada\r")
    wait_until(lambda: b"password: " in term.widget.data, "the password prompt")
    term.pty.write(b"hunter2\r")
    assert term.pty.wait(HANG)
    wait_until(lambda: "restarted" in status_of(box), status_of(box))
    assert status_of(box) == "the login finished (exit 0); restarted 'signin'"
    assert calls == ["x"] and bus.callbacks == []  # no longer listening


def test_closing_the_agent_kills_the_login_and_says_not_signed_in() -> None:
    bus = Bus()
    box, term = start("login", bus, signed_in=lambda: pytest.fail("not signed in"))
    wait_until(lambda: b"user: " in term.widget.data, "the prompt")
    for callback in list(bus.callbacks):
        callback("another agent")
    assert not term.pty.wait(0.05)
    for callback in list(bus.callbacks):
        callback("the agent")
    assert term.pty.wait(HANG)
    wait_until(lambda: "not signed in" in status_of(box), status_of(box))
    assert status_of(box) == (
        "the login ended (signal SIGKILL) (stopped): not signed in; run `%acp auth` again"
    )


def test_running_its_cell_again_kills_the_login() -> None:
    bus, shell = Bus(), Shell()
    box, term = start("login", bus, shell)
    wait_until(lambda: b"user: " in term.widget.data, "the prompt")
    [hook] = shell.events.registered

    class Info:
        cell_id = "cell-2"

    hook(Info())
    assert not term.pty.wait(0.05)  # another cell ran
    Info.cell_id = "cell-1"
    hook(Info())
    assert term.pty.wait(HANG)
    assert term.pty.signal == "SIGKILL"
    wait_until(lambda: shell.events.registered == [], "the hook is gone")
    assert "not signed in" in status_of(box)


def _running_with(word: str) -> list[int]:
    """Live (not zombie) processes whose command line holds ``word``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            stat = Path(f"/proc/{entry}/stat").read_bytes()
        except OSError:
            continue
        if word.encode() in cmdline and stat[stat.rindex(b")") + 2 :].split()[0] != b"Z":
            found.append(int(entry))
    return found
