from __future__ import annotations

import itertools
import json
import re
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_notebook._connection._lines import (
    BadJson,
    LineReader,
    LineTooLong,
    decode_json_line,
    leading_members,
    memory_byte_pipe,
    nested_deeper,
    prune_deeper,
)

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _expected(data: bytes, limit: int) -> list[bytes | LineTooLong]:
    parts = data.split(b"\n")
    if parts[-1] == b"":
        parts.pop()  # a trailing newline does not start another line
    return [p if len(p) <= limit else LineTooLong(len(p)) for p in parts]


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points) if b > a]


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=30),
    trailing_newline=st.booleans(),
    cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=20),
    limit=st.integers(min_value=1, max_value=50),
)
def test_feed_matches_split_for_any_chunking(
    lines: list[bytes], trailing_newline: bool, cuts: list[int], limit: int
) -> None:
    data = b"\n".join(lines) + (b"\n" if trailing_newline and lines else b"")
    reader = LineReader(None, limit, chunk_bytes=1)  # type: ignore[arg-type]
    got: list[bytes | LineTooLong] = []
    biggest = 0
    for chunk in _split(data, cuts):
        biggest = max(biggest, len(chunk))
        got += reader.feed(chunk)
        assert reader.max_buffered <= limit + biggest
    got += reader.finish()
    assert got == _expected(data, limit)


async def test_receive_lines_until_end_of_stream() -> None:
    send, receive = memory_byte_pipe()
    reader = LineReader(receive, 100, chunk_bytes=4)
    async with send:
        await send.send(b"ab\ncd")
        await send.send(b"ef\n\nlast")
    got: list[bytes | LineTooLong] = []
    async with receive:
        while (batch := await reader.receive_lines()) is not None:
            got += batch
    assert got == [b"ab", b"cdef", b"", b"last"]
    assert await reader.receive_lines() is None


async def test_oversize_line_is_skipped_while_streaming() -> None:
    limit = 1024
    chunk = b"x" * 2**20
    total = 200 * len(chunk)
    send, receive = memory_byte_pipe(4)
    reader = LineReader(receive, limit, chunk_bytes=65536)
    got: list[bytes | LineTooLong] = []

    async def produce() -> None:
        async with send:
            await send.send(b"before\n")
            for _ in range(200):
                await send.send(chunk)
            await send.send(b"\nafter\n")

    async with receive, anyio.create_task_group() as tg:
        tg.start_soon(produce)
        while (batch := await reader.receive_lines()) is not None:
            got += batch
    assert got == [b"before", LineTooLong(total), b"after"]
    assert reader.max_buffered <= limit + 65536


async def test_end_of_stream_inside_oversize_line() -> None:
    send, receive = memory_byte_pipe()
    reader = LineReader(receive, 3)
    async with send:
        await send.send(b"ok\ntoolong")
    got: list[bytes | LineTooLong] = []
    async with receive:
        while (batch := await reader.receive_lines()) is not None:
            got += batch
    assert got == [b"ok", LineTooLong(7)]


def test_limit_must_be_positive() -> None:
    with pytest.raises(ValueError):
        LineReader(None, 0)  # type: ignore[arg-type]


# -- one line as JSON, within bounds ----------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b"[" * 5000 + b"]" * 5000, "nested too deeply"),
        (b'{"a":' * 5000 + b"1" + b"}" * 5000, "nested too deeply"),
        (b"[" + b"1" * 4301 + b"]", "an integer with too many digits"),
        (b"[NaN]", "NaN is not JSON"),
        (b'{"x":Infinity}', "Infinity is not JSON"),
        (b"-Infinity", "-Infinity is not JSON"),
        (b'"a\x00b"', "Invalid control character at: line 1 column 3 (char 2)"),
        (b"{", "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
        (b'"\xff"', "'utf-8' codec can't decode byte 0xff in position 1: invalid start byte"),
    ],
)
def test_decode_json_line_refuses_with_a_reason(line: bytes, reason: str) -> None:
    with pytest.raises(BadJson) as info:
        decode_json_line(line)
    assert info.value.reason == reason
    assert info.value.text == line.decode("utf-8", "replace")


@pytest.mark.parametrize(
    ("text", "pruned"),
    [
        ("[[[1]]]", "[[[1]]]"),  # within the limit: the same text
        ("[[[[1]]]]", "[[[[]]]]"),  # the fourth level is one [] past the limit
        ('{"a":{"b":{"c":{"d":1}}},"id":7}', '{"a":{"b":{"c":[]}},"id":7}'),
        ("[[[[1],[2]],[[[3]]]]]", "[[[[],[]],[[]]]]"),  # every container past it, each once
        ('["[[[[", {"x": "]]]]{{{{"}]', '["[[[[", {"x": "]]]]{{{{"}]'),  # strings do not count
        ('["\\"[[[[\\"", 1]', '["\\"[[[[\\"", 1]'),  # nor escaped quotes inside them
        ('["[[[[', '["[[[['),  # an unterminated string: left for the decoder
        ('[[[[[1]]]], "[[[[', '[[[[]]], "[[[['),  # what came before it is cut all the same
        ("[[[[[[", "[[["),  # a container past the limit never closes: the line stops before it
    ],
)
def test_prune_deeper_cuts_what_nests_past_the_limit(text: str, pruned: str) -> None:
    assert prune_deeper(text, 3) == pruned


def _one_bracket_at_a_time(text: str, limit: int) -> str:
    """prune_deeper's meaning, spelled out a bracket at a time (no shortcut, no runs)."""
    pieces: list[str] = []
    kept, cut, depth = 0, None, 0
    for found in re.finditer(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]|"', text):
        token = found.group()
        if token == '"':
            break
        if token in ("[", "{"):
            depth += 1
            if depth == limit + 1 and cut is None:
                cut = found.start()
        elif token in ("]", "}"):
            if depth == limit + 1 and cut is not None:
                pieces += [text[kept:cut], "[]"]
                kept, cut = found.end(), None
            depth -= 1
    if cut is not None:
        return "".join([*pieces, text[kept:cut]])
    return text if not pieces else "".join([*pieces, text[kept:]])


@settings(max_examples=500)
@given(st.text(alphabet='[]{}"\\a,1:', max_size=40), st.integers(1, 4))
def test_prune_deeper_with_its_shortcuts_means_the_same(text: str, limit: int) -> None:
    # the C-speed clearance and the runs of brackets change nothing but the time it takes
    assert prune_deeper(text, limit) == _one_bracket_at_a_time(text, limit)


def test_a_batch_with_an_element_too_deep_is_refused_whole() -> None:
    # what is cut is never read: here it is not even JSON, and the batch's other element with it
    line = b'[{"method":"a"},' + b"[" * 10 + b"1 2" + b"]" * 10 + b"]"
    with pytest.raises(BadJson) as info:
        decode_json_line(line, max_depth=4)
    assert info.value.reason == "nested too deeply"
    assert decode_json_line(b'{"a":[[[[[1]]]]]}', max_depth=4) == {"a": [[[[]]]]}


def test_a_deep_line_decodes_pruned_never_near_the_recursion_limit() -> None:
    # 100,000 levels decode as MAX_DEPTH + 1 levels with the members around them intact, and the
    # decoder is never handed the deep text (it would raise RecursionError)
    line = b'{"params":' + b"[" * 100_000 + b"]" * 100_000 + b',"id":3}'
    value = decode_json_line(line, max_depth=4)
    assert value == {"params": [[[[]]]], "id": 3}
    assert nested_deeper(value, 4) and not nested_deeper(value, 5)
    with pytest.raises(BadJson) as info:  # the same line, without a limit
        decode_json_line(line)
    assert info.value.reason == "nested too deeply"


@given(
    st.recursive(
        st.integers() | st.text(max_size=3),
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
        ),
        max_leaves=20,
    ),
    st.integers(1, 6),
)
def test_prune_deeper_matches_the_decoded_depth(value: Any, limit: int) -> None:
    text = json.dumps(value)
    pruned = json.loads(prune_deeper(text, limit))
    if nested_deeper(value, limit):
        assert nested_deeper(pruned, limit) and not nested_deeper(pruned, limit + 1)
    else:
        assert pruned == value


def test_decode_json_line_accepts_what_json_allows() -> None:
    assert decode_json_line(b"[" + b"1" * 4300 + b"]") == [int("1" * 4300)]
    assert decode_json_line(b'"\\ud800"') == "\ud800"  # a lone surrogate escape is grammatical
    assert decode_json_line(b'{"a":1}\r') == {"a": 1}  # CRLF framing leaves a \r: whitespace
    assert decode_json_line(b"[" * 200 + b"]" * 200) == json.loads("[" * 200 + "]" * 200)


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(value=json_values, limit=st.integers(min_value=0, max_value=8))
def test_nested_deeper_matches_a_recursive_depth(value: Any, limit: int) -> None:
    assert nested_deeper(value, limit) == (_depth(value) > limit)
    line = json.dumps(value).encode()
    assert nested_deeper(value, limit, line) == (_depth(value) > limit)


def test_nested_deeper_without_recursion() -> None:
    deep: list[Any] = []
    for _ in range(100_000):  # far beyond the recursion limit
        deep = [deep]
    assert nested_deeper(deep, 256)
    assert nested_deeper({"a": [1, {"b": []}]}, 4) is False  # dict, list, dict, list
    assert nested_deeper({"a": [1, {"b": []}]}, 3) is True


@pytest.mark.parametrize(
    ("text", "members", "failed"),
    [
        ('{"id":5,"method":"m","params":' + "[" * 5000, {"id": 5, "method": "m"}, "params"),
        (' { "id" : "x" , "params" : NaN }', {"id": "x"}, "params"),
        ('{"params":' + "[" * 5000 + ',"id":3}', {}, "params"),
        ('{"id":1,"x":2}', {"id": 1, "x": 2}, None),  # it parses: nothing failed
        ('{"id":1 "x":2}', {"id": 1}, None),  # a missing comma: stops, no member failed
        ('{"id" 1}', {}, "id"),  # no colon
        ('{"i\\u00', {}, None),  # a broken key
        ("[1, 2]", {}, None),  # not an object
        ("", {}, None),
        ("{" + ",".join(f'"k{n}":{n}' for n in range(20)) + ',"id":', {}, None),
    ],
)
def test_leading_members(text: str, members: dict[str, Any], failed: str | None) -> None:
    got_members, got_failed = leading_members(text)
    if text.startswith('{"k0"'):  # more than 16 members: it stops after 16
        assert got_members == {f"k{n}": n for n in range(16)} and got_failed is None
        return
    assert (got_members, got_failed) == (members, failed)
