"""Agent subprocesses: spawn without a shell, drain stderr, bounded shutdown, no orphans.

* The agent runs in its own session and process group (``start_new_session=True``), so
  shutdown signals reach the agent and everything it started.
* stderr goes to a pipe that a daemon thread drains into a bounded ring buffer. The thread
  does not depend on the event loop, so an agent flooding stderr never stalls, even while the
  loop is busy.
* Orphans: the agent is launched through `acp_notebook._supervisor`, which leaves a watchdog
  in the agent's process group before it execs the agent. The watchdog holds the read end of
  a pipe whose write end only this process holds; when this process closes it or dies, even
  by ``kill -9``, the watchdog SIGTERMs the group and SIGKILLs it a second later.
  Every live group is also kept in a module registry (plain pids); an ``atexit`` hook SIGKILLs
  whatever is left when the interpreter exits. ``PR_SET_PDEATHSIG`` is *not* used: it fires
  when the spawning *thread* exits, and some anyio backends (trio) spawn from a worker thread.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import signal
import struct
import subprocess
import sys
import termios
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import NamedTuple

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, Process

from ._errors import AgentExited, ConnectionClosed
from ._exit import signal_of
from ._jsonrpc import Connection, NotificationHandler, ProblemCallback, RequestHandler
from ._supervisor import others_alive

__all__ = ["AgentLink", "AgentProcess", "open_agent_connection"]

DEFAULT_STDERR_LIMIT = 64 * 1024

_live_groups: dict[int, int] = {}  # pid -> process group id, for the atexit sweep
_watch_fds: dict[int, int] = {}  # pid -> our end of its watchdog's pipe (close it: group dies)
_registry_lock = threading.Lock()
SUPERVISOR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_supervisor.py")


def set_pty_size(fd: int, cols: int, rows: int) -> None:
    """Set a PTY's window size (TIOCSWINSZ; the program on it gets SIGWINCH)."""
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


class PtyChild(NamedTuple):
    """A program `spawn_in_pty` started: its process (the launcher became it), the PTY's
    master end (non-blocking) and the kernel's end of the watchdog's pipe (close it, and the
    watchdog ends the group)."""

    process: subprocess.Popen[bytes]
    master: int
    watch: int


def spawn_in_pty(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None,
    env: Mapping[str, str],
    cols: int,
    rows: int,
    prefix: Sequence[str] = (),
) -> PtyChild:
    """Start ``argv`` (a list, never a shell) through the supervisor, in a new session whose
    stdio is a fresh PTY of ``cols`` x ``rows``. ``prefix`` runs before the supervisor (a
    launcher that makes the PTY the controlling terminal). When the exec fails, the group is
    killed, nothing is left open and the ``OSError`` Popen would give is raised. Blocking."""
    master, slave = os.openpty()
    set_pty_size(slave, cols, rows)
    watch_r, watch_w = os.pipe()  # close-on-exec: no other child inherits them
    status_r, status_w = os.pipe()
    launcher = [*prefix, sys.executable, "-I", "-S", SUPERVISOR, str(watch_r), str(status_w)]
    try:
        process = subprocess.Popen(
            [*launcher, "--", *argv],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
            pass_fds=(watch_r, status_w),
        )
    except BaseException:
        for fd in (master, watch_w, status_r):
            os.close(fd)
        raise
    finally:
        for fd in (slave, watch_r, status_w):
            os.close(fd)
    failure = _exec_failure(_read_report(status_r))
    if failure is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        for fd in (master, watch_w):
            os.close(fd)
        raise OSError(failure, os.strerror(failure), argv[0])
    os.set_blocking(master, False)
    return PtyChild(process, master, watch_w)


def _read_report(fd: int) -> str:
    """The launcher's report, read to its end (the exec closes it); closes ``fd``."""
    data = b""
    try:
        while chunk := os.read(fd, 4096):
            data += chunk
    finally:
        os.close(fd)
    return data.decode("ascii", "replace")


def _exec_failure(report: str) -> int | None:
    """The errno of a failed exec in the launcher's report (``E <errno>``), else None."""
    for line in report.splitlines():
        word, _, value = line.partition(" ")
        if word == "E":
            return int(value or 0)
    return None


def _forget_agents_in_fork_child() -> None:
    """After ``os.fork()`` (multiprocessing, ...): the child must not keep the watchdogs'
    pipes open (their end of file would wait for the child) nor kill our agents at exit."""
    global _registry_lock
    _registry_lock = threading.Lock()  # another thread may have held it at the fork
    for fd in _watch_fds.values():
        with contextlib.suppress(OSError):
            os.close(fd)
    _watch_fds.clear()
    _live_groups.clear()


os.register_at_fork(after_in_child=_forget_agents_in_fork_child)


def _kill_group(pgid: int, sig: int) -> bool:
    """Signal a process group; False when it no longer exists."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:  # pid reused by someone else's group: leave it alone
        return False
    return True


@atexit.register
def _kill_remaining_groups() -> None:
    with _registry_lock:
        groups = list(_live_groups.values())
        _live_groups.clear()
    for pgid in groups:
        _kill_group(pgid, signal.SIGKILL)


class _StderrRing:
    """Bounded tail of a pipe, filled by a daemon thread."""

    def __init__(self, fd: int, limit: int) -> None:
        self._fd = fd
        self._limit = limit
        self._buffer = bytearray()
        self._lock = threading.Lock()
        self.total_bytes = 0
        self.done = threading.Event()
        self._thread = threading.Thread(target=self._drain, name="agent-stderr", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        try:
            while True:
                try:
                    data = os.read(self._fd, 65536)
                except OSError:
                    break
                if not data:
                    break
                with self._lock:
                    self.total_bytes += len(data)
                    buf = self._buffer
                    buf += data
                    if len(buf) > 2 * self._limit:
                        del buf[: len(buf) - self._limit]
        finally:
            os.close(self._fd)
            self.done.set()

    def tail(self, n_bytes: int | None = None) -> str:
        n = self._limit if n_bytes is None else min(n_bytes, self._limit)
        with self._lock:
            data = bytes(self._buffer[-n:]) if n > 0 else b""
        return data.decode("utf-8", "replace")


async def _read_to_end(fd: int) -> str:
    """Read a pipe to its end without blocking the event loop; closes ``fd``."""
    os.set_blocking(fd, False)
    data = b""
    try:
        while True:
            await anyio.wait_readable(fd)
            try:
                chunk = os.read(fd, 4096)
            except BlockingIOError:
                continue
            if not chunk:
                return data.decode("ascii", "replace")
            data += chunk
    finally:
        os.close(fd)


class AgentProcess:
    """A running agent. Create with `AgentProcess.start` or ``async with AgentProcess.spawn``."""

    def __init__(self, process: Process, stderr: _StderrRing, argv: list[str]) -> None:
        self._process = process
        self._stderr = stderr
        self.argv = argv
        self.pid: int = process.pid
        self.supervisor_pid: int | None = None  # the watchdog in the agent's group
        self._closed = False
        stdin, stdout = process.stdin, process.stdout
        assert stdin is not None and stdout is not None
        self.stdin: ByteSendStream = stdin
        self.stdout: ByteReceiveStream = stdout

    @staticmethod
    def _check_argv(argv: Sequence[str]) -> list[str]:
        if isinstance(argv, str | bytes):
            raise TypeError("argv must be a list of strings, not a single string (no shell)")
        args = [os.fspath(a) for a in argv]
        if not args:
            raise ValueError("argv is empty")
        for a in args:
            if not isinstance(a, str):
                raise TypeError(f"argv items must be strings, got {a!r}")
        return args

    @classmethod
    async def start(
        cls,
        argv: Sequence[str],
        *,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str | None] | None = None,
        stderr_limit: int = DEFAULT_STDERR_LIMIT,
    ) -> AgentProcess:
        """Spawn ``argv`` (a list, never a shell string).

        ``env`` holds overrides on top of ``os.environ`` (a ``None`` value removes a variable).
        Call `aclose` when done.
        """
        args = cls._check_argv(argv)
        environ = dict(os.environ)
        for key, value in (env or {}).items():
            if value is None:
                environ.pop(key, None)
            else:
                environ[key] = value
        read_fd, write_fd = os.pipe()
        watch_r, watch_w = os.pipe()  # both ends close-on-exec: no other child inherits them
        status_r, status_w = os.pipe()
        try:
            process = await anyio.open_process(
                [sys.executable, "-I", "-S", SUPERVISOR, str(watch_r), str(status_w), "--", *args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=write_fd,
                cwd=cwd,
                env=environ,
                start_new_session=True,
                pass_fds=(watch_r, status_w),
            )
        except BaseException:
            for fd in (read_fd, watch_w, status_r):
                os.close(fd)
            raise
        finally:
            for fd in (write_fd, watch_r, status_w):
                os.close(fd)
        with _registry_lock:
            _live_groups[process.pid] = process.pid
            _watch_fds[process.pid] = watch_w
        proc = cls(process, _StderrRing(read_fd, stderr_limit), args)
        try:
            # The launcher reports its watchdog, then execs the agent (which ends the report)
            # or reports why the exec failed, the way Popen reports it.
            report = await _read_to_end(status_r)
            for line in report.splitlines():
                word, _, value = line.partition(" ")
                if word == "W":
                    proc.supervisor_pid = int(value)
            code = _exec_failure(report)
            if code is not None:
                raise OSError(code, os.strerror(code), args[0])
        except BaseException:
            with anyio.CancelScope(shield=True):
                await proc.aclose(grace=0, term_grace=0)
            raise
        return proc

    @classmethod
    @asynccontextmanager
    async def spawn(
        cls,
        argv: Sequence[str],
        *,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str | None] | None = None,
        env_overrides: Mapping[str, str | None] | None = None,
        stderr_limit: int = DEFAULT_STDERR_LIMIT,
        grace: float = 3.0,
    ) -> AsyncIterator[AgentProcess]:
        """``async with AgentProcess.spawn(argv) as proc:``; shuts the agent down on exit."""
        overrides = {**(env or {}), **(env_overrides or {})}
        proc = await cls.start(argv, cwd=cwd, env=overrides, stderr_limit=stderr_limit)
        try:
            yield proc
        finally:
            await proc.aclose(grace=grace)

    # -- state ---------------------------------------------------------------------------

    @property
    def returncode(self) -> int | None:
        """Exit code; negative ``-N`` when killed by signal N; None while running."""
        return self._process.returncode

    @property
    def exit_signal(self) -> str | None:
        """Name of the signal that killed the agent (``"SIGKILL"``, ``"SIG40"`` for one with no
        name), if it was killed by one."""
        return signal_of(self._process.returncode)

    @property
    def stderr_total_bytes(self) -> int:
        return self._stderr.total_bytes

    def stderr_tail(self, n_bytes: int | None = None) -> str:
        """The last ``n_bytes`` (default: all kept) of stderr, decoded with replacement."""
        return self._stderr.tail(n_bytes)

    async def wait(self) -> int:
        """Wait for the agent to exit; returns its return code."""
        return await self._process.wait()

    async def exit_error(self, stderr_wait: float = 3.0) -> AgentExited:
        """`AgentExited` for this (exited) agent, once its stderr has been read to the end.

        Waits at most ``stderr_wait`` seconds for the end of stderr (a grandchild may hold it).
        """
        await self.wait()
        if not self._stderr.done.is_set():
            await anyio.to_thread.run_sync(self._stderr.done.wait, stderr_wait)
        return AgentExited(self.returncode, self.exit_signal, self.stderr_tail())

    # -- shutdown ------------------------------------------------------------------------

    def send_signal_to_group(self, sig: int) -> bool:
        return _kill_group(self.pid, sig)

    async def aclose(self, grace: float = 3.0, term_grace: float = 2.0) -> None:
        """Bounded shutdown: close stdin, wait ``grace`` s, SIGTERM the group, wait
        ``term_grace`` s, SIGKILL the group. Leftover group members are killed too."""
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True):
            with contextlib.suppress(Exception):
                await self.stdin.aclose()
            if self.returncode is None:
                with anyio.move_on_after(grace):
                    await self.wait()
            if self.returncode is None:
                self.send_signal_to_group(signal.SIGTERM)
                with anyio.move_on_after(term_grace):
                    await self.wait()
            if self.returncode is None:
                self.send_signal_to_group(signal.SIGKILL)
                with anyio.move_on_after(10):
                    await self.wait()
            # Whatever the agent left behind in its group goes too (the watchdog included):
            # SIGTERM first, with up to ``term_grace`` for it to stop its own children (a CLI
            # stops the background commands it started in sessions of their own), then SIGKILL.
            if others_alive(self.pid, exclude=(self.supervisor_pid,)):
                self.send_signal_to_group(signal.SIGTERM)
                with anyio.move_on_after(term_grace):
                    while others_alive(self.pid, exclude=(self.supervisor_pid,)):
                        await anyio.sleep(0.05)
            self.send_signal_to_group(signal.SIGKILL)
            with _registry_lock:
                _live_groups.pop(self.pid, None)
                watch_fd = _watch_fds.pop(self.pid, None)
            if watch_fd is not None:
                os.close(watch_fd)
            with contextlib.suppress(Exception):
                await self.stdout.aclose()
            if self.returncode is not None:
                with contextlib.suppress(Exception):
                    await self._process.aclose()

    def __repr__(self) -> str:
        state = "running" if self.returncode is None else f"exited {self.returncode}"
        return f"<AgentProcess pid={self.pid} {state} argv={self.argv!r}>"


class AgentLink(NamedTuple):
    """What `open_agent_connection` yields: ``async with ... as (process, connection)``."""

    process: AgentProcess
    connection: Connection


@asynccontextmanager
async def open_agent_connection(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str | None] | None = None,
    env_overrides: Mapping[str, str | None] | None = None,
    request_handler: RequestHandler | None = None,
    notification_handler: NotificationHandler | None = None,
    on_problem: ProblemCallback | None = None,
    max_line_bytes: int = 64 * 2**20,
    name: str = "agent",
    stderr_limit: int = DEFAULT_STDERR_LIMIT,
    grace: float = 3.0,
    eof_grace: float = 2.0,
) -> AsyncIterator[AgentLink]:
    """Spawn an agent and speak JSON-RPC over its stdin/stdout.

    When the agent exits, every pending and every later request raises `AgentExited`, which
    names the exit code or signal and shows the tail of the agent's stderr.
    On exit of the block the connection is closed and the agent shut down (see
    `AgentProcess.aclose`).
    """
    overrides = {**(env or {}), **(env_overrides or {})}
    proc = await AgentProcess.start(argv, cwd=cwd, env=overrides, stderr_limit=stderr_limit)
    try:

        async def on_eof() -> BaseException:
            # stdout ended: normally the agent is exiting; give it a moment to do so.
            with anyio.move_on_after(eof_grace):
                return await proc.exit_error()
            return ConnectionClosed(
                f"the {name} closed its output but is still running (pid {proc.pid})"
            )

        conn = Connection(
            proc.stdout,
            proc.stdin,
            max_line_bytes=max_line_bytes,
            name=name,
            on_problem=on_problem,
            request_handler=request_handler,
            notification_handler=notification_handler,
            on_eof=on_eof,
        )

        async def watch_exit() -> None:
            await proc.wait()
            # Let the reader take what is still in the pipe; a grandchild may keep the
            # pipe open, so do not wait for end of file forever.
            with anyio.move_on_after(eof_grace):
                await conn.wait_closed()
            conn.fail(await proc.exit_error())

        async with conn, anyio.create_task_group() as tg:
            tg.start_soon(watch_exit)
            try:
                yield AgentLink(proc, conn)
            finally:
                tg.cancel_scope.cancel()
    finally:
        await proc.aclose(grace=grace)
