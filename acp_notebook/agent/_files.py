"""File writes of the embedded agent: confining paths to the session cwd, and git-style diffs."""

from __future__ import annotations

import difflib
import os
from pathlib import Path, PurePosixPath
from typing import Any

__all__ = ["PathRefused", "diff_content", "read_text", "resolve_inside"]


class PathRefused(ValueError):
    """The requested path is not a file inside the session directory."""


def resolve_inside(root: Path, relative: str) -> Path:
    """The absolute, symlink-free path of ``relative`` under ``root``, or `PathRefused`.

    Refused: empty paths, absolute paths, any ``..`` component, and anything whose real
    location (after following symlinks) is not strictly inside ``root``'s real location.
    """
    if not relative or "\0" in relative:
        raise PathRefused("the path is empty or contains a NUL byte")
    pure = PurePosixPath(relative)
    if pure.is_absolute():
        raise PathRefused(f"{relative} is an absolute path; only paths relative to the cwd")
    if ".." in pure.parts:
        raise PathRefused(f"{relative} goes up with '..' out of the session directory")
    real_root = Path(os.path.realpath(root))
    target = Path(os.path.realpath(real_root / pure))
    if target == real_root or not target.is_relative_to(real_root):
        raise PathRefused(f"{relative} resolves to {target}, outside the session directory")
    if target.is_dir():
        raise PathRefused(f"{relative} is a directory")
    return target


def read_text(path: Path) -> str | None:
    """The current text of ``path``, or None if it does not exist."""
    try:
        return path.read_bytes().decode("utf-8", "replace")
    except FileNotFoundError:
        return None


def _patch(path: str, old: str | None, new: str) -> str:
    old_lines = (old or "").splitlines(keepends=True)
    new_lines = new.splitlines(keepends=True)
    header = [f"diff --git {path} {path}\n"]
    if old is None:
        header.append("new file mode 100644\n")
    body: list[str] = []
    for line in difflib.unified_diff(
        old_lines, new_lines, "/dev/null" if old is None else path, path, lineterm="\n"
    ):
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        body.append(line)
    return "".join(header + body)


def diff_content(path: Path, old: str | None, new: str) -> dict[str, Any]:
    """A ``diff`` tool-call content item for writing ``new`` over ``old`` (None: a new file)."""
    text = str(path)
    return {
        "type": "diff",
        "changes": [
            {"operation": "add" if old is None else "modify", "path": text, "fileType": "text"}
        ],
        "patch": {"format": "git_patch", "text": _patch(text, old, new)},
    }
