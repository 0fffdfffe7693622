"""The positive model (``_shell_model``): the README and docs/design.md carry its table as the
code has it, every example is approved, and the reader approves nothing the model leaves out."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import tree_sitter
import tree_sitter_bash

from acp_notebook._policy import _shell, _shell_model
from acp_notebook._policy._shell import read_command
from acp_notebook._policy._shell_model import MODEL, NODES, markdown_table

ROOT = Path(__file__).resolve().parents[1]
_TABLE = re.compile(
    r"<!-- positive model: [^\n]*-->\n(.*?)\n<!-- end of the positive model -->", re.S
)


@pytest.mark.parametrize("doc", ["README.md", "docs/design.md"])
def test_the_table_in_the_docs_is_the_code_s(doc: str) -> None:
    found = _TABLE.findall((ROOT / doc).read_text(encoding="utf-8"))
    assert found == [markdown_table()], f"{doc}: paste _shell_model.markdown_table() in"


def test_the_table_lists_every_construct_once_and_ends_with_the_rest() -> None:
    names = [c.name for c in MODEL]
    assert len(names) == len(set(names))
    assert names[-1] == "anything else" and not MODEL[-1].nodes and not MODEL[-1].example
    rows = markdown_table().splitlines()[2:]
    assert [row.split(" | ")[0].removeprefix("| ") for row in rows] == names


@pytest.mark.parametrize("construct", MODEL[:-1], ids=lambda c: c.name)
def test_each_example_is_read_statically(construct: _shell_model.Construct) -> None:
    reading = read_command(construct.example)
    assert reading.static, (construct.example, reading.reasons)
    assert reading.commands


@pytest.mark.parametrize(
    "construct", [c for c in MODEL if c.nodes and c.name != "simple command"], ids=lambda c: c.name
)
def test_a_construct_out_of_the_model_is_asked(
    construct: _shell_model.Construct, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reader takes its node types and tokens from the model: without a construct, its
    example is no longer static (a person is asked)."""
    monkeypatch.setattr(_shell, "NODES", NODES - construct.nodes)
    monkeypatch.setattr(_shell, "TOKENS", _shell_model.TOKENS - construct.tokens)
    reading = read_command(construct.example)
    assert not reading.static, construct.example


def test_the_model_names_only_node_types_the_grammar_has() -> None:
    language = tree_sitter.Language(tree_sitter_bash.language())
    kinds = {
        language.node_kind_for_id(i)
        for i in range(language.node_kind_count)
        if language.node_kind_is_named(i)
    }
    assert kinds >= NODES
    # what the grammar has beyond the model is all code, patterns or expansions: asked
    assert {"command_substitution", "function_definition", "subscript"} <= kinds - NODES


@pytest.mark.parametrize(
    "command",
    [
        "echo $HOME",
        "echo $(ls)",
        "f() { ls; }; f",
        "eval ls",
        "[[ -f a ]]",
        "(( x = 1 ))",
        "let x=1",
        "set -H",
        "set -o history",
        "set -a",
        "bash -i -c ls",
        "printf -v 'b[x]' hi",
        "a[1]=2",
        "ls *.py",
        "echo {a,b}",
        "echo $'a'",
        "ls | sh",
        "case a in +(a)) ls;; esac",
        "for ((i=0; i<1; i++)); do ls; done",
        "select x in a; do ls; done",
        "coproc ls",
        "ls <(ls)",
        "echo hi!x",
    ],
)
def test_anything_else_is_asked(command: str) -> None:
    assert not read_command(command).static, command
