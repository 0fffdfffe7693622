"""The PTY runner of the embedded agent."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from acp_notebook.agent._pty import (
    BATCH_BYTES,
    ExitStatus,
    PtyCommand,
    let_commands_receive_sigint,
)

pytestmark = pytest.mark.anyio


async def run(command: PtyCommand) -> tuple[ExitStatus, list[bytes]]:
    chunks: list[bytes] = []

    async def collect(data: bytes) -> None:
        chunks.append(data)

    with anyio.fail_after(30):  # hang guard only
        status = await command.run(collect)
    return status, chunks


async def test_bytes_are_exact_and_exit_code_is_reported(tmp_path: Path) -> None:
    status, chunks = await run(PtyCommand("printf 'a\\nb\\r50%%\\r\\n'; exit 3", tmp_path))
    # A normal terminal: the line discipline maps "\n" to "\r\n" (ONLCR); nothing else changes.
    assert b"".join(chunks) == b"a\r\nb\r50%\r\r\n"
    assert status == ExitStatus(exit_code=3)
    assert status.to_wire() == {"exitCode": 3}
    assert not status.success


async def test_runs_in_cwd_with_a_terminal_of_the_given_size(tmp_path: Path) -> None:
    status, chunks = await run(
        PtyCommand("pwd; stty size; echo $TERM; test -t 1 && echo tty", tmp_path, cols=100, rows=30)
    )
    assert b"".join(chunks).decode().split("\r\n") == [
        str(tmp_path.resolve()),
        "30 100",
        "xterm-256color",
        "tty",
        "",
    ]
    assert status.success


async def test_the_terminal_has_normal_settings(tmp_path: Path) -> None:
    # Commands see the tty a terminal emulator would give them: output post-processing on,
    # "\n" -> "\r\n" on, so programs that rely on it (or check it) behave as usual.
    status, chunks = await run(PtyCommand("stty -a", tmp_path))
    settings = b"".join(chunks).decode().split()
    assert status.success
    assert "opost" in settings
    assert "onlcr" in settings
    assert "-onlcr" not in settings


async def test_batches_are_at_most_batch_bytes_and_nothing_is_lost(tmp_path: Path) -> None:
    status, chunks = await run(PtyCommand("head -c 1000000 /dev/zero | tr '\\0' 'x'", tmp_path))
    assert sum(map(len, chunks)) == 1000000
    assert max(map(len, chunks)) <= BATCH_BYTES
    assert status.success


async def test_interrupt_sends_sigint_to_the_group(tmp_path: Path) -> None:
    command = PtyCommand("echo started; sleep 30", tmp_path)
    result: list[ExitStatus] = []
    seen = anyio.Event()

    async def collect(data: bytes) -> None:
        seen.set()

    async def runner() -> None:
        result.append(await command.run(collect))

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(runner)
            await seen.wait()
            command.interrupt()
    assert result[0].signal == "SIGINT"
    assert result[0].to_wire() == {"signal": "SIGINT"}


async def test_sigkill_after_the_grace_period_when_sigint_is_ignored(tmp_path: Path) -> None:
    command = PtyCommand("trap '' INT; echo ready; sleep 30", tmp_path, grace=0.2)
    result: list[ExitStatus] = []
    seen = anyio.Event()

    async def collect(data: bytes) -> None:
        seen.set()

    async def runner() -> None:
        result.append(await command.run(collect))

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(runner)
            await seen.wait()
            command.interrupt()
    assert result[0].signal == "SIGKILL"


async def test_background_leftovers_do_not_keep_the_command_alive(tmp_path: Path) -> None:
    status, chunks = await run(PtyCommand("(sleep 30; echo late) & echo now", tmp_path))
    assert b"".join(chunks) == b"now\r\n"
    assert status.success


async def test_missing_cwd_raises(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        await run(PtyCommand("true", tmp_path / "missing"))


def test_exit_status_from_returncode() -> None:
    assert ExitStatus.from_returncode(0).success
    assert ExitStatus.from_returncode(-9) == ExitStatus(signal="SIGKILL")
    assert ExitStatus.from_returncode(2) == ExitStatus(exit_code=2)


def test_commands_get_sigint_back_when_we_started_with_it_ignored(tmp_path: Path) -> None:
    """``nohup agent &`` starts the agent with SIGINT ignored; its commands must still be
    interruptible, so the agent replaces "ignore" with a handler (reset to default on exec)."""
    import signal
    import subprocess

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        assert let_commands_receive_sigint() is True
        assert let_commands_receive_sigint() is False  # nothing to do the second time
        child = subprocess.run(
            ["/bin/sh", "-c", "kill -INT $$; sleep 5"], cwd=tmp_path, timeout=10, check=False
        )
        assert child.returncode == -signal.SIGINT  # the shell died of SIGINT, not ignored it
    finally:
        signal.signal(signal.SIGINT, previous)
