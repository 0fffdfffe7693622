"""Run one approved command in a pseudo-terminal and stream its output.

This is the only place in acp_notebook that hands a string to a shell: the embedded agent runs
commands the client has explicitly allowed, exactly as a terminal would.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import signal
import struct
import subprocess
import termios
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

BATCH_BYTES = 16 * 1024
BATCH_SECONDS = 0.020
_DRAIN_IDLE_SECONDS = 0.1


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
        buf = bytearray()
        first = 0.0
        while True:
            if buf:
                timeout = max(0.0, first + BATCH_SECONDS - time.monotonic())
            elif exited.is_set():
                # The command is gone: only drain what is still buffered in the PTY.
                timeout = _DRAIN_IDLE_SECONDS
            else:
                timeout = 0.05  # re-check ``exited`` now and then
            readable = False
            with anyio.move_on_after(timeout):
                await anyio.wait_readable(fd)
                readable = True
            if not readable:
                if buf:
                    await on_output(bytes(buf))
                    buf.clear()
                elif exited.is_set():
                    return
                continue
            try:
                data = os.read(fd, BATCH_BYTES - len(buf))
            except BlockingIOError:
                continue
            except OSError as exc:
                if exc.errno != errno.EIO:  # EIO: every holder of the slave side closed it
                    raise
                data = b""
            if not data:
                break
            if not buf:
                first = time.monotonic()
            buf += data
            if len(buf) >= BATCH_BYTES:
                await on_output(bytes(buf))
                buf.clear()
        if buf:
            await on_output(bytes(buf))
