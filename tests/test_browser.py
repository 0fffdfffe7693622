"""The browser tests: runs the Galata/Playwright suite in ``ui-tests/`` and checks it passed.

The suite drives a real JupyterLab in Debian's chromium. Everything it needs is installed by
``.ci/run`` (see ``ui-tests/README.md``), so anything missing is a failure, never a skip.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
UI_TESTS = ROOT / "ui-tests"
BUILT_EXTENSION = ROOT / "acp_notebook" / "labextension"
BUILT_NBEXTENSION = ROOT / "acp_notebook" / "nbextension"
NBCONFIG = ROOT / "jupyter-config" / "nbconfig" / "notebook.d" / "acp-notebook.json"
#: Debian's chromium-headless-shell (Chromium's old headless mode, what Playwright itself runs
#: for a headless test) where installed, else its chromium: the full browser, headless, also
#: runs the browser's own UI (a renderer of its own, a storage service). Cells and terminals
#: groups, one run each: chromium's processes 25.4 -> 20.7 and 24.0 -> 18.3 CPU-s.
HEADLESS_SHELL = Path("/usr/bin/chromium-headless-shell")
CHROMIUM = Path(
    os.environ.get("ACP_CHROMIUM")
    or (HEADLESS_SHELL if os.access(HEADLESS_SHELL, os.X_OK) else "/usr/bin/chromium")
)

SETUP_HINT = "run `bash .ci/run`, or follow ui-tests/README.md"


def _missing_prerequisites() -> list[str]:
    missing = []
    if not os.access(CHROMIUM, os.X_OK):
        missing.append(f"chromium at {CHROMIUM} (apt-get install -y chromium)")
    if shutil.which("jlpm") is None:
        missing.append("jlpm on PATH (pip install -e '.[test]' installs jupyterlab)")
    for package in ("@playwright/test", "@jupyterlab/galata"):
        if not (UI_TESTS / "node_modules" / package / "package.json").is_file():
            missing.append(f"ui-tests/node_modules/{package} (cd ui-tests && jlpm install)")
    if not (BUILT_EXTENSION / "package.json").is_file():
        missing.append("the built extension in acp_notebook/labextension (labextension/build.sh)")
    if not (BUILT_NBEXTENSION / "index.js").is_file():
        missing.append("the built nbextension in acp_notebook/nbextension (labextension/build.sh)")
    return missing


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_jupyterlab_lists_the_extension() -> None:
    # What `pip install -e '.[test]'` (and .ci/run) must leave behind: JupyterLab loads it.
    done = subprocess.run(
        [sys.executable, "-m", "jupyter", "labextension", "list"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    listing = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)
    assert done.returncode == 0, listing
    assert re.search(r"acp-notebook v[0-9.]+\s+enabled\s+OK", listing), listing


PLAYWRIGHT_TIMEOUT = 25 * 60  # seconds for one group (each took 2-3 minutes in CI's runs)


#: What the output says when the group's port was taken between ``_free_port()`` and the
#: server's bind (Playwright finds something already serving the URL, or the server, which
#: may not try another port, cannot bind it). Nothing ran then: the group starts again.
PORT_TAKEN = re.compile(r"is already used|port \d+ is already in use|address already in use", re.I)
PORT_TRIES = 3


#: Playwright's own command, run straight (through jlpm, yarn's start cost a second of CPU a group)
PLAYWRIGHT = UI_TESTS / "node_modules" / ".bin" / "playwright"
#: where Playwright keeps the spec files it compiled from TypeScript: one place for every group
#: (by default it is under TMPDIR, which each group has its own of, so each compiled them again).
#: Groups side by side may write one entry at once: a reader checks each entry's hash header and
#: compiles again when it does not match.
TRANSFORM_CACHE = ROOT / "test-artifacts" / "playwright-transform-cache"


def _playwright(specs: tuple[str, ...], env: dict[str, str], servers: Sequence[Server] = ()) -> str:
    """Run ``specs`` on a JupyterLab of their own, and ``servers`` beside it, each on a free
    port (tried again on others when one was taken before its server bound it)."""
    command = (
        [str(PLAYWRIGHT)] if PLAYWRIGHT.exists() else [str(shutil.which("jlpm")), "playwright"]
    )
    env = {**env, "PLAYWRIGHT_TRANSFORM_CACHE_DIR": str(TRANSFORM_CACHE)}
    for attempt in range(1, PORT_TRIES + 1):
        # Free ports, so a JupyterLab someone already runs on the default one does not clash.
        env = {**env, "ACP_UI_PORT": str(_free_port())}
        described = []
        for server in servers:
            port = _free_port()
            env[f"ACP_UI_URL_{server.name.upper()}"] = f"http://localhost:{port}"
            described.append({**asdict(server), "port": port})
        env["ACP_UI_SERVERS"] = json.dumps(described)
        done = subprocess.run(
            [*command, "test", *(f"tests/{name}" for name in specs)],
            cwd=UI_TESTS,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=PLAYWRIGHT_TIMEOUT,
            check=False,
        )
        output = done.stdout
        ran = re.search(r"^\s*\d+ (passed|failed)", output, re.MULTILINE)
        if done.returncode and not ran and PORT_TAKEN.search(output) and attempt < PORT_TRIES:
            continue
        assert done.returncode == 0, f"`playwright test` exited {done.returncode}:\n{output}"
        return output
    raise AssertionError("unreachable")  # pragma: no cover - the last try returns or fails


# The Playwright suite runs as two groups of spec files, one pytest test each, so that the
# test command runs them side by side (each group has its own JupyterLab server on its own port,
# its own temp dir and its own output dir). The two are about as long as each other.
GROUPS: dict[str, tuple[str, ...]] = {
    # A group's specs run one after another in one browser; the specs that run against the
    # group's JupyterLab share one page (ui-tests/tests/shared_page.ts). The longest group is
    # the browser tier's floor (--durations in a CI log).
    # Each group pays for its own Playwright runner and worker, browser, server and first page:
    # about 10 CPU-s, more than many a spec's own work. Nine groups (one for each spec with a
    # server of its own) spent 218-224 CPU-s in CI's runs (cost by module); the two spend
    # less (the closing note of issue 23 has the figures).
    "cells-panel": (
        "acp_cell.spec.ts",
        "big_edit.spec.ts",
        "code_card.spec.ts",
        "context.spec.ts",
        "folds.spec.ts",
        "noninteractive.spec.ts",
        "question_form.spec.ts",
        "panel.spec.ts",
        "panel_kernels.spec.ts",
        "gateway.spec.ts",
        "classic.spec.ts",
    ),
    "terminals-kernels": (
        "terminal.spec.ts",
        "terminal_render.spec.ts",
        "terminal_phase.spec.ts",
        "sign_in_terminal.spec.ts",
        "claude_turn.spec.ts",
        "carried_terminal.spec.ts",
        "restart.spec.ts",
        "subshells.spec.ts",
        "no_extension.spec.ts",
        "collab.spec.ts",
        "enterprise_gateway.spec.ts",
    ),
}

#: The specs that run against a server of their own, started beside their group's JupyterLab
#: (ui-tests/playwright.config.js's ACP_UI_SERVERS; a spec finds it through
#: ui-tests/tests/own_server.ts), and its name there.
OWN_SERVERS: dict[str, str] = {
    # its kernels run behind a Kernel Gateway on 127.0.0.1 (_kernel_gateway)
    "gateway.spec.ts": "gateway",
    # the same spec, its kernels behind an Enterprise Gateway on 127.0.0.1 (_enterprise_gateway)
    "enterprise_gateway.spec.ts": "enterprise",
    # the acp-notebook extension disabled (_without_the_extension)
    "no_extension.spec.ts": "plain",
    # the classic notebook with this build of the nbextension (_classic_notebook)
    "classic.spec.ts": "classic",
    # real-time collaboration on: two browsers, two users, one notebook (jupyter-collaboration,
    # in the test extra)
    "collab.spec.ts": "collab",
}


@dataclass(frozen=True)
class Server:
    """A server of its own for a spec: ``serve.py APP`` with more options and environment."""

    name: str
    app: str = "lab"
    args: str = ""
    env: dict[str, str] = field(default_factory=dict)


def _own_server(name: str, tmp: str, env: dict[str, str], stack: contextlib.ExitStack) -> Server:
    """Server ``name`` of :data:`OWN_SERVERS`, with what it needs made in a folder of its own
    under ``tmp`` (a gateway runs until ``stack`` closes)."""
    folder = Path(tmp) / name
    folder.mkdir()
    if name == "gateway":
        return stack.enter_context(_kernel_gateway(name, str(folder), env))
    if name == "enterprise":
        return stack.enter_context(_enterprise_gateway(name, str(folder), env))
    if name == "plain":
        return Server(name, env=_without_the_extension(folder))
    if name == "classic":
        return _classic_notebook(name, folder)
    if name == "collab":
        # real-time collaboration on (ui-tests/jupyter_server_test_config.py)
        return Server(name, env={"ACP_UI_RTC": "1"})
    raise AssertionError(f"no server named {name!r}")


def test_every_spec_file_is_in_exactly_one_group() -> None:
    specs = sorted(path.name for path in (UI_TESTS / "tests").glob("*.spec.ts"))
    grouped = sorted(name for names in GROUPS.values() for name in names)
    assert grouped == specs


def test_a_spec_with_a_server_of_its_own_runs_against_it() -> None:
    # its base URL is its server's (ui-tests/tests/own_server.ts), and no other spec takes one
    for path in (UI_TESTS / "tests").glob("*.spec.ts"):
        named = re.findall(r"ownServer\('([a-z]+)'\)", path.read_text())
        assert named == ([OWN_SERVERS[path.name]] if path.name in OWN_SERVERS else []), path.name


def test_specs_import_galata_from_its_modules_not_its_index() -> None:
    # ui-tests/tests/galata.ts says why (its index costs each Playwright process 0.8 CPU-s more)
    sources = {path.name: path.read_text() for path in (UI_TESTS / "tests").glob("*.ts")}
    assert "galata.ts" in sources
    importing_the_index = re.compile(r"""(from|require\()\s*['"]@jupyterlab/galata['"]""")
    assert [name for name, text in sources.items() if importing_the_index.search(text)] == []


@pytest.mark.timeout(PLAYWRIGHT_TIMEOUT + 120)
@pytest.mark.parametrize("group", sorted(GROUPS))
def test_playwright_suite_passes(group: str) -> None:
    missing = _missing_prerequisites()
    if missing:
        pytest.fail(f"browser tests cannot run, missing: {'; '.join(missing)}. {SETUP_HINT}")
    env = {
        **os.environ,
        "CI": "1",
        "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1",
        # Playwright empties its output dir when it starts: one per group.
        "ACP_UI_OUTPUT": f"playwright-output-{group}",
        "FORCE_COLOR": "0",
        "ACP_CHROMIUM": str(CHROMIUM),  # (playwright.config.js's browser)
        # the Python whose Jupyter serves the group (ui-tests/serve.py, playwright.config.js)
        "ACP_UI_PYTHON": sys.executable,
    }
    # Everything the suite, its servers and kernels put in a temp dir lands in one that is
    # removed after the run. Not under pytest's tmp_path: chromium's socket path, made in it,
    # must stay short (a worker's tmp_path is too long).
    with tempfile.TemporaryDirectory(prefix="acp-ui-", ignore_cleanup_errors=True) as tmp:
        env["TMPDIR"] = tmp
        with contextlib.ExitStack() as stack:
            servers = [
                _own_server(OWN_SERVERS[spec], tmp, env, stack)
                for spec in GROUPS[group]
                if spec in OWN_SERVERS
            ]
            output = _playwright(GROUPS[group], env, servers)
    # An empty run must not count as a pass.
    passed = re.search(r"^\s*(\d+) passed", output, re.MULTILINE)
    assert passed is not None, f"no passed tests reported:\n{output}"
    assert int(passed.group(1)) >= 1, output
    assert not re.search(r"^\s*\d+ (failed|flaky|skipped)", output, re.MULTILINE), output
    print(output)  # each spec's time, shown with -s or on failure


def _without_the_extension(folder: Path) -> dict[str, str]:
    """A Jupyter config dir in ``folder`` whose page config disables acp-notebook (what
    `jupyter labextension disable acp-notebook` writes), for its server only."""
    config = folder / "jupyter-config"
    (config / "labconfig").mkdir(parents=True)
    (config / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": {"acp-notebook": True}})
    )
    return {"JUPYTER_CONFIG_DIR": str(config)}


def _classic_notebook(name: str, folder: Path) -> Server:
    """The classic notebook's server (nbclassic), given this build of the nbextension: a
    Jupyter path holding a copy of ``acp_notebook/nbextension`` (the server refuses to serve a
    file through a symlink that leads out of its nbextensions directory) and a config dir that
    enables it, as the wheel's ``etc/jupyter/nbconfig/notebook.d/acp-notebook.json`` does."""
    data = folder / "jupyter-data"
    shutil.copytree(BUILT_NBEXTENSION, data / "nbextensions" / "acp-notebook")
    config = folder / "jupyter-config"
    (config / "nbconfig").mkdir(parents=True)
    shutil.copy(NBCONFIG, config / "nbconfig" / "notebook.json")
    path = os.pathsep.join(filter(None, [str(data), os.environ.get("JUPYTER_PATH")]))
    return Server(name, "nbclassic", env={"JUPYTER_PATH": path, "JUPYTER_CONFIG_DIR": str(config)})


GATEWAY_START = 120.0  # seconds: a guard for the gateway to answer (it starts in a few)


@contextlib.contextmanager
def _kernel_gateway(name: str, tmp: str, env: dict[str, str]) -> Iterator[Server]:
    """A Kernel Gateway 3 on 127.0.0.1 (its kernels are this Python's), for as long as the
    block runs; yields the JupyterLab server that uses it."""
    # (through ui-tests/serve.py, as the group's server: `jupyter kernelgateway`, without a
    # module that costs 1.3 CPU-s to import)
    with _gateway("Kernel Gateway", tmp, env, lambda port, token: [
        sys.executable, str(UI_TESTS / "serve.py"), "kernelgateway",
        "--KernelGatewayApp.ip=127.0.0.1", f"--KernelGatewayApp.port={port}",
        "--KernelGatewayApp.port_retries=0", f"--KernelGatewayApp.auth_token={token}",
        # without it the gateway answers JupyterLab's kernel listing with 403
        "--JupyterWebsocketPersonality.list_kernels=True",
    ]) as args:  # fmt: skip
        yield Server(name, args=args, env=_with_the_relay_fix(tmp))


#: Enterprise Gateway's own venv (it pins jupyter_server<2), made by .ci/run's enterprise lane.
ENTERPRISE_GATEWAY = Path(
    os.environ.get("ACP_ENTERPRISE_GATEWAY", UI_TESTS / ".venv-enterprise-gateway")
)
#: The lines docs/deploying.md tells an operator to put in a gatewayed server's config.
RELAY_CONFIG = ROOT / "docs" / "gateway_relay_config.py"


def _with_the_relay_fix(tmp: str) -> dict[str, str]:
    """The environment that gives a gatewayed server the lines docs/deploying.md tells an
    operator to add (``RELAY_CONFIG``), from a config dir made in ``tmp``. Without them a new
    kernel's first connection can hang: for good behind Enterprise Gateway, now and then behind
    a Kernel Gateway (docs/gateway-relay.md)."""
    config = Path(tmp) / "server-config"
    config.mkdir()
    # (as jupyter_config.py: with --config, which the group's server is started with, a server
    # reads no jupyter_server_config.py, but every Jupyter app reads jupyter_config.py)
    shutil.copy(RELAY_CONFIG, config / "jupyter_config.py")
    search = os.pathsep.join(filter(None, [str(config), os.environ.get("JUPYTER_CONFIG_PATH")]))
    return {"JUPYTER_CONFIG_PATH": search}


@contextlib.contextmanager
def _enterprise_gateway(name: str, tmp: str, env: dict[str, str]) -> Iterator[Server]:
    """An Enterprise Gateway on 127.0.0.1 from its own venv, whose one kernelspec starts this
    Python's ipykernel; yields the JupyterLab server that uses it."""
    jupyter = ENTERPRISE_GATEWAY / "bin" / "jupyter"
    assert jupyter.is_file(), f"no Enterprise Gateway in {ENTERPRISE_GATEWAY}: {SETUP_HINT}"
    data = Path(tmp) / "enterprise-gateway"
    spec = data / "kernels" / "python3"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    kernel = {"argv": argv, "display_name": "Python 3", "language": "python"}
    (spec / "kernel.json").write_text(json.dumps(kernel))
    gateway_env = {**env, "JUPYTER_PATH": str(data)}
    with _gateway("Enterprise Gateway", tmp, gateway_env, lambda port, token: [
        str(jupyter), "enterprisegateway",
        "--EnterpriseGatewayApp.ip=127.0.0.1", f"--EnterpriseGatewayApp.port={port}",
        "--EnterpriseGatewayApp.port_retries=0", f"--EnterpriseGatewayApp.auth_token={token}",
        "--EnterpriseGatewayApp.list_kernels=True",
    ]) as args:  # fmt: skip
        # KERNEL_USERNAME: the name the server sends with each kernel start (a hub sets it to
        # the user's); Enterprise Gateway refuses root, which this machine's user may be
        yield Server(
            name,
            args=args,
            env={**_with_the_relay_fix(tmp), "KERNEL_USERNAME": "jovyan"},
        )


@contextlib.contextmanager
def _gateway(
    name: str, tmp: str, env: dict[str, str], argv: Callable[[int, str], list[str]]
) -> Iterator[str]:
    """Start a gateway (``argv(port, token)``) on a free port, for as long as the block runs;
    yields the options that point a JupyterLab server at it."""
    token = secrets.token_hex(16)
    for attempt in range(1, PORT_TRIES + 1):
        port = _free_port()
        log = Path(tmp) / f"gateway-{attempt}.log"
        with log.open("wb") as out:
            gateway = subprocess.Popen(
                argv(port, token), cwd=tmp, env=env, stdout=out, stderr=subprocess.STDOUT
            )
        try:
            if _answers(f"http://127.0.0.1:{port}/api/kernelspecs", token, gateway):
                yield (
                    f"--GatewayClient.url=http://127.0.0.1:{port} "
                    f"--GatewayClient.auth_token={token}"
                )
                # The relay fix (_with_the_relay_fix) at work: no kernel connection reached the
                # gateway as a second websocket beside one the relay had left behind for the
                # same session (what hung a kernel's first connection, docs/gateway-relay.md).
                stale = [line for line in log.read_text(errors="replace").splitlines()
                         if "Replacing stale connection" in line]  # fmt: skip
                assert stale == [], f"the {name} had a second websocket for a session: {stale}"
                return
        finally:
            gateway.terminate()
            try:
                gateway.wait(10)
            except subprocess.TimeoutExpired:
                gateway.kill()
                gateway.wait(10)
            # shown with a failing test's output (pytest prints what a test printed)
            print(f"{name} log:\n{log.read_text(errors='replace')[-4000:]}")
        said = log.read_text(errors="replace")
        if not PORT_TAKEN.search(said) or attempt == PORT_TRIES:
            raise AssertionError(f"the {name} did not start:\n{said[-3000:]}")
    raise AssertionError("unreachable")  # pragma: no cover - the last try returns or fails


def _answers(url: str, token: str, server: subprocess.Popen[bytes]) -> bool:
    """True once ``url`` answers 200; False when ``server`` exits first."""
    deadline = time.monotonic() + GATEWAY_START
    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    while time.monotonic() < deadline:
        if server.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(request, timeout=5) as answer:
                if answer.status == 200:
                    return True
        except OSError:  # not listening yet (URLError is an OSError)
            pass
        time.sleep(0.2)  # poll interval while the gateway starts; the loop's condition decides
    raise AssertionError(f"the gateway did not answer {url} in {GATEWAY_START} s")


def test_a_port_taken_before_the_server_binds_it_starts_the_group_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ports: list[str] = []
    outputs = iter(
        [
            "Error: http://localhost:1/lab is already used, make sure that nothing is running",
            "  3 passed (40.0s)",
        ]
    )

    def run(argv: list[str], env: dict[str, str], **_: Any) -> subprocess.CompletedProcess[str]:
        ports.append(env["ACP_UI_PORT"])
        output = next(outputs)
        return subprocess.CompletedProcess(argv, 0 if "passed" in output else 1, output)

    monkeypatch.setattr(shutil, "which", lambda name: "/bin/jlpm")
    monkeypatch.setattr(subprocess, "run", run)
    monkeypatch.setattr(sys.modules[__name__], "_free_port", iter([5001, 5002]).__next__)
    assert "3 passed" in _playwright(("a.spec.ts",), {})
    assert ports == ["5001", "5002"]


def test_a_retried_group_gives_its_own_servers_other_ports_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[tuple[str, list[dict[str, Any]]]] = []
    outputs = iter(["[plain] OSError: [Errno 98] Address already in use", "  1 passed (9.0s)"])

    def run(argv: list[str], env: dict[str, str], **_: Any) -> subprocess.CompletedProcess[str]:
        seen.append((env["ACP_UI_URL_PLAIN"], json.loads(env["ACP_UI_SERVERS"])))
        output = next(outputs)
        return subprocess.CompletedProcess(argv, 0 if "passed" in output else 1, output)

    monkeypatch.setattr(shutil, "which", lambda name: "/bin/jlpm")
    monkeypatch.setattr(subprocess, "run", run)
    monkeypatch.setattr(
        sys.modules[__name__], "_free_port", iter([5001, 5002, 5003, 5004]).__next__
    )
    plain = Server("plain", env={"JUPYTER_CONFIG_DIR": "/x"})
    assert "1 passed" in _playwright(("no_extension.spec.ts",), {}, [plain])
    assert seen == [
        (
            "http://localhost:5002",
            [{"name": "plain", "app": "lab", "args": "", "env": plain.env, "port": 5002}],
        ),
        (
            "http://localhost:5004",
            [{"name": "plain", "app": "lab", "args": "", "env": plain.env, "port": 5004}],
        ),
    ]


def test_a_failure_after_tests_ran_is_not_started_again(monkeypatch: pytest.MonkeyPatch) -> None:
    runs: list[str] = []

    def run(argv: list[str], env: dict[str, str], **_: Any) -> subprocess.CompletedProcess[str]:
        runs.append(env["ACP_UI_PORT"])
        return subprocess.CompletedProcess(
            argv, 1, "EADDRINUSE: address already in use\n  1 failed"
        )

    monkeypatch.setattr(shutil, "which", lambda name: "/bin/jlpm")
    monkeypatch.setattr(subprocess, "run", run)
    with pytest.raises(AssertionError, match="exited 1"):
        _playwright(("a.spec.ts",), {})
    assert len(runs) == 1
