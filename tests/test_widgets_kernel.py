"""TerminalWidget in a real ipykernel: bytes fed from a background thread leave the kernel as
coalesced binary comm messages, also while the cell keeps the main thread busy."""

from __future__ import annotations

import os
import queue
import re
from collections.abc import Iterator
from typing import Any

import pytest
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import KernelManager

from tests.kernel_driver import start_kernel

MAX_WAIT = 60  # seconds; a guard against hanging, not an assertion on speed


@pytest.fixture(scope="module")
def kernel() -> Iterator[BlockingKernelClient]:
    km: KernelManager
    km, kc = start_kernel()
    try:
        yield kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def run_cell(kc: BlockingKernelClient, code: str) -> list[dict[str, Any]]:
    """Execute ``code`` and return every iopub message of that request, up to idle."""
    msg_id = kc.execute(code)
    messages: list[dict[str, Any]] = []
    while True:
        try:
            msg = kc.get_iopub_msg(timeout=MAX_WAIT)
        except queue.Empty:  # pragma: no cover - reported as a failure below
            pytest.fail(f"no idle status for {code!r}; got {[m['msg_type'] for m in messages]}")
        if msg["parent_header"].get("msg_id") != msg_id and msg["msg_type"] != "comm_msg":
            continue
        messages.append(msg)
        if msg["msg_type"] == "error":
            pytest.fail("\n".join(msg["content"]["traceback"]))
        if (
            msg["msg_type"] == "status"
            and msg["parent_header"].get("msg_id") == msg_id
            and msg["content"]["execution_state"] == "idle"
        ):
            return messages


def custom_messages(messages: list[dict[str, Any]]) -> list[tuple[dict[str, Any], bytes]]:
    out = []
    for msg in messages:
        if msg["msg_type"] != "comm_msg":
            continue
        data = msg["content"]["data"]
        if data.get("method") == "custom":
            out.append((data["content"], b"".join(bytes(b) for b in msg["buffers"])))
    return out


def test_thread_fed_bytes_leave_while_the_cell_is_busy(kernel: BlockingKernelClient) -> None:
    code = """
import threading, time
from acp_notebook._widgets import TerminalWidget
from acp_notebook._widgets._coalesce import thread_timer
fired = []
def counting(delay, callback):
    return thread_timer(delay, lambda: (fired.append(1), callback()))
w = TerminalWidget(command="flood", schedule=counting)
data = bytes(range(256)) * 4096 * 5   # 5 MiB
fed = threading.Event()
took = []
def run():
    t0 = time.monotonic()
    for i in range(0, len(data), 1024):
        w.feed(data[i:i + 1024])
    took.append(time.monotonic() - t0)
    fed.set()
threading.Thread(target=run).start()
fed.wait()
# The cell keeps the main thread busy while the timer thread flushes the tail.
deadline = time.monotonic() + 30
def settled():
    with w._coalescer._lock:  # a flush empties `pending` and sends under this lock
        return not w._coalescer._pending_size
while not settled() and time.monotonic() < deadline:
    time.sleep(0.01)
print("seq", w.seq, "timer flushes", len(fired), "feeding took", took[0])
"""
    messages = run_cell(kernel, code)
    chunks = custom_messages(messages)
    idle_index = len(messages) - 1
    assert idle_index > 0
    assert [c["seq"] for c, _ in chunks] == list(range(1, len(chunks) + 1))
    data = bytes(range(256)) * 4096 * 5
    assert b"".join(b for _, b in chunks) == data
    printed = "".join(m["content"].get("text", "") for m in messages if m["msg_type"] == "stream")
    match = re.search(r"seq (\d+) timer flushes (\d+) feeding took ([0-9.e-]+)", printed)
    assert match is not None, printed
    assert int(match[1]) == len(chunks)
    fired, took = int(match[2]), float(match[3])
    # Never more than one 64 KiB batch per flush (5 MiB / 64 KiB = 80) plus the timer flushes,
    # and never more than one size flush per 30 ms gap (the default) while the bytes kept coming.
    assert len(chunks) <= len(data) // (64 * 1024) + fired
    assert len(chunks) <= took / 0.03 + fired + 1


def test_ready_is_answered_with_the_backlog(kernel: BlockingKernelClient) -> None:
    code = """
from acp_notebook._widgets import TerminalWidget
v = TerminalWidget(command="late")
v.feed(b"\\x1b[32mok\\x1b[0m\\r\\n")
v.flush()
# what the front end's comm sends when a second view renders
v._handle_msg({"content": {"data": {"method": "custom",
    "content": {"type": "ready", "token": "t-1"}}}, "buffers": []})
"""
    messages = run_cell(kernel, code)
    answers = [(c, b) for c, b in custom_messages(messages) if c["type"] == "backlog"]
    assert answers == [
        ({"type": "backlog", "seq": 1, "token": "t-1", "omitted": 0}, b"\x1b[32mok\x1b[0m\r\n")
    ]


def test_the_suites_kernels_talk_over_ipc_sockets_not_tcp_ports(
    kernel: BlockingKernelClient,
) -> None:
    # A kernel over TCP binds ports its manager picked, closed and wrote down half a second
    # earlier: a connection opened in between may take one, and the kernel dies with "Address
    # already in use" (a CI run failed so). tests/kernel_driver.start_kernel uses IPC sockets
    # named after the kernel's own connection file, in an absolute path the kernel's working
    # directory cannot change.
    assert kernel.transport == "ipc"
    assert os.path.isabs(kernel.ip) and os.path.basename(kernel.ip).startswith("kernel-acp-test-")
    assert os.path.exists(f"{kernel.ip}-{kernel.shell_port}")  # the socket the kernel bound
