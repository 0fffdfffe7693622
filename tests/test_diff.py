from __future__ import annotations

import re

from acp_notebook._state import build_diff, diff_html, parse_git_patch

# The example from the v2 tool-calls page.
CONFIG_PATCH = (
    "diff --git /home/user/project/src/config.json /home/user/project/src/config.json\n"
    "--- /home/user/project/src/config.json\n"
    "+++ /home/user/project/src/config.json\n"
    "@@ -1,3 +1,3 @@\n"
    " {\n"
    '-  "debug": false\n'
    '+  "debug": true\n'
    " }\n"
)

MULTI_PATCH = """\
diff --git a/src/new.py b/src/new.py
new file mode 100644
index 0000000..e69de29
--- /dev/null
+++ b/src/new.py
@@ -0,0 +1,2 @@
+print("hi")
+-- not a header
diff --git a/old.txt b/old.txt
deleted file mode 100644
index 3b18e51..0000000
--- a/old.txt
+++ /dev/null
@@ -1 +0,0 @@
--- looks like a header
\\ No newline at end of file
diff --git a/a b.txt b/c d.txt
similarity index 90%
rename from a b.txt
rename to c d.txt
index 1111111..2222222 100644
--- a/a b.txt
+++ b/c d.txt
@@ -1,2 +1,2 @@ def section():
 same
-old
+new
diff --git a/img.png b/img.png
index 1111111..2222222 100644
Binary files a/img.png and b/img.png differ
diff --git a/run.sh b/run.sh
old mode 100644
new mode 100755
diff --git "a/we\\"ird\\303\\251" "b/we\\"ird\\303\\251"
--- "a/we\\"ird\\303\\251"
+++ "b/we\\"ird\\303\\251"
@@ -1 +1 @@
-x
+y
"""


def test_parse_single_absolute_path_patch() -> None:
    [f] = parse_git_patch(CONFIG_PATCH)
    assert f.old_path == f.new_path == "/home/user/project/src/config.json"
    [hunk] = f.hunks
    assert (hunk.old_start, hunk.old_count, hunk.new_start, hunk.new_count) == (1, 3, 1, 3)
    assert [(line.kind, line.text) for line in hunk.lines] == [
        ("context", "{"),
        ("del", '  "debug": false'),
        ("add", '  "debug": true'),
        ("context", "}"),
    ]
    assert [(line.old_no, line.new_no) for line in hunk.lines] == [
        (1, 1),
        (2, None),
        (None, 2),
        (3, 3),
    ]


def test_parse_flags_and_tricky_lines() -> None:
    files = parse_git_patch(MULTI_PATCH)
    assert [f.path for f in files] == [
        "src/new.py",
        "old.txt",
        "c d.txt",
        "img.png",
        "run.sh",
        'we"irdé',
    ]
    new, deleted, renamed, binary, mode, quoted = files
    assert new.new_file and new.old_path is None and new.new_mode == "100644"
    assert [line.text for line in new.hunks[0].lines] == ['print("hi")', "-- not a header"]
    assert deleted.deleted and deleted.new_path is None
    assert [(line.kind, line.text) for line in deleted.hunks[0].lines] == [
        ("del", "-- looks like a header"),
        ("note", "No newline at end of file"),
    ]
    assert renamed.renamed and renamed.old_path == "a b.txt" and renamed.new_path == "c d.txt"
    assert renamed.similarity == "90%"
    assert renamed.hunks[0].section == "def section():"
    assert binary.binary and not binary.hunks
    assert (mode.old_mode, mode.new_mode) == ("100644", "100755")
    assert quoted.old_path == 'we"irdé'


def test_build_matches_changes_to_patch_sections() -> None:
    view = build_diff(
        [
            {
                "operation": "modify",
                "path": "/home/user/project/src/config.json",
                "fileType": "text",
                "mimeType": "application/json",
            }
        ],
        {"format": "git_patch", "text": CONFIG_PATCH},
    )
    [entry] = view.entries
    assert entry.file is not None and len(entry.file.hunks) == 1
    assert entry.mime_type == "application/json"
    html = diff_html(view)
    assert '<span class="acp-diff-del">-  &quot;debug&quot;: false</span>' in html
    assert '<span class="acp-diff-add">+  &quot;debug&quot;: true</span>' in html
    assert '<span class="acp-diff-hunk">@@ -1,3 +1,3 @@</span>' in html


def test_changes_without_patch_still_render() -> None:
    view = build_diff(
        [
            {
                "operation": "modify",
                "path": "/p/logo.png",
                "fileType": "binary",
                "mimeType": "image/png",
            },
            {"operation": "add", "path": "/p/link", "fileType": "symlink"},
            {"operation": "delete", "path": "/p/dir", "fileType": "directory"},
            {"operation": "move", "oldPath": "/p/a.txt", "path": "/p/b.txt"},
            {"operation": "copy", "oldPath": "/p/c.txt", "path": "/p/d.txt"},
        ],
        None,
    )
    assert [e.operation for e in view.entries] == ["modify", "add", "delete", "move", "copy"]
    assert all(e.file is None for e in view.entries)
    html = diff_html(view)
    for text in ("/p/logo.png", "image/png", "/p/link", "symlink", "/p/dir", "directory"):
        assert text in html
    assert "/p/a.txt → /p/b.txt" in html
    assert "/p/c.txt → /p/d.txt" in html


def test_custom_operation_and_format_fall_back_to_generic() -> None:
    view = build_diff(
        [{"operation": "_chmod", "path": "/p/x", "_meta": {"mode": "<b>"}}],
        {"format": "_my_format", "text": "<custom & text>"},
    )
    [entry] = view.entries
    assert not entry.known
    assert view.patch_text == "<custom & text>"
    html = diff_html(view)
    assert "_chmod" in html
    assert "&lt;custom &amp; text&gt;" in html
    assert "&lt;b&gt;" in html
    assert "<b>" not in html


def test_patch_section_not_in_changes_is_still_shown() -> None:
    view = build_diff([], {"format": "git_patch", "text": CONFIG_PATCH})
    assert len(view.extra_files) == 1
    assert "acp-diff-add" in diff_html(view)


def test_unparseable_git_patch_text_is_kept() -> None:
    view = build_diff(
        [{"operation": "modify", "path": "/x"}], {"format": "git_patch", "text": "junk"}
    )
    assert view.patch_text == "junk"
    assert "junk" in diff_html(view)


def test_html_escapes_everything() -> None:
    evil = '<script>alert(1)</script>" onmouseover="x" &amp;'
    patch = (
        f"diff --git /p/{evil} /p/{evil}\n--- /p/{evil}\n+++ /p/{evil}\n"
        f"@@ -1 +1 @@ {evil}\n-{evil}\n+{evil}\n"
    )
    view = build_diff(
        [{"operation": "modify", "path": f"/p/{evil}", "fileType": evil, "mimeType": evil}],
        {"format": "git_patch", "text": patch},
    )
    assert view.entries[0].file is not None
    html = diff_html(view)
    assert "<script" not in html
    assert 'onmouseover="' not in html
    assert "&amp;amp;" in html
    # Every tag in the output is one of ours.
    for tag in re.findall(r"<[^>]*>", html):
        assert re.fullmatch(r'</?(div|span|pre|code)( class="[a-z0-9 _-]+")?>', tag), tag
