"""Build hook run before jupyter-builder's: building the JupyterLab extension needs Node.js.

Without it, an install from a source tree whose extension is not built (or is older than its
sources, for an editable install) stops here with a message that says so, instead of producing
a package whose terminals and side panel cannot render. A wheel or an sdist carries the built
extension, so installing one needs no Node.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

BUILT = ("acp_notebook/labextension/static/style.js", "acp_notebook/nbextension/index.js")
MESSAGE = """
acp_notebook: building the JupyterLab extension needs Node.js (>= 18), and `node` is not on
PATH. Without the extension every terminal and the side panel fail to render.
  - to use acp_notebook: install the built wheel (pip install acp_notebook-*.whl) or the sdist;
    both carry the built extension and need no Node;
  - to develop it: install Node.js >= 18 (https://nodejs.org, apt install nodejs, or
    conda install -c conda-forge nodejs), then run the install again.
"""


def _stale(root: Path) -> bool:
    try:
        from hatch_jupyter_builder.utils import is_stale
    except ImportError:
        return True
    return bool(is_stale(root / "acp_notebook" / "labextension", root / "labextension" / "src"))


class NodeCheckHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or shutil.which("node"):
            return
        root = Path(self.root)
        if all((root / built).exists() for built in BUILT) and (
            version == "standard" or not _stale(root)
        ):
            return  # jupyter-builder will not build: nothing needs Node
        raise RuntimeError(MESSAGE)
