"""Import modules in a fresh interpreter and report what ended up in ``sys.modules``.

The layering and "import stays light" rules are about what an import *pulls in*, which only a
fresh interpreter can tell: in the test process everything is already imported.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterable

_PROBE = """
import importlib, json, sys
for spec in sys.argv[1:]:
    module, _, attribute = spec.partition(":")
    imported = importlib.import_module(module)
    if attribute:
        getattr(imported, attribute)
print(json.dumps(sorted(sys.modules)))
"""


def modules_after_import(*names: str) -> set[str]:
    """The names in ``sys.modules`` after importing ``names`` in a fresh interpreter.

    A name may be ``"module:attribute"``: the attribute is then looked up too (for lazy ones).
    """
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *names],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, f"importing {names} failed:\n{done.stderr}"
    loaded = json.loads(done.stdout)
    assert isinstance(loaded, list)
    return {str(n) for n in loaded}


def offenders(loaded: set[str], forbidden: Iterable[str]) -> list[str]:
    """The loaded modules that are one of ``forbidden`` or inside one of them."""
    return sorted(
        name for name in loaded for bad in forbidden if name == bad or name.startswith(bad + ".")
    )
