"""The test tiers (tests/_tiers.py): the table is sound, and the unit tier's guard really fails a
test that starts a process, however it starts it, and refuses to start it.

The guard is checked the only honest way: a real pytest run, in a subprocess, of a small test
file with the tier hooks loaded (``-p tests._tiers``), whose tests start processes in every way
Python offers. Each would create a file if its process ran.
"""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests import _tiers

ROOT = Path(__file__).resolve().parents[1]

SPAWNING = """
import asyncio, multiprocessing, os, pty, subprocess
import pytest

MARK = os.environ["TIERS_MARK"]  # each process below would create MARK.<its name>


def test_subprocess_run():
    subprocess.run(["touch", MARK + ".run"])


def test_swallowed_by_the_code_under_test():
    try:
        subprocess.run(["touch", MARK + ".swallowed"])
    except Exception:
        pass


def test_asyncio_subprocess():
    async def main():
        proc = await asyncio.create_subprocess_exec("touch", MARK + ".asyncio")
        await proc.wait()

    asyncio.run(main())


def test_os_system():
    os.system("touch " + MARK + ".system")


def test_posix_spawn():
    pid = os.posix_spawn("/usr/bin/touch", ["touch", MARK + ".spawn"], dict(os.environ))
    os.waitpid(pid, 0)


def test_fork():
    pid = os.fork()
    if pid == 0:
        open(MARK + ".fork", "w").close()
        os._exit(0)
    os.waitpid(pid, 0)


def test_pty_fork():
    pid, fd = pty.fork()
    if pid == 0:
        open(MARK + ".pty", "w").close()
        os._exit(0)
    os.waitpid(pid, 0)


def test_multiprocessing():
    proc = multiprocessing.get_context("spawn").Process(target=print)
    proc.start()
    proc.join()


@pytest.fixture(scope="module")
def shared_process():
    subprocess.run(["touch", MARK + ".fixture"])


def test_through_a_module_fixture(shared_process):
    pass


def test_in_process_only():
    assert sum([1, 2]) == 3


@pytest.mark.process
def test_marked_process():
    subprocess.run(["touch", MARK + ".marked"], check=True)
"""

DOUBLY = """
import pytest

@pytest.mark.kernel
@pytest.mark.process
def test_two_tiers():
    pass
"""


def run_pytest(
    where: Path, *args: str, ini: str = "[pytest]\n", first: tuple[str, ...] = ()
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """pytest with only the tier hooks loaded (after the plugins ``first`` names, as in a real
    run, where installed plugins load before conftest.py), in ``where``; its JUnit report's
    path."""
    (where / "pytest.ini").write_text(ini)
    report = where / "report.xml"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",  # no nbval, hypothesis...: the hooks alone
        "TIERS_MARK": str(where / "ran"),
    }
    argv = [sys.executable, "-m", "pytest", *(f"-p{name}" for name in first)]
    argv += ["-p", "tests._tiers", "-p", "no:cacheprovider"]
    done = subprocess.run(
        [*argv, f"--junitxml={report}", "-q", *args],
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return done, report


def outcomes(report: Path) -> dict[str, tuple[str, str]]:
    """Test name -> (passed / failure / error, the message) from a JUnit report."""
    found: dict[str, tuple[str, str]] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        bad = [child for child in case if child.tag in ("failure", "error")]
        if bad:
            found[case.attrib["name"]] = (bad[0].tag, bad[0].attrib.get("message", ""))
        else:
            found[case.attrib["name"]] = ("passed", "")
    return found


@pytest.mark.process
def test_a_unit_test_that_starts_a_process_fails_and_the_process_never_starts(
    tmp_path: Path,
) -> None:
    (tmp_path / "test_spawning.py").write_text(SPAWNING)
    done, report = run_pytest(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    found = outcomes(report)
    assert found.pop("test_in_process_only") == ("passed", ""), found
    assert found.pop("test_marked_process") == ("passed", ""), found
    assert len(found) == 9, found
    for name, (outcome, message) in found.items():
        assert outcome in ("failure", "error"), (name, outcome)
        assert f"test_spawning.py::{name} is in the unit tier" in message, (name, message)
        assert "NOT_UNIT in tests/_tiers.py" in message, message
    assert "Popen._execute_child" in found["test_swallowed_by_the_code_under_test"][1]
    assert "os.fork" in found["test_fork"][1]
    assert "os.forkpty" in found["test_pty_fork"][1]
    assert found["test_through_a_module_fixture"][0] == "error"  # refused in its setup
    # The guard refuses, so none of the unit tests' processes ran; the marked one's did.
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("ran")) == ["ran.marked"]


@pytest.mark.process
def test_each_test_gets_exactly_one_tier_and_m_selects_by_it(tmp_path: Path) -> None:
    (tmp_path / "test_spawning.py").write_text(SPAWNING)
    done, report = run_pytest(tmp_path, "-m", "process")
    assert done.returncode == 0, done.stdout + done.stderr
    assert outcomes(report) == {"test_marked_process": ("passed", "")}
    done, report = run_pytest(tmp_path, "-m", "unit", "-k", "in_process or marked")
    assert done.returncode == 0, done.stdout + done.stderr
    assert outcomes(report) == {"test_in_process_only": ("passed", "")}

    (tmp_path / "test_spawning.py").unlink()
    (tmp_path / "test_doubly.py").write_text(DOUBLY)
    done, _ = run_pytest(tmp_path)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert "test_doubly.py::test_two_tiers: kernel, process" in done.stderr, done.stderr


SURROGATE = """
import logging

def test_logs_a_lone_surrogate():
    logging.getLogger("peer").warning("peer sent %s", "\\udf2c")
"""


@pytest.mark.process
def test_a_lone_surrogate_in_captured_output_does_not_end_an_xdist_run(tmp_path: Path) -> None:
    """execnet refuses to send such a string from a worker; the hooks escape it first."""
    pytest.importorskip("xdist")
    (tmp_path / "test_surrogate.py").write_text(SURROGATE)
    done, report = run_pytest(tmp_path, "-p", "xdist", "-n", "2")
    assert "INTERNALERROR" not in done.stdout + done.stderr, done.stdout + done.stderr
    assert done.returncode == 0, done.stdout + done.stderr
    assert outcomes(report) == {"test_logs_a_lone_surrogate": ("passed", "")}


def test_the_table_names_existing_modules_and_real_tiers() -> None:
    assert _tiers.NOT_UNIT, "the table is empty"
    for path, tier in _tiers.NOT_UNIT.items():
        assert tier in _tiers.TIERS and tier != "unit", (path, tier)
        assert (ROOT / path).exists(), path


def test_a_module_gets_its_listed_tier_or_unit() -> None:
    assert _tiers.listed_tier(ROOT / "tests" / "test_browser.py") == "browser"
    assert _tiers.listed_tier(ROOT / "tests" / "real_agents" / "test_codex.py") == "agent"
    assert _tiers.listed_tier(ROOT / "notebooks" / "quickstart.ipynb") == "kernel"
    assert _tiers.listed_tier(ROOT / "tests" / "test_visible.py") == "unit"
    assert _tiers.listed_tier(Path("/elsewhere/test_x.py")) == "unit"


def test_this_module_is_unit_with_its_process_tests_marked(request: pytest.FixtureRequest) -> None:
    """A test's own tier marker takes precedence over its module's: this module is unit, its
    subprocess runs carry ``process``."""
    assert _tiers.tier_of(request.node) == "unit"
    marks = [m.name for m in request.node.iter_markers() if m.name in _tiers.TIERS]
    assert marks == ["unit"]


MODULE = """
import os
from pathlib import Path

def _ran(name):
    Path(os.environ["TIERS_MARK"] + "." + name).write_text(os.environ["PYTEST_XDIST_WORKER"])

def test_one():
    _ran(__name__ + ".one")

def test_two():
    _ran(__name__ + ".two")

def test_three():
    _ran(__name__ + ".three")
"""


HANGS = """
import os, time
from pathlib import Path

import pytest

def _ran(name):
    with open(os.environ["TIERS_MARK"] + "." + name, "a") as mark:
        mark.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")

def test_before():
    _ran("before")

@pytest.mark.timeout(2)
def test_hangs():
    _ran("hangs")
    time.sleep(600)

def test_after():
    _ran("after")
"""


@pytest.mark.process
def test_a_hung_test_fails_alone_and_the_run_goes_on(tmp_path: Path) -> None:
    """pytest-timeout ends a hung test's worker (its thread method); the scheduler gives the
    module's other tests to another worker, and does not send the hung one again."""
    pytest.importorskip("xdist")
    pytest.importorskip("pytest_timeout")
    (tmp_path / "test_hang.py").write_text(HANGS)
    for number in range(3):
        (tmp_path / f"test_m{number}.py").write_text(MODULE)
    ini = "[pytest]\ntestpaths = .\ntimeout_method = thread\n"
    done, report = run_pytest(tmp_path, ini=ini, first=("xdist", "pytest_timeout"))
    assert done.returncode == 1, done.stdout + done.stderr
    runs = {name: (tmp_path / f"ran.{name}").read_text().split() for name in ("before", "hangs")}
    assert len(runs["hangs"]) == 1 and len(runs["before"]) == 1, runs
    assert (tmp_path / "ran.after").read_text().split() != runs["hangs"]  # on another worker
    found = outcomes(report)
    assert found["test_hangs"][0] in ("failure", "error"), found
    assert "crashed" in found["test_hangs"][1], found
    assert all(found[name] == ("passed", "") for name in ("test_before", "test_after")), found


@pytest.mark.process
def test_the_whole_suite_runs_on_workers_a_module_to_a_worker(tmp_path: Path) -> None:
    """No paths given (pytest's testpaths): SUITE_WORKERS workers, each module on one."""
    pytest.importorskip("xdist")
    for number in range(4):
        (tmp_path / f"test_m{number}.py").write_text(MODULE)
    ini = "[pytest]\ntestpaths = .\n"
    done, _ = run_pytest(tmp_path, ini=ini, first=("xdist",))
    assert done.returncode == 0, done.stdout + done.stderr
    workers: dict[str, set[str]] = {}
    for mark in tmp_path.glob("ran.*"):
        module = mark.name.split(".")[1]
        workers.setdefault(module, set()).add(mark.read_text())
    assert sorted(workers) == [f"test_m{number}" for number in range(4)]
    assert all(len(ran_on) == 1 for ran_on in workers.values()), workers
    # one module to each worker, side by side
    assert len(set().union(*workers.values())) == _tiers.SUITE_WORKERS == 4, workers


COVERED = """
def half(flag):
    if flag:
        return "measured"
    return "never run"
"""

USES_COVERED = """
import covered

def test_half():
    assert covered.half(True) == "measured"
"""


@pytest.mark.process
@pytest.mark.parametrize("tier", [(), ("-m", "unit")], ids=["whole suite", "unit tier"])
def test_coverage_measures_the_workers_the_tiers_choose(tmp_path: Path, tier: tuple[str]) -> None:
    """README: `pytest --cov` on the whole suite (or the unit tier) measures the workers that
    tests/_tiers.py starts; pytest-cov chose its mode before them and the run ended at its first
    worker with an INTERNALERROR."""
    pytest.importorskip("xdist")
    pytest.importorskip("pytest_cov")
    (tmp_path / "covered.py").write_text(COVERED)
    (tmp_path / "test_uses.py").write_text(USES_COVERED)
    ini = "[pytest]\ntestpaths = .\n"
    args = ("--cov=covered", "--cov-branch", "--cov-report=term-missing", *tier)
    done, _ = run_pytest(tmp_path, *args, ini=ini, first=("xdist", "pytest_cov"))
    out = done.stdout + done.stderr
    assert done.returncode == 0 and "INTERNALERROR" not in out, out
    assert "bringing up nodes" in out, out  # on workers
    # measured in a worker: the test ran line 4, not line 5 (4 statements, 2 branches)
    row = next(line for line in out.splitlines() if line.startswith("covered.py"))
    assert row.split()[1:] == ["4", "1", "2", "1", "67%", "5"], row


def _whole_collection(session: pytest.Session) -> set[str] | None:
    """The unit tests of this run's own collection, when this run collected the whole suite
    and selected nothing (``python3 -m pytest``, as CI runs it): then they are what a separate
    ``--collect-only -m (unit)`` would list, without a second collection of 5,000 tests (about
    10 CPU-s). None in any other run."""
    config = session.config
    option = config.option
    if (
        config.args_source != pytest.Config.ArgsSource.TESTPATHS
        or option.markexpr
        or option.keyword
        or getattr(option, "deselect", None)
        or getattr(option, "lf", False)  # (the cache provider's options)
        or getattr(option, "failedfirst", False)
    ):
        return None
    return {item.nodeid for item in session.items if item.get_closest_marker("unit")}


@pytest.mark.process
def test_m_unit_skips_the_listed_modules_and_selects_every_unit_test_all_the_same(
    request: pytest.FixtureRequest,
) -> None:
    """``-m unit`` alone leaves the modules NOT_UNIT lists unimported (pytest_ignore_collect);
    the same selection spelled otherwise collects everything and deselects: the same tests.
    The second is this run's own collection when it has the whole suite."""

    def collected(expression: str) -> tuple[set[str], str]:
        argv = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0"]
        done = subprocess.run(
            [*argv, "-p", "no:cacheprovider", "-m", expression],
            cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        lines = done.stdout.splitlines()
        return {line for line in lines if "::" in line}, lines[-1]

    total = lambda summary: int(summary.split("/")[1].split()[0])  # noqa: E731
    alone, alone_summary = collected("unit")
    assert len(alone) > 1000
    whole = _whole_collection(request.session)
    if whole is not None:
        assert alone == whole
        # the first run never collected the other tiers' tests; this one has them all
        assert total(alone_summary) < len(request.session.items)
        return
    spelled, spelled_summary = collected("(unit)")
    assert alone == spelled
    # the first run never collected the other tiers' tests; the second deselected them
    assert "deselected" in spelled_summary
    assert total(alone_summary) < total(spelled_summary)
