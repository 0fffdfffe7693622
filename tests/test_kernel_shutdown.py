"""A kernel with agents connected exits by itself when asked to shut down (no SIGTERM needed)."""

from __future__ import annotations

import time
from pathlib import Path

from tests.kernel_driver import acp_kernel, process_gone

GUARD = 20.0  # seconds; only a guard against waiting forever, never a speed assertion


def test_a_shutdown_request_ends_the_kernel_and_its_agent(tmp_path: Path) -> None:
    """The I/O thread's leftover tasks used to keep the kernel's exit waiting forever, so
    Jupyter had to SIGTERM (then SIGKILL) it, and a restart hung in JupyterLab."""
    with acp_kernel(tmp_path) as k:
        k.run("%acp connect")
        k.run("%%acp --bg\nhello\n")
        pid = int(
            k.run(
                "import acp_notebook._notebook._owner as n\n"
                "print(n.current().agents['embedded'].agent.process.pid)"
            )
            .text()
            .strip()
        )
        k.kc.shutdown()  # what a front end sends; nobody signals the kernel
        deadline = time.monotonic() + GUARD
        while k.km.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        exited = not k.km.is_alive()
    assert exited, "the kernel did not exit after a shutdown request"
    assert process_gone(pid), "its agent outlived it"
