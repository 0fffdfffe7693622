"""The client file system (acp_notebook/_client/_files.py) on real files, symlinks and folders."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from acp_notebook._client._approval import NOT_ALLOWED
from acp_notebook._client._files import METHODS, ClientFiles, ReadRequest, WriteRequest
from acp_notebook._connection._errors import INVALID_PARAMS, RpcError
from acp_notebook._protocol import ErrorCode

pytestmark = pytest.mark.anyio
NOT_FOUND = ErrorCode.RESOURCE_NOT_FOUND


class Recorder:
    def __init__(self, answer: object = True) -> None:
        self.answer = answer
        self.seen: list[ReadRequest | WriteRequest] = []

    async def __call__(self, request: ReadRequest | WriteRequest) -> bool:
        self.seen.append(request)
        return self.answer  # type: ignore[return-value]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "outside"
    path.mkdir()
    (path / "secret.txt").write_text("secret\n")
    return path


def files(work: Path, answer: object = True) -> tuple[ClientFiles, Recorder]:
    approve = Recorder(answer)
    return ClientFiles(approve, cwd_of=lambda sid: str(work) if sid == "s1" else None), approve


async def read(service: ClientFiles, path: Path | str, **extra: Any) -> str:
    result = await service.read_text_file({"sessionId": "s1", "path": str(path), **extra})
    assert set(result) == {"content"}
    return str(result["content"])


async def write(service: ClientFiles, path: Path | str, content: str) -> dict[str, Any]:
    return await service.write_text_file({"sessionId": "s1", "path": str(path), "content": content})


# -- reads -----------------------------------------------------------------------------------


async def test_a_read_inside_the_folder_needs_no_allow(work: Path) -> None:
    (work / "a.txt").write_text("one\ntwo\r\nthree\nfour")
    service, approve = files(work)
    assert await read(service, work / "a.txt") == "one\ntwo\r\nthree\nfour"
    assert approve.seen == []


@pytest.mark.parametrize(
    ("line", "limit", "content"),
    [
        (None, None, "one\ntwo\nthree\nfour"),
        (1, 2, "one\ntwo\n"),
        (2, None, "two\nthree\nfour"),
        (2, 1, "two\n"),
        (0, 1, "one\n"),  # 0 reads as 1
        (4, 10, "four"),  # the last line has no newline
        (5, None, ""),
        (1, 0, ""),
    ],
)
async def test_line_is_1_based_and_limit_counts_lines(
    work: Path, line: int | None, limit: int | None, content: str
) -> None:
    (work / "a.txt").write_text("one\ntwo\nthree\nfour")
    service, _ = files(work)
    extra = {k: v for k, v in (("line", line), ("limit", limit)) if v is not None}
    assert await read(service, work / "a.txt", **extra) == content


async def test_a_read_outside_needs_an_allow_and_symlinks_are_followed_first(
    work: Path, outside: Path
) -> None:
    (work / "link").symlink_to(outside / "secret.txt")
    (work / "dirlink").symlink_to(outside)
    for path in (outside / "secret.txt", work / "link", work / "dirlink" / "secret.txt"):
        service, approve = files(work, answer=False)
        with pytest.raises(RpcError) as info:
            await read(service, path)
        assert info.value.code == NOT_ALLOWED, path
        [request] = approve.seen
        assert isinstance(request, ReadRequest)
        assert request.resolved == str(outside / "secret.txt")
        assert request.path == str(path) and request.cwd == str(work)
        service, approve = files(work, answer=True)
        assert await read(service, path) == "secret\n"
        assert len(approve.seen) == 1


async def test_a_dotdot_path_is_resolved_before_the_check(work: Path, outside: Path) -> None:
    service, approve = files(work, answer=False)
    with pytest.raises(RpcError) as info:
        await read(service, f"{work}/../outside/secret.txt")
    assert info.value.code == NOT_ALLOWED
    assert approve.seen[0].resolved == str(outside / "secret.txt")


async def test_a_missing_file_outside_is_asked_about_before_it_is_looked_for(
    work: Path, outside: Path
) -> None:
    service, approve = files(work, answer=False)
    with pytest.raises(RpcError) as info:
        await read(service, outside / "nothing-here")
    assert len(approve.seen) == 1
    assert info.value.code == NOT_ALLOWED  # not "not found": nothing is said about outside
    service, _ = files(work)
    with pytest.raises(RpcError) as info:
        await read(service, work / "nothing-here")
    assert info.value.code == NOT_FOUND


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({"sessionId": "s1", "path": "relative.txt"}, INVALID_PARAMS),
        ({"sessionId": "s1", "path": "/a\x00b"}, INVALID_PARAMS),
        ({"sessionId": "s1"}, INVALID_PARAMS),
        ({"sessionId": "s1", "path": "/x", "line": -1}, INVALID_PARAMS),
        ({"sessionId": "s1", "path": "/x", "limit": "3"}, INVALID_PARAMS),
        ({"sessionId": "nope", "path": "/x"}, NOT_FOUND),
    ],
)
async def test_bad_read_params(work: Path, params: dict[str, Any], code: int) -> None:
    service, approve = files(work)
    with pytest.raises(RpcError) as info:
        await service.read_text_file(params)
    assert info.value.code == code
    assert approve.seen == []


async def test_only_regular_utf8_files_of_bounded_size_are_read(work: Path) -> None:
    os.mkfifo(work / "fifo")  # opening it for reading would block: it is refused instead
    (work / "bin").write_bytes(b"\xff\xfe")
    (work / "big").write_text("x" * 100 + "\n" + "y\n")
    service = ClientFiles(Recorder(), cwd_of=lambda sid: str(work), max_bytes=50)
    for name, reason in [("fifo", "not_a_file"), ("bin", "not_text"), ("big", "too_large")]:
        with pytest.raises(RpcError) as info:
            await read(service, work / name)
        assert info.value.code == INVALID_PARAMS and info.value.data["reason"] == reason, name
    with pytest.raises(RpcError) as info:
        await read(service, work)
    assert info.value.data["reason"] == "not_a_file"
    assert await read(service, work / "big", line=2) == "y\n"  # within the bound


# -- writes ----------------------------------------------------------------------------------


async def test_a_write_shows_old_and_new_text_and_writes_after_the_allow(work: Path) -> None:
    target = work / "a.txt"
    target.write_text("old\n")
    target.chmod(0o640)
    service, approve = files(work)
    assert await write(service, target, "new\n") == {}
    assert target.read_text() == "new\n"
    assert oct(target.stat().st_mode & 0o777) == oct(0o640)
    [request] = approve.seen
    assert isinstance(request, WriteRequest)
    assert (request.old_text, request.new_text) == ("old\n", "new\n")
    assert request.inside_cwd and request.new_dirs == ()
    assert sorted(os.listdir(work)) == ["a.txt"]  # no temporary file left


async def test_a_new_file_in_new_folders_inside_the_cwd(work: Path) -> None:
    service, approve = files(work)
    target = work / "x" / "y" / "new.txt"
    await write(service, target, "hello")
    assert target.read_text() == "hello"
    [request] = approve.seen
    assert isinstance(request, WriteRequest)
    assert request.old_text is None
    assert request.new_dirs == (str(work / "x"), str(work / "x" / "y"))


async def test_folders_are_never_created_outside_the_cwd(work: Path, outside: Path) -> None:
    service, approve = files(work)
    with pytest.raises(RpcError) as info:
        await write(service, outside / "new" / "f.txt", "x")
    assert info.value.code == NOT_FOUND
    assert not (outside / "new").exists() and approve.seen == []


async def test_a_write_outside_the_cwd_is_asked_and_marked_outside(
    work: Path, outside: Path
) -> None:
    service, approve = files(work)
    await write(service, outside / "secret.txt", "changed\n")
    assert (outside / "secret.txt").read_text() == "changed\n"
    request = approve.seen[0]
    assert isinstance(request, WriteRequest) and not request.inside_cwd


async def test_a_write_through_a_symlink_replaces_its_target_and_keeps_the_link(
    work: Path, outside: Path
) -> None:
    (work / "link").symlink_to(outside / "secret.txt")
    service, approve = files(work)
    await write(service, work / "link", "via link\n")
    assert (work / "link").is_symlink()
    assert (outside / "secret.txt").read_text() == "via link\n"
    request = approve.seen[0]
    assert isinstance(request, WriteRequest)
    assert request.resolved == str(outside / "secret.txt") and not request.inside_cwd


async def test_a_rejected_write_leaves_everything_untouched_byte_for_byte(work: Path) -> None:
    target = work / "a.txt"
    original = b"caf\xc3\xa9\r\n\x00\xffbinary tail"
    target.write_bytes(original)
    before = os.stat(target)
    service, approve = files(work, answer=False)
    with pytest.raises(RpcError) as info:
        await write(service, target, "overwritten")
    assert info.value.code == NOT_ALLOWED and info.value.data == {"reason": "rejected"}
    assert target.read_bytes() == original
    after = os.stat(target)
    assert (after.st_ino, after.st_mtime_ns, after.st_mode) == (
        before.st_ino,
        before.st_mtime_ns,
        before.st_mode,
    )
    with pytest.raises(RpcError):
        await write(service, work / "d1" / "d2" / "new.txt", "x")
    assert sorted(os.listdir(work)) == ["a.txt"]  # no folder, no temporary file
    request = approve.seen[0]
    assert isinstance(request, WriteRequest)
    assert request.old_text == original.decode("utf-8", "replace")


async def test_a_file_changed_after_it_was_shown_is_not_written(work: Path) -> None:
    target = work / "a.txt"
    target.write_text("shown\n")

    async def approve_then_someone_edits(request: ReadRequest | WriteRequest) -> bool:
        target.write_text("edited meanwhile\n")
        return True

    service = ClientFiles(approve_then_someone_edits, cwd_of=lambda sid: str(work))
    with pytest.raises(RpcError) as info:
        await write(service, target, "agent's\n")
    assert info.value.data["reason"] == "changed"
    assert target.read_text() == "edited meanwhile\n"
    assert sorted(os.listdir(work)) == ["a.txt"]


async def test_a_write_onto_a_folder_or_fifo_is_refused(work: Path) -> None:
    os.mkfifo(work / "fifo")
    service, approve = files(work)
    for path in (work, work / "fifo"):
        with pytest.raises(RpcError) as info:
            await write(service, path, "x")
        assert info.value.data["reason"] == "not_a_file"
    assert approve.seen == []


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({"sessionId": "s1", "path": "rel.txt", "content": "x"}, INVALID_PARAMS),
        ({"sessionId": "s1", "path": "/x"}, INVALID_PARAMS),
        ({"sessionId": "s1", "path": "/x", "content": 3}, INVALID_PARAMS),
        ({"sessionId": "nope", "path": "/x", "content": "x"}, NOT_FOUND),
    ],
)
async def test_bad_write_params(work: Path, params: dict[str, Any], code: int) -> None:
    service, approve = files(work)
    with pytest.raises(RpcError) as info:
        await service.write_text_file(params)
    assert info.value.code == code
    assert approve.seen == []


async def test_handle_dispatches_every_v1_fs_method(work: Path) -> None:
    schema = Path(__file__).parent / "oracle/node_modules/@agentclientprotocol/sdk/schema/v1"
    defs = json.loads((schema / "schema.json").read_text())["$defs"]
    client_methods = {d["x-method"] for d in defs.values() if d.get("x-side") == "client"}
    assert {m for m in client_methods if m.startswith("fs/")} == METHODS
    service, _ = files(work)
    params = {"sessionId": "s1", "path": str(work / "f"), "content": "1"}
    assert await service.handle("fs/write_text_file", params) == {}
    params = {"sessionId": "s1", "path": str(work / "f")}
    assert await service.handle("fs/read_text_file", params) == {"content": "1"}
    with pytest.raises(RpcError) as info:
        await service.handle("fs/delete", {})
    assert info.value.code == ErrorCode.METHOD_NOT_FOUND


def v1_errors(type_name: str, instance: Any) -> list[str]:
    """Schema errors of ``instance`` against the pinned SDK's v1 ``$defs/type_name``."""
    from jsonschema import Draft202012Validator

    schema = Path(__file__).parent / "oracle/node_modules/@agentclientprotocol/sdk/schema/v1"
    defs = json.loads((schema / "schema.json").read_text())["$defs"]
    validator = Draft202012Validator({"$ref": f"#/$defs/{type_name}", "$defs": defs})
    return [e.message for e in validator.iter_errors(instance)]


async def test_every_answer_is_a_valid_v1_response(work: Path) -> None:
    service, _ = files(work)
    write_params = {"sessionId": "s1", "path": str(work / "f.txt"), "content": "a\nb\n"}
    assert v1_errors("WriteTextFileRequest", write_params) == []
    assert v1_errors("WriteTextFileResponse", await service.write_text_file(write_params)) == []
    read_params = {"sessionId": "s1", "path": str(work / "f.txt"), "line": 2, "limit": 1}
    assert v1_errors("ReadTextFileRequest", read_params) == []
    result = await service.read_text_file(read_params)
    assert result == {"content": "b\n"}
    assert v1_errors("ReadTextFileResponse", result) == []


# -- hard links and mounts (finding 17 of issue 22) --------------------------------------------


async def test_a_hard_link_inside_to_a_file_outside_is_read_only_after_an_allow(
    work: Path, outside: Path
) -> None:
    os.link(outside / "secret.txt", work / "notes.txt")  # same inode, a name inside the folder
    service, approve = files(work, answer=False)
    with pytest.raises(RpcError) as info:
        await read(service, work / "notes.txt")
    assert info.value.code == NOT_ALLOWED
    assert "secret" not in str(info.value) and "secret" not in repr(info.value.data)
    [request] = approve.seen
    assert isinstance(request, ReadRequest)
    assert request.inside_but == "hard_link" and request.links == 2
    assert request.resolved == str(work / "notes.txt")
    assert "a hard link (2 names)" in request.why and str(work) in request.why
    assert "a hard link (2 names)" in str(info.value)  # the refusal says why too
    service, approve = files(work, answer=True)
    assert await read(service, work / "notes.txt") == "secret\n"
    assert len(approve.seen) == 1


async def test_a_file_on_another_device_than_the_folder_is_asked(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mount inside the folder (faked: the folder's device number is made to differ)."""
    from acp_notebook._client import _files

    (work / "mounted.txt").write_text("from elsewhere\n")
    real_stat = os.stat

    def stat(path: Any, *args: Any, **kwargs: Any) -> Any:
        info = real_stat(path, *args, **kwargs)
        if os.fspath(path) == str(work):
            fields = list(info)
            fields[2] = info.st_dev + 1  # st_dev
            return os.stat_result(fields)
        return info

    monkeypatch.setattr(_files.os, "stat", stat)
    service, approve = files(work, answer=False)
    with pytest.raises(RpcError) as info:
        await read(service, work / "mounted.txt")
    assert info.value.code == NOT_ALLOWED
    [request] = approve.seen
    assert isinstance(request, ReadRequest) and request.inside_but == "other_device"
    assert "on another device" in request.why


async def test_a_file_with_one_link_or_a_fifo_inside_is_not_asked_about(
    work: Path,
) -> None:
    (work / "plain.txt").write_text("x")
    os.mkfifo(work / "fifo")
    service, approve = files(work, answer=False)
    assert await read(service, work / "plain.txt") == "x"  # one link, same device: no ask
    with pytest.raises(RpcError) as info:
        await read(service, work / "fifo")
    assert info.value.data == {"reason": "not_a_file"}
    assert approve.seen == []
