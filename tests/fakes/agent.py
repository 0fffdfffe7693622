"""A small fake agent for process tests, run as a real subprocess.

It answers JSON-RPC requests on stdin/stdout. Flags:
  --ignore-term   ignore SIGTERM
  --ignore-eof    keep running after stdin ends
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def handle(method: str, params: Any) -> Any:
    if method == "echo":
        return params
    if method == "env":
        return os.environ.get(params["name"])
    if method == "cwd":
        return os.getcwd()
    if method == "pid":
        return {"pid": os.getpid(), "pgid": os.getpgid(0)}
    if method == "crash":
        sys.stderr.write("working...\nfatal: the fake agent crashed\n")
        sys.stderr.flush()
        os._exit(3)
    if method == "kill_self":
        os.kill(os.getpid(), signal.SIGKILL)
    if method == "stderr_flood":
        block = b"e" * 65535 + b"\n"
        left = params["bytes"]
        while left > 0:
            sys.stderr.buffer.write(block[:left])
            left -= len(block)
        sys.stderr.buffer.write(b"\nEND-OF-FLOOD\n")
        sys.stderr.flush()
        return "flooded"
    if method == "spawn_grandchild":
        child = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(600)"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return {"pid": child.pid, "pgid": os.getpgid(child.pid)}
    raise LookupError(method)


def main() -> None:
    flags = set(sys.argv[1:])
    if "--ignore-term" in flags:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    while line := sys.stdin.readline():
        message = json.loads(line)
        method, rid = message.get("method"), message.get("id")
        if rid is None:
            continue
        try:
            result = handle(method, message.get("params"))
        except LookupError:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": method}})
        else:
            send({"jsonrpc": "2.0", "id": rid, "result": result})
    if "--ignore-eof" in flags:
        while True:
            time.sleep(1)


if __name__ == "__main__":
    main()
