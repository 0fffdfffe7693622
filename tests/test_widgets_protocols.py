"""The widget messages are the same on both sides: acp_notebook/_widgets/_protocols.py's
TypedDicts against labextension/src/protocol.ts's interfaces (read with the TypeScript
compiler's parser, through node), and the readers of each side."""

from __future__ import annotations

import json
import shutil
import subprocess
import types
import typing
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import pytest

from acp_notebook._widgets import _protocols

ROOT = Path(__file__).resolve().parents[1]
PROTOCOL_TS = ROOT / "labextension" / "src" / "protocol.ts"
TYPESCRIPT = ROOT / "labextension" / "node_modules" / "typescript"
SHAPES = Path(__file__).parent / "ts_protocol_shapes.cjs"

_SIMPLE = {int: "number", float: "number", str: "string", bool: "boolean", type(None): "null"}


def _names(hint: Any) -> list[str]:
    """A Python annotation as protocol.ts spells it (see ts_protocol_shapes.cjs)."""
    if get_origin(hint) is Literal:
        return sorted(f"'{value}'" for value in get_args(hint))
    if get_origin(hint) in (types.UnionType, typing.Union):
        return sorted(name for arg in get_args(hint) for name in _names(arg))
    if hint in _SIMPLE:
        return [_SIMPLE[hint]]
    if typing.is_typeddict(hint):
        return ["I" + hint.__name__]
    raise AssertionError(f"_protocols uses a type this test does not map: {hint!r}")


def python_shapes() -> dict[str, Any]:
    """The TypedDicts of _protocols (as interfaces ``I<Name>``) and its aliases of them."""
    interfaces: dict[str, Any] = {}
    aliases: dict[str, list[str]] = {}
    for name in _protocols.__all__:
        value = getattr(_protocols, name)
        if typing.is_typeddict(value) and value.__name__ == name:
            hints = typing.get_type_hints(value)
            interfaces["I" + name] = {
                key: {"required": key in value.__required_keys__, "type": _names(hint)}
                for key, hint in hints.items()
            }
        elif typing.is_typeddict(value) or isinstance(value, types.UnionType):
            aliases[name] = _names(value)
    return {"interfaces": interfaces, "aliases": aliases}


def typescript_shapes(source: Path = PROTOCOL_TS) -> dict[str, Any]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not on PATH: protocol.ts is read with the TypeScript compiler")
    if not TYPESCRIPT.is_dir():
        pytest.fail("labextension/node_modules is missing: run `jlpm install` in labextension/")
    done = subprocess.run(
        [node, str(SHAPES), str(TYPESCRIPT), str(source)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    shapes: dict[str, Any] = json.loads(done.stdout)
    return shapes


@pytest.mark.process
def test_both_sides_name_the_same_messages_and_fields() -> None:
    ts, py = typescript_shapes(), python_shapes()
    assert sorted(ts["interfaces"]) == sorted(py["interfaces"])
    for name, fields in py["interfaces"].items():
        assert ts["interfaces"][name] == fields, name
    assert ts["aliases"] == py["aliases"]


@pytest.mark.process
def test_a_changed_field_on_the_typescript_side_is_seen(tmp_path: Path) -> None:
    text = PROTOCOL_TS.read_text("utf-8")
    changed = tmp_path / "protocol.ts"
    # The backlog's token made optional, the download's filename a number.
    changed.write_text(
        text.replace(
            "  seq: number;\n  token: string;", "  seq: number;\n  token?: string;"
        ).replace("  filename: string;", "  filename: number;"),
        "utf-8",
    )
    ts = typescript_shapes(changed)["interfaces"]
    py = python_shapes()["interfaces"]
    assert ts["ITerminalBacklog"]["token"] == {"required": False, "type": ["string"]}
    assert py["ITerminalBacklog"]["token"] == {"required": True, "type": ["string"]}
    assert ts["IPanelDownload"]["filename"]["type"] == ["number"]
    assert ts["ITerminalChunk"] == py["ITerminalChunk"]  # the rest reads the same


def test_the_python_side_is_read_as_typescript_spells_it() -> None:
    py = python_shapes()
    chunk = py["interfaces"]["ITerminalChunk"]
    assert chunk == {
        "type": {"required": True, "type": ["'chunk'"]},
        "seq": {"required": True, "type": ["number"]},
        "b64": {"required": False, "type": ["string"]},  # the bytes, on a text-safe path
    }
    assert py["interfaces"]["IExitStatus"]["signal"] == {
        "required": False,
        "type": ["null", "string"],
    }
    assert py["aliases"]["TerminalToView"] == [
        "ITerminalBacklog",
        "ITerminalChunk",
        "ITerminalReset",
    ]
    assert py["aliases"]["PanelFromFrontEnd"] == ["IPanelRendered"]


def test_every_message_has_a_type_naming_it_once() -> None:
    kinds = [
        fields["type"]["type"]
        for fields in python_shapes()["interfaces"].values()
        if "type" in fields
    ]
    assert all(len(kind) == 1 for kind in kinds)
    assert len({kind[0] for kind in kinds}) == len(kinds) == 12


def test_python_readers_take_only_the_messages_views_send() -> None:
    read = _protocols.read_terminal_message
    assert read({"type": "ready", "token": "t"}) == {"type": "ready", "token": "t"}
    assert read({"type": "ready", "token": 5}) == {"type": "ready", "token": ""}
    assert read({"type": "cancel", "extra": 1}) == {"type": "cancel"}
    assert read({"type": "chunk", "seq": 1}) is None  # kernel -> view only
    assert read({"type": "ack", "seq": 7}) == {"type": "ack", "seq": 7}
    for seq in (-1, 1.0, True, "7", None):
        assert read({"type": "ack", "seq": seq}) is None, seq
    assert read(["ready"]) is None and read(None) is None
    assert read({"type": "input", "data": "pw\r"}) == {"type": "input", "data": "pw\r"}
    assert read({"type": "input", "data": 5}) is None and read({"type": "input"}) is None
    assert read({"type": "resize", "cols": 90, "rows": 20}) == {
        "type": "resize",
        "cols": 90,
        "rows": 20,
    }
    for cols, rows in [(0, 20), (90, 1001), (True, 20), (90.0, 20), ("90", 20), (90, None)]:
        assert read({"type": "resize", "cols": cols, "rows": rows}) is None, (cols, rows)
    assert _protocols.read_panel_message({"type": "rendered"}) == {"type": "rendered"}
    assert _protocols.read_panel_message({"type": "copy", "text": "x"}) is None


def test_a_panel_without_a_sidebar_says_so_only_with_false() -> None:
    read = _protocols.read_panel_message
    assert read({"type": "rendered", "sidebar": False}) == {"type": "rendered", "sidebar": False}
    assert read({"type": "rendered", "sidebar": False, "unstyled": True}) == {
        "type": "rendered",
        "sidebar": False,
        "unstyled": True,
    }
    assert read({"type": "rendered", "unstyled": 1}) == {"type": "rendered"}
    for sidebar in (True, 0, "false", None):
        assert read({"type": "rendered", "sidebar": sidebar}) == {"type": "rendered"}


def test_a_ready_says_its_page_is_unstyled_only_with_true() -> None:
    read = _protocols.read_terminal_message
    assert read({"type": "ready", "token": "t", "unstyled": True}) == {
        "type": "ready",
        "token": "t",
        "unstyled": True,
    }
    for unstyled in (False, "true", 1, None):
        assert read({"type": "ready", "token": "t", "unstyled": unstyled}) == {
            "type": "ready",
            "token": "t",
        }


def test_a_ready_asks_for_text_only_with_true() -> None:
    read = _protocols.read_terminal_message
    assert read({"type": "ready", "token": "t", "text": True}) == {
        "type": "ready",
        "token": "t",
        "text": True,
    }
    for text in (False, "true", 1, None):
        assert read({"type": "ready", "token": "t", "text": text}) == {
            "type": "ready",
            "token": "t",
        }
