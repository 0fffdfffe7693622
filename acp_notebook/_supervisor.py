"""Launch an agent with a watchdog that kills its process group when the kernel goes away.

Run by `acp_notebook._process` as ``python -I -S _supervisor.py WATCH_FD STATUS_FD -- ARGV...``
(by path, so that the package is not imported: the launcher must start fast), in a new
session, so that its pid is the agent's pid, process group and session id.

1. It forks a watchdog that detaches from the launcher at once (a double fork: init reaps
   it), stays in the agent's process group, drops stdio and every other descriptor, and keeps
   only WATCH_FD, the read end of a pipe whose write end only the kernel holds.
2. It writes ``W <watchdog pid>`` on STATUS_FD and execs ARGV, so the kernel's child *is*
   the agent: its pid, exit status and signals are the agent's own. STATUS_FD is
   close-on-exec. If the exec or a fork fails, ``E <errno>`` is written: the kernel then
   kills the group and raises, so an agent never goes on running unwatched.

The watchdog blocks on WATCH_FD. End of file means the kernel closed it or died, however it
died (``kill -9`` included): it then sends SIGTERM to the group, waits up to `GRACE` seconds
for the other members to go, and sends SIGKILL to the group, which ends the watchdog too.
While the watchdog lives the group exists, so its id cannot be reused by another process.
It ignores the signals that an agent or a terminal sends to a group (SIGTERM, SIGHUP,
SIGINT, ...); the kernel's own shutdown SIGKILLs the group, watchdog included.

Only ``os``, ``signal`` (its C module ``_signal``), ``sys`` and ``time`` are used.
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False  # not from typing: importing it would cost more than this whole module
if TYPE_CHECKING:
    import signal
else:
    try:  # the C module: ``signal`` adds enum, about a third of this launcher's startup
        import _signal as signal
    except ImportError:  # pragma: no cover - another Python implementation
        import signal

GRACE = 1.0  # seconds between SIGTERM and SIGKILL once the kernel is gone
POLL = 0.05
IGNORED = ("SIGTERM", "SIGHUP", "SIGINT", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGPIPE")


def others_alive(pgid: int, exclude: tuple[int | None, ...] = ()) -> bool:
    """Whether a live (non-zombie) process other than this one (and ``exclude``) is in the
    group.

    Reads /proc; where there is none, assume yes (the caller then waits the full grace)."""
    me = os.getpid()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True
    for entry in entries:
        if not entry.isdigit() or int(entry) == me or int(entry) in exclude:
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(b")") + 2 :].split()
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != b"Z":
            return True
    return False


def watch(watch_fd: int) -> None:
    """Block until the kernel's end of the pipe is closed, then end the process group."""
    pgid = os.getpgid(0)
    try:
        while os.read(watch_fd, 512):
            pass
    except OSError:
        pass
    try:
        os.killpg(pgid, signal.SIGTERM)
        deadline = time.monotonic() + GRACE
        while time.monotonic() < deadline and others_alive(pgid):
            time.sleep(POLL)
    finally:
        os.killpg(pgid, signal.SIGKILL)  # the watchdog itself included
    os._exit(0)  # pragma: no cover - not reached


def _detach(watch_fd: int) -> None:
    """In the watchdog: no stdio, no descriptor but ``watch_fd``, no cwd, no stray signals."""
    for name in IGNORED:
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(3, watch_fd)
    os.closerange(watch_fd + 1, 1 << 16)
    os.chdir("/")


def _report_failure(status_fd: int, exc: OSError) -> None:
    os.write(status_fd, f"E {exc.errno or 0}\n".encode())


def _start_watchdog(watch_fd: int, status_fd: int) -> None:
    first = os.fork()
    if first == 0:  # the intermediate child: fork the watchdog, report it, leave
        try:
            second = os.fork()
            if second == 0:
                try:
                    _detach(watch_fd)
                    watch(watch_fd)
                finally:
                    os._exit(0)
            os.write(status_fd, f"W {second}\n".encode())
        except OSError as exc:  # no watchdog: the kernel will kill the agent and raise
            _report_failure(status_fd, exc)
        finally:
            os._exit(0)
    os.waitpid(first, 0)


def main(argv: list[str]) -> None:
    if len(argv) < 5 or argv[3] != "--" or not (argv[1] + argv[2]).isdigit():
        sys.exit("usage: _supervisor.py WATCH_FD STATUS_FD -- ARGV...")
    watch_fd, status_fd, command = int(argv[1]), int(argv[2]), argv[4:]
    try:
        _start_watchdog(watch_fd, status_fd)
    except OSError as exc:
        _report_failure(status_fd, exc)
        os._exit(127)
    os.close(watch_fd)
    os.set_inheritable(status_fd, False)
    for name in ("SIGPIPE", "SIGXFSZ"):  # what Python ignores at startup, as Popen restores
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        _report_failure(status_fd, exc)
    os._exit(127)


if __name__ == "__main__":
    main(sys.argv)
