"""Sphinx configuration of the documentation site (MyST-NB; tests/test_docs_site.py builds it).

Build by hand: ``python3 -m sphinx -W --keep-going -b html docs/site /tmp/acp-site``
(no network needed; the notebooks are rendered from their saved outputs, never run).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))
# argparse wraps the magics' help at COLUMNS, and %acp? is formatted on import: fix it first
os.environ["COLUMNS"] = "88"

import acp_notebook  # noqa: E402  (after COLUMNS)

project = "acp_notebook"
author = "the acp_notebook authors"
copyright = "2026, the acp_notebook authors"
release = version = acp_notebook.__version__

extensions = [
    "myst_nb",  # Markdown pages (MyST) and the example notebooks
    "sphinx.ext.autodoc",
    "acp_site",  # _ext/acp_site.py: the magics' help and the agent table, generated
]

exclude_patterns = ["_build", "**/.ipynb_checkpoints", "_ext"]
source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb"}

# The notebooks are shown as saved (their turns' transcripts are text/html outputs); nothing
# runs, so the build needs no kernel, agent or network.
nb_execution_mode = "off"
# A turn's live view is a widget of this package's own front end (the JupyterLab extension):
# without it a page can show nothing but an empty box, so the saved transcript (text/html)
# stands for the turn, and no widget script is loaded from a CDN.
nb_mime_priority_overrides = [
    ("html", "application/vnd.jupyter.widget-view+json", None),
    ("html", "application/vnd.jupyter.widget-state+json", None),
]
nb_ipywidgets_js: dict[str, dict[str, str]] = {}

myst_enable_extensions = ["colon_fence", "deflist"]
# the help texts and the agents' notes quote code and JSON: keep their quotes as written
smartquotes = False
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": False}

html_theme = "alabaster"
html_title = f"acp_notebook {release}"
html_static_path: list[str] = []
# No page should fetch anything from the network (the build and the browser test are offline)
html_theme_options = {
    "github_button": False,
    "github_banner": False,
    # the magics' help is 88 columns wide and the agent table has seven: room for both
    "page_width": "1280px",
    "body_max_width": "none",
}
