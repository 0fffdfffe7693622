"""The labextension's own checks, run from the README's test command: its lint (ESLint with
typescript-eslint, Prettier: `jlpm lint:check`), its type checks (`jlpm typecheck`: tsc over
src/ with browser types only, and over test/ with node's types, tsconfig.test.json) and its unit
tests of the logic that needs no browser (vitest: `jlpm test`, labextension/test/*.test.ts).
.ci/run installs labextension/node_modules; without node these are skipped, without the install
they fail."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

LABEXTENSION = Path(__file__).resolve().parents[1] / "labextension"


def _jlpm(*args: str) -> subprocess.CompletedProcess[str]:
    if shutil.which("node") is None:
        pytest.skip("node is not on PATH: the labextension's lint and unit tests need Node.js")
    jlpm = shutil.which("jlpm")
    if jlpm is None:
        pytest.fail("jlpm is not on PATH: pip install -e '.[test]' (jupyterlab brings it)")
    for tool in ("eslint", "prettier", "tsc", "vitest"):
        if not (LABEXTENSION / "node_modules" / ".bin" / tool).exists():
            pytest.fail(f"labextension/node_modules has no {tool}: run `jlpm install` there")
    env = {**os.environ, "FORCE_COLOR": "0", "NO_COLOR": "1", "CI": "1"}
    return subprocess.run(
        [jlpm, *args],
        cwd=LABEXTENSION,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )


def test_lint_check_passes() -> None:
    done = _jlpm("lint:check")
    assert done.returncode == 0, done.stdout + done.stderr


def test_typecheck_passes() -> None:
    done = _jlpm("typecheck")
    assert done.returncode == 0, done.stdout + done.stderr


def _checked_files(tsconfig: str) -> set[Path]:
    """The files tsc type-checks under `tsconfig` (vitest strips types without checking them,
    so a test file that no tsconfig includes would never be type-checked)."""
    done = _jlpm("tsc", "--project", tsconfig, "--listFilesOnly")
    assert done.returncode == 0, done.stdout + done.stderr
    return {Path(line).resolve() for line in done.stdout.splitlines() if line.strip()}


def test_typecheck_covers_every_source_and_test_file() -> None:
    sources = set((LABEXTENSION / "src").glob("*.ts"))
    tests = set((LABEXTENSION / "test").glob("*.ts"))
    assert sources and tests
    assert sources <= _checked_files("tsconfig.json")
    assert tests <= _checked_files("tsconfig.test.json")


def test_unit_tests_pass() -> None:
    done = _jlpm("test")
    assert done.returncode == 0, done.stdout + done.stderr
    # vitest ran the suites (a config that matched no file would also exit non-zero, but say so)
    for suite in ("exit", "stream", "protocol", "inbox"):
        assert f"test/{suite}.test.ts" in done.stdout, done.stdout
