"""Kernel-side cost of TerminalWidget.feed: CPU per MB and messages per MB, no browser.

    python bench/bench_widgets_terminal.py [--mb 20] [--piece 1024]

The widget's send is replaced by a counter, so this measures the coalescer alone (locking,
copying, the flush timer thread), not the comm/ZMQ cost.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from acp_notebook._widgets import TerminalWidget


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=float, default=20.0)
    parser.add_argument("--piece", type=int, default=1024)
    args = parser.parse_args()

    size = int(args.mb * 2**20)
    line = b"\x1b[32mPASSED\x1b[0m tests/test_x.py::test_case \xc3\xbc 0123456789\r\n"
    data = (line * (size // len(line) + 1))[:size]
    widget = TerminalWidget(command="bench")
    messages = 0

    def send(content: dict[str, Any], buffers: list[bytes] | None = None) -> None:
        nonlocal messages
        messages += 1

    widget.send = send
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for start in range(0, size, args.piece):
        widget.feed(data[start : start + args.piece])
    widget.flush()
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    widget.close()
    mb = size / 2**20
    print(f"fed {mb:.1f} MiB in {args.piece} B pieces")
    print(f"kernel CPU: {1000 * cpu / mb:.2f} ms/MiB  ({mb / cpu:.0f} MiB/s)")
    print(f"wall: {wall:.3f} s; messages: {messages} ({messages / mb:.1f} per MiB)")


if __name__ == "__main__":
    main()
