"""Make the invisible visible: control characters and bidi overrides in untrusted strings.

A permission card must show exactly what would run. Terminal controls (ESC, CR, BS, ...) can hide
or redraw text, and bidirectional overrides can reorder it on screen ("Trojan Source"). Each one
is replaced by a visible marker such as ``⟨ESC⟩`` or ``⟨U+202E RLO⟩``. So are the few printable
letters that draw as nothing (Hangul fillers, ``⟨U+3164 HF⟩``): Python takes them in a name.

Three strictnesses:

* the default, for one-line labels (a command, a title, a path): tab and newline are kept but
  also marked, since a newline in a one-line command is worth noticing, and so is every space
  but the ASCII one (``./build.sh\u00a0--check`` is one word to a shell: it must not read as
  two);
* ``multiline=True``, for text whose layout matters (a prompt, a JSON dump): newline (``\\n`` and
  ``\\r\\n``, shown as ``\\n``) and tab pass unmarked, everything else as in the default;
* ``prose=True``, for Markdown an agent wrote: as ``multiline``, and the zero-width joiners and
  left/right marks that ordinary text in many scripts (and emoji sequences) need pass too. The
  overrides, embeddings and isolates that reorder text are still marked;
* ``source=True``, for Python source the user is asked to run: as ``multiline``, and a lone CR
  is shown as ``⟨CR⟩`` and a line break, for Python ends a line there too: ``# a comment\r
  import os`` runs the import (issue 22, finding 14). Python's tokenizer breaks lines at
  ``\n``, ``\r\n`` and ``\r`` only (:func:`source_lines`); FF, VT, ``\x1c``-``\x1e``, NEL,
  U+2028 and U+2029, where ``str.splitlines`` breaks too, stay marked inside their line, as
  Python reads them.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["Visible", "make_visible", "source_lines", "visible_text"]

_C0_NAMES = {
    0x00: "NUL", 0x07: "BEL", 0x08: "BS", 0x09: "TAB", 0x0A: "LF", 0x0B: "VT", 0x0C: "FF",
    0x0D: "CR", 0x1B: "ESC", 0x7F: "DEL",
}  # fmt: skip

_FORMAT_NAMES = {
    0x061C: "ALM", 0x200B: "ZWSP", 0x200C: "ZWNJ", 0x200D: "ZWJ", 0x200E: "LRM", 0x200F: "RLM",
    0x202A: "LRE", 0x202B: "RLE", 0x202C: "PDF", 0x202D: "LRO", 0x202E: "RLO", 0x2066: "LRI",
    0x2067: "RLI", 0x2068: "FSI", 0x2069: "PDI", 0xFEFF: "BOM", 0x2028: "LSEP", 0x2029: "PSEP",
}  # fmt: skip

#: Letters that draw as nothing (Hangul fillers, the grapheme joiner, Khmer inherent vowels):
#: printable, and Python takes them in a name, so ``x\u3164 = 1`` looks like ``x = 1``.
_BLANK_LETTERS = {
    0x034F: "CGJ", 0x115F: "HCF", 0x1160: "HJF", 0x17B4: "KIV AQ", 0x17B5: "KIV AA",
    0x3164: "HF", 0xFFA0: "HWHF",
}  # fmt: skip
_BLANK = frozenset(map(chr, _BLANK_LETTERS))

_LAYOUT = frozenset("\n\t")
_PROSE = _LAYOUT | frozenset("\u200c\u200d\u200e\u200f")  # ZWNJ, ZWJ, LRM, RLM
# Printable ASCII never needs a marker: only runs of other characters are looked at, and a run
# that ``str.isprintable`` passes (any script, no controls, no format characters) is kept whole.
_RUN = re.compile(r"[^\x20-\x7e]+")
# The same when newline and tab are kept: they end a run, and CR LF is matched as one.
_LAYOUT_RUN = re.compile(r"\r\n|[^\x20-\x7e\n\t\r]+|\r")
#: where Python's tokenizer ends a line (not where ``str.splitlines`` does)
_PYTHON_LINE_END = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class Visible:
    text: str  # the string with every hidden character replaced by a marker
    hidden: tuple[str, ...]  # the marker names found, in order of first appearance

    @property
    def suspicious(self) -> bool:
        return bool(self.hidden)


@lru_cache(maxsize=4096)
def _marker(ch: str) -> str | None:
    code = ord(ch)
    if code in _FORMAT_NAMES:
        return f"U+{code:04X} {_FORMAT_NAMES[code]}"
    if code in _BLANK_LETTERS:
        return f"U+{code:04X} {_BLANK_LETTERS[code]}"
    if code < 0x20 or code == 0x7F:
        return _C0_NAMES.get(code, f"^{chr(code + 0x40) if code < 0x20 else '?'}")
    if 0x80 <= code < 0xA0:
        return f"U+{code:04X}"
    category = unicodedata.category(ch)
    if category in ("Cf", "Cs", "Co", "Cn", "Zl", "Zp"):
        return f"U+{code:04X}"
    return None


def make_visible(
    text: str, *, multiline: bool = False, prose: bool = False, source: bool = False
) -> Visible:
    """``text`` with hidden characters replaced by markers (see the module docstring)."""
    keep = _PROSE if prose else _LAYOUT if multiline or source else frozenset()
    hidden: dict[str, None] = {}

    def one(ch: str) -> str:
        if ch in keep:
            return ch
        name = _marker(ch)
        if name is None and not keep and unicodedata.category(ch) == "Zs":
            name = f"U+{ord(ch):04X}"  # a one-line label: a space that is not one is shown
        if name is None:
            return ch
        hidden.setdefault(name, None)
        breaks = ch == "\n" or (source and ch == "\r")  # a line ends there: so it shows
        return f"⟨{name}⟩\n" if breaks else f"⟨{name}⟩"

    def replace(match: re.Match[str]) -> str:
        run = match.group()
        if run.isprintable() and _BLANK.isdisjoint(run):
            return run
        if keep and run == "\r\n":  # a line break where newlines are kept
            return "\n"
        return "".join(one(ch) for ch in run)

    pattern = _LAYOUT_RUN if keep else _RUN
    return Visible(pattern.sub(replace, text), tuple(hidden))


def visible_text(
    text: str, *, multiline: bool = False, prose: bool = False, source: bool = False
) -> str:
    """Just the text of :func:`make_visible`."""
    return make_visible(text, multiline=multiline, prose=prose, source=source).text


def source_lines(code: str) -> list[str]:
    """``code``'s lines as Python numbers them, each with its end (``\n``, ``\r\n`` or a
    lone ``\r``): ``str.splitlines`` also breaks at FF, VT, NEL, U+2028 ..., which Python
    keeps inside a line, so a traceback would show another line than the one that ran."""
    lines: list[str] = []
    start = 0
    for end in _PYTHON_LINE_END.finditer(code):
        lines.append(code[start : end.end()])
        start = end.end()
    if start < len(code):
        lines.append(code[start:])
    return lines
