"""Tool-call diffs: parse ``git_patch`` text and render changes as escaped HTML.

A v2 diff is ``{changes: [...], patch?: {format, text}}``. ``changes`` is the
authoritative list of affected paths; ``patch`` is optional text for some or
all of them. Everything here works on the wire form (plain dicts), so it can
render a diff that the models kept as an unknown variant just as well.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any, Literal

__all__ = [
    "DiffBudget",
    "DiffEntry",
    "DiffFile",
    "DiffHunk",
    "DiffLine",
    "DiffView",
    "build_diff",
    "diff_html",
    "parse_git_patch",
]

LineKind = Literal["context", "add", "del", "note"]


@dataclass(frozen=True)
class DiffLine:
    kind: LineKind
    text: str  # without the leading marker
    old_no: int | None = None
    new_no: int | None = None


@dataclass(frozen=True)
class DiffHunk:
    header: str  # the whole ``@@ ... @@ section`` line
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    section: str
    lines: tuple[DiffLine, ...]


@dataclass(frozen=True)
class DiffFile:
    old_path: str | None  # None for a new file
    new_path: str | None  # None for a deleted file
    new_file: bool = False
    deleted: bool = False
    renamed: bool = False
    copied: bool = False
    binary: bool = False
    old_mode: str | None = None
    new_mode: str | None = None
    similarity: str | None = None
    headers: tuple[str, ...] = ()  # extended header lines, as sent
    hunks: tuple[DiffHunk, ...] = ()

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or ""


@dataclass(frozen=True)
class DiffEntry:
    """One item of ``changes``, with its part of the patch when there is one."""

    operation: str
    path: str | None
    old_path: str | None = None
    file_type: str | None = None
    mime_type: str | None = None
    file: DiffFile | None = None
    raw: Mapping[str, Any] = field(default_factory=dict)

    @property
    def known(self) -> bool:
        return self.operation in _OPERATIONS


@dataclass(frozen=True)
class DiffView:
    entries: tuple[DiffEntry, ...]
    patch_format: str | None = None
    patch_text: str | None = None  # kept when the format is not ``git_patch``
    extra_files: tuple[DiffFile, ...] = ()  # patch sections not named in ``changes``


_OPERATIONS = frozenset({"add", "delete", "modify", "move", "copy"})
_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@ ?(.*)")
_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "a": "\a", "b": "\b", "f": "\f"}
_ESCAPES |= {"r": "\r", "v": "\v"}


def _unquote(path: str) -> str:
    """Undo git's C-style quoting of unusual path names."""
    if len(path) < 2 or not (path.startswith('"') and path.endswith('"')):
        return path
    body = path[1:-1]
    out = bytearray()
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in "01234567" and re.fullmatch(r"[0-7]{3}", body[i + 1 : i + 4]):
                out.append(int(body[i + 1 : i + 4], 8) & 0xFF)
                i += 4
                continue
            out += _ESCAPES.get(nxt, nxt).encode()
            i += 2
            continue
        out += c.encode()
        i += 1
    return out.decode("utf-8", errors="replace")


def _strip_prefix(path: str | None, prefix: str) -> str | None:
    if path is None or path == "/dev/null":
        return None
    return path[len(prefix) :] if prefix and path.startswith(prefix) else path


def _header_paths(rest: str) -> tuple[str | None, str | None]:
    """Paths from ``diff --git <old> <new>``; they may contain spaces."""
    if rest.startswith('"'):
        m = re.match(r'("(?:[^"\\]|\\.)*") (.*)', rest)
        if m:
            return _unquote(m.group(1)), _unquote(m.group(2))
    if rest.endswith('"'):
        m = re.match(r'(.*?) ("(?:[^"\\]|\\.)*")$', rest)
        if m:
            return m.group(1), _unquote(m.group(2))
    half = len(rest) // 2
    if len(rest) % 2 == 1 and rest[half] == " ":
        old, new = rest[:half], rest[half + 1 :]
        if old == new or old.removeprefix("a/") == new.removeprefix("b/"):
            return old, new
    m = re.match(r"(a/.*) (b/.*)$", rest)
    if m:
        return m.group(1), m.group(2)
    parts = rest.split(" ")
    if len(parts) == 2:
        return parts[0], parts[1]
    return None, None


class _FileBuilder:
    def __init__(self, header_rest: str) -> None:
        old, new = _header_paths(header_rest)
        self.prefixed = bool(old and new and old.startswith("a/") and new.startswith("b/"))
        self.old: str | None = old
        self.new: str | None = new
        self.old_exact = False  # from "rename from"/"copy from": no a/ prefix
        self.new_exact = False
        self.flags: dict[str, Any] = {}
        self.headers: list[str] = []
        self.hunks: list[DiffHunk] = []

    def build(self) -> DiffFile:
        old = _strip_prefix(self.old, "a/" if self.prefixed and not self.old_exact else "")
        new = _strip_prefix(self.new, "b/" if self.prefixed and not self.new_exact else "")
        if self.flags.get("new_file"):
            old = None
        if self.flags.get("deleted"):
            new = None
        return DiffFile(
            old_path=old,
            new_path=new,
            headers=tuple(self.headers),
            hunks=tuple(self.hunks),
            **self.flags,
        )


def parse_git_patch(text: str) -> list[DiffFile]:
    """Split git ``--patch`` text into files and hunks.

    Hunk bodies are consumed by the line counts in their headers, so a removed
    line that itself starts with ``--`` is never mistaken for a file header.
    Text before the first ``diff --git`` (or between sections) is ignored.
    """
    files: list[DiffFile] = []
    cur: _FileBuilder | None = None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if line.startswith("diff --git "):
            if cur is not None:
                files.append(cur.build())
            cur = _FileBuilder(line[len("diff --git ") :])
            continue
        if cur is None:
            continue
        m = _HUNK.match(line)
        if m:
            i = _read_hunk(cur, line, m, lines, i)
            continue
        _file_header(cur, line)
    if cur is not None:
        files.append(cur.build())
    return files


def _file_header(cur: _FileBuilder, line: str) -> None:
    cur.headers.append(line)
    key = line.partition(" ")[0]
    if line.startswith("--- "):
        if not cur.old_exact:
            cur.old = _unquote(line[4:].split("\t")[0])
    elif line.startswith("+++ "):
        if not cur.new_exact:
            cur.new = _unquote(line[4:].split("\t")[0])
    elif line.startswith("new file mode "):
        cur.flags["new_file"] = True
        cur.flags["new_mode"] = line.rsplit(" ", 1)[1]
    elif line.startswith("deleted file mode "):
        cur.flags["deleted"] = True
        cur.flags["old_mode"] = line.rsplit(" ", 1)[1]
    elif line.startswith("old mode "):
        cur.flags["old_mode"] = line.rsplit(" ", 1)[1]
    elif line.startswith("new mode "):
        cur.flags["new_mode"] = line.rsplit(" ", 1)[1]
    elif line.startswith(("rename from ", "copy from ")):
        cur.flags["renamed" if key == "rename" else "copied"] = True
        cur.old = _unquote(line.split(" ", 2)[2])
        cur.old_exact = True
    elif line.startswith(("rename to ", "copy to ")):
        cur.new = _unquote(line.split(" ", 2)[2])
        cur.new_exact = True
    elif line.startswith(("similarity index ", "dissimilarity index ")):
        cur.flags["similarity"] = line.rsplit(" ", 1)[1]
    elif line.startswith("Binary files ") or line == "GIT binary patch":
        cur.flags["binary"] = True


def _read_hunk(cur: _FileBuilder, header: str, m: re.Match[str], lines: list[str], i: int) -> int:
    old_start = int(m.group(1))
    old_count = int(m.group(2)) if m.group(2) is not None else 1
    new_start = int(m.group(3))
    new_count = int(m.group(4)) if m.group(4) is not None else 1
    old_left, new_left = old_count, new_count
    old_no, new_no = old_start, new_start
    body: list[DiffLine] = []
    while i < len(lines) and (old_left > 0 or new_left > 0 or lines[i].startswith("\\")):
        line = lines[i]
        marker, rest = line[:1], line[1:]
        if marker == "\\":
            body.append(DiffLine("note", rest.strip()))
        elif marker == "+" and new_left > 0:
            body.append(DiffLine("add", rest, None, new_no))
            new_no += 1
            new_left -= 1
        elif marker == "-" and old_left > 0:
            body.append(DiffLine("del", rest, old_no, None))
            old_no += 1
            old_left -= 1
        elif (marker == " " or line == "") and old_left > 0 and new_left > 0:
            body.append(DiffLine("context", rest, old_no, new_no))
            old_no += 1
            new_no += 1
            old_left -= 1
            new_left -= 1
        else:
            break  # a short hunk: let the caller look at this line again
        i += 1
    cur.hunks.append(
        DiffHunk(header, old_start, old_count, new_start, new_count, m.group(5), tuple(body))
    )
    return i


def _get_str(raw: Mapping[str, Any], key: str) -> str | None:
    value = raw.get(key)
    return value if isinstance(value, str) else None


def build_diff(changes: Sequence[Mapping[str, Any]], patch: Mapping[str, Any] | None) -> DiffView:
    """Pair each change with its ``git_patch`` section (matched by path)."""
    fmt = _get_str(patch, "format") if patch else None
    text = _get_str(patch, "text") if patch else None
    files = parse_git_patch(text) if fmt == "git_patch" and text is not None else []
    unused = list(files)
    entries: list[DiffEntry] = []
    for raw in changes:
        op = _get_str(raw, "operation") or "?"
        path = _get_str(raw, "path")
        old_path = _get_str(raw, "oldPath")
        match = None
        for f in unused:
            if path is not None and path in (f.new_path, f.old_path):
                match = f
                break
        if match is not None:
            unused.remove(match)
        entries.append(
            DiffEntry(
                operation=op,
                path=path,
                old_path=old_path,
                file_type=_get_str(raw, "fileType"),
                mime_type=_get_str(raw, "mimeType"),
                file=match,
                raw=dict(raw),
            )
        )
    keep_text = text if fmt != "git_patch" or (text is not None and not files) else None
    return DiffView(tuple(entries), fmt, keep_text, tuple(unused))


# -- HTML ----------------------------------------------------------------------


class DiffBudget:
    """How much of a diff is still rendered: ``lines`` lines (hunk headers and notes included)
    and ``chars`` characters of their text; what is past it is only counted (``left_out``).
    One budget may be shared by several calls of :func:`diff_html` (the files of one diff)."""

    def __init__(self, lines: int, chars: int) -> None:
        self.lines = lines
        self.chars = chars
        self.left_out = 0  # lines not rendered

    def take(self, text: str) -> str | None:
        """``text`` (one line), cut to what is left of the budget; None once it is spent."""
        if self.lines <= 0 or self.chars <= 0:
            self.left_out += 1
            return None
        self.lines -= 1
        if len(text) > self.chars:
            text = text[: self.chars] + "…"
            self.chars = 0
        else:
            self.chars -= len(text)
        return text

    def skip(self, count: int) -> None:
        self.left_out += count


_KIND_CLASS = {
    "add": "acp-diff-add",
    "del": "acp-diff-del",
    "context": "acp-diff-ctx",
    "note": "acp-diff-note",
}
_MARK = {"add": "+", "del": "-", "context": " ", "note": "\\ "}


def _e(text: str) -> str:
    return escape(text, quote=True)


def _row(cls: str, text: str, budget: DiffBudget | None) -> str | None:
    shown = text if budget is None else budget.take(text)
    return None if shown is None else f'<span class="{cls}">{_e(shown)}</span>'


def _file_body(f: DiffFile, budget: DiffBudget | None = None) -> str:
    parts: list[str] = []
    for hunk in f.hunks:
        if budget is not None and (budget.lines <= 0 or budget.chars <= 0):
            budget.skip(1 + len(hunk.lines))  # spent: count the rest without rendering it
            continue
        rows = [_row("acp-diff-hunk", hunk.header, budget)]
        for line in hunk.lines:
            rows.append(_row(_KIND_CLASS[line.kind], _MARK[line.kind] + line.text, budget))
        kept = [row for row in rows if row is not None]
        if kept:
            parts.append("\n".join(kept))
    if f.binary and not f.hunks:
        parts.append('<span class="acp-diff-note">Binary file changed</span>')
    if (f.old_mode or f.new_mode) and not f.hunks:
        parts.append(
            f'<span class="acp-diff-note">mode {_e(f.old_mode or "?")} → {_e(f.new_mode or "?")}'
            "</span>"
        )
    if not parts:
        return ""
    return '<pre class="acp-diff-body">' + "\n".join(parts) + "</pre>"


def _entry_title(entry: DiffEntry) -> str:
    op = _e(entry.operation)
    if entry.operation in ("move", "copy") and entry.old_path:
        target = f"{_e(entry.old_path)} → {_e(entry.path or '?')}"
    else:
        target = _e(entry.path or entry.old_path or "?")
    details = [d for d in (entry.file_type, entry.mime_type) if d]
    extra = f' <span class="acp-diff-meta">({_e(", ".join(details))})</span>' if details else ""
    return (
        f'<div class="acp-diff-file-header"><span class="acp-diff-op acp-diff-op-{_css(op)}">'
        f"{op}</span> <code>{target}</code>{extra}</div>"
    )


def _css(value: str) -> str:
    return re.sub(r"[^a-z0-9_-]", "-", value.lower())


def _patch_text(text: str, budget: DiffBudget | None) -> str:
    """A patch in a format this library does not read, within ``budget`` (its lines)."""
    if budget is None:
        return text
    lines = text.split("\n")
    kept: list[str] = []
    for line in lines:
        shown = budget.take(line)
        if shown is None:
            budget.skip(len(lines) - len(kept) - 1)
            break
        kept.append(shown)
    return "\n".join(kept)


def diff_html(view: DiffView, budget: DiffBudget | None = None) -> str:
    """Render a diff; every string from the agent is HTML-escaped. With ``budget``, only the
    lines it allows (the caller says how many were left out: ``budget.left_out``)."""
    out = ['<div class="acp-diff">']
    for entry in view.entries:
        out.append('<div class="acp-diff-file">')
        out.append(_entry_title(entry))
        if entry.file is not None:
            out.append(_file_body(entry.file, budget))
        elif not entry.known:
            generic = json.dumps(dict(entry.raw), indent=2, sort_keys=True, default=str)
            out.append(f'<pre class="acp-diff-generic">{_e(generic)}</pre>')
        elif entry.file_type and entry.file_type != "text":
            out.append(
                f'<div class="acp-diff-note">{_e(entry.file_type)} change, no text patch</div>'
            )
        out.append("</div>")
    for f in view.extra_files:
        out.append('<div class="acp-diff-file">')
        out.append(
            f'<div class="acp-diff-file-header"><code>{_e(f.path)}</code></div>'
            + _file_body(f, budget)
        )
        out.append("</div>")
    if view.patch_text is not None:
        fmt = _e(view.patch_format or "?")
        out.append(
            f'<div class="acp-diff-generic-header">patch ({fmt})</div>'
            f'<pre class="acp-diff-generic">{_e(_patch_text(view.patch_text, budget))}</pre>'
        )
    out.append("</div>")
    return "".join(out)
