"""Finding 11 of issue 22: the kernel tools' port is open to every local user (the token is
checked per request), and each connection it holds is a file descriptor of the kernel. The
server holds at most ``MAX_CONNECTIONS``, closes a connection that has not delivered a
complete request within ``REQUEST_DEADLINE``, and a failed accept (EMFILE) only pauses it."""

from __future__ import annotations

import concurrent.futures
import http.client
import json
import socket
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from acp_notebook._kernel._tools import MAX_CONNECTIONS, REQUEST_DEADLINE, KernelTools

GUARD = 60.0  # seconds; a guard against hanging, never an assertion on speed


class _Session:
    id = "s1"
    closed = False


def _wait(predicate: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + GUARD
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def _port(url: str) -> int:
    port = urllib.parse.urlsplit(url).port
    assert port is not None
    return port


def _closed_by_server(sock: socket.socket) -> bool:
    """Waits (at most ``GUARD``) for the server to close ``sock``: EOF or a reset."""
    sock.settimeout(GUARD)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def _still_open(sock: socket.socket) -> bool:
    """Nothing to read and no EOF: the server holds the connection."""
    sock.setblocking(False)
    try:
        sock.recv(1)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        sock.setblocking(True)
    return False


def _call_body(name: str, args: dict[str, Any]) -> str:
    params = {"name": name, "arguments": args}
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})


def _request(port: int, token: str, body: str) -> http.client.HTTPConnection:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=GUARD)
    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    conn.request("POST", "/mcp", body, headers)
    return conn


def _answer(conn: http.client.HTTPConnection) -> tuple[int, str]:
    response = conn.getresponse()
    result = response.status, response.read().decode(errors="replace")
    conn.close()
    return result


@pytest.fixture
def patient() -> Iterator[KernelTools]:
    """A server whose deadline is out of the way: only the cap closes connections."""
    server = KernelTools(lambda: {"alive": 1}, request_deadline=GUARD * 10)
    server.start()
    yield server
    server.stop()


def test_at_most_max_connections_are_held_and_one_more_is_closed_at_once(
    patient: KernelTools,
) -> None:
    port = _port(patient.url)
    held = [
        socket.create_connection(("127.0.0.1", port), timeout=GUARD) for _ in range(MAX_CONNECTIONS)
    ]
    assert len(held) == MAX_CONNECTIONS
    try:
        _wait(lambda: patient.open_connections == MAX_CONNECTIONS, "the cap's worth held")
        extra = socket.create_connection(("127.0.0.1", port), timeout=GUARD)
        assert _closed_by_server(extra)
        extra.close()
        assert patient.open_connections == MAX_CONNECTIONS
        assert all(_still_open(sock) for sock in held)
        # one slot freed: a real request gets its answer again
        held.pop().close()
        _wait(lambda: patient.open_connections < MAX_CONNECTIONS, "a slot to free")
        token = patient.issue("a").token
        status, body = _answer(_request(port, token, _call_body("list_variables", {})))
        assert status == 200 and "alive" in body
    finally:
        for sock in held:
            sock.close()


def test_a_connection_without_a_complete_request_in_time_is_closed() -> None:
    pending: list[concurrent.futures.Future[Any]] = []

    def run_code(session: Any, code: str) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        pending.append(future)  # answered once the slow connections are gone
        return future

    server = KernelTools(dict, run_code=run_code)
    server.start()
    try:
        assert REQUEST_DEADLINE <= 10  # "a few seconds"
        port = _port(server.url)
        grant = server.issue("a")
        server.bind(grant, _Session())  # type: ignore[arg-type]
        silent = socket.create_connection(("127.0.0.1", port), timeout=GUARD)
        half_headers = socket.create_connection(("127.0.0.1", port), timeout=GUARD)
        half_headers.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        half_body = socket.create_connection(("127.0.0.1", port), timeout=GUARD)
        half_body.sendall(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Authorization: Bearer " + grant.token.encode() + b"\r\n"
            b'Content-Length: 100\r\n\r\n{"jsonrpc":'
        )
        # a complete request whose answer (a code card) takes longer than the deadline
        waiting = _request(port, grant.token, _call_body("run_code", {"code": "x = 1"}))
        _wait(lambda: pending, "run_code to be asked")
        for sock in (silent, half_headers, half_body):
            assert _closed_by_server(sock)
            sock.close()
        _wait(lambda: server.open_connections == 1, "only the waiting request to be held")
        from acp_notebook._notebook._kernel_code import CodeOutcome

        pending[0].set_result(CodeOutcome(True, "ran late\n", None, "allowed"))
        status, body = _answer(waiting)
        assert status == 200 and "ran late" in body
    finally:
        server.stop()


HOG = """
import json, os, resource, sys
from acp_notebook._kernel._tools import KernelTools

tools = KernelTools(lambda: {"alive": 1})
tools.start()
print(json.dumps({"url": tools.url, "token": tools.issue("a").token}), flush=True)
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 256), hard))
hog = []
try:
    while True:
        hog.append(os.open(os.devnull, os.O_RDONLY))
except OSError:
    pass
print("FULL", flush=True)
sys.stdin.readline()
for fd in hog:
    os.close(fd)
print("FREE", flush=True)
sys.stdin.readline()
"""


@pytest.mark.process
def test_an_accept_that_fails_for_want_of_descriptors_only_pauses_the_listener(
    tmp_path: Path,
) -> None:
    errors = tmp_path / "stderr.txt"
    with errors.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", HOG],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        started = json.loads(proc.stdout.readline())
        assert proc.stdout.readline() == "FULL\n"
        port = _port(started["url"])
        knocking = socket.create_connection(("127.0.0.1", port), timeout=GUARD)
        _wait(lambda: "Too many open files" in errors.read_text(), "an accept to fail")
        proc.stdin.write("go on\n")
        proc.stdin.flush()
        assert proc.stdout.readline() == "FREE\n"
        status, body = _answer(_request(port, started["token"], _call_body("list_variables", {})))
        assert status == 200 and "alive" in body
        knocking.close()
    finally:
        proc.kill()
        proc.wait()
        proc.stdin.close()
        proc.stdout.close()
