"""Requests a rule decided cost no widget (issue 29), in a real kernel with the embedded agent.

``%%acp --allow 'true'`` with 200 lines ``$ true``: each command is a permission request the
rule approves. Each request built a whole permission card before (about 35 models: 100
commands opened 3,533 models and sent 3,143 comm messages; 1,000 would pass a browser tab's
limits and the server's iopub rate). Now a request nobody is asked is a row of HTML in its
tool call's row, so what the turn opens is its live terminals' views (the first
``MAX_LIVE_TERMINALS``; the rest are listed) and a few shared widgets, whatever the number of
requests: 200 requests open about as many models as 40. Every rule's decision is still in the
live view and in the saved transcript.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from acp_notebook._widgets._transcript import MAX_LIVE_TERMINALS
from tests.adversarial.test_rerun_kernel import peak, sent_at
from tests.kernel_driver import Kernel, acp_kernel

SERVER_LIMIT = 1000  # Jupyter Server's default iopub_msg_rate_limit (messages per second)
WORDS = "Approved: Allow once - by policy --allow 'true'"


def run_commands(kern: Kernel, count: int, cell_id: str) -> tuple[Any, set[str], list[Any]]:
    """Run ``count`` rule-approved commands in one cell: the cell, the models it opened (the
    side panel's rows for its live terminals too), the comm messages it sent."""
    opened_before = set(kern.models)
    msgs_before = len(kern.comm_msgs)
    cell = kern.run("%%acp --allow 'true' -o t\n" + "$ true\n" * count, cell_id=cell_id)
    kern.settle()  # the agent's thread did all it had to: the view is final
    kern.run("pass")  # ... and every message it sent came before this cell's idle
    opened = set(kern.models) - opened_before
    messages = [m for _t, m in kern.comm_msgs[msgs_before:]]
    decided = kern.run(
        "print(sum((d.option_kind, d.decided_by) == ('allow_once', 'policy')"
        " for d in t.permissions),"
        " len(t.permissions))"
    ).text()
    assert decided.split() == [str(count), str(count)], decided
    return cell, opened, messages


def named(kern: Kernel, models: set[str], name: str) -> list[str]:
    return [cid for cid in models if kern.models[cid].get("_model_name") == name]


def test_two_hundred_rule_approved_commands_open_no_card(tmp_path: Path) -> None:
    with acp_kernel(tmp_path) as kern:
        data = tmp_path / "data"
        kern.run(f"%acp connect -- {sys.executable} -m acp_notebook.agent --data-dir {data}")
        _few, few_models, _ = run_commands(kern, 40, "rows00000040")
        cell, models, messages = run_commands(kern, 200, "rows00000200")

    # no card: not one button of one (the turn's own: the list of terminals' "open")
    buttons = [kern.models[c].get("description") for c in named(kern, models, "ButtonModel")]
    assert buttons == ["open"], buttons
    assert len(named(kern, models, "TerminalModel")) == MAX_LIVE_TERMINALS
    # what is opened is the live terminals (a box, a header, the terminal, its input/output:
    # 4 each, and the side panel's rows of some) and a few dozen shared widgets: 7,000 models
    # by the old count of 35 a request ...
    assert len(models) <= 4 * MAX_LIVE_TERMINALS + 100, len(models)
    # ... and a request costs none: 200 of them open what 40 did, but the groups of rows
    assert len(models) - len(few_models) <= 200 // 25, (len(models), len(few_models))
    # a bounded number of messages, far under the server's rate limit (it was ~31 a request)
    assert len(messages) <= 1200, len(messages)
    assert peak([sent_at(m) for m in messages], 1.0) <= SERVER_LIMIT / 2
    # every decision is said: live, in the rows ...
    live = "".join(str(kern.models[c].get("value", "")) for c in named(kern, models, "HTMLModel"))
    assert live.count(WORDS.replace("'", "&#x27;")) == 200, live.count(WORDS)
    # ... and in the saved transcript
    assert cell.text().count(f"decision: {WORDS} · allow once") == 200
    assert cell.html().count(WORDS.replace("'", "&#x27;")) == 200
