"""Sign-in with a ``terminal`` method in a real kernel: `%acp auth METHOD` shows the agent's
login command running in a PTY in the cell; keystrokes sent as the view sends them (the
terminal's ``input`` message) reach its getpass prompt; an exit 0 restarts the agent, which
reads the credentials the login stored. Re-running the cell, `%acp close` or the kernel's end
kill the login, and no process is left."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from kernel_driver import GUARD, Kernel, SharedKernel, acp_kernel, kernel_for_test, new_cell_id

AGENT = Path(__file__).parent / "agents" / "auth_agent.py"
PASSWORD = "open-sesame"


def connect(k: Kernel, work: Path) -> None:
    k.run(f"%acp connect --name signin -- {sys.executable} {AGENT} {work} --terminal")


def terminal(k: Kernel) -> str:
    [comm] = [c for c, s in k.models.items() if s.get("_model_name") == "TerminalModel"]
    return comm


def screen(k: Kernel, comm: str) -> str:
    """The bytes the kernel sent to the terminal's views, as text (what xterm shows)."""
    data = b""
    for _when, msg in k.comm_msgs:
        content = msg["content"]
        body = content.get("data", {})
        if content["comm_id"] != comm or body.get("method") != "custom":
            continue
        kind = body.get("content", {}).get("type")
        buffers = [bytes(b) for b in msg.get("buffers") or []]
        if kind == "reset":
            data = b"".join(buffers)
        elif kind == "chunk":
            data += b"".join(buffers)
    return data.decode("utf-8", "replace")


def send_view_message(k: Kernel, comm: str, message: dict[str, Any]) -> None:
    """What the xterm view sends (labextension/src/terminal.ts: `this.send(...)`)."""
    content = {"comm_id": comm, "data": {"method": "custom", "content": message}}
    k.kc.shell_channel.send(k.kc.session.msg("comm_msg", content))


def status_line(k: Kernel) -> str:
    labels = [
        str(s.get("value", ""))
        for s in k.models.values()
        if s.get("_model_name") == "LabelModel" and "login" in str(s.get("value", ""))
    ]
    return labels[-1] if labels else ""


def login_pids(work: Path) -> list[int]:
    """Processes running the auth agent's login command for ``work``, and its watchdog."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            state = Path(f"/proc/{entry}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if b"--login" in argv and str(work).encode() in argv and state != b"Z":
            found.append(int(entry))
    return found


def wait_gone(work: Path) -> None:
    deadline = time.monotonic() + GUARD
    while login_pids(work):
        assert time.monotonic() < deadline, f"left behind: {login_pids(work)}"
        time.sleep(0.05)


def test_a_terminal_sign_in_takes_keystrokes_and_restarts_the_agent(
    shared_kernel: SharedKernel, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    work = tmp_path / "work"
    seen: list[dict[str, Any]] = []  # every iopub message
    with kernel_for_test(shared_kernel, tmp_path, request) as k:
        take = k._take
        k._take = lambda msg: (seen.append(msg), take(msg))[1]  # type: ignore[method-assign]
        connect(k, work)
        listing = k.run("%acp auth").text()
        assert "terminal-login: Log in in a terminal (terminal)" in listing
        assert "needs sign-in" in k.run("%%acp\nhello", new_cell_id()).text()
        said = k.run("%acp auth terminal-login", new_cell_id()).text()
        assert "'terminal-login' signs in in the terminal below" in said, said
        comm = terminal(k)
        state = k.models[comm]
        assert state["accepts_input"] is True and state["exit_status"] is None
        assert state["command"].startswith("AUTH_AGENT_MODE=login ")
        assert state["command"].endswith(f"{work} --terminal --login")
        k.wait_for(lambda: "password: " in screen(k, comm), "the password prompt")
        assert "(mode login)" in screen(k, comm)  # the method's env reached the command
        assert len(login_pids(work)) == 2  # the login and its watchdog
        send_view_message(k, comm, {"type": "resize", "cols": 100, "rows": 20})
        k.wait_for(lambda: k.models[comm].get("cols") == 100, "the new size")
        for key in PASSWORD + "\r":  # one message per key, as xterm.js sends typing
            send_view_message(k, comm, {"type": "input", "data": key})
        k.wait_for(lambda: k.models[comm].get("exit_status"), "the login's exit")
        assert k.models[comm]["exit_status"] == {"exitCode": 0}
        assert k.models[comm]["accepts_input"] is False
        assert "credentials stored" in screen(k, comm)
        done = k.wait_for(lambda: "restarted" in status_line(k) and status_line(k), "restart")
        assert done.startswith("the login finished (exit 0); restarted 'signin'"), done
        assert done.endswith("session 'default' is open"), done
        assert "UsageError" not in k.run("%%acp\nhello", new_cell_id()).text()
        k.wait_for(
            lambda: "signed in by stored credentials" in json.dumps(list(k.models.values())),
            "the agent's answer",
        )
        log = k.run("%acp log --name signin -n 200").text()
        for text in [log, json.dumps(k.models), *(json.dumps(m, default=str) for m in seen)]:
            assert PASSWORD not in text  # getpass did not echo it, nothing logged it
        del k._take  # the driver's own again (the module's tests share the kernel)
    assert (work / "credentials").exists()
    wait_gone(work)


def test_a_wrong_password_ends_the_login_and_says_not_signed_in(
    shared_kernel: SharedKernel, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    work = tmp_path / "work"
    with kernel_for_test(shared_kernel, tmp_path, request) as k:
        connect(k, work)
        k.run("%acp auth terminal-login", new_cell_id())
        comm = terminal(k)
        k.wait_for(lambda: "password: " in screen(k, comm), "the password prompt")
        send_view_message(k, comm, {"type": "input", "data": "guess\r"})
        k.wait_for(lambda: k.models[comm].get("exit_status"), "the login's exit")
        assert k.models[comm]["exit_status"] == {"exitCode": 1}
        line = k.wait_for(lambda: "not signed in" in status_line(k) and status_line(k), "why")
        assert line == "the login ended (exit 1): not signed in; run `%acp auth` again"
        assert "needs sign-in" in k.run("%%acp\nhello", new_cell_id()).text()
    assert not (work / "credentials").exists()


def test_running_the_cell_again_kills_the_login(
    shared_kernel: SharedKernel, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    work = tmp_path / "work"
    with kernel_for_test(shared_kernel, tmp_path, request) as k:
        connect(k, work)
        cell = new_cell_id()
        k.run("%acp auth terminal-login", cell)
        comm = terminal(k)
        k.wait_for(lambda: "password: " in screen(k, comm), "the password prompt")
        k.run("1 + 1", new_cell_id())  # another cell: the login goes on
        assert k.models[comm]["exit_status"] is None and len(login_pids(work)) == 2
        k.run("print('rerun')", cell)
        k.wait_for(lambda: k.models[comm].get("exit_status"), "the login's end")
        assert k.models[comm]["exit_status"] == {"signal": "SIGKILL"}
        wait_gone(work)
        # Typing into the ended login does nothing.
        send_view_message(k, comm, {"type": "input", "data": PASSWORD + "\r"})
        k.run("1 + 1")
    assert not (work / "credentials").exists()


def test_closing_the_agent_kills_the_login(
    shared_kernel: SharedKernel, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    work = tmp_path / "work"
    with kernel_for_test(shared_kernel, tmp_path, request) as k:
        connect(k, work)
        k.run("%acp auth terminal-login", new_cell_id())
        comm = terminal(k)
        k.wait_for(lambda: "password: " in screen(k, comm), "the password prompt")
        k.run("%acp close --name signin")
        k.wait_for(lambda: k.models[comm].get("exit_status"), "the login's end")
        assert k.models[comm]["exit_status"] == {"signal": "SIGKILL"}
        wait_gone(work)


def test_the_kernel_going_away_kills_the_login(tmp_path: Path) -> None:
    work = tmp_path / "work"
    with acp_kernel(tmp_path) as k:
        connect(k, work)
        k.run("%acp auth terminal-login", new_cell_id())
        comm = terminal(k)
        k.wait_for(lambda: "password: " in screen(k, comm), "the password prompt")
        assert len(login_pids(work)) == 2
    # The kernel was killed (shutdown_kernel(now=True)): the watchdog ended the login's group.
    wait_gone(work)
