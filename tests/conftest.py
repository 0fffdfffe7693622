from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest

from tests import _cost, _tiers

# The test tiers (unit, process, kernel, agent, browser): each test gets exactly one, and a unit
# test that starts a process fails. The table of tiers and the guard are in tests/_tiers.py.
from tests._tiers import (  # noqa: F401  (hooks, found by name)
    pytest_cmdline_main,
    pytest_collection_modifyitems,
    pytest_configure_node,
    pytest_ignore_collect,
    pytest_runtest_call,
    pytest_runtest_logreport,
    pytest_runtest_setup,
    pytest_runtest_teardown,
    pytest_unconfigure,
    pytest_xdist_make_scheduler,
)


def pytest_configure(config: pytest.Config) -> None:
    _tiers.pytest_configure(config)
    if not config.pluginmanager.has_plugin("acp-cost"):  # `-p no:acp-cost` blocks it
        config.pluginmanager.register(_cost.CostReport(), "acp-cost")
    config.addinivalue_line(
        "markers", "sends_invalid: the test sends deliberately invalid messages to an agent"
    )
    config.addinivalue_line(
        "markers",
        "own_kernel: the test needs a kernel of its own, not its module's shared one"
        " (tests/kernel_driver.py, SharedKernel)",
    )
    # The PTY tests run commands in this process, as the agent does. When the suite itself was
    # started in the background (``bash .ci/run &``) SIGINT arrives ignored; do what the
    # agent's main() does, or interrupted commands only ever die by SIGKILL.
    from acp_notebook.agent._pty import let_commands_receive_sigint

    let_commands_receive_sigint()


def pytest_collection_finish(session: pytest.Session) -> None:
    """What the collection made (the modules, their tests, hypothesis's strategies, pydantic's
    schemas) lives until the process ends: out of the cycle collector's way (``gc.freeze``).
    A full collection, automatic or a test's ``gc.collect()``, then looks only at what the
    tests made: the hot-path property tests call it in every example, and it took 0.3 s
    each over the whole heap."""
    if session.config.option.collectonly:
        return
    # Hypothesis first (its pytest plugin imports it at the end of every run anyway): when it
    # is imported, other packages' entry points register their PRNGs with it, and it checks
    # that something refers to each with gc.get_referrers, which does not see frozen objects
    # (trio's, referred to by trio's frozen module: a HypothesisWarning, an error here, in a
    # run that collected no test importing hypothesis).
    import hypothesis  # noqa: F401

    gc.freeze()


@pytest.fixture(scope="module")
def shared_kernel() -> Iterator[Any]:
    """One kernel for the module's tests that take it (tests/kernel_driver.py, kernel_for_test)."""
    from tests.kernel_driver import SharedKernel

    kernels = SharedKernel()
    try:
        yield kernels
    finally:
        kernels.close()


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
    from acp_notebook._client import _agent as _client
    from tests._schema import check_client_message, check_v1_client_message

    failures: list[str] = []
    agent_init = _client.Agent.__init__

    def checked_init(self: Any, connection: Any, *args: Any, **kwargs: Any) -> None:
        agent_init(self, connection, *args, **kwargs)
        peer_methods: dict[Any, str] = {}  # the agent's request ids -> their methods

        def check(direction: str, message: Any) -> None:
            for one in message if isinstance(message, list) else [message]:
                if not isinstance(one, dict):
                    continue
                if direction == "recv":
                    if isinstance(one.get("method"), str) and "id" in one:
                        peer_methods[one["id"]] = one["method"]
                    continue
                params = one.get("params")
                v1 = getattr(self, "protocol_version", None) == 1 or (
                    isinstance(params, dict) and params.get("protocolVersion") == 1
                )  # a v1 connection's traffic is checked against the v1 schema
                checker = check_v1_client_message if v1 else check_client_message
                for problem in checker(one, peer_methods):
                    failures.append(f"{problem} in {str(one)[:300]}")

        connection.observe(check)

    monkeypatch.setattr(_client.Agent, "__init__", checked_init)
    yield
    assert not failures, "our client sent messages the v2 schema rejects:\n" + "\n".join(failures)
