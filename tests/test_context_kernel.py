"""``%%acp --with`` and ``--cells`` in a real kernel (jupyter_client), against the real embedded
agent (which says back the text of its prompt) and a probe agent that takes embedded context
and images (tests/adversarial/agents/context_agent.py, which logs what it receives)."""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kernel_driver import Execution, Kernel, acp_kernel, kernel

AGENTS = Path(__file__).parent / "adversarial" / "agents"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

SETUP = """
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
df = pd.DataFrame({"price": [1.5, None, 3.0], "city": ["Oslo", "Lima", "Pune"]})
arr = np.arange(12.0).reshape(3, 4)
fig = Figure()
fig.add_subplot().plot([3, 1, 2])
"""


@pytest.fixture(scope="module")
def k(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    tmp = tmp_path_factory.mktemp("context")
    with acp_kernel(tmp) as kern:
        data = tmp / "agent-data"
        kern.run(f"%acp connect -- {sys.executable} -m acp_notebook.agent --data-dir {data}")
        kern.run(SETUP)
        yield kern


def _prompts_in_log(k: Kernel) -> list[Any]:
    """The ``session/prompt`` requests in the protocol log (``%acp log``), as sent."""
    found = []
    for line in k.run("%acp log -n 400").text().splitlines():
        if line.startswith("-> ") and '"session/prompt"' in line:
            found.append(json.loads(line[3:])["params"]["prompt"])
    return found


def test_with_a_dataframe(k: Kernel) -> None:
    cell = k.run("%%acp --new --with df\nDescribe the frame.\n")
    out = cell.text()
    # shown before it goes: name, kind, size; the summary collapsed in the HTML
    assert "acp: attached to this prompt (sent as text):" in out
    assert "  df (dataframe, pandas.DataFrame): " in out
    html = cell.html()
    assert "<details><summary><code>df</code> (dataframe, pandas.DataFrame)" in html
    # what the agent got, as it says it back (the embedded agent takes no embedded context)
    assert "[notebook://variables/df]\n```text\ndf: pandas.DataFrame\n3 rows x 2 columns" in out
    assert "price: float64, 1 null" in out and "Oslo" in out
    # and the protocol log shows the blocks like any other prompt
    prompt = _prompts_in_log(k)[-1]
    assert prompt[0] == {"type": "text", "text": "Describe the frame.\n"}
    assert prompt[1]["type"] == "text" and "city: " in prompt[1]["text"]


def test_with_a_numpy_array(k: Kernel) -> None:
    out = k.run("%%acp --new --with arr\nAnd the array?\n").text()
    assert "  arr (ndarray, numpy.ndarray): " in out
    assert "shape 3x4, dtype float64, 12 elements, 96 B" in out
    assert "min 0.0, max 11.0" in out


def test_an_undefined_name_is_an_error_and_nothing_is_sent(k: Kernel) -> None:
    before = len(_prompts_in_log(k))
    cell = k.run("%%acp --new --with df,missing_frame,other\nLook.\n", ok=False)
    assert cell.text().startswith(  # a UsageError: one line, no traceback
        "UsageError: %%acp --with: not defined: missing_frame, other (nothing was sent to the"
        " agent)"
    )
    assert "attached" not in cell.text()
    assert len(_prompts_in_log(k)) == before
    bad = k.run("%%acp --with 'df.price'\nLook.\n", ok=False)
    assert "%%acp --with: 'df.price' is not a variable name" in bad.text()
    assert len(_prompts_in_log(k)) == before


def test_cells_sends_recent_inputs_and_outputs(k: Kernel) -> None:
    k.run("secret_number = 41")
    first = k.run("secret_number + 1")
    assert "42" in first.text()
    k.run("print('printed, not kept')")
    out = k.run("%%acp --new --cells 2\nWhat did I do?\n").text()
    assert "acp: attached to this prompt (sent as text):" in out
    history = k.run("print(len(In) - 1)").text()  # In[0] is ""
    last = int(history) - 1  # the %%acp cell
    assert f"  cell {last - 2} (cell): " in out and f"  cell {last - 1} (cell): " in out
    assert f"In [{last - 2}]:\nsecret_number + 1\nOut[{last - 2}]:\n42" in out
    assert f"In [{last - 1}]:\nprint('printed, not kept')" in out
    assert "secret_number = 41" not in out  # three cells back: not asked for


def _probe(k: Kernel, tmp_path: Path, *flags: str) -> Path:
    work = tmp_path / "probe"
    work.mkdir()
    name = "probe" + "".join(f.capitalize() for f in flags)
    argv = f"{sys.executable} {AGENTS / 'context_agent.py'} {work} {' '.join(flags)}"
    k.run(f"%acp connect --name {name} -- {argv}")
    return work / "received.jsonl"


def _received_prompts(log: Path) -> list[Any]:
    messages = [json.loads(line) for line in log.read_text().splitlines()]
    return [m["params"]["prompt"] for m in messages if m.get("method") == "session/prompt"]


@pytest.mark.parametrize("v1", [False, True], ids=["v2", "v1"])
def test_embedded_context_and_images_when_the_agent_takes_them(
    k: Kernel, tmp_path: Path, v1: bool
) -> None:
    log = _probe(k, tmp_path, *(["v1"] if v1 else []), "embedded", "image")
    agent = "probeV1EmbeddedImage" if v1 else "probeEmbeddedImage"
    cell = k.run(f"%%acp --agent {agent} --with df,fig\nWhy is the plot odd?\n")
    assert "got 1 image, 2 resource, 1 text" in cell.text()
    assert "sent as embedded resources" in cell.text()
    (prompt,) = _received_prompts(log)
    assert [b["type"] for b in prompt] == ["text", "resource", "resource", "image"]
    frame, figure = prompt[1]["resource"], prompt[2]["resource"]
    assert frame["uri"] == "notebook://variables/df" and frame["mimeType"] == "text/plain"
    assert frame["text"].startswith("df: pandas.DataFrame\n3 rows x 2 columns")
    assert figure["uri"] == "notebook://variables/fig" and "1 axes" in figure["text"]
    assert prompt[3]["mimeType"] == "image/png"
    assert base64.b64decode(prompt[3]["data"]).startswith(PNG_MAGIC)


def test_no_image_for_an_agent_that_takes_none(k: Kernel, tmp_path: Path) -> None:
    log = _probe(k, tmp_path)
    cell = k.run("%%acp --agent probe --with fig\nLook at it.\n")
    assert "got 2 text" in cell.text()
    assert "the image is not sent: the agent does not take images" in cell.text()
    (prompt,) = _received_prompts(log)
    assert [b["type"] for b in prompt] == ["text", "text"]
    assert prompt[1]["text"].startswith("\n\n[notebook://variables/fig]\n```text\nfig: matplotlib")


def test_an_undefined_name_sends_nothing_at_all(k: Kernel, tmp_path: Path) -> None:
    log = _probe(k, tmp_path, "embedded")
    k.run("%%acp --agent probeEmbedded --with nowhere\nLook.\n", ok=False)
    methods = [json.loads(line).get("method") for line in log.read_text().splitlines()]
    assert methods == ["initialize"]  # no session/new, no session/prompt


def test_cells_without_history_says_so(tmp_path: Path) -> None:
    # nbval (and any front end that executes with store_history=False) leaves IPython's
    # history empty: the cell must say that --cells found nothing, not send silently without
    with kernel(str(tmp_path)) as kern:
        connect = f"%acp connect -- {sys.executable} -m acp_notebook.agent --data-dir {tmp_path}"
        quiet = {"store_history": False}
        cells = ("%load_ext acp_notebook", connect, "x = 1", "x + 1", "%%acp --cells 2\nWhat?\n")
        for code in cells:
            msg_id = kern.kc.execute(code, **quiet)
            execution = Execution(msg_id)
            kern.executions[msg_id] = execution
            kern.wait_for(lambda e=execution: e.done, f"idle after {code!r}")
        out = execution.text()
        assert (
            "acp: --cells 2: IPython's history holds no earlier cell (a front end that runs"
            " cells with store_history off, as nbval does, keeps none)" in out
        )
        assert "finished" in out  # the prompt went, without cells
