"""Pure parts of the IPython entry point (no kernel): the transformer, templates, log shortening."""

from __future__ import annotations

import json

import pytest

from acp_notebook._magics import (
    load_ipython_extension,
    transform_cell,
    unload_ipython_extension,
)
from acp_notebook._notebook._cells import PromptTemplateError, interpolate
from acp_notebook._notebook._owner import shorten_base64


def test_cell_becomes_an_awaited_call() -> None:
    out = transform_cell(["%%acp --allow 'ls*' -o t\n", "list files {{now}}\n", "$ ls\n"])
    assert len(out) == 1 and out[0].startswith("await ")
    assert "run_cell_async(\"--allow 'ls*' -o t\", 'list files {{now}}\\n$ ls\\n')" in out[0]


@pytest.mark.parametrize(
    "lines",
    [["%%acp?\n"], ["%%acp??\n"], ["%%acpx\n", "body\n"], ["print(1)\n"], []],
)
def test_other_cells_are_left_alone(lines: list[str]) -> None:
    assert transform_cell(lines) == lines


def test_interpolation_and_brace_escapes() -> None:
    assert interpolate("hi {who}, {{literal}}", {"who": "you"}) == "hi you, {literal}"
    with pytest.raises(PromptTemplateError, match=r"\{nobody\} is not defined"):
        interpolate("hi {nobody}", {})


@pytest.mark.parametrize("body", ["{d['a']}", "{x+1}", "{x.real}", "{}", "{x:{w}}"])
def test_only_plain_names_are_interpolated(body: str) -> None:
    with pytest.raises(PromptTemplateError) as info:
        interpolate(f"say {body} now", {"d": {"a": 1}, "x": 1, "w": 3})
    assert str(info.value) == (
        f"only {{name}} is interpolated; '{body}' is not a plain name - compute it in a"
        " variable first (or write {{ and }} for literal braces)"
    )


def test_a_missing_name_is_reported_as_itself() -> None:
    with pytest.raises(PromptTemplateError, match=r"^\{nobody\} is not defined in the notebook"):
        interpolate("{x} and {nobody}", {"x": 1})
    # a conversion or a format spec on a plain name is fine
    assert interpolate("{x!r:>5}|{y:.2f}", {"x": "a", "y": 1.0}) == "  'a'|1.00"


def test_log_shortens_base64_payloads_either_json_style() -> None:
    payload = "QUJD" * 40
    for text in (
        json.dumps({"data": payload}),
        json.dumps({"data": payload}, separators=(",", ":")),
    ):
        short = shorten_base64(text)
        assert payload not in short and "(+136 chars)" in short
    assert shorten_base64('{"data": "QUJD"}') == '{"data": "QUJD"}'  # short values stay


def test_the_users_own_cells_start_and_end_the_pacing() -> None:
    # %load_ext tells the kernel's pacing (each of its agents' connections asks it) when a cell
    # of the user's own code runs: a background flood then waits, while a magic cell (%%acp
    # waits for its own turn) is read at full speed
    from IPython.core.interactiveshell import InteractiveShell

    from acp_notebook._notebook._owner import Notebook

    shell = InteractiveShell.instance()
    nb = Notebook()
    pacing = nb.pacing
    try:
        load_ipython_extension(shell, notebook=nb)
        assert nb.io.pacing is pacing  # IOThread.call tells it when the main thread waits
        shell.user_ns["pacing"] = pacing
        shell.run_cell("seen = pacing.cell_running")
        assert shell.user_ns["seen"] is True
        assert pacing.cell_running is False  # after the cell
        shell.run_cell("%time seen = pacing.cell_running")
        assert shell.user_ns["seen"] is True  # another magic runs the user's code
        from acp_notebook._magics import _pre_run_cell

        class Info:
            def __init__(self, raw_cell: str) -> None:
                self.raw_cell = raw_cell
                self.cell_id = None

        for ours in ("%%acp\nhello", "  %acp status", "%acp", "%%acp --bg\nhi"):
            _pre_run_cell(Info(ours))
            assert pacing.cell_running is False, ours
            pacing.cell_ended()
        for theirs in ("%acpx", "x = 1  # %%acp", "%timeit 1", "!ls"):
            _pre_run_cell(Info(theirs))
            assert pacing.cell_running is True, theirs
            pacing.cell_ended()
        assert pacing(1 << 20, 0.0) == 0.0  # (from the main thread: never a wait anyway)
    finally:
        unload_ipython_extension(shell)
        InteractiveShell.clear_instance()
        nb.shutdown()
    assert pacing.cell_running is False
