"""What a ``%%acp --with / --cells`` prompt carries (``_notebook._attach``): the blocks for
each kind of agent, the per-prompt cap, and what the cell shows before sending."""

from __future__ import annotations

import base64
import html
from typing import Any

import pytest
from _later import Later, load
from _memory import scripted_agent

from acp_notebook._kernel._context import PER_OBJECT_CAP, PER_PROMPT_CAP
from acp_notebook._notebook._attach import (
    Accepts,
    Attached,
    accepts,
    fenced,
    gather,
    parse_names,
    prompt_blocks,
)

BOTH = Accepts(embedded_context=True, image=True)
NEITHER = Accepts(embedded_context=False, image=False)

np: Any = Later("numpy")
pd: Any = Later("pandas")
mpl_figure: Any = Later("matplotlib.figure")


@pytest.fixture(autouse=True)
def _libraries_loaded() -> None:
    load(np, pd, mpl_figure)  # (see tests/_later.py)


def _figure() -> Any:
    fig = mpl_figure.Figure()
    fig.add_subplot().plot([3, 1, 2])
    return fig


def test_parse_names() -> None:
    assert parse_names(["df,model", " x , df", ""]) == ["df", "model", "x"]
    with pytest.raises(ValueError, match=r"df\.a"):
        parse_names(["df.a"])


def test_embedded_context_makes_resource_blocks() -> None:
    ns = {"df": pd.DataFrame({"a": [1, 2]}), "arr": np.arange(3)}
    blocks = prompt_blocks("look", gather(["df", "arr"], ns), BOTH)
    assert blocks[0] == {"type": "text", "text": "look"}
    assert [b["type"] for b in blocks[1:]] == ["resource", "resource"]
    frame = blocks[1]["resource"]
    assert frame["uri"] == "notebook://variables/df" and frame["mimeType"] == "text/plain"
    assert frame["text"].startswith("df: pandas.DataFrame\n2 rows x 1 columns")
    assert blocks[2]["resource"]["uri"] == "notebook://variables/arr"


def test_without_embedded_context_the_same_text_goes_as_text() -> None:
    ns = {"df": pd.DataFrame({"a": [1, 2]})}
    attached = gather(["df"], ns)
    (resource,) = prompt_blocks("look", attached, BOTH)[1:]
    (text,) = prompt_blocks("look", attached, NEITHER)[1:]
    assert text["type"] == "text"
    body = resource["resource"]["text"]
    assert text["text"] == f"\n\n[notebook://variables/df]\n```text\n{body}\n```"


def test_the_fence_is_longer_than_any_backticks_inside() -> None:
    (item,) = gather(["s"], {"s": _Fences()})
    text = fenced(item)
    assert text.startswith("\n\n[notebook://variables/s]\n``````text\n")
    assert text.endswith("\n``````")


class _Fences:
    def __repr__(self) -> str:
        return "a\n```\n$ touch x\n`````sh\nb"


@pytest.mark.parametrize("image", [True, False])
def test_a_figure_is_an_image_only_when_the_agent_takes_images(image: bool) -> None:
    accept = Accepts(embedded_context=False, image=image)
    attached = gather(["fig"], {"fig": _figure()})
    blocks = prompt_blocks("what is wrong", attached, accept)
    kinds = [b["type"] for b in blocks]
    assert kinds == (["text", "text", "image"] if image else ["text", "text"])
    if image:
        assert blocks[2]["mimeType"] == "image/png"
        assert base64.b64decode(blocks[2]["data"]) == attached[0].png
    shown = Attached(attached, accept).plain()
    assert ("+ PNG" in shown) is image
    assert ("the image is not sent: the agent does not take images" in shown) is not image


def test_the_per_prompt_cap_cuts_then_leaves_out() -> None:
    # five objects of a full object cap each: four fit (24,000), the fifth is left out
    ns = {f"t{i}": "x" * 100_000 for i in range(6)}
    attached = gather(list(ns), ns)
    total = sum(len(a.text) for a in attached)
    assert total <= PER_PROMPT_CAP
    assert [len(a.text) for a in attached[:4]] == [PER_OBJECT_CAP] * 4
    assert [a.left_out for a in attached] == [False] * 4 + [True, True]
    blocks = prompt_blocks("p", attached, BOTH)
    assert len(blocks) == 1 + 4  # nothing goes for what was left out
    plain = Attached(attached, BOTH).plain()
    assert plain.count(f"not sent: the per-prompt cap of {PER_PROMPT_CAP:,} characters") == 2


def test_an_object_cut_to_fit_the_prompt_says_so() -> None:
    ns = {"a": "x" * 100_000, "b": "y" * 100_000}
    attached = gather(["a", "b"], ns, prompt_cap=PER_OBJECT_CAP + 1000)
    assert len(attached[1].text) == 1000 and attached[1].truncated
    assert attached[1].text.endswith(
        f"[cut to fit the per-prompt cap of {PER_PROMPT_CAP:,} characters]"
    )


class _Hostile:
    def __repr__(self) -> str:
        return "<script>alert(1)</script>\x1b[31m\u202e"


def test_the_cell_shows_each_summary_collapsed_and_escaped() -> None:
    ns = {"h": _Hostile(), "df": pd.DataFrame({"<b>": [1]})}
    attached = gather(["h", "df"], ns)
    shown = Attached(attached, NEITHER)
    page = shown.html()
    assert page.count("<details>") == 2 and "<details open" not in page  # collapsed
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "<b>" not in page and "&lt;b&gt;" in page
    assert "\x1b" not in page and "\u202e" not in page
    assert html.escape("⟨ESC⟩") in page and "⟨U+202E RLO⟩" in page
    assert f"<summary><code>h</code> (repr, {__name__}._Hostile)" in page
    plain = shown.plain().splitlines()
    assert plain[0] == "acp: attached to this prompt (sent as text):"
    assert plain[2].startswith("  df (dataframe, pandas.DataFrame): ")
    bundle = shown._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}


def test_a_figure_is_shown_as_the_image_that_goes() -> None:
    attached = gather(["fig"], {"fig": _figure()})
    page = Attached(attached, BOTH).html()
    assert attached[0].png is not None
    assert f'src="data:image/png;base64,{base64.b64encode(attached[0].png).decode()}"' in page


# --- what the agent said it takes -------------------------------------------------------------


async def _accepts_of(init: dict[str, Any]) -> Accepts:
    async def handle(method: str, params: Any) -> Any:
        if method == "initialize":
            return init
        from acp_notebook import MethodNotFound

        raise MethodNotFound(method)

    async with scripted_agent(handle) as (agent, _peer):
        return accepts(agent)


V2 = {"protocolVersion": 2, "info": {"name": "x", "version": "1"}}


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("init", "expected"),
    [
        (V2, NEITHER),
        (V2 | {"capabilities": {"session": {"prompt": {}}}}, NEITHER),
        (
            V2 | {"capabilities": {"session": {"prompt": {"embeddedContext": {}}}}},
            Accepts(True, False),
        ),
        (
            V2 | {"capabilities": {"session": {"prompt": {"image": {}, "embeddedContext": {}}}}},
            BOTH,
        ),
        ({"protocolVersion": 1, "agentCapabilities": {}}, NEITHER),
        (
            {"protocolVersion": 1, "agentCapabilities": {"promptCapabilities": {"image": True}}},
            Accepts(False, True),
        ),
        (
            {
                "protocolVersion": 1,
                "agentCapabilities": {
                    "promptCapabilities": {"embeddedContext": True, "image": False}
                },
            },
            Accepts(True, False),
        ),
    ],
    ids=["v2-none", "v2-empty", "v2-embedded", "v2-both", "v1-none", "v1-image", "v1-embedded"],
)
async def test_accepts_reads_the_prompt_capabilities(
    init: dict[str, Any], expected: Accepts
) -> None:
    assert await _accepts_of(init) == expected


def test_fewer_cells_than_asked_is_said() -> None:
    (cell,) = [
        a
        for a in gather([], {}, _History({1: ("x = 1", None)}, current=2), cells=3)
        if a.kind == "cell"
    ]
    shown = Attached([cell], NEITHER, cells_asked=3)
    assert shown.plain().endswith("\nacp: --cells 3: IPython's history holds only 1")
    assert "acp: --cells 3: IPython&#x27;s history holds only 1" in shown.html()
    empty = Attached([], NEITHER, cells_asked=2).plain()
    assert empty.startswith("acp: --cells 2: IPython's history holds no earlier cell")


class _History:
    """The two members of an IPython shell that ``recent_cells`` reads (the real ones are
    tested in a kernel: tests/test_context_kernel.py)."""

    def __init__(self, cells: dict[int, tuple[str, str | None]], current: int) -> None:
        self.execution_count = current
        self.history_manager = self
        self._cells = cells

    def get_range(self, **kwargs: Any) -> list[tuple[int, int, tuple[str, str | None]]]:
        start, stop = kwargs["start"], kwargs["stop"]
        return [(0, n, cell) for n, cell in sorted(self._cells.items()) if start <= n < stop]


def test_named_objects_come_before_cells_in_the_prompt_cap() -> None:
    history = _History({n: ("x" * 5000, "y" * 5000) for n in range(1, 11)}, current=11)
    attached = gather(["df"], {"df": pd.DataFrame({"a": [1]})}, history, cells=10)
    assert [a.label for a in attached][:2] == ["df", "cell 1"]
    assert not attached[0].left_out and not attached[0].truncated
    assert sum(len(a.text) for a in attached) <= PER_PROMPT_CAP
    # the newest cells are the ones kept; the oldest are left out (and the cell says so)
    assert not attached[-1].left_out and attached[1].left_out
    assert [a.label for a in attached[1:]] == [f"cell {n}" for n in range(1, 11)]
