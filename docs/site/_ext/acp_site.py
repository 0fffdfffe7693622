"""Pages generated at build time from the package itself, so they cannot drift from it.

``{acp-help}`` prints what ``%acp?``, ``%%acp?`` or ``%acp SUBCOMMAND --help`` print: the same
argparse parsers (acp_notebook/_magics/_parsers.py, the sub-parsers in _commands.py and
_auth.py), called on a Notebook of their own without a kernel, as tests/test_registry.py does.
``{acp-subcommands}`` makes a section per subcommand with its help. ``{acp-agents}`` is the table
of the vendored ACP registry with this project's notes on each agent (_notebook/_registry.py).
"""

from __future__ import annotations

import contextlib
import io
import os
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

#: argparse wraps help at the terminal's width (COLUMNS): a fixed one, whatever the terminal
HELP_COLUMNS = "88"


@contextlib.contextmanager
def _columns() -> Any:
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_COLUMNS
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = saved


def subcommands() -> tuple[str, ...]:
    from acp_notebook._magics._parsers import _SUBCOMMANDS

    return tuple(_SUBCOMMANDS)


def magic_help(which: str) -> str:
    """What the notebook prints for ``%acp?`` (``which="%acp"``), ``%%acp?`` (``"%%acp"``) or
    ``%acp SUBCOMMAND --help`` (``which=SUBCOMMAND``)."""
    from acp_notebook._magics import AcpMagics

    if which == "%acp":
        return str(AcpMagics.acp.__doc__).strip("\n")
    if which == "%%acp":
        return str(AcpMagics.acp_cell.__doc__).strip("\n")
    from acp_notebook._notebook._owner import Notebook

    nb = Notebook()
    out = io.StringIO()
    try:
        with _columns(), contextlib.redirect_stdout(out):
            AcpMagics(None, notebook=nb).acp(f"{which} --help")
    finally:
        nb.shutdown()
    text = out.getvalue().strip("\n")
    if not text.startswith("usage:"):
        raise RuntimeError(f"%acp {which} --help printed no usage: {text[:200]!r}")
    return text


def _literal(text: str) -> nodes.literal_block:
    block = nodes.literal_block(text, text)
    block["language"] = "text"
    return block


class AcpHelp(SphinxDirective):
    """``{acp-help} %acp`` / ``%%acp`` / SUBCOMMAND: the help text as a literal block."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        return [_literal(magic_help(self.arguments[0]))]


class AcpSubcommands(SphinxDirective):
    """A section per ``%acp`` subcommand (in _SUBCOMMANDS' order) with its ``--help``."""

    def run(self) -> list[nodes.Node]:
        out: list[nodes.Node] = []
        for name in subcommands():
            section = nodes.section()
            section["ids"].append(f"acp-{name}")
            section["names"].append(f"%acp {name}")
            title = nodes.title()
            title += nodes.literal(f"%acp {name}", f"%acp {name}")
            section += title
            section += _literal(magic_help(name))
            self.state.document.note_implicit_target(section)
            out.append(section)
        return out


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def agents_markdown() -> str:
    """The registry's agents as a Markdown table: ours first (with notes), then the rest."""
    from acp_notebook._notebook._registry import NOTES, entries, protocol_of

    rows = [
        "| Agent | `%acp connect` | Version | ACP | Needs | Asks before acting | Output |",
        "|---|---|---|---|---|---|---|",
    ]
    every = entries()
    ordered = [i for i in NOTES if i in every] + sorted(i for i in every if i not in NOTES)
    for agent_id in ordered:
        entry = every[agent_id]
        notes = NOTES.get(agent_id)
        words = f"`{agent_id}`" + (f" or `{notes.alias}`" if notes and notes.alias else "")
        needs = []
        if notes and notes.keys:
            needs.append(" or ".join(f"`{k}`" for k in notes.keys))
        if notes and notes.sign_in:
            needs.append(notes.sign_in)
        if notes and notes.setup:
            needs.append(notes.setup)
        asks = notes.asks if notes else ""
        if notes and notes.unasked_modes:
            asks += "; acts unasked in " + ", ".join(f"`{m}`" for m in notes.unasked_modes)
        rows.append(
            "| "
            + " | ".join(
                _cell(cell)
                for cell in (
                    entry.name,
                    words,
                    entry.version,
                    protocol_of(agent_id),
                    "; ".join(needs) or "(not noted)",
                    asks or "(not noted)",
                    notes.shows if notes else "",
                )
            )
            + " |"
        )
    return "\n".join(rows)


class AcpAgents(SphinxDirective):
    """The registry's agents as a table (parsed as Markdown by MyST)."""

    def run(self) -> list[nodes.Node]:
        container = nodes.container(classes=["acp-agents"])
        self.state.nested_parse(StringList(agents_markdown().splitlines()), 0, container)
        return [container]


def _drop_empty_outputs(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """A turn's live view (a widget output, left out: conf.py) falls back to its empty
    text/plain, which would show as an empty box above the turn's transcript: drop it."""
    for node in list(doctree.findall(nodes.Element)):
        classes = set(node.get("classes", ()))
        if {"output", "text_plain"} <= classes and not node.astext().strip() and node.parent:
            node.parent.remove(node)


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("doctree-resolved", _drop_empty_outputs)  # after MyST-NB picks a mime type
    app.add_directive("acp-help", AcpHelp)
    app.add_directive("acp-subcommands", AcpSubcommands)
    app.add_directive("acp-agents", AcpAgents)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
