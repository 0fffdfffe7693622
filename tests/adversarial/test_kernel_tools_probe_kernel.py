"""The adversarial review of issue 15, in a real kernel: what the kernel tools and ``--cells``
send to an agent from IPython's history.

A ``%acp connect ... --env KEY=VALUE`` cell is in the history like any other: its value, which
the notebook never shows, went to every agent that asked ``notebook_history`` (or was sent
``--cells N``), another agent's key included."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kernel_driver import Kernel, acp_kernel

SECRET = "sk-probe-0123456789abcdef"


@pytest.fixture
def k(tmp_path: Path) -> Iterator[Kernel]:
    with acp_kernel(tmp_path) as kern:
        yield kern


def test_an_env_value_typed_in_a_connect_cell_is_not_sent_from_the_history(
    k: Kernel, tmp_path: Path
) -> None:
    agent = f"{sys.executable} -m acp_notebook.agent"
    k.run(
        f"%acp connect --name keyed --env PROBE_KEY={SECRET} --env 'OTHER=two words'"
        f" -- {agent} --data-dir {tmp_path / 'keyed'}"
    )
    k.run(f"%acp connect --kernel-tools --name tools -- {agent} --data-dir {tmp_path / 'tools'}")
    k.run("x = 1")
    cells = k.run("%%acp --agent tools --new --cells 3\nWhat did I do?\n").text()
    tools = k.run("%%acp --agent tools\n@tool notebook_history n=5\n").text()
    log = k.run("%acp log --name tools -n 400").text()
    for seen in (cells, tools, log):
        assert "%acp connect --name keyed --env PROBE_KEY=" in seen  # the cell was sent
        assert SECRET not in seen
        assert "two words" not in seen


def _tool_line(code: str) -> str:
    """The embedded agent's line that calls run_code (braces doubled for the %%acp body)."""
    args = json.dumps({"code": code}).replace("{", "{{").replace("}", "}}")
    return f"@tool run_code {args}"


def test_allow_code_of_one_cell_and_allow_star_leave_another_cells_code_unrun(
    k: Kernel, tmp_path: Path
) -> None:
    target = tmp_path / "made.txt"
    agent = f"{sys.executable} -m acp_notebook.agent --data-dir {tmp_path / 'data'}"
    k.run(f"%acp connect --kernel-tools -- {agent}")
    first = k.run(f"%%acp --allow-code\n{_tool_line('first_ran = True')}\n").text()
    assert "Allowed - by policy --allow-code; ran" in first
    write = f"open({str(target)!r}, 'w').write('ran')"
    # the next cell of the same session: neither the last cell's --allow-code nor a command
    # rule that allows every command allows code; its card times out
    second = k.run(f"%%acp --allow '*' --timeout 1\n{_tool_line(write)}\n").text()
    assert "Not run - no answer before the code card's timeout" in second, second
    assert not target.exists()
    assert "True" in k.run("print(first_ran)").text()


def test_a_resumed_session_in_the_same_agent_runs_code_in_its_own_cell_only(
    k: Kernel, tmp_path: Path
) -> None:
    # the same agent holds the session twice (as 'default', and resumed as 'again'): run_code
    # from the resumed one's grant is shown in the 'again' cell, with that cell's policy
    agent = f"{sys.executable} -m acp_notebook.agent --data-dir {tmp_path / 'data'}"
    k.run(f"%acp connect --kernel-tools -- {agent}")
    k.run("%%acp\nhello\n")
    nb = "from acp_notebook._magics import _notebook_of; _nb = _notebook_of(get_ipython())\n"
    sid = k.run(nb + "print(_nb.named('default').session.id)").text().strip()
    assert k.run(f"%acp resume {sid} --session again").text().startswith("acp: resumed")
    cell = k.run(f"%%acp --session again --allow-code\n{_tool_line('resumed_ran = 5')}\n").text()
    assert "Allowed - by policy --allow-code; ran" in cell, cell
    assert "5" in k.run("print(resumed_ran)").text()
