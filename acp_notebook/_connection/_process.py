"""Agent subprocesses: spawn without a shell, drain stderr, bounded shutdown, no orphans.

* The agent runs in its own session and process group (``start_new_session=True``), so
  shutdown signals reach the agent and everything it started.
* stderr goes to a pipe that a daemon thread drains into a bounded ring buffer. The thread
  does not depend on the event loop, so an agent flooding stderr never stalls, even while the
  loop is busy.
* Orphans: the agent is launched through `_connection._supervisor`, a watchdog (our child,
  a child subreaper on Linux) whose child is the agent, so every process of the agent's tree
  stays below it. The watchdog holds the read end of a pipe whose write end only this process
  holds; when this process closes it or dies, even by ``kill -9``, the watchdog SIGTERMs the
  agent's group and tree and SIGKILLs them a second later. When the agent exits, what it left
  goes the same way, and the watchdog exits as the agent did.
  Every live group is also kept in a module registry (plain pids); an ``atexit`` hook SIGKILLs
  whatever is left when the interpreter exits. ``PR_SET_PDEATHSIG`` is *not* used: it fires
  when the spawning *thread* exits, and some anyio backends (trio) spawn from a worker thread.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
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

__all__ = ["AgentLink", "AgentProcess", "open_agent_connection"]

DEFAULT_STDERR_LIMIT = 64 * 1024
# Seconds aclose waits for the watchdog to end what the agent left (its grace is 1 s, then
# SIGKILLs) before it kills the watchdog itself: a process stuck in the kernel never dies.
WATCHDOG_WAIT = 10.0
SPAWN_GUARD = 30.0  # seconds a spawn may take before it is given up (AgentProcess.start)

_live_groups: dict[int, int] = {}  # watchdog pid -> the agent's process group, for atexit
_watch_fds: dict[int, int] = {}  # watchdog pid -> our end of its pipe (close it: all ends)
_registry_lock = threading.Lock()
SUPERVISOR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_supervisor.py")


def set_pty_size(fd: int, cols: int, rows: int) -> None:
    """Set a PTY's window size (TIOCSWINSZ; the program on it gets SIGWINCH)."""
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


class PtyChild(NamedTuple):
    """A program `spawn_in_pty` started: its watchdog (our child, which exits as the program
    did once the program and what it left are gone), the PTY's master end (non-blocking), the
    kernel's end of the watchdog's pipe (close it, and the watchdog ends everything) and the
    program's pid (it leads its own session and process group)."""

    process: subprocess.Popen[bytes]
    master: int
    watch: int
    pid: int


def spawn_in_pty(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None,
    env: Mapping[str, str],
    cols: int,
    rows: int,
    ctty: bool = False,
    executable: str | None = None,
) -> PtyChild:
    """Start ``argv`` (a list, never a shell) through the supervisor, in a new session whose
    stdio is a fresh PTY of ``cols`` x ``rows`` (with ``ctty``, its controlling terminal);
    with ``executable``, that file runs with ``argv`` as its argv (no PATH search).
    When the exec fails, nothing is left running or open and the ``OSError`` Popen would
    give is raised. Blocking."""
    master, slave = os.openpty()
    set_pty_size(slave, cols, rows)
    watch_r, watch_w = os.pipe()  # close-on-exec: no other child inherits them
    status_r, status_w = os.pipe()
    launcher = [sys.executable, "-I", "-S", SUPERVISOR, str(watch_r), str(status_w)]
    try:
        process = subprocess.Popen(
            [
                *launcher,
                *(["--ctty"] if ctty else []),
                *(["--exec", executable] if executable is not None else []),
                "--",
                *argv,
            ],
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
    report = _read_report(status_r)
    failure, pid = _exec_failure(report), _agent_pid(report)
    if failure is not None or pid is None:
        os.close(watch_w)  # the watchdog ends whatever started, then exits
        process.wait()
        os.close(master)
        code = errno.ECHILD if failure is None else failure
        raise OSError(code, os.strerror(code), argv[0])
    os.set_blocking(master, False)
    return PtyChild(process, master, watch_w, pid)


#: What ``read_pty`` gives when nothing is ready yet (the master side is non-blocking).
NOT_YET = b""


def read_pty(fd: int, size: int) -> bytes | None:
    """One read of a PTY's master side (``spawn_in_pty`` made it non-blocking): the bytes,
    ``NOT_YET`` when nothing is ready, or None at its end (EOF, or EIO: every holder of the
    other side closed it). Any other error raises. The one read every PTY of the client
    layers (client terminals, the login terminal) goes through."""
    try:
        data = os.read(fd, size)
    except BlockingIOError:
        return NOT_YET
    except OSError as exc:
        if exc.errno == errno.EIO:
            return None
        raise
    return data or None


def _read_report(fd: int) -> str:
    """The launcher's report, read to its end (the exec closes it); closes ``fd``."""
    data = b""
    try:
        while chunk := os.read(fd, 4096):
            data += chunk
    finally:
        os.close(fd)
    return data.decode("ascii", "replace")


def _agent_pid(report: str) -> int | None:
    """The agent's pid in the launcher's report (``A <pid>``), else None (the fork failed)."""
    for line in report.splitlines():
        word, _, value = line.partition(" ")
        if word == "A" and value.isdigit():
            return int(value)
    return None


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
        self.pid: int = process.pid  # the agent's own pid once the launcher reported it
        self.supervisor_pid: int | None = process.pid  # the watchdog: our child, the agent's parent
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
        await anyio.lowlevel.checkpoint_if_cancelled()  # cancelled already: start nothing
        read_fd, write_fd = os.pipe()
        watch_r, watch_w = os.pipe()  # both ends close-on-exec: no other child inherits them
        status_r, status_w = os.pipe()
        launcher = [sys.executable, "-I", "-S", SUPERVISOR, str(watch_r), str(status_w), "--"]
        try:
            # Not cancelled midway: asyncio's spawn, cancelled while it connects the pipes,
            # SIGKILLs the watchdog, which may have forked the agent by then (orphaned, the agent
            # ran on), and leaves the pipes it connects afterwards unclosed. A cancellation lands
            # at the report's read below instead, whose handler ends the agent. (SPAWN_GUARD: a
            # spawn whose pipes fail to connect never ends in asyncio; it is given up then.)
            with anyio.fail_after(SPAWN_GUARD, shield=True):
                process = await anyio.open_process(
                    [*launcher, *args],
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
            _watch_fds[process.pid] = watch_w
        proc = cls(process, _StderrRing(read_fd, stderr_limit), args)
        try:
            # The launcher (the watchdog) reports the agent's pid; the agent's exec ends the
            # report, or the agent reports why it failed, the way Popen reports it.
            report = await _read_to_end(status_r)
            code, pid = _exec_failure(report), _agent_pid(report)
            if code is None and pid is None:  # no agent was forked
                code = errno.ECHILD
            if code is not None:
                raise OSError(code, os.strerror(code), args[0])
            assert pid is not None
            proc.pid = pid
            with _registry_lock:
                _live_groups[process.pid] = pid
            # a start cancelled meanwhile ends its agent here (the report may have been read
            # without waiting, so without a point where the cancellation could land)
            await anyio.lowlevel.checkpoint_if_cancelled()
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
        """Signal the agent's process group, only while its watchdog has not been reaped: the
        watchdog keeps the agent unreaped (so the group id taken) until it exits itself."""
        if self.returncode is not None or self.pid == self.supervisor_pid:
            return False
        return _kill_group(self.pid, sig)

    async def aclose(self, grace: float = 3.0, term_grace: float = 2.0) -> None:
        """Bounded shutdown: close stdin, wait ``grace`` s, SIGTERM the group, wait
        ``term_grace`` s, SIGKILL the group. The watchdog then ends what the agent left
        (anywhere below it: other sessions, double-forked daemons) and exits."""
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
            # The watchdog exits once the agent and everything it left are gone (it SIGTERMs
            # them, SIGKILLs them a second later); closing its pipe also tells it to end all.
            with _registry_lock:
                _live_groups.pop(self._process.pid, None)
                watch_fd = _watch_fds.pop(self._process.pid, None)
            if watch_fd is not None:
                os.close(watch_fd)
            if self.returncode is None:
                with anyio.move_on_after(WATCHDOG_WAIT):
                    await self.wait()
            if self.returncode is None:  # a stuck watchdog: what it could not end stays
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self._process.pid, signal.SIGKILL)
                await self.wait()
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
