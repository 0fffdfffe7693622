"""Test tiers: every collected test gets exactly one tier marker, and the ``unit`` tier is
enforced to start no process.

``python3 -m pytest -m unit`` is the feedback loop of someone changing one module, so a test
lands there only when it runs in this process alone. Rather than trusting each author to mark
slow tests, the tier of a module is listed here (``NOT_UNIT``), anything unlisted is ``unit``,
and a ``unit`` test that starts a process anyway (a kernel, an agent, a shell, a browser...) is
failed by a guard on the few functions every way of starting a process goes through.

tests/conftest.py wires these hooks into the suite; ``-p tests._tiers`` loads them into any
other pytest run (tests/test_tiers.py does that to check the guard itself).
"""

from __future__ import annotations

import _posixsubprocess
import functools
import os
import subprocess
import threading
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]

TIERS: dict[str, str] = {
    "unit": "in-process only: no subprocess, no kernel, no browser (the default tier)",
    "process": "starts processes that are not a kernel, a third-party agent or a browser: "
    "our agent, PTY terminals, shells, the node oracle, mypy/ruff/npm",
    "kernel": "drives a real Jupyter kernel (tests/kernel_driver.py, the nbval notebooks)",
    "agent": "runs real third-party agents (tests/real_agents/)",
    "browser": "JupyterLab in a real browser (Playwright/Galata: tests/test_browser.py)",
}

# The tier of every test module (or directory, ending in "/") that is not unit, relative to the
# repository root. A test's own tier marker (``@pytest.mark.kernel``, or a module's
# ``pytestmark``) takes precedence over its module's entry here; a module not listed is unit.
NOT_UNIT: dict[str, str] = {
    "notebooks/": "kernel",  # the example notebooks, run by nbval
    "tests/real_agents/": "agent",
    "tests/test_browser.py": "browser",
    # a real kernel
    "tests/adversarial/test_agent_shapes_kernel.py": "kernel",
    "tests/adversarial/test_auth_kernel.py": "kernel",
    "tests/adversarial/test_auth_terminal_kernel.py": "kernel",
    "tests/adversarial/test_background_kernel.py": "kernel",
    "tests/adversarial/test_context_kernel.py": "kernel",
    "tests/adversarial/test_elicitation_kernel.py": "kernel",
    "tests/adversarial/test_fail_closed_kernel.py": "kernel",
    "tests/adversarial/test_hostile_json.py": "kernel",
    "tests/adversarial/test_hostile_kernel.py": "kernel",
    "tests/adversarial/test_kernel_tools_probe_kernel.py": "kernel",
    "tests/adversarial/test_memory.py": "kernel",
    "tests/adversarial/test_oracle_scenarios_kernel.py": "kernel",
    "tests/adversarial/test_orphans.py": "kernel",
    "tests/adversarial/test_policy_kernel.py": "kernel",
    "tests/adversarial/test_rule_rows_kernel.py": "kernel",
    "tests/adversarial/test_rerun_kernel.py": "kernel",
    "tests/test_context_kernel.py": "kernel",
    "tests/test_kernel_code_kernel.py": "kernel",
    "tests/test_kernel_shutdown.py": "kernel",
    "tests/test_kernel_tools_kernel.py": "kernel",
    "tests/test_kernel_tools_starvation_kernel.py": "kernel",
    "tests/test_notebook_kernel.py": "kernel",
    "tests/test_notebook_modes_kernel.py": "kernel",
    "tests/test_notebook_traces.py": "kernel",
    "tests/test_trace_kernel.py": "kernel",
    "tests/test_sidepanel.py": "kernel",
    "tests/test_static_live.py": "kernel",
    "tests/test_widgets_acks.py": "kernel",
    "tests/test_widgets_kernel.py": "kernel",
    # other processes: our agent, commands in PTYs, shells, node, git, pip, mypy/ruff, jlpm
    "tests/adversarial/test_elicitation_client.py": "process",
    "tests/adversarial/test_elicitation_patterns.py": "process",
    "tests/adversarial/test_fail_closed_client.py": "process",
    "tests/adversarial/test_interrupt_races.py": "process",
    "tests/adversarial/test_policy_corpus.py": "process",
    "tests/adversarial/test_policy_corpus2.py": "process",
    "tests/adversarial/test_policy_corpus3.py": "process",
    "tests/adversarial/test_policy_terminals.py": "process",
    "tests/test_agent_client_api.py": "process",
    "tests/test_agent_replay.py": "process",
    "tests/test_agent_e2e.py": "process",
    "tests/test_agent_pty.py": "process",
    "tests/test_client_faults.py": "process",
    "tests/test_connect_env.py": "process",
    "tests/test_cost.py": "process",
    "tests/test_suite_gc.py": "process",
    "tests/test_demo.py": "process",
    "tests/test_docs_site.py": "process",  # sphinx-build; its browser test marks itself
    "tests/test_import_cost.py": "process",
    "tests/test_install.py": "process",
    "tests/test_labextension.py": "process",
    "tests/test_login_pty.py": "process",
    "tests/test_mcp_bridge.py": "process",
    "tests/test_oracle.py": "process",
    "tests/test_process.py": "process",
    "tests/test_quality.py": "process",
    "tests/test_supervisor.py": "process",
    "tests/test_terminals.py": "process",
}


class UnitTierSpawnError(RuntimeError):
    """A unit-tier test tried to start a process; the guard refused it."""

    def __init__(self, nodeid: str, how: str) -> None:
        super().__init__(f"{nodeid}: {how}")
        self.nodeid = nodeid
        self.how = how


class _Guard:
    """Which unit test is running now (None between tests and in other tiers), and the process
    starts it attempted. The guard is per process (pytest-xdist workers each have one)."""

    def __init__(self) -> None:
        self.nodeid: str | None = None
        self.pid = os.getpid()
        self.attempts: list[str] = []
        self.restore: list[tuple[Any, str, Any]] = []


_GUARD = _Guard()


def _argv_of(args: tuple[Any, ...], index: int | None) -> str:
    if index is None or len(args) <= index:
        return ""
    argv = args[index]
    if isinstance(argv, (str, bytes, os.PathLike)):
        return repr(os.fsdecode(argv))
    try:
        return repr([os.fsdecode(part) for part in argv][:4])
    except TypeError:
        return repr(argv)[:200]


def _guarded(name: str, original: Callable[..., Any], argv_index: int | None) -> Any:
    @functools.wraps(original)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        nodeid = _GUARD.nodeid
        if nodeid is not None and os.getpid() == _GUARD.pid:
            thread = threading.current_thread().name
            how = f"{name}({_argv_of(args, argv_index)}) in thread {thread!r}"
            _GUARD.attempts.append(how)
            raise UnitTierSpawnError(nodeid, how)
        return original(*args, **kwargs)

    return guarded


# Every way Python starts a process ends in one of these: subprocess (and so asyncio, anyio,
# trio, os.popen) in Popen._execute_child; multiprocessing in _posixsubprocess.fork_exec;
# pty.fork, os.spawn* and forking servers in os.fork / os.forkpty; the rest below.
_SPAWN_POINTS: list[tuple[Any, str, int | None]] = [
    (subprocess.Popen, "_execute_child", 1),
    (_posixsubprocess, "fork_exec", 0),
    (os, "fork", None),
    (os, "forkpty", None),
    (os, "posix_spawn", 1),
    (os, "posix_spawnp", 1),
    (os, "system", 0),
]


def _install_guard() -> None:
    if _GUARD.restore:  # already installed (the hooks are loaded once per process)
        return
    for owner, attr, argv_index in _SPAWN_POINTS:
        original = getattr(owner, attr, None)
        if original is None:
            continue
        label = f"{getattr(owner, '__name__', owner)}.{attr}"
        _GUARD.restore.append((owner, attr, original))
        setattr(owner, attr, _guarded(label, original, argv_index))


def _remove_guard() -> None:
    while _GUARD.restore:
        owner, attr, original = _GUARD.restore.pop()
        setattr(owner, attr, original)


def _check_table() -> None:
    problems = [f"{path}: no such file" for path in LONGEST_FIRST if not (ROOT / path).is_file()]
    problems += [
        f"{name}: no such file"
        for name in SLOWEST_FIRST
        if not (ROOT / name.split("::", 1)[0]).is_file()
    ]
    problems += [
        f"{path}: {tier!r} is not a tier" for path, tier in NOT_UNIT.items() if tier not in TIERS
    ]
    problems += [
        f"{path}: no such file or directory" for path in NOT_UNIT if not (ROOT / path).exists()
    ]
    if problems:
        raise pytest.UsageError("tests/_tiers.py is out of date:\n  " + "\n  ".join(problems))


UNIT_WORKERS = 2  # this machine class has two cores

# Under pytest-xdist these modules' tests are handed out first (in their own order), so that no
# worker starts one of the unit tier's longest tests while the other has nothing left to do.
# The 40-terminal flood alone is about a quarter of the tier's CPU time.
LONGEST_FIRST = (
    "tests/test_widgets_comm_rate.py",
    "tests/test_hotpath.py",
    "tests/adversarial/test_jsonrpc_fuzz.py",
)


# The whole suite (``python3 -m pytest`` with no paths, any -m) runs on SUITE_WORKERS
# pytest-xdist workers: most of its time is spent waiting on kernels, agents and the browser,
# so more workers than cores pay. Each module stays on one worker (its module-scoped kernels
# and servers are made once), and so does each notebook under nbval (its cells share a kernel);
# the browser suite's groups are separate tests (tests/test_browser.py GROUPS). The units below
# are handed out first, longest first (the wall seconds of each in a CI run, its cost table's
# second column: every unit of 4 s or more), so that none starts when the others are done: the
# nbval notebooks, collected last, used to end the run on one worker, the machine idle about
# 10 s. The rest follow in collection order, each shorter than 4 s.
# More do not pay: on this machine class the suite keeps both cores busy, and six workers took
# 649 s where four take 560-590 s (each worker also collects the whole suite).
SUITE_WORKERS = 4
SLOWEST_FIRST = (
    "tests/test_browser.py::test_playwright_suite_passes[terminals-kernels]",
    "tests/test_browser.py::test_playwright_suite_passes[cells-panel]",
    "tests/test_notebook_kernel.py",  # 84 s
    "tests/test_install.py",  # 69 s
    "tests/real_agents/test_claude.py",  # 48 s
    "tests/real_agents/test_cline.py",  # 35 s
    "tests/test_kernel_tools_kernel.py",  # 31 s
    "tests/real_agents/test_claude_background.py",  # 30 s
    "tests/real_agents/test_qwen.py",  # 29 s
    "tests/adversarial/test_fail_closed_kernel.py",  # 23 s
    "tests/adversarial/test_fail_closed_client.py",  # 22 s
    "tests/test_labextension.py",  # 21 s
    "tests/real_agents/test_codex.py",  # 20 s
    "tests/test_tiers.py",  # 19 s
    "tests/test_kernel_code_kernel.py",  # 19 s
    "tests/real_agents/test_v1_peers.py",  # 19 s
    "tests/adversarial/test_memory.py",  # 18 s
    "tests/real_agents/test_claude_run_code.py",  # 17 s
    "tests/test_static_live.py",  # 17 s
    "tests/real_agents/test_copilot.py",  # 17 s
    "tests/real_agents/test_v1_client_terminals.py",  # 16 s
    "tests/test_sidepanel.py",  # 15 s
    "tests/adversarial/test_oracle_scenarios_kernel.py",  # 15 s
    "tests/real_agents/test_gemini.py",  # 14 s
    "tests/adversarial/test_jsonrpc_fuzz.py",  # 13 s
    "tests/adversarial/test_kernel_tools_probe_kernel.py",  # 13 s
    "tests/test_hotpath.py",  # 13 s
    "tests/test_agent_e2e.py",  # 12 s
    "tests/test_notebook_traces.py",  # 12 s
    "tests/adversarial/test_orphans.py",  # 12 s
    "tests/real_agents/test_modes.py",  # 12 s
    "tests/test_process.py",  # 12 s
    "tests/test_docs_site.py",  # 11 s
    "tests/real_agents/test_claude_kernel_tools.py",  # 11 s
    "tests/adversarial/test_policy_terminals.py",  # 10 s
    "tests/test_widgets_comm_rate.py",  # 10 s
    "tests/real_agents/test_claude_v1.py",  # 10 s
    "tests/test_hotpath_v1.py",  # 9 s
    "tests/adversarial/test_kernel_tools_connections.py",  # 9 s
    "notebooks/real-agents.ipynb",  # 8 s
    "tests/real_agents/test_claude_context.py",  # 8 s
    "tests/test_layers.py",  # 8 s
    "tests/adversarial/test_rerun_kernel.py",  # 8 s
    "tests/test_caps.py",  # 7 s
    "tests/test_widgets_turn.py",  # 7 s
    "tests/real_agents/test_claude_elicitation.py",  # 7 s
    "tests/adversarial/test_rule_rows_kernel.py",  # 6 s
    "tests/adversarial/test_background_kernel.py",  # 6 s
    "tests/test_pacing.py",  # 6 s
    "tests/adversarial/test_math_attacks.py",  # 6 s
    "tests/adversarial/test_elicitation_patterns.py",  # 6 s
    "tests/test_agent_mcp.py",  # 6 s
    "tests/real_agents/test_shortcuts.py",  # 6 s
    "tests/adversarial/test_policy_corpus.py",  # 6 s
    "tests/test_trace_kernel.py",  # 6 s
    "notebooks/kernel-context.ipynb",  # 6 s
    "tests/test_mcp_bridge.py",  # 6 s
    "tests/test_widgets_acks.py",  # 5 s
    "tests/test_import_cost.py",  # 5 s
    "tests/real_agents/test_replay.py",  # 5 s
    "tests/test_client_faults.py",  # 5 s
    "tests/test_terminals.py",  # 5 s
    "tests/test_cells_services.py",  # 4 s
    "tests/test_kernel_tools.py",  # 4 s
    "tests/test_context_kernel.py",  # 4 s
)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist turns -n into its workers
def pytest_cmdline_main(config: pytest.Config) -> None:
    """Choose the workers when -n was not given (``-n 0`` runs in this process):
    - ``-m unit`` alone: UNIT_WORKERS workers, a worker that runs out takes half of what the
      other has left (its tests share nothing outside the process);
    - the whole suite (no paths given; any -m): SUITE_WORKERS workers, a module (or notebook, or
      browser group) at a time (``--dist loadscope`` with the scopes of ``ByModule``);
    - paths given: in this process, as pytest always does."""
    option = config.option
    if (
        getattr(option, "numprocesses", 0) is not None  # -n was given, or xdist is not loaded
        or hasattr(config, "workerinput")  # a worker itself
        or option.collectonly
        or option.usepdb
        or getattr(option, "trace", False)
    ):
        return
    if getattr(option, "markexpr", "").strip() == "unit":
        option.numprocesses = UNIT_WORKERS
        if option.dist == "no":
            option.dist = "worksteal"
        _coverage_of_workers(config)
    elif config.args_source == pytest.Config.ArgsSource.TESTPATHS and option.dist == "no":
        option.numprocesses = SUITE_WORKERS
        option.dist = "loadscope"
        option.acp_by_module = True  # pytest_xdist_make_scheduler: ByModule
        # in collection order (SLOWEST_FIRST's), not loadscope's default of the units with the
        # most tests first, which handed the browser groups (one test each) out last
        option.loadscopereorder = False
        _coverage_of_workers(config)


def _coverage_of_workers(config: pytest.Config) -> None:
    """Under ``--cov``, pytest-cov chose to measure this one process before the workers were
    chosen above (it looks at -n while the first conftests load), and the run then failed at
    its first worker (INTERNALERROR: 'Central' object has no attribute 'configure_node').
    Switch it to measuring the workers, as if -n had been given."""
    plugin = config.pluginmanager.get_plugin("_cov")
    controller = getattr(plugin, "cov_controller", None)
    if controller is None or type(controller).__name__ != "Central":
        return
    from pytest_cov import engine  # type: ignore[import-untyped]  # pinned: pyproject.toml

    controller.cov.stop()
    controller.cov.erase()
    plugin.start(engine.DistMaster)


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: the controller, for each worker
def pytest_configure_node(node: Any) -> None:
    """Tell the workers the run goes a module at a time (they sort alike, slowest first): they
    only see the command line, and the choice above was made in code, not on it."""
    node.workerinput["acp_by_module"] = getattr(node.config.option, "acp_by_module", False)


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: the controller's scheduler
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if not getattr(config.option, "acp_by_module", False):
        return None  # pytest-xdist's own, for the mode chosen

    from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

    class ByModule(LoadScopeScheduling):  # type: ignore[misc]  # xdist has no type hints here
        """A module (a notebook) is one unit of work, except the tests SLOWEST_FIRST names
        one by one (the browser groups, which are one test function's parameters)."""

        def _split_scope(self, nodeid: str) -> str:
            return nodeid if nodeid in SLOWEST_FIRST else nodeid.split("::", 1)[0]

        def remove_node(self, node: Any) -> str | None:
            """A worker is gone. If it crashed (pytest-timeout ends a hung test's worker), its
            unfinished units go to the others, without the test it died in: loadscope's own
            sends that one again, and a test that hangs would hang each worker in turn."""
            workload: dict[str, dict[str, bool]] = self.assigned_work.pop(node)
            # a unit's tests run in the order they are listed: the first not done was running
            crashed = next(
                (nodeid for unit in workload.values() for nodeid, done in unit.items() if not done),
                None,
            )
            if crashed is None:
                return None
            for unit in workload.values():
                if crashed in unit:
                    unit[crashed] = True  # xdist reports it as crashed; it is not run again
            self.workqueue.update(
                {scope: unit for scope, unit in workload.items() if not all(unit.values())}
            )
            for other in self.assigned_work:
                self._reschedule(other)
            return crashed

    return ByModule(config, log)


def pytest_configure(config: pytest.Config) -> None:
    for name, meaning in TIERS.items():
        config.addinivalue_line("markers", f"{name}: tier: {meaning}")
    _check_table()
    _install_guard()


def pytest_unconfigure(config: pytest.Config) -> None:
    _remove_guard()


@functools.cache
def _relative(path: Path) -> str | None:
    """``path`` relative to the repository root, or None when it is outside."""
    try:
        return path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return None


@functools.cache  # thousands of tests, a few hundred modules
def listed_tier(path: Path) -> str:
    """The tier NOT_UNIT gives the module at ``path`` (the longest matching entry), else unit."""
    relative = _relative(path)
    if relative is None:  # outside the repository: only ever unit
        return "unit"
    best = ""
    for entry in NOT_UNIT:
        covers = relative == entry or (entry.endswith("/") and relative.startswith(entry))
        if covers and len(entry) > len(best):
            best = entry
    return NOT_UNIT[best] if best else "unit"


def _unit_alone(config: pytest.Config) -> bool:
    return str(getattr(config.option, "markexpr", "")).strip() == "unit"


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Under ``-m unit`` alone, a module or folder NOT_UNIT lists is not even imported (each
    worker used to collect the whole suite, 4,910 tests, to deselect 2,216 of them). A listed
    module whose text says ``mark.unit`` is collected, and -m decides as usual; a listed folder
    (``tests/real_agents/``, ``notebooks/``) is skipped whole, so a unit test belongs outside
    it."""
    if not _unit_alone(config):
        return None
    relative = _relative(collection_path)
    if relative is None:
        return None
    if collection_path.is_dir():
        return True if NOT_UNIT.get(relative + "/") not in (None, "unit") else None
    if collection_path.suffix == ".ipynb":
        return True if listed_tier(collection_path) != "unit" else None
    if collection_path.suffix != ".py" or listed_tier(collection_path) == "unit":
        return None
    text = collection_path.read_text(encoding="utf-8", errors="replace")
    return None if "mark.unit" in text else True


def own_tiers(item: pytest.Item) -> list[str]:
    """The tier markers a test carries itself (decorators, class or module ``pytestmark``)."""
    return sorted({mark.name for mark in item.iter_markers() if mark.name in TIERS})


def tier_of(item: pytest.Item) -> str:
    own = own_tiers(item)
    return own[0] if own else listed_tier(item.path)


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    doubly = [
        f"{item.nodeid}: {', '.join(own_tiers(item))}" for item in items if len(own_tiers(item)) > 1
    ]
    if doubly:
        raise pytest.UsageError(
            "every test has exactly one tier; these carry more than one:\n  " + "\n  ".join(doubly)
        )
    for item in items:
        if not own_tiers(item):
            item.add_marker(listed_tier(item.path))
    if not hasattr(config, "workerinput"):  # not a pytest-xdist worker
        return
    if getattr(config, "workerinput", {}).get("acp_by_module"):
        _slowest_first(items)
    else:  # the unit tier's worksteal (all workers sort alike)
        items.sort(key=lambda item: _relative(item.path) not in LONGEST_FIRST)


def _slowest_first(items: list[pytest.Item]) -> None:
    """The order pytest-xdist hands the units of work out in: SLOWEST_FIRST's, then the rest."""
    rank = {name: place for place, name in enumerate(SLOWEST_FIRST)}
    last = len(SLOWEST_FIRST)

    def place(item: pytest.Item) -> int:
        return rank.get(item.nodeid, rank.get(item.nodeid.split("::", 1)[0], last))

    items.sort(key=place)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist sends the report to the controller
def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Under pytest-xdist a report travels to the controller as UTF-8, and execnet refuses a
    string with a lone surrogate, ending the whole run (INTERNALERROR). A test's captured output
    can hold one: the JSON-RPC fuzz tests' logged peer text does. Escape them there."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        report.sections = [(title, _utf8(text)) for title, text in report.sections]


def _utf8(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _violation(nodeid: str, attempts: list[str]) -> str:
    return (
        f"{nodeid} is in the unit tier (no subprocess, no kernel, no browser) but tried to start a "
        f"process (refused): {'; '.join(attempts)}.\nGive it the tier it needs: list its module in "
        "NOT_UNIT in tests/_tiers.py, or mark the test (@pytest.mark.process / kernel / agent / "
        "browser)."
    )


def _guard_phase(item: pytest.Item) -> Generator[None, Any, Any]:
    """Run one phase (setup, call or teardown) of ``item`` with the guard armed when it is a
    unit test, and fail the phase when it tried to start a process, even if the code under test
    caught the guard's exception."""
    unit = tier_of(item) == "unit"
    if unit:
        _GUARD.nodeid, _GUARD.attempts = item.nodeid, []
    try:
        return (yield)
    finally:
        attempts, _GUARD.nodeid, _GUARD.attempts = _GUARD.attempts, None, []
        if unit and attempts:
            pytest.fail(_violation(item.nodeid, attempts), pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, Any, Any]:
    return (yield from _guard_phase(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    return (yield from _guard_phase(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, Any, Any]:
    return (yield from _guard_phase(item))
