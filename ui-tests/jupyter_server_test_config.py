"""JupyterLab server for the browser tests (Galata's test settings, runnable as root).

The extension is served straight from ``acp_notebook/labextension`` (built by
``labextension/build.sh``), so the tests do not depend on how the package was installed.
"""

import tempfile
from pathlib import Path

import jupyterlab.galata
from jupyterlab.galata import configure_jupyter_server

c = get_config()  # type: ignore[name-defined]  # noqa: F821

configure_jupyter_server(c)
c.ServerApp.allow_root = True  # CI runs as root

_built = Path(__file__).resolve().parents[1] / "acp_notebook" / "labextension"
if not (_built / "package.json").is_file():
    raise SystemExit(f"{_built} is missing: run labextension/build.sh first")
_extensions = Path(tempfile.mkdtemp(prefix="acp-labextensions-"))
(_extensions / "acp-notebook").symlink_to(_built)
c.LabServerApp.extra_labextensions_path = [
    str(Path(jupyterlab.galata.__file__).parent),
    str(_extensions),
]
