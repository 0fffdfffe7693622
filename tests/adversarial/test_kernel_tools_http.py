"""Hostile HTTP clients against the kernel tools' MCP server: a web page the user visits
(DNS rebinding, a cross-origin POST), a token in the URL instead of the header, a token of the
wrong length, a huge body. Each is refused before any tool runs."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any

import pytest

from acp_notebook._kernel._tools import KernelTools

INIT = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "list_variables", "arguments": {}},
    }
)


@pytest.fixture
def tools() -> Iterator[KernelTools]:
    seen: list[str] = []

    def namespace() -> dict[str, Any]:
        seen.append("read")
        return {"secret_frame": 1}

    server = KernelTools(namespace)
    server.start()
    server.reads = seen  # type: ignore[attr-defined]
    yield server
    server.stop()


def _post(
    tools: KernelTools, headers: dict[str, str], body: str = INIT, path: str = "/mcp"
) -> tuple[int, str]:
    port = int(tools.url.rsplit(":", 1)[1].split("/")[0])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    base = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    conn.request("POST", path, body, base | headers)
    response = conn.getresponse()
    result = response.status, response.read().decode(errors="replace")
    conn.close()
    return result


def test_a_rebound_host_or_a_cross_origin_page_is_refused_even_with_the_token(
    tools: KernelTools,
) -> None:
    token = tools.issue("embedded").token
    auth = {"Authorization": f"Bearer {token}"}
    status, _ = _post(tools, auth | {"Host": "evil.example:80"})
    assert status in (400, 403, 421)
    status, _ = _post(tools, auth | {"Origin": "http://evil.example"})
    assert status in (400, 403)
    assert tools.reads == []  # type: ignore[attr-defined]
    status, body = _post(tools, auth)  # the same request, from the agent
    assert status == 200 and "secret_frame" in body


def test_a_token_in_the_url_or_of_the_wrong_length_opens_nothing(tools: KernelTools) -> None:
    token = tools.issue("embedded").token
    assert _post(tools, {}, path=f"/mcp?token={token}")[0] == 401
    assert _post(tools, {"Authorization": f"Bearer {token[:-1]}"})[0] == 401
    assert _post(tools, {"Authorization": f"Bearer {token}x"})[0] == 401
    assert _post(tools, {"Authorization": f"bearer  {token} "})[0] == 200  # case, spaces
    assert tools.reads == ["read"]  # type: ignore[attr-defined]


def test_a_huge_body_is_refused_without_reading_the_namespace(tools: KernelTools) -> None:
    token = tools.issue("embedded").token
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": "a" * 2**23}})
    status, _ = _post(tools, {"Authorization": f"Bearer {token}"}, body)
    assert status == 413
    assert tools.reads == []  # type: ignore[attr-defined]
