"""The layering of docs/design.md, checked two ways.

* Dynamically: import a layer in a fresh interpreter and look at what it pulled in.
* Statically: read every module of a layer with `ast` and check each import it names
  (including imports under ``TYPE_CHECKING`` or inside functions) against the layer's allowance.
"""

from __future__ import annotations

import ast
import functools
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
        f"{PKG}._connection._jsonrpc",
        f"{PKG}._connection._lines",
        f"{PKG}._connection._process",
        f"{PKG}._client",
        f"{PKG}._state",
        f"{PKG}._widgets",
        f"{PKG}._magics",
        f"{PKG}.agent",
        "anyio",
        "ipywidgets",
        "IPython",
    ],
    "acp_notebook._state": [
        f"{PKG}._connection._jsonrpc",
        f"{PKG}._connection._lines",
        f"{PKG}._connection._process",
        f"{PKG}._client",
        f"{PKG}._widgets",
        f"{PKG}._magics",
        f"{PKG}.agent",
        "anyio",
        "ipywidgets",
        "IPython",
    ],
    "acp_notebook._connection._jsonrpc": [
        f"{PKG}._protocol",
        f"{PKG}._client",
        f"{PKG}._state",
        f"{PKG}._widgets",
        f"{PKG}._magics",
        "pydantic",
        "ipywidgets",
        "IPython",
    ],
    "acp_notebook._connection._process": [
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
        f"{PKG}._state",
        f"{PKG}._widgets",
        f"{PKG}._magics",
        "ipywidgets",
        "IPython",
    ],
    "acp_notebook._widgets": [
        f"{PKG}._connection._jsonrpc",
        f"{PKG}._connection._lines",
        f"{PKG}._connection._process",
    ],
}


@pytest.mark.parametrize("layer", sorted(FORBIDDEN_AT_IMPORT))
@pytest.mark.process
def test_importing_a_layer_pulls_in_nothing_forbidden(layer: str) -> None:
    # Every module of the layer (the embedded agent's entry point included), not just its
    # package: a submodule nobody imports from __init__ must obey the rules too.
    # For widgets, the package's names are what the notebook imports (on first use: the
    # package resolves them lazily); its submodules are checked statically below (a bridge
    # module may reach the client on purpose).
    if layer == "acp_notebook._widgets":
        from acp_notebook import _widgets

        names = [f"{layer}:{name}" for name in _widgets.__all__]
    else:
        names = _all_modules(layer)
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

#: The faces may import every layer (and any third-party package): no rule limits them.
FACES = (f"{PKG}._magics", f"{PKG}._sidepanel", f"{PKG}.__main__", f"{PKG}.mcp_bridge")
ANY_THIRD_PARTY = frozenset({"*"})


def _pkg(*names: str) -> tuple[str, ...]:
    return tuple(f"{PKG}.{name}" for name in names)


#: One rule per package, bottom up: the acp_notebook packages it may import (itself always
#: allowed) and the third-party ones. Module rules inside a package narrow it further.
RULES = [
    # lazy names (PEP 562) for any package: the standard library only, no I/O; every layer may
    # import it (_violations)
    Rule(f"{PKG}._lazy", (), frozenset(), PURE_BANNED),
    # the package's version: a constant every layer may name (_violations)
    Rule(f"{PKG}._version", (), frozenset(), PURE_BANNED),
    # protocol: the wire vocabulary; pydantic only, no I/O (regex checks a question's pattern
    # with a timeout); how agent text is made visible.
    Rule(f"{PKG}._protocol", (), frozenset(THIRD_PARTY_OK | {"regex"}), PURE_BANNED),
    # connection: JSON-RPC on plain dicts, the process and its watchdog, typed errors; no models
    # (orjson: the ingest fast path's parser, optional).
    Rule(f"{PKG}._connection", (), frozenset({"anyio", "orjson"})),
    # state: the pure reducer over protocol models (and the stdlib-only exit label).
    Rule(
        f"{PKG}._state",
        (*_pkg("_protocol"), f"{PKG}._connection._exit"),
        THIRD_PARTY_OK,
        PURE_BANNED,
    ),
    # policy: rules and the shell reader; protocol models in, decisions out.
    Rule(
        f"{PKG}._policy",
        _pkg("_protocol"),
        frozenset(THIRD_PARTY_OK | {"tree_sitter", "tree_sitter_bash"}),
    ),
    # client: Agent/Session/Turn and the client services; never the policy or anything above.
    Rule(
        f"{PKG}._client",
        _pkg("_protocol", "_connection", "_state"),
        frozenset({"anyio"} | THIRD_PARTY_OK),
    ),
    # the embedded agent: the other side of the protocol, on the connection only.
    Rule(
        f"{PKG}.agent",
        _pkg("_protocol", "_connection"),
        # mcp: the embedded agent's MCP client (``@tool`` lines), imported on first use
        frozenset({"anyio", "mcp", "mcp_types"} | THIRD_PARTY_OK),
    ),
    # kernel: context summaries and the kernel tools' MCP server, beside the client.
    Rule(
        f"{PKG}._kernel",
        _pkg("_protocol", "_connection", "_client"),
        frozenset({"anyio", "h11", "mcp", "mcp_types", "uvicorn"} | THIRD_PARTY_OK),
    ),
    # kernel objects as context: no I/O, stdlib only (pandas, numpy... are detected, never
    # imported). It runs the objects' own code (__repr__...): callers use the main thread.
    Rule(f"{PKG}._kernel._context", (f"{PKG}._protocol._visible",), frozenset(), PURE_BANNED),
    # widgets: views of client state; never JSON-RPC, a process, the policy or the notebook.
    Rule(
        f"{PKG}._widgets",
        (*_pkg("_protocol", "_state", "_client"), f"{PKG}._connection._exit"),
        frozenset(
            {"IPython", "idna", "ipywidgets", "markdown_it", "mdit_py_plugins", "latex2mathml"}
            | {"nh3", "traitlets"}
            | THIRD_PARTY_OK
        ),
    ),
    # notebook: the owner of a kernel's agents and cells; every layer below, never a face.
    Rule(
        f"{PKG}._notebook",
        _pkg("_protocol", "_connection", "_state", "_client", "_policy", "_kernel", "_widgets"),
        ANY_THIRD_PARTY,
    ),
]


def test_every_module_is_in_a_ruled_package_or_is_a_face() -> None:
    ruled = {rule.layer for rule in RULES}
    loose = [
        module
        for module, _file in _source_files(PKG)
        if module != PKG
        and not any(_within(module, face) for face in FACES)
        and not any(_within(module, layer) for layer in ruled)
    ]
    assert loose == []


@functools.cache
def _tree(file: Path) -> ast.Module:
    """``file`` parsed, once per process: the checks below read each module several times
    (parsing them all again for each check cost the unit tier 2 CPU-s). Nothing changes a tree."""
    return ast.parse(file.read_text("utf-8"), str(file))


@functools.cache
def _nodes(file: Path) -> tuple[ast.AST, ...]:
    """Every node of ``file``'s tree (``ast.walk``'s order), once per process."""
    return tuple(ast.walk(_tree(file)))


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
    for node in _nodes(file):
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
                allowed = (rule.layer, *rule.internal, f"{PKG}._lazy", f"{PKG}._version")
                if target == PKG:
                    problems.append(f"{where} (the package root: import the layer directly)")
                elif not any(_within(target, ok) for ok in allowed):
                    problems.append(f"{where} (a higher or sibling layer)")
            elif top in sys.stdlib_module_names:
                if top in rule.stdlib_banned:
                    problems.append(f"{where} (I/O in a pure layer)")
            elif top not in rule.third_party and "*" not in rule.third_party:
                problems.append(f"{where} (third-party package not allowed in this layer)")
    return problems


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.layer)
def test_layer_imports_only_what_design_allows(rule: Rule) -> None:
    files = _source_files(rule.layer)
    assert files, f"no source for {rule.layer}"
    assert _violations(rule, files) == []


WIDGET_BANNED = (
    f"{PKG}._connection._jsonrpc",
    f"{PKG}._connection._lines",
    f"{PKG}._connection._process",
    "subprocess",
    "pty",
)


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
    file.write_text("from .._client._agent import Agent\nfrom . import _ansi\nimport subprocess\n")
    module = f"{PKG}._state._reducer"
    assert _imports(module, file) == [
        (1, f"{PKG}._client._agent"),
        (2, f"{PKG}._state._ansi"),
        (3, "subprocess"),
    ]
    state_rule = next(r for r in RULES if r.layer == f"{PKG}._state")
    problems = _violations(state_rule, [(module, file)])
    assert len(problems) == 2
    assert "imports acp_notebook._client._agent (a higher or sibling layer)" in problems[0]
    assert "imports subprocess (I/O in a pure layer)" in problems[1]


# --- the notebook layer: one owner, no cycles ------------------------------------------------


def _type_only_lines(file: Path) -> set[int]:
    """The lines of the imports under ``if TYPE_CHECKING:`` in ``file``."""
    lines: set[int] = set()
    for node in _nodes(file):
        if isinstance(node, ast.If) and ast.unparse(node.test) in {
            "TYPE_CHECKING",
            "t.TYPE_CHECKING",
        }:
            for inner in node.body:
                for sub in ast.walk(inner):
                    if isinstance(sub, ast.Import | ast.ImportFrom):
                        lines.add(sub.lineno)
    return lines


def _graph() -> dict[str, set[str]]:
    """Every acp_notebook module and the acp_notebook modules it imports: any import, lazy
    ones and those under TYPE_CHECKING too, except a TYPE_CHECKING import of a module of the
    same package (``Session`` naming its ``Agent`` in an annotation: one room's classes may
    name each other; a room may not reach back to another)."""
    modules = dict(_source_files(PKG))
    graph: dict[str, set[str]] = {}
    for module, file in modules.items():
        targets = set()
        type_only = _type_only_lines(file)
        for line, target in _imports(module, file):
            while target and target not in modules:  # `from ._widgets._card import x`
                target = target.rpartition(".")[0]
            if line in type_only and target.rpartition(".")[0] == module.rpartition(".")[0]:
                continue
            if target and target != module and target != PKG:
                targets.add(target)
        graph[module] = targets
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles (each once, from its smallest module), by depth-first search.
    A package importing its own submodules (``_widgets`` -> ``_widgets._card``) is how a
    package is made, not a cycle: those edges are left out."""
    found: set[tuple[str, ...]] = set()

    def walk(node: str, path: list[str]) -> None:
        for target in sorted(graph.get(node, ())):
            if _within(target, node):  # the package's own submodule
                continue
            if target in path:
                cycle = path[path.index(target) :]
                start = cycle.index(min(cycle))
                found.add(tuple(cycle[start:] + cycle[:start]))
            elif len(path) < 40:
                walk(target, [*path, target])

    for module in sorted(graph):
        walk(module, [module])
    return [list(c) for c in sorted(found)]


def test_no_import_cycle() -> None:
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_one() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "p": {"p.q"}, "p.q": {"x"}}
    assert _cycles(graph) == [["a", "b", "c"]]


@pytest.mark.parametrize("layer", [f"{PKG}._sidepanel", f"{PKG}._widgets"])
def test_the_panel_and_the_widgets_never_import_the_magics(layer: str) -> None:
    problems = [
        f"{file.name}:{line} imports {target}"
        for module, file in _source_files(layer)
        for line, target in _imports(module, file)
        if _within(target, f"{PKG}._magics")
    ]
    assert problems == []


def test_nothing_imports_bridge_internals() -> None:
    """``_bridge``'s private names (``_hold_agent`` ...) stay inside it."""
    problems = []
    for module, file in _source_files(PKG):
        if module == f"{PKG}._notebook._bridge":
            continue
        tree = _tree(file)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("_bridge"):
                problems += [
                    f"{file.name}:{node.lineno} imports {a.name}"
                    for a in node.names
                    if a.name.startswith("_")
                ]
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "_bridge"
                and node.attr.startswith("_")
            ):
                problems.append(f"{file.name}:{node.lineno} uses _bridge.{node.attr}")
    assert problems == []


#: The process globals that are the process's by nature, each with why. Nothing else at module
#: level holds state: no empty container, no instance of a class, no slot set later, no
#: `global`, and no module sets another module's attribute (a hook).
STATE_ALLOWED = {
    (f"{PKG}._notebook._owner", "_current"): "the kernel's one Notebook",
    (f"{PKG}._notebook._owner", "_current_lock"): "guards _current",
    (f"{PKG}._connection._process", "_live_groups"): "agent groups to end at exit (atexit)",
    (f"{PKG}._connection._process", "_watch_fds"): "the watchdogs' pipes, for the same atexit",
    (f"{PKG}._connection._process", "_registry_lock"): "guards both",
    (f"{PKG}._widgets._coalesce", "SHARED_BUDGET"): "the kernel process's one iopub: one budget",
    (f"{PKG}._protocol._updates", "_FAST_VALIDATORS"): "a cache: each tag's validator, once built",
    (f"{PKG}._protocol._v1._models", "_FAST"): "the same cache for v1",
}
_MUTABLE_CALLS = {"dict", "list", "set", "defaultdict", "OrderedDict", "deque"}
#: module-level constructions that hold no state
_STATELESS_CALLS = {"TypeVar", "TypeAdapter", "ConfigDict", "JSONDecoder"}


def _callee(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")


def _module_names(module: str, file: Path, modules: set[str]) -> set[str]:
    """The names ``file`` binds to a module by an import (``import x``, ``from . import _m``)."""
    names = set()
    tree = _tree(file)
    is_package = file.name == "__init__.py"
    package_parts = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package_parts[: len(package_parts) - (node.level - 1)]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            names |= {a.asname or a.name for a in node.names if f"{base}.{a.name}" in modules}
    return names


def _module_state(module: str, file: Path, modules: set[str] | None = None) -> list[str]:
    """Where state would hide in a module: module-level names bound to an empty mutable
    container, to an instance of a class, or to None with a type (a slot set later); `global`
    statements; and assignments to another module's attribute (a hook set from outside)."""
    tree = _tree(file)
    found = []
    for node in tree.body:
        targets: list[ast.expr] = []
        value = None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        empty = (
            isinstance(value, ast.Dict | ast.List | ast.Set)
            and not getattr(value, "keys", getattr(value, "elts", None))
        ) or (isinstance(value, ast.Call) and _callee(value) in _MUTABLE_CALLS and not value.args)
        instance = (
            isinstance(value, ast.Call)
            and _callee(value)[:1].isupper()
            and _callee(value) not in _STATELESS_CALLS
        )
        slot = isinstance(node, ast.AnnAssign) and isinstance(value, ast.Constant)
        slot = slot and value is not None and getattr(value, "value", 0) is None
        for target in targets:
            if not isinstance(target, ast.Name) or (module, target.id) in STATE_ALLOWED:
                continue
            if empty or instance or slot:
                found.append(f"{file.name}:{node.lineno} {target.id}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            found += [
                f"{file.name}:{node.lineno} global {name}"
                for name in node.names
                if (module, name) not in STATE_ALLOWED
            ]
    hooks = _module_names(module, file, modules or set())
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else []
        for target in targets:
            if (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id in hooks
            ):
                found.append(f"{file.name}:{node.lineno} sets {target.value.id}.{target.attr}")
    return found


@pytest.mark.parametrize("layer", [*(rule.layer for rule in RULES), *FACES])
def test_no_module_global_holds_state(layer: str) -> None:
    modules = {m for m, _f in _source_files(PKG)}
    found = [p for m, f in _source_files(layer) for p in _module_state(m, f, modules)]
    assert found == []


def test_the_state_finder_finds_globals_instances_slots_and_hooks(tmp_path: Path) -> None:
    file = tmp_path / "_x.py"
    file.write_text(
        "from . import _y\nimport json\n"
        "A = {}\nB: list[int] = []\nC = dict()\nD = {'k': 1}\nE = ()\n"
        "F = Budget()\nG: int | None = None\nH = TypeVar('H')\nI = re.compile('x')\n"
        "def f():\n    global A\n    _y.PACE = 1\n    json.x = 2\n"
    )
    modules = {f"{PKG}._x", f"{PKG}._y"}
    assert _module_state(f"{PKG}._x", file, modules) == [
        "_x.py:3 A",
        "_x.py:4 B",
        "_x.py:5 C",
        "_x.py:8 F",
        "_x.py:9 G",
        "_x.py:13 global A",
        "_x.py:14 sets _y.PACE",
        "_x.py:15 sets json.x",
    ]


def test_the_allowed_globals_exist() -> None:
    # an allowance for a name that is gone would let a new one of that name through unseen
    files = dict(_source_files(PKG))
    for module, name in STATE_ALLOWED:
        body = _tree(files[module]).body
        bound = {
            target.id
            for node in body
            if isinstance(node, ast.Assign | ast.AnnAssign)
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
            if isinstance(target, ast.Name)
        }
        assert name in bound, (module, name)


def _notebook_fields() -> set[str]:
    """The names of ``Notebook``'s fields and properties (from its source)."""
    file = dict(_source_files(PKG))[f"{PKG}._notebook._owner"]
    tree = _tree(file)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Notebook")
    names = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
    for node in ast.walk(cls):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
            and isinstance(node.ctx, ast.Store)
        ):
            names.add(node.attr)
    return names


def _notebook_writes(file: Path, fields: set[str]) -> list[str]:
    """Assignments to a field of a notebook (``nb.x = ``, ``self.notebook.x += ``) in ``file``."""
    found = []
    for node in _nodes(file):
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            for item in target.elts if isinstance(target, ast.Tuple) else [target]:
                if not isinstance(item, ast.Attribute) or item.attr not in fields:
                    continue
                owner = item.value
                name = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", "")
                if name.lstrip("_") in ("nb", "notebook"):
                    found.append(f"{file.name}:{node.lineno} {ast.unparse(item)}")
    return found


def test_only_the_notebook_layer_writes_a_notebooks_fields() -> None:
    fields = _notebook_fields()
    assert {"cell_id", "panel", "_agents", "pacing"} <= fields  # found
    found = [
        write
        for module, file in _source_files(PKG)
        if not _within(module, f"{PKG}._notebook")
        for write in _notebook_writes(file, fields)
    ]
    assert found == []


def test_the_notebook_write_finder_finds_one(tmp_path: Path) -> None:
    file = tmp_path / "_face.py"
    file.write_text(
        "nb.panel = 1\nself.nb.cell_id = 2\npanel, nb.panel = nb.panel, None\nx.panel = 3\n"
    )
    assert _notebook_writes(file, {"panel", "cell_id"}) == [
        "_face.py:1 nb.panel",
        "_face.py:2 self.nb.cell_id",
        "_face.py:3 nb.panel",
    ]


# --- every source module has a test module of its own ----------------------------------------

TESTS_DIR = Path(__file__).parent
#: modules without a test module of their own, and why
NO_TEST_MODULE = {
    "acp_notebook/__init__.py": "lazy re-exports only: tests/test_public_api.py pins them",
    "acp_notebook/__main__.py": "the `python -m acp_notebook demo` entry: tests/test_demo.py",
    "acp_notebook/agent/__main__.py": "the agent's entry point: tests/test_agent_e2e.py runs it",
    "acp_notebook/_state/__init__.py": "re-exports of the state layer",
    "acp_notebook/_widgets/_version.py": "one constant: the labextension's version",
}


def _test_module_candidates(rel: Path) -> list[str]:
    """Names a module's own test module may start with: ``_widgets/_card.py`` ->
    ``test_widgets_card``, ``_client.py`` -> ``test_client`` (``test_client_faults.py`` too)."""
    parts = [p.lstrip("_") for p in rel.parts[:-1]]
    name = rel.stem.lstrip("_")
    if rel.stem == "__init__":
        return [f"test_{'_'.join(parts) or 'package'}"]
    return [f"test_{'_'.join([*parts, name])}", f"test_{name}"]


def _only_a_docstring(file: Path) -> bool:
    """A package's ``__init__.py`` that says what the package is and holds no code."""
    body = _tree(file).body
    return file.name == "__init__.py" and all(
        isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) for node in body
    )


def test_every_source_module_has_a_test_module_of_its_own() -> None:
    tests = [p.stem for p in TESTS_DIR.rglob("test_*.py") if "node_modules" not in p.parts]
    missing = []
    for file in sorted(PACKAGE_DIR.rglob("*.py")):
        rel = file.relative_to(PACKAGE_DIR)
        key = f"{PKG}/{rel.as_posix()}"
        if "labextension" in rel.parts or key in NO_TEST_MODULE or _only_a_docstring(file):
            continue
        names = _test_module_candidates(rel)
        if not any(test.startswith(name) for test in tests for name in names):
            missing.append(f"{key} (a tests/{names[0]}.py)")
    assert missing == []


def test_the_exemptions_are_few_and_real() -> None:
    assert len(NO_TEST_MODULE) <= 8
    for key in NO_TEST_MODULE:
        assert (PACKAGE_DIR.parent / key).exists(), key


# --- the folder shows the design ---------------------------------------------------------------

#: A module longer than this is two rooms (the longest today: about 860 lines).
MAX_MODULE_LINES = 900
#: Files at the top of the package besides the sub-packages: the public ``__init__``,
#: ``__main__``, ``mcp_bridge`` (run by path) and ``py.typed``.
MAX_TOP_LEVEL_FILES = 8


def test_no_module_is_longer_than_a_room() -> None:
    long = [
        f"{file.relative_to(PACKAGE_DIR)}: {lines} lines"
        for file in sorted(PACKAGE_DIR.rglob("*.py"))
        if "labextension" not in file.parts
        and (lines := len(file.read_text("utf-8").splitlines())) > MAX_MODULE_LINES
    ]
    assert long == []


def test_the_top_level_holds_the_faces_entry_points_and_packages_only() -> None:
    files = sorted(
        p.name for p in PACKAGE_DIR.iterdir() if p.is_file() and not p.name.endswith(".pyc")
    )
    assert len(files) <= MAX_TOP_LEVEL_FILES, files
    assert [name for name in files if name.endswith(".py")] == [
        "__init__.py",
        "__main__.py",
        "mcp_bridge.py",
    ]
