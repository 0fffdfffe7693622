"""Terminal bytes to a sanitised plain transcript and to HTML.

Both converters are incremental: they keep an incremental UTF-8 decoder and the
parser state (an unfinished escape sequence, an unterminated OSC/DCS string, the
cursor position) between calls to ``feed``, so the result never depends on how
the byte stream was cut into chunks.

The screen model is line based. Finished lines are kept in a list; the cursor
can move back over the last ``window`` lines (cursor up, ``\\r``, ``\\b``), which
is enough for progress bars and multi-line redraws. Everything else that a full
terminal emulator would do (absolute positioning, scroll regions, alternate
screen) is dropped.
"""

from __future__ import annotations

import codecs
import html
import re
from functools import lru_cache

__all__ = ["AnsiHtml", "AnsiTranscript", "ansi_to_html", "ansi_to_text"]

DEFAULT_WINDOW = 500

# An escape sequence that the slow path understands, split in parts.
_CSI = re.compile(r"\x1b\[([0-?]*)([ -/]*)([@-~])")
_CSI_PARTIAL = re.compile(r"\x1b\[[0-?]*[ -/]*")
_ESC2 = re.compile(r"\x1b(?:[ -/]+[0-~]|[0-OQ-WYZ\\`a-~])")
_ESC2_PARTIAL = re.compile(r"\x1b[ -/]*")
_STRING_END = re.compile(r"[\x07\x1b]")
_STRING_STARTS = "]PX^_"
# Characters that interrupt a run of printable text. Tab is printable here.
_SPECIAL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")

# Escape sequences with no effect on the plain transcript, matched where the
# tokenizer would see them: CSI other than cursor movement and erasing, whole
# OSC/DCS/APC/PM/SOS strings, two-byte escapes, and a malformed ESC (the
# tokenizer drops just that ESC). What is left is whole cursor/erase
# sequences, an escape cut off by the end of the text, or an unterminated string.
_STRIP_ESC = re.compile(
    r"\x1b(?:"
    r"\[[0-?]*+[ -/]*+[@HIL-~]"
    r"|[\]PX^_][^\x07\x1b]*+(?:\x07|\x1b\\|(?=\x1b))"
    r"|[ -/]++[0-~]|[0-OQ-WYZ\\`a-~]"
    r"|(?=[^ -~]|\[[0-?]*+[ -/]*+[^@-~]|[ -/]++[^0-~])"
    r")"
)
# Anything the line fast path cannot copy as is.
_ODD = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_ROW_MOVE = re.compile(r"\x1b\[[0-?]*[A-FJ]")


def _reaches_end(pattern: re.Pattern[str], text: str, pos: int) -> bool:
    m = pattern.match(text, pos)
    return m is not None and m.end() == len(text)


def _first_param(params: str, default: int = 1) -> int:
    """First numeric CSI parameter; 0 or missing means ``default``."""
    head = params.split(";", 1)[0].split(":", 1)[0].lstrip("<=>?")
    if head.isdigit():
        value = int(head)
        return value if value else default
    return default


class _Engine:
    """Shared tokenizer and parser state; subclasses own the line model."""

    def __init__(self, window: int = DEFAULT_WINDOW) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""  # an unfinished escape sequence
        self._in_string = False  # inside an OSC/DCS/APC/PM/SOS string
        self._string_esc = False  # ... and its last character was ESC
        self._window = max(1, window)
        self._row = 0
        self._col = 0
        self._floor = 0  # the cursor never moves above this row

    # -- input --------------------------------------------------------------
    def feed(self, data: bytes) -> None:
        """Append raw terminal bytes."""
        text = self._decoder.decode(data)
        if text:
            self._consume(text)

    def _consume(self, text: str) -> None:
        if not text:
            return
        if self._pending:
            text = self._pending + text
            self._pending = ""
        if self._in_string:
            text = text[self._skip_string(text, 0) :]
            if not text:
                return
        self._process(text)

    def _skip_string(self, text: str, pos: int) -> int:
        """Drop string payload from ``pos``; return where normal text resumes."""
        n = len(text)
        if self._string_esc:
            self._string_esc = False
            self._in_string = False
            if pos < n and text[pos] == "\\":
                return pos + 1
            # The ESC did not start ST: it starts a new sequence.
            self._pending = "\x1b"
            return pos
        m = _STRING_END.search(text, pos)
        if m is None:
            return n
        i = m.start()
        if text[i] == "\x07":
            self._in_string = False
            return i + 1
        if i + 1 == n:
            self._string_esc = True
            return n
        self._in_string = False
        return i + 2 if text[i + 1] == "\\" else i

    def _process(self, text: str) -> None:
        if self._pending:  # set by _skip_string when an ESC ended a string
            text = self._pending + text
            self._pending = ""
        pos = 0
        n = len(text)
        search = _SPECIAL.search
        while pos < n:
            m = search(text, pos)
            if m is None:
                self._write(text[pos:])
                return
            i = m.start()
            if i > pos:
                self._write(text[pos:i])
            c = text[i]
            if c == "\n":
                self._newline()
                pos = i + 1
            elif c == "\r":
                self._col = 0
                pos = i + 1
            elif c == "\x08":
                if self._col > 0:
                    self._col -= 1
                pos = i + 1
            elif c == "\x1b":
                pos = self._escape(text, i)
            else:
                pos = i + 1

    def _escape(self, text: str, i: int) -> int:
        n = len(text)
        if i + 1 == n:
            self._pending = text[i:]
            return n
        c = text[i + 1]
        if c == "[":
            m = _CSI.match(text, i)
            if m is not None:
                params, inter, final = m.groups()
                if not inter:
                    self._csi(params, final)
                return m.end()
            if _reaches_end(_CSI_PARTIAL, text, i):
                self._pending = text[i:]
                return n
            return i + 1
        if c in _STRING_STARTS:
            self._in_string = True
            return self._skip_string(text, i + 2)
        m = _ESC2.match(text, i)
        if m is not None:
            return m.end()
        if _reaches_end(_ESC2_PARTIAL, text, i):
            self._pending = text[i:]
            return n
        return i + 1

    def _csi(self, params: str, final: str) -> None:
        if final == "m":
            if not params or params[0] not in "<=>?":
                self._sgr(params)
            return
        if final in "AF":
            self._floor = max(self._floor, self._line_count() - self._window)
            self._row = max(self._floor, self._row - _first_param(params))
            if final == "F":
                self._col = 0
        elif final in "BE":
            self._row = min(self._line_count() - 1, self._row + _first_param(params))
            if final == "E":
                self._col = 0
        elif final == "C":
            self._col += _first_param(params)
        elif final == "D":
            self._col = max(0, self._col - _first_param(params))
        elif final == "G":
            self._col = _first_param(params) - 1
        elif final == "K":
            self._erase_line(_first_param(params, 0))
        elif final == "J" and _first_param(params, 0) == 0:
            self._floor = max(self._floor, self._line_count() - self._window)
            self._erase_below()

    # -- line model, provided by subclasses ------------------------------------
    def _sgr(self, params: str) -> None:
        """Graphic rendition; the plain transcript ignores it."""

    def _line_count(self) -> int:
        raise NotImplementedError

    def _write(self, run: str) -> None:
        raise NotImplementedError

    def _newline(self) -> None:
        raise NotImplementedError

    def _erase_line(self, mode: int) -> None:
        raise NotImplementedError

    def _erase_below(self) -> None:
        raise NotImplementedError


class AnsiTranscript(_Engine):
    """Sanitised plain text of a terminal byte stream."""

    def __init__(self, window: int = DEFAULT_WINDOW) -> None:
        super().__init__(window)
        self._lines: list[str] = [""]

    def text(self) -> str:
        """The transcript so far (an unfinished escape or code point is held back)."""
        return "\n".join(self._lines)

    def _process(self, text: str) -> None:
        if self._pending:  # an ESC that ended a string starts the text
            super()._process(text)
            return
        rest = _STRIP_ESC.sub("", text)
        # Lines of plain text are copied in bulk; a line with \r, \b, a control
        # character or a cursor sequence goes through the tokenizer.
        pos = 0
        n = len(rest)
        while pos < n:
            m = _ODD.search(rest, pos)
            if m is None:
                self._write_lines(rest[pos:])
                return
            i = m.start()
            start = rest.rfind("\n", pos, i) + 1 or pos
            if start > pos:
                self._write_lines(rest[pos:start])
            end = rest.find("\n", i)
            if end < 0:
                end = n
            self._complex_line(rest[start:end])
            if self._pending:  # an escape cut by the end of the text
                return
            if self._in_string:  # an unterminated string runs to the end
                self._consume(rest[end:])
                return
            pos = end

    def _complex_line(self, line: str) -> None:
        """One line (no newline) with \\r, \\b, controls or cursor sequences."""
        cut = max(line.rfind("\r\x1b[K"), line.rfind("\r\x1b[2K"), line.rfind("\r\x1b[0K"))
        if cut > 0 and _ROW_MOVE.search(line, 0, cut) is None:
            # Everything before the last "go to column 0, erase the line" only
            # touched this row, and that row is erased now: skip it.
            self._lines[self._row] = ""
            self._col = 0
            line = line[cut:]
        _Engine._process(self, line)

    def _write_lines(self, seg: str) -> None:
        lines = self._lines
        if "\n" not in seg:
            self._write(seg)
            return
        parts = seg.split("\n")
        self._write(parts[0])
        self._newline()
        if self._row == len(lines) - 1 and not lines[-1]:  # a fresh bottom line
            lines[-1] = parts[1]
            lines.extend(parts[2:])
            self._row = len(lines) - 1
            self._col = len(lines[-1])
            return
        for part in parts[1:-1]:
            self._write(part)
            self._newline()
        self._write(parts[-1])

    def _line_count(self) -> int:
        return len(self._lines)

    def _write(self, run: str) -> None:
        if not run:
            return
        lines = self._lines
        line = lines[self._row]
        col = self._col
        size = len(line)
        if col == size:
            lines[self._row] = line + run
        elif col > size:
            lines[self._row] = line + " " * (col - size) + run
        else:
            lines[self._row] = line[:col] + run + line[col + len(run) :]
        self._col = col + len(run)

    def _newline(self) -> None:
        if self._row == len(self._lines) - 1:
            self._lines.append("")
        self._row += 1
        self._col = 0

    def _erase_line(self, mode: int) -> None:
        line = self._lines[self._row]
        if mode == 0:
            self._lines[self._row] = line[: self._col]
        elif mode == 1:
            self._lines[self._row] = " " * min(self._col + 1, len(line)) + line[self._col + 1 :]
        elif mode == 2:
            self._lines[self._row] = ""

    def _erase_below(self) -> None:
        self._erase_line(0)
        del self._lines[self._row + 1 :]


# -- HTML ----------------------------------------------------------------------

_COLOR_NAMES = ("black", "red", "green", "yellow", "blue", "magenta", "cyan", "white")

Color = int | tuple[int, int, int] | None
_Style = tuple[Color, Color, bool, bool, bool]  # fg, bg, bold, underline, inverse
_PLAIN: _Style = (None, None, False, False, False)


def _color_class(index: int) -> str:
    name = _COLOR_NAMES[index % 8]
    return f"ansi-{name}-intense" if index >= 8 else f"ansi-{name}"


@lru_cache(maxsize=4096)
def _open_tag(style: _Style) -> str:
    """The ``<span>`` for a style, with the classes nbconvert and JupyterLab use."""
    fg, bg, bold, underline, inverse = style
    if style == _PLAIN:
        return ""
    if isinstance(fg, int) and bold and fg < 8:
        fg += 8
    if inverse:
        fg, bg = bg, fg
    classes: list[str] = []
    styles: list[str] = []
    if isinstance(fg, int):
        classes.append(_color_class(fg) + "-fg")
    elif fg is not None:
        styles.append("color: rgb({},{},{})".format(*fg))
    elif inverse:
        classes.append("ansi-default-inverse-fg")
    if isinstance(bg, int):
        classes.append(_color_class(bg) + "-bg")
    elif bg is not None:
        styles.append("background-color: rgb({},{},{})".format(*bg))
    elif inverse:
        classes.append("ansi-default-inverse-bg")
    if bold:
        classes.append("ansi-bold")
    if underline:
        classes.append("ansi-underline")
    tag = "<span"
    if classes:
        tag += ' class="' + " ".join(classes) + '"'
    if styles:
        tag += ' style="' + "; ".join(styles) + '"'
    return tag + ">"


def _cube(value: int) -> int:
    return 55 + value * 40 if value else 0


def _xterm_color(index: int) -> Color:
    if index < 0 or index > 255:
        return None
    if index < 16:
        return index
    if index < 232:
        index -= 16
        return (_cube(index // 36), _cube(index // 6 % 6), _cube(index % 6))
    gray = (index - 232) * 10 + 8
    return (gray, gray, gray)


def _ints(parts: list[str]) -> list[int]:
    return [int(p) if p.isdigit() else 0 for p in parts]


def _extended(kind: int, rest: list[int]) -> tuple[Color, int] | None:
    """Parse ``5;n`` or ``2;r;g;b`` after 38/48; return the colour and items used."""
    if kind == 5 and rest:
        color = _xterm_color(rest[0])
        return (color, 2) if color is not None else None
    if kind == 2 and len(rest) >= 3:
        r, g, b = rest[:3]
        if max(r, g, b) <= 255:
            return ((r, g, b), 4)
    return None


class _Line:
    __slots__ = ("length", "segs")

    def __init__(self) -> None:
        self.segs: list[tuple[str, str]] = []  # (open tag, text)
        self.length = 0

    def write(self, col: int, tag: str, run: str) -> None:
        if col > self.length:
            self.segs.append(("", " " * (col - self.length)))
            self.length = col
        if col == self.length:
            self.segs.append((tag, run))
            self.length += len(run)
            return
        self.splice(col, col + len(run), [(tag, run)])

    def splice(self, start: int, end: int, middle: list[tuple[str, str]]) -> None:
        """Replace columns ``start:end`` (end clipped to the line) by ``middle``."""
        head: list[tuple[str, str]] = []
        tail: list[tuple[str, str]] = []
        pos = 0
        for tag, text in self.segs:
            nxt = pos + len(text)
            if pos < start:
                head.append((tag, text[: start - pos]) if nxt > start else (tag, text))
            if nxt > end:
                tail.append((tag, text[max(0, end - pos) :]) if pos < end else (tag, text))
            pos = nxt
        self.segs = head + middle + tail
        self.length = sum(len(t) for _, t in self.segs)

    def render(self) -> str:
        out: list[str] = []
        cur_tag = ""
        buf: list[str] = []
        for tag, text in self.segs:
            if not text:
                continue
            if tag != cur_tag:
                if buf:
                    out.append(_wrap(cur_tag, "".join(buf)))
                    buf = []
                cur_tag = tag
            buf.append(text)
        if buf:
            out.append(_wrap(cur_tag, "".join(buf)))
        return "".join(out)


def _wrap(tag: str, text: str) -> str:
    escaped = html.escape(text, quote=True)
    return f"{tag}{escaped}</span>" if tag else escaped


class AnsiHtml(_Engine):
    """HTML of a terminal byte stream: escaped text, SGR as ``ansi-*`` spans.

    The result is the inside of a ``<pre>``: lines are separated by ``\\n``
    and no span crosses a line.
    """

    def __init__(self, window: int = DEFAULT_WINDOW) -> None:
        super().__init__(window)
        self._lines: list[_Line] = [_Line()]
        self._style: _Style = _PLAIN
        self._tag = ""

    def html(self) -> str:
        """The HTML so far."""
        return "\n".join(line.render() for line in self._lines)

    def _line_count(self) -> int:
        return len(self._lines)

    def _write(self, run: str) -> None:
        self._lines[self._row].write(self._col, self._tag, run)
        self._col += len(run)

    def _newline(self) -> None:
        if self._row == len(self._lines) - 1:
            self._lines.append(_Line())
        self._row += 1
        self._col = 0

    def _erase_line(self, mode: int) -> None:
        line = self._lines[self._row]
        if mode == 0:
            line.splice(self._col, line.length, [])
        elif mode == 1:
            width = min(self._col + 1, line.length)
            line.splice(0, width, [("", " " * width)])
        elif mode == 2:
            self._lines[self._row] = _Line()

    def _erase_below(self) -> None:
        self._erase_line(0)
        del self._lines[self._row + 1 :]

    def _sgr(self, params: str) -> None:
        self._style, self._tag = _sgr_step(self._style, params)


class _Pen:
    """Mutable SGR state, used by :func:`_sgr_step`."""

    def __init__(self, style: _Style) -> None:
        self._fg, self._bg, self._bold, self._underline, self._inverse = style

    def style(self) -> _Style:
        return (self._fg, self._bg, self._bold, self._underline, self._inverse)

    def sgr(self, params: str) -> None:
        groups = params.split(";") if params else [""]
        i = 0
        while i < len(groups):
            group = groups[i]
            i += 1
            if ":" in group:
                self._sgr_colon(_ints(group.split(":")))
                continue
            n = int(group) if group.isdigit() else 0
            if n in (38, 48):
                args = _ints(groups[i : i + 4])
                ext = _extended(args[0], args[1:]) if args else None
                if ext is None:
                    break  # malformed: ignore the rest, as nbconvert does
                color, used = ext
                i += used
                if n == 38:
                    self._fg = color
                else:
                    self._bg = color
                continue
            self._apply(n)

    def _sgr_colon(self, values: list[int]) -> None:
        """Colon form, e.g. ``38:2::255:0:0`` or ``38:5:196``."""
        head = values[0]
        if head in (38, 48):
            color: Color = None
            if len(values) >= 3 and values[1] == 5:
                color = _xterm_color(values[2])
            elif len(values) >= 5 and values[1] == 2:
                r, g, b = values[-3:]
                color = (r, g, b) if max(r, g, b) <= 255 else None
            if color is not None:
                if head == 38:
                    self._fg = color
                else:
                    self._bg = color
            return
        self._apply(head)

    def _apply(self, n: int) -> None:
        if n == 0:
            self._fg = self._bg = None
            self._bold = self._underline = self._inverse = False
        elif n in (1, 5):
            self._bold = True
        elif n == 4:
            self._underline = True
        elif n == 7:
            self._inverse = True
        elif n in (21, 22):
            self._bold = False
        elif n == 24:
            self._underline = False
        elif n == 27:
            self._inverse = False
        elif 30 <= n <= 37:
            self._fg = n - 30
        elif n == 39:
            self._fg = None
        elif 40 <= n <= 47:
            self._bg = n - 40
        elif n == 49:
            self._bg = None
        elif 90 <= n <= 97:
            self._fg = n - 90 + 8
        elif 100 <= n <= 107:
            self._bg = n - 100 + 8


@lru_cache(maxsize=4096)
def _sgr_step(style: _Style, params: str) -> tuple[_Style, str]:
    """The style after an SGR sequence, and its opening tag (cached: logs repeat them)."""
    pen = _Pen(style)
    pen.sgr(params)
    new = pen.style()
    return new, _open_tag(new)


def ansi_to_text(data: bytes, window: int = DEFAULT_WINDOW) -> str:
    """Plain transcript of a complete byte string."""
    conv = AnsiTranscript(window)
    conv.feed(data)
    return conv.text()


def ansi_to_html(data: bytes, window: int = DEFAULT_WINDOW) -> str:
    """HTML of a complete byte string."""
    conv = AnsiHtml(window)
    conv.feed(data)
    return conv.html()
