"""``Notebook.connect(env=...)``: the variables reach the agent's process, and the side
panel's Restart (``Notebook.reconnect``) starts the new process with them again."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from acp_notebook._notebook import _bridge
from acp_notebook._notebook._owner import Notebook

pytestmark = pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().partition("=")[::2] for item in raw if b"=" in item)


@pytest.fixture
def nb() -> Iterator[Notebook]:
    notebook = Notebook()
    yield notebook
    notebook.shutdown()


def test_env_reaches_the_agent_and_survives_a_restart(tmp_path: Path, nb: Notebook) -> None:
    argv = [sys.executable, "-m", "acp_notebook.agent", "--data-dir", str(tmp_path / "d")]
    handle, _ = nb.connect("envy", argv, str(tmp_path), env={"ACP_TEST_MARK": "s3cret-v"})
    assert isinstance(handle, _bridge.AgentHandle)
    assert handle.agent.process is not None
    assert _environ(handle.agent.process.pid)["ACP_TEST_MARK"] == "s3cret-v"
    assert "s3cret-v" not in repr(handle)
    fresh, old = nb.reconnect("envy")
    assert old is handle and not handle.alive and nb.agents == {"envy": fresh}
    assert fresh.agent.process is not None
    assert _environ(fresh.agent.process.pid).get("ACP_TEST_MARK") == "s3cret-v"
