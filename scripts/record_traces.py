"""Record the protocol traces that notebooks/real-agents.ipynb replays (notebooks/traces/).

    python3 scripts/record_traces.py              # every agent
    python3 scripts/record_traces.py claude codex # some of them

Each agent is a real one, run offline against the suite's fake model providers
(tests/real_agents/: claude-agent-acp and codex-acp on the fake Anthropic and Responses APIs,
Gemini CLI signed in with a fake key and no model call, fast-agent on its passthrough model with
client terminals). It is connected with ``%acp connect --trace`` in a real kernel run by
nbclient (no front end, as nbval runs the notebook), the cells the notebook runs are run, then
``%acp log --export`` writes the trace. Everything happens in a temporary directory named
``acp-real-agents-*`` (the agents' homes and working directory too), so the only paths a trace
holds are the ones notebooks/sanitize.cfg masks. The fake keys go in ``--env`` (redacted to
``***`` in the export); the script checks that no key and no path of this checkout is left.

The notebook's cells for agent NAME are ``connect_cell(NAME)`` then ``RECORDINGS[NAME].cells``
(tests/test_notebook_traces.py checks that the notebook holds them, in order, and replays each
trace with them). Needs what the suite's real-agent tests need (.ci/run's real-agents and
v1-agents steps); no network: every agent gets a dead proxy, and its model is on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "notebooks" / "traces"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

#: Anything that honours a proxy gets a dead one, never the real network (as the tests do).
OFFLINE = {
    "HTTPS_PROXY": "http://127.0.0.1:9",
    "HTTP_PROXY": "http://127.0.0.1:9",
    "NO_PROXY": "127.0.0.1,localhost",
}


@dataclass
class Launch:
    """How a recording starts its agent: the command, the ``--env`` variables (their values
    are redacted in the export), and the secrets that must not be in the trace."""

    argv: list[str]
    #: its ``--env`` variables: the keys and its HOME (the export redacts their values)
    env: dict[str, str]
    secrets: list[str] = field(default_factory=list)
    #: the rest of its environment, given to the kernel it inherits from: an ``--env`` value
    #: is redacted wherever it appears in a frame, and a value such as ``false`` or ``1234``
    #: would be taken out of every frame's JSON
    inherited: dict[str, str] = field(default_factory=dict)
    #: what to do before the recording's cell N (0: its first after the connect), such as
    #: giving the fake model the next turn's script
    before: dict[int, Callable[[], None]] = field(default_factory=dict)


@dataclass
class Recording:
    name: str
    #: the cells after the connect, exactly as the notebook has them
    cells: list[str]
    #: a context manager that starts the fakes and yields the agent's Launch
    launch: Callable[[Path], Any]
    #: cells whose error is expected (nbval: tag raises-exception)
    raises: set[int] = field(default_factory=set)


def connect_cell(name: str) -> str:
    """The notebook's cell that connects the replay of ``name``'s trace (``traces``: the
    notebook's traces folder, set in its first cell)."""
    return f'%acp connect --name {name} -- acp-notebook-agent --replay "{{traces}}/{name}.jsonl"'


# -- the agents ---------------------------------------------------------------------------


@contextmanager
def _claude(tmp: Path) -> Iterator[Launch]:
    from tests.real_agents.conftest import claude_launch
    from tests.real_agents.fake_anthropic import Text, ToolUse
    from tests.real_agents.test_claude_elicitation import ASK

    with claude_launch(tmp) as claude:
        # A turn that asks a question (AskUserQuestion: an elicitation form; nobody answers
        # it, the cell's --timeout cancels the turn), then one that runs a command the --allow
        # rule approves. The second turn's script is set when it starts: the cancelled turn
        # may or may not have asked the model once more.
        claude.api.add(ASK)
        command = "python3 -c 'print(6 * 7)'"
        bash = ToolUse("Bash", {"command": command, "description": "Multiply six by seven"})

        def second_turn() -> None:
            with claude.api._lock:
                claude.api.script[:] = [bash, Text("The command printed 42.")]

        secret = {"HOME", "ANTHROPIC_API_KEY"}
        env = {k: v for k, v in claude.env.items() if k in secret}
        inherited = {k: v for k, v in claude.env.items() if k not in secret}
        key = claude.env["ANTHROPIC_API_KEY"]
        yield Launch(claude.argv, env, [key], inherited, before={1: second_turn})


CLAUDE = Recording(
    "claude",
    [
        "%%acp --agent claude --timeout 5\nAsk me which colour I like.",
        "%%acp --agent claude --allow 'python3 *'\nWhat is six times seven? Use Python.",
    ],
    _claude,
)


@contextmanager
def _codex(tmp: Path) -> Iterator[Launch]:
    from tests.real_agents.conftest import CODEX_JS
    from tests.real_agents.fake_openai import FakeOpenAI

    home = tmp / "codex-home"
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True)
    with FakeOpenAI() as api:
        (codex_home / "config.toml").write_text(
            'model_provider = "fake"\n'
            "[model_providers.fake]\n"
            'name = "fake"\n'
            f'base_url = "{api.url}"\n'
            'wire_api = "responses"\n'
            "requires_openai_auth = true\n"
            "supports_websockets = false\n"
        )
        api.add("Hello! I am Codex, answering from a recording.")
        key = "sk-fake-codex-5d1e8a7b3c9f2046"
        env = {"HOME": str(home), "CODEX_HOME": str(codex_home), "OPENAI_API_KEY": key}
        yield Launch(["node", str(CODEX_JS)], env, [key], dict(OFFLINE))


CODEX = Recording(
    "codex",
    [
        "%acp auth --name codex",
        "%acp auth api-key --name codex",
        "%%acp --agent codex\nSay hello in one sentence.",
    ],
    _codex,
)


@contextmanager
def _gemini(tmp: Path) -> Iterator[Launch]:
    from tests.real_agents.test_gemini import GEMINI_JS, GeminiLaunch

    home = tmp / "gemini-home"
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text(
        json.dumps({"privacy": {"usageStatisticsEnabled": False}})
    )
    key = GeminiLaunch([], {}, home, home).key
    env = {"HOME": str(home), "GEMINI_API_KEY": key}
    yield Launch(["node", str(GEMINI_JS), "--acp"], env, [key], dict(OFFLINE))


GEMINI = Recording(
    "gemini",
    ["%acp auth --name gemini", "%acp auth gemini-api-key --name gemini"],
    _gemini,
)


@contextmanager
def _fast_agent(tmp: Path) -> Iterator[Launch]:
    from tests.real_agents.test_v1_peers import _fast_agent_argv

    yield Launch([*_fast_agent_argv(tmp / "fa-home"), "--shell"], {}, [], dict(OFFLINE))


FAST_AGENT = Recording(
    "fast-agent",
    [
        "%%acp --agent fast-agent\nhello from the notebook",
        "%%acp --agent fast-agent --allow 'echo *' --allow 'exit *'\n"
        '***CALL_TOOL execute {{"command":"echo hi there; exit 3"}}',
    ],
    _fast_agent,
)

RECORDINGS = {r.name: r for r in (CLAUDE, CODEX, GEMINI, FAST_AGENT)}


# -- running ------------------------------------------------------------------------------


def _notebook(cells: list[str]) -> Any:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    return nb


def run_cells(
    cells: list[str],
    cwd: Path,
    *,
    raises: set[int] | frozenset[int] = frozenset(),
    env: dict[str, str] | None = None,
    before: dict[int, Callable[[], None]] | None = None,
) -> Any:
    """Run ``cells`` with nbclient in a fresh kernel working in ``cwd`` (as nbval does: no
    front end); returns the executed notebook. An error in a cell not in ``raises`` fails."""
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    from tests.kernel_driver import over_ipc

    class OverIpc(KernelManager):  # as notebooks/conftest.py has nbval's kernels
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**(over_ipc() | kwargs))

    nb = _notebook(cells)
    for i in raises:
        nb.cells[i].metadata["tags"] = ["raises-exception"]
    client = NotebookClient(
        nb,
        timeout=180,
        kernel_name="python3",
        kernel_manager_class=OverIpc,
        resources={"metadata": {"path": str(cwd)}},
    )
    saved = dict(os.environ)
    kc = None
    os.environ.update(env or {})  # the kernel's environment, which its agents inherit
    try:
        with client.setup_kernel():
            kc = client.kc
            for index, cell in enumerate(nb.cells):
                if before and index in before:
                    before[index]()
                client.execute_cell(cell, index)
    finally:
        os.environ.clear()
        os.environ.update(saved)
        if kc is not None:  # nbclient leaves its client's sockets to the collector
            kc.stop_channels()
            kc.context.destroy(linger=0)
    return nb


def cell_text(cell: Any) -> str:
    parts = []
    for out in cell.get("outputs", []):
        if out["output_type"] == "stream":
            parts.append(out["text"])
        elif out["output_type"] in ("display_data", "execute_result"):
            parts.append(out["data"].get("text/plain", ""))
        elif out["output_type"] == "error":
            parts.append("\n".join(out["traceback"]))
    return "\n".join(parts)


def record(recording: Recording, out_dir: Path = TRACES) -> Path:
    tmp = Path(tempfile.mkdtemp(prefix="acp-real-agents-"))
    trace = out_dir / f"{recording.name}.jsonl"
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        with recording.launch(tmp) as launch:
            env = " ".join(f"--env {shlex.quote(f'{k}={v}')}" for k, v in launch.env.items())
            connect = (
                f"%acp connect --trace --name {recording.name} {env} -- {shlex.join(launch.argv)}"
            )
            export = tmp / "export.jsonl"
            cells = [
                "%load_ext acp_notebook",
                connect,
                *recording.cells,
                f"%acp log --export {export} --name {recording.name}",
                f"%acp close --name {recording.name}",
            ]
            raises = {i + 2 for i in recording.raises}
            before = {i + 2: hook for i, hook in launch.before.items()}
            nb = run_cells(cells, tmp, raises=raises, env=launch.inherited, before=before)
            for source, cell in zip(cells, nb.cells, strict=True):
                print(f"--- {source.splitlines()[0]}\n{cell_text(cell)}")
        text = export.read_text()
        problems = check_trace(text, launch.secrets)
        if problems:
            raise SystemExit(f"{recording.name}: the trace holds {problems}")
        trace.write_text(text)
        return trace
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check_trace(text: str, secrets: list[str]) -> list[str]:
    """What must not be in a committed trace (the keys, this checkout's path, the home), and
    frames that are not JSON."""
    found = [f"a key ({s[:6]}...)" for s in secrets if s in text]
    for number, line in enumerate(text.splitlines()[1:], start=1):
        try:
            json.loads(json.loads(line)["frame"])
        except ValueError as exc:
            found.append(f"frame {number}, not JSON: {exc}")
    for place in {str(ROOT), str(Path.home()), os.environ.get("USER", "") or "\0"}:
        if place and place != "/" and place in text:
            found.append(f"the path {place}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("agents", nargs="*", choices=[[], *RECORDINGS], default=[])
    args = parser.parse_args(argv)
    os.environ.update(OFFLINE)  # the kernel and everything it starts
    for name in args.agents or RECORDINGS:
        path = record(RECORDINGS[name])
        lines = path.read_text().count("\n")
        print(f"{name}: {path.relative_to(ROOT)} ({path.stat().st_size} bytes, {lines} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
