"""Widget edits while a ``%%acp`` cell awaits its turn, in a real kernel.

The ipywidgets front end sends one ``update`` per model at a time and holds every later edit
until an iopub ``status: idle`` whose parent is that update arrives. ipykernel 7 handles comm
messages while an async cell runs, but publishes no status for them: without
``_widgets/_acks`` a person could edit each field of a question form once, and every later
keystroke stayed in the browser (the form then refused a value the person had corrected).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.adversarial.test_oracle_scenarios_kernel import VALID, form_fields
from tests.kernel_driver import Execution, Kernel, acp_kernel, new_cell_id

ROOT = Path(__file__).resolve().parents[1]
AGENT = ROOT / "tests" / "oracle" / "scenario_agent.mjs"
SHORT = 20.0  # seconds: a guard only


def send_update(k: Kernel, comm_id: str, **state: Any) -> Execution:
    """A front end's widget update, tracked like an execution: ``done`` once an iopub
    ``status: idle`` names it as its parent (what the ipywidgets front end waits for)."""
    content = {"comm_id": comm_id, "data": {"method": "update", "state": state, "buffer_paths": []}}
    msg = k.kc.session.msg("comm_msg", content)
    tracked = Execution(msg["header"]["msg_id"])
    k.executions[tracked.msg_id] = tracked
    k.kc.shell_channel.send(msg)
    return tracked


def statuses(tracked: Execution) -> list[str]:
    return [m["content"]["execution_state"] for m in tracked.of_type("status")]


@pytest.mark.oracle
def test_each_edit_during_a_turn_is_acknowledged_and_the_last_one_counts(tmp_path: Path) -> None:
    node = shutil.which("node")
    assert node is not None, "the oracle needs node (and npm ci in tests/oracle)"
    work = tmp_path / "agent"
    work.mkdir()
    with acp_kernel(tmp_path) as k:
        # The cell's form only: the side panel's inbox would hold a second copy of it, and
        # which Submit and field came first would be a matter of luck.
        k.run("%acp panel --no-auto")
        k.run(f"%acp connect -- {node} {AGENT} {work}")
        cell = k.submit("%%acp -o t\nform\n", new_cell_id())
        submit = k.wait_for(lambda: k.buttons("Submit"), "the Submit button")[0]
        k.wait_for(k.cell_waiting, "the cell to await its turn")
        fields = form_fields(k)
        for name, state in VALID.items():  # every other field filled at once
            if name != "Name":
                fields[name].set(**state)
        field = fields["Name"].input
        seen: list[dict[str, Any]] = []  # every iopub message from here on, in order
        take = k._take
        k._take = lambda msg: (seen.append(msg), take(msg))[1]  # type: ignore[method-assign]
        for value in ("A", "Ad", "Ada"):  # three keystrokes, each waiting for its idle
            edit = send_update(k, field, value=value)
            k.wait_for(lambda e=edit: e.done, f"the idle status for {value!r}", guard=SHORT)
            assert statuses(edit) == ["idle"]  # once: a second idle would upset the throttle

        # ... and a front end still shows the kernel busy: the cell's execution goes on
        def last_status() -> str:
            found = [m["content"] for m in seen if m["msg_type"] == "status"]
            return str(found[-1]["execution_state"]) if found else ""

        k.wait_for(lambda: last_status() == "busy", "busy again after the idle", guard=SHORT)
        assert not cell.done
        k.click(submit)
        k.wait_for(lambda: cell.done, "the cell to end")
        out = k.run("print(t.elicitations[0].content['name'])").text()
        assert out.strip() == "Ada"


def test_outside_a_turn_an_edit_gets_the_kernels_own_status_only(tmp_path: Path) -> None:
    with acp_kernel(tmp_path) as k:
        k.run(
            f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
            "import ipywidgets\nfrom acp_notebook._widgets._acks import acknowledge_comms\n"
            "print(acknowledge_comms(get_ipython().kernel))\n"
            "box = ipywidgets.Text(); box"
        )
        [text] = [c for c, s in k.models.items() if s.get("_model_name") == "TextModel"]
        edit = send_update(k, text, value="x")
        k.wait_for(lambda: edit.done, "the idle status", guard=SHORT)
        k.run("pass")  # anything published after the idle has arrived by now
        assert statuses(edit) == ["busy", "idle"]  # ipykernel's, with nothing added
        assert k.run("print(box.value)").text().strip() == "x"


def test_acknowledging_is_installed_once_and_only_on_a_kernel_that_dispatches() -> None:
    from acp_notebook._widgets._acks import acknowledge_comms

    class NoKernel:
        pass

    assert acknowledge_comms(NoKernel()) is False
    assert acknowledge_comms(None) is False

    class FakeKernel:
        async def dispatch_shell(self, msg: Any, /, **kwargs: Any) -> None:
            return None

    kernel = FakeKernel()
    assert acknowledge_comms(kernel) is True
    wrapped = kernel.dispatch_shell
    assert acknowledge_comms(kernel) is True
    assert kernel.dispatch_shell is wrapped  # not wrapped twice
