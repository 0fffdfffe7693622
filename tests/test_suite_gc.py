"""The suite's processes freeze what the collection made (tests/conftest.py,
``pytest_collection_finish``): collections look only at what the tests make."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_this_process_froze_what_the_collection_made() -> None:
    # (the modules, the collected tests, hypothesis's strategies: tens of thousands of objects)
    assert gc.get_freeze_count() > 10_000


def test_a_run_that_collects_no_hypothesis_test_ends_without_a_warning() -> None:
    # Hypothesis checks with gc.get_referrers, which does not see frozen objects, that the
    # PRNGs other packages register with it are referred to; imported after the freeze (at the
    # end of a run whose tests never imported it), it warned about trio's, and warnings are
    # errors here. The conftest imports it before freezing.
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
         "tests/test_bench_hunt.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    # (it ran tests, whatever their number: pytest exits 5 when none is collected)
    assert "HypothesisWarning" not in output and " passed" in output, output[-3000:]
