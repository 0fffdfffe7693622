"""``run_code`` behind approval in a real kernel (jupyter_client), against the real embedded
agent: a thread in the kernel calls ``_kernel_code.request_code`` as the MCP server's thread
does, once the ``%%acp`` cell's turn has started. The turn is held open by a permission card
(``$ echo``) that the test answers last. The code would write a file: it appears only after an
explicit allow, and the code runs on the kernel's main thread, in the user namespace."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from tests.kernel_driver import Execution, Kernel, SharedKernel, kernel_for_test, new_cell_id

# Defined in the kernel: when a turn starts, a thread asks to run CODE in it (request_code).
ASKER = """
import threading
from acp_notebook._notebook._kernel_code import request_code
_nb = get_ipython().magics_manager.registry['AcpMagics'].notebook
asked = {}
def _ask_when_started(code, **kw):
    def started(run):
        sid = run.session.id
        def ask():
            asked['future'] = request_code(_nb, sid, code, **kw)
        threading.Thread(target=ask, daemon=True).start()
    asked['unsubscribe'] = _nb.events.subscribe('turn_started', started)
"""
CODE = (
    "import threading\n"
    "with open('made.txt', 'w') as f:\n"
    "    f.write('ran')\n"
    "made = 6 * 7\n"
    "on_main = threading.current_thread() is threading.main_thread()\n"
    "print('made', made)\n"
    "made"
)


@pytest.fixture
def k(
    shared_kernel: SharedKernel, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Kernel]:
    """The module's kernel, reset (an interrupt test has its own), the embedded agent connected
    and ``_ask_when_started`` defined."""
    with kernel_for_test(shared_kernel, tmp_path, request) as kern:
        data = tmp_path / "agent-data"
        kern.run(f"%acp connect -- {sys.executable} -m acp_notebook.agent --data-dir {data}")
        kern.run(ASKER)
        yield kern


def code_button(k: Kernel, which: str) -> list[str]:
    """The open code card's Allow or Reject button, once a container shows it."""
    shown = {
        ref.removeprefix("IPY_MODEL_")
        for state in k.models.values()
        for ref in state.get("children", ())
        if isinstance(ref, str)
    }
    return [
        cid
        for cid, state in k.models.items()
        if f"acp-code-{which}" in state.get("_dom_classes", ())
        and cid not in k.closed
        and cid in shown
    ]


def outcome(k: Kernel) -> str:
    return k.run(
        "o = asked['future'].result(30)\nprint(repr((o.ran, o.reason, o.output, o.error)))"
    ).text()


def start(k: Kernel, line: str = "", **kw: object) -> Execution:
    args = ", ".join(f"{key}={value!r}" for key, value in kw.items())
    k.run(f"_ask_when_started({CODE!r}{', ' if args else ''}{args})")
    return k.submit(f"%%acp {line}\n$ echo held\n", new_cell_id())


def end_turn(k: Kernel, cell: Execution) -> None:
    """Answer the permission card that holds the turn open; the cell ends."""

    def reject() -> list[str]:
        code_card = set(code_button(k, "reject"))
        return [cid for cid in k.buttons("Reject") if cid not in code_card]

    button = k.wait_for(reject, "the permission card's Reject")
    k.click(button[0])
    k.wait_for(lambda: cell.done, "the cell to finish")


def test_allow_click_runs_the_code_on_the_main_thread_in_the_namespace(
    k: Kernel, tmp_path: Path
) -> None:
    cell = start(k)
    allow = k.wait_for(partial(code_button, k, "allow"), "the code card's Allow")
    k.wait_for(k.cell_waiting, "the cell to await its turn")
    assert not (tmp_path / "work" / "made.txt").exists()  # shown, not run
    k.click(allow[0])
    k.wait_for((tmp_path / "work" / "made.txt").exists, "the code to run")
    end_turn(k, cell)
    assert cell.error is None, cell.error
    assert "(True, 'allowed', 'made 42\\n42\\n', None)" in outcome(k)
    assert "42 True" in k.run("print(made, on_main)").text()
    text = cell.text()
    assert "Code request:" in text and "Allowed - by a click; ran" in text and "made 42" in text


def test_reject_click_leaves_the_code_unrun(k: Kernel, tmp_path: Path) -> None:
    cell = start(k)
    reject = k.wait_for(partial(code_button, k, "reject"), "the code card's Reject")
    k.click(reject[0])
    k.wait_for(lambda: k.models and _decided(k), "the card's decision")
    end_turn(k, cell)
    assert "(False, 'rejected'" in outcome(k)
    assert not (tmp_path / "work" / "made.txt").exists()
    assert "False" in k.run("print('made' in globals())").text()


def _decided(k: Kernel) -> bool:
    return any("Not run - the user rejected" in str(s.get("value", "")) for s in k.models.values())


def test_the_cards_timeout_fails_closed(k: Kernel, tmp_path: Path) -> None:
    cell = start(k, timeout=0.5)
    k.wait_for(lambda: cell.done, "the turn to end (a timed-out card cancels it)")
    assert "(False, 'timeout'" in outcome(k)
    assert not (tmp_path / "work" / "made.txt").exists()
    assert "cancelled" in cell.text()


@pytest.mark.own_kernel
def test_interrupt_while_the_card_is_open_fails_closed(k: Kernel, tmp_path: Path) -> None:
    cell = start(k)
    k.wait_for(partial(code_button, k, "allow"), "the code card's Allow")
    k.wait_for(k.cell_waiting, "the cell to await its turn")
    k.km.interrupt_kernel()
    k.wait_for(lambda: cell.done, "the cell to finish after interrupt")
    assert "(False, 'interrupted'" in outcome(k)
    assert not (tmp_path / "work" / "made.txt").exists()


@pytest.mark.own_kernel
def test_interrupt_stops_code_that_runs_and_ends_the_turn(k: Kernel, tmp_path: Path) -> None:
    looping = (
        "import time\nprint('looping')\nopen('started.txt', 'w').close()\n"
        "while True:\n    time.sleep(0.01)"
    )
    k.run(f"_ask_when_started({looping!r})")
    cell = k.submit("%%acp\n$ echo held\n", new_cell_id())
    allow = k.wait_for(partial(code_button, k, "allow"), "the code card's Allow")
    k.wait_for(k.cell_waiting, "the cell to await its turn")
    k.click(allow[0])
    k.wait_for((tmp_path / "work" / "started.txt").exists, "the code to start")
    k.km.interrupt_kernel()
    k.wait_for(lambda: cell.done, "the cell to finish after interrupt")
    got = outcome(k)
    assert "(True, 'interrupted', 'looping\\n'" in got and "KeyboardInterrupt" in got
    assert "TurnInterrupted" in str(cell.error)


def test_the_end_of_the_turn_closes_an_open_card(k: Kernel, tmp_path: Path) -> None:
    cell = start(k)
    allow = k.wait_for(partial(code_button, k, "allow"), "the code card's Allow")
    end_turn(k, cell)
    assert "(False, 'turn-ended'" in outcome(k)
    k.click(allow[0])  # a stale card: nothing runs
    k.run("pass")
    assert not (tmp_path / "work" / "made.txt").exists()


def test_allow_code_runs_without_a_click(k: Kernel, tmp_path: Path) -> None:
    cell = start(k, "--allow-code")
    k.wait_for((tmp_path / "work" / "made.txt").exists, "the code to run by policy")
    end_turn(k, cell)
    assert "(True, 'policy', 'made 42\\n42\\n', None)" in outcome(k)
    assert "Allowed - by policy --allow-code; ran" in cell.text()


def test_no_turn_is_refused(k: Kernel, tmp_path: Path) -> None:
    got = k.run(
        f"o = request_code(_nb, 'no-such-session', {CODE!r}).result(30)\n"
        "print(repr((o.ran, o.reason)))"
    ).text()
    assert "(False, 'no-turn')" in got
    assert not (tmp_path / "work" / "made.txt").exists()


# -- through the kernel tools' MCP server (%acp connect --kernel-tools, @tool run_code) ----------


@pytest.fixture
def mk(
    shared_kernel: SharedKernel, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Kernel]:
    with kernel_for_test(shared_kernel, tmp_path, request) as kern:
        data = tmp_path / "agent-data"
        kern.run(
            f"%acp connect --kernel-tools -- {sys.executable} -m acp_notebook.agent"
            f" --data-dir {data}"
        )
        yield kern


def tool_line(code: str) -> str:
    """The embedded agent's prompt line that calls run_code (braces doubled: the body of a
    %%acp cell fills in {name})."""
    args = json.dumps({"code": code}).replace("{", "{{").replace("}", "}}")
    return f"@tool run_code {args}"


def test_run_code_through_mcp_runs_after_a_click(mk: Kernel, tmp_path: Path) -> None:
    cell = mk.submit(f"%%acp\n{tool_line(CODE)}\n", new_cell_id())
    allow = mk.wait_for(partial(code_button, mk, "allow"), "the code card's Allow")
    mk.wait_for(mk.cell_waiting, "the cell to await its turn")
    assert not (tmp_path / "work" / "made.txt").exists()
    mk.click(allow[0])
    mk.wait_for(lambda: cell.done, "the turn to end")
    assert cell.error is None, cell.error
    assert (tmp_path / "work" / "made.txt").read_text() == "ran"
    assert "42 True" in mk.run("print(made, on_main)").text()
    text = cell.text()
    # The card shows the output, and the tool call reports what went back to the agent.
    assert "Allowed - by a click; ran" in text
    assert text.count("made 42") >= 2, text


def test_run_code_through_mcp_rejected_never_runs(mk: Kernel, tmp_path: Path) -> None:
    cell = mk.submit(f"%%acp\n{tool_line(CODE)}\n", new_cell_id())
    reject = mk.wait_for(partial(code_button, mk, "reject"), "the code card's Reject")
    mk.click(reject[0])
    mk.wait_for(lambda: cell.done, "the turn to end")
    assert not (tmp_path / "work" / "made.txt").exists()
    text = cell.text()
    assert "Not run - the user rejected the code" in text and "not run: rejected" in text
    assert "False" in mk.run("print('made' in globals())").text()


# (its own kernel, as before kernels were shared: it failed once in a shared one, under load,
# and did not again in 9 runs; kept apart until that is understood)
@pytest.mark.own_kernel
def test_run_code_through_mcp_times_out_closed(mk: Kernel, tmp_path: Path) -> None:
    cell = mk.run(f"%%acp --timeout 1\n{tool_line(CODE)}\n", new_cell_id())
    assert not (tmp_path / "work" / "made.txt").exists()
    text = cell.text()
    # As a permission card's countdown does, the card's ends the turn: the tool call with it.
    assert "decision: Not run - no answer before the code card's timeout" in text, text
    assert "run_code - cancelled" in text
