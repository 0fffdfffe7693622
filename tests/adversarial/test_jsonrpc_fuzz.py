"""Hypothesis-generated JSON-RPC lines into a real `Connection`: no crash, no hang, it lives.

Each example feeds lines to a `Connection` over an in-memory byte pipe (in random chunks, with
LF or CRLF endings), with a request handler and a notification handler installed. Afterwards:
nothing escaped, the connection is not closed, a request from the peer and one of ours both
still get their answers (all under `anyio.fail_after`, so a hang fails the example), and every
line written back is a well-formed JSON-RPC response.

`test_structured_lines` generates messages as values (requests, notifications, responses to
unknown ids, ``$/cancel_request`` with odd ids, invalid messages, batches empty, nested and
mixed, very long strings, control characters, lone surrogates) with raw members spliced in
(nesting up to 50,000 deep, integers of up to 20,000 digits, ``NaN``/``Infinity``), and checks
the answers exactly against a model of the documented rules: every id-bearing request is
answered exactly once under its id, whatever became of it (a handler result or error, a
cancel, an unencodable result, a parse error for a line too deep), and nothing else is
answered except under id null. `test_raw_lines` adds random bytes and mutated lines (invalid
UTF-8, NUL and control bytes, truncation, a last line without its newline).
"""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acp_notebook._connection._errors import MethodNotFound, RpcError
from acp_notebook._connection._jsonrpc import MAX_DEPTH, Connection, Problem
from acp_notebook._connection._lines import LineReader, memory_byte_pipe

WAIT = 10  # seconds per example: a bound against hangs, never a speed assertion
PROBE_ID = "the-probe"
SETTINGS = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# -- the connection under test ------------------------------------------------------------------


def _deep(levels: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(levels - 1):
        value = [value]
    return value


async def handler(method: str, params: Any) -> Any:
    if method == "slow":
        await anyio.sleep(0.02)  # long enough for a $/cancel_request to catch it sometimes
    elif method == "fail":
        raise RpcError(-32000, "refused", params)
    elif method == "boom":
        raise ValueError("handler bug")
    elif method == "unknown":
        raise MethodNotFound(method)
    elif method == "deep_result":
        return _deep(5000)
    elif method == "nan_result":
        return math.nan
    return {"method": method, "params": params}


async def on_notification(method: str, params: Any) -> None:
    if method == "boom":
        raise ValueError("notification handler bug")
    if method == "unknown":
        raise MethodNotFound(method)


def _well_formed(answer: Any) -> bool:
    if type(answer) is not dict or answer.get("jsonrpc") != "2.0" or "id" not in answer:
        return False
    if type(answer["id"]) not in (int, str, type(None)):
        return False
    if ("result" in answer) == ("error" in answer):
        return False
    error = answer.get("error")
    return error is None or (type(error.get("code")) is int and type(error["message"]) is str)


async def exercise(chunks: list[bytes], expected_answers: int | None) -> list[dict[str, Any]]:
    """Feed ``chunks`` to a fresh Connection, prove it lives, return what it answered.

    With ``expected_answers``, waits for that many answers before the final probe, so that
    any answer too many is seen too.
    """
    problems: list[Problem] = []
    to_conn, conn_in = memory_byte_pipe(16)
    conn_out, from_conn = memory_byte_pipe(1024)
    conn = Connection(
        conn_in,
        conn_out,
        request_handler=handler,
        notification_handler=on_notification,
        on_problem=problems.append,
    )
    reader = LineReader(from_conn, 2**30)
    pending: list[bytes] = []
    answers: list[dict[str, Any]] = []

    async def next_line() -> Any:
        while not pending:
            batch = await reader.receive_lines()
            assert batch is not None, "the connection closed its output"
            pending.extend(line for line in batch if isinstance(line, bytes))
        return json.loads(pending.pop(0))

    async def next_answer() -> dict[str, Any]:
        answer = await next_line()
        assert _well_formed(answer), answer
        return answer  # type: ignore[no-any-return]

    async def probe(rid: str) -> None:
        line = json.dumps({"jsonrpc": "2.0", "id": rid, "method": "probe"}).encode() + b"\n"
        await to_conn.send(line)
        while True:
            answer = await next_answer()
            if answer["id"] == rid:
                assert answer["result"] == {"method": "probe", "params": None}
                return
            answers.append(answer)

    try:
        with anyio.fail_after(WAIT):
            async with conn:
                for chunk in chunks:
                    await to_conn.send(chunk)
                await to_conn.send(b"\n")  # ends a last line sent without its newline
                await probe(PROBE_ID)
                if expected_answers is not None:
                    while len(answers) < expected_answers:
                        answers.append(await next_answer())
                # One of ours: the peer answers it (all earlier answers from it were read above).
                async with anyio.create_task_group() as tg:
                    got: list[Any] = []

                    async def ask() -> None:
                        got.append(await conn.request("ours", {"n": 1}))

                    tg.start_soon(ask)
                    while True:
                        answer = await next_line()
                        if type(answer) is dict and answer.get("method") == "ours":
                            break
                        assert _well_formed(answer), answer
                        answers.append(answer)
                    await to_conn.send(
                        json.dumps({"jsonrpc": "2.0", "id": answer["id"], "result": "ok"}).encode()
                        + b"\n"
                    )
                assert got == ["ok"]
                await probe(PROBE_ID + "-final")
                assert not conn.closed and conn.failure is None
    finally:
        for stream in (to_conn, from_conn):
            await stream.aclose()
    return answers


def _chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points) if b > a]


# -- structured lines and their model -----------------------------------------------------------


@dataclass(frozen=True)
class Raw:
    """A member value written as raw JSON text: deep nesting, a huge integer, NaN."""

    text: str
    depth: int
    parses: bool  # whether the reader decodes it (no ValueError)


def deep_raw(levels: int, as_object: bool) -> Raw:
    # Any depth parses: the reader replaces what nests past MAX_DEPTH by [] before decoding
    # (prune_deeper), so the decoder never recurses near Python's limit, and a line too deep is
    # refused whole with every member read, its id included.
    text = '{"a":' * levels + "1" + "}" * levels if as_object else "[" * levels + "]" * levels
    return Raw(text, levels, True)


raws = st.one_of(
    st.builds(
        deep_raw,
        st.one_of(
            st.integers(MAX_DEPTH - 3, MAX_DEPTH + 3),
            st.integers(1, 600),
            st.integers(600, 20_000),
            st.integers(20_000, 50_000),
        ),
        st.booleans(),
    ),
    st.builds(
        lambda digits, sign: Raw(sign + "7" * digits, 0, digits <= 4300),
        st.integers(4290, 20000),
        st.sampled_from(["", "-"]),
    ),
    st.sampled_from(["NaN", "Infinity", "-Infinity"]).map(lambda t: Raw(t, 0, False)),
)

texts = st.one_of(
    st.text(max_size=30),
    st.sampled_from(["\ud800", "a\udfffb", "\x00", "\x1b[31m", "\u2028\u2029", "\r\n"]),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    texts,
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
member_values = st.one_of(values, raws, raws, st.integers(10_000, 300_000).map(lambda n: "x" * n))
valid_ids = st.one_of(st.integers(-(2**63), 2**63), st.text(max_size=12))
odd_ids = st.one_of(
    st.none(),
    st.booleans(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.builds(lambda n: Raw("9" * n, 0, False), st.integers(4301, 6000)),
)
methods = st.one_of(
    st.sampled_from(
        ["echo", "slow", "fail", "boom", "unknown", "deep_result", "nan_result", "$/cancel_request"]
    ),
    st.text(max_size=10),
)


@st.composite
def messages(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(
        st.sampled_from(
            ["request"] * 4
            + ["notification"] * 2
            + ["response"] * 2
            + ["cancel", "invalid", "random"]
        )
    )
    message: dict[str, Any] = {}
    if draw(st.booleans()) or kind != "random":
        message["jsonrpc"] = draw(st.sampled_from(["2.0", "2.0", "2.0", "1.0", 2]))
    if kind == "request":
        message["id"] = draw(st.one_of(valid_ids, valid_ids, valid_ids, odd_ids))
        message["method"] = draw(methods)
        if draw(st.booleans()):
            message["params"] = draw(member_values)
    elif kind == "notification":
        message["method"] = draw(methods)
        if draw(st.booleans()):
            message["params"] = draw(member_values)
    elif kind == "cancel":
        message["method"] = "$/cancel_request"
        message["params"] = draw(
            st.one_of(
                st.fixed_dictionaries({"requestId": st.one_of(valid_ids, odd_ids)}),
                st.just({"requestId": "@earlier"}),  # resolved to an earlier request's id
                values,
            )
        )
    elif kind == "response":
        message["id"] = draw(st.one_of(valid_ids, odd_ids))
        if draw(st.booleans()):
            message["result"] = draw(member_values)
        else:
            message["error"] = draw(
                st.one_of(
                    st.fixed_dictionaries({"code": st.integers(), "message": st.text(max_size=5)}),
                    values,
                )
            )
    elif kind == "invalid":
        if draw(st.booleans()):
            message["id"] = draw(st.one_of(valid_ids, odd_ids))
        if draw(st.booleans()):
            message["method"] = draw(st.one_of(st.integers(), st.lists(st.integers()), st.none()))
        if draw(st.booleans()):
            message["params"] = draw(member_values)
    else:
        message.update(draw(st.dictionaries(st.sampled_from(["id", "method", "x"]), values)))
    keys = draw(st.permutations(list(message)))  # members in any order
    return {key: message[key] for key in keys}


tops = st.one_of(
    messages(),
    messages(),
    messages(),
    messages(),
    st.lists(st.one_of(messages(), messages(), values), max_size=4),  # batches: empty, mixed
    st.lists(st.lists(messages(), max_size=2), max_size=2),  # nested batches
    values,
)


def uniquify(tops_: list[Any]) -> list[Any]:
    """Give every message with a valid id an id of its own (so that exactly one answer per id
    is expected); resolve ``@earlier`` cancel targets to an earlier request's id."""
    used: set[Any] = {PROBE_ID, PROBE_ID + "-final"}
    earlier: list[Any] = []

    def fix(message: Any) -> Any:
        if type(message) is list:
            return [fix(m) for m in message]
        if type(message) is not dict:
            return message
        message = dict(message)
        params = message.get("params")
        if type(params) is dict and params.get("requestId") == "@earlier":
            params = dict(params)
            params["requestId"] = earlier[-1] if earlier else 0
            message["params"] = params
        rid = message.get("id")
        if type(rid) in (int, str):
            while rid in used:
                rid = rid * 7 + 1 if type(rid) is int else rid + "'"
            used.add(rid)
            earlier.append(rid)
            message["id"] = rid
        return message

    return [fix(top) for top in tops_]


def dumps(value: Any) -> bytes:
    raws: list[str] = []

    def plain(v: Any) -> Any:
        if isinstance(v, Raw):
            raws.append(v.text)
            return f"\x00RAW{len(raws) - 1}\x00"
        if type(v) is dict:
            return {k: plain(x) for k, x in v.items()}
        if type(v) is list:
            return [plain(x) for x in v]
        return v

    text = json.dumps(plain(value))
    for n, raw in enumerate(raws):
        text = text.replace(f'"\\u0000RAW{n}\\u0000"', raw, 1)
    return text.encode("utf-8")


def depth(v: Any) -> int:
    if isinstance(v, Raw):
        return v.depth
    if type(v) is dict:
        return 1 + max(map(depth, v.values()), default=0)
    if type(v) is list:
        return 1 + max(map(depth, v), default=0)
    return 0


def parses(v: Any) -> bool:
    if isinstance(v, Raw):
        return v.parses
    if type(v) is dict:
        return all(map(parses, v.values()))
    if type(v) is list:
        return all(map(parses, v))
    return True


Expected = tuple[Any, str]  # (answer id, "parse" | "invalid" | "answer")


def _valid_id(message: dict[str, Any]) -> Any:
    rid = message.get("id")
    return rid if type(rid) in (int, str) else None


def _refused(members: dict[str, Any], failed: str | None, parsed: bool) -> list[Expected]:
    """The documented rules for a bad line (docs/design.md, Layer 2: connection)."""
    keys = set(members) | ({failed} if failed is not None else set())
    asks = "method" in keys or "params" in keys
    if not asks and ("result" in keys or "error" in keys):
        return []  # an answer to us: nothing is written back
    if parsed and asks and "id" not in keys:
        return []  # a notification
    return [(_valid_id(members), "parse")]


def _dispatched(message: dict[str, Any]) -> list[Expected]:
    method = message.get("method")
    if method is None:
        if "id" in message and ("result" in message or "error" in message):
            return []  # a response to an unknown id: reported, not answered
        return [(_valid_id(message), "invalid")]
    if type(method) is not str:
        return [(_valid_id(message), "invalid")]
    if "id" in message:
        rid = message["id"]
        return [(rid, "answer")] if type(rid) in (int, str) else [(None, "invalid")]
    return []  # a notification, $/cancel_request included


def expected(top: Any) -> list[Expected]:
    if not parses(top):
        if type(top) is not dict:
            return [(None, "parse")]
        members: dict[str, Any] = {}
        for key, value in list(top.items())[:16]:
            if not parses(value):
                return _refused(members, key, parsed=False)
            members[key] = value
        raise AssertionError("unreachable")
    if type(top) is dict:
        if depth(top) > MAX_DEPTH:
            return _refused(top, None, parsed=True)
        return _dispatched(top)
    if type(top) is list:
        if not top:
            return [(None, "invalid")]
        if depth(top) > MAX_DEPTH:  # a batch too deep: one bad line (what is cut is not read)
            return [(None, "parse")]
        out: list[Expected] = []
        for element in top:
            if type(element) is dict:
                out += _dispatched(element)
            else:
                out.append((None, "invalid"))
        return out
    return [(None, "invalid")]


def _classify(answer: dict[str, Any]) -> Expected:
    code = (answer.get("error") or {}).get("code")
    kind = {-32700: "parse", -32600: "invalid"}.get(code, "answer")  # type: ignore[arg-type]
    return (answer["id"], kind)


def _key(item: Expected) -> tuple[str, str]:
    return (json.dumps(item[0]), item[1])


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@SETTINGS
@given(
    lines=st.lists(tops, min_size=1, max_size=5),
    crlf=st.lists(st.booleans(), min_size=5, max_size=5),
    cuts=st.lists(st.integers(0, 10**7), max_size=8),
)
def test_structured_lines(
    backend: str, lines: list[Any], crlf: list[bool], cuts: list[int]
) -> None:
    lines = uniquify(lines)
    data = b"".join(
        dumps(top) + (b"\r\n" if use_crlf else b"\n")
        for top, use_crlf in zip(lines, crlf, strict=False)
    )
    want = Counter(_key(item) for top in lines for item in expected(top))

    async def main() -> list[dict[str, Any]]:
        return await exercise(_chunked(data, cuts), sum(want.values()))

    answers = anyio.run(main, backend=backend)
    got = Counter(_key(_classify(a)) for a in answers)
    assert got == want
    # every id-bearing request got exactly one answer, under its id
    for top in lines:
        for rid, _kind in expected(top):
            if rid is not None:
                assert sum(1 for a in answers if a["id"] == rid and type(a["id"]) is type(rid)) == 1


# -- raw bytes ----------------------------------------------------------------------------------


@st.composite
def raw_lines(draw: st.DrawFn) -> bytes:
    base = dumps(draw(tops))
    mutation = draw(
        st.sampled_from(["none", "insert", "delete", "truncate", "replace", "random", "control"])
    )
    if mutation == "random":
        return draw(st.binary(max_size=300))
    at = draw(st.integers(0, len(base)))
    if mutation == "insert":
        return base[:at] + draw(st.binary(min_size=1, max_size=4)) + base[at:]
    if mutation == "delete":
        return base[:at] + base[at + draw(st.integers(1, 8)) :]
    if mutation == "truncate":
        return base[:at]
    if mutation == "replace":
        return (
            base[:at]
            + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80"]))
            + base[at + 1 :]
        )
    if mutation == "control":
        return (
            base[:at]
            + draw(st.sampled_from([b"\x00", b"\x1b", b"\x07", b"\r", b"\x7f"]))
            + base[at:]
        )
    return base


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@SETTINGS
@given(
    lines=st.lists(raw_lines(), min_size=1, max_size=5),
    endings=st.lists(st.sampled_from([b"\n", b"\r\n", b""]), min_size=5, max_size=5),
    cuts=st.lists(st.integers(0, 10**7), max_size=8),
)
def test_raw_lines(backend: str, lines: list[bytes], endings: list[bytes], cuts: list[int]) -> None:
    data = b"".join(line + end for line, end in zip(lines, endings, strict=False))

    async def main() -> list[dict[str, Any]]:
        return await exercise(_chunked(data, cuts), None)

    answers = anyio.run(main, backend=backend)
    # What was answered is well formed (checked as it was read), and no line got more answers
    # than it could hold messages (a batch of n elements has n - 1 commas at least).
    assert len(answers) <= sum(line.count(b",") + 1 for line in data.split(b"\n"))
