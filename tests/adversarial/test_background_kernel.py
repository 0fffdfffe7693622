"""Background work in a real kernel: a terminal that goes on after the turn's idle keeps
streaming into the cell's live view, and its Stop button sends ``terminal/cancel``."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.kernel_driver import Kernel, SharedKernel, kernel_for_test, new_cell_id

AGENT = Path(__file__).parent / "agents" / "background_agent.py"


def received(work: Path) -> list[dict[str, Any]]:
    path = work / "received.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def terminal_bytes(k: Kernel, comm_id: str, since: int = 0) -> bytes:
    """The bytes the kernel sent to one terminal model, from comm message ``since`` on."""
    out = b""
    for _t, msg in k.comm_msgs[since:]:
        if (
            msg["content"]["comm_id"] == comm_id
            and msg["content"]["data"].get("method") == "custom"
        ):
            out += b"".join(bytes(b) for b in msg.get("buffers") or [])
    return out


def terminal_model(k: Kernel) -> str:
    return next(cid for cid, s in k.models.items() if s.get("_model_name") == "TerminalModel")


def html_values(k: Kernel) -> str:
    return " ".join(
        str(s.get("value", "")) for s in k.models.values() if s.get("_model_name") == "HTMLModel"
    )


def start(k: Kernel, work: Path, mode: str) -> None:
    k.run(f"%acp connect -- {sys.executable} {AGENT} {mode} {work}")
    cell = k.run("%%acp -o t\ngo\n", new_cell_id())
    assert "finished" in cell.text()  # the turn ended (its idle came) ...
    assert "still running: 1" in html_values(k)  # ... with work still going on


def test_output_keeps_arriving_after_the_cell_ended_and_stop_sends_terminal_cancel(
    shared_kernel: SharedKernel, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    work = tmp_path / "w"
    work.mkdir()
    with kernel_for_test(shared_kernel, tmp_path, request) as k:
        start(k, work, "terminal")
        term = terminal_model(k)
        since = len(k.comm_msgs)
        k.wait_for(
            lambda: b"tick 2" in terminal_bytes(k, term, since),
            "output chunks after the cell ended",
        )
        assert (k.models[term]["cols"], k.models[term]["rows"]) == (100, 30)
        assert k.models[term]["can_cancel"]
        content = {"comm_id": term, "data": {"method": "custom", "content": {"type": "cancel"}}}
        k.kc.shell_channel.send(k.kc.session.msg("comm_msg", content))  # the stop button
        k.wait_for(
            lambda: k.models[term].get("exit_status") == {"signal": "SIGTERM"},
            "the terminal's exit in its view",
        )
        k.wait_for(lambda: "background work ended" in html_values(k), "the section to end")
        assert "signal SIGTERM" in html_values(k)
        cancels = [m for m in received(work) if m.get("method") == "terminal/cancel"]
        assert [m["params"] for m in cancels] == [{"sessionId": "b1", "terminalId": "t1"}]
        # The cell stopped listening: the turn's state still has every byte (-o).
        out = k.run("print(t.state.background, t.state.terminals['t1'].exit_status)").text()
        assert "[] " in out and "SIGTERM" in out


def test_a_refused_stop_is_shown_on_the_item_and_the_section_stop_button_works(
    shared_kernel: SharedKernel, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    work = tmp_path / "w"
    work.mkdir()
    with kernel_for_test(shared_kernel, tmp_path, request) as k:
        start(k, work, "refuse")
        stops = k.wait_for(lambda: k.buttons("Stop"), "the section's Stop button")
        k.click(stops[0])
        k.wait_for(
            lambda: "stop failed: cannot stop t1 now" in html_values(k),
            "the agent's error on the item",
        )
        cancels = [m for m in received(work) if m.get("method") == "terminal/cancel"]
        assert len(cancels) == 1
        term = terminal_model(k)
        since = len(k.comm_msgs)
        k.wait_for(lambda: b"tick" in terminal_bytes(k, term, since), "the terminal to run on")


def test_a_background_tool_call_stops_with_tool_call_cancel(
    shared_kernel: SharedKernel, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    work = tmp_path / "w"
    work.mkdir()
    with kernel_for_test(shared_kernel, tmp_path, request) as k:
        start(k, work, "tool_call")
        k.click(k.wait_for(lambda: k.buttons("Stop"), "the Stop button")[0])
        k.wait_for(lambda: "background work ended" in html_values(k), "the section to end")
        assert "failed" in html_values(k)
        cancels = [m for m in received(work) if m.get("method") == "tool_call/cancel"]
        assert [m["params"] for m in cancels] == [{"sessionId": "b1", "toolCallId": "c1"}]


def test_the_saved_transcript_follows_a_command_left_running_after_the_idle(
    shared_kernel: SharedKernel, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # Issue 25, finding 13: the record saved "running" and none of what came after the idle.
    work = tmp_path / "w"
    work.mkdir()
    with kernel_for_test(shared_kernel, tmp_path, request) as k:
        k.run(f"%acp connect -- {sys.executable} {AGENT} terminal {work}")
        cell = k.run("%%acp\ngo\n", new_cell_id())
        finals = [
            m["content"]["transient"]["display_id"]
            for m in cell.of_type("display_data")
            if "finished" in m["content"]["data"].get("text/plain", "")
            and (m["content"].get("transient") or {}).get("display_id")
        ]
        [shown] = finals  # the final transcript, with a display id it is updated under
        # (on a loaded machine some ticks may be in it already: wait for two more than those)
        ticks = [int(n) for n in re.findall(r"tick (\d+)", k.displays[shown]["text/plain"])]
        later = f"tick {max(ticks, default=-1) + 2}"
        k.wait_for(
            lambda: later in k.displays[shown]["text/plain"],
            "the saved transcript to hold output that came after the idle",
        )
        term = terminal_model(k)
        content = {"comm_id": term, "data": {"method": "custom", "content": {"type": "cancel"}}}
        k.kc.shell_channel.send(k.kc.session.msg("comm_msg", content))  # the stop button
        k.wait_for(
            lambda: "[signal SIGTERM]" in k.displays[shown]["text/plain"],
            "the saved transcript to say how the command ended",
        )
        assert "[running]" not in k.displays[shown]["text/plain"]
