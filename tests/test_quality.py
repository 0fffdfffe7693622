"""Quality gates as tests: mypy (strict, configured in pyproject.toml), ruff lint, ruff format.

Each tool runs in a subprocess from the repository root with the configuration in
``pyproject.toml``; on failure the tool's own report is the assertion message.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str) -> tuple[int, str]:
    argv = [sys.executable, "-m", *args]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=500, check=False)
    report = f"$ python -m {' '.join(args)}  (exit {done.returncode})\n{done.stdout}{done.stderr}"
    return done.returncode, report


def test_mypy_strict() -> None:
    # [tool.mypy]: strict, packages = ["acp_notebook"], the pydantic plugin.
    code, report = _run("mypy")
    assert code == 0, report
    # Guard against a configuration that checks nothing and so always passes.
    checked = re.search(r"in (\d+) source files?", report)
    assert checked is not None, report
    assert int(checked.group(1)) >= 20, report


def test_ruff_check() -> None:
    code, report = _run("ruff", "check", "--no-fix", ".")
    assert code == 0, report


def test_ruff_format() -> None:
    code, report = _run("ruff", "format", "--check", ".")
    assert code == 0, report
