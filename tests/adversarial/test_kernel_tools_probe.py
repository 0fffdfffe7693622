"""An adversarial review of the kernel tools (issue 15): a hostile agent or client against the
MCP server and ``run_code``'s routing to a code card.

* a token header with bytes that are not ASCII (``hmac.compare_digest`` refuses non-ASCII
  ``str``: the guard raised, the client got a 500 and nothing was recorded);
* ``inspect_variable`` of a name ``list_variables`` hides (``_secret``, IPython's own);
* an agent holding a GET stream open, or a ``run_code`` call waiting on its card, when the
  server stops (the thread outlived ``stop`` and the card stayed open);
* two agents whose sessions have the same id (ids are chosen by the agents): one agent's
  ``run_code`` reached the other agent's cell, and its reads showed up there.
"""

from __future__ import annotations

import concurrent.futures
import http.client
import json
import threading
from collections.abc import Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from _memory import scripted_agent
from _runs import start_run

from acp_notebook._connection._errors import MethodNotFound
from acp_notebook._kernel._tools import KernelTools
from acp_notebook._notebook._kernel_code import request_code
from acp_notebook._notebook._owner import Notebook

GUARD = 30.0  # seconds: a guard against hanging, never an assertion on speed


@dataclass
class _Session:
    id: str
    closed: bool = False


def _port(tools: KernelTools) -> int:
    return int(tools.url.rsplit(":", 1)[1].split("/")[0])


def _call_body(name: str, args: dict[str, Any]) -> str:
    params = {"name": name, "arguments": args}
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})


def _post(tools: KernelTools, token: str, body: str) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", _port(tools), timeout=GUARD)
    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    conn.request("POST", "/mcp", body, headers)
    response = conn.getresponse()
    result = response.status, response.read().decode(errors="replace")
    conn.close()
    return result


@pytest.fixture
def tools() -> Iterator[KernelTools]:
    namespace = {"visible": 1, "_secret": "hunter2", "get_ipython": print, "In": ["x = 1"]}
    server = KernelTools(lambda: namespace)
    server.start()
    yield server
    server.stop()


# -- the token guard ---------------------------------------------------------------------------


def test_a_token_that_is_not_ascii_is_refused_and_recorded(tools: KernelTools) -> None:
    tools.issue("embedded")
    status, body = _post(tools, "\xff" * 43, _call_body("list_variables", {}))
    assert status == 401, body
    assert [e.kind for e in tools.events] == ["refused"]
    assert "visible" not in body


def test_a_browsers_cors_preflight_gets_no_allow_origin(tools: KernelTools) -> None:
    # a page's fetch with an Authorization header is preceded by an OPTIONS without it: it is
    # refused (401) and says nothing that lets the browser send the real request
    conn = http.client.HTTPConnection("127.0.0.1", _port(tools), timeout=GUARD)
    preflight = {
        "Origin": "http://evil.example",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type",
    }
    conn.request("OPTIONS", "/mcp", headers=preflight)
    response = conn.getresponse()
    response.read()
    conn.close()
    assert response.status == 401
    assert response.getheader("access-control-allow-origin") is None
    assert [e.kind for e in tools.events] == ["refused"]


# -- reading tools -----------------------------------------------------------------------------


def test_inspect_variable_does_not_show_what_list_variables_hides(tools: KernelTools) -> None:
    token = tools.issue("embedded").token
    for name in ("_secret", "get_ipython", "In"):
        status, body = _post(tools, token, _call_body("inspect_variable", {"name": name}))
        assert status == 200
        answer = json.loads(body)["result"]
        assert answer["isError"] is True, (name, answer)
        assert "hunter2" not in body and "built-in" not in body and "x = 1" not in body
    _, body = _post(tools, token, _call_body("inspect_variable", {"name": "visible"}))
    assert json.loads(body)["result"]["isError"] is False


# -- stopping ----------------------------------------------------------------------------------


def test_stop_ends_an_agents_get_stream_and_the_servers_thread(tools: KernelTools) -> None:
    token = tools.issue("embedded").token
    conn = http.client.HTTPConnection("127.0.0.1", _port(tools), timeout=GUARD)
    headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
    conn.request("GET", "/mcp", headers=headers)
    status = conn.getresponse().status
    thread = tools._thread
    assert thread is not None
    tools.stop()
    conn.close()
    # A stateless JSON server sends nothing on a GET stream: it is refused (405), or at least
    # it does not keep the server's thread alive past stop (5 s, stop's join).
    assert status == 405 or not thread.is_alive()
    assert not thread.is_alive()


def test_a_client_that_never_finishes_its_request_holds_up_no_one(tools: KernelTools) -> None:
    import socket

    token = tools.issue("embedded").token
    slow = socket.create_connection(("127.0.0.1", _port(tools)), timeout=GUARD)
    try:  # half a request's headers, then nothing (slowloris)
        slow.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ")
        status, body = _post(tools, token, _call_body("list_variables", {}))
        assert status == 200 and "visible" in body
    finally:
        slow.close()


def test_stop_withdraws_a_run_code_call_waiting_on_its_card() -> None:
    pending: list[concurrent.futures.Future[Any]] = []

    def run_code(session: Any, code: str) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        pending.append(future)  # the card is open: nobody clicked
        return future

    server = KernelTools(dict, run_code=run_code)
    server.start()
    grant = server.issue("a")
    server.bind(grant, _Session("s1"))  # type: ignore[arg-type]
    answered: list[tuple[int, str]] = []

    def call() -> None:
        try:
            answered.append(_post(server, grant.token, _call_body("run_code", {"code": "x=1"})))
        except OSError:
            answered.append((0, "connection dropped"))

    caller = threading.Thread(target=call, daemon=True)
    caller.start()
    stopped = threading.Event()
    for _ in range(300):  # the call reaches run_code (a bound, not a speed)
        if pending:
            break
        stopped.wait(0.05)
    thread = server._thread
    assert pending and thread is not None
    server.stop()
    assert pending[0].cancelled()  # the card is withdrawn: a late Allow runs nothing
    assert not thread.is_alive()
    caller.join(GUARD)


# -- two agents, one session id ------------------------------------------------------------------


class TwoAgents:
    """Two scripted agents with kernel tools whose sessions both have the id ``s1``."""

    def __init__(self, tmp_path: Path) -> None:
        async def handler(method: str, params: Any) -> Any:
            if method == "initialize":
                return {
                    "protocolVersion": 2,
                    "info": {"name": "scripted", "version": "1"},
                    "capabilities": {"session": {"mcp": {"http": {}}}},
                }
            raise MethodNotFound(method)

        @asynccontextmanager
        async def connector(**options: Any) -> Any:
            async with scripted_agent(handler, **options) as (agent, _peer):
                yield agent

        self.ns: dict[str, Any] = {"target": str(tmp_path / "made.txt"), "visible": 1}
        self.target = tmp_path / "made.txt"
        nb = Notebook(connector=lambda argv, cwd, env: connector)
        nb.set_panel_auto(make=False)
        nb.use_kernel_tools_source(
            (
                lambda: self.ns,
                None,
                None,
                lambda session, code: request_code(nb, session, code, namespace=self.ns),
            )
        )
        self.nb = nb
        nb.connect("other", ["(scripted)"], str(tmp_path), kernel_tools=True)
        nb.connect("mine", ["(scripted)"], str(tmp_path), kernel_tools=True)  # the default
        self.run = start_run(nb, timeout=3.0)  # a turn of "mine": its cell is running
        nb.session("other")  # a session of "other", with the same id
        assert nb.kernel_tools is not None
        self.tools = nb.kernel_tools
        (self.other,) = [g for g in self.tools.grants if g.agent == "other"]
        (mine,) = [g for g in self.tools.grants if g.agent == "mine"]
        assert self.other.session_id == mine.session_id == "s1"


@pytest.fixture
def two(tmp_path: Path) -> Iterator[TwoAgents]:
    made = TwoAgents(tmp_path)
    yield made
    made.nb.shutdown()


def test_another_agents_run_code_never_reaches_this_cells_card(two: TwoAgents) -> None:
    code = "with open(target, 'w') as f:\n    f.write('ran')"
    status, body = _post(two.tools, two.other.token, _call_body("run_code", {"code": code}))
    assert status == 200
    answer = json.loads(body)["result"]
    assert answer["isError"] is True
    assert "not run" in answer["content"][0]["text"]
    assert two.run.code == []  # no card in the cell of "mine"'s turn
    assert not two.target.exists()


def test_another_agents_reads_are_not_shown_as_this_cells(two: TwoAgents) -> None:
    status, _ = _post(two.tools, two.other.token, _call_body("list_variables", {}))
    assert status == 200
    # a card would be shown from the I/O thread, soon after the answer: wait for that loop
    two.run.io.call(lambda: None)
    from acp_notebook._widgets._sent import SentCard

    shown = two.run.io.call(lambda: list(two.run.view.cards))
    assert not [c for c in shown if isinstance(c, SentCard)]


# -- the code card: what runs is what is shown ---------------------------------------------------

#: Letters Python takes in a name that draw as nothing: ``x\u3164 = 1`` looks like ``x = 1``
#: and binds another name.
BLANK_LETTERS = ("\u3164", "\u115f", "\u1160", "\uffa0", "\u034f", "\u17b4", "\u17b5")


@pytest.mark.parametrize("blank", BLANK_LETTERS, ids=[f"U+{ord(c):04X}" for c in BLANK_LETTERS])
def test_a_name_with_a_letter_that_draws_as_nothing_is_marked_on_the_card(blank: str) -> None:
    from acp_notebook._widgets._code_card import CodeCard

    code = f"allowed{blank} = True\nx = 1"
    namespace: dict[str, Any] = {}
    exec(code, namespace)  # Python takes it: a name the card must not show as 'allowed'
    assert "allowed" not in namespace
    card = CodeCard(code, lambda allowed, by: None)
    try:
        assert card.hidden, "the card warns of nothing"
        assert f"U+{ord(blank):04X}" in card.request_html()
        assert f"U+{ord(blank):04X}" in "\n".join(card.transcript_text())
    finally:
        card.close_quietly()


def test_code_far_to_the_right_of_a_line_is_not_hidden_by_scrolling() -> None:
    # 'print("hello")' then 300 spaces then the write: with white-space:pre and a scrollbar
    # the card showed only the print; the code wraps instead, so all of it is on screen
    from acp_notebook._widgets._code_card import CODE_STYLE

    rule = CODE_STYLE.split(".acp-code-source{", 1)[1].split("}", 1)[0]
    assert "white-space:pre-wrap" in rule
    assert "overflow-wrap:anywhere" in rule


# -- secrets in the history ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "sent"),
    [
        ("%acp connect --env K=sk-1 -- a", "%acp connect --env K=*** -- a"),
        ("%acp connect --env 'K=two words' x", "%acp connect --env 'K=***' x"),
        ('%acp connect --env "K=two words" x', '%acp connect --env "K=***" x'),
        ("%acp connect --env K='two words' x", "%acp connect --env K=*** x"),
        ("%acp connect --env=K=sk-1 --env L=sk-2", "%acp connect --env=K=*** --env L=***"),
        ("%acp connect --en K=sk-1 --e L=sk-2", "%acp connect --en K=*** --e L=***"),
        ("print('--envy K=V')", "print('--envy K=V')"),
    ],
)
def test_env_values_in_a_cells_source_are_not_sent(source: str, sent: str) -> None:
    from acp_notebook._kernel._context import hide_env_values

    assert hide_env_values(source) == sent


def test_names_that_look_like_others_are_pointed_out_on_the_card() -> None:
    # 'safe' is defined twice, the second time with a Cyrillic a (U+0430): the card read as
    # 'safe is redefined to print, then called', while the call runs the first 'safe'
    from acp_notebook._widgets._code_card import CodeCard

    code = "def safe():\n    return 'removed'\ndef s\u0430fe():\n    return 'printed'\nsafe()"
    namespace: dict[str, Any] = {}
    exec(code, namespace)
    assert namespace["safe"]() == "removed"  # what runs is not what a reader expects
    card = CodeCard(code, lambda allowed, by: None)
    try:
        html, text = card.request_html(), "\n".join(card.transcript_text())
        for shown in (html, text):
            assert "U+0430" in shown and "CYRILLIC SMALL LETTER A" in shown
        plain = CodeCard("x = 1\nprint('naïve café')  # é", lambda allowed, by: None)
        try:  # letters outside names (a string, a comment) are not warned about
            assert "U+00" not in plain.request_html()
        finally:
            plain.close_quietly()
    finally:
        card.close_quietly()


# -- a flood of reading calls ------------------------------------------------------------------


def test_a_flood_of_tool_calls_leaves_a_bounded_number_of_cards(two: TwoAgents) -> None:
    (mine,) = [g for g in two.tools.grants if g.agent == "mine"]
    for _ in range(120):
        status, _ = _post(two.tools, mine.token, _call_body("list_variables", {}))
        assert status == 200
    two.run.io.call(lambda: None)
    from acp_notebook._widgets._sent import MAX_SENT_CARDS, SentCard, SentMore

    shown = two.run.io.call(lambda: list(two.run.view.cards))
    assert len([c for c in shown if isinstance(c, SentCard)]) == MAX_SENT_CARDS
    (more,) = [c for c in shown if isinstance(c, SentMore)]  # the rest, counted in one card
    assert more.count == 120 - MAX_SENT_CARDS
    assert f"{120 - MAX_SENT_CARDS:,} more kernel tool answers" in more.transcript_text()[0]
