"""claude-agent-acp 0.101.0 with ``%acp connect --kernel-tools``, offline (the fake Anthropic
API): the fake model calls ``mcp__notebook__list_variables``; Claude's own MCP client reaches
the kernel's server with the session's token, and the ``tool_result`` it sends the model in
its next request names the notebook's variables."""

from __future__ import annotations

import json
import shlex
from functools import partial
from typing import Any

import pytest

from tests.kernel_driver import Kernel, new_cell_id
from tests.real_agents.conftest import ClaudeLaunch
from tests.real_agents.fake_anthropic import Text, ToolUse


def _result_text(result: dict[str, Any]) -> str:
    content = result.get("content")
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return str(content)


@pytest.mark.parametrize("protocol", ["v2", "v1"])
def test_claude_calls_list_variables_on_the_kernels_mcp_server(
    kern: Kernel, claude: ClaudeLaunch, protocol: str
) -> None:
    claude.env["CLAUDE_AGENT_ACP_PROTOCOL"] = protocol
    out = kern.run(
        f"%acp connect --kernel-tools --name claude {claude.env_options()}"
        f" -- {shlex.join(claude.argv)}"
    ).text()
    assert f"protocol {protocol}" in out and "kernel tools on for 'claude'" in out
    kern.run("import numpy as np\nsales_table = np.zeros((4, 2))\nregion_names = ['n', 's']\n")
    claude.api.add(
        ToolUse("mcp__notebook__list_variables", {}),
        Text("The notebook has sales_table and region_names."),
    )
    cell = kern.submit("%%acp\nwhat variables does my notebook have?\n", new_cell_id())

    def asked_or_done() -> Any:
        return cell.done or kern.buttons("Yes") or kern.buttons("Allow once")

    kern.wait_for(asked_or_done, "a permission card or the end of the turn")
    if not cell.done:  # Claude asks before an MCP tool it has not been allowed
        button = kern.buttons("Yes") or kern.buttons("Allow once")
        kern.click(button[0])
    kern.wait_for(partial(getattr, cell, "done"), "the cell to finish")
    assert cell.error is None, cell.text()
    assert "sales_table and region_names" in cell.text()
    asked = claude.api.agent_requests()
    # Claude lists MCP tools as deferred ones (their schemas come through ToolSearch): the
    # four kernel tools are named in its first request
    first = json.dumps(asked[0].body)
    for tool in ("list_variables", "inspect_variable", "notebook_history", "run_code"):
        assert f"mcp__notebook__{tool}" in first, tool
    results = [r for request in asked[1:] for r in request.tool_results()]
    assert len(results) == 1, results
    text = _result_text(results[0])
    assert not results[0].get("is_error"), text
    assert "sales_table: numpy.ndarray" in text or "sales_table: ndarray" in text
    assert "region_names: list" in text
    assert "np:" not in text  # modules are not variables
    # the kernel served it for this session, and the log shows the entry without the token
    events = kern.run(
        "from acp_notebook._magics import _notebook_of\n"
        "_nb = _notebook_of(get_ipython())\n"
        "print('EVENTS=' + repr([(e.kind, e.tool) for e in _nb.kernel_tools.events]))"
    ).text()
    assert "('call', 'list_variables')" in events and "refused" not in events
    log = kern.run("%acp log -n 400").text()
    assert '"name": "notebook"' in log and "Bearer ***" in log
