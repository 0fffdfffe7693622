"""claude-agent-acp 0.101.0 with ``%%acp --with`` in a real kernel, offline (the fake Anthropic
API): it takes embedded context and images, so a DataFrame goes as a ``resource`` block and a
figure also as an ``image`` block; the request Claude sends the model carries both."""

from __future__ import annotations

import base64
import json
import shlex
from typing import Any

import pytest

from tests.kernel_driver import Kernel, new_cell_id
from tests.real_agents.conftest import ClaudeLaunch
from tests.real_agents.fake_anthropic import Text

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _user_blocks(body: Any) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for message in body.get("messages", []):
        if message.get("role") == "user" and isinstance(message.get("content"), list):
            blocks += [b for b in message["content"] if isinstance(b, dict)]
    return blocks


@pytest.mark.parametrize("protocol", ["v2", "v1"])
def test_claude_gets_the_frame_as_context_and_the_figure_as_an_image(
    kern: Kernel, claude: ClaudeLaunch, protocol: str
) -> None:
    claude.env["CLAUDE_AGENT_ACP_PROTOCOL"] = protocol
    out = kern.run(
        f"%acp connect --name claude {claude.env_options()} -- {shlex.join(claude.argv)}"
    ).text()
    assert f"protocol {protocol}" in out
    kern.run(
        "import pandas as pd\nfrom matplotlib.figure import Figure\n"
        "sales = pd.DataFrame({'units': [120, None, 143], 'region': [7, 8, 9]})\n"
        "fig = Figure()\nfig.add_subplot().plot([3, 1, 2])\n"
    )
    claude.api.add(Text("Units has one gap; the plot dips in the middle."))
    cell = kern.run("%%acp --with sales,fig\nWhat is odd here?\n", new_cell_id())
    text = cell.text()
    assert "acp: attached to this prompt (sent as embedded resources):" in text
    assert "+ PNG" in text  # the image goes too
    assert "Units has one gap" in text
    sent = [
        json.loads(line[3:])["params"]["prompt"]
        for line in kern.run("%acp log -n 400").text().splitlines()
        if line.startswith("-> ") and '"session/prompt"' in line
    ]
    assert [b["type"] for b in sent[-1]] == ["text", "resource", "resource", "image"]
    first = claude.api.agent_requests()[0].body
    blocks = _user_blocks(first)
    words = json.dumps([b for b in blocks if b.get("type") != "image"])
    assert "What is odd here?" in words
    assert "sales: pandas.DataFrame" in words and "units: float64, 1 null" in words
    assert "notebook://variables/sales" in words
    images = [b for b in blocks if b.get("type") == "image"]
    assert len(images) == 1, [b.get("type") for b in blocks]
    assert images[0]["source"]["media_type"] == "image/png"
    assert base64.b64decode(images[0]["source"]["data"]).startswith(PNG_MAGIC)
