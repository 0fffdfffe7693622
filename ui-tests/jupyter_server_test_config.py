"""JupyterLab server for the browser tests (Galata's test settings, runnable as root).

The extension is served straight from ``acp_notebook/labextension`` (built by
``labextension/build.sh``), so the tests do not depend on how the package was installed.
"""

import functools
import json
import os
import tempfile
from pathlib import Path

import jupyterlab.galata
from jupyterlab.galata import configure_jupyter_server

c = get_config()  # type: ignore[name-defined]  # noqa: F821

configure_jupyter_server(c)
c.ServerApp.allow_root = True  # CI runs as root
# Kernels over IPC sockets, not TCP ports: a free port picked for a kernel can be taken by any
# connection before the kernel binds it, and the kernel dies (tests/kernel_driver.py says more).
c.KernelManager.transport = "ipc"
# Real-time collaboration (jupyter-collaboration, in the test extra) only for the server that
# tests it (tests/test_browser.py's "collab" sets ACP_UI_RTC=1): the other servers test the
# notebook as most people run it, and their servers skip the shared documents' extra work.
c.YDocExtension.disable_rtc = os.environ.get("ACP_UI_RTC") != "1"
# its store of document updates in the group's temp dir (tests/test_browser.py sets TMPDIR),
# not the server's working directory
c.SQLiteYStore.db_path = os.path.join(tempfile.gettempdir(), "acp-ui-ystore.db")

_built = Path(__file__).resolve().parents[1] / "acp_notebook" / "labextension"
if not (_built / "package.json").is_file():
    raise SystemExit(f"{_built} is missing: run labextension/build.sh first")
# One git-ignored directory holding a symlink, remade on each start (no temp dirs left behind).
_extensions = Path(__file__).resolve().parent / ".labextensions"
_extensions.mkdir(exist_ok=True)
_link = _extensions / "acp-notebook"
if not (_link.is_symlink() and _link.resolve() == _built):
    # Made aside and renamed into place: a server already running never sees it missing.
    _fresh = _extensions / f".acp-notebook-{os.getpid()}"
    _fresh.unlink(missing_ok=True)
    _fresh.symlink_to(_built)
    os.replace(_fresh, _link)
c.LabServerApp.extra_labextensions_path = [
    str(Path(jupyterlab.galata.__file__).parent),
    str(_extensions),
]

# JupyterLab asks for the export formats (``GET /api/nbconvert``) each time a page starts, and
# the server answers by scanning every exporter's entry point and instantiating it: a fifth of
# this server's CPU in a group's run (py-spy). Every test starts a page, so the list (which
# cannot change while the server runs) is computed once here.
from nbconvert.exporters import base as _exporters  # noqa: E402

_names = functools.cache(_exporters.get_export_names)
_exporter = functools.cache(_exporters.get_exporter)
_exporters.get_export_names = lambda config=None: list(_names(config))
_exporters.get_exporter = _exporter

# JupyterLab plugins no browser test uses, not activated in the page (nor do they follow each
# notebook the tests open: the table of contents, the debugger, LSP, ...): the former "cells"
# group's CPU 37.1 -> 35.2 s (two runs each). What stays: the notebook, its widgets and outputs, the
# launcher (Galata waits for it), the status bar ("Idle"), the themes, shortcuts, and the
# collaboration plugins (the "collab" server; with them, the file browser and cell executor they
# replace stay disabled).
UNUSED_PLUGINS = [
    "@jupyterlab/debugger-extension",
    "@jupyterlab/lsp-extension",
    "@jupyterlab/extensionmanager-extension",
    "@jupyterlab/pluginmanager-extension",
    "@jupyterlab/help-extension",
    "@jupyterlab/toc-extension",
    "@jupyterlab/celltags-extension",
    "@jupyterlab/metadataform-extension",
    "@jupyterlab/inspector-extension",
    "@jupyterlab/tooltip-extension",
    "@jupyterlab/mermaid-extension",
    "@jupyterlab/vega5-extension",
    "@jupyterlab/pdf-extension",
    "@jupyterlab/video-extension",
    "@jupyterlab/audio-extension",
    "@jupyterlab/imageviewer-extension",
    "@jupyterlab/htmlviewer-extension",
    "@jupyterlab/json-extension",
    "@jupyterlab/json-lines-extension",
    "@jupyterlab/csvviewer-extension",
    "@jupyterlab/markdownviewer-extension",
    "@jupyterlab/running-extension",
    "@jupyterlab/hub-extension",
    "@jupyterlab/settingeditor-extension",
    "@jupyterlab/logconsole-extension",
    "@jupyterlab/documentsearch-extension",
    "@jupyterlab/cell-toolbar-extension",
    "@jupyterlab/terminal-extension",
    "@jupyterlab/console-extension",
    "@jupyterlab/fileeditor-extension",
    "@jupyterlab/apputils-extension:announcements",
    "@jupyter-notebook/lab-extension",
]


def _without_unused_plugins(handler, page_config):
    """jupyterlab_server's page_config_hook: the page config with UNUSED_PLUGINS disabled too,
    and no build check: a page that starts asks the server whether JupyterLab needs a rebuild,
    which runs node and yarn twice (0.35 CPU-s a page load; the extension is served prebuilt)."""
    disabled = [*page_config.get("disabledExtensions", []), *UNUSED_PLUGINS]
    return {
        **page_config,
        "disabledExtensions": disabled,
        "buildCheck": False,
        "buildAvailable": False,
    }


c.ServerApp.tornado_settings = {"page_config_hook": _without_unused_plugins}

# The user settings live in a temp dir of the server's own (Galata leaves them in the user's
# ~/.jupyter/lab/user-settings, where a developer's own would reach the tests), and say one
# thing: the editors' cursor does not blink (CodeMirror's blink rate 0; JupyterLab's is 1200
# ms). A notebook's focused editor redraws its cursor twice a second: an idle page with a
# notebook open cost the browser 1.0 CPU-s in 20 s with it, 0.3 without. The tests keep
# notebooks open for all of a group's run; none looks at the blink. (For JupyterLab and
# Notebook 7, the apps of jupyterlab_server; the classic notebook has no such setting.)
_settings = Path(tempfile.mkdtemp(prefix="acp-ui-settings-"))
(_settings / "@jupyterlab" / "codemirror-extension").mkdir(parents=True)
(_settings / "@jupyterlab" / "codemirror-extension" / "plugin.jupyterlab-settings").write_text(
    json.dumps({"defaultConfig": {"cursorBlinkRate": 0}})
)
c.LabServerApp.user_settings_dir = str(_settings)

# The language server extension's server side (its page side is in UNUSED_PLUGINS): it looks
# for language servers as the server starts (0.2 CPU-s a server).
c.ServerApp.jpserver_extensions = {"jupyter_lsp": False}
