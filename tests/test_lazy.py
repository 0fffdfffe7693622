"""acp_notebook._lazy: a package's names imported on first use, and listed before."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator

import pytest

from acp_notebook import _lazy

PACKAGE = "acp_notebook_lazy_probe"


@pytest.fixture
def package() -> Iterator[types.ModuleType]:
    # a package whose one lazy name lives in the standard library's json.decoder
    module = types.ModuleType(PACKAGE)
    module.__path__ = []
    sys.modules[PACKAGE] = module
    module.__getattr__, module.__dir__ = _lazy.attach(  # type: ignore[method-assign]
        PACKAGE, {"JSONDecoder": "json.decoder"}, ["JSONDecoder"]
    )
    yield module
    del sys.modules[PACKAGE]


def test_a_lazy_name_is_imported_once_and_kept(package: types.ModuleType) -> None:
    import json.decoder

    assert "JSONDecoder" not in vars(package)
    assert package.JSONDecoder is json.decoder.JSONDecoder
    assert vars(package)["JSONDecoder"] is json.decoder.JSONDecoder  # later lookups skip it


def test_an_unknown_name_is_an_attribute_error_naming_the_package(
    package: types.ModuleType,
) -> None:
    with pytest.raises(AttributeError, match=f"module '{PACKAGE}' has no attribute 'nope'"):
        package.nope  # noqa: B018
    assert not hasattr(package, "nope")


def test_dir_lists_the_lazy_names_before_they_load(package: types.ModuleType) -> None:
    assert "JSONDecoder" in dir(package)
    assert "JSONDecoder" not in vars(package)


def test_the_four_packages_use_it() -> None:
    import acp_notebook
    from acp_notebook import _magics, _protocol, _widgets

    for module in (acp_notebook, _protocol, _widgets, _magics):
        assert set(module.__all__) <= set(dir(module)), module.__name__
        assert module.__getattr__.__module__ == "acp_notebook._lazy", module.__name__
