"""The example notebooks: what their saved outputs show, and that pytest runs them under nbval.

nbval (configured in ``pyproject.toml``) re-executes ``notebooks/*.ipynb`` and compares the new
outputs with the saved ones. That only proves the notebook still does *what was saved*; these
tests pin down that what was saved is what the quickstart promises (an allowed command with its
terminal, a command refused by ``--deny``, a file written through a diff, ``-o``), so a notebook
re-saved from a broken run cannot pass unnoticed.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbval.plugin import get_sanitize_patterns

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
QUICKSTART = NOTEBOOKS / "quickstart.ipynb"


def _code_cells(path: Path) -> list[Any]:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    return [cell for cell in nb.cells if cell.cell_type == "code"]


def _text(cell: Any, mime: str = "text/plain") -> str:
    parts: list[str] = []
    for out in cell.outputs:
        if out.output_type == "stream":
            parts.append(out.text)
        elif out.output_type in ("display_data", "execute_result"):
            parts.append(out.data.get(mime, ""))
    return "\n".join(parts)


def _acp_cell(cells: list[Any], first_line: str) -> Any:
    matches = [c for c in cells if c.source.splitlines()[0] == first_line]
    assert len(matches) == 1, f"expected one cell starting {first_line!r}"
    return matches[0]


@pytest.fixture(scope="module")
def cells() -> list[Any]:
    return _code_cells(QUICKSTART)


def test_saved_from_one_clean_run(cells: list[Any]) -> None:
    # Executed top to bottom in one kernel, with no errors saved.
    assert [c.execution_count for c in cells] == list(range(1, len(cells) + 1))
    for cell in cells:
        assert all(out.output_type != "error" for out in cell.outputs), cell.source
        assert "object at 0x" not in _text(cell), cell.source


def test_every_output_is_compared(cells: list[Any]) -> None:
    # Outputs are made deterministic (sanitize.cfg masks the rest) rather than skipped.
    for cell in cells:
        assert "NBVAL_" not in cell.source, cell.source


def test_allowed_command_shows_its_terminal(cells: list[Any]) -> None:
    cell = _acp_cell(cells, "%%acp --allow 'printf *' --allow 'sleep *'")
    text = _text(cell)
    assert "building [#####] done" in text  # the \r redraws, in their final state
    assert "[exit 0]" in text
    # The loop's simple commands each matched a rule; the card names every rule it used.
    assert "by policy --allow 'printf *', --allow 'sleep *'" in text
    assert "\n\nfinished" in text  # the turn's footer, in plain words
    html = _text(cell, "text/html")
    assert "ansi-green-intense-fg" in html  # colours survive in the static transcript


def test_denied_command_does_not_run(cells: list[Any]) -> None:
    cell = _acp_cell(cells, "%%acp --allow '*' --deny 'rm *'")
    text = _text(cell)
    assert "Tool call: rm notes.txt [command] - failed" in text
    assert "by policy --deny 'rm *'" in text
    # the command once: its terminal's header shows it, the tool call's header does not repeat it
    # (the card first: it was asked before the command ran)
    assert "Tool call [command] - completed\n  Permission request: Run this command?" in text
    assert "· allow once\n  $ ls  (in " in text
    assert text.count("$ ls") == 2  # the prompt, and the terminal
    check = cells[cells.index(cell) + 1]
    assert _text(check).startswith("notes.txt exists: True\n")


def test_file_written_through_a_diff_and_bound_with_o(cells: list[Any]) -> None:
    cell = _acp_cell(cells, "%%acp --allow 'Write *' --allow 'cat *' -o turn")
    text = _text(cell)
    assert "Tool call: Write hello.txt [edit] - completed" in text
    assert "by policy --allow 'Write *'" in text
    assert "+Hello from the embedded agent!" in _text(cell, "text/html")
    used = _text(cells[cells.index(cell) + 1])
    assert "stop reason: end_turn\n" in used
    assert "tool call 'Write hello.txt': completed\ntool call 'cat hello.txt': completed\n" in used
    assert used.endswith("shows:\nHello from the embedded agent!\n")


def test_sanitizers_mask_only_run_specific_text() -> None:
    patterns = get_sanitize_patterns((NOTEBOOKS / "sanitize.cfg").read_text())
    assert len(patterns) == 3  # the work folder, the pid, Pygments' quote

    def clean(text: str) -> str:
        for regex, replace in patterns:
            text = re.sub(regex, replace, text)
        return text

    run = "connected (pid {pid}, cwd {work})\n<code>{work}/a</code>"
    one = run.format(pid=4242, work="/tmp/acp-quickstart-ab_1x2")
    two = run.format(pid=77, work="/private/var/T/acp-quickstart-zz9")
    assert clean(one) == clean(two)
    assert clean(one) == "connected (pid PID, cwd WORKDIR)\n<code>WORKDIR/a</code>"
    assert clean("exit 0 in /srv/project") == "exit 0 in /srv/project"
    assert clean("(cwd /tmp/acp-real-agents-q3_4fmh7)") == "(cwd WORKDIR)"
    # Pygments 2.21 writes &quot; where 2.20 writes a quote; nothing else is touched
    assert clean("<span>&quot;units&quot;</span>") == clean('<span>"units"</span>')
    assert clean("&lt;b&gt; &amp; &#x27;") == "&lt;b&gt; &amp; &#x27;"


@pytest.mark.process
def test_pytest_collects_the_notebook() -> None:
    # The README's command (`python3 -m pytest`, no arguments) reaches notebooks/ ...
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "notebooks" in config["testpaths"]
    assert "--nbval" in config["addopts"].split()
    # ... and there, every code cell is one strictly compared nbval item.
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "notebooks",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    ids = [line for line in done.stdout.splitlines() if "::" in line]
    expected = [
        f"notebooks/{path.name}::Cell {i}"
        for path in sorted(NOTEBOOKS.glob("*.ipynb"))
        for i in range(len(_code_cells(path)))
    ]
    assert ids == expected, done.stdout + done.stderr


REAL_AGENTS = NOTEBOOKS / "real-agents.ipynb"
NEEDS_KEYS = ("claude", "codex", "gemini", "fast-agent")


def test_real_agents_run_whole_as_replays_of_committed_traces() -> None:
    cells = _code_cells(REAL_AGENTS)
    # nothing is skipped: each real agent's turns are a replay of a recording in traces/
    assert not [
        c for c in cells if {"nbval-skip", "skip-execution"} & set(c.metadata.get("tags", []))
    ]
    traces = NOTEBOOKS / "traces"
    for name in NEEDS_KEYS:
        [connect] = [c for c in cells if c.source.startswith(f"%acp connect --name {name} ")]
        assert "acp-notebook-agent --replay" in connect.source, connect.source
        assert (traces / f"{name}.jsonl").is_file(), name
    prose = "\n".join(c.source for c in nbformat.read(REAL_AGENTS, as_version=4).cells
                      if c.cell_type == "markdown")  # fmt: skip
    assert "replays of recorded sessions" in prose
    for name in NEEDS_KEYS:  # and how to reach the live agent instead
        assert f"%acp connect {name}" in prose, name
    # every cell ran in one clean run, its outputs saved (machine-specific ones not)
    assert [c.execution_count for c in cells] == list(range(1, len(cells) + 1))
    for cell in cells:
        assert all(out.output_type != "error" for out in cell.outputs), cell.source
        if "nbval-ignore-output" in cell.metadata.get("tags", []):
            assert not cell.outputs, cell.source
    sources = {c.source: _text(c) for c in cells}
    assert "%acp agents" in sources
    assert sources["%acp auth"] == "acp: agent 'embedded' advertised no sign-in methods\n"
    assert sources["%acp auth --help"].startswith("usage: %acp auth")


V1_AGENTS = NOTEBOOKS / "v1-agents.ipynb"


def test_v1_agents_notebook_speaks_v1_and_shows_the_same_cards() -> None:
    cells = _code_cells(V1_AGENTS)
    assert [c.execution_count for c in cells] == list(range(1, len(cells) + 1))
    for cell in cells:
        assert all(out.output_type != "error" for out in cell.outputs), cell.source
    assert "acp: protocol v1; " in _text(
        _acp_cell(cells, "%acp connect --name demo -- {python} agent.py")
    )
    allowed = _text(_acp_cell(cells, "%%acp --allow 'delete_file' -o turn"))
    assert "Tool call: delete_file [delete] - completed" in allowed
    assert "decision: Approved: Allow - by policy --allow 'delete_file'" in allowed
    denied = _text(_acp_cell(cells, "%%acp --new --deny 'delete_*'"))
    assert "Tool call: delete_file [delete] - failed" in denied
    assert "decision: Rejected: Deny - by policy --deny 'delete_*'" in denied
    assert _text(_acp_cell(cells, 'print(os.path.exists("deleted.txt"))')) == "False\n"
    assert "widgets" not in nbformat.read(V1_AGENTS, as_version=4).metadata  # stripped


KERNEL_CONTEXT = NOTEBOOKS / "kernel-context.ipynb"


def test_kernel_context_notebook_attaches_a_frame_and_recent_cells() -> None:
    nb = nbformat.read(KERNEL_CONTEXT, as_version=4)
    cells = _code_cells(KERNEL_CONTEXT)
    assert [c.execution_count for c in cells] == list(range(1, len(cells) + 1))
    for cell in cells:
        assert all(out.output_type != "error" for out in cell.outputs), cell.source
    frame = _acp_cell(cells, "%%acp --with sales")
    text = _text(frame)
    # shown before it went: name, kind, size; the summary folded in the HTML
    assert (
        "acp: attached to this prompt (sent as text):\n  sales (dataframe, pandas.DataFrame)"
        in text
    )
    assert "<details><summary><code>sales</code> (dataframe" in _text(frame, "text/html")
    # and what the agent got, as it says it back
    assert (
        "[notebook://variables/sales]\n```text\nsales: pandas.DataFrame\n7 rows x 4 columns" in text
    )
    assert "units: float64, 2 null" in text
    recent = _acp_cell(cells, "%%acp --cells 2")
    text = _text(recent)
    assert "  cell 5 (cell): " in text and "  cell 6 (cell): " in text
    assert 'int(sales.loc[best, "month"])\nOut[5]:\n7\n' in text
    assert "missing\nOut[6]:\n2\n" in text
    # nbval runs with store_history off (no IPython history): that cell is run, not compared
    assert recent.metadata["tags"] == ["nbval-ignore-output"]
    ignored = [c for c in cells if "nbval-ignore-output" in c.metadata.get("tags", [])]
    assert ignored == [recent]
    placeholder = [c for c in nb.cells if c.cell_type == "markdown" and "run_code" in c.source]
    assert placeholder, "the kernel tools' cells have their place marked"
    assert "widgets" not in nb.metadata  # stripped


def test_kernel_context_notebook_runs_agent_code_that_the_next_cell_uses() -> None:
    cells = _code_cells(KERNEL_CONTEXT)
    connect = _text(
        _acp_cell(
            cells,
            """tools_agent = f'"{python}" -m acp_notebook.agent --data-dir "{agent_data}"'""",
        )
    )
    assert "acp: kernel tools on for 'tools'" in connect
    inspected = _text(_acp_cell(cells, "%%acp --agent tools"))
    assert "Tool call: notebook: inspect_variable - completed" in inspected
    assert "units: float64, 2 null" in inspected
    ran = _acp_cell(cells, "%%acp --agent tools --allow-code")
    text = _text(ran)
    # the code card: the code as sent, the policy that allowed it, its output; and the result
    # that went back to the agent
    assert "Code request: acp_notebook agent 0.1.0 asks to run code in the kernel" in text
    assert '    filled = sales.assign(units=sales["units"].interpolate())' in text
    assert "decision: Allowed - by policy --allow-code; ran" in text
    assert "Tool call: notebook: run_code - completed\n  months filled in: 2\n  973.5" in text
    assert "acp-code-source" in _text(ran, "text/html")  # highlighted in the saved HTML
    uses = next(c for c in cells if c.source.startswith('filled["units"].tolist()'))
    assert _text(uses) == "[120.0, 95.0, 119.0, 143.0, 160.0, 165.5, 171.0]"
