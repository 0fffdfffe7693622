"""What importing the package costs (issue 16), checked in fresh interpreters, not timed.

* ``%load_ext acp_notebook`` (the notebook layer) never imports the embedded agent;
* importing the client builds no protocol model: pydantic builds each one when it is first
  used (``defer_build``), and the method table makes its adapters on first use.
"""

from __future__ import annotations

import json
import subprocess
import sys

from _isolated import modules_after_import, offenders

_LOAD_EXT = """
import json, sys
from IPython.core.interactiveshell import InteractiveShell
InteractiveShell.instance().run_line_magic("load_ext", "acp_notebook")
print(json.dumps(sorted(sys.modules)))
"""

_BUILT = """
import json, sys
import acp_notebook
acp_notebook.connect
from acp_notebook._protocol import WireModel

def models(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from models(sub)

found = {m.__module__ + "." + m.__qualname__: m.__pydantic_complete__ for m in models(WireModel)}
print(json.dumps(found))
"""


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


def test_the_notebook_layer_does_not_import_the_embedded_agent() -> None:
    loaded = modules_after_import(
        "acp_notebook._magics", "acp_notebook._notebook", "acp_notebook._sidepanel"
    )
    assert offenders(loaded, ["acp_notebook.agent"]) == []


def test_importing_the_client_builds_no_v2_model() -> None:
    built = _run(_BUILT)
    assert isinstance(built, dict)
    v2 = {
        name: done
        for name, done in built.items()
        if name.startswith("acp_notebook._protocol.") and "._v1." not in name
    }
    assert len(v2) > 100  # the protocol's models were found
    # Models the v1 layer builds at import (its adapters) pull in the v2 models they use;
    # the rest of the v2 protocol waits for its first use.
    assert sum(v2.values()) < len(v2) / 2, sorted(name for name, done in v2.items() if done)
