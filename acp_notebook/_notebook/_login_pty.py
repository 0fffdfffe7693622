"""Sign-in in a terminal (``%acp auth METHOD`` for a ``terminal`` method): the agent's login
command runs in a pseudo-terminal, shown in the cell as a :class:`TerminalWidget` the user
types into.

* :class:`LoginPty` is the process: ``argv`` (a list, never a shell string) on the slave side
  of a PTY that is its controlling terminal (so Ctrl+C, ``getpass`` and window-size changes
  behave as in a terminal emulator), in a new session, launched through
  ``_supervisor.py``: its watchdog (its parent) ends it and everything it started when this
  kernel closes the pipe or dies, ``kill -9`` included. A reader thread feeds the output to
  ``on_output``; what the user types is written with :meth:`LoginPty.write`. When the
  command exits, whatever it left is killed, and ``on_exit(code, signal)`` runs once.
* :class:`LoginTerminal` joins one to a TerminalWidget that ``accepts_input``: bytes go to the
  widget (its backlog cap bounds the memory), the views' ``input`` and ``resize`` messages go
  to the PTY, the exit becomes the widget's ``exit_status`` (the one exit label). Closing the
  widget kills the command.
* :func:`sign_in_terminal` is what the magic shows: the terminal and a status line, killed
  when the agent is closed (``%acp close``, kernel shutdown) or its cell runs again; after an
  exit 0 it calls ``signed_in`` (the magic restarts the agent, which reads the credentials
  the login stored).

Typed input is never logged or kept: it goes from the message to the PTY, and only the
command's own echo (none for a password) reaches the widget.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import ipywidgets as widgets  # type: ignore[import-untyped]

from .._connection._exit import exit_label, signal_of
from .._connection._process import read_pty, set_pty_size, spawn_in_pty
from .._widgets._terminal import TerminalWidget

__all__ = ["LoginPty", "LoginTerminal", "sign_in_terminal"]

log = logging.getLogger("acp_notebook.login")

READ_BYTES = 64 * 1024
DRAIN_SECONDS = 0.2  # after the command exited, read on until the PTY is quiet this long
POLL_MS = 50
LOGIN_BACKLOG = 2 * 2**20  # bytes of a login's output kept for late views

ExitCallback = Callable[[int | None, str | None], None]


class LoginPty:
    """One login command in a PTY. ``start`` it once; ``write``, ``resize`` and ``kill`` it
    from any thread; ``on_output(bytes)`` and ``on_exit(code, signal)`` run on its reader
    thread."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        cols: int = 80,
        rows: int = 24,
        on_output: Callable[[bytes], None],
        on_exit: ExitCallback | None = None,
    ) -> None:
        if isinstance(argv, str | bytes) or not argv:
            raise TypeError("argv must be a non-empty list of strings (no shell)")
        self.argv = [str(a) for a in argv]
        self.cwd = cwd
        self.env = dict(env or {})
        self.cols, self.rows = max(1, cols), max(1, rows)
        self._on_output = on_output
        self._on_exit = on_exit
        self._lock = threading.Lock()
        self._master: int | None = None
        self._watch: int | None = None  # our end of the watchdog's pipe
        self._proc: subprocess.Popen[bytes] | None = None  # the watchdog, the command's parent
        self._pid: int | None = None  # the command's (it leads its session and group)
        self._thread: threading.Thread | None = None
        self._done = threading.Event()
        self.returncode: int | None = None
        self.killed = False

    @property
    def pid(self) -> int | None:
        return self._pid

    @property
    def running(self) -> bool:
        return self._proc is not None and not self._done.is_set()

    @property
    def exit_code(self) -> int | None:
        rc = self.returncode
        return rc if rc is not None and rc >= 0 else None

    @property
    def signal(self) -> str | None:
        return signal_of(self.returncode)

    def start(self) -> None:
        """Spawn the command; raises ``OSError`` when it cannot be run (nothing is left)."""
        if self._proc is not None:
            raise RuntimeError("a LoginPty starts once")
        env = {**os.environ, **self.env}
        env.update(TERM="xterm-256color", COLUMNS=str(self.cols), LINES=str(self.rows))
        child = spawn_in_pty(
            self.argv, cwd=self.cwd, env=env, cols=self.cols, rows=self.rows, ctty=True
        )
        self._proc, self._master, self._watch = child.process, child.master, child.watch
        self._pid = child.pid
        self._thread = threading.Thread(target=self._read, name="acp-login-pty", daemon=True)
        self._thread.start()

    # -- from the user -----------------------------------------------------------------------

    def write(self, data: bytes) -> int:
        """Write what the user typed; returns the bytes written (0 once the command ended,
        or while its input queue is full: keys typed into a stuck program are dropped)."""
        with self._lock:
            if self._master is None or self._done.is_set():
                return 0
            try:
                return os.write(self._master, data)
            except (BlockingIOError, OSError):
                return 0

    def resize(self, cols: int, rows: int) -> None:
        """Set the PTY's window size (TIOCSWINSZ; the command gets SIGWINCH)."""
        cols, rows = max(1, min(int(cols), 1000)), max(1, min(int(rows), 1000))
        with self._lock:
            self.cols, self.rows = cols, rows
            if self._master is not None and not self._done.is_set():
                with contextlib.suppress(OSError):
                    set_pty_size(self._master, cols, rows)

    def kill(self) -> None:
        """SIGKILL the command's process group (everything it started); idempotent."""
        if self._proc is None or self._done.is_set():
            return
        self.killed = True
        self._kill_group()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the command ended and ``on_exit`` ran; False on timeout."""
        return self._done.wait(timeout)

    # -- the reader thread -------------------------------------------------------------------

    def _kill_group(self) -> None:
        # The watchdog keeps the command unreaped (so its group id taken) until it exits
        # itself, once the command and what it left are gone: no signal after that.
        if self._proc is not None and self._pid is not None and self._proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._pid, signal.SIGKILL)

    def _close_fds(self) -> None:
        with self._lock:
            for fd in (self._master, self._watch):
                if fd is not None:
                    with contextlib.suppress(OSError):
                        os.close(fd)
            self._master = self._watch = None

    def _read(self) -> None:
        assert self._proc is not None and self._master is not None
        proc, fd = self._proc, self._master
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        quiet = 0.0
        try:
            while True:
                exited = proc.poll() is not None
                if not poller.poll(POLL_MS):
                    if exited:
                        quiet += POLL_MS / 1000
                        if quiet >= DRAIN_SECONDS:
                            break
                    continue
                try:
                    data = read_pty(fd, READ_BYTES)
                except OSError:
                    log.debug("reading the login PTY failed", exc_info=True)
                    break
                if data is None:
                    break
                if not data:
                    continue
                quiet = 0.0
                self._on_output(data)
        finally:
            self._kill_group()  # what the command left running ends with it
            self.returncode = proc.wait()
            self._close_fds()  # the watch pipe too: the watchdog ends the group
            self._done.set()
        if self._on_exit is not None:
            self._on_exit(self.exit_code, self.signal)


class LoginTerminal:
    """A :class:`LoginPty` shown in a :class:`TerminalWidget` that accepts input."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        command: str = "",
        on_exit: ExitCallback | None = None,
        widget: TerminalWidget | None = None,
    ) -> None:
        self.widget = widget or TerminalWidget(backlog_limit=LOGIN_BACKLOG)
        self.widget.command = command
        self.widget.cwd = cwd or ""
        self._on_exit = on_exit
        self.pty = LoginPty(
            argv,
            cwd=cwd,
            env=env,
            cols=self.widget.cols,
            rows=self.widget.rows,
            on_output=self.widget.feed,
            on_exit=self._exited,
        )
        self.widget.on_input(self._typed)
        self.widget.on_resize(self._resized)
        self.widget.on_close(lambda _widget: self.kill())

    def start(self) -> None:
        self.pty.start()
        self.widget.accepts_input = True

    def kill(self) -> None:
        self.pty.kill()

    def _typed(self, _widget: TerminalWidget, data: str) -> None:
        self.pty.write(data.encode("utf-8", "replace"))  # a lone surrogate: "?"

    def _resized(self, widget: TerminalWidget, cols: int, rows: int) -> None:
        self.pty.resize(cols, rows)
        widget.cols, widget.rows = self.pty.cols, self.pty.rows

    def _exited(self, code: int | None, sig: str | None) -> None:
        self.widget.flush()
        self.widget.accepts_input = False
        self.widget.exit_status = {"signal": sig} if sig else {"exitCode": code}
        if self._on_exit is not None:
            self._on_exit(code, sig)


def sign_in_terminal(
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    command: str,
    agent: str,
    signed_in: Callable[[], str],
    subscribe_closed: Callable[[Callable[..., None]], Callable[[], None]],
    is_agent: Callable[[Any], bool],
    shell: Any = None,
    cell_id: str | None = None,
) -> tuple[widgets.VBox, LoginTerminal]:
    """The login terminal and a status line under it, started.

    It is killed when ``subscribe_closed`` reports a closed agent that ``is_agent`` (``%acp
    close``, kernel shutdown), when cell ``cell_id`` runs again (``shell``'s pre_run_cell),
    or when its widget is closed. After an exit 0, ``signed_in()`` runs and its line is shown.
    Raises ``OSError`` when the command cannot be run."""
    status = widgets.Label(value=f"signing in to {agent!r}: type in the terminal")
    stops: list[Callable[[], None]] = []

    def exited(code: int | None, sig: str | None) -> None:
        for stop in stops:
            with contextlib.suppress(Exception):
                stop()
        label = exit_label(code, sig)
        if code == 0 and not sig:
            status.value = f"the login finished ({label}): restarting {agent!r}..."
            try:
                status.value = f"the login finished ({label}); {signed_in()}"
            except Exception as exc:  # the restart's error, as one line
                status.value = f"the login finished ({label}); not signed in: {exc}"
        else:
            why = " (stopped)" if terminal.pty.killed else ""
            status.value = f"the login ended ({label}){why}: not signed in; run `%acp auth` again"

    terminal = LoginTerminal(argv, cwd=cwd, env=env, command=command, on_exit=exited)

    def agent_closed(handle: Any) -> None:
        if is_agent(handle):
            terminal.kill()

    def cell_runs(info: Any) -> None:
        if getattr(info, "cell_id", None) == cell_id:
            terminal.kill()

    stops.append(subscribe_closed(agent_closed))
    if shell is not None and cell_id:
        shell.events.register("pre_run_cell", cell_runs)
        stops.append(lambda: shell.events.unregister("pre_run_cell", cell_runs))
    try:
        terminal.start()
    except BaseException:
        for stop in stops:
            stop()
        raise
    return widgets.VBox([terminal.widget, status]), terminal
