"""The recorded traces notebooks/real-agents.ipynb replays (notebooks/traces/, made by
scripts/record_traces.py) still match what the client sends: each one is replayed through a
kernel with the notebook's own cells (run by nbclient, with no front end, as nbval runs them),
with ``--trace`` on the replay's connection. A client that leaves the recording makes the
replay agent print a "left the recording" line on its stderr (shown by ``%acp status``) and
answer with an error: neither may happen, and every turn must end with its recorded stop
reason. The notebook must hold the recording's cells, in order, so the two cannot drift."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest

from acp_notebook._connection._trace import TO_AGENT, Trace, read_trace

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "real-agents.ipynb"
TRACES = ROOT / "notebooks" / "traces"


def _script() -> Any:
    spec = importlib.util.spec_from_file_location(
        "record_traces", ROOT / "scripts" / "record_traces.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("record_traces", module)
    spec.loader.exec_module(module)
    return module


record_traces = _script()
NAMES = list(record_traces.RECORDINGS)


def _prompt_stop_reasons(trace: Trace) -> list[str | None]:
    """The stop reason (or None for an error) of each session/prompt, in order."""
    asked: dict[Any, str] = {}
    reasons: list[str | None] = []
    for frame in trace.frames:
        message = frame.message()
        if frame.direction == TO_AGENT:
            if message.get("method") == "session/prompt":
                asked[message["id"]] = "prompt"
            continue
        if "method" not in message and asked.pop(message.get("id"), None):
            result = message.get("result")
            reasons.append(result.get("stopReason") if isinstance(result, dict) else None)
    return reasons


def _client_requests(trace: Trace) -> list[str]:
    return [
        f.message()["method"]
        for f in trace.frames
        if f.direction == TO_AGENT and "method" in f.message() and "id" in f.message()
    ]


def test_the_notebook_runs_each_recordings_cells_in_order() -> None:
    sources = ["".join(c.source) for c in nbformat.read(NOTEBOOK, 4).cells if c.cell_type == "code"]
    for name, recording in record_traces.RECORDINGS.items():
        connect = record_traces.connect_cell(name)
        assert connect in sources, f"the notebook does not connect {name}'s replay"
        start = sources.index(connect) + 1
        assert sources[start : start + len(recording.cells)] == recording.cells, name
        assert (TRACES / f"{name}.jsonl").is_file()


@pytest.mark.parametrize("name", NAMES)
def test_the_recorded_trace_still_matches_what_the_client_sends(name: str, tmp_path: Path) -> None:
    recording = record_traces.RECORDINGS[name]
    recorded = read_trace(TRACES / f"{name}.jsonl")
    replayed = tmp_path / "replayed.jsonl"
    work = tmp_path / "acp-real-agents-test"
    work.mkdir()
    setup = f"import os\ntraces = {str(TRACES)!r}"
    cells = [
        setup,
        "%load_ext acp_notebook",
        record_traces.connect_cell(name).replace("%acp connect ", "%acp connect --trace ", 1),
        *recording.cells,
        f"%acp log --export {replayed} --name {name}",
        "%acp status",
        f"%acp close --name {name}",
    ]
    nb = record_traces.run_cells(cells, work)
    texts = [record_traces.cell_text(c) for c in nb.cells]
    status = texts[-2]
    assert "left the recording" not in status, status
    assert "left the recording" not in "\n".join(texts)
    again = read_trace(replayed)
    # The client asked what the recording has, in order, and got the recorded answers: the
    # turns ended as they did (an error would be None).
    assert _client_requests(again) == _client_requests(recorded)
    assert _prompt_stop_reasons(again) == _prompt_stop_reasons(recorded)
    for frame in again.frames:
        error = frame.message().get("error") if frame.direction != TO_AGENT else None
        if isinstance(error, dict):
            assert error.get("code") != -32099, json.dumps(error)
