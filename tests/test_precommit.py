"""The pre-commit hooks (.pre-commit-config.yaml): the checks a commit gets in seconds, before the
suite runs them. They must stay local (pre-commit downloads nothing: every hook calls a tool the
`test` extra or labextension/node_modules installed) and see the files the suite's own checks
see, or a commit that passes them fails later."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / ".pre-commit-config.yaml"
LABEXTENSION = ROOT / "labextension"


def _hooks() -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    config = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    return {hook["id"]: (repo, hook) for repo in config["repos"] for hook in repo["hooks"]}


def _selects(hook: dict[str, Any], path: Path) -> bool:
    """pre-commit's own rule: `files` is a regex searched in the repository-relative path."""
    return re.search(hook.get("files", ""), path.relative_to(ROOT).as_posix()) is not None


@pytest.mark.process
def test_the_config_is_valid() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pre_commit", "validate-config", str(CONFIG)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_hook_is_local_and_calls_an_installed_tool() -> None:
    hooks = _hooks()
    assert set(hooks) == {"ruff-check", "ruff-format", "mypy", "eslint", "prettier"}
    for repo, hook in hooks.values():
        assert repo["repo"] == "local", hook["id"]
        assert hook["language"] == "system", hook["id"]
    for name in ("ruff-check", "ruff-format", "mypy"):
        assert hooks[name][1]["entry"].startswith("python3 -m "), name
    for name in ("eslint", "prettier"):
        assert f"node_modules/.bin/{name} " in hooks[name][1]["entry"], name


def test_mypy_sees_the_package_the_suite_type_checks() -> None:
    _, mypy = _hooks()["mypy"]
    modules = list((ROOT / "acp_notebook").rglob("*.py"))
    assert modules
    assert all(_selects(mypy, path) for path in modules)
    assert not _selects(mypy, ROOT / "tests" / "test_precommit.py")


def test_the_labextension_hooks_see_the_files_its_lint_checks() -> None:
    """The files `jlpm lint:check` checks (package.json's prettier:base globs; ESLint lints the
    TypeScript and the .mjs config), and nothing under node_modules."""
    formatted = {
        *LABEXTENSION.glob("src/**/*.ts"),
        *LABEXTENSION.glob("test/**/*.ts"),
        *LABEXTENSION.glob("style/**/*.css"),
        *LABEXTENSION.glob("*.json"),
        *LABEXTENSION.glob("*.mjs"),
        *LABEXTENSION.glob("*.ts"),
    }
    linted = {path for path in formatted if path.suffix in (".ts", ".mjs")}
    assert linted and formatted - linted
    _, prettier = _hooks()["prettier"]
    _, eslint = _hooks()["eslint"]
    assert [p for p in formatted if not _selects(prettier, p)] == []
    assert [p for p in linted if not _selects(eslint, p)] == []
    bundled = LABEXTENSION / "node_modules" / "pkg" / "index.ts"
    assert not _selects(prettier, bundled)
    assert not _selects(eslint, bundled)
