"""Trace files (_connection/_trace.py): acp-inspector-trace v1 JSONL written and read back,
mode 0600, redaction, the recorder's cap, and a clear error for a file that is not one."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from acp_notebook._connection._trace import (
    FORMAT,
    TO_AGENT,
    TO_CLIENT,
    Frame,
    TraceError,
    TraceRecorder,
    read_trace,
    redact_frame,
    write_trace,
)


def test_a_written_trace_reads_back_in_the_documented_shape(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    frames = [
        Frame(1, TO_AGENT, '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}'),
        Frame(2, TO_CLIENT, '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2}}', True),
    ]
    size = write_trace(path, frames, dropped=3, warning="w")
    assert size == path.stat().st_size
    header, *rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert header["type"] == "header" and header["format"] == FORMAT == "acp-inspector-trace"
    assert (header["version"], header["frames"], header["dropped"]) == (1, 2, 3)
    assert header["warning"] == "w" and isinstance(header["at"], int)
    assert rows[0] == {"type": "frame", "at": 1, "connection": 1,
                       "direction": "client -> agent", "encoding": "utf8",
                       "frame": frames[0].frame}  # fmt: skip
    assert rows[1]["shortened"] is True and "shortened" not in rows[0]
    back = read_trace(path)
    assert back.frames == tuple(frames) and back.dropped == 3 and back.warning == "w"


def test_the_file_is_mode_0600_even_when_it_replaces_a_readable_one(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text("old")
    path.chmod(0o644)
    write_trace(path, [])
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert read_trace(path).frames == ()


def test_a_symlink_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("keep")
    link = tmp_path / "t.jsonl"
    link.symlink_to(target)
    with pytest.raises(OSError):
        write_trace(link, [])
    assert target.read_text() == "keep"


@pytest.mark.parametrize(
    ("content", "line", "reason"),
    [
        ("", 0, "is empty"),
        ("not json\n", 1, "not JSON"),
        ('{"type":"header","format":"other","version":1}\n', 1, "not an acp-inspector-trace"),
        ('{"type":"header","format":"acp-inspector-trace","version":2}\n', 1, "version 2"),
        ('{"type":"header","format":"acp-inspector-trace","version":1}\n'
         '{"type":"frame","at":1,"direction":"sideways","frame":"{}"}\n', 2, "direction"),
        ('{"type":"header","format":"acp-inspector-trace","version":1}\n'
         '{"type":"frame","at":1,"direction":"client -> agent","frame":"{nope"}\n', 2,
         "not JSON"),
        ('{"type":"header","format":"acp-inspector-trace","version":1,"frames":2}\n', 1,
         "says 2 frames"),
    ],
)  # fmt: skip
def test_what_is_not_a_trace_is_an_error_naming_its_line(
    tmp_path: Path, content: str, line: int, reason: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(TraceError) as info:
        read_trace(path)
    assert info.value.line == line and reason in info.value.reason
    assert str(info.value).startswith(str(path))


def test_unknown_lines_and_fields_are_ignored(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(
        '{"type":"header","format":"acp-inspector-trace","version":1,"tool":"x"}\n'
        '{"type":"note","text":"hi"}\n'
        '{"type":"frame","at":5,"direction":"agent -> client","frame":"{}","extra":1}\n'
    )
    trace = read_trace(path)
    assert [f.at for f in trace.frames] == [5] and trace.extra == {"tool": "x"}


def test_redaction_hides_api_keys_and_secrets_as_written_and_as_json_escapes_them() -> None:
    frame = json.dumps(
        {"params": {"_meta": {"api-key": "sk-live-1"}, "env": 'tok"en-\u00e9-XYZ', "n": "abc"}},
        ensure_ascii=False,
    )
    out = redact_frame(frame, ['tok"en-\u00e9-XYZ', "abc"])
    assert "sk-live-1" not in out and json.loads(out)["params"]["_meta"]["api-key"] == "***"
    assert "XYZ" not in out and json.loads(out)["params"]["env"] == "***"
    assert json.loads(out)["params"]["n"] == "abc"  # shorter than 4: would hide words


def test_a_secret_that_reads_as_json_leaves_the_frame_json() -> None:
    # an --env value of "false" (a helper found every JSON false become ***: not JSON)
    frame = '{"a":false,"b":"false alarm","c":[true,12345],"false":1}'
    out = json.loads(redact_frame(frame, ["false", "12345"]))
    assert out == {"a": False, "b": "*** alarm", "c": [True, 12345], "false": 1}


def test_the_recorder_keeps_a_prefix_and_counts_what_it_could_not_keep() -> None:
    recorder = TraceRecorder(max_bytes=100)
    for i in range(10):
        recorder.observe("send" if i % 2 == 0 else "recv", {"id": i, "pad": "x" * 20})
    kept = len(recorder.frames)
    assert 0 < kept < 10 and recorder.dropped == 10 - kept
    assert [json.loads(f.frame)["id"] for f in recorder.frames] == list(range(kept))
    assert [f.direction for f in recorder.frames[:2]] == [TO_AGENT, TO_CLIENT]
    assert recorder.frames[0].frame == '{"id":0,"pad":"' + "x" * 20 + '"}'  # compact JSON


def test_a_line_separator_inside_a_frame_does_not_end_its_line(tmp_path: Path) -> None:
    # review: str.splitlines broke lines at U+2028 that JSON leaves raw in a string
    path = tmp_path / "t.jsonl"
    text = json.dumps({"text": "a\u2028b\u2029c\u0085d"}, ensure_ascii=False)
    write_trace(path, [Frame(1, TO_CLIENT, text)])
    assert read_trace(path).frames[0].message() == {"text": "a\u2028b\u2029c\u0085d"}


@pytest.mark.parametrize(
    "content",
    [
        '{"type":"header","format":"acp-inspector-trace","version":1,"dropped":"many"}\n',
        '{"type":"header","format":"acp-inspector-trace","version":1,"at":[1]}\n',
        "[" * 100_000 + "\n",
        '{"type":"header","format":"acp-inspector-trace","version":1}\n'
        '{"type":"frame","at":1,"direction":"agent -> client","frame":"{\\"x\\":NaN}"}\n',
    ],
)
def test_a_malformed_header_deep_json_or_nan_is_a_trace_error(tmp_path: Path, content: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(TraceError):
        read_trace(path)


def test_a_shortened_frame_keeps_no_beginning_of_a_secret_at_its_cut() -> None:
    from acp_notebook._connection._jsonrpc import for_log
    from acp_notebook._connection._trace import hide_cut_secrets

    key = "tok-abcdefghijkl"
    message = {"jsonrpc": "2.0", "method": "x", "params": {"text": "y" * 110 + key * 3}}
    frame = json.dumps(for_log(message))
    assert "tok-abcd" in frame  # what the log kept: 10 characters of the key, then the cut
    redacted = redact_frame(frame, [key])
    assert "tok-" not in redacted
    assert json.loads(redacted)["params"]["text"].startswith("y" * 110 + "***… [")
    # the longest beginning goes; a secret that does not reach the cut is left as it is
    assert hide_cut_secrets("ab tok-a… [30 chars]", [key, "tok-zzzz"]) == "ab ***… [30 chars]"
    assert hide_cut_secrets("no cut: tok-a", [key]) == "no cut: tok-a"
