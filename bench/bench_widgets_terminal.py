"""Kernel-side cost of TerminalWidget.feed through ipykernel's real comm send path, no browser.

    python bench/bench_widgets_terminal.py [--seconds 3] [--piece 1024] [--terminals 10]

An ipykernel ``Kernel`` instance is made with a real ``jupyter_client`` ``Session`` (JSON
serialisation, HMAC signature) whose iopub socket records every multipart message it is
given, so each widget message goes through ipywidgets, ``comm`` and ipykernel's
``publish_msg`` exactly as in a kernel; only ZMQ is left out. Bytes are fed as fast as one
thread can for ``--seconds`` (the agent's rate is then whatever the widget takes), first into
one terminal, then round robin into ``--terminals`` terminals. For each: process CPU per MiB
(the feeding thread and the flush timer thread), terminal messages per second per terminal
and in all, and a check that each terminal's sequence numbers are contiguous and its bytes
equal what was fed.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import ipykernel.ipkernel  # noqa: F401  (installs ipykernel's comm hooks)
from ipykernel.kernelbase import Kernel
from jupyter_client.session import Session

from acp_notebook._widgets import TerminalWidget


class RecordingSocket:
    """Stands for the iopub socket: keeps every multipart message (thread-safe append)."""

    def __init__(self) -> None:
        self.sent: list[tuple[float, list[Any]]] = []

    def send_multipart(self, parts: list[Any], *args: Any, **kwargs: Any) -> None:
        self.sent.append((time.monotonic(), list(parts)))


def peak(times: list[float]) -> int:
    """The most messages in any 1 s window (ends included)."""
    times = sorted(times)
    best = lo = 0
    for hi, t in enumerate(times):
        while t - times[lo] > 1.0:
            lo += 1
        best = max(best, hi - lo + 1)
    return best


def run(
    session: Session, sock: RecordingSocket, terminals: int, seconds: float, piece: int
) -> None:
    line = b"\x1b[32mPASSED\x1b[0m tests/test_x.py::test_case \xc3\xbc 0123456789\r\n"
    data = (line * (piece // len(line) + 1))[:piece]
    widgets = [TerminalWidget(command=f"bench {i}") for i in range(terminals)]
    comm_ids = {w.comm.comm_id: i for i, w in enumerate(widgets)}
    first = len(sock.sent)
    fed = [0] * terminals
    wall0, cpu0 = time.monotonic(), time.process_time()
    deadline = wall0 + seconds
    while time.monotonic() < deadline:
        for i, widget in enumerate(widgets):
            for _ in range(16):
                widget.feed(data)
            fed[i] += 16 * piece
    fed_until = time.monotonic()
    for widget in widgets:
        widget.flush()
    wall, cpu = time.monotonic() - wall0, time.process_time() - cpu0
    seqs: list[list[int]] = [[] for _ in widgets]
    times: list[list[float]] = [[] for _ in widgets]  # of the messages sent while feeding
    got = [0] * terminals
    for at, parts in sock.sent[first:]:
        _, msg_list = session.feed_identities(parts)
        msg = session.deserialize(msg_list)
        content = msg["content"]
        which = comm_ids.get(content.get("comm_id"))
        data_msg = content.get("data", {}).get("content", {})
        if which is None or msg["msg_type"] != "comm_msg" or data_msg.get("type") != "chunk":
            continue
        seqs[which].append(data_msg["seq"])
        if at <= fed_until:
            times[which].append(at)
        got[which] += sum(len(b) for b in msg["buffers"])
    for widget in widgets:
        widget.close()
    contiguous = all(s == list(range(1, len(s) + 1)) for s in seqs)
    equal = got == fed
    mib = sum(fed) / 2**20
    counts = [len(s) for s in seqs]
    print(f"{terminals} terminal(s): fed {mib:.1f} MiB in {piece} B pieces in {wall:.2f} s")
    print(f"  kernel CPU: {1000 * cpu / mib:.2f} ms/MiB  ({mib / cpu:.0f} MiB/s)")
    print(
        f"  terminal messages: {sum(counts)} = {sum(counts) / wall:.1f} msg/s in all; "
        f"per terminal max {max(counts) / wall:.1f} msg/s ({sum(counts) / mib:.1f} per MiB)"
    )
    per = max(peak(t) for t in times)
    every = peak([t for ts in times for t in ts])
    print(f"  peak 1 s window while feeding: {per} per terminal, {every} in all")
    print(f"  sequence numbers contiguous={contiguous}; bytes equal={equal}")
    if not (contiguous and equal):
        raise SystemExit(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--piece", type=int, default=1024)
    parser.add_argument("--terminals", type=int, default=10)
    args = parser.parse_args()
    session = Session(key=b"bench")
    sock = RecordingSocket()
    Kernel.instance(session=session, iopub_socket=sock)
    run(session, sock, 1, args.seconds, args.piece)
    run(session, sock, args.terminals, args.seconds, args.piece)


if __name__ == "__main__":
    main()
