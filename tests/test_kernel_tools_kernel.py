"""``%acp connect --kernel-tools`` in a real kernel: the embedded agent (a subprocess) calls
the kernel's MCP tools with the MCP SDK's client, through the ``mcpServers`` of its
``session/new``; the token stays out of iopub, widget state and ``%acp log``."""

from __future__ import annotations

import hashlib
import json
import re
import socket
import sys
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kernel_driver import PYTHON_AGENT, Kernel, SharedKernel, kernel_for_test

NB = "from acp_notebook._magics import _notebook_of; _nb = _notebook_of(get_ipython())\n"


def _connect(k: Kernel, tmp_path: Path, name: str = "embedded") -> str:
    data = tmp_path / f"agent-data-{name}"
    return k.run(
        f"%acp connect --kernel-tools --name {name} -- {sys.executable} -m acp_notebook.agent"
        f" --data-dir {data}"
    ).text()


@pytest.fixture
def k(
    shared_kernel: SharedKernel, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Kernel]:
    """The module's kernel, reset (a test that interrupts or shuts down the kernel has its
    own)."""
    with kernel_for_test(shared_kernel, tmp_path, request) as kern:
        yield kern


def _tool_calls(k: Kernel, session: str = "default") -> list[dict[str, Any]]:
    """The session's tool calls (title, status, text content), read in the kernel."""
    out = k.run(
        NB
        + f"_s = _nb.named({session!r}).session\n"
        + "import json as _json\n"
        + "print('CALLS=' + _json.dumps([{'title': c.title, 'status': c.status, 'text':"
        + " '\\n'.join(getattr(getattr(x, 'content', None), 'text', '') for x in c.content)}"
        + " for c in _s.state.tool_calls.values()]))"
    ).text()
    line = next(x for x in out.splitlines() if x.startswith("CALLS="))
    calls: list[dict[str, Any]] = json.loads(line.removeprefix("CALLS="))
    return calls


def _everything(k: Kernel) -> str:
    """Every iopub message and widget state the front end got, as one string."""
    messages = [m for e in k.executions.values() for m in e.messages]
    return json.dumps([messages, k.models, [m for _, m in k.comm_msgs]], default=str)


def test_the_embedded_agent_lists_and_inspects_variables_through_mcp(
    k: Kernel, tmp_path: Path
) -> None:
    out = _connect(k, tmp_path)
    assert "kernel tools on for 'embedded'" in out
    k.run(
        "import numpy as np\n"
        "grid = np.arange(6, dtype=np.int16).reshape(2, 3)\n"
        "names = ['ada', 'grace']\n"
        "_hidden = 1\n"
        "import threading\n"
        "class Probe:\n"
        "    def __repr__(self):\n"
        "        Probe.thread = threading.current_thread().name\n"
        "        return 'probe!'\n"
        "probe = Probe()\n"
    )
    cell = k.run(
        "%%acp\n@tool list_variables\n"
        "@tool inspect_variable name=grid\n"
        '@tool inspect_variable {{"name": "probe"}}\n'
        "@tool inspect_variable name=missing\n"
    )
    assert "UsageError" not in cell.text(), cell.text()
    calls = _tool_calls(k)
    assert [(c["title"], c["status"]) for c in calls] == [
        ("notebook: list_variables", "completed"),
        ("notebook: inspect_variable", "completed"),
        ("notebook: inspect_variable", "completed"),
        ("notebook: inspect_variable", "failed"),
    ]
    listed = calls[0]["text"]
    assert "grid: ndarray" in listed or "grid: numpy.ndarray" in listed
    assert "names: list" in listed and "_hidden" not in listed and "np:" not in listed
    assert "open:" not in listed  # IPython's own (user_ns_hidden), not the user's
    assert "int16" in calls[1]["text"] and "max 5" in calls[1]["text"]
    assert "probe!" in calls[2]["text"]
    assert "not defined" in calls[3]["text"]
    # the summary ran on the kernel's main thread (between the cell's awaits)
    assert "MainThread" in k.run("print(Probe.thread)").text()
    # the session/new carried an http entry (the embedded agent takes both kinds)
    log = k.run("%acp log -n 200").text()
    assert '"mcpServers": [{"type": "http", "name": "notebook"' in log
    assert '"value": "Bearer ***"' in log
    # the token itself went nowhere the front end sees: iopub, widget state, %acp log
    digest = k.run(
        NB + "import hashlib\n"
        "print('SHA=' + hashlib.sha256(_nb.kernel_tools.grants[0].token.encode()).hexdigest())"
    ).text()
    sha = re.search(r"SHA=([0-9a-f]{64})", digest)
    assert sha is not None
    candidates = set(re.findall(r"[A-Za-z0-9_-]{43}", _everything(k)))
    assert candidates, "the scan found no strings at all"
    assert not [c for c in candidates if hashlib.sha256(c.encode()).hexdigest() == sha[1]]


@pytest.mark.own_kernel
def test_a_closed_agents_token_is_refused_and_recorded_then_shutdown_stops_it(
    k: Kernel, tmp_path: Path
) -> None:
    _connect(k, tmp_path, "first")
    _connect(k, tmp_path, "second")
    k.run("%%acp --agent first --session one\n@tool list_variables\n")
    k.run("%%acp --agent second --session two\n@tool list_variables\n")
    assert [c["status"] for c in _tool_calls(k, "one")] == ["completed"]
    # the first agent's token, kept in the kernel (a private name, not shown to agents)
    k.run(
        NB + "_grant = [g for g in _nb.kernel_tools.grants if g.agent == 'first'][0]\n"
        "_url = _nb.kernel_tools.url\n"
        "import urllib.request as _rq\n"
        "def _status(token):\n"
        '    body = b\'{"jsonrpc":"2.0","id":1,"method":"tools/list"}\'\n'
        "    req = _rq.Request(_url, body, {'Authorization': 'Bearer ' + token,\n"
        "        'Content-Type': 'application/json',\n"
        "        'Accept': 'application/json, text/event-stream'})\n"
        "    try:\n"
        "        return _rq.urlopen(req, timeout=10).status\n"
        "    except Exception as exc:\n"
        "        return getattr(exc, 'code', repr(exc))\n"
    )
    assert "STATUS 401" in k.run("print('STATUS', _status('nope'))").text()
    k.run("%acp close --name first")
    assert "STATUS 401" in k.run("print('STATUS', _status(_grant.token))").text()
    events = k.run(
        NB + "print([(e.kind, e.agent, e.detail) for e in _nb.kernel_tools.events][-2:])"
    ).text()
    assert "('refused', None, 'an unknown token')" in events
    assert "('refused', 'first', 'the session was closed')" in events
    # %acp log shows what the kernel tools served and refused, after the protocol messages
    # (its own, and the refusals no open agent owns: an unknown token, a closed agent's)
    log = k.run("%acp log --name second -n 5").text()
    assert "kernel tools: served list_variables to session " in log
    assert "kernel tools: refused a request: an unknown token" in log
    assert "kernel tools: refused a request for 'first': the session was closed" in log
    # the second agent's session still works
    k.run("%%acp --agent second --session two\n@tool list_variables\n")
    assert [c["status"] for c in _tool_calls(k, "two")] == ["completed", "completed"]
    url = re.search(r"URL=(\S+)", k.run("print('URL=' + _url)").text())
    assert url is not None
    parts = urllib.parse.urlsplit(url[1])
    # kernel shutdown (graceful: its atexit closes the notebook) stops the server
    k.km.shutdown_kernel(now=False)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((parts.hostname, parts.port), timeout=5).close()


def test_kernel_tools_for_an_agent_that_takes_no_mcp_server_is_refused(
    k: Kernel, tmp_path: Path
) -> None:
    script = tmp_path / "no_mcp.py"
    script.write_text(
        "import json, sys\n"
        "for line in sys.stdin:\n"
        "    msg = json.loads(line)\n"
        "    if msg.get('method') == 'initialize':\n"
        "        res = {'protocolVersion': 2, 'info': {'name': 'bare', 'version': '1'},"
        " 'capabilities': {'session': {}}}\n"
        "        print(json.dumps({'jsonrpc': '2.0', 'id': msg['id'], 'result': res}),"
        " flush=True)\n"
    )
    cell = k.run(f"%acp connect --kernel-tools -- {sys.executable} {script}")
    refused = f"UsageError: %acp connect: agent '{PYTHON_AGENT}' takes no MCP servers"
    assert refused in cell.text()
    assert "no agents connected" in k.run("%acp status").text()


@pytest.mark.own_kernel
def test_interrupt_stops_a_summary_whose_repr_never_returns(k: Kernel, tmp_path: Path) -> None:
    _connect(k, tmp_path)
    marker = tmp_path / "repr-started"
    k.run(
        "import pathlib\n"
        "class Forever:\n"
        "    def __repr__(self):\n"
        f"        pathlib.Path({str(marker)!r}).touch()\n"
        "        while True:\n"
        "            pass\n"
        "forever = Forever()\n"
    )
    cell = k.submit("%%acp\n@tool inspect_variable name=forever\nafter the tool\n")
    k.wait_for(marker.exists, "the hostile __repr__ to start", guard=60)
    k.km.interrupt_kernel()
    k.wait_for(lambda: cell.done, "the cell to end after Interrupt", guard=30)
    (call,) = _tool_calls(k)
    assert call["status"] == "failed" and "interrupted" in call["text"]
    assert "alive" in k.run("print('alive')").text()  # the kernel took the next cell


def test_an_agent_that_takes_only_stdio_gets_the_bridge_and_no_token_on_argv(
    k: Kernel, tmp_path: Path
) -> None:
    data = tmp_path / "agent-data"
    out = k.run(
        f"%acp connect --kernel-tools -- {sys.executable} -m acp_notebook.agent"
        f" --data-dir {data} --mcp stdio"
    ).text()
    assert "mcp (stdio)" in out
    k.run("answer_table = {'a': 1}\n")
    k.run("%%acp\n@tool list_variables\n@tool notebook_history n=2\n")
    calls = _tool_calls(k)
    assert [c["status"] for c in calls] == ["completed", "completed"], calls
    assert "answer_table: dict" in calls[0]["text"]
    assert "answer_table = {'a': 1}" in calls[1]["text"]
    log = k.run("%acp log -n 200").text()
    entry = re.search(r'"mcpServers": \[(\{.*?\})\]', log)
    assert entry is not None, log
    assert '"type": "stdio"' in entry[1] and '"args": ["-m", "acp_notebook.mcp_bridge"]' in entry[1]
    assert '"name": "ACP_NOTEBOOK_MCP_TOKEN", "value": "***"' in entry[1]
    assert '"name": "ACP_NOTEBOOK_MCP_URL", "value": "http://127.0.0.1:' in entry[1]


def test_a_tool_call_waits_for_the_running_cell_instead_of_reading_beside_it(
    k: Kernel, tmp_path: Path
) -> None:
    _connect(k, tmp_path)
    # --bg returns at once, so the next cell runs while the agent calls the tool: the tool
    # must wait for that cell, and then see what it made
    bg = k.submit("%%acp --bg\n@tool inspect_variable name=made_late\n")
    # the busy cell holds the kernel until the agent has started its tool call (it waits
    # for a condition, not a fixed time: under load the call may come late)
    busy = k.submit(
        NB + "import time, pathlib\n"
        f"pathlib.Path({str(tmp_path / 'busy')!r}).touch()\n"
        "_named = _nb.named('default')\n"
        "_io = _nb.agent(_named.agent).io\n"
        "def _calling():\n"
        "    calls = _named.session.state.tool_calls.values()\n"
        "    return any(c.status == 'in_progress' for c in calls)\n"
        "_deadline = time.monotonic() + 120\n"
        "while not _io.call(_calling) and time.monotonic() < _deadline:\n"
        "    time.sleep(0.01)\n"
        "made_late = 'assigned at the end of the busy cell'\n"
    )
    k.wait_for(lambda: bg.done and busy.done, "both cells")
    assert busy.error is None and bg.error is None

    def finished() -> Any:
        calls = _tool_calls(k)
        return calls if calls and calls[0]["status"] != "in_progress" else None

    (call,) = k.wait_for(finished, "the tool call to finish")
    assert call["status"] == "completed", call
    assert "assigned at the end of the busy cell" in call["text"]


def test_an_agent_that_prints_its_token_to_stderr_does_not_show_it(
    k: Kernel, tmp_path: Path
) -> None:
    agent = Path(__file__).parent / "adversarial" / "agents" / "leaky_agent.py"
    k.panel_view = False  # no front end holds the panel: `%acp panel` prints it as text
    k.run(
        f"%acp connect --kernel-tools --env LEAKY_SECRET=hunter2-env-value"
        f" -- {sys.executable} {agent}"
    )
    k.run("%%acp\nhello\n")  # session/new (it prints the token), then it exits
    token_sha = re.search(
        r"SHA=([0-9a-f]{64})",
        k.run(
            NB + "import hashlib\n"
            f"print('SHA=' + hashlib.sha256(_nb.kernel_tools.secrets({PYTHON_AGENT!r})"
            "['ACP_NOTEBOOK_MCP_TOKEN.0'].encode()).hexdigest())"
        ).text(),
    )
    assert token_sha is not None
    status = k.run("%acp status").text()
    panel = k.run("%acp panel").text()
    for shown in (status, panel):
        assert "session/new:" in shown and "Bearer ***" in shown, shown
        assert "hunter2-env-value" not in shown
    candidates = set(re.findall(r"[A-Za-z0-9_-]{43}", _everything(k)))
    assert not [c for c in candidates if hashlib.sha256(c.encode()).hexdigest() == token_sha[1]]
    # it exited by itself (not closed): what it leaked opens nothing any more
    status = k.run(
        NB + "import urllib.request as _rq\n"
        f"_tok = _nb.kernel_tools.secrets({PYTHON_AGENT!r})['ACP_NOTEBOOK_MCP_TOKEN.0']\n"
        "_req = _rq.Request(_nb.kernel_tools.url, b'{}', {'Authorization': 'Bearer ' + _tok,"
        " 'Content-Type': 'application/json', 'Accept': 'application/json, text/event-stream'})\n"
        "try:\n"
        "    print('STATUS', _rq.urlopen(_req, timeout=10).status)\n"
        "except Exception as exc:\n"
        "    print('STATUS', getattr(exc, 'code', repr(exc)))\n"
        "print([e.detail for e in _nb.kernel_tools.events][-1:])\n"
    ).text()
    assert "STATUS 401" in status and "['the agent exited']" in status


def test_a_resumed_session_gets_the_kernel_tools_too(k: Kernel, tmp_path: Path) -> None:
    _connect(k, tmp_path)
    k.run("%%acp\nhello\n")
    sid = re.search(
        r"SID=(\S+)", k.run(NB + "print('SID=' + _nb.named('default').session.id)").text()
    )
    assert sid is not None
    k.run("%acp close")
    _connect(k, tmp_path)  # a new agent process, the same store: it resumes the session
    out = k.run(f"%acp resume {sid[1]} --session again").text()
    assert f"resumed {sid[1]}" in out
    k.run("resumed_marker = 7\n")
    k.run("%%acp --session again\n@tool list_variables\n")
    (call,) = _tool_calls(k, "again")
    assert call["status"] == "completed" and "resumed_marker: int" in call["text"]
    log = k.run("%acp log -n 50").text()
    assert re.search(r'"method": "session/resume", .*"mcpServers": \[\{"type": "http"', log)


def test_the_cell_shows_what_each_kernel_tool_sent_to_the_agent(k: Kernel, tmp_path: Path) -> None:
    # privacy is visible: each tool answer that went to the agent is listed in the turn's
    # cell, its text folded (escaped) in the live view and in what the notebook saves
    _connect(k, tmp_path)
    k.run("secret_plan = '<b>launch</b> \u202eday'\nother = 3\n")
    cell = k.run("%%acp\n@tool inspect_variable name=secret_plan\n@tool notebook_history n=2\n")
    assert "UsageError" not in cell.text(), cell.text()
    seen = [
        s.get("value", "") for s in k.models.values() if "acp-sent" in s.get("_dom_classes", ())
    ]
    assert len(seen) == 2, seen
    first, second = seen
    assert "Sent to the agent: kernel tool inspect_variable(secret_plan)" in first
    assert "&lt;b&gt;launch&lt;/b&gt;" in first and "<b>launch" not in first
    assert "\u202e" not in first and "\\u202e" in first  # the bidi override: visible
    assert "<details>" in first and "<details open" not in first  # folded until clicked
    assert "kernel tool notebook_history(n=2)" in second
    # the cell's text transcript (what a saved notebook shows without a kernel) says it too
    text = cell.text()
    assert "Sent to the agent: kernel tool inspect_variable(secret_plan), " in text, text
