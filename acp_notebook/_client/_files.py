"""The client file system: ACP v1's ``fs/read_text_file`` and ``fs/write_text_file``.

`ClientFiles` answers both (params and results are the v1 wire dicts) for the sessions that
``cwd_of`` knows, each confined to its folder unless the notebook allows more:

* Paths must be absolute. They are resolved with every symlink followed *before* any check,
  and the file that is then opened is checked again to be that one (``/proc/self/fd``), so a
  symlink swapped in between cannot lead elsewhere.
* A read inside the session's folder just happens. A read outside it happens only when the
  injected ``approve`` callback returns ``True`` for a `ReadRequest`. So does a read of a
  regular file inside it that may be a file outside under another name (finding 17 of issue
  22): one with more than one hard link, or on another device than the folder (a mount). It is
  checked on the opened file, and the very file checked is the one read. ``line`` is 1-based
  (0 reads as 1), ``limit`` counts lines; lines keep their line endings.
* A write always goes through ``approve(WriteRequest(...))``, which carries the old and the new
  text for a diff card, and happens only after ``True``: atomically (a temporary file in the
  same folder, fsync, rename over the target, fsync of the folder), keeping the old file's
  mode. Missing parent folders are created only inside the session's folder, and only after the
  allow. If the file changed after it was shown, nothing is written.
* Anything but an explicit ``True`` (see `_approval.ask`) refuses: nothing is read, written or
  created. Only regular files are read or replaced; a file over ``max_bytes`` is refused.

Errors are `RpcError`: ``-32602`` for malformed params, a relative path, a file that is not
UTF-8 text, not a regular file or too large; ``-32002`` for an unknown session or a missing
file or folder; `_approval.NOT_ALLOWED` for a refusal; ``-32603`` when the write fails.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Final, Literal

import anyio
from pydantic import Field, ValidationError

from .._connection._errors import INTERNAL_ERROR, INVALID_PARAMS, RpcError
from .._protocol import ErrorCode
from .._protocol._base import WireModel
from ._approval import Approve, ask, refusal

__all__ = ["MAX_FILE_BYTES", "METHODS", "ClientFiles", "ReadRequest", "WriteRequest"]

MAX_FILE_BYTES: Final = 16 * 2**20
METHODS: Final = frozenset({"fs/read_text_file", "fs/write_text_file"})
_PIECE_BYTES: Final = 64 * 1024
RESOURCE_NOT_FOUND: Final = ErrorCode.RESOURCE_NOT_FOUND


class _ReadParams(WireModel):
    session_id: str
    path: str
    line: int | None = Field(default=None, ge=0)
    limit: int | None = Field(default=None, ge=0)


class _WriteParams(WireModel):
    session_id: str
    path: str
    content: str


#: Why a file inside the session's folder is read only after an allow: it has more than one
#: hard link (another name may lie outside the folder), or it is on another device than the
#: folder (a mount: its inode lies outside the folder's file system).
InsideBut = Literal["hard_link", "other_device"]


@dataclass(frozen=True)
class ReadRequest:
    """A read which ``approve`` must allow: outside the session's folder, or of a file inside
    it that may be one outside (``inside_but`` says why)."""

    session_id: str
    path: str  # as the agent wrote it
    resolved: str  # with every symlink followed: what would be read
    cwd: str  # the session's folder, resolved
    line: int | None
    limit: int | None
    inside_but: InsideBut | None = None  # None: the file is outside the folder
    links: int = 1  # its number of hard links

    @property
    def why(self) -> str:
        """Why it is asked, as the card and the refusal say it."""
        if self.inside_but == "hard_link":
            return (
                f"a hard link ({self.links} names): the same file may lie outside the "
                f"session's folder {self.cwd}"
            )
        if self.inside_but == "other_device":
            return f"on another device than the session's folder {self.cwd} (a mount)"
        return f"outside the session's folder {self.cwd}"


@dataclass(frozen=True)
class WriteRequest:
    """A write, which ``approve`` must allow: the card shows ``old_text`` against ``new_text``."""

    session_id: str
    path: str
    resolved: str
    cwd: str
    old_text: str | None  # None: the file does not exist yet (undecodable bytes as U+FFFD)
    new_text: str
    new_dirs: tuple[str, ...]  # folders that will be created first, outermost first
    inside_cwd: bool


def _invalid(exc: ValidationError) -> RpcError:
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first.get("loc", ()))
    return RpcError(INVALID_PARAMS, f"invalid params: {where}: {first.get('msg')}", {"at": where})


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _opened_path(fd: int) -> str | None:
    """The path the kernel has for an open file (None where /proc cannot say)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None


def _open_checked(path: str, flags: int, *, dir_fd: int | None = None, expect: str) -> int:
    """Open without following a last symlink; raise unless the file opened is ``expect``."""
    fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    opened = _opened_path(fd)
    if opened is not None and opened != expect:
        os.close(fd)
        raise RpcError(
            INVALID_PARAMS, f"{expect} changed while it was opened", {"reason": "path_changed"}
        )
    return fd


def _not_regular(path: str) -> RpcError:
    return RpcError(INVALID_PARAMS, f"not a regular file: {path}", {"reason": "not_a_file"})


def _check_regular(fd: int, path: str) -> None:
    """Close ``fd`` and refuse unless it is a regular file (not a folder, FIFO, device)."""
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise _not_regular(path)


def _inside_but(fd: int, cwd: str) -> tuple[InsideBut, int] | None:
    """Why the open file ``fd``, inside ``cwd``, may be a file outside it (and its number of
    links), or None. Not a regular file: None (`_read_lines` refuses it)."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        return None
    if info.st_nlink > 1:
        return "hard_link", info.st_nlink
    if info.st_dev != os.stat(cwd).st_dev:
        return "other_device", info.st_nlink
    return None


def _too_large(path: str, limit: int) -> RpcError:
    return RpcError(
        INVALID_PARAMS,
        f"{path} is larger than {limit} bytes",
        {"reason": "too_large", "limit": limit},
    )


def _read_lines(fd: int, path: str, line: int | None, limit: int | None, max_bytes: int) -> str:
    """Lines ``line`` (1-based) to ``line + limit - 1`` of an open regular file; closes ``fd``."""
    _check_regular(fd, path)
    with os.fdopen(fd, "rb") as f:
        first = max(line or 1, 1)
        number, taken, size = 1, 0, 0
        kept: list[bytes] = []
        while limit is None or taken < limit:
            piece = f.readline(_PIECE_BYTES)  # a piece of a line: one long line is no problem
            if not piece:
                break
            if number >= first:
                size += len(piece)
                if size > max_bytes:
                    raise _too_large(path, max_bytes)
                kept.append(piece)
            if piece.endswith(b"\n"):
                if number >= first:
                    taken += 1
                number += 1
    try:
        return b"".join(kept).decode("utf-8")
    except UnicodeDecodeError:
        raise RpcError(
            INVALID_PARAMS, f"{path} is not UTF-8 text", {"reason": "not_text"}
        ) from None


def _read_old(path: str, max_bytes: int, dir_fd: int | None = None) -> bytes | None:
    """The current bytes of ``path`` (None if there is no such file)."""
    try:
        fd = os.open(
            path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=dir_fd
        )
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a symlink appeared where the resolved file was
            raise RpcError(
                INVALID_PARAMS, f"{path} changed while it was opened", {"reason": "path_changed"}
            ) from None
        raise
    _check_regular(fd, path)
    with os.fdopen(fd, "rb") as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise _too_large(path, max_bytes)
    return data


def _missing_dirs(folder: str) -> list[str]:
    """``folder`` and its missing parents, outermost first (empty when it exists)."""
    missing: list[str] = []
    while not os.path.lexists(folder):
        missing.append(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return missing[::-1]


class ClientFiles:
    """The ``fs/*`` methods of one agent connection.

    ``approve(request)`` gets a `ReadRequest` (a read outside the session's folder) or a
    `WriteRequest` (every write). ``cwd_of(session_id)`` is the session's folder, or None for an
    unknown session."""

    def __init__(
        self,
        approve: Approve[ReadRequest | WriteRequest],
        *,
        cwd_of: Callable[[str], str | os.PathLike[str] | None],
        approve_timeout: float | None = None,
        max_bytes: int = MAX_FILE_BYTES,
    ) -> None:
        self._approve = approve
        self._cwd_of = cwd_of
        self.approve_timeout = approve_timeout
        self.max_bytes = max_bytes

    async def handle(self, method: str, params: Any) -> dict[str, Any]:
        if method == "fs/read_text_file":
            return await self.read_text_file(params)
        if method == "fs/write_text_file":
            return await self.write_text_file(params)
        raise RpcError(ErrorCode.METHOD_NOT_FOUND, f"method not found: {method}")

    def _where(self, session_id: str, path: str) -> tuple[str, str]:
        """(the session's folder, the path resolved), both with symlinks followed."""
        cwd = self._cwd_of(session_id)
        if cwd is None:
            raise RpcError(
                RESOURCE_NOT_FOUND, f"unknown session {session_id!r}", {"sessionId": session_id}
            )
        if "\x00" in path or not os.path.isabs(path):
            raise RpcError(INVALID_PARAMS, f"not an absolute path: {path!r}", {"at": "path"})
        return os.path.realpath(os.fspath(cwd)), os.path.realpath(path)

    # -- fs/read_text_file ---------------------------------------------------------------

    async def read_text_file(self, params: Any) -> dict[str, Any]:
        try:
            parsed = _ReadParams.model_validate(params)
        except ValidationError as exc:
            raise _invalid(exc) from None
        cwd, resolved = self._where(parsed.session_id, parsed.path)
        request = ReadRequest(
            parsed.session_id, parsed.path, resolved, cwd, parsed.line, parsed.limit
        )
        if not _inside(resolved, cwd):  # asked before it is even looked for
            await self._ask_read(request)
        fd = await anyio.to_thread.run_sync(self._open, resolved)
        try:
            suspect = None
            if _inside(resolved, cwd):
                suspect = await anyio.to_thread.run_sync(_inside_but, fd, cwd)
            if suspect is not None:
                inside_but, links = suspect
                await self._ask_read(replace(request, inside_but=inside_but, links=links))
        except BaseException:
            os.close(fd)
            raise
        # the file checked is the one read (`_read_lines` closes it)
        content = await anyio.to_thread.run_sync(
            _read_lines, fd, resolved, parsed.line, parsed.limit, self.max_bytes
        )
        return {"content": content}

    async def _ask_read(self, request: ReadRequest) -> None:
        verdict = await ask(self._approve, request, timeout=self.approve_timeout)
        if not verdict.allowed:
            raise refusal(f"reading {request.resolved} ({request.why})", verdict)

    def _open(self, resolved: str) -> int:
        try:
            fd = _open_checked(resolved, os.O_RDONLY | os.O_NONBLOCK, expect=resolved)
        except FileNotFoundError:
            raise RpcError(
                RESOURCE_NOT_FOUND, f"no such file: {resolved}", {"path": resolved}
            ) from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise RpcError(
                    INVALID_PARAMS,
                    f"{resolved} changed while it was opened",
                    {"reason": "path_changed"},
                ) from None
            raise RpcError(INVALID_PARAMS, f"cannot read {resolved}: {exc.strerror}") from None
        return fd

    # -- fs/write_text_file --------------------------------------------------------------

    async def write_text_file(self, params: Any) -> dict[str, Any]:
        try:
            parsed = _WriteParams.model_validate(params)
        except ValidationError as exc:
            raise _invalid(exc) from None
        cwd, resolved = self._where(parsed.session_id, parsed.path)
        inside = _inside(resolved, cwd)
        try:
            old, new_dirs = await anyio.to_thread.run_sync(self._prepare, resolved, cwd, inside)
        except OSError as exc:
            raise RpcError(INVALID_PARAMS, f"cannot read {resolved}: {exc.strerror}") from None
        request = WriteRequest(
            session_id=parsed.session_id,
            path=parsed.path,
            resolved=resolved,
            cwd=cwd,
            old_text=None if old is None else old.decode("utf-8", "replace"),
            new_text=parsed.content,
            new_dirs=tuple(new_dirs),
            inside_cwd=inside,
        )
        verdict = await ask(self._approve, request, timeout=self.approve_timeout)
        if not verdict.allowed:
            raise refusal(f"writing {resolved}", verdict)
        await anyio.to_thread.run_sync(self._write, request, old)
        return {}

    def _prepare(self, resolved: str, cwd: str, inside: bool) -> tuple[bytes | None, list[str]]:
        """What is there now, and which folders a write would create (checked, not made)."""
        if os.path.isdir(resolved):
            raise _not_regular(resolved)
        new_dirs = _missing_dirs(os.path.dirname(resolved))
        if new_dirs and not (inside and all(_inside(d, cwd) for d in new_dirs)):
            raise RpcError(
                RESOURCE_NOT_FOUND,
                f"no such folder: {new_dirs[0]} (folders are only created inside {cwd})",
                {"path": new_dirs[0]},
            )
        if new_dirs:
            return None, new_dirs
        return _read_old(resolved, self.max_bytes), []

    def _write(self, request: WriteRequest, old: bytes | None) -> None:
        folder, name = os.path.split(request.resolved)
        for new in request.new_dirs:
            with contextlib.suppress(FileExistsError):
                os.mkdir(new)
            if os.path.realpath(new) != new or not os.path.isdir(new):
                raise RpcError(INVALID_PARAMS, f"{new} changed", {"reason": "path_changed"})
        try:
            dir_fd = _open_checked(folder, os.O_RDONLY | os.O_DIRECTORY, expect=folder)
        except OSError as exc:
            raise RpcError(INTERNAL_ERROR, f"cannot write in {folder}: {exc.strerror}") from None
        tmp = f".{name}.{secrets.token_hex(6)}.tmp"
        try:
            if _read_old(name, self.max_bytes, dir_fd) != old:
                raise RpcError(
                    INVALID_PARAMS,
                    f"{request.resolved} changed after it was shown; not written",
                    {"reason": "changed"},
                )
            mode = 0o666
            with contextlib.suppress(FileNotFoundError):
                mode = stat.S_IMODE(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
            fd = os.open(
                tmp,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                mode,
                dir_fd=dir_fd,
            )
            try:
                if old is not None:
                    os.fchmod(fd, mode)  # exactly the old mode, whatever the umask
                with os.fdopen(fd, "wb", closefd=False) as f:
                    f.write(request.new_text.encode("utf-8"))
                    f.flush()
                    os.fsync(f.fileno())
            finally:
                os.close(fd)
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            os.fsync(dir_fd)
        except RpcError:
            raise
        except OSError as exc:
            raise RpcError(
                INTERNAL_ERROR, f"cannot write {request.resolved}: {exc.strerror}"
            ) from None
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
            os.close(dir_fd)
