"""bench/hunt.py's reading of a run's JUnit report, and what it keeps of a browser failure (the
hunt itself runs the suite: not here)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _hunt() -> ModuleType:
    spec = importlib.util.spec_from_file_location("hunt", ROOT / "bench" / "hunt.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("hunt", module)  # (its dataclass looks its module up there)
    spec.loader.exec_module(sys.modules["hunt"])
    return sys.modules["hunt"]


REPORT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="tests.test_a" name="test_ok"><properties>
<property name="cpu_s" value="0.1"/></properties></testcase>
<testcase classname="tests.test_a" name="test_bad"><properties>
<property name="cpu_s" value="0.2"/></properties>
<failure message="AssertionError: two dialogs&#10;second line">trace</failure></testcase>
<testcase classname="tests.test_b" name="test_broken"><system-out>out</system-out>
<error message="fixture failed">trace</error></testcase>
<testcase classname="tests.test_b" name="test_skipped"><skipped message="no node"/></testcase>
<testcase classname="tests.test_b" name="test_quiet"><system-err>warn</system-err></testcase>
</testsuite></testsuites>
"""


def test_a_failure_after_the_cases_properties_is_counted(tmp_path: Path) -> None:
    # (pytest writes a case's user_properties first: the suite's cost plugin gives every case
    # some, and the first hunt counted every failure as a pass)
    hunt = _hunt()
    report = tmp_path / "run.xml"
    report.write_text(REPORT)
    run = hunt.Run(1, 1, 1.0)
    hunt.read_junit(report, run)
    assert (run.passed, run.failed, run.errors, run.skipped) == (2, 1, 1, 1)
    assert run.failures == [
        "tests.test_a::test_bad [failure]: AssertionError: two dialogs",
        "tests.test_b::test_broken [error]: fixture failed",
    ]


def test_a_missing_report_is_a_failure(tmp_path: Path) -> None:
    hunt = _hunt()
    run = hunt.Run(2, 4, 1.0)
    hunt.read_junit(tmp_path / "absent.xml", run)
    assert run.failures == ["(no JUnit report: pytest exited 4, see the log)"]


def test_a_browser_failures_record_is_kept_beside_its_run(tmp_path: Path) -> None:
    hunt = _hunt()
    artifacts = tmp_path / "test-artifacts"
    failed = artifacts / "playwright-output-panel" / "tests-panel-inbox"
    failed.mkdir(parents=True)
    (failed / "error-context.md").write_text("page snapshot")
    (failed / "test-failed-1.png").write_bytes(b"png")
    (artifacts / "playwright-output-cells").mkdir()  # a group that passed: nothing to keep
    (artifacts / "panel.png").write_bytes(b"a screenshot the tests take, not a failure")
    out = tmp_path / "hunt"
    out.mkdir()
    kept = hunt.keep_browser_failures(3, out, artifacts)
    assert kept == [out / "run-3-playwright-output-panel"]
    copy = kept[0] / "tests-panel-inbox"
    assert (copy / "error-context.md").read_text() == "page snapshot"
    assert (copy / "test-failed-1.png").read_bytes() == b"png"
    assert sorted(p.name for p in out.iterdir()) == ["run-3-playwright-output-panel"]


def test_the_summary_names_the_code_it_hunted(tmp_path: Path) -> None:
    hunt = _hunt()
    run = hunt.Run(1, 1, 12.5, passed=3, failed=1, failures=["tests/test_a.py::test_bad [failure]"])
    hunt.write_summary(tmp_path, "stress-ng x2", ["-m", "kernel"], [run], 5, "0123456789ab+changes")
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["version"] == "0123456789ab+changes"
    assert summary["runs"][0]["failed"] == 1
    text = (tmp_path / "summary.md").read_text()
    assert "code: 0123456789ab+changes" in text
    assert "- run 1: tests/test_a.py::test_bad [failure]" in text


def test_the_version_says_when_the_tree_differs_from_its_commit(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    hunt = _hunt()
    asked: list[list[str]] = []
    answers = {"rev-parse": (0, "0123456789ab\n"), "status": (0, "")}

    def git(argv: list[str], **options: Any) -> subprocess.CompletedProcess[str]:
        # as git answers: the exit code, raised only when the caller asked for a check
        assert options["cwd"] == tmp_path
        asked.append(argv)
        code, out = answers[argv[1]]
        if code and options.get("check"):
            raise subprocess.CalledProcessError(code, argv, "", "fatal: not a git repository")
        return subprocess.CompletedProcess(argv, code, out, "")

    monkeypatch.setattr(hunt.subprocess, "run", git)
    assert hunt.source_version(tmp_path) == "0123456789ab"
    assert asked == [
        ["git", "rev-parse", "--short=12", "HEAD"],
        ["git", "status", "--porcelain", "--untracked-files=no"],
    ]
    answers["status"] = (0, " M acp_notebook/_notebook/_pacing.py\n")
    assert hunt.source_version(tmp_path) == "0123456789ab+changes"
    # outside a git checkout git exits 128 and prints nothing on stdout
    answers["rev-parse"] = (128, "")
    assert hunt.source_version(tmp_path) == "unknown"
