"""The README's main job: `python -m acp_notebook demo` against the real embedded agent."""

from __future__ import annotations

import subprocess
import sys


def test_demo_runs_allowed_command_and_not_the_rejected_one() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "acp_notebook", "demo"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "connected to acp-notebook-agent" in out
    assert "progress 3/3" in out and "progress 1/3" not in out  # \r progress, final state
    assert "(exit 0)" in out  # the one exit label (acp_notebook._connection._exit)
    assert "-- tool call “touch should-not-exist”: failed" in out
    # issue 25, finding 21: the command as typed, not a repr with doubled backslashes
    assert "printf '\\033[32mbuilding" in out and "\\\\033" not in out
    assert "rejected command ran: False" in out
    assert "stop reason: end_turn" in out
