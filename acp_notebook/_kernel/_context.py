"""Kernel objects and recent cells as prompt context: summaries that are safe to compute.

``summarize(name, obj)`` turns one object of the user's namespace into a :class:`Summary`: text
for the agent (and for the user, who sees it before it is sent), plus a PNG for a matplotlib
figure. ``list_variables`` and ``recent_cells`` feed ``%%acp --cells`` and the kernel tools.

Kinds, detected only when the library is already imported (``sys.modules``: an object of a
library's type cannot exist before the library is imported, so nothing here imports pandas,
polars, numpy or matplotlib, and none is a dependency):

* ``dataframe`` (pandas or polars): shape, memory, each column's dtype and null count, the first
  rows as a table;
* ``series`` (pandas or polars): length, dtype, null count, the first values;
* ``ndarray`` (numpy): shape, dtype, size, min and max (NaN ignored), a sample (edges only);
* ``container`` (list, tuple, dict, set, frozenset, deque): item count and a ``reprlib`` repr
  (bounded depth and items, however big or recursive the container);
* ``figure`` (matplotlib Figure or Axes): size, axes titles and labels, and a PNG;
* ``repr``: anything else, ``repr`` capped.

Hostile objects. A summary never raises for what the object does: a ``__repr__`` (or a library
call) that raises, returns a non-string, or recurses without end is reported in the text
(``<repr failed: ValueError: ...>``); a huge repr is cut; control and bidi characters are shown
as visible markers (``_visible``, as for prose: the joiners and marks that ordinary text in many
scripts needs are kept), so what the user reads before sending is what the agent gets.
Only ``KeyboardInterrupt`` passes through: a ``__repr__`` that loops forever is stopped by the
notebook's Interrupt, like any cell. ``summarize`` runs the object's own code (its ``__repr__``,
the library's methods), so call it on the kernel's main thread, never beside user code.
``list_variables`` runs no user code at all: it reads shapes and sizes only from the known
library types and the built-in containers.

Caps, in characters (about 4 per token for English and code):

* ``PER_OBJECT_CAP`` = 6,000 (about 1,500 tokens). Enough for the whole summary of a typical
  frame: a 5-row head of a dozen columns (about 1,200 characters) and the dtype and null count of
  60 columns (about 2,500). A summary is there to orient the agent; the kernel tools
  (``inspect_variable``, ``run_code``) let it look further.
* ``PER_PROMPT_CAP`` = 24,000 (about 6,000 tokens): four full objects, or a dozen recent cells.
  Under 5% of the 128k-200k-token windows of the agents we test with, and it leaves a small
  32k-token local model room for the question and the answer. It also bounds what the cell shows.
* ``CELL_CAP`` = 2,000 per cell input and per cell output for ``--cells``: a dozen cells fit the
  prompt cap.
* ``PNG_CAP`` = 1,000,000 bytes per figure (1.3 MB as base64 in one JSON-RPC line; the common
  model APIs take images up to about 5 MB). A figure is drawn at 100 dpi (a default 6.4x4.8 inch
  figure is 640x480, some 20-60 kB), or at fewer dpi to stay within 4 million pixels (a 60-inch
  figure would be 36 million: 144 MB to draw); a PNG over the cap is drawn again at half that,
  and if it still does not fit it goes as text only, which says so.
"""

from __future__ import annotations

import collections
import io
import itertools
import re
import reprlib
import sys
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from .._protocol._visible import make_visible

__all__ = [
    "CELL_CAP",
    "PER_OBJECT_CAP",
    "PER_PROMPT_CAP",
    "PNG_CAP",
    "CellText",
    "Summary",
    "Variable",
    "hidden_name",
    "hide_env_values",
    "list_variables",
    "recent_cells",
    "summarize",
]

PER_OBJECT_CAP = 6_000
PER_PROMPT_CAP = 24_000
CELL_CAP = 2_000
PNG_CAP = 1_000_000

_HEAD_ROWS = 5
_SERIES_HEAD = 10
_MAX_COLUMNS_LISTED = 60
_MINMAX_LIMIT = 50_000_000  # elements: min/max of a bigger array would stall the cell
_ERROR_CAP = 200
_MAX_PIXELS = 4_000_000  # a figure is drawn at 100 dpi, or less to stay within this


@dataclass(frozen=True)
class Summary:
    name: str
    kind: str  # "dataframe", "series", "ndarray", "container", "figure", "repr"
    type_name: str
    text: str
    chars: int
    truncated: bool
    png: bytes | None = None


@dataclass(frozen=True)
class Variable:
    name: str
    type_name: str
    shape: str | None
    size: str | None


@dataclass(frozen=True)
class CellText:
    number: int
    source: str
    output: str
    truncated: bool = False  # the source or the output was cut to the cap


# --- helpers --------------------------------------------------------------------------------


def _plain(value: object) -> str:
    """A plain ``str`` from what a ``__repr__`` returned (a ``str`` subclass may override
    slicing, ``len`` or ``__str__``)."""
    if not isinstance(value, str):
        raise TypeError(f"__repr__ returned non-string (type {type(value).__name__})")
    return str.__getitem__(value, slice(None)) if type(value) is not str else value


def _failure(what: str, exc: BaseException) -> str:
    try:
        message = _plain(str(exc))
    except Exception:  # an exception whose __str__ fails too
        message = ""
    kind = type(exc).__name__
    message = message[:_ERROR_CAP] + ("…" if len(message) > _ERROR_CAP else "")
    return f"<{what} failed: {kind}: {message}>" if message else f"<{what} failed: {kind}>"


def _safe_repr(obj: object, limit: int) -> str:
    try:
        text = _plain(repr(obj))
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # a hostile __repr__: SystemExit included
        return _failure("repr", exc)
    return text[: limit + 1]


def type_name(obj: object) -> str:
    """``module.Qualname`` of ``obj``'s type (short public names for the known libraries,
    none for builtins); never raises."""
    cls = type(obj)
    try:
        module = _plain(cls.__module__)
        qual = _plain(cls.__qualname__)
    except Exception:
        return "?"
    top = module.partition(".")[0]
    if top in ("pandas", "polars", "numpy"):
        return f"{top}.{qual}"
    if module == "builtins":
        return qual
    return f"{module}.{qual}"


def _visible(text: str) -> tuple[str, tuple[str, ...]]:
    seen = make_visible(text, multiline=True, prose=True)
    return seen.text, seen.hidden


def _cut(text: str, cap: int) -> tuple[str, bool]:
    if len(text) <= cap:
        return text, False
    note = f"\n… [cut: {cap} of {len(text)}+ characters shown]"
    keep = max(0, cap - len(note))
    return text[:keep] + note[: cap - keep], True


def _module(name: str) -> ModuleType | None:
    return sys.modules.get(name)


def _is(obj: object, module: str, attr: str) -> bool:
    """``type(obj)`` is a subclass of ``module.attr``, looked up only if already imported
    (``type``, not ``__class__``, which an object may fake)."""
    mod = _module(module)
    cls = getattr(mod, attr, None) if mod is not None else None
    return isinstance(cls, type) and issubclass(type(obj), cls)


def _human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{n} B"  # pragma: no cover


def _shape_text(shape: tuple[int, ...]) -> str:
    return "x".join(str(int(d)) for d in shape) if shape else "scalar"


# --- per kind -------------------------------------------------------------------------------


def _pandas_frame(obj: Any) -> tuple[str, str]:
    rows, cols = obj.shape
    memory = int(obj.memory_usage(index=True, deep=False).sum())
    lines = [f"{rows} rows x {cols} columns, {_human_bytes(memory)} (shallow)"]
    listed = obj.iloc[:, :_MAX_COLUMNS_LISTED]
    nulls = listed.isna().sum()
    lines.append("columns (dtype, nulls):")
    for position, column in enumerate(listed.columns):
        dtype = listed.dtypes.iloc[position]
        lines.append(f"  {column!s}: {dtype!s}, {int(nulls.iloc[position])} null")
    if cols > _MAX_COLUMNS_LISTED:
        lines.append(f"  … {cols - _MAX_COLUMNS_LISTED} more columns")
    lines.append(f"first {min(rows, _HEAD_ROWS)} rows:")
    lines.append(obj.head(_HEAD_ROWS).to_string(max_cols=20, max_colwidth=40))
    return "dataframe", "\n".join(lines)


def _pandas_series(obj: Any) -> tuple[str, str]:
    lines = [
        f"name {obj.name!s}, {len(obj)} values, dtype {obj.dtype!s}, {int(obj.isna().sum())} null",
        f"first {min(len(obj), _SERIES_HEAD)} values:",
        obj.head(_SERIES_HEAD).to_string(max_rows=_SERIES_HEAD),
    ]
    return "series", "\n".join(lines)


def _polars_frame(obj: Any) -> tuple[str, str]:
    pl = _module("polars")
    assert pl is not None
    rows, cols = obj.shape
    lines = [f"{rows} rows x {cols} columns, {_human_bytes(int(obj.estimated_size()))}"]
    nulls = obj.null_count().row(0)
    lines.append("columns (dtype, nulls):")
    for position, (column, dtype) in enumerate(obj.schema.items()):
        if position == _MAX_COLUMNS_LISTED:
            lines.append(f"  … {cols - _MAX_COLUMNS_LISTED} more columns")
            break
        lines.append(f"  {column!s}: {dtype!s}, {int(nulls[position])} null")
    lines.append(f"first {min(rows, _HEAD_ROWS)} rows:")
    with pl.Config(tbl_rows=_HEAD_ROWS, tbl_cols=20, fmt_str_lengths=40):
        lines.append(str(obj.head(_HEAD_ROWS)))
    return "dataframe", "\n".join(lines)


def _polars_series(obj: Any) -> tuple[str, str]:
    head = obj.head(_SERIES_HEAD).to_list()
    lines = [
        f"name {obj.name!s}, {obj.len()} values, dtype {obj.dtype!s}, {obj.null_count()} null",
        f"first {len(head)} values:",
        _REPR.repr(head),
    ]
    return "series", "\n".join(lines)


def _ndarray(obj: Any) -> tuple[str, str]:
    np = _module("numpy")
    assert np is not None
    head = (
        f"shape {_shape_text(obj.shape)}, dtype {obj.dtype!s}, "
        f"{obj.size} elements, {_human_bytes(int(obj.nbytes))}"
    )
    lines = [head]
    if obj.size == 0:
        lines.append("empty")
    elif obj.size > _MINMAX_LIMIT:
        lines.append(f"min/max not computed (over {_MINMAX_LIMIT:,} elements)")
    elif obj.dtype.kind in "biufcmM":
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            if obj.dtype.kind in "fc":
                low, high = np.nanmin(obj), np.nanmax(obj)
                nans = int(np.count_nonzero(np.isnan(obj)))
                extra = f" ({nans} NaN ignored)" if nans else ""
            else:
                low, high, extra = obj.min(), obj.max(), ""
        lines.append(f"min {low!s}, max {high!s}{extra}")
    with np.printoptions(threshold=60, edgeitems=3, linewidth=100, precision=6):
        lines.append("sample:")
        lines.append(np.array2string(obj))
    return "ndarray", "\n".join(lines)


def _figure_png(figure: Any) -> tuple[bytes | None, str]:
    width, height = figure.get_size_inches()
    # at most _MAX_PIXELS to draw: a 60-inch figure at 100 dpi is 36 million pixels
    most = (_MAX_PIXELS / max(float(width * height), 1e-6)) ** 0.5
    first = min(100.0, most)
    for dpi in (first, first / 2):
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=dpi)
        data = buffer.getvalue()
        if len(data) <= PNG_CAP:
            return data, f"PNG {_human_bytes(len(data))} at {dpi:.0f} dpi"
    return None, f"no image: over {_human_bytes(PNG_CAP)} even at {dpi:.0f} dpi"


def _figure(obj: Any) -> tuple[str, str, bytes | None]:
    figure = obj if _is(obj, "matplotlib.figure", "Figure") else obj.figure
    width, height = figure.get_size_inches()
    lines = [f"figure {width:g}x{height:g} in, {len(figure.axes)} axes"]
    for number, axes in enumerate(figure.axes[:20], 1):
        labels = [
            f"{what} {text!r}"
            for what, text in (
                ("title", axes.get_title()),
                ("x", axes.get_xlabel()),
                ("y", axes.get_ylabel()),
            )
            if text
        ]
        lines.append(f"  axes {number}: {', '.join(labels) if labels else 'no labels'}")
    png, note = _figure_png(figure)
    lines.append(note)
    return "figure", "\n".join(lines), png


class _BoundedRepr(reprlib.Repr):
    def __init__(self) -> None:
        super().__init__()
        self.maxlevel = 4
        self.maxtuple = self.maxlist = self.maxarray = self.maxdict = 30
        self.maxset = self.maxfrozenset = self.maxdeque = 30
        self.maxstring = 300
        self.maxlong = 200
        self.maxother = 300

    # reprlib sorts a whole set or dict to show its first items: O(n log n) for a big one, and
    # the items' own __lt__ runs. The first items in iteration order do as well.
    def _first(self, x: Any, level: int, left: str, right: str, limit: int) -> str:
        if level <= 0:
            return f"{left}...{right}"
        pieces = [self.repr1(item, level - 1) for item in itertools.islice(x, limit)]
        if len(x) > limit:
            pieces.append("...")
        return left + ", ".join(pieces) + right

    def repr_set(self, x: Any, level: int) -> str:
        return self._first(x, level, "{", "}", self.maxset) if x else "set()"

    def repr_frozenset(self, x: Any, level: int) -> str:
        return self._first(x, level, "frozenset({", "})", self.maxfrozenset) if x else "frozenset()"

    def repr_dict(self, x: Any, level: int) -> str:
        if not x:
            return "{}"
        if level <= 0:
            return "{...}"
        pieces = [
            f"{self.repr1(key, level - 1)}: {self.repr1(value, level - 1)}"
            for key, value in itertools.islice(x.items(), self.maxdict)
        ]
        if len(x) > self.maxdict:
            pieces.append("...")
        return "{" + ", ".join(pieces) + "}"


_REPR = _BoundedRepr()
_CONTAINERS = (list, tuple, dict, set, frozenset, collections.deque)


def _container(obj: Any) -> tuple[str, str]:
    try:
        count = f"{len(obj)} items"
    except Exception as exc:
        count = _failure("len", exc)
    try:
        body = _plain(_REPR.repr(obj))
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        body = _failure("repr", exc)
    return "container", f"{count}\n{body}"


_TEXTS = (str, bytes, bytearray)


def _text_like(obj: str | bytes | bytearray, cap: int) -> str:
    """Its length, then the repr of its start only: a repr of the whole would copy all of it
    (four times over for bytes like ``\x00``) to keep ``cap`` characters."""
    unit = "characters" if type(obj) is str else "bytes"
    return f"{len(obj):,} {unit}\n{obj[: cap + 1]!r}"


def _kind_of(obj: object) -> Callable[[Any], tuple[str, str]] | None:
    if _is(obj, "pandas", "DataFrame"):
        return _pandas_frame
    if _is(obj, "pandas", "Series"):
        return _pandas_series
    if _is(obj, "polars", "DataFrame"):
        return _polars_frame
    if _is(obj, "polars", "Series"):
        return _polars_series
    if _is(obj, "numpy", "ndarray"):
        return _ndarray
    if type(obj) in _CONTAINERS:
        return _container
    return None


def _is_figure(obj: object) -> bool:
    return _is(obj, "matplotlib.figure", "Figure") or _is(obj, "matplotlib.axes", "Axes")


# --- the entry points -------------------------------------------------------------------------


def summarize(name: str, obj: object, *, cap: int = PER_OBJECT_CAP) -> Summary:
    """The summary of ``obj`` (bound to ``name``), at most ``cap`` characters of text; never
    raises for what the object does (see the module docstring)."""
    kind, body, png = "repr", "", None
    tname = type_name(obj)
    try:
        if _is_figure(obj):
            kind, body, png = _figure(obj)
        elif type(obj) in _TEXTS:
            body = _text_like(obj, cap)  # type: ignore[arg-type]
        else:
            summarizer = _kind_of(obj)
            if summarizer is not None:
                kind, body = summarizer(obj)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # the library (or a subclass) failed: fall back to repr
        kind, png = "repr", None
        body = f"{_failure('summary', exc)}\n{_safe_repr(obj, cap)}"
    if not body:
        body = _safe_repr(obj, cap)
    text, hidden = _visible(f"{name}: {tname}\n{body}"[: cap * 2])
    if hidden:
        text += f"\n(hidden characters shown as markers: {', '.join(hidden)})"
    text, truncated = _cut(text, cap)
    return Summary(name, kind, tname, text, len(text), truncated, png)


def _variable(name: str, obj: object) -> Variable:
    shape: str | None = None
    size: str | None = None
    try:
        if _is(obj, "pandas", "DataFrame") or _is(obj, "pandas", "Series"):
            shape = _shape_text(tuple(obj.shape))  # type: ignore[attr-defined]
            used = obj.memory_usage(index=True, deep=False)  # type: ignore[attr-defined]
            size = _human_bytes(int(used.sum() if hasattr(used, "sum") else used))
        elif _is(obj, "polars", "DataFrame") or _is(obj, "polars", "Series"):
            shape = _shape_text(tuple(obj.shape))  # type: ignore[attr-defined]
            size = _human_bytes(int(obj.estimated_size()))  # type: ignore[attr-defined]
        elif _is(obj, "numpy", "ndarray"):
            shape = _shape_text(tuple(obj.shape))  # type: ignore[attr-defined]
            size = _human_bytes(int(obj.nbytes))  # type: ignore[attr-defined]
        elif type(obj) in _CONTAINERS:
            size = f"{len(obj)} items"  # type: ignore[arg-type]
        elif type(obj) in (str, bytes, bytearray):
            size = f"{len(obj)} {'characters' if type(obj) is str else 'bytes'}"  # type: ignore[arg-type]
    except KeyboardInterrupt:
        raise
    except BaseException:
        shape = size = None
    return Variable(name, type_name(obj), shape, size)


_IPYTHON_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython"})


def hidden_name(name: object) -> bool:
    """Whether ``list_variables`` leaves the name out: private ``_names`` and IPython's own."""
    return not isinstance(name, str) or name.startswith("_") or name in _IPYTHON_NAMES


def list_variables(namespace: Mapping[str, object]) -> list[Variable]:
    """The user's variables in ``namespace``, in definition order: private ``_names``, modules
    and IPython's own ``In``/``Out``/``exit``/``quit``/``get_ipython`` are left out. Runs no
    user code."""
    found = []
    for name, obj in list(namespace.items()):
        if hidden_name(name):
            continue
        if isinstance(obj, ModuleType):
            continue
        found.append(_variable(name, obj))
    return found


#: ``--env KEY=VALUE`` in a cell's source (``%acp connect``), quoted or not, ``--env=`` too,
#: and argparse's abbreviations ``--en``, ``--e``
_ENV_OPTION = re.compile(
    r"""(--e(?:nv?)?(?:=|\s+))(['"])?([^\s'"=]+)=(?(2)[^'"]*\2|(?:'[^']*'|"[^"]*"|\S*))"""
)


def hide_env_values(source: str) -> str:
    """``source`` with the value of every ``--env KEY=VALUE`` option replaced by ``***``: the
    notebook never shows them, and a cell's input must not send them to an agent."""
    return _ENV_OPTION.sub(lambda m: f"{m[1]}{m[2] or ''}{m[3]}=***{m[2] or ''}", source)


def recent_cells(shell: object, n: int, *, cap: int = CELL_CAP) -> list[CellText]:
    """The last ``n`` executed cells before the running one, oldest first, from IPython's
    history (``shell.history_manager``): each input, and its ``Out`` text (``text/plain``; what
    a cell printed is not kept by IPython), both cut to ``cap`` characters, control and bidi
    characters made visible. Empty inputs are skipped. ``--env`` values typed in an input
    (``%acp connect --env KEY=VALUE``) are sent as ``***``."""
    if n <= 0:
        return []
    history: Any = getattr(shell, "history_manager", None)
    current = getattr(shell, "execution_count", None)
    if history is None or not isinstance(current, int):
        return []
    stop = current
    # The running cell, when it is stored, is the last input (IPython 8 numbers it
    # execution_count, IPython 9 one less: it counts up before running the cell).
    info = getattr(getattr(getattr(shell, "displayhook", None), "exec_result", None), "info", None)
    inputs = getattr(history, "input_hist_raw", None)
    if getattr(info, "store_history", True) and isinstance(inputs, list) and inputs:
        stop = min(current, len(inputs) - 1)
    found: list[CellText] = []
    entries = list(history.get_range(session=0, start=1, stop=stop, raw=True, output=True))
    for _session, number, (source, output) in reversed(entries):
        if not isinstance(source, str) or not source.strip():
            continue
        shown_source, cut_source = _cut(_visible(hide_env_values(source))[0], cap)
        shown_output, cut_output = _cut(_visible(output if isinstance(output, str) else "")[0], cap)
        found.append(CellText(int(number), shown_source, shown_output, cut_source or cut_output))
        if len(found) == n:
            break
    found.reverse()
    return found
