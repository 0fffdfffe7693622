"""Client terminals (_client/_terminals.py): real commands, real PTYs, their own groups."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_notebook._client._approval import NOT_ALLOWED
from acp_notebook._client._terminals import (
    METHODS,
    ClientTerminals,
    TerminalExit,
    TerminalRequest,
    _Output,
    reads_as_script,
    unnameable,
)
from acp_notebook._connection._errors import INVALID_PARAMS, INVALID_REQUEST, RpcError
from acp_notebook._policy._rules import Policy
from acp_notebook._protocol import ErrorCode

pytestmark = pytest.mark.anyio
PY = sys.executable
Terms = tuple[ClientTerminals, "Recorder", dict[str, list[Any]]]
GONE_WITHIN = 10.0  # seconds: a bound for the kernel to reap, not a speed assertion


def live_members(pgid: int) -> list[int]:
    """Pids of the non-zombie processes in a process group."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            pids.append(int(entry))
    return pids


def wait_gone(pgid: int) -> list[int]:
    deadline = time.monotonic() + GONE_WITHIN
    while (left := live_members(pgid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


class Recorder:
    """An approve callback that allows (or not) and remembers what it was shown."""

    def __init__(self, answer: object = True) -> None:
        self.answer = answer
        self.seen: list[TerminalRequest] = []

    async def __call__(self, request: TerminalRequest) -> bool:
        self.seen.append(request)
        return self.answer  # type: ignore[return-value]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.fixture
async def terms(work: Path) -> AsyncIterator[Terms]:
    approve = Recorder()
    hooks: dict[str, list[Any]] = {"output": [], "exit": []}
    service = ClientTerminals(
        approve,
        cwd_of=lambda sid: str(work) if sid == "s1" else None,
        on_output=lambda tid, data: hooks["output"].append((tid, data)),
        on_exit=lambda tid, status: hooks["exit"].append((tid, status)),
        kill_grace=0.5,
    )
    async with service:
        yield service, approve, hooks


def create_params(command: str, *args: str, **extra: Any) -> dict[str, Any]:
    return {"sessionId": "s1", "command": command, "args": list(args), **extra}


async def run(service: ClientTerminals, command: str, *args: str, **extra: Any) -> dict[str, Any]:
    """create, wait_for_exit, output, release: what a v1 agent does."""
    tid = (await service.create(create_params(command, *args, **extra)))["terminalId"]
    ids = {"sessionId": "s1", "terminalId": tid}
    status = await service.wait_for_exit(ids)
    out = await service.output(ids)
    assert await service.release(ids) == {}
    return {"id": tid, "status": status, **out}


async def test_a_command_runs_in_a_pty_and_reports_its_output_and_exit_code(
    terms: Terms, work: Path
) -> None:
    service, approve, hooks = terms
    code = "import os,sys; print('tty', os.isatty(1), os.getcwd()); sys.exit(3)"
    result = await run(service, PY, "-c", code)
    assert result["status"] == {"exitCode": 3, "signal": None}
    assert result["exitStatus"] == {"exitCode": 3, "signal": None}
    assert result["output"] == f"tty True {work}\r\n"  # a PTY: "\n" comes back as "\r\n"
    assert result["truncated"] is False
    [request] = approve.seen
    assert request.argv == (PY, "-c", code)
    assert request.terminal_id == result["id"] and request.session_id == "s1"
    assert request.cwd == str(work)
    assert b"".join(d for tid, d in hooks["output"] if tid == result["id"]) == (
        f"tty True {work}\r\n".encode()
    )
    assert hooks["exit"] == [(result["id"], TerminalExit(exit_code=3))]


async def test_the_argv_is_never_read_by_a_shell(terms: Terms, work: Path) -> None:
    service, _, _ = terms
    hostile = ["$(touch PWNED1)", "`touch PWNED2`", "a; touch PWNED3", "*", "'\"", "a\nb"]
    result = await run(service, "echo", *hostile)
    assert result["output"] == " ".join(hostile).replace("\n", "\r\n") + "\r\n"
    assert sorted(os.listdir(work)) == []


async def test_env_and_cwd_are_the_approved_ones_and_a_symlinked_cwd_is_resolved(
    terms: Terms, work: Path, tmp_path: Path
) -> None:
    service, approve, _ = terms
    (work / "sub").mkdir()
    link = tmp_path / "link"
    link.symlink_to(work / "sub")
    code = "import os; print(os.environ['GREETING'], os.environ['TERM'], os.getcwd())"
    result = await run(
        service, PY, "-c", code, cwd=str(link), env=[{"name": "GREETING", "value": "hi there"}]
    )
    assert result["output"] == f"hi there xterm-256color {work / 'sub'}\r\n"
    assert approve.seen[0].cwd == str(work / "sub")
    assert approve.seen[0].env == (("GREETING", "hi there"),)


async def test_output_byte_limit_keeps_the_newest_bytes_at_a_character_boundary(
    terms: Terms,
) -> None:
    service, _, _ = terms
    code = "import sys; sys.stdout.write('a' + 'é' * 5000 + 'z'); sys.stdout.flush()"
    result = await run(service, PY, "-c", code, outputByteLimit=1001)
    assert result["truncated"] is True
    text = result["output"]
    assert len(text.encode()) <= 1001
    assert len(text.encode()) >= 999  # at most one character less than the limit
    assert text.endswith("éz") and set(text[:-1]) == {"é"}
    untruncated = await run(service, PY, "-c", "print('short')", outputByteLimit=1000)
    assert untruncated["output"] == "short\r\n" and untruncated["truncated"] is False


def test_the_kept_output_counts_utf8_bytes_and_cuts_between_characters() -> None:
    out = _Output(5)
    out.feed("ab€".encode()[:3])  # "ab" and the first byte of "€"
    assert out.text == "ab" and not out.truncated
    out.feed("ab€".encode()[3:] + b"cd")
    assert out.text == "€cd"  # 3 + 1 + 1 bytes, "ab" dropped
    assert out.truncated
    out.feed(b"\xff")  # U+FFFD is 3 bytes: "€" must go
    assert out.text == "cd\ufffd"
    odd = _Output(3)
    odd.feed("éé".encode())  # 4 bytes: dropping 1 would cut the first "é" in half
    assert odd.text == "é" and odd.truncated
    zero = _Output(0)
    zero.feed(b"x")
    assert zero.text == "" and zero.truncated


async def test_kill_reports_the_signal_and_release_forgets_the_terminal(
    terms: Terms,
) -> None:
    service, _, hooks = terms
    tid = (await service.create(create_params("sleep", "100")))["terminalId"]
    ids = {"sessionId": "s1", "terminalId": tid}
    pgid = service.process_group(tid)
    assert pgid is not None and live_members(pgid)
    assert "exitStatus" not in await service.output(ids)
    assert await service.kill(ids) == {}
    assert await service.wait_for_exit(ids) == {"exitCode": None, "signal": "SIGTERM"}
    assert (await service.output(ids))["exitStatus"] == {"exitCode": None, "signal": "SIGTERM"}
    assert wait_gone(pgid) == []
    await service.release(ids)
    with pytest.raises(RpcError) as info:
        await service.output(ids)
    assert info.value.code == ErrorCode.RESOURCE_NOT_FOUND
    assert hooks["exit"] == [(tid, TerminalExit(signal="SIGTERM"))]


async def test_a_command_ignoring_sigterm_is_killed_after_the_grace(
    terms: Terms,
) -> None:
    service, _, _ = terms
    code = "import signal as s, time; s.signal(s.SIGTERM, s.SIG_IGN); print('ready', flush=True)"
    code += "; time.sleep(100)"
    tid = (await service.create(create_params(PY, "-c", code)))["terminalId"]
    ids = {"sessionId": "s1", "terminalId": tid}
    with anyio.fail_after(10):
        while "ready" not in (await service.output(ids))["output"]:
            await anyio.sleep(0.02)
    pgid = service.process_group(tid)
    assert pgid is not None
    await service.release(ids)  # release kills what still runs
    assert wait_gone(pgid) == []
    assert tid not in service.terminal_ids


async def test_what_a_command_leaves_behind_dies_with_it(
    terms: Terms,
) -> None:
    service, _, _ = terms
    code = "import subprocess; p = subprocess.Popen(['sleep', '100']); print(p.pid)"
    tid = (await service.create(create_params(PY, "-c", code)))["terminalId"]
    ids = {"sessionId": "s1", "terminalId": tid}
    pgid = service.process_group(tid)
    assert pgid is not None
    assert await service.wait_for_exit(ids) == {"exitCode": 0, "signal": None}
    child = int((await service.output(ids))["output"].split()[0])
    assert wait_gone(pgid) == []
    assert not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text()


async def test_close_kills_every_group_and_is_idempotent(work: Path) -> None:
    service = ClientTerminals(Recorder(), cwd_of=lambda sid: str(work), kill_grace=0.5)
    async with service:
        groups = []
        for _ in range(3):
            tid = (await service.create(create_params("sleep", "100")))["terminalId"]
            pgid = service.process_group(tid)
            assert pgid is not None and live_members(pgid)
            groups.append(pgid)
        await service.close()
        assert [wait_gone(g) for g in groups] == [[], [], []]
        await service.close()  # again: nothing to do, no error
        with pytest.raises(RpcError) as info:
            await service.create(create_params("true"))
        assert info.value.code == INVALID_REQUEST


async def test_leaving_the_block_kills_running_commands(work: Path) -> None:
    service = ClientTerminals(Recorder(), cwd_of=lambda sid: str(work), kill_grace=0.5)
    async with service:
        tid = (await service.create(create_params("sleep", "100")))["terminalId"]
        pgid = service.process_group(tid)
    assert pgid is not None and wait_gone(pgid) == []


HOST = textwrap.dedent(
    """
    import sys, anyio
    from acp_notebook._client._terminals import ClientTerminals

    async def allow(request):
        return True

    async def main():
        async with ClientTerminals(allow, cwd_of=lambda sid: sys.argv[1]) as service:
            tid = (await service.create({"sessionId": "s", "command": "sleep", "args": ["100"]}))
            print(service.process_group(tid["terminalId"]), flush=True)
            await anyio.sleep(100)

    anyio.run(main)
    """
)


def test_no_orphan_when_the_host_process_is_killed(work: Path, tmp_path: Path) -> None:
    script = tmp_path / "host.py"
    script.write_text(HOST)
    with subprocess.Popen([PY, str(script), str(work)], stdout=subprocess.PIPE, text=True) as host:
        assert host.stdout is not None
        try:
            pgid = int(host.stdout.readline())
            assert live_members(pgid)
        finally:
            host.send_signal(signal.SIGKILL)
            host.wait()
        assert wait_gone(pgid) == []  # the watchdog in the group saw the host go


async def test_a_program_that_cannot_run_is_an_error_and_no_terminal(
    terms: Terms, work: Path
) -> None:
    service, _, _ = terms
    with pytest.raises(RpcError) as info:
        await service.create(create_params("no-such-program-here"))
    assert info.value.code == ErrorCode.RESOURCE_NOT_FOUND
    assert info.value.data["reason"] == "exec_failed"
    with pytest.raises(RpcError) as info:
        await service.create(create_params(str(work)))  # a folder: EACCES
    assert info.value.code == INVALID_PARAMS
    assert service.terminal_ids == []


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({"sessionId": "s1"}, INVALID_PARAMS),
        ({"sessionId": "s1", "command": ""}, INVALID_PARAMS),
        ({"sessionId": "s1", "command": 3}, INVALID_PARAMS),
        ({"sessionId": "s1", "command": "ls", "args": ["a\x00b"]}, INVALID_PARAMS),
        ({"sessionId": "s1", "command": "ls", "cwd": "relative"}, INVALID_PARAMS),
        ({"sessionId": "s1", "command": "ls", "cwd": "/no/such/folder"}, -32002),
        ({"sessionId": "s1", "command": "ls", "outputByteLimit": -1}, INVALID_PARAMS),
        ({"sessionId": "s1", "command": "ls", "outputByteLimit": True}, INVALID_PARAMS),
        ({"sessionId": "s1", "command": "ls", "env": [{"name": "A=B", "value": "1"}]}, -32602),
        ({"sessionId": "s1", "command": "ls", "env": [{"name": "A"}]}, INVALID_PARAMS),
        ({"sessionId": "nope", "command": "ls"}, -32002),
        ({"sessionId": "nope", "command": "ls", "cwd": "/"}, -32002),
    ],
)
async def test_bad_params_are_refused_before_anything_is_asked(
    terms: Terms,
    params: dict[str, Any],
    code: int,
) -> None:
    service, approve, _ = terms
    with pytest.raises(RpcError) as info:
        await service.create(params)
    assert info.value.code == code
    assert approve.seen == []


async def test_null_args_and_env_mean_none(
    terms: Terms,
) -> None:
    service, approve, _ = terms
    tid = await service.create({"sessionId": "s1", "command": "true", "args": None, "env": None})
    await service.release({"sessionId": "s1", "terminalId": tid["terminalId"]})
    assert approve.seen[0].argv == ("true",) and approve.seen[0].env == ()


async def test_a_terminal_of_another_session_is_unknown(
    terms: Terms,
) -> None:
    service, _, _ = terms
    tid = (await service.create(create_params("true")))["terminalId"]
    for method in sorted(METHODS - {"terminal/create"}):
        with pytest.raises(RpcError) as info:
            await service.handle(method, {"sessionId": "s2", "terminalId": tid})
        assert info.value.code == ErrorCode.RESOURCE_NOT_FOUND, method
    await service.handle("terminal/release", {"sessionId": "s1", "terminalId": tid})


async def test_a_refusal_is_answered_with_not_allowed(work: Path) -> None:
    async with ClientTerminals(Recorder(False), cwd_of=lambda sid: str(work)) as service:
        with pytest.raises(RpcError) as info:
            await service.create(create_params("touch", str(work / "PWNED")))
        assert info.value.code == NOT_ALLOWED and info.value.data == {"reason": "rejected"}
        assert service.terminal_ids == [] and not (work / "PWNED").exists()


async def test_too_many_terminals_are_refused(work: Path) -> None:
    async with ClientTerminals(Recorder(), cwd_of=lambda sid: str(work), max_terminals=2) as svc:
        for _ in range(2):
            await svc.create(create_params("true"))
        with pytest.raises(RpcError) as info:
            await svc.create(create_params("true"))
        assert info.value.code == INVALID_REQUEST
        assert info.value.data["reason"] == "too_many_terminals"


async def test_hooks_that_raise_do_not_stop_the_terminal(work: Path) -> None:
    def boom(*_: object) -> None:
        raise RuntimeError("widget gone")

    async with ClientTerminals(
        Recorder(), cwd_of=lambda sid: str(work), on_output=boom, on_exit=boom
    ) as service:
        result = await run(service, "echo", "still here")
    assert result["output"] == "still here\r\n"


def request(command: str, *args: str, env: tuple[tuple[str, str], ...] = ()) -> TerminalRequest:
    return TerminalRequest("s1", "t1", command, args, "/w", env, None)


@pytest.mark.parametrize(
    ("req", "line"),
    [
        (request("ls", "-l", "a b"), "ls -l 'a b'"),
        (request("echo", "hi; touch PWNED"), "echo 'hi; touch PWNED'"),
        (request("X=1", "echo"), "'X=1' echo"),  # a program named X=1, not an assignment
        (request("if", "true"), "'if' true"),
        (request("time", "rm", "x"), "'time' rm x"),
        (request("a b"), "'a b'"),
        (request("make", env=(("TZ", "UTC"),)), "TZ=UTC make"),
        (request("make", env=(("A-B", "1 2"),)), "env 'A-B=1 2' make"),
    ],
)
def test_the_command_line_is_the_argv_as_a_shell_reads_it(req: TerminalRequest, line: str) -> None:
    assert req.command_line() == line


@pytest.mark.parametrize(
    ("req", "allowed"),
    [
        (request("echo", "hi; touch PWNED"), True),
        (request("X=1", "echo", "hi"), None),  # not `echo hi`
        (request("echo", "hi", env=(("PATH", "/tmp/evil"),)), None),
        (request("echo", "hi", env=(("LANG", "C"),)), True),
        (request("rm", "x"), False),
        (request("sh", "-c", "rm x"), False),
    ],
)
def test_a_policy_judges_the_command_line(req: TerminalRequest, allowed: bool | None) -> None:
    decision = Policy(("echo *", "sh -c *"), ("rm *",)).decide(req.permission_request())
    assert (decision.allow if decision else None) is allowed


def test_every_v1_terminal_method_is_handled() -> None:
    schema = Path(__file__).parent / "oracle/node_modules/@agentclientprotocol/sdk/schema/v1"
    defs = json.loads((schema / "schema.json").read_text())["$defs"]
    client_methods = {d["x-method"] for d in defs.values() if d.get("x-side") == "client"}
    assert {m for m in client_methods if m.startswith("terminal/")} == METHODS


async def test_an_unknown_method_is_method_not_found(
    terms: Terms,
) -> None:
    service, _, _ = terms
    with pytest.raises(RpcError) as info:
        await service.handle("terminal/resize", {})
    assert info.value.code == ErrorCode.METHOD_NOT_FOUND


async def test_a_command_approved_while_closing_never_outlives_close(work: Path) -> None:
    service = ClientTerminals(Recorder(), cwd_of=lambda sid: str(work), kill_grace=0.5)

    async def approve_then_close(request: TerminalRequest) -> bool:
        async with anyio.create_task_group() as tg:
            tg.start_soon(service.close)  # the kernel shuts down while the card is answered
        return True

    service._approve = approve_then_close
    async with service:
        with pytest.raises(RpcError) as info:
            await service.create(create_params("touch", str(work / "RAN")))
        assert info.value.data == {"reason": "closed"}
    assert not (work / "RAN").exists()


async def test_a_command_started_while_closing_is_killed(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from acp_notebook._client import _terminals

    service = ClientTerminals(Recorder(), cwd_of=lambda sid: str(work), kill_grace=0.5)
    spawn = _terminals._Terminal.spawn
    started: list[int] = []

    def spawn_then_close(self: Any, *args: Any) -> None:
        spawn(self, *args)
        started.append(self.pid)
        service._closed = True  # close() ran (and found nothing) while the command started

    monkeypatch.setattr(_terminals._Terminal, "spawn", spawn_then_close)
    async with service:
        with pytest.raises(RpcError) as info:
            await service.create(create_params("sleep", "100"))
        assert info.value.data == {"reason": "closed"}
        assert wait_gone(started[0]) == []


def v1_errors(type_name: str, instance: Any) -> list[str]:
    """Schema errors of ``instance`` against the pinned SDK's v1 ``$defs/type_name``."""
    from jsonschema import Draft202012Validator

    schema = Path(__file__).parent / "oracle/node_modules/@agentclientprotocol/sdk/schema/v1"
    defs = json.loads((schema / "schema.json").read_text())["$defs"]
    validator = Draft202012Validator({"$ref": f"#/$defs/{type_name}", "$defs": defs})
    return [e.message for e in validator.iter_errors(instance)]


async def test_every_answer_is_a_valid_v1_response(terms: Terms) -> None:
    service, _, _ = terms
    params = create_params("sleep", "100", outputByteLimit=10, env=[{"name": "A", "value": "1"}])
    assert v1_errors("CreateTerminalRequest", params) == []
    created = await service.create(params)
    assert v1_errors("CreateTerminalResponse", created) == []
    ids = {"sessionId": "s1", **created}
    assert v1_errors("TerminalOutputRequest", ids) == []
    assert v1_errors("TerminalOutputResponse", await service.output(ids)) == []
    assert v1_errors("KillTerminalResponse", await service.kill(ids)) == []
    assert v1_errors("WaitForTerminalExitResponse", await service.wait_for_exit(ids)) == []
    assert v1_errors("TerminalOutputResponse", await service.output(ids)) == []
    assert v1_errors("ReleaseTerminalResponse", await service.release(ids)) == []
    done = await run(service, "true")
    assert v1_errors("WaitForTerminalExitResponse", done["status"]) == []
    assert v1_errors("TerminalExitStatus", done["exitStatus"]) == []
    assert v1_errors("WaitForTerminalExitResponse", {"exitCode": -1}) != []  # it can fail
    assert v1_errors("TerminalOutputResponse", {"output": "x"}) != []


async def test_a_flood_is_kept_within_the_cap_and_streamed_whole(work: Path) -> None:
    streamed = [0]

    def count(tid: str, data: bytes) -> None:
        streamed[0] += len(data)

    cap = 64 * 1024
    async with ClientTerminals(
        Recorder(), cwd_of=lambda sid: str(work), on_output=count, max_output_bytes=cap
    ) as service:
        code = "import sys; sys.stdout.buffer.write(b'x' * 5_000_000 + b'END'); sys.stdout.flush()"
        result = await run(service, PY, "-c", code, outputByteLimit=10 * cap)  # the cap wins
        assert result["status"] == {"exitCode": 0, "signal": None}
        assert result["truncated"] is True
        assert len(result["output"]) == cap and result["output"].endswith("xxEND")
        assert streamed[0] == 5_000_003  # the hook saw every byte
        tid = (await service.create(create_params("true")))["terminalId"]
        ids = {"sessionId": "s1", "terminalId": tid}
        await service.wait_for_exit(ids)
        assert await service.kill(ids) == {}  # killing what has ended: nothing to do
        assert await service.wait_for_exit(ids) == {"exitCode": 0, "signal": None}


async def test_a_prompt_on_dev_tty_fails_at_once_instead_of_hanging(terms: Terms) -> None:
    service, _, _ = terms
    code = "import sys\ntry:\n open('/dev/tty', 'r+')\nexcept OSError as e:\n sys.exit(e.errno)"
    result = await run(service, PY, "-c", code)
    assert result["status"]["exitCode"] == 6  # ENXIO: no controlling terminal to prompt on


async def test_long_running_commands_do_not_use_up_the_worker_threads(work: Path) -> None:
    """anyio lends 40 worker threads by default: were each running command to hold one while
    it waits for its exit, the 41st would starve every later start and every file read."""
    limit = anyio.to_thread.current_default_thread_limiter().total_tokens
    async with ClientTerminals(
        Recorder(), cwd_of=lambda sid: str(work), max_terminals=int(limit) + 5, kill_grace=0.2
    ) as service:
        for _ in range(int(limit) + 1):
            await service.create(create_params("sleep", "100"))
        with anyio.fail_after(30):  # a bound against a hang, not a speed assertion
            done = await run(service, "echo", "still starting")
            assert await anyio.to_thread.run_sync(lambda: "a thread is free") == "a thread is free"
        assert done["output"] == "still starting\r\n"


async def test_release_session_stops_only_that_sessions_terminals(work: Path) -> None:
    async with ClientTerminals(Recorder(), cwd_of=lambda sid: str(work), kill_grace=0.2) as svc:
        mine = [(await svc.create(create_params("sleep", "100")))["terminalId"] for _ in range(2)]
        other = await svc.create({"sessionId": "s2", "command": "sleep", "args": ["100"]})
        groups = [svc.process_group(tid) for tid in mine]
        await svc.release_session("s1")
        assert [wait_gone(g) for g in groups if g is not None] == [[], []]
        assert svc.terminal_ids == [other["terminalId"]]
        still = svc.process_group(other["terminalId"])
        assert still is not None and live_members(still)


# -- issue 22, findings 8 to 10: what a person decides, whatever the rules ---------------------


@pytest.mark.parametrize(
    ("name", "risky"),
    [
        ("LANG", False),
        ("_x1", False),
        ("X%", True),
        ("1", True),
        ("A-B", True),
        ("", True),
        ("é", True),
        ("BASH_FUNC_echo%%", True),
        ("BASH_FUNC_echo", True),
        ("BASH_FUNCecho", False),
    ],
)
def test_a_name_no_shell_can_name_is_risky(name: str, risky: bool) -> None:
    assert unnameable(name) is risky


def test_such_variables_make_a_person_decide_and_deny_still_sees_the_program() -> None:
    req = TerminalRequest(
        "s1", "t1", "rm", ("x",), "/w", (("LANG", "C"), ("X%", "1")), None, folder="/w"
    )
    assert req.command_line() == "env LANG=C X%=1 rm x"  # what runs, as a shell is given it
    assert req.judged_line() == "LANG=C rm x"  # what a rule judges
    assert req.person_reasons() == ("it sets variables no shell can name: X%=1",)
    asked = req.permission_request()
    assert asked.description is not None and "X%=1" in asked.description
    decision = Policy(("*",), ("rm *",)).decide(asked)
    assert decision is not None and not decision.allow  # the deny rule sees `rm x`
    plain = TerminalRequest("s1", "t1", "rm", ("x",), "/w", (("LANG", "C"),), None, folder="/w")
    assert plain.person_reasons() == () and plain.permission_request().description is None


@pytest.mark.parametrize(
    ("cwd", "outside"),
    [
        ("/w", False),
        ("/w/sub/deeper", False),
        ("/w2", True),  # a common prefix is not a folder below
        ("/", True),
        ("/elsewhere", True),
    ],
)
def test_a_cwd_outside_the_sessions_folder_makes_a_person_decide(cwd: str, outside: bool) -> None:
    req = TerminalRequest("s1", "t1", "ls", (), cwd, (), None, folder="/w")
    assert req.outside is outside
    assert bool(req.person_reasons()) is outside
    if outside:
        assert req.person_reasons() == ("it runs outside the session's folder /w",)
    unknown = TerminalRequest("s1", "t1", "ls", (), cwd, (), None)  # no folder: not inside one
    assert unknown.outside


async def test_the_request_knows_the_sessions_folder_symlinks_resolved(tmp_path: Path) -> None:
    folder, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    folder.mkdir()
    elsewhere.mkdir()
    (folder / "sub").mkdir()
    (folder / "link").symlink_to(elsewhere)  # inside by name, outside in fact
    approve = Recorder(answer=False)
    async with ClientTerminals(approve, cwd_of=lambda sid: str(folder)) as service:
        for cwd in (None, str(folder / "sub"), str(folder / "link")):
            extra = {} if cwd is None else {"cwd": cwd}
            with pytest.raises(RpcError):
                await service.create(create_params("true", **extra))
    assert [(r.folder, r.outside) for r in approve.seen] == [
        (str(folder.resolve()), False),
        (str(folder.resolve()), False),
        (str(folder.resolve()), True),
    ]
    assert approve.seen[2].cwd == str(elsewhere.resolve())


async def test_program_file_finds_what_exec_would_run(tmp_path: Path) -> None:
    work, first, second = tmp_path / "work", tmp_path / "first", tmp_path / "second"
    for folder in (work, first, second, work / "rel"):
        folder.mkdir()
    for program in (second / "tool", work / "rel" / "tool", work / "local"):
        program.write_text("#!/bin/sh\n")
        program.chmod(0o755)
    (first / "tool").write_text("not executable\n")  # exec passes it by
    path = os.pathsep.join([str(first), "rel", str(second)])
    async with ClientTerminals(
        Recorder(False), cwd_of=lambda sid: str(work), base_env={"PATH": path}
    ) as service:

        def found(command: str) -> str | None:
            return service.program_file(
                TerminalRequest("s1", "t", command, (), str(work), (), None)
            )

        assert found("tool") == str(work / "rel" / "tool")  # a relative PATH entry: from the cwd
        assert found("./local") == f"{work}/./local"  # as written, not normalized
        assert found(str(second / "tool")) == str(second / "tool")
        assert found("missing") is None
        assert found(str(first / "tool")) is None


# -- a whole script in `command` (Kimi CLI, older adapters): run through sh -c --------------


async def test_a_script_in_command_with_no_args_runs_through_a_shell(
    terms: Terms, work: Path
) -> None:
    # finding 3: Kimi sends {"command": "printf ... | wc -c"} with no args; run as a program
    # name it could never start
    service, approve, _ = terms
    result = await run(service, "printf 'ab\\n' > out.txt && wc -c < out.txt")
    assert result["status"] == {"exitCode": 0, "signal": None}
    assert result["output"].strip() == "3"
    [request] = approve.seen
    assert request.script
    assert request.argv == ("/bin/sh", "-c", "printf 'ab\\n' > out.txt && wc -c < out.txt")
    assert request.command_line() == "printf 'ab\\n' > out.txt && wc -c < out.txt"
    assert (work / "out.txt").read_text() == "ab\n"


async def test_a_script_is_judged_as_the_script_a_deny_rule_still_sees_each_command(
    work: Path,
) -> None:
    policy = Policy(("ls *", "echo *"), ("rm *",))
    asked: list[bool | None] = []

    async def judge(request: TerminalRequest) -> bool:
        decision = policy.decide(request.permission_request())
        asked.append(decision.allow if decision else None)
        return bool(decision and decision.allow)

    service = ClientTerminals(judge, cwd_of=lambda sid: str(work))
    (work / "keep").write_text("x")
    async with service:
        with pytest.raises(RpcError) as info:
            await service.create(create_params("ls -la && rm -f keep"))
        assert info.value.code == NOT_ALLOWED
        assert (await run(service, "echo one two"))["output"] == "one two\r\n"
    assert asked == [False, True]
    assert (work / "keep").exists()


async def test_a_program_whose_name_has_a_space_still_runs_as_a_program(
    terms: Terms, work: Path
) -> None:
    service, approve, _ = terms
    program = work / "my tool"
    program.write_text("#!/bin/sh\necho ran as a program\n")
    program.chmod(0o755)
    result = await run(service, str(program))
    assert result["output"] == "ran as a program\r\n"
    [request] = approve.seen
    assert not request.script and request.argv == (str(program),)


def test_only_a_command_with_whitespace_and_no_args_reads_as_a_script() -> None:
    assert reads_as_script("ls -la", ())
    assert reads_as_script("make\ttest", ())
    assert not reads_as_script("ls", ())
    assert not reads_as_script("python3 ", ())  # a stray space is not a script
    assert not reads_as_script("ls -la", ("x",))


# -- round 3: the program is the file found when asked; a relative PATH entry --------------


def planted(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / name
    program.write_text("#!/bin/sh\necho planted\n")
    program.chmod(0o755)
    return program


async def test_the_program_is_the_file_found_when_asked_started_by_its_path(
    work: Path, tmp_path: Path
) -> None:
    tools = tmp_path / "tools"
    tool = planted(tools, "tool")
    approve = Recorder()
    env = {"PATH": f"{tools}:/usr/bin:/bin"}
    async with ClientTerminals(approve, cwd_of=lambda sid: str(work), base_env=env) as service:
        result = await run(service, "tool", "x")
        [request] = approve.seen
        assert request.program == str(tool) and request.search_path is None
        assert request.argv == ("tool", "x") and request.executable == str(tool)
        assert request.judged_line() == "tool x"
        assert result["output"] == "planted\r\n"
        # started by its path, with its argv[0] as the agent named it (as a shell passes it)
        (tools / "mysh").symlink_to("/bin/sh")
        said = await run(service, "mysh", "-c", 'echo "$0"')
        assert approve.seen[-1].executable == str(tools / "mysh")
        assert said["output"] == "mysh\r\n"
        # a file named like a whole script is that file, one word no rule approves
        script = planted(tools, "echo hi; echo ok")
        await run(service, "echo hi; echo ok")
        named = approve.seen[-1]
        assert not named.script and named.executable == str(script)
        assert named.argv == ("echo hi; echo ok",)
        assert named.judged_line() == "'echo hi; echo ok'"
        assert Policy(("echo *",)).decide(named.permission_request()) is None


@pytest.mark.parametrize("entry", ["", ".", "bin", "node_modules/.bin"])
async def test_a_relative_path_entry_makes_a_person_decide(work: Path, entry: str) -> None:
    approve = Recorder(answer=False)
    path = f"{entry}:/usr/bin:/bin"
    env = {"PATH": path}
    async with ClientTerminals(approve, cwd_of=lambda sid: str(work), base_env=env) as service:
        for params in (create_params("ls", "-l"), create_params("ls -l"), create_params("ls")):
            with pytest.raises(RpcError):
                await service.create(params)
    for request in approve.seen:
        assert request.search_path == path
        line = request.judged_line()
        assert line.startswith(f"PATH={shlex.quote(path)} ")
        assert Policy(("ls*",)).decide(request.permission_request()) is None
        assert any("PATH has entries relative" in r for r in request.person_reasons())
        assert Policy(("*",), ("ls*",)).decide(request.permission_request()).allow is False  # type: ignore[union-attr]
    assert approve.seen[0].program == shutil.which("ls", path="/usr/bin:/bin")
    assert approve.seen[1].script  # the script, its names looked up by sh on that PATH


async def test_a_relative_path_entry_finds_the_folders_file_and_says_so(work: Path) -> None:
    ls = planted(work, "ls")
    approve = Recorder(answer=False)
    env = {"PATH": ":/usr/bin:/bin"}
    async with ClientTerminals(approve, cwd_of=lambda sid: str(work), base_env=env) as service:
        with pytest.raises(RpcError):
            await service.create(create_params("ls", "-l"))
    [request] = approve.seen
    assert request.executable == str(ls) and request.argv == ("ls", "-l")
    assert request.judged_line() == "PATH=:/usr/bin:/bin ls -l"
    [reason] = request.person_reasons()
    assert f"ls is {ls}" in reason
