"""An ACP v2 agent that leaves a daemon behind, as Cline does, run as a real subprocess.

Usage: ``python daemon_agent.py PIDFILE``. Before it speaks it double-forks a daemon that
calls ``setsid`` (so it is outside the agent's session and process group, and its parent is
gone: it is an orphan), ignores SIGHUP and sleeps. ``{"pid", "pgid", "daemon"}`` goes to
PIDFILE (atomically). The agent itself is well behaved: it exits when its input ends, and
never stops the daemon.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path


def start_daemon() -> int:
    """Double fork and ``setsid``; return the daemon's pid."""
    read_end, write_end = os.pipe()
    first = os.fork()
    if first == 0:
        os.setsid()
        if os.fork() == 0:
            signal.signal(signal.SIGHUP, signal.SIG_IGN)
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            os.write(write_end, str(os.getpid()).encode())
            os.close(write_end)
            while True:
                time.sleep(60)
        os._exit(0)
    os.close(write_end)
    os.waitpid(first, 0)
    with os.fdopen(read_end, "rb") as f:
        return int(f.read())


def main() -> None:
    daemon = start_daemon()
    pidfile = Path(sys.argv[1])
    report = {"pid": os.getpid(), "pgid": os.getpgid(0), "daemon": daemon}
    tmp = pidfile.with_suffix(".tmp")
    tmp.write_text(json.dumps(report))
    tmp.replace(pidfile)
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        rid, method = message.get("id"), message.get("method")
        if rid is None or method is None:
            continue
        if method == "initialize":
            result: object = {
                "protocolVersion": 2,
                "info": {"name": "daemon", "title": "Daemon agent", "version": "1.0"},
                "capabilities": {"session": {}},
            }
            answer = {"jsonrpc": "2.0", "id": rid, "result": result}
        else:
            answer = {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": method}}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
