"""acp_notebook._state._terminal: one display terminal's bounded bytes, metadata, text/HTML."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_notebook._protocol import TerminalExitStatus
from acp_notebook._state._terminal import (
    BLOCK_BYTES,
    OWN_BLOCK_BYTES,
    ExitStatus,
    TerminalPhase,
    TerminalState,
    patch_meta,
    terminal_phase,
)


def test_patch_meta_none_clears_an_object_patches_by_key() -> None:
    assert patch_meta({"a": 1}, None) is None
    assert patch_meta({"a": 1, "b": 2}, {"b": None, "c": 3}) == {"a": 1, "c": 3}
    assert patch_meta(None, {"x": None}) == {}
    old = {"a": 1}
    patch_meta(old, {"a": 2})
    assert old == {"a": 1}  # the old value is not changed in place


def test_exit_status_of_converts_wire_models_only() -> None:
    wire = TerminalExitStatus(exit_code=0)
    status = ExitStatus.of(wire)
    assert isinstance(status, ExitStatus)
    assert status.to_wire() == {"exitCode": 0}
    assert ExitStatus.of(status) is status
    assert ExitStatus.of(None) is None
    assert repr(status) == "ExitStatus(exit_code=0)"
    assert repr(ExitStatus()) == "ExitStatus()"
    assert str(ExitStatus(signal="SIGTERM")) == "ExitStatus(signal='SIGTERM')"


def test_bytes_accumulate_and_count() -> None:
    term = TerminalState("t")
    assert term.revision == 0
    term.append(b"hello ")
    term.append(b"")  # nothing: no new revision
    term.append(b"world\n")
    assert term.data == b"hello world\n"
    assert term.total_bytes == 12
    assert term.omitted_bytes == 0
    assert term.revision == 2
    assert term.since(6) == b"world\n"
    assert term.since(12) == b""


def test_past_the_limit_old_bytes_go_at_a_line_start() -> None:
    term = TerminalState("t", max_bytes=16)  # grid blocks of 4 bytes
    for line in (b"ab\n", b"cd\n", b"ef\n", b"gh\n", b"ij\n", b"kl\n", b"mn\n"):
        term.append(line)
    assert term.total_bytes == 21
    assert term.data == b"ef\ngh\nij\nkl\nmn\n"  # at most 16 bytes, whole lines only
    assert term.omitted_bytes == 6
    assert term.since(0) == term.data  # a dropped offset reads from the first kept byte
    assert term.text.startswith(f"[… {term.omitted_bytes} bytes omitted …]\n")


def test_a_line_longer_than_a_grid_block_is_cut_at_the_block_start() -> None:
    term = TerminalState("t", max_bytes=16)
    term.append(b"x" * 40)
    assert term.data == b"x" * len(term.data)
    assert len(term.data) <= 16
    assert term.omitted_bytes % 4 == 0  # on the grid


@given(
    data=st.binary(max_size=200).map(lambda b: b.replace(b"\x00", b"\n")),
    cuts=st.lists(st.integers(0, 200), max_size=12),
)
def test_what_is_kept_does_not_depend_on_the_chunking(data: bytes, cuts: list[int]) -> None:
    whole = TerminalState("t", max_bytes=32)
    whole.append(data)
    chunked = TerminalState("t", max_bytes=32)
    points = sorted({0, len(data), *(c for c in cuts if c <= len(data))})
    for lo, hi in itertools.pairwise(points):
        chunked.append(data[lo:hi])
    assert chunked.data == whole.data
    assert chunked.omitted_bytes == whole.omitted_bytes
    assert chunked.text == whole.text


SIZES = [0, 1, 100, OWN_BLOCK_BYTES - 1, OWN_BLOCK_BYTES, BLOCK_BYTES - 1, BLOCK_BYTES]


@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.sampled_from(SIZES), max_size=16),
    runs=st.lists(st.integers(1, 5), max_size=16),
)
def test_chunks_appended_together_keep_what_appending_them_one_by_one_keeps(
    sizes: list[int], runs: list[int]
) -> None:
    """``append(joined, pieces)`` (a run of chunks the client applies in one step) keeps the
    same bytes, counts and revision as appending each chunk, past the limit too."""
    stream = bytes(range(256)) * (sum(sizes) // 256 + 1)
    chunks, offset = [], 0
    for size in sizes:
        chunks.append(stream[offset : offset + size])
        offset += size
    one_by_one = TerminalState("t", max_bytes=4 * BLOCK_BYTES)
    for chunk in chunks:
        one_by_one.append(chunk)
    together = TerminalState("t", max_bytes=4 * BLOCK_BYTES)
    start = 0
    for length in [*runs, len(chunks)]:
        run = [chunk for chunk in chunks[start : start + length] if chunk]
        start += length
        if run:
            together.append(b"".join(run), len(run))
    assert together.data == one_by_one.data
    assert (together.total_bytes, together.omitted_bytes, together.revision) == (
        one_by_one.total_bytes,
        one_by_one.omitted_bytes,
        one_by_one.revision,
    )
    assert together.streamed == one_by_one.streamed


def _tail_of(data: bytes, max_bytes: int) -> tuple[int, bytes]:
    """What ``TerminalState.tail`` must give: ``data`` cut as ``_static.render_tail`` cuts it."""
    if len(data) <= max_bytes:
        return 0, data
    start = len(data) - max_bytes
    cut = data.find(b"\n", start - 1, len(data) - 1)
    if cut >= 0:
        start = cut + 1
    return data.count(b"\n", 0, start), data[start:]


@given(
    chunks=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\x00", b"\n")), max_size=30),
    max_bytes=st.integers(1, 50),
)
def test_the_tail_is_the_end_of_the_kept_bytes_and_counts_the_lines_before(
    chunks: list[bytes], max_bytes: int
) -> None:
    term = TerminalState("t", max_bytes=96)
    for chunk in chunks:  # asked after every chunk: the count goes on across trims
        term.append(chunk)
        assert term.tail(max_bytes) == _tail_of(term.data, max_bytes)
    term.replace(b"a\nb\nc\nd\n")
    assert term.tail(3) == (3, b"d\n")


def test_a_snapshot_replaces_everything_and_restarts_offsets() -> None:
    term = TerminalState("t", max_bytes=16)
    term.append(b"0123456789abcdef0123\n")
    generation, revision = term.generation, term.revision
    term.replace(b"new\n")
    assert term.data == b"new\n"
    assert term.total_bytes == 4
    assert term.omitted_bytes == 0
    assert term.generation == generation + 1
    assert term.revision == revision + 1
    assert term.text == "new\n"


def test_text_is_sanitised_and_html_escaped() -> None:
    term = TerminalState("t")
    term.append(b"\x1b[31mred\x1b[0m <b>&\r\n")
    assert term.text == "red <b>&\n"
    assert "&lt;b&gt;&amp;" in term.html
    assert "<b>" not in term.html
    assert "\x1b" not in term.html
    term.append(b"more\n")  # read lazily: the converters catch up with new bytes
    assert term.text == "red <b>&\nmore\n"


@pytest.mark.parametrize(
    "status, label",
    [
        (None, "running"),
        (TerminalExitStatus(exit_code=0), "exit 0"),
        (TerminalExitStatus(exit_code=1, signal="SIGKILL"), "signal SIGKILL"),
        (TerminalExitStatus(), "exited"),
    ],
)
def test_exit_label(status: TerminalExitStatus | None, label: str) -> None:
    term = TerminalState("t")
    term.exit_status = status
    assert term.exit_label == label
    assert term.exited is (status is not None)


def test_repr_names_the_terminal_and_its_bytes() -> None:
    term = TerminalState("t")
    term.command = "echo <script>"
    term.exit_status = TerminalExitStatus(exit_code=2)
    term.append(b"out\n")
    assert term.exit_label == "exit 2"
    assert repr(term) == "TerminalState('t', command='echo <script>', bytes=4, exited=True)"


def test_the_html_marks_what_was_omitted() -> None:
    term = TerminalState("t", max_bytes=8)
    term.append(b"aaa\nbbb\nccc\nddd\n")
    assert term.html.startswith(
        f'<span class="acp-omitted">[… {term.omitted_bytes} bytes omitted …]</span>\n'
    )


def _term(
    *, snapshot: bytes = b"", chunk: bytes = b"", status: TerminalExitStatus | None = None
) -> TerminalState:
    term = TerminalState("t")
    if snapshot:
        term.replace(snapshot)
    if chunk:
        term.append(chunk)
    term.exit_status = status
    return term


REFUSED = b"User refused permission to run tool"


def test_phase_a_command_asked_about_waits_and_says_nothing_ran() -> None:
    assert terminal_phase(_term(), asking=True) == TerminalPhase("waiting", "waiting for approval")
    # bytes already: it runs (an agent that asks while its command runs)
    assert terminal_phase(_term(chunk=b"x"), asking=True).state == "running"
    assert terminal_phase(_term()) == TerminalPhase("running", "running")


@pytest.mark.parametrize("how", ["snapshot", "chunk"])
def test_phase_a_refused_command_did_not_run_and_its_bytes_are_the_agents_words(how: str) -> None:
    # claude-agent-acp: the tool result as a snapshot (v2) or streamed (v1), exitStatus {}
    term = _term(**{how: REFUSED}, status=TerminalExitStatus())  # type: ignore[arg-type]
    phase = terminal_phase(term, refused=True)
    assert phase == TerminalPhase("not-run", "not run", REFUSED.decode(), shows_bytes=False)
    # before its exit arrives too, and with nothing sent at all
    assert terminal_phase(_term(), refused=True).label == "not run"
    assert terminal_phase(_term(), refused=True).note == ""


def test_phase_an_exit_code_says_it_ran_even_after_a_refusal() -> None:
    term = _term(chunk=b"out\n", status=TerminalExitStatus(exit_code=1))
    assert terminal_phase(term, refused=True) == TerminalPhase("exited", "exit 1")


def test_phase_a_cancelled_turn_stops_a_command_the_agent_reports_no_exit_for() -> None:
    cut = b"The user doesn't want to proceed with this tool use."
    term = _term(snapshot=cut, status=TerminalExitStatus())
    assert terminal_phase(term, cancelled=True) == TerminalPhase(
        "stopped", "stopped", cut.decode(), shows_bytes=False
    )
    # what streamed before the cut is the command's own output: it stays on the screen
    streamed = terminal_phase(_term(chunk=b"tick\n", status=TerminalExitStatus()), cancelled=True)
    assert streamed == TerminalPhase("stopped", "stopped")
    # a signal or a code is a real exit, cancelled or not
    killed = _term(chunk=b"x", status=TerminalExitStatus(signal="SIGTERM"))
    assert terminal_phase(killed, cancelled=True) == TerminalPhase("exited", "signal SIGTERM")
    # not cancelled: an empty exit status is "exited", as before
    assert terminal_phase(_term(snapshot=b"x", status=TerminalExitStatus())).label == "exited"


def test_streamed_says_whether_the_kept_bytes_include_chunks() -> None:
    term = TerminalState("t")
    assert not term.streamed
    term.append(b"a")
    assert term.streamed
    term.replace(b"snapshot")
    assert not term.streamed
