"""Summaries of kernel objects for the prompt (``_kernel._context``): each kind, the caps,
and objects that fight back."""

from __future__ import annotations

import collections
import importlib
import tracemalloc
from typing import Any, ClassVar

import pytest
from _later import Later, load

from acp_notebook._kernel._context import (
    PER_OBJECT_CAP,
    PER_PROMPT_CAP,
    list_variables,
    summarize,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

np: Any = Later("numpy")
pd: Any = Later("pandas")
pl: Any = Later("polars")
mpl_figure: Any = Later("matplotlib.figure")


@pytest.fixture(autouse=True)
def _libraries_loaded() -> None:
    load(np, pd, pl, mpl_figure)  # (see tests/_later.py)


def test_pandas_dataframe_shape_dtypes_nulls_and_head() -> None:
    df = pd.DataFrame({"price": [1.5, None, 3.0, 4.0, 5.0, 6.0], "city": list("abcdef")})
    s = summarize("df", df)
    assert (s.name, s.kind, s.type_name) == ("df", "dataframe", "pandas.DataFrame")
    assert "6 rows x 2 columns" in s.text
    assert "price: float64, 1 null" in s.text
    assert "city: " in s.text and "0 null" in s.text
    assert "first 5 rows:" in s.text
    assert "1.5" in s.text and "f" not in s.text.split("first 5 rows:")[1]  # row 6 not shown
    assert s.chars == len(s.text) and not s.truncated and s.png is None


def test_pandas_series() -> None:
    s = summarize("s", pd.Series([1, 2, None], name="n"))
    assert (s.kind, s.type_name) == ("series", "pandas.Series")
    assert "name n, 3 values, dtype float64, 1 null" in s.text


def test_polars_dataframe_and_series() -> None:
    frame = pl.DataFrame({"a": [1, None, 3], "b": ["x", "y", "z"]})
    s = summarize("p", frame)
    assert (s.kind, s.type_name) == ("dataframe", "polars.DataFrame")
    assert "3 rows x 2 columns" in s.text
    assert "a: Int64, 1 null" in s.text and "b: String, 0 null" in s.text
    assert "first 3 rows:" in s.text and "┆" in s.text  # polars' own table
    series = summarize("ps", pl.Series("v", [1.0, None]))
    assert series.kind == "series" and "2 values, dtype Float64, 1 null" in series.text


def test_polars_lazy_frame_is_not_collected() -> None:
    lazy = pl.DataFrame({"a": [1]}).lazy()
    s = summarize("lazy", lazy)
    assert s.kind == "repr"  # a query plan, not data: its repr, nothing computed


def test_ndarray_shape_dtype_min_max_sample() -> None:
    a = np.arange(1000.0).reshape(10, 100)
    s = summarize("a", a)
    assert (s.kind, s.type_name) == ("ndarray", "numpy.ndarray")
    assert "shape 10x100, dtype float64, 1000 elements, 8.0 kB" in s.text
    assert "min 0.0, max 999.0" in s.text
    assert "..." in s.text and "999." in s.text  # edges only
    assert len(s.text) < 1000


def test_ndarray_nan_is_ignored_and_all_nan_warns_nothing() -> None:
    s = summarize("a", np.array([1.0, np.nan, 3.0]))
    assert "min 1.0, max 3.0 (1 NaN ignored)" in s.text
    # warnings are errors in this suite: an all-NaN slice would raise here if not silenced
    s = summarize("b", np.array([np.nan, np.nan]))
    assert "min nan, max nan (2 NaN ignored)" in s.text


def test_ndarray_empty_structured_and_object() -> None:
    assert "empty" in summarize("e", np.zeros((0, 3))).text
    structured = np.zeros(2, dtype=[("x", "i4"), ("y", "f8")])
    assert "min" not in summarize("r", structured).text
    s = summarize("o", np.array([_Raises(), 1], dtype=object))
    assert s.kind in ("ndarray", "repr")
    assert "failed" in s.text  # the hostile element's repr is reported, not raised


def test_huge_ndarray_min_max_not_computed() -> None:
    big = np.broadcast_to(np.uint8(7), (50_000_001,))  # no memory behind it
    s = summarize("big", big)
    assert "min/max not computed (over 50,000,000 elements)" in s.text


@pytest.mark.parametrize(
    "value",
    [
        list(range(10_000)),
        tuple(range(10_000)),
        {i: str(i) for i in range(10_000)},
        set(range(10_000)),
        frozenset(range(10_000)),
        collections.deque(range(10_000)),
    ],
    ids=type,
)
def test_containers_count_and_bounded_repr(value: Any) -> None:
    s = summarize("c", value)
    assert s.kind == "container"
    assert "10000 items" in s.text
    assert "..." in s.text and len(s.text) < 2000


def test_recursive_and_deep_containers() -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    assert "[1, [...]]" in summarize("loop", loop).text
    deep: list[Any] = []
    for _ in range(10_000):
        deep = [deep]
    s = summarize("deep", deep)
    assert s.kind == "container" and len(s.text) < 200


def test_container_with_a_hostile_item() -> None:
    s = summarize("l", [1, _Raises(), "x" * 100_000])
    assert s.kind == "container"
    assert "_Raises" in s.text and len(s.text) < 2000


def test_figure_png_and_labels() -> None:
    fig = mpl_figure.Figure()
    ax = fig.add_subplot()
    ax.plot([1, 2, 3])
    ax.set_title("loss")
    ax.set_xlabel("epoch")
    s = summarize("fig", fig)
    assert (s.kind, s.type_name) == ("figure", "matplotlib.figure.Figure")
    assert s.png is not None and s.png.startswith(PNG_MAGIC)
    assert "1 axes" in s.text and "title 'loss'" in s.text and "x 'epoch'" in s.text
    assert f"PNG {len(s.png) / 1000:.1f} kB at 100 dpi" in s.text
    axes = summarize("ax", ax)  # an Axes attaches its figure
    assert axes.kind == "figure" and axes.png is not None


def test_anything_else_is_its_repr() -> None:
    s = summarize("n", 42)
    assert (s.kind, s.type_name, s.text) == ("repr", "int", "n: int\n42")


# --- caps -------------------------------------------------------------------------------------


def test_caps_are_what_the_docstring_says() -> None:
    assert (PER_OBJECT_CAP, PER_PROMPT_CAP) == (6_000, 24_000)


def test_wide_frame_fits_the_object_cap() -> None:
    wide = pd.DataFrame({f"column_{i}": range(100) for i in range(500)})
    s = summarize("wide", wide)
    assert s.chars <= PER_OBJECT_CAP
    assert "500 columns" in s.text and "… 440 more columns" in s.text


def test_cap_cuts_and_says_so() -> None:
    s = summarize("t", "x" * 50_000, cap=1000)
    assert s.chars == len(s.text) <= 1000 and s.truncated
    assert s.text.endswith("characters shown]")


# --- hostile objects ----------------------------------------------------------------------------


class _Raises:
    def __repr__(self) -> str:
        raise ValueError("boom")


class _SysExit:
    def __repr__(self) -> str:
        raise SystemExit(3)


class _NotAString:
    def __repr__(self) -> Any:
        return 17


class _Recurses:
    def __repr__(self) -> str:
        return repr(self)


class _Huge:
    def __repr__(self) -> str:
        return "y" * 10_000_000


class _Hidden:
    def __repr__(self) -> str:
        return "ok\x1b[2J\rgone \u202etxt.exe\u202c \x00"


class _Sneaky(str):
    def __getitem__(self, key: Any) -> Any:
        raise RuntimeError("no slicing")

    def __len__(self) -> int:
        raise RuntimeError("no len")

    def __str__(self) -> str:
        raise RuntimeError("no str")


class _SneakyRepr:
    def __repr__(self) -> str:
        return _Sneaky("looks fine")


class _BadMessage(Exception):
    def __str__(self) -> str:
        raise RuntimeError("nor this")


class _RaisesBadMessage:
    def __repr__(self) -> str:
        raise _BadMessage


class _Interrupts:
    def __repr__(self) -> str:
        raise KeyboardInterrupt


def test_repr_that_raises_is_reported() -> None:
    s = summarize("h", _Raises())
    assert s.kind == "repr"
    assert s.text == f"h: {__name__}._Raises\n<repr failed: ValueError: boom>"


@pytest.mark.parametrize(
    ("obj", "said"),
    [
        (_SysExit(), "<repr failed: SystemExit: 3>"),
        (_NotAString(), "<repr failed: TypeError: __repr__ returned non-string (type int)>"),
        (_Recurses(), "<repr failed: RecursionError: maximum recursion depth exceeded"),
        (_RaisesBadMessage(), "<repr failed: _BadMessage>"),
    ],
    ids=["SystemExit", "non-string", "recursion", "unprintable-error"],
)
def test_hostile_reprs_never_raise(obj: object, said: str) -> None:
    assert said in summarize("h", obj).text


def test_huge_repr_is_cut() -> None:
    s = summarize("h", _Huge())
    assert s.truncated and s.chars == len(s.text) <= PER_OBJECT_CAP


def test_control_and_bidi_characters_are_made_visible() -> None:
    s = summarize("h", _Hidden())
    for raw in ("\x1b", "\r", "\u202e", "\u202c", "\x00"):
        assert raw not in s.text
    assert "ok⟨ESC⟩[2J⟨CR⟩gone ⟨U+202E RLO⟩txt.exe⟨U+202C PDF⟩ ⟨NUL⟩" in s.text
    assert "hidden characters shown as markers: ESC, CR, U+202E RLO, U+202C PDF, NUL" in s.text


def test_a_str_subclass_from_repr_is_read_as_plain_text() -> None:
    s = summarize("h", _SneakyRepr())
    assert s.text.endswith("\nlooks fine") and type(s.text) is str


def test_keyboard_interrupt_passes_through() -> None:
    # a __repr__ that loops forever is stopped by the notebook's Interrupt: it must get out
    with pytest.raises(KeyboardInterrupt):
        summarize("h", _Interrupts())


def test_a_library_subclass_that_fails_falls_back_to_repr() -> None:
    class _BrokenFrame(pd.DataFrame):  # (pd: a Later, so the class is made here)
        def head(self, n: int = 5) -> Any:
            raise RuntimeError("head is broken")

    s = summarize("b", _BrokenFrame({"a": [1]}))
    assert s.kind == "repr"
    assert "<summary failed: RuntimeError: head is broken>" in s.text
    assert "a" in s.text.splitlines()[-2]  # then the repr (pandas' own table)


class _FakesItsClass:
    calls: ClassVar[list[str]] = []

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # isinstance() would believe this
        return pd.DataFrame

    def __getattr__(self, name: str) -> Any:
        self.calls.append(name)
        raise AttributeError(name)

    def __repr__(self) -> str:
        return "fake"


def test_a_faked_class_is_not_believed() -> None:
    s = summarize("f", _FakesItsClass())
    assert (s.kind, s.text) == ("repr", f"f: {__name__}._FakesItsClass\nfake")
    assert _FakesItsClass.calls == []


# --- list_variables -------------------------------------------------------------------------------


class _Watched(list[int]):
    touched = 0

    def __len__(self) -> int:
        type(self).touched += 1
        raise RuntimeError("len")

    @property
    def shape(self) -> Any:
        type(self).touched += 1
        raise RuntimeError("shape")


def test_list_variables_hides_private_modules_and_ipython_names() -> None:
    namespace = {
        "In": [],
        "Out": {},
        "get_ipython": print,
        "exit": None,
        "quit": None,
        "_": 1,
        "_i3": "x",
        "__builtins__": {},
        "np": importlib.import_module("numpy"),  # a module (np here is a Later)
        "df": pd.DataFrame({"a": range(4), "b": range(4)}),
        "arr": np.zeros((2, 3)),
        "pf": pl.DataFrame({"a": [1, 2]}),
        "names": ["a", "b"],
        "text": "hello",
        "n": 3,
    }
    found = {v.name: v for v in list_variables(namespace)}
    assert list(found) == ["df", "arr", "pf", "names", "text", "n"]
    assert (found["df"].type_name, found["df"].shape) == ("pandas.DataFrame", "4x2")
    assert found["df"].size is not None and found["df"].size.endswith(" B")
    assert (found["arr"].shape, found["arr"].size) == ("2x3", "48 B")
    assert found["pf"].shape == "2x1"
    assert (found["names"].shape, found["names"].size) == (None, "2 items")
    assert found["text"].size == "5 characters"
    assert (found["n"].type_name, found["n"].shape, found["n"].size) == ("int", None, None)


def test_list_variables_runs_no_user_code() -> None:
    watched = _Watched([1, 2])
    found = list_variables({"w": watched, "h": _Raises()})
    assert [(v.name, v.shape, v.size) for v in found] == [("w", None, None), ("h", None, None)]
    assert _Watched.touched == 0


class _Ordered:
    compared = 0

    def __init__(self, n: int) -> None:
        self.n = n

    def __lt__(self, other: object) -> bool:
        type(self).compared += 1
        return False

    def __hash__(self) -> int:
        return self.n

    def __repr__(self) -> str:
        return f"O{self.n}"


def test_sets_and_dicts_are_not_sorted_whole() -> None:
    # reprlib sorts a whole set or dict to show its first items: O(n log n), and the items'
    # own __lt__ (user code) runs; the first items in iteration order are shown instead
    items = {_Ordered(i) for i in range(1000)}
    s = summarize("s", items)
    assert "1000 items" in s.text and "..." in s.text
    d = summarize("d", dict.fromkeys(items, 1))
    assert "1000 items" in d.text and "..." in d.text
    assert _Ordered.compared == 0


@pytest.mark.parametrize("big", [b"\x00" * 50_000_000, "x" * 50_000_000], ids=["bytes", "str"])
def test_a_big_string_is_not_repr_whole(big: str | bytes) -> None:
    # repr() of the whole object would build a copy of it (4x for bytes like \x00) to keep 6,000
    tracemalloc.start()
    try:
        s = summarize("big", big)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 5_000_000
    assert s.truncated and s.chars <= PER_OBJECT_CAP
    assert "50,000,000 " in s.text.splitlines()[1]  # its length, told


def _png_size(png: bytes) -> tuple[int, int]:
    assert png.startswith(PNG_MAGIC)
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def test_a_huge_figure_is_drawn_small_enough() -> None:
    # 60 x 60 inches at 100 dpi would be a 6000 x 6000 canvas (144 MB of pixels to draw)
    fig = mpl_figure.Figure(figsize=(60, 60))
    fig.add_subplot().plot([1, 2])
    s = summarize("big", fig)
    assert s.png is not None
    width, height = _png_size(s.png)
    assert width * height <= 4_000_000 and width == height
    assert "figure 60x60 in" in s.text
    small = summarize("small", _small_figure())
    assert small.png is not None and _png_size(small.png) == (640, 480)  # 100 dpi


def _small_figure() -> Any:
    fig = mpl_figure.Figure()  # 6.4 x 4.8 inches
    fig.add_subplot().plot([1, 2])
    return fig


def test_joiners_that_scripts_need_are_kept() -> None:
    # ZWNJ in Persian ("I want"), ZWJ in an emoji sequence: ordinary text, not hidden characters
    persian = "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645"
    coder = "\U0001f469\u200d\U0001f4bb"
    words = pd.DataFrame({"w": [persian, coder]})  # (a repr would escape them)
    s = summarize("words", words)
    assert persian in s.text and coder in s.text
    assert "hidden characters" not in s.text
    override = summarize("x", pd.DataFrame({"w": ["a\u202eb"]})).text
    assert "a⟨U+202E RLO⟩b" in override  # an override still is


def test_recent_cells_leave_out_the_running_cell_under_ipython_8_and_9() -> None:
    # IPython 9 counts execution_count up before it runs a cell, IPython 8 after: the running
    # cell (the %%acp --cells cell itself) must not be sent as one of the "recent" cells
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        shell.run_cell("first = 1", store_history=True)
        shell.run_cell("second = 2\nsecond", store_history=True)
        got: dict[str, Any] = {}
        code = (
            "from acp_notebook._kernel._context import recent_cells\n"
            "got['c'] = recent_cells(get_ipython(), 5)"
        )
        shell.user_ns["got"] = got
        shell.run_cell(code, store_history=True)
        sources = [c.source for c in got["c"]]
        assert sources[-2:] == ["first = 1", "second = 2\nsecond"], sources
        assert not any("recent_cells" in s for s in sources)
        assert got["c"][-1].output == "2"
        # a cell not stored in the history (nbval runs so): the last stored one still counts
        shell.run_cell(code, store_history=False)
        assert [c.source for c in got["c"]][-1].startswith("from acp_notebook._kernel._context")
    finally:
        InteractiveShell.clear_instance()
