"""claude-agent-acp 0.101.0: a Bash ``tool_use`` with ``run_in_background: true`` keeps running
after the turn's idle, through ``%%acp`` in a real kernel.

What the agent sends (observed, and what the test matches): the Bash tool call is ``completed``
as soon as the command is started, its terminal's output snapshot is first the tool_result
("Command running in background with ID: ..."), then ``terminal_update`` with
``capabilities: {cancel: {}}`` and ``state_update`` with ``background: [{type: "terminal",
terminalId}]``, also on the idle. After the idle the terminal's output arrives as one snapshot
(``output.data``) then ``terminal_output_chunk`` appends. ``terminal/cancel`` is answered ``{}``,
then ``terminal_update`` ``{exitStatus: {}, capabilities: null}`` (an exit with neither code nor
signal) and ``state_update`` ``{state: "idle", background: []}`` (no stop reason). A command
that exits by itself ends the same way (``exitStatus: {}`` even for code 3), and then the agent
starts a turn of its own: its CLI tells the model in a ``<task-notification>``, and the reply
comes as ``state_update running``, ``agent_message_chunk``, ``idle end_turn``, with no prompt.
The CLI runs the command in a session of its own (setsid), out of the agent's process group.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kernel_driver import Execution, Kernel, acp_kernel, new_cell_id, process_gone
from tests.real_agents.conftest import ClaudeLaunch
from tests.real_agents.fake_anthropic import Text, ToolUse


def live(k: Kernel) -> dict[str, dict[str, Any]]:
    return {c: s for c, s in k.models.items() if c not in k.closed}


def html_values(k: Kernel) -> str:
    return " ".join(
        str(s.get("value", "")) for s in live(k).values() if s.get("_model_name") == "HTMLModel"
    )


def children(state: dict[str, Any]) -> list[str]:
    return [str(ref).removeprefix("IPY_MODEL_") for ref in state.get("children", ())]


def shown(k: Kernel, comm_id: str) -> bool:
    """Not hidden by its layout's ``display: none``."""
    layout = str(k.models[comm_id].get("layout", "")).removeprefix("IPY_MODEL_")
    return k.models.get(layout, {}).get("display") != "none"


def background_rows(k: Kernel) -> list[tuple[str, str]]:
    """``(label html, Stop button id)`` of each row of the still-running section."""
    rows = []
    for state in live(k).values():
        if "acp-background-item" in state.get("_dom_classes", ()):
            label, stop, *_ = children(state)
            rows.append((str(k.models[label].get("value", "")), stop))
    return rows


def terminal_model(k: Kernel, terminal_id: str) -> str:
    [cid] = [
        c
        for c, s in live(k).items()
        if s.get("_model_name") == "TerminalModel" and s.get("terminal_id") == terminal_id
    ]
    return cid


def terminal_bytes(k: Kernel, comm_id: str, since: int = 0) -> bytes:
    """The bytes the kernel sent to one terminal's views (chunks, resets, backlogs), from comm
    message ``since`` on."""
    out = b""
    for _t, msg in k.comm_msgs[since:]:
        content = msg["content"]
        if content["comm_id"] == comm_id and content["data"].get("method") == "custom":
            out += b"".join(bytes(b) for b in msg.get("buffers") or [])
    return out


def processes_with(marker: str) -> list[int]:
    """Ids of the live processes whose command line holds ``marker``."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
            stat = (proc / "stat").read_text()
        except OSError:
            continue
        if marker.encode() in cmdline and stat.rsplit(")", 1)[-1].split()[0] != "Z":
            found.append(int(proc.name))
    return found


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def loop_process(k: Kernel, marker: str) -> int:
    """The id of the loop's python3 process, once it runs. The still-running section shows
    once the agent has started the command's shell, which may not have started python3 yet (a
    CI run found it missing)."""
    [pid] = k.wait_for(
        lambda: [p for p in processes_with(marker) if _comm(p) == "python3"],
        "the loop's python3 process",
    )
    return int(pid)


_STARTED: list[str] = []  # the markers of the loops this module's tests started


@pytest.fixture(autouse=True)
def _reap() -> Iterator[None]:
    """A loop a test started and left behind (a failed test) is killed after it, by its id."""
    yield
    while _STARTED:
        for pid in processes_with(_STARTED.pop()):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def start_ticker(
    k: Kernel, claude: ClaudeLaunch, ticks: int, *after: Text
) -> tuple[ToolUse, str, Execution]:
    """Connect, and run a cell whose turn starts a background Bash command that prints a tick
    line every 0.2 s (``ticks`` of them, then it exits with code 3), approved by a click on its
    permission card; returns once the cell returned (the turn's idle). ``after``: the fake
    model's replies after the one that ends the turn. Returns the tool use, the marker that
    the loop's command line carries, and the cell."""
    marker = f"bg-ticker-{uuid.uuid4().hex[:12]}"
    _STARTED.append(marker)
    loop = f"for i in range({ticks}): print('tick', i, flush=True); time.sleep(0.2)"
    code = "\n".join(["import sys, time", loop, "sys.exit(3)"])
    command = f"python3 -u -c {shlex.quote(code)} {marker}"
    bash = ToolUse("Bash", {"command": command, "description": "Tick", "run_in_background": True})
    claude.api.add(bash, Text("The ticker runs in the background"), *after)
    k.run(f"%acp connect {claude.env_options()} -- {shlex.join(claude.argv)}")

    cell = k.submit("%%acp -o t\nrun a ticker in the background\n", new_cell_id())
    # claude-agent-acp asks before it (python is not a read-only command): click "Yes".
    yes = k.wait_for(lambda: k.buttons("Yes"), "the permission card's Yes button")
    assert processes_with(marker) == []  # nothing ran before the click
    k.click(yes[0])
    k.wait_for(lambda: cell.done, "the cell to return (the turn's idle)")
    assert cell.error is None, cell.text()
    assert "The ticker runs in the background" in cell.text()
    return bash, marker, cell


def test_background_bash_streams_after_idle_and_stops_on_its_stop_button(
    kern: Kernel, claude: ClaudeLaunch
) -> None:
    k = kern
    bash, marker, _cell = start_ticker(k, claude, 100_000)
    assert processes_with(marker), "the loop runs on after the idle"

    # The still-running section lists the terminal, with a Stop button (capabilities.cancel).
    k.wait_for(lambda: "still running: 1" in html_values(k), "the still-running section")
    [(label, stop)] = background_rows(k)
    assert marker in label and "running" in label
    k.wait_for(lambda: shown(k, stop), "the row's Stop button")
    out = k.run("print(t.state.background)").text()
    assert out.strip() == repr([("terminal", bash.id)])

    # The terminal's view keeps getting output after the cell returned.
    term = terminal_model(k, bash.id)
    since = len(k.comm_msgs)
    first = k.wait_for(
        lambda: [line for line in terminal_bytes(k, term, since).split(b"\n") if b"tick" in line],
        "tick lines after the idle",
    )
    k.wait_for(
        lambda: len(terminal_bytes(k, term, since).split(b"\n")) > len(first) + 2,
        "more tick lines (the stream goes on)",
    )
    assert k.models[term]["exit_status"] is None and k.models[term]["can_cancel"]

    k.click(stop)
    # The agent reports the exit: exitStatus {} (neither code nor signal), the terminal leaves
    # the snapshot, and the section says the work ended.
    k.wait_for(lambda: k.models[term].get("exit_status") == {}, "the terminal's exit in its view")
    k.wait_for(lambda: "background work ended" in html_values(k), "the section to end")
    [(label, stop)] = background_rows(k)
    assert "exited" in label and "running" not in label
    assert not shown(k, stop)
    assert not k.models[term]["can_cancel"]
    out = k.run(
        f"print(t.state.background, t.state.terminals[{bash.id!r}].exit_label, t.stop_reason)"
    ).text()
    assert out.split() == ["[]", "exited", "end_turn"]
    # The loop is gone, no orphan left behind.
    k.wait_for(lambda: processes_with(marker) == [], "the loop's process to be gone")
    log = k.run("%acp log -n 400").text()
    assert "terminal/cancel" in log


FOLLOW_UP = Text("The ticker finished with exit code 3")


def tick_to_the_end(k: Kernel, claude: ClaudeLaunch) -> tuple[ToolUse, str]:
    """A ticker of 10 lines that exits with code 3 by itself after the cell returned, and the
    follow-up turn claude-agent-acp starts on its own when the background task ends (its CLI
    tells the model in a ``<task-notification>``; the fake model answers ``FOLLOW_UP``)."""
    bash, marker, _cell = start_ticker(k, claude, 10, FOLLOW_UP)
    term = terminal_model(k, bash.id)
    k.wait_for(lambda: "background work ended" in html_values(k), "the section to end")
    k.wait_for(lambda: processes_with(marker) == [], "the loop's process to be gone")
    k.wait_for(lambda: len(claude.api.agent_requests()) == 3, "the agent's follow-up request")
    k.wait_for(lambda: "The ticker finished" in k.run("print(t.text)").text(), "the follow-up")
    return bash, term


def test_background_bash_that_exits_by_itself_shows_its_exit(
    kern: Kernel, claude: ClaudeLaunch
) -> None:
    k = kern
    bash, term = tick_to_the_end(k, claude)
    # exitStatus {}: claude-agent-acp 0.101.0 reports no exit code for a background command.
    # The code is at best in the output: its CLI appends "[exited with code 3]", which the
    # agent forwards in most runs, not all (it may stop reading the output first).
    assert k.models[term]["exit_status"] == {} and not k.models[term]["can_cancel"]
    assert b"tick 0\ntick 1\n" in terminal_bytes(k, term)
    [(label, stop)] = background_rows(k)
    assert "exited" in label and not shown(k, stop)
    out = k.run(f"print(t.state.background, t.state.terminals[{bash.id!r}].exit_label)").text()
    assert out.split() == ["[]", "exited"]
    # The model was told, in the follow-up the agent started by itself.
    [notified] = [
        block["text"]
        for block in claude.api.agent_requests()[2].body["messages"][-1]["content"]
        if block.get("type") == "text" and "<task-notification>" in block["text"]
    ]
    assert bash.id in notified and "exit code 3" in notified


def test_the_agents_follow_up_on_a_background_exit_shows_in_the_cell(
    kern: Kernel, claude: ClaudeLaunch
) -> None:
    k = kern
    tick_to_the_end(k, claude)
    k.wait_for(
        lambda: "The ticker finished with exit code 3" in html_values(k),
        "the follow-up message in the cell's view",
        guard=10.0,
    )


def test_closing_the_agent_while_its_background_command_runs_leaves_no_orphan(
    kern: Kernel, claude: ClaudeLaunch
) -> None:
    k = kern
    _bash, marker, _cell = start_ticker(k, claude, 100_000)
    k.wait_for(lambda: "still running: 1" in html_values(k), "the still-running section")
    pid = loop_process(k, marker)
    # Its CLI starts a background command in a session of its own (setsid), out of the agent's
    # process group (which our shutdown signals): only the agent itself can stop it.
    [agent] = re.findall(r"alive \(pid (\d+)\)", k.run("%acp status").text())
    assert os.getsid(pid) != os.getsid(int(agent))
    k.run("%acp close")
    k.wait_for(lambda: processes_with(marker) == [], "the loop's process to be gone", guard=15)
    # Gone, or dead and not yet reaped (a zombie: its parent, the CLI, was stopped with it).
    k.wait_for(lambda: not_running(pid), "the loop to have exited", guard=15)


def not_running(pid: int) -> bool:
    """The process has exited: it is gone, or a zombie its parent has not reaped yet."""
    if process_gone(pid):
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return True
    return stat[stat.rindex(b")") + 2 :].split()[0] == b"Z"


def test_a_killed_kernel_leaves_no_orphan_of_the_background_command(
    tmp_path: Path, claude: ClaudeLaunch
) -> None:
    # The command is out of the agent's process group (see above): it ends only because the
    # agent stops it on the supervisor's SIGTERM to the group, once the kernel is gone.
    with acp_kernel(tmp_path) as k:
        _bash, marker, _cell = start_ticker(k, claude, 100_000)
        k.wait_for(lambda: "still running: 1" in html_values(k), "the still-running section")
        pid = loop_process(k, marker)
    # the kernel was killed (shutdown_kernel(now=True): SIGKILL)
    deadline = time.monotonic() + 30
    while not process_gone(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert process_gone(pid), "the background loop outlived its kernel"
    assert processes_with(marker) == []


def shown_in(k: Kernel, execution: Execution) -> set[str]:
    """Every widget model that the cell's displayed views hold (the views' trees)."""
    found: set[str] = set()
    todo = [
        m["content"]["data"]["application/vnd.jupyter.widget-view+json"]["model_id"]
        for m in execution.of_type("display_data")
        if "application/vnd.jupyter.widget-view+json" in m["content"]["data"]
    ]
    while todo:
        cid = todo.pop()
        if cid not in found and cid in k.models and cid not in k.closed:
            found.add(cid)
            todo += children(k.models[cid])
    return found


def html_in(k: Kernel, ids: set[str]) -> str:
    return " ".join(
        str(k.models[c].get("value", ""))
        for c in ids
        if k.models[c].get("_model_name") == "HTMLModel"
    )


def stop_from_a_later_cell(k: Kernel, claude: ClaudeLaunch) -> tuple[Execution, Execution]:
    """A second prompt while the ticker runs: its turn ends (idle) with the terminal still in
    the background snapshot, and the first cell stops listening (the next turn started). The
    second cell lists the terminal, streams it and stops it. Returns both cells."""
    bash, marker, first = start_ticker(k, claude, 100_000, Text("Second answer"))
    k.wait_for(lambda: "still running: 1" in html_in(k, shown_in(k, first)), "the section")
    second = k.run("%%acp -o t2\nhello again\n", new_cell_id())
    assert "Second answer" in second.text()
    out = k.run("print(t2.state.background)").text()
    assert out.strip() == repr([("terminal", bash.id)])

    def row() -> tuple[str, str] | None:
        mine = shown_in(k, second)
        rows = [(label, stop) for label, stop in background_rows(k) if stop in mine]
        return rows[0] if rows else None

    k.wait_for(lambda: row() is not None, "the second cell's still-running row")
    label, stop = row() or ("", "")
    assert marker in label and "running" in label and shown(k, stop)
    term = k.wait_for(
        lambda: [c for c in shown_in(k, second) if k.models[c].get("terminal_id") == bash.id],
        "the terminal's live view in the second cell",
    )[0]
    since = len(k.comm_msgs)
    k.wait_for(lambda: b"tick" in terminal_bytes(k, term, since), "ticks in the second cell")
    k.click(stop)
    k.wait_for(lambda: k.models[term].get("exit_status") == {}, "the exit in the second cell")
    k.wait_for(
        lambda: "background work ended" in html_in(k, shown_in(k, second)), "the section to end"
    )
    k.wait_for(lambda: processes_with(marker) == [], "the loop's process to be gone")
    return first, second


def test_a_later_turns_cell_shows_the_background_work_still_running_and_stops_it(
    kern: Kernel, claude: ClaudeLaunch
) -> None:
    stop_from_a_later_cell(kern, claude)
