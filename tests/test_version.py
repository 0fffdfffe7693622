"""acp_notebook/_version: the one version the package names (to agents, to clients, as
``acp_notebook.__version__``)."""

from __future__ import annotations

import importlib.metadata

import acp_notebook
from acp_notebook._client._errors import client_info
from acp_notebook._version import __version__
from acp_notebook.agent.__main__ import _version as agent_version


def test_it_is_the_installed_distributions() -> None:
    # pyproject.toml's version, as installed: one release, whichever way it is asked
    assert __version__ == importlib.metadata.version("acp_notebook")
    assert acp_notebook.__version__ == __version__


def test_the_client_and_the_embedded_agent_name_it() -> None:
    assert client_info()["version"] == __version__
    assert agent_version() == __version__
