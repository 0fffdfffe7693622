"""What importing the package costs (issue 16), checked in fresh interpreters, not timed.

* ``%load_ext acp_notebook`` registers the magics and nothing more: no notebook, client,
  protocol model, widget, policy or side panel, nor pydantic, anyio or ipywidgets (issue 29:
  ``bench/bench_import.py`` times it in a fresh kernel against ``import ipywidgets``); the
  first ``%acp`` makes the notebook and installs its side panel. The notebook layer never
  imports the embedded agent, nor what only some cells need (the v1 layer, a v1 agent's client
  terminals and files, the kernel tools' server, the Markdown renderer);
* importing the client builds no protocol model and no adapter: pydantic builds each one when
  it is first used (``defer_build``, adapters made or built on first use); nor does it import
  the v1 layer or the client services (both wait for a v1 agent).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from _isolated import modules_after_import, offenders

_LOAD_EXT = """
import json, sys
from IPython.core.interactiveshell import InteractiveShell
InteractiveShell.instance().run_line_magic("load_ext", "acp_notebook")
print(json.dumps(sorted(sys.modules)))
"""

_BUILT = """
import gc, json, sys
import acp_notebook
acp_notebook.connect
# ... and every protocol module, the v1 layer and the client services too: none builds a model
from acp_notebook import _protocol
from acp_notebook._client import _services
from acp_notebook._protocol import _v1
for name in _protocol.__all__:
    getattr(_protocol, name)
from pydantic import BaseModel, TypeAdapter

def models(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from models(sub)

found = {
    m.__module__ + "." + m.__qualname__: m.__pydantic_complete__
    for m in models(BaseModel)
    if m.__module__.startswith("acp_notebook.")
}
adapters = [repr(a._type)[:120] for a in gc.get_objects() if isinstance(a, TypeAdapter)]
built = [repr(a._type)[:120] for a in gc.get_objects()
         if isinstance(a, TypeAdapter) and a.pydantic_complete]
print(json.dumps({"models": found, "adapters": adapters, "built": built}))
"""

# What `%load_ext` leaves for the first `%acp` / `%%acp`: everything but the magics' options.
_FIRST_ACP_IMPORTS = [
    "acp_notebook._notebook._owner",  # the notebook, its bridge and cells
    "acp_notebook._notebook._cells",
    "acp_notebook._notebook._bridge",
    "acp_notebook._notebook._registry",  # the registry's JSON
    "acp_notebook._client",  # the client
    "acp_notebook._connection._jsonrpc",
    "acp_notebook._state",  # the reducer
    "acp_notebook._protocol._base",  # pydantic models
    "acp_notebook._protocol._updates",
    "acp_notebook._policy",  # the policy and its shell parser
    "acp_notebook._sidepanel",
    "acp_notebook._magics._cell",
    "acp_notebook._magics._commands",
    "acp_notebook._magics._words",
    "acp_notebook._widgets._turn",  # every widget
    "acp_notebook._widgets._terminal",
    "acp_notebook._widgets._card",
    "pydantic",
    "pydantic_core",
    "anyio",
    "ipywidgets",
    "jsonschema",
]

# Heavy modules the notebook layer imports only when a cell needs them.
_NOT_AT_LOAD_EXT = [
    "acp_notebook.agent",  # the embedded agent: a subprocess of its own
    "acp_notebook._protocol._v1",  # a v1 agent's models and translator
    "acp_notebook._client._services",  # a v1 agent's client terminals and file system
    "acp_notebook._client._terminals",
    "acp_notebook._client._files",
    "acp_notebook._kernel._tools",  # the kernel tools' MCP server (--kernel-tools)
    "acp_notebook._notebook._kernel_code",
    "mcp",
    "uvicorn",
    "starlette",
    "markdown_it",  # agent Markdown, rendered when the first message shows
    "mdit_py_plugins",
    "latex2mathml",  # math in agent Markdown, on the first math shown
    "nh3",
]  # (pygments, the code card's highlighting, is imported lazily too; IPython's shell has it)


def _run(code: str) -> object:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_load_ext_does_not_import_the_embedded_agent() -> None:
    loaded = _run(_LOAD_EXT)
    assert isinstance(loaded, list)
    assert "acp_notebook._magics" in loaded  # the extension did load
    assert offenders(set(loaded), ["acp_notebook.agent"]) == []


def test_load_ext_leaves_what_only_some_cells_need_for_later() -> None:
    loaded = _run(_LOAD_EXT)
    assert isinstance(loaded, list)
    assert "acp_notebook._magics._parsers" in loaded  # the extension did load
    assert offenders(set(loaded), _NOT_AT_LOAD_EXT) == []


def test_load_ext_imports_only_the_magics_and_their_options() -> None:
    loaded = _run(_LOAD_EXT)
    assert isinstance(loaded, list)
    assert "acp_notebook._widgets._acks" in loaded  # widget edits are acknowledged from now on
    assert offenders(set(loaded), _FIRST_ACP_IMPORTS) == []


_FIRST_ACP = """
import contextlib, io, json, sys
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
shell.run_line_magic("load_ext", "acp_notebook")
said = io.StringIO()
before = set(sys.modules)
shell.run_cell("x = 1")  # a cell of the user's own makes no notebook
after_cell = set(sys.modules)
with contextlib.redirect_stdout(said):
    shell.run_cell("%acp status", store_history=True)
magics = shell.magics_manager.registry["AcpMagics"]
nb = magics.notebook
from acp_notebook._notebook._owner import current
print(json.dumps({
    "cell": sorted(after_cell - before),
    "acp": sorted(set(sys.modules) - after_cell),
    "same": nb is current(),
    "panel_installed": not nb.install_once("sidepanel"),
    "said": said.getvalue(),
}))
"""


def test_the_first_acp_makes_the_kernels_notebook_with_its_side_panel() -> None:
    found = _run(_FIRST_ACP)
    assert isinstance(found, dict)
    assert offenders(set(found["cell"]), ["acp_notebook", "pydantic", "ipywidgets"]) == []
    assert "acp_notebook._notebook._owner" in found["acp"]
    assert "acp_notebook._sidepanel" in found["acp"]
    assert found["same"] is True  # the kernel's notebook (``_notebook.current``)
    assert found["panel_installed"] is True  # its side panel listens to its events
    assert "no agent" in found["said"].lower()  # and the command ran


def test_the_notebook_layer_does_not_import_the_embedded_agent() -> None:
    loaded = modules_after_import(
        "acp_notebook._magics", "acp_notebook._notebook._owner", "acp_notebook._sidepanel"
    )
    assert offenders(loaded, ["acp_notebook.agent"]) == []


def test_importing_the_client_builds_no_protocol_model_and_no_adapter() -> None:
    found = _run(_BUILT)
    assert isinstance(found, dict)
    models = found["models"]
    assert len([n for n in models if n.startswith("acp_notebook._protocol.")]) > 150  # found
    assert "acp_notebook._protocol._base.UnknownVariant" in models  # open unions' members too
    assert len(found["adapters"]) >= 3  # module-level adapters exist, unbuilt
    assert [name for name, done in models.items() if done] == []
    assert found["built"] == []


def test_the_client_imports_neither_v1_nor_the_client_services() -> None:
    loaded = modules_after_import("acp_notebook:connect", "acp_notebook:Session")
    assert "acp_notebook._client._agent" in loaded
    forbidden = ["acp_notebook._protocol._v1", "acp_notebook._client._v1"]
    forbidden += ["acp_notebook._client._services"]
    forbidden += [
        "acp_notebook._client._terminals",
        "acp_notebook._client._files",
        "acp_notebook._client._approval",
    ]
    assert offenders(loaded, forbidden) == []


def test_the_clients_v1_version_number_is_the_v1_layers() -> None:
    from acp_notebook._client import _agent as _client
    from acp_notebook._protocol import _v1

    assert _client.V1_PROTOCOL_VERSION == _v1.PROTOCOL_VERSION


def test_the_client_imports_only_the_protocol_modules_it_needs_at_import() -> None:
    # The method table, the initialize / session method models and the elicitation models are
    # imported by the first request that needs them (``_protocol`` resolves names lazily).
    loaded = modules_after_import("acp_notebook:connect")
    assert "acp_notebook._protocol._updates" in loaded
    later = ["_method_table", "_methods", "_initialize", "_elicitation"]
    assert offenders(loaded, [f"acp_notebook._protocol.{name}" for name in later]) == []


def test_every_protocol_name_resolves_and_is_declared_once() -> None:
    import ast
    from pathlib import Path

    from acp_notebook import _protocol

    for name in _protocol.__all__:
        assert getattr(_protocol, name) is not None or name == "PROTOCOL_VERSION", name
    # The names imported for type checkers are the ones resolved at run time, from the same
    # submodule, and every one of them is public.
    tree = ast.parse(Path(_protocol.__file__).read_text())
    typing_only = {
        alias.name: "." + str(node.module)
        for block in tree.body
        if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING"
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert typing_only == _protocol._LAZY
    assert set(_protocol._LAZY) <= set(_protocol.__all__)
    assert set(dir(_protocol)) >= set(_protocol.__all__)


_AGENT_INITIALIZE = """
import gc, json, sys
from acp_notebook.agent.__main__ import main
main(["--data-dir", sys.argv[1]])  # answers what stdin holds, returns at its end
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
print(gc.get_freeze_count(), len(gc.get_objects()), file=sys.stderr)
"""


@dataclass(frozen=True)
class Answered:
    """The embedded agent run on one ``initialize`` request: its answer, the modules it had
    imported and its heap at the end (frozen objects, objects left to the collector)."""

    answer: dict[str, Any]
    modules: set[str]
    frozen: int
    collectable: int


@pytest.fixture(scope="module")
def answered(tmp_path_factory: pytest.TempPathFactory) -> Answered:
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": 2, "info": {"name": "t", "version": "0"}},
    }
    done = subprocess.run(
        [sys.executable, "-c", _AGENT_INITIALIZE, str(tmp_path_factory.mktemp("agent"))],
        input=json.dumps(request) + "\n",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    *_, modules, heap = done.stderr.splitlines()
    frozen, collectable = map(int, heap.split())
    return Answered(json.loads(done.stdout), set(json.loads(modules)), frozen, collectable)


def test_the_embedded_agent_answers_initialize_without_the_method_table(
    answered: Answered,
) -> None:
    # Every kernel test and every `%acp connect` starts the agent: until a session needs them,
    # it imports only the models of `initialize`, not the method table (which imports every
    # model of the protocol) nor the session and update models.
    answer = answered.answer
    assert answer["id"] == 1 and answer["result"]["protocolVersion"] == 2
    assert "acp_notebook._protocol._initialize" in answered.modules
    later = ["_method_table", "_methods", "_updates", "_elicitation", "_permission", "_v1"]
    assert offenders(answered.modules, [f"acp_notebook._protocol.{name}" for name in later]) == []


def test_the_embedded_agent_leaves_its_heap_frozen_for_the_exit(answered: Answered) -> None:
    # The interpreter's exit runs the cyclic collector over the heap several times: with
    # what `main` leaves frozen (the agent's modules and models), those collections walk
    # nothing it made (about 0.1 CPU-s of each agent's life before).
    assert answered.answer["id"] == 1
    assert answered.frozen > 10_000 and answered.collectable < 100, answered


_V2_CONNECT = """
import json, sys
import anyio
import acp_notebook as acp

async def main():
    argv = [sys.executable, "-m", "acp_notebook.agent", "--data-dir", sys.argv[1]]
    async with acp.connect(argv, client_services=True) as agent:  # protocol="auto"
        await agent.new_session()
        print(agent.protocol_version, file=sys.stderr)

anyio.run(main)
print(json.dumps(sorted(sys.modules)))
"""


def test_a_v2_agent_reached_in_auto_mode_does_not_import_the_v1_layer(tmp_path: Path) -> None:
    # `%acp connect` offers v2 and v1 at once (protocol="auto"): what it sends a v1 agent is
    # built without the v1 layer, and a v2 answer never needs it (nor do client services
    # until a file write is shown): ~0.03 CPU-s of each kernel's first `%acp connect`.
    done = subprocess.run(
        [sys.executable, "-c", _V2_CONNECT, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.split()[-1] == "2"
    loaded = set(json.loads(done.stdout))
    assert "acp_notebook._client._services" in loaded  # the services were offered
    assert offenders(loaded, ["acp_notebook._protocol._v1", "acp_notebook._client._v1"]) == []
