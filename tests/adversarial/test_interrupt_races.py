"""Interrupt races on the client terminals: a command asked for before the turn's cancel never
runs after it, whether its allow comes before the cancel or its spawn is under way during it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_notebook._client._terminals import ClientTerminals, TerminalRequest
from acp_notebook._connection._errors import RpcError
from tests.test_terminals import Recorder, create_params, wait_gone

pytestmark = pytest.mark.anyio


@pytest.fixture
def work(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


async def test_an_interrupt_before_the_command_starts_means_it_never_starts(work: Path) -> None:
    # allowed, then the turn is interrupted (kill_session) before the spawn: nothing runs
    service: ClientTerminals

    async def allow_then_interrupt(request: TerminalRequest) -> bool:
        await service.kill_session(request.session_id)
        return True

    service = ClientTerminals(allow_then_interrupt, cwd_of=lambda sid: str(work), kill_grace=0.5)
    async with service:
        with pytest.raises(RpcError) as info:
            await service.create(create_params("touch", str(work / "ran")))
        assert info.value.data == {"reason": "cancelled"}
    assert not (work / "ran").exists()


async def test_an_interrupt_while_the_command_starts_stops_it(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # kill_session runs while the spawn is under way (the command is not registered yet, so
    # it cannot see it): the command is stopped once it is, and stays known with its status
    import acp_notebook._client._terminals as terminals_module

    service = ClientTerminals(Recorder(), cwd_of=lambda sid: str(work), kill_grace=0.5)
    spawn = terminals_module._Terminal.spawn
    groups: list[int] = []

    def spawn_then_interrupt(self: Any, env: dict[str, str], cols: int, rows: int) -> None:
        spawn(self, env, cols, rows)
        groups.append(self.pid)  # the group id (the command leads its own group)
        anyio.from_thread.run(service.kill_session, "s1")  # the Interrupt, meanwhile

    monkeypatch.setattr(terminals_module._Terminal, "spawn", spawn_then_interrupt)
    async with service:
        tid = (await service.create(create_params("sleep", "307")))["terminalId"]
        ids = {"sessionId": "s1", "terminalId": tid}
        with anyio.fail_after(10):
            status = await service.wait_for_exit(ids)
        assert status["signal"] in ("SIGTERM", "SIGKILL")
    assert [wait_gone(g) for g in groups] == [[]]
