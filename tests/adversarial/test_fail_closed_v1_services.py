"""The fail-closed matrix of the permission path, for what a v1 agent asks the client to do
(client terminals, writes): whatever goes wrong while its decision is pending, the command
never runs and the file is never written. Wired as the notebook wires it
(``client_services=True``), the agent a scripted v1 peer in memory."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import anyio
import pytest
from _memory import scripted_agent
from test_services import Peer, ask

import acp_notebook as acp
from acp_notebook._client._approval import NOT_ALLOWED
from acp_notebook._client._permission import Answer, PermissionDecision

pytestmark = pytest.mark.anyio


def requests(marker: Path) -> dict[str, dict[str, Any]]:
    return {
        "command": {"method": "terminal/create", "command": "touch", "args": [str(marker)]},
        "write": {"method": "fs/write_text_file", "path": str(marker), "content": "x"},
    }


@pytest.mark.parametrize("what", ["command", "write"])
async def test_a_request_the_agent_withdraws_while_its_card_waits_never_acts(
    tmp_path: Path, what: str
) -> None:
    marker = tmp_path / "acted"
    params = dict(requests(marker)[what])
    method = params.pop("method")
    pending: list[PermissionDecision] = []
    shown = anyio.Event()
    late = anyio.Event()

    async def asker(decision: PermissionDecision) -> Answer:
        pending.append(decision)
        shown.set()
        await late.wait()  # the click comes after the agent withdrew the request
        return Answer("allow", "click")

    async def turn(conn: Any) -> None:
        with anyio.CancelScope() as scope:  # cancelling the request sends $/cancel_request
            async with anyio.create_task_group() as tg:
                tg.start_soon(functools.partial(ask, conn, method, **params))
                await shown.wait()
                scope.cancel()
        with anyio.fail_after(10):  # the client got $/cancel_request: the decision is settled
            await pending[0].done.wait()
        late.set()
        # Not a sync: a window in which a late allow, wrongly counted, would act (nothing
        # announces that it was ignored). The decision itself is settled above.
        await anyio.sleep(0.2)

    peer = Peer()
    async with scripted_agent(peer.handle, client_services=True) as (agent, conn):
        peer.conn = conn
        session = await agent.new_session(tmp_path)
        session.ask_permissions(asker)
        peer.turn = turn
        with anyio.fail_after(30):
            await (await session.prompt("go")).wait()
    assert not marker.exists()
    (decision,) = pending
    assert decision.decided_by == "withdrawn" and not decision.allowed


@pytest.mark.parametrize("what", ["command", "write"])
@pytest.mark.parametrize("how", ["raises", "not an answer", "cancelled turn ends", "closed"])
async def test_a_request_whose_decision_goes_wrong_never_acts(
    tmp_path: Path, what: str, how: str
) -> None:
    marker = tmp_path / "acted"
    params = dict(requests(marker)[what])
    method = params.pop("method")
    got: list[Any] = []
    box: list[Any] = []

    async def asker(decision: PermissionDecision) -> Any:
        if how == "raises":
            raise RuntimeError("the card broke")
        if how == "not an answer":
            return True  # not an option id nor an Answer
        if how == "cancelled turn ends":
            await box[0].cancel()  # the turn is cancelled while the card waits
            await anyio.sleep_forever()
        await box[0].fail_pending("the agent was closed")  # %acp close, kernel shutdown
        await anyio.sleep_forever()

    async def turn(conn: Any) -> None:
        got.append(await ask(conn, method, **params))

    peer = Peer()
    async with scripted_agent(peer.handle, client_services=True) as (agent, conn):
        peer.conn = conn
        session = await agent.new_session(tmp_path)
        box.append(session)
        session.ask_permissions(asker)
        peer.turn = turn
        with anyio.fail_after(30):
            done = await session.prompt("go")
            await done.wait()
    (error,) = got
    assert isinstance(error, acp.RpcError) and error.code == NOT_ALLOWED
    assert not marker.exists()
    (decision,) = done.permissions
    assert not decision.allowed
    assert (
        decision.decided_by
        == {
            "raises": "error",
            "not an answer": "invalid",
            "cancelled turn ends": "cancel",
            "closed": "closed",
        }[how]
    )
