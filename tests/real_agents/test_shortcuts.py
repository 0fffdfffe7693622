"""`%acp connect NAME` for the registry agents the suite runs that other modules start with an
explicit command line: each shortcut resolves to the installed agent here, offline, and a turn
goes through it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.kernel_driver import Kernel
from tests.real_agents.test_v1_peers import FAST_AGENT_VENV


def test_connect_fast_agent_runs_its_installed_program_when_there_is_no_uvx(
    kern: Kernel, tmp_path: Path
) -> None:
    program = FAST_AGENT_VENV / "bin" / "fast-agent-acp"
    if not program.exists():
        if os.environ.get("CI"):  # .ci/run installs it: missing there is a failure
            raise AssertionError(f"{program} is missing (.ci/run step v1-agents)")
        pytest.skip(f"{program} is not installed (.ci/run step v1-agents)")
    # the registry's entry is uvx fast-agent-acp; with no uvx on PATH, the program itself
    path = os.pathsep.join([str(program.parent), "/usr/local/bin", "/usr/bin", "/bin"])
    kern.run(f"import os; os.environ['PATH'] = {path!r}")
    listed = kern.run("%acp agents fast-agent").text()
    assert f"; installed (its version not checked): {program} -x" in listed, listed
    home = tmp_path / "fa-home"
    home.mkdir()
    out = kern.run(f"%acp connect fast-agent -- --model passthrough --home {home}").text()
    assert "acp: starting fast-agent " in out
    assert f": {program} -x --model passthrough --home {home}" in out, out
    assert "fast-agent-acp 0.10.48" in out and "acp: protocol v1; " in out
    echo = kern.run("%%acp\nhello through the shortcut\n")
    assert echo.error is None, echo.text()
    assert "hello through the shortcut" in echo.text().split("> hello through the shortcut", 1)[1]
