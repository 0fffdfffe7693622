"""_connection._exit: one label for how a process ended, from a table the front end shares."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from acp_notebook._connection._exit import exit_label, exit_sentence, signal_of

TABLE = Path(__file__).parent / "data" / "exit_labels.json"
CASES: list[dict[str, Any]] = json.loads(TABLE.read_text("utf-8"))["cases"]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['code']}-{c['signal']}")
def test_label_and_sentence_follow_the_shared_table(case: dict[str, Any]) -> None:
    assert exit_label(case["code"], case["signal"]) == case["label"]
    assert exit_sentence(case["code"], case["signal"]) == case["sentence"]


def test_signal_of_a_returncode() -> None:
    assert signal_of(-signal.SIGKILL) == "SIGKILL"
    assert signal_of(0) is None and signal_of(3) is None and signal_of(None) is None
    assert signal_of(-250) == "SIG250"  # no name on this platform
    assert exit_label(-250, signal_of(-250)) == "signal SIG250"


def test_sentence_names_its_subject() -> None:
    assert exit_sentence(2, None, who="the command") == "the command exited with code 2"


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.process
async def test_an_agent_killed_by_an_unnamed_signal_is_labelled_once(anyio_backend: str) -> None:
    # Signal 40 (a real-time signal) has no name in Python's signal module: the agent process
    # used to call it "signal 40", so every label said "signal signal 40".
    from acp_notebook._connection._process import AgentProcess

    script = "import os; os.kill(os.getpid(), 40)"
    async with AgentProcess.spawn([sys.executable, "-c", script]) as proc:
        await proc.wait()
        error = await proc.exit_error()
    assert proc.returncode == -40
    assert proc.exit_signal == "SIG40"
    assert exit_label(proc.returncode, proc.exit_signal) == "signal SIG40"
    assert error.status == "the agent was killed by signal SIG40"
