"""The labextension's own checks, run from the README's test command: its lint (ESLint with
typescript-eslint, Prettier: `jlpm lint:check`), its type checks (`jlpm typecheck`, run as its
tsc commands: over src/ with browser types only, and over test/ with node's types,
tsconfig.test.json) and its unit
tests of the logic that needs no browser (vitest: `jlpm test`, labextension/test/*.test.ts).
.ci/run installs labextension/node_modules; without node these are skipped, without the install
they fail."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

LABEXTENSION = Path(__file__).resolve().parents[1] / "labextension"


def _tools_ready() -> str:
    """jlpm's path, once node, jlpm and labextension/node_modules' tools are there."""
    if shutil.which("node") is None:
        pytest.skip("node is not on PATH: the labextension's lint and unit tests need Node.js")
    jlpm = shutil.which("jlpm")
    if jlpm is None:
        pytest.fail("jlpm is not on PATH: pip install -e '.[test]' (jupyterlab brings it)")
    for tool in ("eslint", "prettier", "tsc", "vitest"):
        if not (LABEXTENSION / "node_modules" / ".bin" / tool).exists():
            pytest.fail(f"labextension/node_modules has no {tool}: run `jlpm install` there")
    return jlpm


def _jlpm(*args: str) -> subprocess.CompletedProcess[str]:
    return _run(_tools_ready(), *args)


def _bin(tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    """One of labextension/node_modules/.bin's tools itself (`jlpm eslint` would run the
    package.json script of that name instead)."""
    _tools_ready()
    return _run(str(LABEXTENSION / "node_modules" / ".bin" / tool), *args)


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FORCE_COLOR": "0", "NO_COLOR": "1", "CI": "1"}
    return subprocess.run(
        argv,
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


def test_explicit_any_is_an_error_for_sources_and_tests() -> None:
    for path in ("src/panel.ts", "test/stream.test.ts"):
        done = _bin("eslint", "--print-config", path)
        assert done.returncode == 0, done.stdout + done.stderr
        config = json.loads(done.stdout)
        assert config["rules"]["@typescript-eslint/no-explicit-any"][0] in (2, "error"), path
        assert config["linterOptions"]["reportUnusedDisableDirectives"] in (2, "error"), path


# An ESLint directive comment: `eslint-disable`, `-line`, `-next-line`, and what follows it.
_DISABLE = re.compile(r"(?://|/\*)\s*eslint-disable(?:-next-line|-line)?\b(?P<rest>.*)")


def test_every_lint_exception_names_its_rule_and_reason() -> None:
    """An exception to a lint rule (no-explicit-any above all) is named where it stays: the
    comment lists the rule and gives a reason after `--`, never a bare `eslint-disable`."""
    files = [*LABEXTENSION.glob("src/*.ts"), *LABEXTENSION.glob("test/*.ts")]
    assert files
    bare = []
    for path in files:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            match = _DISABLE.search(line)
            if match is None:
                continue
            rules, _, reason = match["rest"].partition("--")
            if not rules.strip() or not reason.strip(" */"):
                bare.append(f"{path.relative_to(LABEXTENSION)}:{number}: {line.strip()}")
    assert not bare, "\n".join(bare)


@dataclass(frozen=True)
class Typecheck:
    """What `jlpm typecheck` runs, run once for this module: each of its tsc commands (from
    package.json) with ``--listFiles`` added, which type-checks as the command does and lists
    the files it checked (vitest strips types without checking them, so a test file that no
    tsc command includes would never be type-checked)."""

    commands: list[list[str]]
    runs: list[subprocess.CompletedProcess[str]]

    def checked(self, tsconfig: str) -> set[Path]:
        """The files that the command checking ``tsconfig`` (tsc's default: tsconfig.json)
        listed."""
        for argv, done in zip(self.commands, self.runs, strict=True):
            project = argv[argv.index("--project") + 1] if "--project" in argv else "tsconfig.json"
            if project == tsconfig:
                return {Path(line).resolve() for line in done.stdout.splitlines() if line.strip()}
        raise AssertionError(f"`jlpm typecheck` runs no tsc over {tsconfig}: {self.commands}")


@pytest.fixture(scope="module")
def typecheck() -> Typecheck:
    """`jlpm typecheck` ran as its tsc commands, each with ``--listFiles`` (one tsc run per
    tsconfig serves both tests below: a run of jlpm and two of ``tsc --listFilesOnly`` fewer,
    about 4 CPU-s)."""
    script = json.loads((LABEXTENSION / "package.json").read_text())["scripts"]["typecheck"]
    commands = [command.split() for command in script.split("&&")]
    assert all(argv[0] == "tsc" for argv in commands), script  # what the fixture can run
    runs = [_bin("tsc", *argv[1:], "--listFiles") for argv in commands]
    return Typecheck(commands, runs)


def test_typecheck_passes(typecheck: Typecheck) -> None:
    for argv, done in zip(typecheck.commands, typecheck.runs, strict=True):
        assert done.returncode == 0, f"{argv}:\n{done.stdout}{done.stderr}"


def test_typecheck_covers_every_source_and_test_file(typecheck: Typecheck) -> None:
    sources = set((LABEXTENSION / "src").glob("*.ts"))
    tests = set((LABEXTENSION / "test").glob("*.ts"))
    assert sources and tests
    assert sources <= typecheck.checked("tsconfig.json")
    assert tests <= typecheck.checked("tsconfig.test.json")


def test_unit_tests_pass() -> None:
    done = _jlpm("test")
    assert done.returncode == 0, done.stdout + done.stderr
    # vitest ran the suites (a config that matched no file would also exit non-zero, but say so)
    for suite in ("exit", "stream", "protocol", "inbox", "page", "identity"):
        assert f"test/{suite}.test.ts" in done.stdout, done.stdout
