"""A matched ``--deny`` in a real kernel when the agent offers no reject option: the request is
answered ``cancelled`` by the policy (never left to a click), and the card says which rule."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.kernel_driver import acp_kernel

AGENT = Path(__file__).parent / "agents" / "deny_no_reject_agent.py"


def test_a_deny_match_without_a_reject_option_is_answered_cancelled(tmp_path: Path) -> None:
    work = tmp_path / "agent-work"
    work.mkdir()
    with acp_kernel(tmp_path) as k:
        k.run(f"%acp connect -- {sys.executable} {AGENT} {work}")
        cell = k.run("%%acp --allow '*' --deny 'rm *' -o t\ngo\n")
        logged = k.run("print([(d.decided_by, d.detail) for d in t.permissions])").text()
        live = [
            cid
            for label in ("Allow once", "Always allow")
            for cid in k.buttons(label)
            if not k.models[cid].get("disabled")
        ]
    received = [json.loads(line) for line in (work / "received.jsonl").read_text().splitlines()]
    answers = {m["id"]: m.get("result") for m in received if "method" not in m and "id" in m}
    cancelled = {"outcome": {"outcome": "cancelled"}}
    assert {rid: answers.get(rid) for rid in (100, 101)} == {100: cancelled, 101: cancelled}
    assert logged.strip() == str([("policy", "--deny 'rm *'")] * 2)
    assert cell.text().count("Cancelled - by policy --deny 'rm *'") == 2, cell.text()
    assert live == []
    assert sorted(p.name for p in work.glob("PWNED-*")) == []
