"""The agent side panel, kernel side: a real kernel driven like a front end, the embedded agent.

The panel's widgets are read from the comm traffic (what a browser would get), so these tests
check what the labextension is sent: the inbox, the badge count, the agents, the terminals.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kernel_driver import Kernel, SharedKernel, kernel_for_test, new_cell_id

AGENT = f"{sys.executable} -m acp_notebook.agent"


def _connect(k: Kernel, tmp_path: Path, extra: str = "") -> None:
    out = k.run(f"%acp connect --name embedded -- {AGENT} --data-dir {tmp_path}/data {extra}")
    assert "connected 'embedded'" in out.text(), out.text()


@pytest.fixture
def k(
    shared_kernel: SharedKernel, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Kernel]:
    """The module's kernel, reset: the panel, its subscriptions and its settings (``%acp panel
    --auto``) belong to the notebook, which each test gets new (a test that changes a module
    of the kernel has its own)."""
    with kernel_for_test(shared_kernel, tmp_path, request) as kern:
        # no front end holds the panel: `%acp panel` prints it as text, which these tests read
        kern.panel_view = False
        yield kern


# -- reading the widget tree the way a front end sees it -----------------------------------------


def _live(k: Kernel, model_id: str) -> dict[str, Any] | None:
    return None if model_id in k.closed else k.models.get(model_id)


def _children(state: dict[str, Any]) -> list[str]:
    return [c[len("IPY_MODEL_") :] for c in state.get("children") or [] if isinstance(c, str)]


def descendants(k: Kernel, model_id: str) -> list[str]:
    found: list[str] = []
    todo = [model_id]
    while todo:
        current = todo.pop(0)
        state = _live(k, current)
        if state is None:
            continue
        found.append(current)
        todo.extend(_children(state))
    return found


def with_class(k: Kernel, css: str, within: str | None = None) -> list[str]:
    pool = descendants(k, within) if within else list(k.models)
    return [
        cid
        for cid in pool
        if _live(k, cid) is not None and css in (k.models[cid].get("_dom_classes") or [])
    ]


def panel_id(k: Kernel) -> str:
    found = k.wait_for(
        lambda: [
            cid
            for cid, state in k.models.items()
            if state.get("_model_name") == "AgentPanelModel" and cid not in k.closed
        ],
        "the agent panel model",
    )
    return str(found[-1])


def html_within(k: Kernel, root: str) -> str:
    return "\n".join(
        str(k.models[cid].get("value", ""))
        for cid in descendants(k, root)
        if k.models[cid].get("_model_name") == "HTMLModel"
    )


def button_within(k: Kernel, root: str, description: str) -> str:
    for cid in descendants(k, root):
        state = k.models[cid]
        if state.get("_model_name") == "ButtonModel" and state.get("description") == description:
            return cid
    raise AssertionError(f"no {description!r} button under {root}")


def pending(k: Kernel) -> int:
    return int(k.models[panel_id(k)].get("pending_count", -1))


# -- tests ----------------------------------------------------------------------------------------


def test_inbox_approve_from_panel_and_reject_from_cell(k: Kernel, tmp_path: Path) -> None:
    work = tmp_path / "work"
    _connect(k, tmp_path)
    panel = panel_id(k)  # opened by itself on the first connect
    cell_a, cell_b = new_cell_id(), new_cell_id()
    k.run("%%acp --bg --session a\n$ echo from-panel > a.txt; echo panel-output\n", cell_a)
    k.run("%%acp --bg --session b\n$ touch b.txt\n", cell_b)

    k.wait_for(lambda: pending(k) == 2, "two pending requests on the badge")
    entries = with_class(k, "acp-inbox-entry", panel)
    assert len(entries) == 2
    labels = {cid: html_within(k, cid) for cid in entries}
    entry_a = next(cid for cid, text in labels.items() if cell_a in text)
    assert "from-panel" in labels[entry_a] and "session <b>a</b>" in labels[entry_a]
    entry_b = next(cid for cid, text in labels.items() if cell_b in text)
    assert "touch b.txt" in labels[entry_b]

    # approve a from the panel: the command runs; the cell's card says where the answer came from
    k.click(button_within(k, entry_a, "Allow once"))
    k.wait_for(lambda: (work / "a.txt").exists(), "the approved command to run")
    assert (work / "a.txt").read_text() == "from-panel\n"
    in_panel = set(descendants(k, panel))
    k.wait_for(
        lambda: any(
            "from the side panel" in str(state.get("value", ""))
            for cid, state in k.models.items()
            if cid not in in_panel and cid not in k.closed
        ),
        "the cell's card to show the panel's answer",
    )
    k.wait_for(lambda: pending(k) == 1, "the badge to drop to 1")
    assert entry_a in k.closed  # settled requests leave the inbox

    # its terminal is shown in the panel too: the same model, not a copy
    def panel_terminals() -> list[str]:
        return [
            cid
            for cid in descendants(k, panel)
            if k.models[cid].get("_model_name") == "TerminalModel"
        ]

    terminals = k.wait_for(panel_terminals, "the terminal in the panel")
    assert k.models[terminals[0]]["command"].startswith("echo from-panel")
    # the section head counts terminals (a's has exited), not turns (b's still waits);
    # it exited, so all of its output has reached the widget
    k.wait_for(
        lambda: any(
            "Terminals (1 shown, 0 running)" in str(k.models[cid].get("value", ""))
            for cid in descendants(k, panel)
        ),
        "the terminals head to count the exited terminal",
    )
    out = k.run(
        "import acp_notebook._notebook._owner as n\n"
        f"run = n.current().cells['cell:{cell_a}']\n"
        "w = list(run.view.terminal_widgets.values())[0]\n"
        "print(w.model_id, w.data)"
    ).text()
    assert terminals[0] in out and "panel-output" in out

    # reject b from its cell: the inbox empties and nothing ran
    cell_reject = [
        cid
        for cid in k.buttons("Reject")
        if cid not in set(descendants(k, panel)) and not k.models[cid].get("disabled")
    ]
    assert len(cell_reject) == 1
    k.click(cell_reject[0])
    k.wait_for(lambda: pending(k) == 0, "the badge to drop to 0")
    assert entry_b in k.closed
    assert with_class(k, "acp-inbox-entry", panel) == []
    assert not (work / "b.txt").exists()


def test_agents_alive_then_exited_after_close(k: Kernel, tmp_path: Path) -> None:
    _connect(k, tmp_path)
    panel = panel_id(k)

    def agent_html() -> str:
        rows = with_class(k, "acp-panel-agent", panel)
        return "\n".join(html_within(k, row) for row in rows)

    alive = k.wait_for(lambda: 'data-state="alive"' in agent_html() and agent_html(), "alive")
    assert "acp_notebook agent" in alive and "acp_notebook.agent" in alive
    pid = re.search(r"pid (\d+)", alive)
    assert pid is not None
    k.run("%acp close --name embedded")
    exited = k.wait_for(lambda: 'data-state="exited"' in agent_html() and agent_html(), "exited")
    assert "exit 0" in exited or "signal" in exited  # _exit.exit_label
    assert 'data-state="alive"' not in exited


def test_restart_button_relaunches_same_argv(k: Kernel, tmp_path: Path) -> None:
    _connect(k, tmp_path)
    panel = panel_id(k)
    k.run("%%acp --session s\nhello before\n")
    row = k.wait_for(lambda: with_class(k, "acp-panel-agent", panel), "the agent row")[0]
    old_pid = re.search(r"pid (\d+)", html_within(k, row))
    assert old_pid is not None
    k.click(button_within(k, row, "Restart"))

    def new_pid() -> str | None:
        for r in with_class(k, "acp-panel-agent", panel):
            found = re.search(r"alive · pid (\d+)", html_within(k, r))
            if found and found.group(1) != old_pid.group(1):
                return found.group(1)
        return None

    pid = k.wait_for(new_pid, "a new alive pid")
    status = k.run("%acp status").text()
    assert f"alive (pid {pid})" in status
    assert "acp_notebook.agent" in status
    # the session name now starts a fresh session on the new process
    after = k.run("%%acp --session s\nhello after\n")
    assert after.error is None
    assert f"pid {old_pid.group(1)}" not in k.run("%acp status").text()


def test_no_auto_and_explicit_open_with_text_summary(k: Kernel, tmp_path: Path) -> None:
    out = k.run("%acp panel --no-auto").text()
    assert "is no longer made" in out
    _connect(k, tmp_path)
    assert not [s for s in k.models.values() if s.get("_model_name") == "AgentPanelModel"]
    text = k.run("%acp panel").text()
    panel = panel_id(k)
    assert k.models[panel]["_show_requests"] >= 1
    # the same information as text, plus why it may not show (no front end reported it)
    assert "Agents:" in text and "embedded [default]: acp_notebook agent" in text
    assert "alive" in text
    assert "Approval inbox: 0 pending" in text
    assert "VS Code" in text


def test_first_connect_makes_the_panel_without_opening_it(k: Kernel, tmp_path: Path) -> None:
    # The panel (and its tab's badge) exists from the first connect, but it opens only when
    # asked: `%acp panel`, the palette, its tab; `%acp panel --auto` makes it open by itself.
    _connect(k, tmp_path)
    panel = panel_id(k)
    assert k.models[panel]["_show_requests"] == 0
    k.run("%%acp --bg --session a\n$ touch a.txt\n")
    k.wait_for(lambda: pending(k) == 1, "the badge to count the request")
    assert k.models[panel]["_show_requests"] == 0
    k.run("%acp panel")
    k.wait_for(lambda: k.models[panel]["_show_requests"] >= 1, "an explicit open")


def test_auto_opens_the_panel_on_the_first_connect(k: Kernel, tmp_path: Path) -> None:
    assert "opens by itself" in k.run("%acp panel --auto").text()
    _connect(k, tmp_path)
    panel = panel_id(k)
    k.wait_for(lambda: k.models[panel]["_show_requests"] >= 1, "the panel to open by itself")


def test_always_allow_is_listed_by_grants_and_in_the_panel(k: Kernel, tmp_path: Path) -> None:
    work = tmp_path / "work"
    _connect(k, tmp_path)
    panel = panel_id(k)
    assert "Grants: none" in k.run("%acp grants").text()
    cell = new_cell_id()
    k.run("%%acp --bg --session g\n$ echo granted > g.txt\n$ echo granted > g.txt\n", cell)
    k.wait_for(lambda: pending(k) == 1, "the request in the inbox")
    entry = with_class(k, "acp-inbox-entry", panel)[0]
    k.click(button_within(k, entry, "Always allow"))
    k.wait_for(lambda: (work / "g.txt").exists(), "the granted command to run")

    def grants_html() -> str:
        return "\n".join(html_within(k, cid) for cid in with_class(k, "acp-panel-grants", panel))

    html = k.wait_for(lambda: "Always allow" in grants_html() and grants_html(), "the grant")
    assert "Grants (1)" in html
    assert "echo granted &gt; g.txt" in html and "session <b>g</b>" in html
    assert "by panel" in html and "cannot see it" in html
    text = k.run("%acp grants").text()
    assert "Grants: 1" in text, text
    line = next(line for line in text.splitlines() if "echo granted" in line)
    assert line.strip().startswith("Always allow: $ echo granted > g.txt")
    assert "session g " in line and "on embedded" in line and "by panel" in line
    assert re.search(r"at \d\d:\d\d:\d\d", line), line
    assert "ACP has no method to list or revoke" in text
    assert "Grants: 1" in k.run("%acp panel").text()
    assert pending(k) == 0

    # Issue 25, finding 12: a later turn that ran under the grant, with no card, says so.
    # (once the --bg turn has ended: its second command runs under the grant too, and a
    # loaded machine can still be running it here; the session would be busy)
    def g_row() -> str:
        rows = [html_within(k, r) for r in with_class(k, "acp-panel-session", panel)]
        return next((row for row in rows if "<b>g</b>" in row), "")

    k.wait_for(lambda: "idle (finished)" in g_row(), "the --bg turn to end")
    later = k.run("%%acp --session g\n$ echo granted > g.txt\n").text()
    assert "Permission request" not in later, later
    note = "1 tool call ran without asking, under the 1 “always allow” answer of this session"
    assert f"finished · {note} (%acp grants)" in later, later


@pytest.mark.own_kernel  # it slows the panel's module down (REFRESH_INTERVAL) for good
def test_text_summary_inbox_follows_the_decisions(k: Kernel, tmp_path: Path) -> None:
    # The panel's refresher is slowed right down, so it cannot hide the bug: the text summary
    # must read the decisions (as `%acp status` does), not the inbox widgets it prunes.
    k.run(
        "import acp_notebook._sidepanel._panel as sp\nsp.REFRESH_INTERVAL = 3600\nrlo = '\\u202e'"
    )
    _connect(k, tmp_path)
    panel = panel_id(k)
    cell = k.run("%%acp --timeout 1\n$ echo {rlo}plain\n").text()  # nobody answers
    assert "decision: Cancelled - no answer before the timeout" in cell
    assert "> $ echo ⟨U+202E RLO⟩plain" in cell
    text = k.run("%acp panel").text()
    assert "0 pending permission(s)" in k.run("%acp status").text()
    assert "Approval inbox: 0 pending" in text, text
    assert "$ echo" not in text.split("Approval inbox:")[1]
    # the session's title (the agent made it from the prompt) is shown visibly
    assert "'$ echo ⟨U+202E RLO⟩plain', idle (cancelled)" in text and "\u202e" not in text
    k.wait_for(lambda: pending(k) == 0, "the badge to drop to 0")  # the widgets follow
    assert with_class(k, "acp-inbox-entry", panel) == []
    assert "\u202e" not in html_within(k, panel)


SCENARIO = [
    {
        "update": {
            "sessionUpdate": "config_option_update",
            "configOptions": [
                {
                    "configId": "mode",
                    "name": "Mode",
                    "type": "select",
                    "currentValue": "ask",
                    "options": [
                        {"value": "code", "name": "Code"},
                        {"value": "ask", "name": "Ask"},
                    ],
                }
            ],
        }
    },
    {
        "update": {
            "sessionUpdate": "available_commands_update",
            "availableCommands": [
                {"type": "command", "name": "review", "description": "review the diff"}
            ],
        }
    },
    {"update": {"sessionUpdate": "usage_update", "used": 1200, "size": 200000}},
    {"stopReason": "end_turn"},
]


def test_sessions_show_title_usage_commands_and_config(k: Kernel, tmp_path: Path) -> None:
    scenario = tmp_path / "scenario.jsonl"
    scenario.write_text("\n".join(json.dumps(step) for step in SCENARIO) + "\n")
    _connect(k, tmp_path, f"--scenario {scenario}")
    panel = panel_id(k)
    k.run("%%acp --session cfg\nconfigure me\n")

    def session_html() -> str:
        return "\n".join(html_within(k, r) for r in with_class(k, "acp-panel-session", panel))

    text = k.wait_for(
        lambda: (
            all(s in session_html() for s in ("/review", "idle (finished)", "1200/200000"))
            and session_html()
        ),
        "the session row with commands, usage and the idle state",
    )
    assert "<b>cfg</b>" in text and "configure me" in text  # name, and title from session_info
    assert "idle (finished)" in text
    assert "1200/200000 tokens" in text
    picker = k.wait_for(lambda: with_class(k, "acp-panel-config", panel), "the mode selector")[0]
    # the session starts with the agent's own modes (ask, plan); the scenario's update follows
    k.wait_for(  # (the options and the choice arrive as two updates of the picker)
        lambda: (
            (k.models[picker]["_options_labels"], k.models[picker]["index"]) == (["Code", "Ask"], 1)
        ),
        "the scenario's options, Ask chosen",
    )
    assert k.models[picker]["description"] == "Mode"

    # a person picks "Code": the kernel sends session/set_config_option to the agent
    msg = {"comm_id": picker, "data": {"method": "update", "state": {"index": 0}}}
    k.kc.shell_channel.send(k.kc.session.msg("comm_msg", msg))

    def logged() -> bool:
        out = k.run("%acp log -n 10").text()
        return '"method": "session/set_config_option"' in out and '"value": "code"' in out

    k.wait_for(logged, "session/set_config_option in the protocol log")
    # the embedded agent has no mode "code": the error is shown on the session, not hidden
    k.wait_for(lambda: "setting mode failed" in session_html(), "the error on the session")


def test_protocol_log_section_shows_the_chosen_connection(k: Kernel, tmp_path: Path) -> None:
    _connect(k, tmp_path)
    panel = panel_id(k)
    log_box = with_class(k, "acp-panel-log", panel)[0]
    text = k.wait_for(
        lambda: "initialize" in html_within(k, log_box) and html_within(k, log_box), "the log"
    )
    assert "-&gt; {" in text and "&lt;- {" in text  # escaped, with directions
    pick = with_class(k, "acp-panel-log-pick", panel)[0]
    assert k.models[pick]["_options_labels"] == ["embedded"]


def test_close_button_and_closing_the_panel_keep_cell_terminals(k: Kernel, tmp_path: Path) -> None:
    _connect(k, tmp_path)
    panel = panel_id(k)
    k.run("%%acp --allow 'echo *'\n$ echo kept\n")

    def panel_terminal() -> list[str]:
        return [
            cid
            for cid in descendants(k, panel)
            if k.models[cid].get("_model_name") == "TerminalModel"
        ]

    terminal = k.wait_for(panel_terminal, "the terminal in the panel")[0]
    row = with_class(k, "acp-panel-agent", panel)[0]
    k.click(button_within(k, row, "Close"))
    k.wait_for(lambda: 'data-state="exited"' in html_within(k, row), "the agent to exit")
    assert "closed (exit 0)" in k.run("%acp status").text()

    k.run("%acp panel --close")
    k.wait_for(lambda: panel in k.closed, "the panel model to close")
    assert terminal not in k.closed  # the cell still shows it
    assert (
        "kept"
        in k.run(
            "from acp_notebook._widgets import TerminalWidget\n"
            f"print(TerminalWidget.widgets['{terminal}'].data)"
        ).text()
    )


# -- without a kernel --------------------------------------------------------------------------


def test_panel_outside_a_kernel_prints_why_and_the_text(capsys: pytest.CaptureFixture[str]) -> None:
    from acp_notebook._magics import _commands
    from acp_notebook._notebook._owner import Notebook

    nb = Notebook()
    try:
        _commands._panel(nb, [])
    finally:
        nb.shutdown()
    out = capsys.readouterr().out
    assert "cannot open the agent panel: this is not a Jupyter kernel" in out
    assert "Agents:\n  (none: no agents connected" in out and "Approval inbox: 0 pending" in out
