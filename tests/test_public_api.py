"""The public surface of ``acp_notebook``: pinned names, lazy resolution, a light import."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest
from _isolated import modules_after_import, offenders

import acp_notebook

# Changing this list changes the public API: do it on purpose (and update the README).
PUBLIC_NAMES = [
    "AcpError",
    "Agent",
    "AgentExited",
    "Answer",
    "AuthenticationRequired",
    "ConnectionClosed",
    "PermissionDecision",
    "PermissionHandler",
    "ProtocolViolation",
    "RequestPermissionRequest",
    "RpcError",
    "Session",
    "SessionUpdate",
    "Turn",
    "TurnInProgress",
    "UnsupportedProtocolVersion",
    "__version__",
    "connect",
    "connect_streams",
    "load_ipython_extension",
    "unload_ipython_extension",
]

# Where each lazily resolved name is defined: the package must hand out that very object.
HOMES = {
    "AcpError": "acp_notebook._connection._errors",
    "Agent": "acp_notebook._client._agent",
    "AgentExited": "acp_notebook._connection._errors",
    "Answer": "acp_notebook._client._permission",
    "AuthenticationRequired": "acp_notebook._client._errors",
    "ConnectionClosed": "acp_notebook._connection._errors",
    "PermissionDecision": "acp_notebook._client._permission",
    "PermissionHandler": "acp_notebook._client._permission",
    "ProtocolViolation": "acp_notebook._client._errors",
    "RequestPermissionRequest": "acp_notebook._protocol",
    "RpcError": "acp_notebook._connection._errors",
    "Session": "acp_notebook._client._session",
    "SessionUpdate": "acp_notebook._protocol",
    "Turn": "acp_notebook._client._turn",
    "TurnInProgress": "acp_notebook._client._errors",
    "UnsupportedProtocolVersion": "acp_notebook._client._errors",
    "connect": "acp_notebook._client._connect",
    "connect_streams": "acp_notebook._client._connect",
}

# The notebook layer: never loaded by `import acp_notebook` or by the client API.
NOTEBOOK_MODULES = [
    "IPython",
    "ipykernel",
    "ipywidgets",
    "comm",
    "traitlets",
    "acp_notebook._widgets",
    "acp_notebook._magics",
]


def test_all_is_pinned_and_sorted() -> None:
    assert sorted(PUBLIC_NAMES) == PUBLIC_NAMES
    assert list(acp_notebook.__all__) == PUBLIC_NAMES


@pytest.mark.parametrize("name", PUBLIC_NAMES)
def test_each_public_name_resolves(name: str) -> None:
    value = getattr(acp_notebook, name)
    assert value is not None
    assert name in dir(acp_notebook)


@pytest.mark.parametrize("name", sorted(HOMES))
def test_lazy_names_are_the_defining_modules_objects(name: str) -> None:
    home = importlib.import_module(HOMES[name])
    assert getattr(acp_notebook, name) is getattr(home, name)


def test_every_lazy_name_is_public() -> None:
    # A name that resolves lazily but is missing from __all__ is an accidental public name.
    assert set(HOMES) <= set(PUBLIC_NAMES)
    assert set(PUBLIC_NAMES) - set(HOMES) == {
        "__version__",
        "load_ipython_extension",
        "unload_ipython_extension",
    }


def test_unknown_attribute_raises_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        acp_notebook.no_such_name  # noqa: B018
    assert not hasattr(acp_notebook, "_no_such_private")


def test_version_is_a_release_string() -> None:
    parts = acp_notebook.__version__.split(".")
    assert len(parts) >= 2
    assert all(part.isdigit() for part in parts[:2])


def test_star_import_gives_exactly_all() -> None:
    namespace: dict[str, object] = {}
    exec("from acp_notebook import *", namespace)
    assert sorted(set(namespace) - {"__builtins__"}) == sorted(PUBLIC_NAMES)


@pytest.mark.process
def test_import_package_is_light() -> None:
    loaded = modules_after_import("acp_notebook")
    assert offenders(loaded, NOTEBOOK_MODULES) == []
    # Nothing below is loaded until a public name is first used, but the loader of such names
    # (standard library only) and the version (a constant).
    assert sorted(n for n in loaded if n.startswith("acp_notebook.")) == [
        "acp_notebook._lazy",
        "acp_notebook._version",
    ]


@pytest.mark.process
def test_client_api_needs_no_notebook_layer() -> None:
    loaded = modules_after_import("acp_notebook:connect", "acp_notebook:Session")
    assert "acp_notebook._client._agent" in loaded
    assert offenders(loaded, NOTEBOOK_MODULES) == []


def test_the_api_page_names_every_public_name() -> None:
    page = (Path(acp_notebook.__file__).parents[1] / "docs" / "api.md").read_text("utf-8")
    # `Session` must be named itself, not only inside `SessionUpdate`
    missing = [n for n in acp_notebook.__all__ if not re.search(rf"`{re.escape(n)}(?!\w)", page)]
    assert missing == []
