"""What a ``%%acp`` cell attaches to its prompt (``--with NAMES``, ``--cells N``).

``gather`` summarizes the named objects and the recent cells (``_context``) and keeps their
total under ``PER_PROMPT_CAP``; ``prompt_blocks`` turns them into the prompt's content blocks,
as the agent's prompt capabilities allow (``accepts``): each a ``resource`` block (embedded
context, ``notebook://variables/NAME`` or ``notebook://cells/N``, ``text/plain``) when the
agent takes embedded context, else a ``text`` block (the URI, then the text fenced); a
figure's PNG also as an ``image`` block when the agent takes images. ``Attached`` is what the
cell shows before sending: each attachment's name, kind and size, its summary collapsed (a
``<details>``), and how it goes to the agent.
"""

from __future__ import annotations

import base64
import dataclasses
import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._kernel._context import PER_OBJECT_CAP, PER_PROMPT_CAP, CellText, recent_cells, summarize

__all__ = [
    "Accepts",
    "Attached",
    "Attachment",
    "accepts",
    "fenced",
    "gather",
    "parse_names",
    "prompt_blocks",
]

_MIN_CUT = 300  # below this, an object cut to fit the prompt cap would say nothing: left out
_CAP_NOTE = f"\n… [cut to fit the per-prompt cap of {PER_PROMPT_CAP:,} characters]"


@dataclass(frozen=True)
class Attachment:
    label: str  # "df", "cell 3"
    kind: str  # a summary kind ("dataframe", ...) or "cell"
    type_name: str  # the object's type, or "" for a cell
    uri: str
    text: str  # what the agent gets ("" when left out)
    truncated: bool  # cut by a cap (per object, or to fit the prompt)
    png: bytes | None = None
    left_out: bool = False  # the per-prompt cap was reached before it


@dataclass(frozen=True)
class Accepts:
    embedded_context: bool
    image: bool


def parse_names(values: Sequence[str]) -> list[str]:
    """``["df,model", "x"]`` -> ``["df", "model", "x"]`` (each once, in order); ValueError for
    a word that is not a Python identifier."""
    names: list[str] = []
    for value in values:
        for word in value.split(","):
            word = word.strip()
            if not word:
                continue
            if not word.isidentifier():
                raise ValueError(word)
            if word not in names:
                names.append(word)
    return names


def accepts(agent: Any) -> Accepts:
    """What the agent's prompt capabilities allow: v2 ``capabilities.session.prompt``
    (present objects), or a v1 agent's ``promptCapabilities`` (booleans)."""
    caps = getattr(agent, "capabilities", None)
    session = getattr(caps, "session", None)
    prompt = getattr(session, "prompt", None)
    if prompt is not None:
        return Accepts(prompt.embedded_context is not None, prompt.image is not None)
    v1 = getattr(getattr(agent, "v1_capabilities", None), "prompt_capabilities", None)
    if isinstance(v1, dict):
        return Accepts(v1.get("embeddedContext") is True, v1.get("image") is True)
    return Accepts(False, False)


def _cell_text(cell: CellText) -> str:
    text = f"In [{cell.number}]:\n{cell.source}"
    if cell.output:
        text += f"\nOut[{cell.number}]:\n{cell.output}"
    return text


def gather(
    names: Sequence[str],
    namespace: Mapping[str, object],
    shell: object = None,
    cells: int = 0,
    *,
    prompt_cap: int = PER_PROMPT_CAP,
) -> list[Attachment]:
    """The attachments for ``names`` (each must be in ``namespace``: the caller checks), then
    the last ``cells`` cells of ``shell``'s history, oldest first. Together their text stays
    within ``prompt_cap``, which goes to the named objects first (in order), then to the cells
    from the newest back: one that does not fit is cut, and once fewer than ``_MIN_CUT``
    characters are left the rest are left out (and say so)."""
    objects: list[Attachment] = []
    for name in names:
        summary = summarize(name, namespace[name], cap=min(PER_OBJECT_CAP, prompt_cap))
        objects.append(
            Attachment(
                name,
                summary.kind,
                summary.type_name,
                f"notebook://variables/{name}",
                summary.text,
                summary.truncated,
                summary.png,
            )
        )
    recent = [
        Attachment(
            f"cell {cell.number}",
            "cell",
            "",
            f"notebook://cells/{cell.number}",
            _cell_text(cell),
            cell.truncated,
        )
        for cell in (recent_cells(shell, cells) if cells else [])
    ]
    budget = [prompt_cap]
    fitted_objects = [_fit(item, budget) for item in objects]
    fitted_cells = [_fit(item, budget) for item in reversed(recent)]
    return fitted_objects + fitted_cells[::-1]


def _fit(item: Attachment, budget: list[int]) -> Attachment:
    """``item`` within what is left of the prompt's budget (``budget[0]``, spent here)."""
    left = budget[0]
    if len(item.text) <= left:
        budget[0] = left - len(item.text)
        return item
    budget[0] = 0
    if left >= _MIN_CUT:
        text = item.text[: left - len(_CAP_NOTE)] + _CAP_NOTE
        return dataclasses.replace(item, text=text, truncated=True)
    return dataclasses.replace(item, text="", truncated=True, png=None, left_out=True)


def fenced(item: Attachment) -> str:
    """An attachment as a text block: its URI, then its text in a fenced block (info string
    ``text``) longer than any run of backticks in it, so that it reads as quoted context,
    never as the prompt's own words (or, to the embedded agent, its commands)."""
    longest = max((len(run) for run in re.findall(r"`+", item.text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"\n\n[{item.uri}]\n{fence}text\n{item.text}\n{fence}"


def prompt_blocks(prompt: str, attached: Sequence[Attachment], accept: Accepts) -> list[Any]:
    """The prompt's content blocks: the cell's text, then each attachment (see the module
    docstring)."""
    blocks: list[dict[str, Any]] = [{"type": "text", "text": prompt}]
    for item in attached:
        if item.left_out:
            continue
        if accept.embedded_context:
            resource = {"uri": item.uri, "mimeType": "text/plain", "text": item.text}
            blocks.append({"type": "resource", "resource": resource})
        else:
            blocks.append({"type": "text", "text": fenced(item)})
        if item.png is not None and accept.image:
            data = base64.b64encode(item.png).decode("ascii")
            blocks.append({"type": "image", "mimeType": "image/png", "data": data})
    return blocks


def _size(item: Attachment, accept: Accepts) -> str:
    if item.left_out:
        return f"not sent: the per-prompt cap of {PER_PROMPT_CAP:,} characters was reached"
    size = f"{len(item.text):,} characters"
    if item.truncated:
        size += ", cut"
    if item.png is not None:
        size += (
            f" + PNG {len(item.png):,} bytes"
            if accept.image
            else " (the image is not sent: the agent does not take images)"
        )
    return size


def _what(item: Attachment) -> str:
    return f"{item.kind}, {item.type_name}" if item.type_name else item.kind


class Attached:
    """What the cell shows before its prompt goes: text/plain (one line per attachment) and
    text/html (each summary in a collapsed ``<details>``), both readable without a kernel."""

    def __init__(
        self, attached: Sequence[Attachment], accept: Accepts, *, cells_asked: int = 0
    ) -> None:
        self.attached = list(attached)
        self.accept = accept
        self.cells_asked = cells_asked

    def _how(self) -> str:
        return "embedded resources" if self.accept.embedded_context else "text"

    def _cells_note(self) -> str | None:
        """Fewer cells than ``--cells N`` asked for, and why that may be."""
        found = sum(1 for item in self.attached if item.kind == "cell")
        if found >= self.cells_asked:
            return None
        if not found:
            return (
                f"acp: --cells {self.cells_asked}: IPython's history holds no earlier cell (a"
                " front end that runs cells with store_history off, as nbval does, keeps none)"
            )
        return f"acp: --cells {self.cells_asked}: IPython's history holds only {found}"

    def plain(self) -> str:
        lines = [f"acp: attached to this prompt (sent as {self._how()}):"] if self.attached else []
        for item in self.attached:
            lines.append(f"  {item.label} ({_what(item)}): {_size(item, self.accept)}")
        note = self._cells_note()
        return "\n".join([*lines, note] if note else lines)

    def html(self) -> str:
        esc = html.escape
        note = self._cells_note()
        parts = ['<div class="acp-attached">']
        if self.attached:
            parts.append(f"<div>Attached to this prompt (sent as {esc(self._how())}):</div>")
        for item in self.attached:
            head = (
                f"<code>{esc(item.label)}</code> ({esc(_what(item))}):"
                f" {esc(_size(item, self.accept))}"
            )
            body = f"<pre>{esc(item.text)}</pre>" if item.text else ""
            if item.png is not None:
                data = base64.b64encode(item.png).decode("ascii")
                body += f'<img src="data:image/png;base64,{data}" alt="{esc(item.label)}">'
            parts.append(f"<details><summary>{head}</summary>{body}</details>")
        if note:
            parts.append(f"<div>{esc(note)}</div>")
        parts.append("</div>")
        return "".join(parts)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, str]:
        return {"text/plain": self.plain(), "text/html": self.html()}
