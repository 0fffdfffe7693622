"""Run one approved command in a pseudo-terminal and stream its output.

This is the only place in acp_notebook that hands a string to a shell: the embedded agent runs
commands the client has explicitly allowed, exactly as a terminal would.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import math
import os
import queue
import select
import signal
import struct
import subprocess
import termios
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import anyio

__all__ = [
    "BATCH_BYTES",
    "BATCH_SECONDS",
    "ExitStatus",
    "PtyCommand",
    "let_commands_receive_sigint",
]

BATCH_BYTES = 64 * 1024
BATCH_SECONDS = 0.020
_DRAIN_IDLE_SECONDS = 0.1
_IDLE_CHECK_SECONDS = 0.05  # how often a silent command's reader looks at whether it exited
_QUEUED_BATCHES = 16  # read ahead at most this many batches (1 MiB) while output is written


def let_commands_receive_sigint() -> bool:
    """Make sure the commands we start can be interrupted; return True if that needed a change.

    A process started in the background by a non-interactive shell (``nohup agent &``) begins
    with SIGINT *ignored*, and an ignored signal stays ignored across fork and exec: every
    command would then shrug off our interrupt and only die by SIGKILL after the grace period.
    A handler, unlike "ignore", is reset to the default on exec, so installing Python's usual
    one gives commands the default SIGINT behaviour again. Main thread only.
    """
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        return False
    signal.signal(signal.SIGINT, signal.default_int_handler)
    return True


@dataclass(frozen=True)
class ExitStatus:
    """How a command ended: an exit code, or the POSIX name of the signal that killed it."""

    exit_code: int | None = None
    signal: str | None = None

    @classmethod
    def from_returncode(cls, returncode: int) -> ExitStatus:
        if returncode < 0:
            try:
                name = signal.Signals(-returncode).name
            except ValueError:
                name = f"SIG{-returncode}"
            return cls(signal=name)
        return cls(exit_code=returncode)

    def to_wire(self) -> dict[str, object]:
        if self.signal is not None:
            return {"signal": self.signal}
        return {"exitCode": self.exit_code}

    @property
    def success(self) -> bool:
        return self.exit_code == 0 and self.signal is None


def _open_pty(cols: int, rows: int) -> tuple[int, int]:
    # The line discipline keeps its usual settings (OPOST, ONLCR: "\n" reaches us as "\r\n"),
    # so commands see the tty a terminal emulator gives them; the client gets those bytes.
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    os.set_blocking(master, False)
    return master, slave


class PtyCommand:
    """A shell command bound to a PTY; ``run`` it once, ``interrupt`` it from another task."""

    def __init__(
        self,
        command: str,
        cwd: Path,
        *,
        cols: int = 80,
        rows: int = 24,
        grace: float = 1.0,
        env: dict[str, str] | None = None,
    ) -> None:
        self.command = command
        self.cwd = cwd
        self.cols = cols
        self.rows = rows
        self.grace = grace
        self._env = env
        self._interrupt = anyio.Event()
        self._pid: int | None = None

    def interrupt(self) -> None:
        """SIGINT the command's process group now, SIGKILL it after the grace period."""
        self._interrupt.set()

    def _signal_group(self, sig: signal.Signals) -> None:
        if self._pid is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._pid, sig)

    async def run(self, on_output: Callable[[bytes], Awaitable[None]]) -> ExitStatus:
        """Start the command, feed its output to ``on_output`` in batches, return how it ended.

        Batches are at most ``BATCH_BYTES`` and are flushed at the latest ``BATCH_SECONDS``
        after their first byte. Awaiting ``on_output`` applies back-pressure to the command.
        """
        master, slave = _open_pty(self.cols, self.rows)
        env = dict(os.environ if self._env is None else self._env)
        env["TERM"] = "xterm-256color"
        env["COLUMNS"] = str(self.cols)
        env["LINES"] = str(self.rows)
        try:
            proc = subprocess.Popen(  # the approved command: the one permitted shell use
                ["/bin/sh", "-c", self.command],
                stdin=slave,
                stdout=slave,
                stderr=slave,
                cwd=self.cwd,
                env=env,
                start_new_session=True,
                close_fds=True,
            )
        except BaseException:
            os.close(master)
            os.close(slave)
            raise
        os.close(slave)
        self._pid = proc.pid
        exited = anyio.Event()
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._watch_interrupt, exited)
                tg.start_soon(self._wait_exit, proc.pid, exited)
                await self._pump(master, on_output, exited)
                await exited.wait()
                tg.cancel_scope.cancel()
        finally:
            os.close(master)
            self._signal_group(signal.SIGKILL)  # no-op unless we were cancelled early
            with anyio.CancelScope(shield=True):
                returncode = await anyio.to_thread.run_sync(proc.wait)
        return ExitStatus.from_returncode(returncode)

    async def _wait_exit(self, pid: int, exited: anyio.Event) -> None:
        # Wait without reaping so the process group id stays reserved until we kill leftovers.
        await anyio.to_thread.run_sync(
            lambda: os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT), abandon_on_cancel=True
        )
        # Background children the command left behind die with it; what they already wrote
        # stays buffered in the PTY and is still drained.
        self._signal_group(signal.SIGKILL)
        exited.set()

    async def _watch_interrupt(self, exited: anyio.Event) -> None:
        await self._interrupt.wait()
        self._signal_group(signal.SIGINT)
        with anyio.move_on_after(self.grace):
            await exited.wait()
        if not exited.is_set():
            self._signal_group(signal.SIGKILL)

    async def _pump(
        self, fd: int, on_output: Callable[[bytes], Awaitable[None]], exited: anyio.Event
    ) -> None:
        # A reader thread reads the PTY all along, with one poll object that keeps the fd
        # registered (waiting in the event loop registered and unregistered it with epoll at
        # every read, and nothing read while ``on_output`` was awaited: a PTY holds a few KiB,
        # so the command waited). It queues batches, at most ``_QUEUED_BATCHES`` ahead of
        # ``on_output``; past that the PTY fills up and the command waits (back-pressure).
        # The thread has ended before this returns (the caller then closes the fd).
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        batches: queue.Queue[tuple[bytes, bool]] = queue.Queue(maxsize=_QUEUED_BATCHES)
        stop = threading.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(
                anyio.to_thread.run_sync, _read_into, fd, poller, exited.is_set, batches, stop
            )
            try:
                while True:
                    for data, end in await anyio.to_thread.run_sync(_take_batches, batches):
                        if data:
                            await on_output(data)
                        if end:
                            return
            finally:
                stop.set()


def _read_into(
    fd: int,
    poller: select.poll,
    exited: Callable[[], bool],
    batches: queue.Queue[tuple[bytes, bool]],
    stop: threading.Event,
) -> None:
    """The reader thread: `_read_batch` after `_read_batch` into ``batches`` until the end
    (queued last, as ``(data, True)``) or until ``stop`` is set."""
    while not stop.is_set():
        data, end = _read_batch(fd, poller, exited)
        if data or end:
            while True:
                try:
                    batches.put((data, end), timeout=_IDLE_CHECK_SECONDS)
                    break
                except queue.Full:
                    if stop.is_set():
                        return
        if end:
            return


def _take_batches(batches: queue.Queue[tuple[bytes, bool]]) -> list[tuple[bytes, bool]]:
    """Every batch queued now, waiting up to ``_IDLE_CHECK_SECONDS`` for a first one."""
    try:
        taken = [batches.get(timeout=_IDLE_CHECK_SECONDS)]
    except queue.Empty:
        return []
    while True:
        try:
            taken.append(batches.get_nowait())
        except queue.Empty:
            return taken


def _read_batch(fd: int, poller: select.poll, exited: Callable[[], bool]) -> tuple[bytes, bool]:
    """Read ``fd`` until a batch is due: ``BATCH_BYTES`` read, ``BATCH_SECONDS`` after its
    first byte, or the end. Returns ``(bytes, ended)``; with nothing read it returns after
    ``_IDLE_CHECK_SECONDS`` so the caller can stop (cancellation waits for it). Once the
    command has ``exited``, what is still buffered in the PTY is drained; silence for
    ``_DRAIN_IDLE_SECONDS`` then ends it (a leftover may hold the slave side open)."""
    buf = bytearray()
    first = 0.0
    while True:
        if buf:
            timeout = first + BATCH_SECONDS - time.monotonic()
            if timeout <= 0:
                return bytes(buf), False
        elif exited():
            timeout = _DRAIN_IDLE_SECONDS
        else:
            timeout = _IDLE_CHECK_SECONDS
        if not poller.poll(max(1, math.ceil(timeout * 1000))):
            if buf:
                return bytes(buf), False
            # nothing read: the end after a drain's silence, else back to the caller (which
            # may have been cancelled meanwhile)
            return b"", timeout >= _DRAIN_IDLE_SECONDS and exited()
        try:
            data = os.read(fd, BATCH_BYTES - len(buf))
        except BlockingIOError:
            continue
        except OSError as exc:
            if exc.errno != errno.EIO:  # EIO: every holder of the slave side closed it
                raise
            data = b""
        if not data:
            return bytes(buf), True
        if not buf:
            first = time.monotonic()
        buf += data
        if len(buf) >= BATCH_BYTES:
            return bytes(buf), False
