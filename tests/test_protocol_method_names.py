"""acp_notebook._protocol._method_names: the method names, importable without any model."""

from __future__ import annotations

import pytest
from _isolated import modules_after_import

from acp_notebook import _protocol
from acp_notebook._protocol import _method_table
from acp_notebook._protocol._method_names import Method


def test_the_names_are_the_ones_the_method_table_and_the_package_give() -> None:
    assert _protocol.Method is Method
    assert _method_table.Method is Method
    names = {v for k, v in vars(Method).items() if k.isupper()}
    assert "initialize" in names and "session/update" in names
    assert len(names) == len([k for k in vars(Method) if k.isupper()])  # no name twice


@pytest.mark.process  # a fresh interpreter
def test_naming_a_method_imports_no_model_and_not_pydantic() -> None:
    # The embedded agent dispatches every request on these names: looking one up must not
    # import the method table (and with it every model of the protocol).
    loaded = modules_after_import("acp_notebook._protocol:Method")
    assert "acp_notebook._protocol._method_names" in loaded
    for name in ("acp_notebook._protocol._method_table", "acp_notebook._protocol._base"):
        assert name not in loaded
    assert "pydantic" not in loaded
