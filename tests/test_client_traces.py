"""`Agent.export_trace` (_client/_traces.py): every frame with a recorder, else what the
connection's log keeps (shortened frames say so), redacted, in a file of mode 0600."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import anyio
import pytest

from acp_notebook import connect_streams
from acp_notebook._connection._trace import TraceRecorder, read_trace
from acp_notebook.agent import serve_in_memory

pytestmark = pytest.mark.anyio
GUARD = 30.0


async def test_a_recorded_trace_holds_every_frame_from_initialize_on(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with anyio.fail_after(GUARD):
        async with (
            serve_in_memory(data_dir=tmp_path / "d") as streams,
            connect_streams(*streams, trace=True) as agent,
        ):
            session = await agent.new_session(tmp_path)
            for i in range(3):
                assert await (await session.prompt(f"say {i}")).wait() == "end_turn"
            done = agent.export_trace(path, secrets=[str(tmp_path)])
    trace = read_trace(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert done.frames == len(trace.frames) and done.dropped == trace.dropped == 0
    methods = [json.loads(f.frame).get("method") for f in trace.frames]
    assert methods[0] == "initialize" and methods.count("session/prompt") == 3
    assert not any(f.shortened for f in trace.frames)
    assert str(tmp_path) not in path.read_text()  # a secret given: redacted everywhere
    assert "without --trace" not in trace.warning


async def test_without_a_recorder_the_log_is_exported_and_says_what_it_left_out(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.jsonl"
    with anyio.fail_after(GUARD):
        async with (
            serve_in_memory(data_dir=tmp_path / "d") as streams,
            connect_streams(*streams) as agent,
        ):
            session = await agent.new_session(tmp_path)
            long = "x" * 50_000  # logged shortened
            assert await (await session.prompt(long)).wait() == "end_turn"
            for i in range(60):
                assert await (await session.prompt(f"say {i}")).wait() == "end_turn"
            seen = agent.connection.messages_seen
            done = agent.export_trace(path)
    trace = read_trace(path)
    assert len(trace.frames) == done.frames <= 100 and trace.dropped == seen - done.frames > 0
    assert "only the last messages" in trace.warning and f"{trace.dropped} earlier" in trace.warning
    recorder_free = [json.loads(f.frame) for f in trace.frames]
    assert all("x" * 50_000 not in json.dumps(m) for m in recorder_free)


async def test_a_recorder_over_its_cap_keeps_the_beginning_and_counts_the_rest(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.jsonl"
    recorder = TraceRecorder(max_bytes=4_000)
    with anyio.fail_after(GUARD):
        async with (
            serve_in_memory(data_dir=tmp_path / "d") as streams,
            connect_streams(*streams, trace=recorder) as agent,
        ):
            session = await agent.new_session(tmp_path)
            for i in range(20):
                assert await (await session.prompt(f"say {i}")).wait() == "end_turn"
            agent.export_trace(path)
    trace = read_trace(path)
    assert trace.dropped == recorder.dropped > 0
    assert json.loads(trace.frames[0].frame)["method"] == "initialize"
    assert f"{recorder.dropped} frames after the first" in trace.warning


def test_a_sign_in_key_is_hidden_wherever_the_agent_echoes_it_also_in_the_api(
    tmp_path: Path,
) -> None:
    # review: agent.export_trace hid _meta["api-key"] but not the same key echoed back
    from types import SimpleNamespace

    from acp_notebook._client._traces import export_trace

    recorder = TraceRecorder()
    key = "sk-echoed-0123456789"
    recorder.observe("send", {"id": 1, "method": "authenticate",
                              "params": {"methodId": "k", "_meta": {"api-key": key}}})  # fmt: skip
    recorder.observe("recv", {"id": 1, "error": {"code": -32000, "message": f"bad key {key}"}})
    path = tmp_path / "t.jsonl"
    export_trace(SimpleNamespace(trace=recorder), path)  # type: ignore[arg-type]
    assert key not in path.read_text() and "bad key ***" in path.read_text()
