"""Launch an agent under a watchdog that ends the agent's whole process tree when the kernel goes.

Run by `_connection._process` as ``python -I -S _supervisor.py WATCH_FD STATUS_FD [--ctty] --
ARGV...`` (by path, so that the package is not imported: the launcher must start fast), in a
new session. The launcher *is* the watchdog; the agent is its child:

1. On Linux it makes itself a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``): every
   process of the agent's tree whose parent dies is reparented to the watchdog, not to init.
   A command the agent runs in a session or PTY of its own, a daemon that double-forks out of
   the agent's process group: all stay below the watchdog, where it can find them.
2. It forks the agent, which calls ``setsid`` (so the agent leads its own session and process
   group: signals the kernel sends to that group are the agent's own, and the watchdog is not
   in it), makes fd 0 its controlling terminal with ``--ctty``, and execs ARGV. The watchdog
   writes ``A <agent pid>`` on STATUS_FD; the agent's copy is close-on-exec, so end of file
   means the exec happened. If the exec fails, the agent writes ``E <errno>`` and exits 127.
3. The watchdog points its stdio at /dev/null, closes every other descriptor but WATCH_FD
   (the read end of a pipe whose write end only the kernel holds), ``chdir``s to ``/`` and
   ignores the signals a terminal or an agent may send (SIGTERM, SIGHUP, SIGINT, ...).

Then it waits for two things at once (a thread for each):

* End of file on WATCH_FD: the kernel closed its end or died, however it died (``kill -9``
  included). Everything goes: SIGTERM to the agent's group and to every live process below
  the watchdog (read from /proc), up to `GRACE` seconds for them to go, then SIGKILL until
  none is left.
* The agent's exit (seen with ``WNOWAIT``, so the agent's pid, and with it its process group
  id, stays taken until the end): what the agent left running goes the same way.

Orphans that exit meanwhile are reaped. Last, the watchdog reaps the agent and exits the way
the agent did (the same exit code, or killed by the same signal, without a core dump), so the
kernel's child reports the agent's own return code.

Without /proc and ``prctl`` (not Linux), it degrades to what it can reach: the agent's
process group. Only ``os``, ``signal`` (its C module ``_signal``), ``sys``, ``time`` and the
C module ``_thread`` are imported at start; ``ctypes`` (Linux) and ``fcntl``/``termios``
(``--ctty``) only where they are used.
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

GRACE = 1.0  # seconds between SIGTERM and SIGKILL once the kernel or the agent is gone
POLL = 0.05
IGNORED = ("SIGTERM", "SIGHUP", "SIGINT", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGPIPE")
PR_SET_DUMPABLE = 4  # <linux/prctl.h>: 0 = no core dump when the exit is mirrored
PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>: orphans below us are reparented to us
USAGE = "usage: _supervisor.py WATCH_FD STATUS_FD [--ctty] [--exec FILE] -- ARGV..."


def _proc_table() -> dict[int, tuple[bytes, int, int]] | None:
    """pid -> (state, ppid, pgid) of every process in /proc, or None without /proc."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    table = {}
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(b")") + 2 :].split()
        if len(fields) > 2:
            table[int(entry)] = (fields[0], int(fields[1]), int(fields[2]))
    return table


def remaining(root: int, pgid: int) -> set[int] | None:
    """Live (non-zombie) processes below ``root`` or in group ``pgid``, ``root`` excluded.

    None without /proc: the caller then knows only the group."""
    table = _proc_table()
    if table is None:
        return None
    children: dict[int, list[int]] = {}
    for pid, (_, ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found = {pid for pid, (_, _, group) in table.items() if group == pgid}
    below: set[int] = set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in below:
                below.add(child)
                todo.append(child)
    found |= below
    found.discard(root)
    return {pid for pid in found if table[pid][0] != b"Z"}


def _send(target: int, sig: int, *, group: bool = False) -> bool:
    """Signal a process (or a process group); False when it is gone."""
    try:
        (os.killpg if group else os.kill)(target, sig)
    except OSError:
        return False
    return True


def _signal_all(pids: set[int] | None, pgid: int, sig: int) -> None:
    for target in sorted(pids or ()):
        _send(target, sig)
    _send(pgid, sig, group=True)


def end_all(agent: int) -> None:
    """SIGTERM the agent's group and every live process below us, wait up to `GRACE` for them
    to go, then SIGKILL them until none is left (a new one may have been forked meanwhile)."""
    me = os.getpid()
    _signal_all(remaining(me, agent), agent, signal.SIGTERM)
    deadline = time.monotonic() + GRACE
    while time.monotonic() < deadline and remaining(me, agent) != set():
        time.sleep(POLL)
    while True:
        left = remaining(me, agent)
        _signal_all(left, agent, signal.SIGKILL)
        if not left:  # nothing left, or no /proc: the group was all we could reach
            return
        time.sleep(POLL)


def _prctl(option: int, value: int) -> bool:
    """``prctl(option, value)`` through ctypes on Linux; False where it is not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, ctypes.c_ulong(value), 0, 0, 0)) == 0
    except (OSError, AttributeError):  # pragma: no cover - no libc prctl
        return False


def _report(status_fd: int, line: str) -> bool:
    """Write a line of the report; False when the kernel is gone already (the watch pipe
    then tells the rest)."""
    try:
        os.write(status_fd, f"{line}\n".encode())
    except OSError:
        return False
    return True


def _exec_agent(
    watch_fd: int, status_fd: int, ctty: bool, command: list[str], file: str | None = None
) -> None:
    """In the forked child: lead a new session, take the PTY with ``ctty``, exec the agent
    (``file`` with ``command`` as its argv, when given: its ``argv[0]`` stays as named)."""
    try:
        os.close(watch_fd)
        os.setsid()
        if ctty:
            import fcntl
            import termios

            fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        os.set_inheritable(status_fd, False)
        for name in ("SIGPIPE", "SIGXFSZ"):  # what Python ignores at startup, as Popen restores
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), signal.SIG_DFL)
        if file is not None:
            os.execv(file, command)
        os.execvp(command[0], command)
    except OSError as exc:
        _report(status_fd, f"E {exc.errno or 0}")
    finally:
        os._exit(127)


def _detach(watch_fd: int) -> None:
    """In the watchdog: no stdio, no descriptor but ``watch_fd``, no cwd, no stray signals."""
    for name in IGNORED:
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    os.chdir("/")
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(3, watch_fd)  # last: the report's end tells the kernel all this is done
    os.closerange(watch_fd + 1, 1 << 16)


def _watch_pipe(watch_fd: int, agent: int) -> None:
    """The pipe's thread: block until the kernel's end closes, then end everything."""
    try:
        while os.read(watch_fd, 512):
            pass
    except OSError:
        pass
    end_all(agent)


def _wait_for_agent(agent: int) -> None:
    """Until the agent has exited (left unreaped), reaping the orphans that exit meanwhile."""
    waitid = getattr(os, "waitid", None)
    if waitid is None:  # pragma: no cover - no waitid: the agent is reaped here
        os.waitpid(agent, 0)
        return
    while True:
        try:
            info = waitid(os.P_ALL, 0, os.WEXITED | os.WNOWAIT)
        except ChildProcessError:  # pragma: no cover - the agent is always our child
            return
        if info is None:  # pragma: no cover - only with WNOHANG
            continue
        if info.si_pid == agent:
            return
        try:
            os.waitpid(info.si_pid, 0)
        except ChildProcessError:  # pragma: no cover - reaped by another wait
            continue


def _exit_as(status: int) -> None:
    """Exit the way the agent did: its exit code, or killed by its signal (no core dump)."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        _prctl(PR_SET_DUMPABLE, 0)
        try:
            signal.signal(sig, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
        except (OSError, ValueError):  # SIGKILL cannot be caught, nor need be reset
            pass
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)  # pragma: no cover - a signal that does not end a process
    os._exit(os.waitstatus_to_exitcode(status))


def _parse(argv: list[str]) -> tuple[int, int, bool, str | None, list[str]]:
    rest = argv[3:]
    ctty = rest[:1] == ["--ctty"]
    if ctty:
        rest = rest[1:]
    file = None
    if rest[:1] == ["--exec"] and len(rest) > 1:
        file, rest = rest[1], rest[2:]
    if len(argv) < 5 or len(rest) < 2 or rest[0] != "--" or not (argv[1] + argv[2]).isdigit():
        sys.exit(USAGE)
    return int(argv[1]), int(argv[2]), ctty, file, rest[1:]


def main(argv: list[str]) -> None:
    watch_fd, status_fd, ctty, file, command = _parse(argv)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    try:
        agent = os.fork()
    except OSError as exc:
        _report(status_fd, f"E {exc.errno or 0}")
        os._exit(127)
    if agent == 0:
        _exec_agent(watch_fd, status_fd, ctty, command, file)
    _report(status_fd, f"A {agent}")
    # _detach closes status_fd too: the kernel reads to its end, so when the spawn returns
    # the watchdog holds /dev/null and the watch pipe only (closing it first was a race)
    _detach(watch_fd)
    import _thread

    _thread.start_new_thread(_watch_pipe, (watch_fd, agent))
    _wait_for_agent(agent)
    end_all(agent)  # what the agent left behind (nothing, if the pipe's thread ended it)
    _, status = os.waitpid(agent, 0)
    _exit_as(status)


if __name__ == "__main__":
    main(sys.argv)
