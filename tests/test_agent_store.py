"""Sessions on disk, replay compaction, path confinement and the messages the agent builds."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from _schema import assert_valid

from acp_notebook.agent import _wire as wire
from acp_notebook.agent._pty import ExitStatus
from acp_notebook.agent._store import Store, compact_history, default_data_dir


def test_store_round_trip(tmp_path: Path) -> None:
    store = Store(tmp_path)
    sid, file = store.create("/w")
    file.update(wire.user_message("m1", [{"type": "text", "text": "hi"}]))
    file.grant("command:ls", True)
    file.title("hi")
    record = store.load(sid)
    assert record is not None
    assert (record.session_id, record.cwd, record.title) == (sid, "/w", "hi")
    assert record.updates == [wire.user_message("m1", [{"type": "text", "text": "hi"}])]
    assert record.grants == {"command:ls": True}
    assert [r.session_id for r in store.list()] == [sid]


def test_store_ignores_a_torn_last_line_and_bad_ids(tmp_path: Path) -> None:
    store = Store(tmp_path)
    sid, file = store.create("/w")
    file.update(wire.state("running"))
    with file.path.open("a") as f:
        f.write('{"kind": "update", "upd')
    record = store.load(sid)
    assert record is not None and record.updates == [wire.state("running")]
    assert store.load("../../etc/passwd") is None
    assert store.open("no-such-session") is None


def test_default_data_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert default_data_dir() == tmp_path / "acp-notebook-agent"
    monkeypatch.delenv("XDG_DATA_HOME")
    assert default_data_dir() == Path.home() / ".local/share/acp-notebook-agent"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_compact_history_folds_messages_tool_calls_and_terminals() -> None:
    live = [
        wire.user_message("u", [{"type": "text", "text": "go"}]),
        wire.state("running"),
        wire.agent_chunk("a", "one\n"),
        wire.tool_call("t", title="ls", kind="execute", status="pending"),
        wire.agent_chunk("a", "two"),
        wire.terminal_start("term", "ls", "/w"),
        wire.terminal_chunk("term", b"ab"),
        {"sessionUpdate": "terminal_output_chunk", "terminalId": "term", "data": "%%bad"},
        wire.terminal_chunk("term", b"c"),
        wire.tool_call("t", status="in_progress"),
        wire.terminal_exit("term", ExitStatus(exit_code=1)),
        wire.tool_call("t", status="failed"),
        wire.idle("end_turn"),
    ]
    replay = compact_history(live)
    assert replay == [
        wire.user_message("u", [{"type": "text", "text": "go"}]),
        {
            "sessionUpdate": "agent_message",
            "messageId": "a",
            "content": [{"type": "text", "text": "one\ntwo"}],
        },
        wire.tool_call("t", title="ls", kind="execute", status="failed"),
        {
            **wire.terminal_start("term", "ls", "/w"),
            "exitStatus": {"exitCode": 1},
            "output": {"data": b64(b"abc")},
        },
    ]
    for update in replay:
        assert_valid("UpdateSessionNotification", wire.notification("s", update))


def test_compact_history_output_snapshot_replaces_earlier_bytes() -> None:
    live = [
        wire.terminal_chunk("t", b"old"),
        {"sessionUpdate": "terminal_update", "terminalId": "t", "output": {"data": b64(b"new")}},
        wire.terminal_chunk("t", b"+"),
    ]
    (item,) = compact_history(live)
    assert base64.b64decode(item["output"]["data"]) == b"new+"


def _age(path: Path, days: float) -> None:
    import os
    import time

    then = time.time() - days * 86400
    os.utime(path, (then, then))


def test_store_drops_sessions_older_than_max_age(tmp_path: Path) -> None:
    old_id, old = Store(tmp_path).create("/w")
    new_id, _new = Store(tmp_path).create("/w")
    _age(old.path, 31)
    store = Store(tmp_path, max_age_days=30)
    store.prune()
    assert [r.session_id for r in store.list()] == [new_id]
    assert not old.path.exists() and store.load(old_id) is None


def test_store_keeps_its_total_size_under_the_cap_oldest_first(tmp_path: Path) -> None:
    writer = Store(tmp_path)
    ids = []
    for age in (3, 2, 1):
        sid, file = writer.create("/w")
        file.update(wire.user_message("m", [{"type": "text", "text": "x" * 40_000}]))
        _age(file.path, age)
        ids.append(sid)
    store = Store(tmp_path, max_bytes=100_000)  # room for two of the three
    store.prune()
    assert sorted(r.session_id for r in store.list()) == sorted(ids[1:])
    assert store.size() <= 100_000


def test_a_session_past_the_cap_stops_recording_updates_and_says_so(tmp_path: Path) -> None:
    store = Store(tmp_path, max_bytes=50_000)
    sid, file = store.create("/w")
    for _ in range(10):
        file.update(wire.user_message("m", [{"type": "text", "text": "y" * 10_000}]))
    file.grant("command:ls", True)  # grants are still kept
    assert file.path.stat().st_size < 50_000 + 11_000
    record = store.load(sid)
    assert record is not None and record.truncated
    assert record.grants == {"command:ls": True}
    assert len(record.updates) < 10


def test_store_caps_come_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from acp_notebook.agent.__main__ import store_limits

    monkeypatch.setenv("ACP_NOTEBOOK_AGENT_MAX_MIB", "5")
    monkeypatch.setenv("ACP_NOTEBOOK_AGENT_MAX_DAYS", "7")
    assert store_limits([]) == (5 * 2**20, 7.0)
    assert store_limits(["--store-max-mib", "0", "--store-max-days", "0"]) == (None, None)
    monkeypatch.delenv("ACP_NOTEBOOK_AGENT_MAX_MIB")
    monkeypatch.delenv("ACP_NOTEBOOK_AGENT_MAX_DAYS")
    assert store_limits([]) == (50 * 2**20, 30.0)
