"""Fail closed, for v1's client terminals and client file system: a command or a write that
nobody allowed never happens.

Every way an ``approve`` callback can fail to say an explicit ``True`` (False, None, a truthy
non-True, raising, never answering until the agent cancels its request, never answering until
the service's timeout, a cancellation raised by the card itself) is tried on ``terminal/create``,
``fs/write_text_file`` (an existing file, a new file in new folders) and a read outside the
session's folder. The requests come from an "agent" over a real in-memory JSON-RPC connection,
so a cancellation is a real ``$/cancel_request``. Then: no process started, nothing written,
nothing created, nothing read back.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_notebook._client._approval import NOT_ALLOWED
from acp_notebook._client._files import METHODS as FS_METHODS
from acp_notebook._client._files import ClientFiles
from acp_notebook._client._terminals import METHODS as TERMINAL_METHODS
from acp_notebook._client._terminals import ClientTerminals
from acp_notebook._connection._errors import REQUEST_CANCELLED, RpcError
from acp_notebook._connection._jsonrpc import Connection, connection_pair
from tests._procs import processes_naming

pytestmark = pytest.mark.anyio

Approve = Callable[[Any], Awaitable[bool]]


def answering(value: object) -> Approve:
    async def approve(request: Any) -> bool:
        return value  # type: ignore[return-value]

    return approve


async def raising(request: Any) -> bool:
    raise RuntimeError("the card failed")


async def never(request: Any) -> bool:
    await anyio.sleep_forever()
    return True


async def stubborn(request: Any) -> bool:
    """Swallows its cancellation, then says yes: too late, it must not count."""
    try:
        await anyio.sleep_forever()
    except anyio.get_cancelled_exc_class():
        pass
    return True


async def cancelled_inside(request: Any) -> bool:
    future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
    future.cancel()
    return await future


@dataclass(frozen=True)
class Way:
    name: str
    approve: Approve
    agent_cancels: bool = False  # the agent gives up waiting (sends $/cancel_request)
    timeout: float | None = None  # the service's approve_timeout
    code: int = NOT_ALLOWED


WAYS = [
    Way("false", answering(False)),
    Way("none", answering(None)),
    Way("truthy", answering("yes")),
    Way("one", answering(1)),
    Way("raises", raising),
    Way("never, cancelled", never, agent_cancels=True, code=REQUEST_CANCELLED),
    Way("stubborn, cancelled", stubborn, agent_cancels=True, code=REQUEST_CANCELLED),
    Way("never, times out", never, timeout=0.1),
    Way("stubborn, times out", stubborn, timeout=0.1),
    Way("cancelled inside", cancelled_inside),
]


@dataclass
class World:
    work: Path
    outside: Path
    agent: Connection
    terminals: ClientTerminals


@pytest.fixture(params=WAYS, ids=[w.name for w in WAYS])
def way(request: pytest.FixtureRequest) -> Way:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
async def world(tmp_path: Path, way: Way) -> AsyncIterator[World]:
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    (work / "kept.txt").write_bytes(b"precious\r\n\xff")
    (outside / "secret.txt").write_text("secret\n")

    def cwd_of(session_id: str) -> str | None:
        return str(work) if session_id == "s1" else None

    terminals = ClientTerminals(way.approve, cwd_of=cwd_of, approve_timeout=way.timeout)
    files = ClientFiles(way.approve, cwd_of=cwd_of, approve_timeout=way.timeout)

    async def handler(method: str, params: Any) -> Any:
        if method in TERMINAL_METHODS:
            return await terminals.handle(method, params)
        if method in FS_METHODS:
            return await files.handle(method, params)
        raise RpcError(-32601, method)

    client, agent = connection_pair()
    client.set_request_handler(handler)
    async with client, agent, terminals:
        yield World(work, outside, agent, terminals)


async def agent_asks(world: World, way: Way, method: str, params: dict[str, Any]) -> int:
    """Send the request as the agent; return the error code it got (it must get one)."""
    if way.agent_cancels:
        codes: list[int] = []
        answered = anyio.Event()

        def seen(direction: str, message: Any) -> None:
            if direction == "recv" and isinstance(message, dict) and "method" not in message:
                codes.append(message.get("error", {}).get("code"))
                answered.set()

        stop = world.agent.observe(seen)
        try:
            with anyio.move_on_after(0.2) as scope:  # the agent gives up: $/cancel_request
                await world.agent.request(method, params)
            assert scope.cancelled_caught
            with anyio.fail_after(30):  # the client's handler is done and has answered
                await answered.wait()
        finally:
            stop()
        (code,) = codes
        return code
    with pytest.raises(RpcError) as info:
        await world.agent.request(method, params)
    return info.value.code


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` with its bytes (None for a folder)."""
    found: dict[str, bytes | None] = {}
    for folder, dirs, names in os.walk(root):
        for d in dirs:
            found[os.path.join(folder, d)] = None
        for n in names:
            found[os.path.join(folder, n)] = Path(folder, n).read_bytes()
    return found


async def test_an_unallowed_command_never_runs(world: World, way: Way) -> None:
    marker = world.work / "RAN"
    params = {"sessionId": "s1", "command": "touch", "args": [str(marker)]}
    before = snapshot(world.work.parent)
    assert await agent_asks(world, way, "terminal/create", params) == way.code
    # The request is answered, so its handler is done: a command it had started would still
    # run (named by its marker) or have touched the marker already.
    assert processes_naming(str(marker)) == []
    assert not marker.exists()
    assert world.terminals.terminal_ids == []
    assert snapshot(world.work.parent) == before


async def test_an_unallowed_write_changes_nothing(world: World, way: Way) -> None:
    before = snapshot(world.work.parent)
    for path in (world.work / "kept.txt", world.work / "new" / "deep" / "f.txt"):
        params = {"sessionId": "s1", "path": str(path), "content": "agent's text"}
        assert await agent_asks(world, way, "fs/write_text_file", params) == way.code
    assert snapshot(world.work.parent) == before  # byte for byte, no folder, no temp file


async def test_an_unallowed_read_outside_returns_nothing(world: World, way: Way) -> None:
    params = {"sessionId": "s1", "path": str(world.outside / "secret.txt")}
    assert await agent_asks(world, way, "fs/read_text_file", params) == way.code


async def test_an_unallowed_read_of_a_hard_link_inside_returns_nothing(
    world: World, way: Way
) -> None:
    """A name inside the folder for a file outside (finding 17 of issue 22)."""
    os.link(world.outside / "secret.txt", world.work / "notes.txt")
    params = {"sessionId": "s1", "path": str(world.work / "notes.txt")}
    assert await agent_asks(world, way, "fs/read_text_file", params) == way.code


@pytest.mark.process
async def test_the_matrix_can_fail_an_allow_runs_and_writes(tmp_path: Path) -> None:
    """The same checks with an explicit True: the command runs and the file is written."""
    work = tmp_path / "work"
    work.mkdir()
    allow = answering(True)
    async with ClientTerminals(allow, cwd_of=lambda sid: str(work)) as terminals:
        created = await terminals.create(
            {"sessionId": "s1", "command": "touch", "args": [str(work / "RAN")]}
        )
        await terminals.wait_for_exit({"sessionId": "s1", **created})
    files = ClientFiles(allow, cwd_of=lambda sid: str(work))
    await files.write_text_file({"sessionId": "s1", "path": str(work / "f"), "content": "x"})
    assert sorted(os.listdir(work)) == ["RAN", "f"]
