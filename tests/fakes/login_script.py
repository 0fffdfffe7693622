"""A stand-in for an agent's login command, run in a PTY by tests/test_login_pty.py.

``python login_script.py MODE``:

* ``login``: asks ``user: `` (echoed) and ``password: `` (``getpass``: not echoed); prints
  ``welcome USER`` and exits 0 for the password ``hunter2``, else ``wrong password``, exit 3.
* ``size``: prints ``size COLS ROWS`` now and ``winch COLS ROWS`` on every SIGWINCH; each
  line typed prints the size again; ``quit`` exits 0.
* ``linger``: starts a child that sleeps, prints ``child PID``, exits 0 on the next line
  typed (the child is left behind on purpose).
* ``tty``: prints ``ctty yes`` when /dev/tty (the controlling terminal) opens, and
  ``leader yes`` when the script leads its session; then waits for Ctrl+C (SIGINT).
"""

from __future__ import annotations

import getpass
import os
import signal
import subprocess
import sys
import time


def size(word: str) -> None:
    cols, rows = os.get_terminal_size(0)
    print(f"{word} {cols} {rows}", flush=True)


def main(mode: str) -> int:
    if mode == "login":
        user = input("user: ")
        secret = getpass.getpass("password: ")
        if secret == "hunter2":
            print(f"welcome {user}")
            return 0
        print("wrong password")
        return 3
    if mode == "size":
        signal.signal(signal.SIGWINCH, lambda *_: size("winch"))
        size("size")
        while (line := sys.stdin.readline()) and line.strip() != "quit":
            size("size")
        return 0
    if mode == "linger":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        print(f"child {child.pid}", flush=True)
        sys.stdin.readline()
        return 0
    if mode == "tty":
        fd = os.open("/dev/tty", os.O_RDWR)
        os.close(fd)
        print("ctty yes", flush=True)
        if os.getsid(0) == os.getpid():
            print("leader yes", flush=True)
        time.sleep(300)
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
