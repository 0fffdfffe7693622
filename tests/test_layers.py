"""The layering of docs/design.md, checked two ways.

* Dynamically: import a layer in a fresh interpreter and look at what it pulled in.
* Statically: read every module of a layer with `ast` and check each import it names
  (including imports under ``TYPE_CHECKING`` or inside functions) against the layer's allowance.
"""

from __future__ import annotations

import ast
import pkgutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from _isolated import modules_after_import, offenders

import acp_notebook

PACKAGE_DIR = Path(acp_notebook.__file__).parent
PKG = "acp_notebook"


def _all_modules(package: str) -> list[str]:
    """``package`` and every module below it (by walking the source tree, not importing)."""
    path = PACKAGE_DIR.joinpath(*package.split(".")[1:])
    found = [package]
    for info in pkgutil.walk_packages([str(path)], prefix=package + "."):
        found.append(info.name)
    return sorted(found)


# --- dynamic: what importing a layer pulls in ------------------------------------------------

FORBIDDEN_AT_IMPORT = {
    "acp_notebook._protocol": [
        f"{PKG}._jsonrpc",
        f"{PKG}._lines",
        f"{PKG}._process",
        f"{PKG}._client",
        f"{PKG}._permission",
        f"{PKG}._state",
        f"{PKG}._widgets",
        f"{PKG}._magics",
        f"{PKG}.agent",
        "anyio",
        "ipywidgets",
        "IPython",
    ],
    "acp_notebook._state": [
        f"{PKG}._jsonrpc",
        f"{PKG}._lines",
        f"{PKG}._process",
        f"{PKG}._client",
        f"{PKG}._permission",
        f"{PKG}._widgets",
        f"{PKG}._magics",
        f"{PKG}.agent",
        "anyio",
        "ipywidgets",
        "IPython",
    ],
    "acp_notebook._jsonrpc": [
        f"{PKG}._protocol",
        f"{PKG}._client",
        f"{PKG}._state",
        f"{PKG}._widgets",
        f"{PKG}._magics",
        "pydantic",
        "ipywidgets",
        "IPython",
    ],
    "acp_notebook._process": [
        f"{PKG}._protocol",
        f"{PKG}._client",
        f"{PKG}._state",
        f"{PKG}._widgets",
        f"{PKG}._magics",
        "pydantic",
        "ipywidgets",
        "IPython",
    ],
    "acp_notebook.agent": [
        f"{PKG}._client",
        f"{PKG}._permission",
        f"{PKG}._state",
        f"{PKG}._widgets",
        f"{PKG}._magics",
        "ipywidgets",
        "IPython",
    ],
    "acp_notebook._widgets": [
        f"{PKG}._jsonrpc",
        f"{PKG}._lines",
        f"{PKG}._process",
    ],
}


@pytest.mark.parametrize("layer", sorted(FORBIDDEN_AT_IMPORT))
def test_importing_a_layer_pulls_in_nothing_forbidden(layer: str) -> None:
    # Every module of the layer (the embedded agent's entry point included), not just its
    # package: a submodule nobody imports from __init__ must obey the rules too.
    # For widgets, the package is what the notebook imports; its submodules are checked
    # statically below (a bridge module may reach the client on purpose).
    names = [layer] if layer == "acp_notebook._widgets" else _all_modules(layer)
    loaded = modules_after_import(*names)
    assert layer in loaded
    assert offenders(loaded, FORBIDDEN_AT_IMPORT[layer]) == []


# --- static: every import statement of a layer ----------------------------------------------

THIRD_PARTY_OK = {"pydantic", "pydantic_core", "typing_extensions", "annotated_types"}


@dataclass(frozen=True)
class Rule:
    layer: str  # the package or module the rule is about
    internal: tuple[str, ...]  # acp_notebook modules it may import (itself always allowed)
    third_party: frozenset[str]  # top-level non-stdlib packages it may import
    stdlib_banned: frozenset[str] = frozenset()  # stdlib modules it must not use


PURE_BANNED = frozenset({"subprocess", "socket", "asyncio", "threading", "pty", "selectors"})

RULES = [
    # 1 protocol: pydantic only, no I/O.
    Rule(f"{PKG}._protocol", (), frozenset(THIRD_PARTY_OK), PURE_BANNED),
    # 4 state: layer 1 only (and the stdlib-only exit label), pure.
    Rule(
        f"{PKG}._state",
        (f"{PKG}._protocol", f"{PKG}._exit"),
        frozenset(THIRD_PARTY_OK),
        PURE_BANNED,
    ),
    # 2 connection: anyio and the stdlib, plain dicts (no models).
    Rule(f"{PKG}._lines", (f"{PKG}._errors",), frozenset({"anyio"})),
    Rule(f"{PKG}._jsonrpc", (f"{PKG}._errors", f"{PKG}._lines"), frozenset({"anyio"})),
    Rule(
        f"{PKG}._process",
        (f"{PKG}._errors", f"{PKG}._exit", f"{PKG}._lines", f"{PKG}._jsonrpc"),
        frozenset({"anyio"}),
    ),
    # 5 agent: layers 1 and 2.
    Rule(
        f"{PKG}.agent",
        (
            f"{PKG}._protocol",
            f"{PKG}._errors",
            f"{PKG}._lines",
            f"{PKG}._jsonrpc",
            f"{PKG}._process",
        ),
        frozenset({"anyio"} | THIRD_PARTY_OK),
    ),
]


def _source_files(layer: str) -> list[tuple[str, Path]]:
    """(module name, file) for ``layer``: a package (recursively) or a single module."""
    parts = layer.split(".")[1:]
    as_package = PACKAGE_DIR.joinpath(*parts)
    if as_package.is_dir():
        files = sorted(as_package.rglob("*.py"))
    else:
        files = [PACKAGE_DIR.joinpath(*parts[:-1], parts[-1] + ".py")]
    named = []
    for file in files:
        rel = file.relative_to(PACKAGE_DIR.parent).with_suffix("")
        name = ".".join(rel.parts)
        named.append((name.removesuffix(".__init__"), file))
    return named


def _imports(module: str, file: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) for every import in ``file``, relative ones resolved."""
    is_package = file.name == "__init__.py"
    package_parts = module.split(".") if is_package else module.split(".")[:-1]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(file.read_text("utf-8"), str(file))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                assert node.module is not None
                found.append((node.lineno, node.module))
                continue
            base = package_parts[: len(package_parts) - (node.level - 1)]
            if node.module is not None:
                found.append((node.lineno, ".".join([*base, node.module])))
            else:  # `from . import x`: each name may be a submodule
                found.extend((node.lineno, ".".join([*base, a.name])) for a in node.names)
    return found


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _violations(rule: Rule, files: list[tuple[str, Path]]) -> list[str]:
    problems = []
    for module, file in files:
        for line, target in _imports(module, file):
            where = f"{file.name}:{line} ({module}) imports {target}"
            top = target.split(".")[0]
            if top == PKG:
                allowed = (rule.layer, *rule.internal)
                if target == PKG:
                    problems.append(f"{where} (the package root: import the layer directly)")
                elif not any(_within(target, ok) for ok in allowed):
                    problems.append(f"{where} (a higher or sibling layer)")
            elif top in sys.stdlib_module_names:
                if top in rule.stdlib_banned:
                    problems.append(f"{where} (I/O in a pure layer)")
            elif top not in rule.third_party:
                problems.append(f"{where} (third-party package not allowed in this layer)")
    return problems


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.layer)
def test_layer_imports_only_what_design_allows(rule: Rule) -> None:
    files = _source_files(rule.layer)
    assert files, f"no source for {rule.layer}"
    assert _violations(rule, files) == []


WIDGET_BANNED = (f"{PKG}._jsonrpc", f"{PKG}._lines", f"{PKG}._process", "subprocess", "pty")


def test_widgets_never_speak_json_rpc_or_spawn() -> None:
    problems = [
        f"{file.relative_to(PACKAGE_DIR.parent)}:{line} imports {target}"
        for module, file in _source_files(f"{PKG}._widgets")
        for line, target in _imports(module, file)
        if any(_within(target, bad) for bad in WIDGET_BANNED)
    ]
    assert problems == []


def test_static_checker_catches_a_violation(tmp_path: Path) -> None:
    # The checker itself: a relative import two levels up into the client is resolved and caught.
    file = tmp_path / "_reducer.py"
    file.write_text("from .._client import Agent\nfrom . import _ansi\nimport subprocess\n")
    module = f"{PKG}._state._reducer"
    assert _imports(module, file) == [
        (1, f"{PKG}._client"),
        (2, f"{PKG}._state._ansi"),
        (3, "subprocess"),
    ]
    state_rule = next(r for r in RULES if r.layer == f"{PKG}._state")
    problems = _violations(state_rule, [(module, file)])
    assert len(problems) == 2
    assert "imports acp_notebook._client (a higher or sibling layer)" in problems[0]
    assert "imports subprocess (I/O in a pure layer)" in problems[1]
