from __future__ import annotations

import weakref
from collections.abc import Iterator
from typing import Any

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "sends_invalid: the test sends deliberately invalid messages to an agent"
    )
    # The PTY tests run commands in this process, as the agent does. When the suite itself was
    # started in the background (``bash .ci/run &``) SIGINT arrives ignored; do what the
    # agent's main() does, or interrupted commands only ever die by SIGKILL.
    from acp_notebook.agent._pty import let_commands_receive_sigint

    let_commands_receive_sigint()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _client_traffic_is_schema_valid(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """Every message our client sends to an agent, in any test, must validate against the v2
    schema of the pinned reference SDK (envelope and method-specific payload)."""
    if request.node.get_closest_marker("sends_invalid"):
        yield
        return
    from acp_notebook import _client, _jsonrpc
    from tests._schema import check_client_message

    client_connections: weakref.WeakSet[Any] = weakref.WeakSet()
    peer_methods: weakref.WeakKeyDictionary[Any, dict[Any, str]] = weakref.WeakKeyDictionary()
    failures: list[str] = []
    agent_init = _client.Agent.__init__
    write = _jsonrpc.Connection._write
    on_request = _jsonrpc.Connection._on_request

    def tagged_init(self: Any, connection: Any, *args: Any, **kwargs: Any) -> None:
        client_connections.add(connection)
        peer_methods[connection] = {}
        agent_init(self, connection, *args, **kwargs)

    async def checked_write(self: Any, message: dict[str, Any]) -> None:
        if self in client_connections:
            for problem in check_client_message(message, peer_methods.get(self, {})):
                failures.append(f"{problem} in {str(message)[:300]}")
        await write(self, message)

    async def recording_on_request(self: Any, rid: Any, method: str, params: Any) -> None:
        if self in client_connections:
            peer_methods[self][rid] = method
        await on_request(self, rid, method, params)

    monkeypatch.setattr(_client.Agent, "__init__", tagged_init)
    monkeypatch.setattr(_jsonrpc.Connection, "_write", checked_write)
    monkeypatch.setattr(_jsonrpc.Connection, "_on_request", recording_on_request)
    yield
    assert not failures, "our client sent messages the v2 schema rejects:\n" + "\n".join(failures)
