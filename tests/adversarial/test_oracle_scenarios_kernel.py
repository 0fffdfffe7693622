"""The scenario agent on the reference TypeScript SDK (``tests/oracle/scenario_agent.mjs``),
driven through the magics in a real kernel: a form with every field type of the v2 schema
filled through widget comm messages, a URL question, a question after ``session/cancel``,
background items that come and go, and requests for background work after idle.

The SDK parses everything our client sends with its own validators; what it accepted is in
``WORKDIR/oracle.jsonl``. Every message our client wrote is also checked against the v2 JSON
Schema, in the kernel, from the agent's connection log.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.kernel_driver import Kernel, SharedKernel, kernel_for_test, new_cell_id

ROOT = Path(__file__).resolve().parents[2]
AGENT = ROOT / "tests" / "oracle" / "scenario_agent.mjs"
SDK = ROOT / "tests" / "oracle" / "node_modules" / "@agentclientprotocol" / "sdk"
pytestmark = pytest.mark.oracle

SHORT = 20.0  # seconds: a guard for waits whose failure is the expected outcome today


def node() -> str:
    found = shutil.which("node")
    if found is None or not (SDK / "package.json").exists():
        pytest.fail("the oracle needs node and `npm ci` in tests/oracle (.ci/run does this)")
    return found


# -- what the SDK accepted ---------------------------------------------------------------------
def oracle(work: Path) -> list[tuple[str, Any]]:
    path = work / "oracle.jsonl"
    if not path.exists():
        return []
    entries = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line]
    return [(e["kind"], e["value"]) for e in entries]


def recorded(work: Path, kind: str) -> list[Any]:
    return [value for k, value in oracle(work) if k == kind]


def assert_nothing_refused(work: Path) -> None:
    """The SDK's validators refused none of our answers, and no turn of the agent failed."""
    bad = [(k, v) for k, v in oracle(work) if k.endswith("_error") or k == "turn_failed"]
    assert bad == []


SCHEMA_CHECK = f"""
import json, sys
sys.path.insert(0, {str(ROOT)!r})
from tests._schema import check_client_message
from acp_notebook._magics import _notebook_of
_problems = []
for _handle in _notebook_of(get_ipython()).agents.values():
    _log = list(_handle.agent.connection.log)
    assert len(_log) < (_handle.agent.connection.log.maxlen or 10**9), "log overflowed"
    _peer = {{m["id"]: m["method"] for d, m in _log
             if d == "recv" and isinstance(m, dict) and "method" in m and "id" in m}}
    _sent = [m for d, m in _log if d == "send" and isinstance(m, dict)]
    assert _sent and _sent[0]["method"] == "initialize"
    for _m in _sent:
        _problems += [f"{{p}}: {{json.dumps(_m)[:300]}}" for p in check_client_message(_m, _peer)]
print("SCHEMA", json.dumps(_problems))
"""


def assert_sent_schema_valid(k: Kernel) -> None:
    out = k.run(SCHEMA_CHECK).text()
    line = next(x for x in out.splitlines() if x.startswith("SCHEMA "))
    assert json.loads(line.removeprefix("SCHEMA ")) == []


# -- what a front end sees and sends ---------------------------------------------------------------
def live(k: Kernel) -> dict[str, dict[str, Any]]:
    return {c: s for c, s in k.models.items() if c not in k.closed}


def html_values(k: Kernel) -> str:
    return " ".join(
        str(s.get("value", "")) for s in live(k).values() if s.get("_model_name") == "HTMLModel"
    )


def children(state: dict[str, Any]) -> list[str]:
    return [str(ref).removeprefix("IPY_MODEL_") for ref in state.get("children", ())]


def set_state(k: Kernel, comm_id: str, **state: Any) -> None:
    """What a browser sends when a person edits a widget."""
    content = {"comm_id": comm_id, "data": {"method": "update", "state": state, "buffer_paths": []}}
    k.kc.shell_channel.send(k.kc.session.msg("comm_msg", content))


class Field:
    """One field of the open form: its input widget and its inline error line."""

    def __init__(self, k: Kernel, box: dict[str, Any]) -> None:
        self.k = k
        parts = children(box)
        self.label = str(k.models[parts[0]].get("value", ""))
        self.input = parts[1]
        self.error_line = parts[-1]

    @property
    def model(self) -> str:
        return str(self.k.models[self.input]["_model_name"])

    @property
    def error(self) -> str:
        return str(self.k.models[self.error_line].get("value", ""))

    def set(self, **state: Any) -> None:
        set_state(self.k, self.input, **state)


def form_fields(k: Kernel) -> dict[str, Field]:
    """The open form's fields by their title (the label a person reads)."""
    out: dict[str, Field] = {}
    for state in live(k).values():
        if "acp-elicit-field" in state.get("_dom_classes", ()):
            field = Field(k, state)
            title = field.label.split("<b>", 1)[1].split("</b>", 1)[0]
            out[title] = field
    return out


def shown_stops(k: Kernel) -> list[str]:
    """Stop buttons a person can see: not hidden by their layout's ``display: none``."""
    out = []
    for cid in k.buttons("Stop"):
        layout = str(k.models[cid].get("layout", "")).removeprefix("IPY_MODEL_")
        if k.models.get(layout, {}).get("display") != "none":
            out.append(cid)
    return out


def stop_of(k: Kernel, label: str) -> str:
    """The Stop button in the background row whose label contains ``label``."""
    for state in live(k).values():
        if "acp-background-item" in state.get("_dom_classes", ()):
            first, stop, *_ = children(state)
            if label in str(k.models[first].get("value", "")):
                return stop
    raise AssertionError(f"no background row {label!r}")


def connect(k: Kernel, work: Path) -> None:
    k.run("%acp panel --no-auto")  # the cell's forms only (the panel's inbox would copy them)
    k.run(f"%acp connect -- {node()} {AGENT} {work}")


# -- the form ------------------------------------------------------------------------------------
VALID = {
    "Name": {"value": "Ada"},
    "Email": {"value": "ada@example.org"},
    "Site": {"value": "https://example.org/x"},
    "Day": {"value": "2026-12-01"},
    "When": {"value": "2026-12-01T10:30:00Z"},
    "Code": {"value": "ABC"},
    "Ratio": {"value": 1.25},
    "Count": {"value": 4},
    "Color": {"index": 3},  # (choose), red, green, blue
    "Tags": {"index": [0, 2]},  # alpha, beta, gamma
}
INVALID = {
    "Name": {"value": "A"},  # minLength 2
    "Email": {"value": "not an address"},
    "Site": {"value": "no scheme"},
    "Day": {"value": "1 December"},
    "When": {"value": "2026-12-01"},
    "Code": {"value": "abc"},  # pattern ^[A-Z]{3}$
    "Ratio": {"value": 3.0},  # maximum 2.5
    "Count": {"value": 0},  # minimum 1
    "Tags": {"index": [0, 1, 2]},  # maxItems 2
}
EXPECTED = {
    "name": "Ada",
    "email": "ada@example.org",
    "site": "https://example.org/x",
    "day": "2026-12-01",
    "when": "2026-12-01T10:30:00Z",
    "code": "ABC",
    "ratio": 1.25,
    "count": 4,
    "color": "blue",
    "tags": ["alpha", "gamma"],
    # untouched required boolean: sent as what the box shows
    "fast": False,
    # defaults, untouched
    "greeting": "hello",
    "scale": 1.5,
    "retries": 3,
    "verbose": True,
    "size": "s",
    "regions": ["eu"],
    # left out: note (empty string), budget (number), dry (boolean): optional, untouched
}


def test_every_field_type_reaches_the_agent_typed_after_invalid_answers_are_refused(
    tmp_path: Path,
    shared_kernel: SharedKernel,
    request: pytest.FixtureRequest,
) -> None:
    work = tmp_path / "agent"
    work.mkdir()
    with kernel_for_test(shared_kernel, tmp_path, request) as k:
        connect(k, work)
        cell = k.submit("%%acp -o t\nform\n", new_cell_id())
        submit = k.wait_for(lambda: k.buttons("Submit"), "the Submit button")[0]
        k.wait_for(k.cell_waiting, "the cell to await its turn")
        fields = form_fields(k)
        assert {name: f.model for name, f in fields.items()} == {
            **dict.fromkeys(
                ["Name", "Email", "Site", "Day", "When", "Note", "Code", "Greeting"], "TextModel"
            ),
            **dict.fromkeys(["Ratio", "Scale", "Budget"], "FloatTextModel"),
            **dict.fromkeys(["Count", "Retries"], "IntTextModel"),
            **dict.fromkeys(["Fast", "Verbose", "Dry run"], "CheckboxModel"),
            **dict.fromkeys(["Color", "Size"], "DropdownModel"),
            **dict.fromkeys(["Tags", "Regions"], "SelectMultipleModel"),
        }
        assert k.models[fields["Color"].input]["_options_labels"] == [
            "(choose)",
            "red",
            "green",
            "blue",
        ]
        assert k.models[fields["Size"].input]["_options_labels"] == ["Small", "Large"]
        assert k.models[fields["Regions"].input]["_options_labels"] == [
            "Europe",
            "Americas",
            "Asia",
        ]
        required = [n for n, f in fields.items() if "acp-elicit-required" in f.label]
        assert required == ["Name", "Email", "Ratio", "Count", "Fast", "Color", "Tags"]

        # Invalid answers: each field says why, and nothing reaches the agent.
        for name, state in INVALID.items():
            fields[name].set(**state)
        k.click(submit)
        k.wait_for(lambda: "fix the marked fields" in html_values(k), "the inline error")
        k.wait_for(lambda: all(fields[n].error for n in INVALID), "an error on each bad field")
        assert [n for n, f in fields.items() if f.error] == [
            n
            for n in fields
            if n in INVALID or n == "Color"  # Color: required, not chosen
        ]
        assert recorded(work, "form_answer") == []

        for name, state in VALID.items():
            fields[name].set(**state)
        fields["Note"].set(value="typed, then cleared")
        fields["Note"].set(value="")  # an empty optional string is left out
        k.click(submit)
        k.wait_for(lambda: cell.done, "the cell to end")
        [answer] = recorded(work, "form_answer")
        assert answer == {"action": "accept", "content": EXPECTED}
        content = answer["content"]
        assert type(content["count"]) is int and type(content["ratio"]) is float
        assert type(content["fast"]) is bool and type(content["tags"]) is list
        text = k.run("print(t.text)").text()
        assert "check: ok" in text  # the agent's own check of the answer against its schema
        assert k.run("print(t.elicitations[0].action)").text().strip() == "accept"
        assert_nothing_refused(work)
        assert_sent_schema_valid(k)


def test_a_url_question_shows_its_domain_and_the_click_answers(
    tmp_path: Path, shared_kernel: SharedKernel, request: pytest.FixtureRequest
) -> None:
    work = tmp_path / "agent"
    work.mkdir()
    with kernel_for_test(shared_kernel, tmp_path, request) as k:
        connect(k, work)
        cell = k.submit("%%acp -o t\nurl\n", new_cell_id())
        accept = k.wait_for(lambda: k.buttons("Accept"), "the Accept button")[0]
        shown = html_values(k)
        assert "domain: <b>login.example.org</b>" in shown
        assert 'href="https://login.example.org/device?code=XYZ"' in shown
        assert 'rel="noopener noreferrer"' in shown
        assert recorded(work, "url_answer") == []  # nothing answers before the click
        k.click(accept)
        k.wait_for(lambda: cell.done, "the cell to end")
        assert recorded(work, "url_answer") == [{"action": "accept"}]
        assert 'answer: {"action":"accept"}' in k.run("print(t.text)").text()
        assert_nothing_refused(work)
        assert_sent_schema_valid(k)


@pytest.mark.own_kernel
def test_a_question_after_session_cancel_is_answered_cancel(
    tmp_path: Path, shared_kernel: SharedKernel, request: pytest.FixtureRequest
) -> None:
    work = tmp_path / "agent"
    work.mkdir()
    with kernel_for_test(shared_kernel, tmp_path, request) as k:
        connect(k, work)
        cell = k.submit("%%acp -o t\ncancel-ask\n", new_cell_id())
        k.wait_for(lambda: "waiting for session/cancel" in html_values(k), "the agent to wait")
        k.wait_for(k.cell_waiting, "the cell to await its turn")
        k.km.interrupt_kernel()
        k.wait_for(lambda: cell.done, "the cell to end after the interrupt")
        k.wait_for(lambda: recorded(work, "late_question"), "our answer to the late question")
        assert recorded(work, "late_question") == [{"action": "cancel"}]
        kinds = [kind for kind, _ in oracle(work)]
        assert kinds.index("session/cancel") < kinds.index("late_question")
        k.run("pass")
        assert [b for b in k.buttons("Submit") if not k.models[b].get("disabled")] == []
        assert k.run("print(t.stop_reason)").text().strip() == "cancelled"
        assert_nothing_refused(work)
        assert_sent_schema_valid(k)


# -- background work -------------------------------------------------------------------------------
@pytest.mark.parametrize("ready_after", [0.0, 7.0], ids=["ready", "slow renderer"])
def test_background_items_come_and_go_from_the_still_running_section(
    tmp_path: Path, shared_kernel: SharedKernel, request: pytest.FixtureRequest, ready_after: float
) -> None:
    """Also where the terminal's view says ``ready`` only after the kernel's wait for it is
    over (a loaded machine; CI once): the turn then shows its terminals as text, the
    transcript replaces the live view, and the still-running section works the same."""
    work = tmp_path / "agent"
    work.mkdir()
    with kernel_for_test(shared_kernel, tmp_path, request) as k:
        k.ready_after = ready_after
        connect(k, work)
        cell = k.run("%%acp -o t\nbackground\n", new_cell_id())
        assert "finished" in cell.text()
        k.wait_for(lambda: "still running: 2" in html_values(k), "both items in the section")
        k.wait_for(lambda: len(shown_stops(k)) == 2, "a Stop button on each (both cancel)")
        assert "Index the repository" in html_values(k)

        (work / "step2").touch()  # c1 completes and leaves; c2 (no cancel) comes
        k.wait_for(lambda: "Watch the tests" in html_values(k), "the new item")
        k.wait_for(lambda: len(shown_stops(k)) == 1, "c1's Stop button to go")
        assert "still running: 2" in html_values(k)
        assert shown_stops(k) == [stop_of(k, "tail -f build.log")]  # c2 has none
        assert "completed" in html_values(k)  # c1 shows its final state

        k.click(stop_of(k, "tail -f build.log"))
        k.wait_for(lambda: "still running: 1" in html_values(k), "t1 to leave")
        k.wait_for(lambda: "signal SIGTERM" in html_values(k), "t1's exit on its row")
        [stop] = recorded(work, "terminal/cancel")
        assert stop["terminalId"] == "t1"
        assert shown_stops(k) == []

        (work / "finish").touch()
        k.wait_for(lambda: "background work ended" in html_values(k), "the section to end")
        out = k.run("print(t.state.background)").text()
        assert out.strip() == "[]"
        assert recorded(work, "tool_call/cancel") == []
        assert_nothing_refused(work)
        assert_sent_schema_valid(k)


def test_requests_for_background_work_after_idle_are_asked_in_the_starting_cell(
    tmp_path: Path,
    shared_kernel: SharedKernel,
    request: pytest.FixtureRequest,
) -> None:
    work = tmp_path / "agent"
    work.mkdir()
    with kernel_for_test(shared_kernel, tmp_path, request) as k:
        connect(k, work)
        cell_id = new_cell_id()
        k.run("%%acp -o t\nafter-idle\n", cell_id)
        k.wait_for(lambda: "still running: 1" in html_values(k), "c9 in the section")
        (work / "ask").touch()
        k.wait_for(
            lambda: k.buttons("Allow once") or recorded(work, "late_permission"),
            "the permission card, or an answer without it",
            guard=SHORT,
        )
        assert recorded(work, "late_permission") == []  # asked, not answered at once
        k.click(k.buttons("Allow once")[0])
        k.wait_for(lambda: recorded(work, "late_permission"), "the answer")
        assert recorded(work, "late_permission") == [
            {"outcome": {"outcome": "selected", "optionId": "yes"}}
        ]
        submit = k.wait_for(lambda: k.buttons("Submit"), "the question's form")[0]
        form_fields(k)["Channel"].set(value="beta")
        k.click(submit)
        k.wait_for(lambda: recorded(work, "late_answer"), "the question's answer")
        assert recorded(work, "late_answer") == [
            {"action": "accept", "content": {"channel": "beta"}}
        ]
        k.wait_for(lambda: "background work ended" in html_values(k), "the section to end")
        assert_nothing_refused(work)
        assert_sent_schema_valid(k)


def test_requests_for_background_work_after_idle_are_cancelled_once_its_cell_is_gone(
    tmp_path: Path,
    shared_kernel: SharedKernel,
    request: pytest.FixtureRequest,
) -> None:
    work = tmp_path / "agent"
    work.mkdir()
    with kernel_for_test(shared_kernel, tmp_path, request) as k:
        connect(k, work)
        cell_id = new_cell_id()
        k.run("%%acp -o t\nafter-idle\n", cell_id)
        k.wait_for(lambda: "still running: 1" in html_values(k), "c9 in the section")
        k.run("pass", cell_id)  # the cell runs other code: its turn view is gone
        (work / "ask").touch()
        k.wait_for(lambda: recorded(work, "late_answer"), "both answers", guard=SHORT)
        assert recorded(work, "late_permission") == [{"outcome": {"outcome": "cancelled"}}]
        assert recorded(work, "late_answer") == [{"action": "cancel"}]
        assert k.buttons("Allow once") == [] and k.buttons("Submit") == []
        assert_nothing_refused(work)
        assert_sent_schema_valid(k)
