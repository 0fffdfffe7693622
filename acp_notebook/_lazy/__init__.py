"""Names a package imports on first use (PEP 562), for any layer: the standard library only.

A package lists where each of its lazy names lives and calls :func:`attach` once, at its end::

    __getattr__, __dir__ = _lazy.attach(__name__, {"TurnView": "._turn"}, __all__)

The first ``package.TurnView`` imports ``._turn`` and keeps the value in the package's
namespace, so later lookups never reach ``__getattr__`` again; ``dir(package)`` lists the lazy
names before they are loaded. Type checkers see the names through ``if TYPE_CHECKING:``
imports in the package.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["attach"]


def attach(
    package: str, where: Mapping[str, str], exported: Iterable[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, whose lazy names ``where`` maps to
    the (relative) module each is defined in; ``exported`` is the package's ``__all__``."""
    namespace = sys.modules[package].__dict__
    listed = frozenset(exported)

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | listed)

    return __getattr__, __dir__
