"""The built wheel, installed into a fresh virtual environment, is a working JupyterLab extension.

A real fresh venv (``python -m venv``, no system site-packages) gets the wheel and its
dependencies, JupyterLab included, from the package index. uv installs them (``uv pip install
--python VENV_PYTHON``), resolving as pip would: the same indexes, find-links and constraints,
read from pip's configuration (:func:`_pip_config`), and pip's choice of the best version across
all of them (``--index-strategy unsafe-best-match``). The tests ask what the wheel puts in a
venv, not which installer did it (both install a wheel by its spec: a wheel that only pip
would install differently is what this no longer catches); pip resolved and installed the same
120 packages in 17 CPU-s, uv in 2. The venvs are made ``--without-pip``. What is about pip
itself (an editable install on a machine without Node.js) is pip's, run by this interpreter.
Nothing is written outside pytest's tmp directories: the wheel is built into one (the build hook
only builds the extension in the source tree when it is missing, and this test refuses to run
then), and the venv lives in another.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BUILT = ROOT / "acp_notebook" / "labextension" / "static" / "style.js"
GUARD = 500  # seconds; a guard against a hung pip, never an assertion on speed
# a test runs a few such steps: more than pytest-timeout's default (pyproject.toml) for each
pytestmark = pytest.mark.timeout(3 * GUARD)
WHERE = "import acp_notebook, os; print(os.path.realpath(acp_notebook.__file__))"
NODE = ("node", "nodejs", "npm", "npx", "corepack")


def _clean_env(tmp: Path) -> dict[str, str]:
    """The environment minus anything that points at this checkout's Python or Jupyter dirs."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("JUPYTER", "PYTHON", "VIRTUAL_ENV", "PIP_TARGET", "PIP_PREFIX"))
    }
    env["JUPYTER_DATA_DIR"] = str(tmp / "jupyter-data")  # not the user's ~/.local/share/jupyter
    env["JUPYTER_CONFIG_DIR"] = str(tmp / "jupyter-config")
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # the build loads hatch_build.py from the checkout
    return env


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=GUARD, check=False
    )
    assert done.returncode == 0, f"{argv} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def _fresh_venv(venv: Path) -> list[str]:
    """The command that makes a fresh venv at ``venv``: no system site-packages, and no pip in
    it (:func:`_uv_into` installs into it, or pip: :func:`_pip_into`)."""
    return [sys.executable, "-m", "venv", "--without-pip", str(venv)]


def _pip_into(venv: Path) -> list[str]:
    """pip, run by the venv's own interpreter (``--python``: pip then sees only the venv's
    packages and installs into it, as the venv's own pip would)."""
    return [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python")]


#: pip's settings that choose what gets installed, as uv's options (:func:`_uv_options`)
UV_OPTIONS = {
    "index-url": "--index-url",
    "extra-index-url": "--extra-index-url",
    "find-links": "--find-links",
    "trusted-host": "--allow-insecure-host",
}
#: pip's settings that change nothing uv installs into the venv: how pip talks, logs, retries,
#: times out or caches, where pip would install without ``--python`` (``target``, ``prefix``,
#: ``user``: ignored with a venv's interpreter), and which configuration file it read (its
#: settings are in the listing themselves)
PIP_ONLY = {
    "default-timeout", "timeout", "retries", "disable-pip-version-check", "root-user-action",
    "no-input", "break-system-packages", "progress-bar", "no-color", "log", "cache-dir",
    "no-cache-dir", "quiet", "verbose", "no-warn-script-location", "require-virtualenv",
    "target", "prefix", "user", "config-file",
}  # fmt: skip
TRUE = ("1", "true", "yes", "on", "y", "t")  # what pip takes for true (strtobool)


@cache
def _pip_config() -> dict[str, str]:
    """pip's configuration, as ``pip config list`` shows it (its files and ``PIP_*``
    variables), each setting's value as pip takes it: the environment before the ``install``
    section before ``global``; an empty value is no value."""
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"],
        capture_output=True, text=True, timeout=GUARD, check=True,
    ).stdout  # fmt: skip
    chosen: dict[str, tuple[int, str]] = {}
    rank = {"global": 0, "install": 1, ":env:": 2}
    for line in listed.splitlines():
        key, _, shown = line.partition("=")
        section, _, name = key.rpartition(".")
        value = ast.literal_eval(shown)  # (pip prints each value's repr)
        if section not in rank or not value.strip():  # another command's section, or empty
            continue
        if name not in chosen or rank[section] >= chosen[name][0]:
            chosen[name] = (rank[section], value)
    return {name: value for name, (_, value) in chosen.items()}


def _uv_options(build: bool = False) -> tuple[list[str], dict[str, str]]:
    """uv's options and environment for what pip's configuration says about where packages
    come from, so that uv installs what pip would; ``build``: for ``uv build``. Constraints go
    to the build environments too, as pip's do. A setting this does not know fails the test:
    it might change what pip would install."""
    options: list[str] = []
    env: dict[str, str] = {}
    for name, value in sorted(_pip_config().items()):
        if name in UV_OPTIONS:
            options += [part for item in value.split() for part in (UV_OPTIONS[name], item)]
        elif name == "constraint":
            flags = ["--build-constraint"] if build else ["--constraint", "--build-constraint"]
            options += [part for item in value.split() for flag in flags for part in (flag, item)]
        elif name == "cert":
            env["SSL_CERT_FILE"] = value
        elif name == "no-index":
            options += ["--no-index"] if value.lower() in TRUE else []
        elif name == "pre":
            options += ["--prerelease", "allow"] if value.lower() in TRUE else []
        elif name not in PIP_ONLY:
            pytest.fail(f"pip setting {name}={value!r}: tests/test_install.py cannot give it to uv")
    return options, env


def _uv(
    command: list[str], env: dict[str, str], build: bool = False
) -> tuple[list[str], dict[str, str]]:
    """``uv COMMAND`` (the uv of the test extra) choosing as pip would (the module's doc), and
    its environment: ``env`` without uv's own settings (``UV_*`` but its cache; with
    ``--no-config``, not its files either), so that only pip's choose."""
    try:
        from uv import find_uv_bin
    except ImportError:
        pytest.fail("uv is missing: pip install -e '.[test]'")
    options, uv_env = _uv_options(build)
    kept = {k: v for k, v in env.items() if not k.startswith("UV_") or k == "UV_CACHE_DIR"}
    argv = [find_uv_bin(), *command, "--no-config", "--index-strategy", "unsafe-best-match"]
    return [*argv, *options], {**kept, **uv_env}


def _uv_into(venv: Path, env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """``uv pip install`` into ``venv``, and the environment it runs in."""
    return _uv(["pip", "install", "--quiet", "--python", str(venv / "bin" / "python")], env)


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built once per session into a tmp directory (by ``uv build``: hatchling in an
    isolated build environment, as ``pip wheel`` builds it, in a seventh of the CPU time)."""
    if not BUILT.exists():
        pytest.fail(
            f"{BUILT.relative_to(ROOT)} is missing: build the extension first"
            " (bash labextension/build.sh); this test does not write into the source tree"
        )
    out = tmp_path_factory.mktemp("wheel")
    # this interpreter builds it, as `pip wheel` would (else uv picks one by its own rules)
    command = ["build", "--wheel", "--quiet", "--python", sys.executable, "--out-dir", str(out)]
    build, env = _uv(command, _clean_env(out), build=True)
    _run([*build, str(ROOT)], out, env)
    (found,) = out.glob("acp_notebook-*.whl")
    return found


@dataclass(frozen=True)
class LabVenv:
    """A fresh venv with only the wheel and JupyterLab installed, its environment, and the
    command that installs more into it (:func:`_uv_into`)."""

    venv: Path
    env: dict[str, str]
    install: list[str]


@pytest.fixture(scope="module")
def lab_venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> LabVenv:
    """Made once for this module's tests (JupyterLab's install is most of their time); a test
    that installs more into it says so, and the others ask nothing that more would change."""
    tmp = tmp_path_factory.mktemp("lab-venv")
    venv = tmp / "venv"
    env = _clean_env(tmp)
    # Nothing of the checkout runs in this venv, so its Python may write bytecode (into the
    # venv, a tmp dir): without it every kernel the notebooks test starts compiles pandas,
    # matplotlib and ipykernel from source again, most of that test's CPU time.
    del env["PYTHONDONTWRITEBYTECODE"]
    _run(_fresh_venv(venv), tmp, env)
    python = venv / "bin" / "python"
    probe = [str(python), "-c", "import acp_notebook"]
    before = subprocess.run(probe, cwd=tmp, env=env, capture_output=True, timeout=60)
    assert before.returncode != 0  # a fresh venv: nothing of this checkout is importable there
    # (uv compiles no bytecode unless asked: the tests ask what gets installed, not for
    # bytecode of JupyterLab's whole tree)
    install, env = _uv_into(venv, env)
    _run([*install, str(wheel), "jupyterlab"], tmp, env)
    return LabVenv(venv, env, install)


def test_the_wheel_in_a_fresh_venv_is_an_enabled_labextension(
    lab_venv: LabVenv, tmp_path: Path
) -> None:
    venv, env = lab_venv.venv, lab_venv.env
    python = venv / "bin" / "python"

    where = _run([str(python), "-c", WHERE], tmp_path, env).stdout.strip()
    assert Path(where).is_relative_to(venv.resolve()), where  # the installed copy, not ROOT

    listed = _run([str(venv / "bin" / "jupyter"), "labextension", "list"], tmp_path, env)
    text = re.sub(r"\x1b\[[0-9;]*m", "", listed.stdout + listed.stderr)
    # Only the venv's own directory counts (its section starts with the directory's path).
    own = str(venv / "share" / "jupyter" / "labextensions")
    sections = re.split(r"^(?=\S)", text, flags=re.M)
    section = next((s for s in sections if s.startswith(own)), "")
    assert re.search(r"acp-notebook v[0-9.]+ +enabled +OK", section), text
    assert (venv / "share/jupyter/labextensions/acp-notebook/static/style.js").is_file()
    # the nbextension (the classic notebook, VS Code's local kernels): its module, an entry
    # whose require.config call VS Code reads as text, and the config that loads it
    nbextension = venv / "share/jupyter/nbextensions/acp-notebook"
    assert (nbextension / "index.js").read_text().startswith('define(["@jupyter-widgets/base"]')
    entry = (nbextension / "extension.js").read_text()
    assert (
        "require.config({" in entry and '"acp-notebook": "nbextensions/acp-notebook/index"' in entry
    )
    config = venv / "etc/jupyter/nbconfig/notebook.d/acp-notebook.json"
    assert json.loads(config.read_text()) == {"load_extensions": {"acp-notebook/extension": True}}


def _source_copy(dest: Path) -> Path:
    """The checkout's tracked files (and the build hook), without any built extension."""
    listed = _run(["git", "ls-files", "-z"], ROOT, dict(os.environ)).stdout.split("\0")
    for name in {*filter(None, listed), "hatch_build.py", "pyproject.toml", "README.md"}:
        src = ROOT / name
        if src.is_file() and not name.startswith("acp_notebook/labextension/"):
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            (dest / name).write_bytes(src.read_bytes())
    return dest


def test_an_editable_install_without_node_fails_and_says_node_is_needed(tmp_path: Path) -> None:
    # What `pip install -e '.[test]'` does on a machine without Node.js: it used to succeed
    # and install a UI that cannot render (the build hook only warned).
    source = _source_copy(tmp_path / "src")
    venv = tmp_path / "venv"
    env = _clean_env(tmp_path)
    _run(_fresh_venv(venv), tmp_path, env)
    dirs = [d for d in env["PATH"].split(os.pathsep) if d and not _has_node(Path(d))]
    env["PATH"] = os.pathsep.join([str(venv / "bin"), *dirs])
    pip = [*_pip_into(venv), "install", "--no-deps", "-e", str(source)]
    done = subprocess.run(pip, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=GUARD)
    out = done.stdout + done.stderr
    assert done.returncode != 0, out[-3000:]
    assert "building the JupyterLab extension needs Node.js" in out, out[-3000:]
    gone = subprocess.run([str(venv / "bin" / "python"), "-c", WHERE], cwd=tmp_path, env=env)
    assert gone.returncode != 0  # nothing was installed


def _has_node(directory: Path) -> bool:
    return any((directory / name).exists() for name in NODE)


#: Run each notebook named on the command line in a kernel of its own (the venv's), in order, as
#: Run All would: cells tagged skip-execution (an agent that needs a key) are left out, the
#: first error stops the run and is printed. (One process for all of them: nbclient's imports,
#: jsonschema's among them, cost about 2 CPU-s a process.)
RUN_NOTEBOOK = """
import sys
import nbclient, nbformat
from pathlib import Path
for path in map(Path, sys.argv[1:]):
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb, kernel_name="python3", timeout=300, resources={"metadata": {"path": str(path.parent)}}
    )
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as failed:
        sys.exit(f"{path.name}: {failed.ename}: {failed.evalue}")
    print(path.name, "ran", sum(c.cell_type == "code" for c in nb.cells), "code cells", flush=True)
"""


def test_every_example_notebook_runs_with_the_examples_extra_and_says_so_without(
    wheel: Path, lab_venv: LabVenv, tmp_path: Path
) -> None:
    # Issue 25, finding 4: after the README's install two of the four stopped with
    # ModuleNotFoundError. Only the wheel (first alone, then with its `examples` extra), and
    # JupyterLab. (This test installs the extra into the module's venv.)
    env, install = lab_venv.env, lab_venv.install
    python = str(lab_venv.venv / "bin" / "python")
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    assert len(notebooks) >= 4
    run = tmp_path / "run"  # (the notebooks chdir into temp dirs of their own)
    run.mkdir()
    for notebook in notebooks:
        (run / notebook.name).write_bytes(notebook.read_bytes())
    # the recordings real-agents.ipynb replays travel with it (notebooks/traces/)
    shutil.copytree(ROOT / "notebooks" / "traces", run / "traces")

    # without the extra: the first cell says what is missing, in one line, and nothing else runs
    failed = subprocess.run(
        [python, "-c", RUN_NOTEBOOK, str(run / "kernel-context.ipynb")],
        cwd=run, env=env, capture_output=True, text=True, timeout=GUARD, check=False,
    )  # fmt: skip
    assert failed.returncode != 0
    assert failed.stderr.strip().splitlines()[-1] == (
        "kernel-context.ipynb: ModuleNotFoundError: this notebook needs pandas: "
        "pip install 'acp_notebook[examples]'"
    )

    _run([*install, f"{wheel}[examples]"], tmp_path, env)
    done = _run([python, "-c", RUN_NOTEBOOK, *(str(run / n.name) for n in notebooks)], run, env)
    ran = [line.split(" ran ", 1)[0] for line in done.stdout.splitlines() if " ran " in line]
    assert ran == [notebook.name for notebook in notebooks], done.stdout
