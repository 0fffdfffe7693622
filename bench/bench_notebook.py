"""The notebook layer under a flood of terminal output, in a real kernel (jupyter_client).

    python bench/bench_notebook.py [MIB]      # default 32

The foreground turn has the embedded agent run a real command, ``cat`` of MIB MiB of test-like
lines, in its PTY (so the kernel takes output at a command's rate); the background turn's agent
is started with ``--flood-output 2*MIB``, so it streams terminal output as fast as it can.
Measured side by side in one run, in one kernel:

1. kernel CPU per MB: the kernel process's CPU time (user+sys of all its threads, from
   ``/proc/<pid>/stat``) during a ``%%acp --allow '*'`` turn that floods, divided by the MB, and
   the kernel CPU of an idle period of the same wall time as the baseline;
2. messages to the front end while the turn floods: iopub ``comm_msg`` count and rate, the
   iopub messages Jupyter Server's rate limiter counts (all but status/comm_open/execute_input),
   and the peak over any 1 s window (and over the server's 3 s window), against the server's
   default ``iopub_msg_rate_limit`` of 1000 msg/s;
3. a ``%%acp --bg`` turn of the same ``cat`` while nobody runs a cell (the driver only reads
   iopub): its rate, request to last byte on the terminal's comm, against the foreground
   turn's (the pacing must not throttle a flood nobody waits for);
4. latency of a trivial cell (``1+1``: execute_request sent -> status idle received), median of
   ``SAMPLES`` runs, with no flood and while a ``%%acp --bg`` flood streams in the background.
   Samples are spaced ``SPACING`` apart (random), as a person's cells are, so a request never
   falls in the pause the notebook's pacing keeps after the previous cell. The background turn
   floods 4 x MIB (its own agent) so that every sample falls inside it; only samples that
   ended between its first and last terminal message count. The flood's rate meanwhile is
   printed too: what the pacing costs it;
5. terminal comm messages per second (kernel send times), for the one terminal of the
   foreground flood and for ``TERMINALS`` terminals flooding at once (the scripted agent
   ``tests/adversarial/agents/flood.py``): the peak over any 1 s window per terminal and in
   all, with each terminal's sequence numbers checked contiguous and the bytes of its
   messages equal to its total in the kernel's state.
"""

from __future__ import annotations

import datetime as dt
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from kernel_driver import Kernel, kernel

SAMPLES = 40
# a pause before each trivial cell, as between a person's cells: longer than the 50 ms for which
# the notebook's pacing (_notebook/_pacing.py) still holds a flood back after a cell ends
SPACING = (0.1, 0.15)
TERMINALS = 10  # terminals flooding at once (section 4)
FLOOD_AGENT = (
    Path(__file__).resolve().parent.parent / "tests" / "adversarial" / "agents" / "flood.py"
)
SERVER_MSG_LIMIT = 1000.0  # Jupyter Server's default iopub_msg_rate_limit (msg/s)
SERVER_WINDOW = 3.0  # ... averaged over rate_limit_window (s)
UNCOUNTED = {"status", "comm_open", "execute_input"}  # not counted by the server's limiter
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """user + sys CPU time of a process (all its threads), from /proc."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime (fields 14, 15)


def sent_at(msg: dict[str, Any]) -> float:
    """When the kernel sent a message (its header date), as a POSIX timestamp."""
    date = msg["header"]["date"]
    if isinstance(date, str):
        date = dt.datetime.fromisoformat(date.replace("Z", "+00:00"))
    return float(date.timestamp())


def peak(times: list[float], window: float) -> float:
    """The largest number of events in any window of ``window`` seconds, per second."""
    times = sorted(times)
    best = 0
    lo = 0
    for hi, t in enumerate(times):
        while t - times[lo] > window:
            lo += 1
        best = max(best, hi - lo + 1)
    return best / window


class Recorder:
    """Every iopub message with its kernel send time, on top of the driver's bookkeeping."""

    def __init__(self, kern: Kernel) -> None:
        self.kern = kern
        self.log: list[tuple[float, dict[str, Any]]] = []
        take = kern._take

        def record(msg: dict[str, Any]) -> None:
            self.log.append((time.monotonic(), msg))
            take(msg)

        kern._take = record  # type: ignore[method-assign]

    def pump_for(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.kern.pump(timeout=min(0.05, max(0.0, deadline - time.monotonic())))

    def drain(self) -> None:
        while self.kern.pump(timeout=0.2):
            pass


def is_data(msg: dict[str, Any]) -> bool:
    """A widget message carrying terminal bytes."""
    return msg["msg_type"] == "comm_msg" and bool(msg.get("buffers"))


def terminal_traffic(
    msgs: list[dict[str, Any]],
) -> dict[str, tuple[list[float], list[int], int]]:
    """Per terminal comm: the send times of its comm messages, the seq of its data messages
    (``chunk`` and ``reset``), and the bytes they carried."""
    out: dict[str, tuple[list[float], list[int], int]] = {}
    for msg in msgs:
        if msg["msg_type"] != "comm_msg":
            continue
        content = msg["content"]
        data = content.get("data", {})
        body = data.get("content") if data.get("method") == "custom" else None
        comm_id = content.get("comm_id")
        if isinstance(body, dict) and body.get("type") in ("chunk", "reset"):
            times, seqs, size = out.setdefault(comm_id, ([], [], 0))
            seqs.append(body["seq"])
            size += sum(len(b) for b in msg.get("buffers") or [])
            out[comm_id] = (times, seqs, size)
        if comm_id in out:
            out[comm_id][0].append(sent_at(msg))
    return out


def traffic_report(label: str, msgs: list[dict[str, Any]], totals: list[int]) -> None:
    terms = terminal_traffic(msgs)
    every = sorted(t for times, _, _ in terms.values() for t in times)
    per = max((peak(times, 1.0) for times, _, _ in terms.values()), default=0.0)
    contiguous = all(seqs == list(range(1, len(seqs) + 1)) for _, seqs, _ in terms.values())
    equal = sorted(size for _, _, size in terms.values()) == sorted(totals)
    print(
        f"  {label}: {len(terms)} terminal(s), {len(every)} comm messages; "
        f"peak 1 s per terminal {per:.0f} msg/s, in all {peak(every, 1.0):.0f} msg/s; "
        f"seq contiguous={contiguous}; bytes equal={equal}"
    )


def value(kern: Kernel, expr: str) -> str:
    return kern.run(f"print({expr})").text().strip()


def time_cell(kern: Kernel, code: str = "1+1") -> tuple[float, float]:
    """Seconds from execute_request to idle, and when (monotonic) the idle was received; the
    request is sent after a pause of ``SPACING`` (see the module's docstring)."""
    time.sleep(random.uniform(*SPACING))
    start = time.monotonic()
    kern.run(code)
    end = time.monotonic()
    return end - start, end


def main(mib: float) -> None:
    with tempfile.TemporaryDirectory() as tmp, kernel(tmp) as kern:
        rec = Recorder(kern)
        agent = f"{sys.executable} -m acp_notebook.agent"
        kern.run("%load_ext acp_notebook")
        pid = int(value(kern, "__import__('os').getpid()"))

        # Warm-up (imports, widget classes, first views) with a small flood on its own agent.
        kern.run(f"%acp connect --name warm -- {agent} --data-dir {tmp}/w --flood-output 1")
        kern.run("%%acp --session warm --allow '*'\nflood\n")
        kern.run(f"%acp connect --name flood -- {agent} --data-dir {tmp}/f")
        output = Path(tmp) / "output.txt"  # what a real command prints: cat of test-like lines
        line = b"\x1b[32mPASSED\x1b[0m tests/test_x.py::test_case \xc3\xbc 0123456789 abcdefghij\n"
        output.write_bytes(line * (int(mib * 2**20) // len(line) + 1))
        rec.drain()

        # 3a. A trivial cell, no flood.
        for _ in range(3):
            time_cell(kern)
        quiet = [time_cell(kern)[0] for _ in range(SAMPLES)]

        # 1 + 2. One foreground flood turn: kernel CPU and messages to the front end.
        rec.drain()
        first = len(rec.log)
        cpu0, wall0 = cpu_seconds(pid), time.monotonic()
        cell = kern.run(f"%%acp --session fg --allow '*' -o t\n$ cat {output}\n")
        wall = time.monotonic() - wall0
        flood_cpu = cpu_seconds(pid) - cpu0
        flood_msgs = [m for _, m in rec.log[first:]]
        received = int(value(kern, "sum(x.total_bytes for x in t.terminals.values())"))
        stop = value(kern, "t.stop_reason")
        if cell.error or received < mib * 2**20:
            raise SystemExit(f"the flood turn failed: {received} bytes, stop {stop}")

        # 1b. Idle baseline: the same wall time with nothing running.
        rec.drain()
        cpu0 = cpu_seconds(pid)
        idle0 = time.monotonic()
        rec.pump_for(wall)
        idle_wall = time.monotonic() - idle0
        idle_cpu = cpu_seconds(pid) - cpu0

        # 3c. The same command as a --bg turn while nobody runs a cell (the driver only reads
        # iopub): from its request to its last byte on the terminal's comm, against the
        # foreground turn's wall time.
        rec.drain()
        first = len(rec.log)
        alone0 = time.monotonic()
        kern.run(f"%%acp --session fg --bg --allow '*' -o g\n$ cat {output}\n")
        shown = 0
        seen = first
        guard = time.monotonic() + 600
        while shown < received and time.monotonic() < guard:
            rec.pump_for(0.05)
            shown += sum(
                sum(len(b) for b in m.get("buffers") or []) for _, m in rec.log[seen:] if is_data(m)
            )
            seen = len(rec.log)
        alone_end = max((at for at, m in rec.log[first:] if is_data(m)), default=alone0)
        alone_wall = alone_end - alone0
        while value(kern, "g.stop_reason") == "None":
            rec.pump_for(0.2)
        alone_bytes = int(value(kern, "sum(x.total_bytes for x in g.terminals.values())"))

        # 3b. The trivial cell while a --bg flood streams.
        kern.run(f"%acp connect --name bg -- {agent} --data-dir {tmp}/b --flood-output {4 * mib}")
        rec.drain()
        first = len(rec.log)
        bg_start = time.monotonic()
        kern.run("%%acp --session bg --bg --allow '*' -o b\nflood\n")
        kern.wait_for(lambda: any(is_data(m) for _, m in rec.log[first:]), "the bg flood")
        timed = [time_cell(kern) for _ in range(SAMPLES)]
        while value(kern, "b.stop_reason") == "None":
            rec.pump_for(0.2)
        rec.drain()
        bg_wall = time.monotonic() - bg_start
        data_msgs = [at for at, m in rec.log[first:] if is_data(m)]
        flood_start = min(data_msgs, default=bg_start)
        flood_end = max(data_msgs, default=bg_start)
        under = [seconds for seconds, end in timed if flood_start <= end <= flood_end]
        fg_totals = [int(value(kern, "[x.total_bytes for x in t.terminals.values()][0]"))]

        # 4. Many terminals at once.
        mib_each = max(1.0, mib / 4)
        flood_argv = f"{sys.executable} {FLOOD_AGENT} {TERMINALS} {mib_each:g} 16"
        kern.run(f"%acp connect --name many -- {flood_argv}")
        rec.drain()
        first = len(rec.log)
        kern.run("%%acp --session many --allow '*' -o m\nflood\n")
        rec.drain()
        many_msgs = [m for _, m in rec.log[first:]]
        many_totals = eval(value(kern, "[x.total_bytes for x in m.terminals.values()]"))
        kern.run("%acp close --name many")
        kern.run("%acp close --name bg")
        kern.run("%acp close --name flood")
        kern.run("%acp close --name warm")

    mb = received / 1e6
    print(f"cat of {mib:g} MiB through the embedded agent into a real kernel ({received} bytes)")
    print("-- kernel CPU (user+sys, /proc/<pid>/stat, all kernel threads)")
    excess = flood_cpu - idle_cpu * wall / idle_wall
    print(
        f"  flood turn : {flood_cpu:.2f} s CPU in {wall:.2f} s wall ({mb / wall:.1f} MB/s; "
        f"{100 * flood_cpu / wall:.0f}% of one core)"
    )
    print(
        f"  idle       : {idle_cpu:.2f} s CPU in {idle_wall:.2f} s wall (baseline; "
        f"{100 * idle_cpu / idle_wall:.1f}% of one core)"
    )
    floor = max(idle_cpu, 1 / TICKS)  # /proc counts in clock ticks
    bound = ">=" if idle_cpu < floor else ""
    print(
        f"  kernel CPU per MB: {1000 * flood_cpu / mb:.1f} ms/MB "
        f"(over idle: {1000 * excess / mb:.1f} ms/MB; "
        f"ratio flood/idle CPU: {bound}{flood_cpu / floor:.0f}x)"
    )

    print("-- messages to the front end during the flood turn")
    comm = [sent_at(m) for m in flood_msgs if m["msg_type"] == "comm_msg"]
    counted = [sent_at(m) for m in flood_msgs if m["msg_type"] not in UNCOUNTED]
    comm_rate = len(comm) / wall
    counted_rate = len(counted) / wall
    peak1 = peak(counted, 1.0)
    peak3 = peak(counted, SERVER_WINDOW)
    print(f"  comm_msg   : {len(comm)} in {wall:.2f} s = {comm_rate:.1f} msg/s")
    sizes = [sum(len(b) for b in m.get("buffers") or []) for m in flood_msgs]
    print(
        f"  binary payload: {sum(sizes) / 1e6:.1f} MB, largest message {max(sizes) / 1e6:.2f} MB, "
        f"mean {sum(sizes) / 1e6 / max(1, sum(1 for n in sizes if n)):.2f} MB per data message"
    )
    print(
        f"  iopub counted by the server's limiter: {len(counted)} = {counted_rate:.1f} msg/s; "
        f"peak 1 s window {peak1:.0f} msg/s, peak 3 s window {peak3:.1f} msg/s"
    )
    print(
        f"  msg/s ratio to the 1000 msg/s iopub limit: mean {counted_rate / SERVER_MSG_LIMIT:.3f}, "
        f"peak 1 s {peak1 / SERVER_MSG_LIMIT:.3f}"
    )

    print("-- terminal comm messages (targets: <= 30/s per terminal, <= 150/s in all)")
    traffic_report("foreground flood", flood_msgs, fg_totals)
    traffic_report(f"{TERMINALS} terminals at once", many_msgs, many_totals)

    print("-- the same command as a --bg turn, nobody running cells (target >= 0.9x foreground)")
    fg_rate = mb / wall
    alone_rate = alone_bytes / 1e6 / alone_wall
    print(
        f"  foreground : {fg_rate:.1f} MB/s ({wall:.2f} s); background: {alone_rate:.1f} MB/s "
        f"({alone_wall:.2f} s to its last byte on the terminal's comm, {alone_bytes} bytes)"
    )
    print(f"  background alone / foreground rate: {alone_rate / fg_rate:.2f}")

    print(f"-- trivial cell (1+1), execute_request -> idle, median of {SAMPLES}")
    base = statistics.median(quiet)
    print(f"  no flood   : {1000 * base:.1f} ms (min {1000 * min(quiet):.1f})")
    if under:
        busy = statistics.median(under)
        print(
            f"  with flood : {1000 * busy:.1f} ms (min {1000 * min(under):.1f}; "
            f"{len(under)}/{SAMPLES} samples ended while the bg flood "
            f"({4 * mib:g} MiB) streamed; bg turn {bg_wall:.2f} s, "
            f"{4 * mib / bg_wall:.1f} MiB/s)"
        )
        print(f"  trivial cell ratio flood/no flood: {busy / base:.2f}")
    else:
        print(f"  with flood : no sample ended while the flood streamed (bg turn {bg_wall:.2f} s)")


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 32.0)
