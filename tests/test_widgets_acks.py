"""Widget edits while a ``%%acp`` cell awaits its turn, in a real kernel.

The ipywidgets front end sends one ``update`` per model at a time and holds every later edit
until an iopub ``status: idle`` whose parent is that update arrives. ipykernel 7 handles comm
messages while an async cell runs, but publishes no status for them: without
``_widgets/_acks`` a person could edit each field of a question form once, and every later
keystroke stayed in the browser (the form then refused a value the person had corrected).
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.adversarial.test_oracle_scenarios_kernel import VALID, form_fields
from tests.kernel_driver import Execution, Kernel, acp_kernel, kernel, new_cell_id

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


def _new_subshell(k: Kernel) -> str:
    k.kc.control_channel.send(k.kc.session.msg("create_subshell_request", {}))
    reply = k.kc.control_channel.get_msg(timeout=SHORT)
    assert reply["content"]["status"] == "ok", reply["content"]
    return str(reply["content"]["subshell_id"])


def _widget_message_on(k: Kernel, subshell: str) -> Execution:
    """A widget message (to no comm) over ``subshell``, tracked until its ``idle``."""
    msg = k.kc.session.msg("comm_msg", {"comm_id": "no-such-comm", "data": {}})
    msg["header"]["subshell_id"] = subshell
    tracked = Execution(msg["header"]["msg_id"])
    k.executions[tracked.msg_id] = tracked
    k.kc.shell_channel.send(msg)
    return tracked


def _on_subshell_while_a_cell_runs(k: Kernel, subshell: str, release: Path) -> list[str]:
    """Run a cell that waits for ``release``; meanwhile send a widget message over
    ``subshell`` (as JupyterLab 4.4+ sends widget messages), wait for its ``idle``, then let the
    cell end. Returns the status messages from the widget message's ``idle`` to the cell's
    ``idle``, each as ``state:parent-type``."""
    seen: list[dict[str, Any]] = []
    take = k._take

    def keep(msg: dict[str, Any]) -> None:
        seen.append(msg)
        take(msg)

    k._take = keep  # type: ignore[method-assign]
    try:
        cell = k.submit(
            f"import os, time\nwhile not os.path.exists({str(release)!r}):\n    time.sleep(0.02)\n"
        )
        k.wait_for(lambda: "busy" in statuses(cell), "the cell to start")
        widget = _widget_message_on(k, subshell)
        k.wait_for(lambda: widget.done, "the subshell's idle for the widget message", guard=SHORT)
        assert not cell.done
        release.touch()
        k.wait_for(lambda: cell.done, "the cell to end", guard=SHORT)
    finally:
        k._take = take  # type: ignore[method-assign]
    found = [
        (m["content"]["execution_state"], m["parent_header"].get("msg_id"))
        for m in seen
        if m["msg_type"] == "status"
    ]
    start = found.index(("idle", widget.msg_id))
    end = found.index(("idle", cell.msg_id))
    kinds = {widget.msg_id: "widget", cell.msg_id: "cell"}
    return [f"{state}:{kinds.get(parent, 'other')}" for state, parent in found[start : end + 1]]


def test_a_widget_message_on_a_subshell_leaves_the_running_cell_busy(tmp_path: Path) -> None:
    """JupyterLab shows the kernel's status from every status message, whichever shell sent
    it: a click handled on a subshell said Idle while the cell still ran (issue 25, finding 8)."""
    with acp_kernel(tmp_path) as k:
        subshell = _new_subshell(k)
        # %load_ext acp_notebook installed the acknowledgements: busy again for the cell
        assert _on_subshell_while_a_cell_runs(k, subshell, tmp_path / "go-1") == [
            "idle:widget",
            "busy:cell",
            "idle:cell",
        ]
        # a cell that has ended is not said busy again by a later widget message
        after = _widget_message_on(k, subshell)
        k.wait_for(lambda: after.done, "the idle for a message after the cell", guard=SHORT)
        k.run("pass")  # whatever followed the idle has arrived by now
        assert statuses(after) == ["busy", "idle"]


def test_without_the_acknowledgements_the_subshells_idle_is_the_last_word(tmp_path: Path) -> None:
    """The same kernel and messages without ``_acks``: what a front end saw before the fix."""
    with kernel(str(tmp_path)) as k:
        subshell = _new_subshell(k)
        assert _on_subshell_while_a_cell_runs(k, subshell, tmp_path / "go") == [
            "idle:widget",
            "idle:cell",
        ]


def test_a_widget_front_end_that_connects_after_load_ext_is_seen(tmp_path: Path) -> None:
    """``%load_ext`` no longer imports ipywidgets, but a widget front end that connects after
    it (a page opened, a kernel restarted with the extension in its startup) still opens the
    control comm, ipywidgets takes it, and the notebook knows a front end can answer a card
    (what a front end without cell ids, the classic Notebook, relies on)."""
    with acp_kernel(tmp_path) as k:
        probe = (
            "import sys\nfrom acp_notebook._notebook._cells import front_end_seen\n"
            "print('before', 'ipywidgets' in sys.modules)\n"
        )
        assert k.run(probe).text().strip() == "before False"
        control = uuid.uuid4().hex
        opened = {"comm_id": control, "target_name": "jupyter.widget.control", "data": {}}
        # (as @jupyter-widgets/base sends it: the control protocol's version in its metadata)
        k.kc.shell_channel.send(
            k.kc.session.msg("comm_open", opened, metadata={"version": "1.0.0"})
        )
        ask = {"comm_id": control, "data": {"method": "request_states"}}
        k.kc.shell_channel.send(k.kc.session.msg("comm_msg", ask))
        states = k.wait_for(
            lambda: [
                m
                for _t, m in k.comm_msgs
                if m["content"]["comm_id"] == control
                and m["content"]["data"].get("method") == "update_states"
            ],
            "ipywidgets' answer on the control comm",
            guard=SHORT,
        )
        assert states  # the front end restores widget state as it would with ipywidgets there
        out = k.run("print(front_end_seen(), 'ipywidgets' in sys.modules)").text()
        assert out.strip() == "True True"


def test_the_control_target_is_left_to_ipywidgets_once_it_is_there() -> None:
    import sys

    from acp_notebook._widgets._acks import CONTROL_TARGET, answer_widget_control

    class Manager:
        def __init__(self) -> None:
            self.targets: dict[str, Any] = {}

        def register_target(self, name: str, handler: Any) -> None:
            self.targets[name] = handler

    class FakeKernel:
        comm_manager = Manager()

    assert answer_widget_control(object()) is False  # no comm manager: not an ipykernel
    kernel = FakeKernel()
    registered = answer_widget_control(kernel)
    assert registered is ("ipywidgets" not in sys.modules)
    assert (CONTROL_TARGET in kernel.comm_manager.targets) is registered
