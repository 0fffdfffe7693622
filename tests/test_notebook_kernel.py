"""``%%acp`` in a real kernel driven by jupyter_client, against the real embedded agent."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests.kernel_driver import (
    PYTHON_AGENT,
    Kernel,
    SharedKernel,
    acp_kernel,
    kernel_for_test,
    new_cell_id,
    process_gone,
)


@pytest.fixture
def k(
    shared_kernel: SharedKernel, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Kernel]:
    """The module's kernel, reset, with the embedded agent connected (a test that interrupts
    the kernel or changes its configuration, environment or modules has its own)."""
    with kernel_for_test(shared_kernel, tmp_path, request) as kern:
        data = tmp_path / "agent-data"
        kern.run(f"%acp connect -- {sys.executable} -m acp_notebook.agent --data-dir {data}")
        yield kern


def test_connect_reports_agent(k: Kernel) -> None:
    out = k.run("%acp status").text()
    # the same label as `%acp connect` and the panel: the agent's title, then its version
    assert "acp_notebook agent" in out and "alive" in out


def _click_while_waiting(k: Kernel, code: str, label: str, username: str = "") -> Any:
    """Start a turn, wait until the cell awaits it, then send the click a browser would."""
    earlier = set(k.buttons(label))  # an earlier cell's, disabled
    cell = k.submit(code, new_cell_id())

    def new_button() -> list[str]:
        return [b for b in k.buttons(label) if b not in earlier]

    button = k.wait_for(new_button, f"the {label} button")
    k.wait_for(k.cell_waiting, "the cell to await its turn")
    assert not cell.done  # the cell is still waiting for the turn
    k.click(button[0], username)
    k.wait_for(partial(getattr, cell, "done"), "the cell to finish after the click")
    assert cell.error is None, cell.error
    return cell


def test_click_while_cell_waits_runs_command(k: Kernel, tmp_path: Path) -> None:
    cell = _click_while_waiting(k, "%%acp\n$ echo approved > clicked.txt\n", "Allow once")
    assert (tmp_path / "work" / "clicked.txt").read_text() == "approved\n"
    assert "finished" in cell.text()  # the turn ended with end_turn
    assert "by a click" in cell.text()


def test_reject_click_leaves_command_unrun(k: Kernel, tmp_path: Path) -> None:
    cell = _click_while_waiting(k, "%%acp\n$ touch nope.txt\n", "Reject")
    assert not (tmp_path / "work" / "nope.txt").exists()
    assert "Rejected: Reject - by a click" in cell.text()


def test_a_click_records_who_made_it(k: Kernel, tmp_path: Path) -> None:
    """The username in the click's header (JupyterLab's signed-in user, set by the
    labextension) is shown on the card and kept in the session's decision log; a name with
    markup and a bidi override is shown escaped and visible."""
    cell = _click_while_waiting(k, "%%acp\n$ touch named.txt\n", "Allow once", "Alice Smith")
    assert (tmp_path / "work" / "named.txt").exists()
    assert "Approved: Allow once - by a click from Alice Smith" in cell.text()
    log = k.run(
        "from acp_notebook._magics import _notebook_of\n"
        "nb = _notebook_of(get_ipython())\n"
        "d = nb.session('default').session.permissions[-1]\n"
        "print(d.decided_by, '|', d.detail)"
    ).text()
    assert log.strip() == "click | Alice Smith"
    hostile = "\u202eevil <img src=x onerror=alert(1)>"
    cell = _click_while_waiting(k, "%%acp\n$ touch hostile.txt\n", "Reject", hostile)
    assert not (tmp_path / "work" / "hostile.txt").exists()
    assert "Rejected: Reject - by a click from" in cell.text()
    assert "\u202e" not in cell.text() and "<img" not in cell.html()
    assert "&lt;img src=x" in cell.html()


def test_timeout_fails_closed(k: Kernel, tmp_path: Path) -> None:
    cell = k.run("%%acp --timeout 0.5\n$ touch late.txt\n")
    assert not (tmp_path / "work" / "late.txt").exists()
    assert "timeout" in cell.text().lower()


def test_policy_allow_and_deny(k: Kernel, tmp_path: Path) -> None:
    # a redirection that writes a file is only approved by a rule with a `>` in it (README)
    cell = k.run(
        "%%acp --allow 'echo * > *' --deny 'touch *'\n$ echo hi > ok.txt\n$ touch no.txt\n"
    )
    assert (tmp_path / "work" / "ok.txt").read_text() == "hi\n"
    assert not (tmp_path / "work" / "no.txt").exists()
    text = cell.text()
    assert "--allow 'echo * > *'" in text and "--deny 'touch *'" in text


@pytest.mark.own_kernel
def test_interrupt_cancels_turn(k: Kernel) -> None:
    cell = k.submit("%%acp --allow '*' -o t\n$ sleep 30\n", new_cell_id())
    k.wait_for(
        lambda: any(s.get("_model_name") == "TerminalModel" for s in k.models.values()),
        "the terminal widget",
    )
    k.wait_for(k.cell_waiting, "the cell to await its turn (with its own SIGINT handler)")
    k.km.interrupt_kernel()
    k.wait_for(lambda: cell.done, "the cell to finish after interrupt")
    out = k.run("print(t.stop_reason, t.done)").text()
    assert "cancelled True" in out


def test_bg_returns_and_keeps_streaming(k: Kernel) -> None:
    cell = k.run("%%acp --bg --allow '*' -o t\n$ sleep 1; echo later\n")
    assert "later" not in cell.text()
    k.run("import time\nwhile not t.done: time.sleep(0.05)")
    out = k.run("print(list(t.terminals.values())[0].text)").text()
    assert "later" in out


def test_rerun_replaces_view_and_closes_old_models(k: Kernel) -> None:
    cell_id = new_cell_id()
    k.run("%%acp\nhello one\n", cell_id)
    before = set(k.models)
    k.run("%%acp\nhello two\n", cell_id)
    k.wait_for(lambda: before & k.closed, "old widget models to close")
    assert before & k.closed


def test_output_variable_exposes_turn(k: Kernel) -> None:
    k.run("%%acp --allow 'printf*' --allow 'exit *' -o t\nprint\n$ printf 'a\\nb\\n'; exit 3\n")
    out = k.run(
        "term = list(t.terminals.values())[0]\n"
        "print(repr(term.data), term.exit_status, t.stop_reason)\n"
        "print([c.status for c in t.tool_calls.values()])\n"
        "print([d.decided_by for d in t.permissions])"
    ).text()
    assert "b'a\\r\\nb\\r\\n'" in out  # the raw bytes: the PTY maps \n to \r\n
    assert "end_turn" in out
    assert "'failed'" in out
    assert "'policy'" in out


def test_prompt_interpolation_and_missing_name(k: Kernel) -> None:
    k.run("who = 'notebook'")
    out = k.run("%%acp -o t\nhello {who} {{braces}}\n").text()
    assert out
    said = k.run("print(t.state.prompt_text)").text()
    assert "hello notebook {braces}" in said
    bad = k.run("%%acp\nhello {nobody}\n", ok=False)
    assert "{nobody} is not defined" in bad.text()


def test_help_is_real(k: Kernel) -> None:
    # `%%acp?` pages the magic's docstring, which magic_arguments builds from the parser.
    cell_doc = k.run("print(get_ipython().find_cell_magic('acp').__doc__)").text()
    line_doc = k.run("print(get_ipython().find_line_magic('acp').__doc__)").text()
    for flag in ("--allow", "--deny", "--timeout", "--bg", "--session", "--new", "-o"):
        assert flag in cell_doc
    assert "connect" in line_doc and "resume" in line_doc
    msg_id = k.kc.execute("%%acp?")
    reply = k.kc.get_shell_msg(timeout=30)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = k.kc.get_shell_msg(timeout=30)
    pages = [p["data"]["text/plain"] for p in reply["content"].get("payload", [])]
    assert any("--allow" in page for page in pages), pages


def most_in_any_second(times: list[float]) -> int:
    """The most of ``times`` (seconds, ascending) that fall in any one second."""
    most = start = 0
    for end, at in enumerate(times):
        while at - times[start] >= 1.0:
            start += 1
        most = max(most, end - start + 1)
    return most


def test_most_in_any_second_counts_a_sliding_window() -> None:
    assert most_in_any_second([]) == 0
    assert most_in_any_second([0.0, 0.5, 0.99, 1.0, 1.2]) == 4  # 0.5 .. 1.2
    assert most_in_any_second([0.0, 1.0, 2.0]) == 1


def test_flood_stays_under_widget_message_rate(tmp_path: Path) -> None:
    # The pacing's promise (acp_notebook/_widgets/_coalesce.py): a terminal's chunks at most 28
    # in any second, and every terminal comm's messages together under 150, however fast the
    # agent writes (to a view that does not acknowledge, as this driver's: one that does is
    # paced by the shared budget, tests/test_widgets_acks.py). Counted by the kernel's own send
    # times (each message's header), in every one-second window: an average over the whole cell
    # would be over its own length, which a fast machine makes shorter than a second (it failed
    # so: 37 messages in 0.37 s).
    with acp_kernel(tmp_path) as kern:
        kern.run(
            f"%acp connect -- {sys.executable} -m acp_notebook.agent --data-dir {tmp_path}/d "
            "--flood-output 20"
        )
        kern.comm_msgs.clear()
        cell = kern.run("%%acp --allow '*' -o t\nflood\n")
        out = kern.run("print(sum(x.total_bytes for x in t.terminals.values()))").text()
        assert int(out.strip()) >= 20 * 2**20
        assert cell.error is None
        sent = [msg for _, msg in kern.comm_msgs]
        terminals = {c for c, m in kern.models.items() if m.get("_model_name") == "TerminalModel"}
        chunks = [m for m in sent if m["content"]["comm_id"] in terminals and m.get("buffers")]
        assert terminals and sum(len(b) for m in chunks for b in m["buffers"]) >= 20 * 2**20

        def times(msgs: list[dict[str, Any]]) -> list[float]:
            return sorted(m["header"]["date"].timestamp() for m in msgs)

        print(f"flood: {len(sent)} widget messages, {len(chunks)} of them terminal chunks")
        for comm in terminals:
            mine = [m for m in chunks if m["content"]["comm_id"] == comm]
            assert most_in_any_second(times(mine)) <= 30, f"{len(mine)} chunks"
        assert most_in_any_second(times(sent)) <= 150, f"{len(sent)} widget messages"


def test_terminal_stop_button_sends_terminal_cancel(k: Kernel) -> None:
    cell = k.submit("%%acp --allow 'sleep*' -o t\n$ sleep 30\n", new_cell_id())
    terminal = k.wait_for(
        lambda: [
            cid
            for cid, state in k.models.items()
            if state.get("_model_name") == "TerminalModel" and state.get("can_cancel")
        ],
        "a running terminal that offers a stop button",
    )
    content = {
        "comm_id": terminal[0],
        "data": {"method": "custom", "content": {"type": "cancel"}},
    }
    k.kc.shell_channel.send(k.kc.session.msg("comm_msg", content))  # what the button sends
    k.wait_for(lambda: cell.done, "the cell to finish after the stop button")
    out = k.run(
        "term = list(t.terminals.values())[0]\n"
        "print(term.exit_status.signal, [c.status for c in t.tool_calls.values()])\n"
        "%acp log -n 60"
    ).text()
    assert '"method": "terminal/cancel"' in out
    assert "SIGINT" in out or "SIGKILL" in out


def _reply(k: Kernel, code: str) -> tuple[dict[str, Any], Any]:
    """Run ``code``; return its execute_reply content (a front end's Run All looks at its
    status) and the execution's iopub record."""
    execution = k.submit(code)
    k.wait_for(lambda: execution.done, f"idle after {code[:60]!r}")
    while True:
        reply = k.kc.get_shell_msg(timeout=30)
        if reply["parent_header"].get("msg_id") == execution.msg_id:
            return reply["content"], execution


def test_failed_or_interrupted_connect_fails_the_cell(tmp_path: Path) -> None:
    with acp_kernel(tmp_path) as kern:
        reply, cell = _reply(kern, f"%acp connect -- {sys.executable} -c \"print('not json')\"")
        assert reply["status"] == "error" and reply["ename"] == "UsageError"
        assert "a line that is not JSON-RPC: 'not json'" in reply["evalue"]
        text = cell.text()
        # One problem and no stderr: the error's one line says it all, once (no box above it)
        assert "Could not connect" not in text and "IPython.core.display.HTML object" not in text
        assert text.count("not JSON-RPC") == 1, text

        # Interrupt while the agent never answers: the cell fails and the agent is stopped.
        pid_file = tmp_path / "pid"
        part = f"{pid_file}.part"  # renamed once written: the file is never seen empty
        code = f"import os, time; open({part!r}, 'w').write(str(os.getpid()));"
        code += f" os.replace({part!r}, {str(pid_file)!r}); time.sleep(1000)"
        execution = kern.submit(f"%acp connect -- {sys.executable} -c {code!r}")
        kern.wait_for(pid_file.exists, "the agent to start")
        kern.km.interrupt_kernel()
        kern.wait_for(lambda: execution.done, "the cell to end after the interrupt")
        assert execution.error is not None and execution.error["ename"] == "KeyboardInterrupt"
        pid = int(pid_file.read_text())
        kern.wait_for(partial(process_gone, pid), "the agent to be gone", 15)
        assert "no agents connected" in kern.run("%acp status").text()


def test_sessions_lists_this_directory_with_dates_and_all_with_cwd(
    k: Kernel, tmp_path: Path
) -> None:
    import re

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    data = tmp_path / "agent-data"  # the same store as the fixture's agent
    assert k.run("%%acp\nhere\n").error is None  # on the fixture's agent, in its cwd
    k.run(
        f"%acp connect --name other --cwd {elsewhere} -- "
        f"{sys.executable} -m acp_notebook.agent --data-dir {data}"
    )
    assert k.run("%%acp --session other\nthere\n").error is None  # on 'other', elsewhere
    first = Path(sys.executable).name  # the fixture's agent is named after its argv[0]
    here = k.run(f"%acp sessions --name {first}").text()
    everywhere = k.run(f"%acp sessions --name {first} --all").text()
    date = r"\d{4}-\d\d-\d\d \d\d:\d\d"
    assert str(elsewhere) not in here, here
    assert str(elsewhere) in everywhere, everywhere
    rows = [line for line in here.splitlines() if line.startswith("  ")]
    assert rows and all(re.match(rf"  {date}  sess-\S+  ", row) for row in rows), here
    assert len([r for r in everywhere.splitlines() if r.startswith("  ")]) == len(rows) + 1


@pytest.mark.own_kernel
def test_without_a_front_end_a_card_fails_closed_after_the_configured_timeout(
    k: Kernel, tmp_path: Path
) -> None:
    # This driver opens no widget front end, as nbclient/nbconvert/`jupyter execute` do not.
    k.run("%config AcpMagics.noninteractive_timeout = 1")
    cell = k.run("%%acp -o t\n$ touch unanswered.txt\n")
    assert not (tmp_path / "work" / "unanswered.txt").exists()
    assert "no answer before the timeout" in cell.text(), cell.text()
    assert "cancelled" in k.run("print(t.stop_reason)").text()


@pytest.mark.own_kernel
@pytest.mark.parametrize("signal", ["cell id", "widget control comm"])
def test_a_front_end_gets_no_default_timeout(k: Kernel, tmp_path: Path, signal: str) -> None:
    import uuid

    k.run("import os; os.environ['ACP_NOTEBOOK_PERMISSION_TIMEOUT'] = '1'")
    if signal == "widget control comm":
        # What JupyterLab's widget manager does when it connects to a kernel that has
        # ipywidgets loaded (a front end that sends no cell id but renders widgets).
        content = {"comm_id": uuid.uuid4().hex, "target_name": "jupyter.widget.control"}
        msg = k.kc.session.msg("comm_open", content, metadata={"version": "1.0.0"})
        k.kc.shell_channel.send(msg)
    # JupyterLab, Notebook 7 and VS Code send each cell's id; nbclient and nbval do not.
    cell_id = new_cell_id() if signal == "cell id" else None
    cell = k.submit("%%acp\n$ touch clicked.txt\n", cell_id)
    button = k.wait_for(partial(k.buttons, "Allow once"), "the Allow once button")
    later = time.monotonic() + 3  # well past the 1 s a run without a front end would wait
    k.wait_for(lambda: time.monotonic() > later, "three seconds")
    assert not cell.done
    k.click(button[0])
    k.wait_for(partial(getattr, cell, "done"), "the cell to finish after the click")
    assert (tmp_path / "work" / "clicked.txt").exists()


def test_jupyter_execute_ends_on_an_unanswerable_card(tmp_path: Path) -> None:
    import json
    import os
    import subprocess

    work = tmp_path / "work"
    work.mkdir()
    agent = f"{sys.executable} -m acp_notebook.agent --data-dir {tmp_path / 'data'}"
    cells = ["%load_ext acp_notebook", f"%acp connect -- {agent}", "%%acp\n$ touch asked.txt\n"]
    nb = {
        "cells": [
            {"cell_type": "code", "metadata": {}, "source": src, "outputs": [],
             "execution_count": None, "id": f"c{i}"}
            for i, src in enumerate(cells)
        ],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                    "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }  # fmt: skip
    path = work / "asks.ipynb"
    path.write_text(json.dumps(nb))
    env = {**os.environ, "ACP_NOTEBOOK_PERMISSION_TIMEOUT": "2"}
    done = subprocess.run(
        [sys.executable, "-m", "jupyter", "execute", "--inplace", str(path)],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,  # a guard: without the default timeout this waits forever
    )
    assert done.returncode == 0, done.stderr
    saved = json.loads(path.read_text())["cells"][2]["outputs"]
    text = "".join(
        "".join(out.get("data", {}).get("text/plain", "")) + "".join(out.get("text", ""))
        for out in saved
    )
    assert "Cancelled - no answer before the timeout" in text, text
    assert not (work / "asked.txt").exists()


def test_rerunning_a_cell_says_it_continues_the_session(k: Kernel) -> None:
    cell_id = new_cell_id()
    first = k.run("%%acp\nhello\n", cell_id)
    assert "ran before" not in first.text()
    again = k.run("%%acp\nhello\n", cell_id).text()
    assert "acp: this cell ran before in session 'default'" in again, again
    assert "(turn 2)" in again and "--new starts a fresh session" in again
    fresh = k.run("%%acp --new\nhello\n", cell_id).text()
    assert "ran before" not in fresh


def test_cells_without_ids_or_history_are_not_taken_for_reruns(k: Kernel) -> None:
    # nbval runs every cell with store_history=False and no cell id: same execution count.
    from tests.kernel_driver import Execution

    texts = []
    for prompt in ("one", "two"):
        content = {"code": f"%%acp\n{prompt}\n", "silent": False, "store_history": False}
        msg = k.kc.session.msg("execute_request", content)
        k.kc.shell_channel.send(msg)
        execution = k.executions[msg["header"]["msg_id"]] = Execution(msg["header"]["msg_id"])
        k.wait_for(lambda e=execution: e.done, f"the cell {prompt!r}")
        texts.append(execution.text())
    assert all("ran before" not in text for text in texts), texts


@pytest.mark.own_kernel
def test_interrupt_ends_the_cell_with_one_line(k: Kernel) -> None:
    """Not a 20-line traceback through the rewritten ``await __import__(...)`` cell."""
    cell = k.submit("%%acp --allow '*'\n$ sleep 30\n", new_cell_id())
    k.wait_for(k.cell_waiting, "the cell to await its turn")
    k.km.interrupt_kernel()
    k.wait_for(lambda: cell.done, "the cell to finish after interrupt")
    error = cell.error
    assert error is not None and error["ename"] == "TurnInterrupted"
    assert error["traceback"] == [
        "KeyboardInterrupt: the turn was cancelled (session/cancel sent, pending requests"
        " answered cancelled)"
    ]
    assert "__import__" not in cell.text()


def test_agent_option_picks_the_agent_and_names_its_session(k: Kernel, tmp_path: Path) -> None:
    data = tmp_path / "second-agent-data"
    k.run(f"%acp connect --name second -- {sys.executable} -m acp_notebook.agent --data-dir {data}")
    k.run("%%acp -o first\nto the last connected\n")
    first_agent = PYTHON_AGENT  # the fixture's agent, named after the interpreter's file
    k.run(f"%%acp --agent {first_agent} -o picked\nto the first one\n")
    status = k.run("%acp status").text()
    assert "session 'default' on 'second'" in status
    assert f"session '{first_agent}' on '{first_agent}'" in status
    out = k.run("print(first.session.agent is picked.session.agent)").text()
    assert out.strip() == "False"
    clash = k.run(f"%%acp --agent second --session {first_agent}\nhi\n", ok=False).text()
    assert f"session '{first_agent}' belongs to agent '{first_agent}', not 'second'" in clash
    unknown = k.run("%%acp --agent nobody\nhi\n", ok=False).text()
    assert "no agent named 'nobody'" in unknown


def test_config_chooses_how_terminal_bytes_travel(tmp_path: Path) -> None:
    """``%config AcpMagics.terminal_transport`` (issue 26): terminals made afterwards send base64
    text, not binary frames; ``auto`` goes back to what the kernel can see (no gateway here)."""
    with acp_kernel(tmp_path) as kern:
        made = "from acp_notebook._widgets import TerminalWidget\nprint(TerminalWidget().text_safe)"
        assert kern.run(made).text().strip() == "False"
        kern.run("%config AcpMagics.terminal_transport = 'text'")
        assert kern.run(made).text().strip() == "True"
        kern.run("%config AcpMagics.terminal_transport = 'auto'")
        assert kern.run(made).text().strip() == "False"
        bad = kern.run("%config AcpMagics.terminal_transport = 'carrier pigeon'", ok=False)
        said = bad.text() + str(bad.error or "")
        assert "carrier pigeon" in said and "auto" in said, said  # refused, naming the choices
        assert kern.run(made).text().strip() == "False"


def test_an_agent_off_the_allowlist_is_refused_in_one_line(tmp_path: Path) -> None:
    """The operator's list (the kernel's environment) and %config's, which only narrows it."""
    with acp_kernel(tmp_path) as kern:
        kern.run("import os; os.environ['ACP_NOTEBOOK_ALLOWED_AGENTS'] = 'claude, embedded'")
        refused = kern.run("%acp connect -- /bin/cat", ok=False)
        said = str(refused.error) + refused.text()
        assert "'/bin/cat' is not an allowed agent here; allowed: claude, embedded" in said, said
        assert "Traceback" not in refused.text()
        kern.run("%config AcpMagics.allowed_agents = ['claude']")
        refused = kern.run("%acp connect", ok=False)  # the embedded agent: narrowed away
        said = str(refused.error) + refused.text()
        assert "'embedded' is not an allowed agent here; allowed: claude" in said, said
        # a shortcut on the list allows its registry command as is, not with words added
        more = kern.run("%acp connect claude -- --dangerously-skip-permissions", ok=False)
        said = str(more.error) + more.text()
        assert "is not an allowed agent here; allowed: claude" in said, said
        kern.run("%config AcpMagics.allowed_agents = None")
        kern.run("%acp connect --name ok")  # on the operator's list: it starts
        assert "  ok [default]: acp_notebook agent" in kern.run("%acp status").text()


def _final_outputs(cell: Any) -> tuple[list[str], list[tuple[str, str]]]:
    """The display ids the cell showed things under, and every update: (display id, html)."""
    shown = [
        str(m["content"].get("transient", {}).get("display_id", ""))
        for m in cell.of_type("display_data")
    ]
    updates = [
        (str(m["content"]["transient"]["display_id"]), m["content"]["data"].get("text/html", ""))
        for m in cell.of_type("update_display_data")
    ]
    return shown, updates


PRINTF = (
    "%%acp --allow 'printf *' --allow 'sleep *'\n"
    "$ printf 'alpha\\nbravo\\n'; sleep 1.5; printf 'charlie\\n'\n"
)


@pytest.fixture
def plain(tmp_path: Path) -> Iterator[Kernel]:
    """A kernel whose front end lacks the labextension (VS Code, Colab): no terminal view says
    ready, no front end renders the side panel."""
    with acp_kernel(tmp_path) as kern:
        kern.extension = kern.panel_view = False
        data = tmp_path / "agent-data"
        kern.run(
            f"%acp connect -- {sys.executable} -m acp_notebook.agent --data-dir {data}",
            new_cell_id(),
        )
        yield kern


def test_without_the_labextension_terminals_show_as_text_and_the_turn_once(
    plain: Kernel,
) -> None:
    """A widget front end whose terminal views never say ready (VS Code, Colab: no
    labextension, so TerminalModel is an error box): after a short wait the turn's terminals
    are standard HTML widgets with their output, the running record stays empty, and the
    final transcript replaces the live view instead of showing beside it (issue 26)."""
    k = plain
    k.run("import acp_notebook._notebook._start as _s; _s.TEXT_TERMINALS_AFTER = 0.5")
    cell = k.submit(PRINTF, new_cell_id())

    def text_terminal() -> bool:
        return any(
            s.get("_model_name") == "HTMLModel" and "charlie" in str(s.get("value", ""))
            and "acp-terminal-body" in str(s.get("value", ""))
            for s in k.models.values()
        )  # fmt: skip

    k.wait_for(text_terminal, "the terminal as text with its output")
    k.wait_for(lambda: cell.done, "the cell to end")
    assert cell.error is None, cell.error
    shown, updates = _final_outputs(cell)
    view_ids = [d for d in shown if d.startswith("acp-view-")]
    assert len(view_ids) == 1  # the live view, under its display id
    final = [html for display_id, html in updates if display_id == view_ids[0]]
    assert len(final) == 1 and "charlie" in final[0] and "acp-turn-static" in final[0]
    # no second transcript beside it: the other display is the record's slot, left empty
    slots = [d for d in shown if d and not d.startswith("acp-view-")]
    assert len(slots) == 1 and len(shown) == 2, shown
    last = [html for display_id, html in updates if display_id == slots[0]][-1:]
    assert last in ([], ['<div class="acp-static-slot"></div>']), last
    assert k.run("print(_s.TEXT_TERMINALS_AFTER)").text().strip() == "0.5"
    # the kernel has learnt it: a later turn, with no terminal at all, shows once as well
    later = k.run("%%acp\nhello\n", new_cell_id())
    shown, updates = _final_outputs(later)
    view_ids = [d for d in shown if d.startswith("acp-view-")]
    assert len(view_ids) == 1 and len(shown) == 2, shown
    assert [d for d, html in updates if "acp-turn-static" in html] == view_ids
    assert not any("acp-static-running" in html for _, html in updates)


def test_without_the_labextension_a_turn_that_ends_before_the_wait_shows_once(
    plain: Kernel,
) -> None:
    """A turn whose terminal ends before the wait for its view is over (a quick command): the
    cell waits out the rest of it, so the turn is shown once, with its terminal as text, rather
    than its transcript beside a view that the wait's timer turns to text a moment later."""
    k = plain
    k.run("import acp_notebook._notebook._start as _s; _s.TEXT_TERMINALS_AFTER = 3.0")
    cell = k.run("%%acp --allow 'printf *'\n$ printf 'quick\\n'\n", new_cell_id())
    shown, updates = _final_outputs(cell)
    view_ids = [d for d in shown if d.startswith("acp-view-")]
    assert len(view_ids) == 1 and len(shown) == 2, shown
    final = [html for display_id, html in updates if display_id == view_ids[0]]
    assert len(final) == 1 and "quick" in final[0] and "acp-turn-static" in final[0]
    assert any(
        s.get("_model_name") == "HTMLModel" and "quick" in str(s.get("value", ""))
        and "acp-terminal-body" in str(s.get("value", ""))
        for s in k.models.values()
    )  # fmt: skip


@pytest.fixture
def vscode(tmp_path: Path) -> Iterator[Kernel]:
    """A kernel whose front end is VS Code with the nbextension: the panel's model and each
    terminal's view say that the page lacks the extension's output-area styles."""
    with acp_kernel(tmp_path) as kern:
        kern.unstyled = True
        data = tmp_path / "agent-data"
        kern.run(
            f"%acp connect -- {sys.executable} -m acp_notebook.agent --data-dir {data}",
            new_cell_id(),
        )
        yield kern


@pytest.mark.parametrize("ready_after", [0.0, 3.0])
def test_on_an_unstyled_page_terminals_stay_live_and_the_turn_shows_once(
    vscode: Kernel, ready_after: float
) -> None:
    """VS Code with the nbextension: the terminal's view renders (its ``ready`` says the page
    lacks our output-area styles), so the terminal stays a live xterm, but nothing would hide
    the transcript beside the live view: it replaces the view when the turn ends, and the
    running record stays empty. So too when the terminal's view says ``ready`` only after the
    turn has ended (a slow renderer, a loaded machine): the panel said it first."""
    k = vscode
    k.ready_after = ready_after
    cell = k.run(PRINTF, new_cell_id())
    shown, updates = _final_outputs(cell)
    view_ids = [d for d in shown if d.startswith("acp-view-")]
    assert len(view_ids) == 1 and len(shown) == 2, shown
    final = [html for display_id, html in updates if display_id == view_ids[0]]
    assert len(final) == 1 and "charlie" in final[0] and "acp-turn-static" in final[0]
    slot = next(d for d in shown if not d.startswith("acp-view-"))
    last = [html for display_id, html in updates if display_id == slot][-1:]
    assert last in ([], ['<div class="acp-static-slot"></div>']), last
    assert not any(
        s.get("_model_name") == "HTMLModel" and "acp-terminal-body" in str(s.get("value", ""))
        for s in k.models.values()
    )  # the terminal was never switched to text
    facts = "nb = _notebook_of(get_ipython()); print(nb.extension, nb.unstyled)"
    said = k.run(f"from acp_notebook._magics import _notebook_of\n{facts}").text().strip()
    assert said == "True True"


@pytest.mark.own_kernel
def test_with_the_labextension_terminals_stay_live_and_the_transcript_follows(
    k: Kernel,
) -> None:
    k.run("import acp_notebook._notebook._start as _s; _s.TEXT_TERMINALS_AFTER = 0.5")
    cell = k.run(PRINTF, new_cell_id())  # the driver's terminal views say ready
    _, updates = _final_outputs(cell)
    assert not any(display_id.startswith("acp-view-") for display_id, _ in updates)
    assert "charlie" in cell.html() and "acp-turn-static" in cell.html()
    assert not any(
        s.get("_model_name") == "HTMLModel" and "acp-terminal-body" in str(s.get("value", ""))
        for s in k.models.values()
    ), [s.get("value") for s in k.models.values() if "acp-terminal" in str(s.get("value"))]


@pytest.mark.own_kernel
def test_interrupt_says_which_commands_the_agent_left_running_and_offers_close(
    k: Kernel, tmp_path: Path
) -> None:
    # finding 6: Codex's command keeps running after session/cancel; the cell said nothing.
    # A scenario agent models it: its terminal is reported running, and no exit follows.
    import json

    steps = [
        {"update": {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "title": "serve",
                    "kind": "execute", "status": "in_progress",
                    "content": [{"type": "terminal", "terminalId": "t1"}]}},
        {"update": {"sessionUpdate": "terminal_update", "terminalId": "t1",
                    "command": "python3 -m http.server 8123", "cwd": "${cwd}"}},
        {"sleep": 60},
        {"stopReason": "end_turn"},
    ]  # fmt: skip
    scenario = tmp_path / "outlives.jsonl"
    scenario.write_text("\n".join(json.dumps(s) for s in steps) + "\n")
    data = tmp_path / "scenario-data"
    k.run(f"%acp connect --name runner -- {sys.executable} -m acp_notebook.agent "
          f"--data-dir {data} --scenario {scenario}")  # fmt: skip
    cell = k.submit("%%acp --agent runner\nserve it\n", new_cell_id())
    k.wait_for(k.cell_waiting, "the cell to await its turn")
    k.wait_for(
        lambda: any(m.get("command", "").endswith("8123") for m in k.models.values()),
        "the terminal's view to show the command",
    )
    k.km.interrupt_kernel()
    k.wait_for(lambda: cell.done, "the cell to finish after interrupt")
    error = cell.error
    assert error is not None and error["ename"] == "TurnInterrupted"
    [line] = error["traceback"]
    assert line == (
        "KeyboardInterrupt: the turn was cancelled (session/cancel sent, pending requests"
        " answered cancelled); a command the agent started is still running"
        " (python3 -m http.server 8123): `%acp close --name runner` stops the agent and what"
        " it runs"
    )
