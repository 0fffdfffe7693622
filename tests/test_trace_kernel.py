"""Record, export and replay, through the magics in a real kernel: `%acp connect --trace`,
`%acp log --export PATH` (acp-inspector-trace v1, mode 0600, secrets redacted), then
`acp-notebook-agent --replay PATH` gives the same transcript, and says so when it cannot."""

from __future__ import annotations

import json
import re
import stat
import sys
from pathlib import Path

from acp_notebook._connection._trace import read_trace
from tests.kernel_driver import acp_kernel, new_cell_id

CELLS = [
    "%%acp --allow 'printf *'\nhello\n$ printf 'a\\nb\\n'\n",
    "%%acp --deny 'rm *'\n$ rm notes.txt\n",
]


def _same(text: str, root: Path) -> str:
    """A transcript with what differs between two runs masked: the pid, and the folder the
    kernel works in (the replay's agent says the recorded one, where it ran)."""
    return re.sub(r"pid \d+", "pid PID", text.replace(str(root), "ROOT"))


def test_an_exported_trace_replays_to_the_same_transcript(tmp_path: Path) -> None:
    trace = tmp_path / "turns.jsonl"
    recorded = tmp_path / "recorded"
    recorded.mkdir()
    with acp_kernel(recorded) as k:
        argv = f"{sys.executable} -m acp_notebook.agent --data-dir {recorded / 'data'}"
        k.run(f"%acp connect --trace --kernel-tools -- {argv}")
        first = [_same(k.run(c, new_cell_id()).text(), recorded) for c in CELLS]
        said = k.run(f"%acp log --export {trace}").text()
        token = (
            k.run(
                "from acp_notebook._notebook._owner import current\n"
                "print(sorted(current().kernel_tools.secrets('python3').values())[0])"
            )
            .text()
            .strip()
        )
    assert said.startswith(f"acp: wrote {len(read_trace(trace).frames)} frames to {trace}")
    assert stat.S_IMODE(trace.stat().st_mode) == 0o600
    content = trace.read_text()
    assert len(token) > 8 and token not in content  # the kernel tools' token: redacted
    header = json.loads(content.splitlines()[0])
    assert header["dropped"] == 0 and "redacted" in header["warning"]

    replayed = tmp_path / "replayed"
    replayed.mkdir()
    with acp_kernel(replayed) as k:
        argv = f"{sys.executable} -m acp_notebook.agent --replay {trace}"
        k.run(f"%acp connect --kernel-tools -- {argv}")
        second = [_same(_same(k.run(c, new_cell_id()).text(), replayed), recorded) for c in CELLS]
        assert second == first
        extra = k.run("%%acp\none more\n", new_cell_id(), ok=False).text()
        assert "the client left the recording" in extra and "the recording ended" in extra
