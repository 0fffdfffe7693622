"""Issue 10, finding 5: deep or huge JSON from a real agent subprocess is a bad line.

The agent (agents/deep_json_agent.py) writes, in the middle of its first turn, a 2 KB line
nested 1,000 levels deep and other lines a JSON parser chokes on or that nest deeper than the
connection accepts. The turn must end normally, each bad line must be reported, the agent's
deep request answered ``-32700`` with its id, and a later turn on the same session must work.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

import acp_notebook as acp
from acp_notebook._connection._jsonrpc import BadLine
from tests.kernel_driver import acp_kernel

pytestmark = pytest.mark.anyio

AGENT = Path(__file__).parent / "agents" / "deep_json_agent.py"
WAIT = 30  # seconds: a generous bound for things that must happen, never a speed assertion


def refuse(request: acp.RequestPermissionRequest) -> str | None:
    return None


async def test_deep_json_mid_turn_keeps_the_turn_and_the_session(tmp_path: Path) -> None:
    async with acp.connect([sys.executable, str(AGENT)], cwd=tmp_path, permission=refuse) as agent:
        session = await agent.new_session(cwd=tmp_path)
        first = await session.prompt("first")
        with anyio.fail_after(WAIT):
            assert await first.wait() == "end_turn"
        assert first.error is None
        # What came around the bad lines arrived, the acceptable deep message too, and
        # nothing of the refused ones.
        assert "before " in first.text and first.text.endswith("after")
        assert "within-limit" in first.text
        assert "SHOULD-NOT-APPEAR" not in first.text
        # Each bad line was reported, with fields.
        bad = [p for p in agent.problems if isinstance(p, BadLine)]
        assert [p.reason for p in bad] == [
            "nested too deeply",
            "nested too deeply",
            "nested too deeply",
            "nested too deeply",
            "nested too deeply",
            "an integer with too many digits",
            "NaN is not JSON",
            "nested too deeply",
        ]
        assert bad[0].size == 2000 and bad[0].preview == "[" * 80
        assert bad[-1].request_id == "deep-req"
        assert not session.permissions  # the deep request never reached the permission path

        # The connection and the agent live; a later turn on the same session works, and
        # the agent saw its deep request answered -32700 under its own id.
        assert not agent.connection.closed
        assert agent.process is not None and agent.process.returncode is None
        second = await session.prompt("second")
        with anyio.fail_after(WAIT):
            assert await second.wait() == "end_turn"
        assert second.text == "turn 2; answers to deep-req: ['deep-req:-32700']"
        assert len(agent.problems) == len(bad)  # the second turn added none


def test_deep_json_in_a_kernel_keeps_the_agent_for_later_cells(tmp_path: Path) -> None:
    """The finding as a user saw it: the cell said "the turn failed: the connection to the
    agent closed", and later cells "agent 'python3' has exited (code 0)". Now both cells end
    normally and the agent stays connected."""
    with acp_kernel(tmp_path) as k:
        k.run(f"%acp connect -- {sys.executable} {AGENT}")
        first = k.run("%%acp -o t1\nfirst\n").text()
        second = k.run("%%acp -o t2\nsecond\n").text()
        status = k.run("%acp status").text()
        ended = k.run("print(t1.stop_reason, t2.stop_reason)").text()
    for text in (first, second, status):
        assert "UsageError" not in text and "closed" not in text and "exited" not in text, text
    assert "before within-limit after" in first
    assert "turn 2; answers to deep-req: ['deep-req:-32700']" in second
    assert "deep JSON agent 1.0, alive (pid" in status
    assert ended.strip() == "end_turn end_turn"
