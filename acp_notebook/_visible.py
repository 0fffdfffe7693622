"""Make the invisible visible: control characters and bidi overrides in untrusted strings.

A permission card must show exactly what would run. Terminal controls (ESC, CR, BS, ...) can hide
or redraw text, and bidirectional overrides can reorder it on screen ("Trojan Source"). Each one
is replaced by a visible marker such as ``⟨ESC⟩`` or ``⟨U+202E RLO⟩``. Tab and newline are kept
but also marked, since a newline in a one-line command is worth noticing.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

_C0_NAMES = {
    0x00: "NUL", 0x07: "BEL", 0x08: "BS", 0x09: "TAB", 0x0A: "LF", 0x0B: "VT", 0x0C: "FF",
    0x0D: "CR", 0x1B: "ESC", 0x7F: "DEL",
}  # fmt: skip

_FORMAT_NAMES = {
    0x061C: "ALM", 0x200B: "ZWSP", 0x200C: "ZWNJ", 0x200D: "ZWJ", 0x200E: "LRM", 0x200F: "RLM",
    0x202A: "LRE", 0x202B: "RLE", 0x202C: "PDF", 0x202D: "LRO", 0x202E: "RLO", 0x2066: "LRI",
    0x2067: "RLI", 0x2068: "FSI", 0x2069: "PDI", 0xFEFF: "BOM", 0x2028: "LSEP", 0x2029: "PSEP",
}  # fmt: skip


@dataclass(frozen=True)
class Visible:
    text: str  # the string with every hidden character replaced by a marker
    hidden: tuple[str, ...]  # the marker names found, in order of first appearance

    @property
    def suspicious(self) -> bool:
        return bool(self.hidden)


def _marker(ch: str) -> str | None:
    code = ord(ch)
    if code in _FORMAT_NAMES:
        return f"U+{code:04X} {_FORMAT_NAMES[code]}"
    if code < 0x20 or code == 0x7F:
        return _C0_NAMES.get(code, f"^{chr(code + 0x40) if code < 0x20 else '?'}")
    if 0x80 <= code < 0xA0:
        return f"U+{code:04X}"
    category = unicodedata.category(ch)
    if category in ("Cf", "Cs", "Co", "Cn", "Zl", "Zp"):
        return f"U+{code:04X}"
    return None


def make_visible(text: str) -> Visible:
    parts: list[str] = []
    hidden: list[str] = []
    for ch in text:
        name = _marker(ch)
        if name is None:
            parts.append(ch)
            continue
        if name not in hidden:
            hidden.append(name)
        parts.append(f"⟨{name}⟩")
        if ch == "\n":
            parts.append("\n")
    return Visible("".join(parts), tuple(hidden))
