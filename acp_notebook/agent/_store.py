"""Sessions of the embedded agent on disk, and their compaction for replay.

Where: ``<data dir>/sessions/<session id>.jsonl``; the data dir is ``--data-dir``, else
``$XDG_DATA_HOME/acp-notebook-agent``, else ``~/.local/share/acp-notebook-agent``.

What: everything a session showed, so that ``session/resume`` can replay it: every prompt, every
agent message, every tool call, all terminal output (base64), and the "always" grants. The first
line is a header ``{"kind": "session", "sessionId", "cwd", "createdAt"}``; later lines are
``{"kind": "update", "update": {...}}`` (every session update the agent sent, in order),
``{"kind": "grant", "key", "allow"}`` (an allow/reject-always choice),
``{"kind": "title", "title"}`` or ``{"kind": "truncated"}`` (the size cap was reached: later
updates were not recorded). A torn last line (crash mid-write) is ignored.

Caps (``Store(max_bytes=, max_age_days=)``; the command line defaults to 50 MiB and 30 days):
when a session is created or resumed, files not modified for ``max_age_days`` are deleted, then
the oldest files until the directory holds at most ``max_bytes``. Files this process writes are
never deleted by it; a session of its own that grows past the cap stops recording updates (its
grants and title are still kept). ``session/list`` filters by ``cwd`` when asked to.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_DAYS",
    "SessionFile",
    "SessionRecord",
    "Store",
    "compact_history",
    "default_data_dir",
]

DEFAULT_MAX_BYTES = 50 * 2**20
DEFAULT_MAX_DAYS = 30.0
# Terminal output is written in batches: at most this much, or this long after the oldest
# line held; any other entry (and `SessionFile.flush`) writes what is held at once.
FLUSH_BYTES = 1 << 20
FLUSH_SECONDS = 1.0

_SESSION_ID = re.compile(r"^[A-Za-z0-9_-]{1,128}$")


def default_data_dir() -> Path:
    """``$XDG_DATA_HOME/acp-notebook-agent``, else ``~/.local/share/acp-notebook-agent``."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "acp-notebook-agent"


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


@dataclass
class SessionRecord:
    """What a session file holds once read back."""

    session_id: str
    cwd: str
    created_at: str
    updated_at: str
    title: str | None = None
    updates: list[dict[str, Any]] = field(default_factory=list)
    grants: dict[str, bool] = field(default_factory=dict)
    truncated: bool = False  # the size cap stopped recording its updates


class SessionFile:
    """Append-only writer for one session (within its store's size cap, if any).

    Terminal output chunks are held and written in batches (``FLUSH_BYTES``, ``FLUSH_SECONDS``;
    appending every chunk once cost a fifth of a flood's time); any other entry writes what is
    held, then itself, at once, so the file's order is the order of the calls. The store's
    readers (`Store.load`, `Store.list`) flush first.
    """

    def __init__(self, path: Path, store: Store | None = None) -> None:
        self.path = path
        self._store = store
        self.truncated = False
        self._held: list[bytes] = []
        self._held_bytes = 0
        self._held_since = 0.0

    def _append(self, entry: dict[str, Any], *, batch: bool = False) -> None:
        line = json.dumps(entry, separators=(",", ":"), ensure_ascii=False) + "\n"
        self._append_line(line.encode("utf-8"), batch=batch)

    def _append_line(self, data: bytes, *, batch: bool) -> None:
        if self._store is not None:
            self._store.written(len(data))  # counted now: the size cap includes what is held
        if not self._held:
            self._held_since = time.monotonic()
        self._held.append(data)
        self._held_bytes += len(data)
        if (
            not batch
            or self._held_bytes >= FLUSH_BYTES
            or time.monotonic() - self._held_since >= FLUSH_SECONDS
        ):
            self.flush()

    def flush(self) -> None:
        """Write what is held."""
        if not self._held:
            return
        data = b"".join(self._held)
        self._held = []
        self._held_bytes = 0
        with self.path.open("ab") as f:
            f.write(data)

    def update(self, update: dict[str, Any], *, encoded: bytes | None = None) -> None:
        """Record ``update``; ``encoded``: its compact JSON, if the caller has it already."""
        if self.truncated:
            return
        if self._store is not None and not self._store.has_room():
            self.truncated = True
            self._append({"kind": "truncated"})
            return
        chunk = update.get("sessionUpdate") == "terminal_output_chunk"
        if encoded is None:
            self._append({"kind": "update", "update": update}, batch=chunk)
        else:
            self._append_line(b'{"kind":"update","update":' + encoded + b"}\n", batch=chunk)

    def grant(self, key: str, allow: bool) -> None:
        self._append({"kind": "grant", "key": key, "allow": allow})

    def title(self, title: str) -> None:
        self._append({"kind": "title", "title": title})


class Store:
    """The directory of session files, capped by ``max_bytes`` and ``max_age_days`` (None: no
    cap)."""

    def __init__(
        self,
        data_dir: Path,
        *,
        max_bytes: int | None = None,
        max_age_days: float | None = None,
    ) -> None:
        self.root = data_dir / "sessions"
        self.max_bytes = max_bytes
        self.max_age_days = max_age_days
        self._mine: set[Path] = set()  # files this process writes: never pruned by it
        self._writers: dict[Path, SessionFile] = {}  # one writer per file (it holds a batch)
        self._total: int | None = None  # bytes in the directory, as last counted plus written

    # -- caps ------------------------------------------------------------------------------
    def size(self) -> int:
        """Bytes held by the session files."""
        return sum(size for _mtime, size, _path in self._files())

    def _files(self) -> list[tuple[float, int, Path]]:
        if not self.root.is_dir():
            return []
        found: list[tuple[float, int, Path]] = []
        for path in self.root.glob("*.jsonl"):
            try:
                st = path.stat()
            except OSError:
                continue
            found.append((st.st_mtime, st.st_size, path))
        return sorted(found)  # oldest first

    def prune(self) -> None:
        """Delete files older than the age cap, then the oldest ones over the size cap."""
        self.flush()  # sizes are read from the files
        files = self._files()
        now = time.time()
        kept: list[tuple[float, int, Path]] = []
        for mtime, size, path in files:
            too_old = self.max_age_days is not None and now - mtime > self.max_age_days * 86400
            if too_old and path not in self._mine and _unlink(path):
                continue
            kept.append((mtime, size, path))
        total = sum(size for _mtime, size, _path in kept)
        if self.max_bytes is not None:
            for _mtime, size, path in kept:
                if total <= self.max_bytes:
                    break
                if path not in self._mine and _unlink(path):
                    total -= size
        self._total = total

    def has_room(self) -> bool:
        """Whether the directory is under the size cap (pruning others' files if need be)."""
        if self.max_bytes is None:
            return True
        if self._total is None or self._total > self.max_bytes:
            self.prune()
        assert self._total is not None
        return self._total <= self.max_bytes

    def written(self, n: int) -> None:
        if self._total is not None:
            self._total += n

    # -- sessions --------------------------------------------------------------------------

    def _path(self, session_id: str) -> Path | None:
        if not _SESSION_ID.match(session_id):
            return None
        return self.root / f"{session_id}.jsonl"

    def create(self, cwd: str) -> tuple[str, SessionFile]:
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.prune()
        session_id = f"sess-{uuid.uuid4().hex}"
        path = self.root / f"{session_id}.jsonl"
        self._mine.add(path)
        file = self._writers[path] = SessionFile(path, self)
        file._append({"kind": "session", "sessionId": session_id, "cwd": cwd, "createdAt": _now()})
        return session_id, file

    def open(self, session_id: str) -> SessionFile | None:
        path = self._path(session_id)
        if path is None or not path.is_file():
            return None
        self._mine.add(path)
        self.prune()
        file = self._writers.get(path)
        if file is None:
            file = self._writers[path] = SessionFile(path, self)
        return file

    def flush(self) -> None:
        """Write what every writer of this store holds."""
        for file in list(self._writers.values()):
            file.flush()

    def load(self, session_id: str) -> SessionRecord | None:
        path = self._path(session_id)
        if path is None or not path.is_file():
            return None
        self.flush()
        return _read(path)

    def list(self) -> list[SessionRecord]:
        """Every readable session, most recently updated first."""
        if not self.root.is_dir():
            return []
        self.flush()
        records = [r for p in self.root.glob("*.jsonl") if (r := _read(p)) is not None]
        records.sort(key=lambda r: r.updated_at, reverse=True)
        return records


def _read(path: Path) -> SessionRecord | None:
    try:
        text = path.read_text("utf-8")
        mtime = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    except (OSError, UnicodeDecodeError):
        return None
    record: SessionRecord | None = None
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # a torn line from a crash
        if not isinstance(entry, dict):
            continue
        kind = entry.get("kind")
        if record is None:
            if kind != "session":
                return None
            record = SessionRecord(
                session_id=str(entry["sessionId"]),
                cwd=str(entry["cwd"]),
                created_at=str(entry.get("createdAt", "")),
                updated_at=mtime.isoformat().replace("+00:00", "Z"),
            )
        elif kind == "update" and isinstance(entry.get("update"), dict):
            record.updates.append(entry["update"])
        elif kind == "grant" and isinstance(entry.get("key"), str):
            record.grants[entry["key"]] = bool(entry.get("allow"))
        elif kind == "title" and isinstance(entry.get("title"), str):
            record.title = entry["title"]
        elif kind == "truncated":
            record.truncated = True
    return record


def _unlink(path: Path) -> bool:
    try:
        path.unlink()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


_CHUNK_TO_MESSAGE = {
    "user_message_chunk": "user_message",
    "agent_message_chunk": "agent_message",
    "agent_thought_chunk": "agent_thought",
}


def _merge_blocks(blocks: list[Any]) -> list[Any]:
    """Join adjacent text blocks (without annotations) so a replayed message reads the same."""
    out: list[Any] = []
    for block in blocks:
        if (
            out
            and isinstance(block, dict)
            and set(block) == {"type", "text"}
            and block["type"] == "text"
            and isinstance(out[-1], dict)
            and set(out[-1]) == {"type", "text"}
            and out[-1]["type"] == "text"
        ):
            out[-1] = {"type": "text", "text": out[-1]["text"] + block["text"]}
        else:
            out.append(dict(block) if isinstance(block, dict) else block)
    return out


def _b64(value: Any) -> bytes:
    try:
        return base64.b64decode(str(value or ""), validate=True)
    except binascii.Error:
        return b""


def compact_history(updates: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Fold recorded live updates into the updates a ``replayFrom: start`` sends.

    * message chunks become one full ``*_message`` per ``messageId``;
    * the updates of one tool call fold (patch rules) into one ``tool_call_update``;
    * a terminal becomes one ``terminal_update`` whose ``output.data`` is all its bytes;
    * ``state_update``s are dropped (replay is history, not the current state).

    Each folded item takes the place of its first live update.
    """
    order: list[tuple[str, str]] = []
    folded: dict[tuple[str, str], dict[str, Any]] = {}
    terminal_bytes: dict[str, bytearray] = {}
    for update in updates:
        tag = update.get("sessionUpdate")
        if tag == "state_update":
            continue
        if tag in _CHUNK_TO_MESSAGE or tag in _CHUNK_TO_MESSAGE.values():
            message_tag = _CHUNK_TO_MESSAGE.get(str(tag), str(tag))
            key = (message_tag, str(update.get("messageId")))
            entry = folded.get(key)
            if entry is None:
                entry = {"sessionUpdate": message_tag, "messageId": update.get("messageId")}
                entry["content"] = []
                folded[key] = entry
                order.append(key)
            if tag in _CHUNK_TO_MESSAGE:
                entry["content"] = [*entry["content"], update.get("content")]
            elif "content" in update:
                entry["content"] = list(update["content"] or [])
            continue
        if tag == "tool_call_update":
            key = ("tool", str(update.get("toolCallId")))
            if key not in folded:
                folded[key] = {}
                order.append(key)
            folded[key].update(update)
            continue
        if tag in ("terminal_update", "terminal_output_chunk"):
            terminal_id = str(update.get("terminalId"))
            key = ("terminal", terminal_id)
            if key not in folded:
                folded[key] = {"sessionUpdate": "terminal_update", "terminalId": terminal_id}
                order.append(key)
                terminal_bytes[terminal_id] = bytearray()
            data = terminal_bytes[terminal_id]
            if tag == "terminal_output_chunk":
                data += _b64(update.get("data"))
            else:
                fields = {k: v for k, v in update.items() if k != "output"}
                folded[key].update(fields)
                output = update.get("output")
                if isinstance(output, dict):  # a snapshot replaces what came before
                    data[:] = _b64(output.get("data"))
            continue
        key = ("other", str(len(order)))
        folded[key] = dict(update)
        order.append(key)
    result: list[dict[str, Any]] = []
    for key in order:
        item = folded[key]
        if key[0] in _CHUNK_TO_MESSAGE.values():
            item = {**item, "content": _merge_blocks(item["content"])}
        elif key[0] == "terminal":
            item = {**item, "output": {"data": base64.b64encode(terminal_bytes[key[1]]).decode()}}
        result.append(item)
    return result
