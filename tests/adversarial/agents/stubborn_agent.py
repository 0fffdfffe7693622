"""A stubborn ACP v2 agent for the orphan tests, run as a real subprocess.

Usage: ``python stubborn_agent.py PIDFILE``. It ignores SIGTERM, SIGHUP and SIGINT, starts a
child that ignores them too and stays in the agent's process group (no ``setsid``), writes
``{"pid", "pgid", "child"}`` to PIDFILE (atomically), and speaks just enough of the protocol
to be connected. When its input ends it does not exit: it sleeps forever, as does its child.
Only SIGKILL ends them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

STUBBORN = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


def ignore_signals() -> None:
    for sig in STUBBORN:
        signal.signal(sig, signal.SIG_IGN)


def main() -> None:
    ignore_signals()  # ignored dispositions are inherited by the child
    child = subprocess.Popen(
        [sys.executable, "-c", "import time\nwhile True: time.sleep(60)"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        restore_signals=False,
    )
    pidfile = Path(sys.argv[1])
    report = {"pid": os.getpid(), "pgid": os.getpgid(0), "child": child.pid}
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
                "info": {"name": "stubborn", "title": "Stubborn agent", "version": "1.0"},
                "capabilities": {"session": {}},
            }
            answer = {"jsonrpc": "2.0", "id": rid, "result": result}
        else:
            answer = {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": method}}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    while True:  # end of input: stay anyway
        time.sleep(60)


if __name__ == "__main__":
    main()
