"""The embedded agent's file writes: paths kept inside the session's cwd, diffs of what changes."""

from __future__ import annotations

from pathlib import Path

import pytest
from _schema import assert_valid

from acp_notebook.agent._files import PathRefused, diff_content, read_text, resolve_inside


def test_resolve_inside(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (tmp_path / "out").mkdir()
    (root / "escape").symlink_to(tmp_path / "out")
    (root / "inner").symlink_to(root / "sub")
    assert resolve_inside(root, "a.txt") == root.resolve() / "a.txt"
    assert resolve_inside(root, "inner/x") == root.resolve() / "sub" / "x"
    for bad in ("", "/etc/passwd", "../x", "sub/../../x", "escape/x", "sub", ".", "a\0b"):
        with pytest.raises(PathRefused):
            resolve_inside(root, bad)


def test_diff_content_add_and_modify(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    assert read_text(path) is None
    add = diff_content(path, None, "x\n")
    assert add["changes"] == [{"operation": "add", "path": str(path), "fileType": "text"}]
    assert add["patch"]["text"] == (
        f"diff --git {path} {path}\nnew file mode 100644\n--- /dev/null\n+++ {path}\n"
        "@@ -0,0 +1 @@\n+x\n"
    )
    modify = diff_content(path, "a\nb", "a\nc")
    assert modify["changes"][0]["operation"] == "modify"
    assert "\\ No newline at end of file\n" in modify["patch"]["text"]
    for content in (add, modify):
        assert_valid("ToolCallContent", content)
