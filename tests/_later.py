"""Heavy libraries a few unit modules use, imported when a test first touches them rather than
when pytest imports the module.

Every pytest-xdist worker imports every test module to collect it, so a module-level
``import pandas`` costs each worker (and each pytest a test starts that collects the suite) the
import, whether or not it runs that module's tests: matplotlib's figure, pandas, numpy and
polars were 1.2 CPU-s of each collection. ``Later("pandas").DataFrame`` imports pandas (once)
and gives pandas' own ``DataFrame``.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any


class Later:
    """The module ``name``, imported at the first attribute asked of it."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("_"):
            # what pytest's collection asks of every name in a module (``__test__``, a fixture's
            # marker, ``__wrapped__``): the library's private names are not offered, so that
            # collecting the module imports nothing
            raise AttributeError(attribute)
        return getattr(importlib.import_module(self._name), attribute)

    def __repr__(self) -> str:
        return f"Later({self._name!r})"


def load(*modules: Any) -> None:
    """Import the modules behind these :class:`Later` s now. A module's autouse fixture calls
    it, so each test runs with them loaded, as when the module imported them itself: code that
    looks a library's classes up only where it is already loaded (the kernel context's
    summaries) must not find them missing in a test that runs first in its worker."""
    for module in modules:
        name = object.__getattribute__(module, "_name")
        importlib.import_module(name)
        assert name in sys.modules
