"""_connection._hotpath and the ingest fast path: the shortcut changes the time, not the result.

* `decode_hot_line` gives the very dict the stdlib decoder gives, for every line it takes, and
  takes every line of the hot shape (strings without lone surrogates);
* a client reading with the fast path and one reading with it switched off end with the same
  state, problems and replay for the same lines (hypothesis, real connections in memory);
* the reducer's strict base64 decode agrees with ``b64decode(validate=True)``, problems included;
* the replay buffer keeps what the straightforward buffer it replaced kept;
* a turn nobody iterates makes no event per update;
* a ``terminal_chunks`` listener (a notebook cell's) gets every chunk, in order, as a
  ``TerminalChunk`` whose lazy model is the one a plain listener gets, and no model is made
  for a chunk it alone sees.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import weakref
from collections import OrderedDict, deque
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acp_notebook import _protocol as p
from acp_notebook import connect_streams
from acp_notebook._client import _session, _turn
from acp_notebook._client._replay import UpdateBuffer, bulk_weight
from acp_notebook._client._session import TerminalChunk
from acp_notebook._connection import _jsonrpc
from acp_notebook._connection._hotpath import decode_hot_line, is_hot_message
from acp_notebook._connection._jsonrpc import Connection
from acp_notebook._connection._lines import BadJson, decode_json_line, memory_byte_pipe
from acp_notebook._state import SessionState

# Any code point, lone surrogates included (they only survive as \\u escapes).
TEXT = st.text(st.characters(codec=None, categories=None), max_size=40)
B64ISH = st.text(
    alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=\n -_.é", max_size=40
)


def hot(session_id: str, terminal_id: str, data: str) -> dict[str, Any]:
    update = {"sessionUpdate": "terminal_output_chunk", "terminalId": terminal_id, "data": data}
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": session_id, "update": update},
    }


def has_surrogate(*texts: str) -> bool:
    return any(0xD800 <= ord(c) <= 0xDFFF for text in texts for c in text)


@st.composite
def encoded(draw: st.DrawFn, message: Any) -> bytes:
    """``message`` as one JSON line, in any key order, spacing and escaping."""

    def shuffle(value: Any) -> Any:
        if isinstance(value, dict):
            keys = draw(st.permutations(list(value)))
            return {k: shuffle(value[k]) for k in keys}
        if isinstance(value, list):
            return [shuffle(v) for v in value]
        return value

    ascii_only = draw(st.booleans())
    separators = draw(st.sampled_from([(",", ":"), (", ", ": "), (" ,", " :")]))
    text = json.dumps(shuffle(message), ensure_ascii=ascii_only, separators=separators)
    return text.encode("utf-8", "surrogatepass")


@settings(max_examples=300)
@given(st.data(), TEXT, TEXT, TEXT)
def test_a_hot_line_decodes_as_the_stdlib_decodes_it(
    data: st.DataObject, session_id: str, terminal_id: str, b64: str
) -> None:
    message = hot(session_id, terminal_id, b64)
    line = data.draw(encoded(message))
    fast = decode_hot_line(line)
    try:
        usual: Any = decode_json_line(line)
    except BadJson:
        usual = BadJson
    if fast is not None:
        assert fast == usual == message
        assert is_hot_message(fast)
    if not has_surrogate(session_id, terminal_id, b64) and len(line) <= 2**20:
        assert fast == message  # the shortcut is taken for every ordinary hot line


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)


@st.composite
def near_hot(draw: st.DrawFn) -> Any:
    """A hot message with one thing changed (an extra key, a number, a key missing...)."""
    message = hot(draw(TEXT), draw(TEXT), draw(TEXT))
    where = draw(st.sampled_from([message, message["params"], message["params"]["update"]]))
    change = draw(st.sampled_from(["extra", "drop", "retype"]))
    key = draw(st.sampled_from(sorted(where)))
    if change == "extra":
        where[draw(TEXT.filter(lambda k: k not in where))] = draw(JSON)
    elif change == "drop":
        del where[key]
    else:
        where[key] = draw(JSON)
    return message


@settings(max_examples=300)
@given(st.data(), st.one_of(near_hot(), JSON, st.lists(st.just(hot("s", "t", "QQ==")))))
def test_every_other_line_is_left_to_the_usual_path(data: st.DataObject, message: Any) -> None:
    line = data.draw(encoded(message))
    fast = decode_hot_line(line)
    if fast is None:
        return
    assert is_hot_message(message)  # the change left it hot (e.g. a string retyped as one)
    assert fast == decode_json_line(line)


@settings(max_examples=300)
@given(st.binary(max_size=60), st.binary(max_size=60))
def test_bytes_that_are_not_json_are_left_to_the_usual_path(head: bytes, tail: bytes) -> None:
    line = head + b'"terminal_output_chunk"' + tail
    fast = decode_hot_line(line)
    if fast is not None:
        assert fast == decode_json_line(line)


def test_lines_over_the_width_check_are_left_to_the_usual_path() -> None:
    line = json.dumps(hot("s", "[" * (2**20), "QQ==")).encode()
    assert decode_json_line(line) == hot("s", "[" * (2**20), "QQ==")
    assert decode_hot_line(line) is None  # the connection's width check sees it first


# -- the whole client, fast path on and off ---------------------------------------------------


def reference_answer(method: str) -> Any:
    if method == "initialize":
        info = {"name": "peer", "version": "1"}
        return {"protocolVersion": 2, "info": info, "capabilities": {"session": {}}}
    if method == "session/new":
        return {"sessionId": "s"}
    if method == "session/prompt":
        return {"messageId": "u1"}
    return {}


WATCHES = ["iterator", "nobody", "listener", "view listener", "iterator gone"]


def wire(update: Any) -> tuple[Any, list[str]]:
    return update.to_wire(), sorted(update.model_fields_set)


async def ingest(
    lines: list[bytes], fast: bool, watch: str = "iterator", together: bool = False
) -> dict[str, Any]:
    """Send ``lines`` to a client in the middle of a turn; what it made of them.

    ``watch``: who sees the updates as they come: an iterator made before the lines, nobody
    (only the replay, read by an iterator made after the turn), a listener, or an iterator
    made and dropped before the lines (the turn was iterated, no stream is left).
    ``together``: the lines in one write (the client reads them at once, and applies a run
    of them in one step), else one write each."""

    async def answer(method: str, params: Any) -> Any:
        return reference_answer(method)

    client_send, peer_receive = memory_byte_pipe(64)
    peer_send, client_receive = memory_byte_pipe(64)
    peer = Connection(peer_receive, peer_send, name="client", request_handler=answer)
    heard: list[Any] = []
    async with peer, connect_streams(client_receive, client_send) as agent:
        if not fast:
            agent.connection.set_fast_notifications(None)
        session = await agent.new_session(cwd="/")
        turn = await session.prompt("go")
        early = turn.updates() if watch == "iterator" else None  # sees every line's update
        if watch == "listener":
            session.subscribe(lambda _s, u: heard.append(wire(u)))
        if watch == "view listener":

            def on_chunk(_s: Any, chunk: TerminalChunk) -> None:
                assert chunk.session_update == "terminal_output_chunk"
                if chunk._model is None:  # (the hot path makes views without __init__)
                    fresh = TerminalChunk(chunk.terminal_id, chunk.data)
                    for name in TerminalChunk.__slots__:
                        assert getattr(chunk, name) == getattr(fresh, name)
                try:
                    raw: bytes | None = base64.b64decode(chunk.data, validate=True)
                except (binascii.Error, ValueError):  # (ValueError: not ASCII)
                    raw = None
                assert chunk.decoded() == raw
                model = chunk.model
                assert (model.terminal_id, model.data) == (chunk.terminal_id, chunk.data)
                assert chunk.model is model  # made once
                heard.append(wire(model))

            session.subscribe(lambda _s, u: heard.append(wire(u)), terminal_chunks=on_chunk)
        if watch == "iterator gone":
            gone = turn.updates()
            await gone.aclose()
            stream = weakref.ref(gone)
            del gone
            # CPython frees it with its last reference (no cycle holds a stream): no
            # gc.collect(), which walked the worker's whole heap (6 CPU-s a run, both modules)
            assert stream() is None
        if together and lines:
            await peer_send.send(b"".join(line + b"\n" for line in lines))
        else:
            for line in lines:
                await peer_send.send(line + b"\n")
        idle = {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}
        await peer.notify("session/update", {"sessionId": "s", "update": idle})
        await turn.wait()
        seen = [wire(u) async for u in early] if early is not None else None
        replay = turn.updates()
        late = [wire(u) async for u in replay]
        state = session.state
        return {
            "heard": heard,
            "dropped": replay.dropped,
            "terminals": {
                tid: (t.data, t.total_bytes, t.revision, t.generation)
                for tid, t in state.terminals.items()
            },
            "revision": state.revision,
            "session problems": list(session.problems),
            "agent problems": [(x.kind, x.detail) for x in agent.problems],
            "seen": seen,
            "late": late,
            "log": [entry for entry in agent.connection.log if entry[0] == "recv"][2:],
        }


@st.composite
def traffic(draw: st.DrawFn) -> list[bytes]:
    lines = []
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(
            st.sampled_from(["chunk", "chunk", "bad base64", "meta", "other session", "update"])
        )
        terminal = draw(st.sampled_from(["a", "b"]))
        data = base64.b64encode(draw(st.binary(max_size=30))).decode()
        if kind == "bad base64":
            data = draw(B64ISH)
        message = hot("zz" if kind == "other session" else "s", terminal, data)
        if kind == "meta":
            message["params"]["update"]["_meta"] = {"n": draw(st.integers())}
        if kind == "update":
            update = {"sessionUpdate": "terminal_update", "terminalId": terminal, "command": "ls"}
            message["params"]["update"] = update
        lines.append(draw(encoded(message)))
    return lines


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(traffic(), st.sampled_from(WATCHES), st.booleans(), st.sampled_from([1, 3, 32]))
def test_the_fast_path_and_the_pydantic_path_give_the_same_state(
    lines: list[bytes], watch: str, together: bool, run_limit: int
) -> None:
    with pytest.MonkeyPatch.context() as patch:  # (runs cut short, as a long read's are)
        patch.setattr(_jsonrpc, "FAST_RUN", run_limit)
        fast = anyio.run(ingest, lines, True, watch, together)
    usual = anyio.run(ingest, lines, False, watch, together)
    assert fast == usual
    updates = len(lines) - sum(b'"zz"' in line for line in lines) + 1  # + the idle
    if watch == "iterator":
        assert len(fast["seen"]) == updates
    if watch in ("listener", "view listener"):
        assert len(fast["heard"]) == updates
    if watch == "view listener":  # the views' models are what a plain listener gets, in order
        assert fast["heard"] == anyio.run(ingest, lines, True, "listener", together)["heard"]
    # Nothing lost: the replay holds every update, or says how many it left out.
    assert len(fast["late"]) + fast["dropped"] == updates


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(traffic(), st.sampled_from(WATCHES), st.integers(1, 6), st.integers(0, 40))
def test_a_small_replay_keeps_the_same_updates_on_both_paths(
    lines: list[bytes], watch: str, max_items: int, max_bulk: int
) -> None:
    with pytest.MonkeyPatch.context() as patch:  # a replay that drops as a flood makes it
        patch.setattr(_turn, "REPLAY_LIMIT", max_items)
        patch.setattr(_turn, "REPLAY_BULK_BYTES", max_bulk)
        fast = anyio.run(ingest, lines, True, watch, True)
        usual = anyio.run(ingest, lines, False, watch, True)
    assert fast == usual
    updates = len(lines) - sum(b'"zz"' in line for line in lines) + 1
    assert len(fast["late"]) + fast["dropped"] == updates
    assert len(fast["late"]) <= max_items


def test_the_fast_path_is_taken() -> None:
    line = json.dumps(hot("s", "t", base64.b64encode(b"hello").decode())).encode()
    counted: list[bytes] = []

    def counting(line: bytes) -> Any:
        found = decode_hot_line(line)
        if found is not None:
            counted.append(line)
        return found

    async def main() -> None:
        async def answer(method: str, params: Any) -> Any:
            return reference_answer(method)

        client_send, peer_receive = memory_byte_pipe(64)
        peer_send, client_receive = memory_byte_pipe(64)
        peer = Connection(peer_receive, peer_send, name="client", request_handler=answer)
        async with peer, connect_streams(client_receive, client_send) as agent:
            agent.connection.set_fast_notifications(counting, agent._on_hot_updates)
            session = await agent.new_session(cwd="/")
            turn = await session.prompt("go")
            await peer_send.send(line + b"\n")
            idle = {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}
            await peer.notify("session/update", {"sessionId": "s", "update": idle})
            await turn.wait()
            assert turn.terminals["t"].data == b"hello"

    anyio.run(main)
    assert counted == [line]


# -- the reducer's base64 ---------------------------------------------------------------------


@settings(max_examples=500)
@given(st.one_of(B64ISH, st.binary(max_size=40).map(lambda b: base64.b64encode(b).decode())))
def test_strict_base64_decodes_as_b64decode_validate(data: str) -> None:
    state = SessionState("s")
    state.apply(p.TerminalOutputChunk(terminal_id="t", data=data))
    try:
        expected: bytes | None = base64.b64decode(data, validate=True)
        problem = None
    except (binascii.Error, ValueError) as exc:
        expected = None
        problem = f"terminal_output_chunk for 't': invalid base64 ({exc}); this update was dropped"
    if expected is None:
        assert state.problems == [problem]
        assert "t" not in state.terminals or state.terminals["t"].total_bytes == 0
    else:
        assert state.problems == []
        assert state.terminals["t"].data == expected


# -- the replay buffer ------------------------------------------------------------------------


class ReferenceBuffer:
    """The buffer as it was (one ordered dict): what the faster one must match."""

    def __init__(self, max_items: int, max_bulk: int) -> None:
        self.max_items, self.max_bulk, self.dropped = max_items, max_bulk, 0
        self.items: OrderedDict[int, Any] = OrderedDict()
        self.bulk: deque[tuple[int, int]] = deque()
        self.bulk_bytes = 0
        self.arrived = 0

    def push(self, update: Any) -> None:
        key = self.arrived
        self.arrived += 1
        self.items[key] = update
        weight = bulk_weight(update)
        if weight:
            self.bulk.append((key, weight))
            self.bulk_bytes += weight
        while self.bulk_bytes > self.max_bulk or len(self.items) > self.max_items:
            if self.bulk:
                key, weight = self.bulk.popleft()
                self.bulk_bytes -= weight
                del self.items[key]
            else:
                self.items.popitem(last=False)
            self.dropped += 1

    def popleft(self) -> tuple[bool, Any]:
        if not self.items:
            return False, None
        key, update = self.items.popitem(last=False)
        if self.bulk and self.bulk[0][0] == key:
            self.bulk_bytes -= self.bulk.popleft()[1]
        return True, update


def output_chunk(data: str) -> p.TerminalOutputChunk:
    return p.TerminalOutputChunk(terminal_id="t", data=data)


def info_update(title: str) -> p.SessionInfoUpdate:
    return p.SessionInfoUpdate(title=title)


@settings(max_examples=500)
@given(
    st.integers(1, 6),
    st.integers(0, 20),
    st.lists(
        st.tuples(
            st.one_of(
                st.integers(0, 8),
                st.just("pop"),
                st.just("info"),
                st.tuples(st.integers(0, 8)),
                st.tuples(st.just("lazy"), st.integers(0, 8), st.booleans()),
                st.tuples(st.just("pair"), st.integers(0, 8)),
            ),
            st.sampled_from(["snapshot", "counts", "none", "none"]),
        ),
        max_size=60,
    ),
)
def test_the_replay_buffer_keeps_what_the_reference_keeps(
    max_items: int, max_bulk: int, steps: list[Any]
) -> None:
    """``(n,)``: a hot chunk pushed as its wire dict (`push_chunk`, dropped late); ``("lazy",
    n, partial)``: an update pushed as what makes it (`push_lazy`: a partial or a tuple, an info
    update for n = 0, else a chunk of n characters, as a v1 line's two updates are), ``("pair",
    n)``: both at once (`push_lazy_pair`: an info update, then a chunk of n); after a
    step the buffer is read whole, only counted, or not at all (reads settle what it drops)."""
    ours, ref = UpdateBuffer(max_items, max_bulk), ReferenceBuffer(max_items, max_bulk)
    for n, (step, read) in enumerate(steps):
        if step == "pop":
            assert ours.popleft() == ref.popleft()
        elif isinstance(step, tuple) and step[0] == "lazy":
            _, size, partial = step
            make: Any = (output_chunk, "C" * size) if size else (info_update, str(n))
            ours.push_lazy(functools.partial(*make) if partial else make, size)
            ref.push(functools.partial(*make)())
        elif isinstance(step, tuple) and step[0] == "pair":
            first, second = (info_update, str(n)), (output_chunk, "D" * step[1])
            ours.push_lazy_pair(first, second, step[1])
            ref.push(info_update(str(n)))
            ref.push(output_chunk("D" * step[1]))
        elif isinstance(step, tuple):
            raw = {"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": "B" * n}
            raw["data"] = raw["data"][: step[0]]
            ours.push_chunk(raw)
            ref.push(p.TerminalOutputChunk.model_validate(raw))
        else:
            if step == "info":
                update: Any = p.SessionInfoUpdate(title=str(n))
            else:
                update = p.TerminalOutputChunk(terminal_id="t", data="A" * step)
            ours.push(update)
            ref.push(update)
        if read == "snapshot":
            assert ours.snapshot() == list(ref.items.values())
        if read != "none":
            assert (len(ours), ours.bulk_bytes, ours.dropped) == (
                len(ref.items),
                ref.bulk_bytes,
                ref.dropped,
            )
    assert ours.snapshot() == list(ref.items.values())
    assert (len(ours), ours.bulk_bytes, ours.dropped) == (
        len(ref.items),
        ref.bulk_bytes,
        ref.dropped,
    )
    while True:  # and read one by one, to the end
        found = ours.popleft()
        assert found == ref.popleft()
        if not found[0]:
            break


def test_a_flood_of_hot_chunks_stays_within_an_eighth_past_the_replay_limits() -> None:
    buffer = UpdateBuffer(100, 1000)
    raw = {"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": "QUJD"}
    for _ in range(10_000):
        buffer.push_chunk(raw)
        assert len(buffer._bulk) <= 112 and buffer._bulk_bytes <= 1125  # memory stays bounded
    assert (len(buffer), buffer.bulk_bytes, buffer.dropped) == (100, 400, 9_900)


# -- no event per update ----------------------------------------------------------------------


def test_a_turn_nobody_iterates_makes_no_event_per_update(monkeypatch: pytest.MonkeyPatch) -> None:
    made = 0
    real = anyio.Event

    def counting() -> anyio.Event:
        nonlocal made
        made += 1
        return real()

    chunk = json.dumps(hot("s", "t", "QUJD")).encode() + b"\n"

    async def main() -> None:
        async def answer(method: str, params: Any) -> Any:
            return reference_answer(method)

        client_send, peer_receive = memory_byte_pipe(64)
        peer_send, client_receive = memory_byte_pipe(64)
        peer = Connection(peer_receive, peer_send, name="client", request_handler=answer)
        async with peer, connect_streams(client_receive, client_send) as agent:
            session = await agent.new_session(cwd="/")
            turn = await session.prompt("go")
            monkeypatch.setattr(anyio, "Event", counting)
            await peer_send.send(chunk * 2000)
            idle = {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}
            await peer.notify("session/update", {"sessionId": "s", "update": idle})
            await turn.wait()
            monkeypatch.setattr(anyio, "Event", real)
            assert turn.terminals["t"].total_bytes == 3 * 2000

    anyio.run(main)
    assert made < 20  # was one per update (2001)


# -- no model for a chunk nobody sees ---------------------------------------------------------


@pytest.mark.parametrize("watch", ["nobody", "listener", "view listener"])
def test_a_chunk_becomes_a_model_only_when_someone_sees_it(
    monkeypatch: pytest.MonkeyPatch, watch: str
) -> None:
    from acp_notebook._client import _replay

    made = 0

    def counting(real: Any) -> Any:
        def validate(raw: Any) -> Any:
            nonlocal made
            made += 1
            return real(raw)

        return validate

    monkeypatch.setattr(_session, "_validate_chunk", counting(_session._validate_chunk))
    monkeypatch.setattr(_replay, "_validate_chunk", counting(_replay._validate_chunk))
    chunks = 3 * _turn.REPLAY_LIMIT
    chunk = json.dumps(hot("s", "t", "QUJD")).encode() + b"\n"

    async def main() -> None:
        async def answer(method: str, params: Any) -> Any:
            return reference_answer(method)

        client_send, peer_receive = memory_byte_pipe(64)
        peer_send, client_receive = memory_byte_pipe(64)
        peer = Connection(peer_receive, peer_send, name="client", request_handler=answer)
        heard: list[Any] = []
        async with peer, connect_streams(client_receive, client_send) as agent:
            session = await agent.new_session(cwd="/")
            if watch == "listener":
                session.subscribe(lambda _s, u: heard.append(u))
            if watch == "view listener":  # as a notebook cell subscribes
                session.subscribe(
                    lambda _s, u: heard.append(u), terminal_chunks=lambda _s, c: heard.append(c)
                )
            turn = await session.prompt("go")
            await peer_send.send(chunk * chunks)
            idle = {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}
            await peer.notify("session/update", {"sessionId": "s", "update": idle})
            await turn.wait()
            assert turn.terminals["t"].total_bytes == 3 * chunks  # every chunk applied, in order
            assert turn.terminals["t"].data == b"ABC" * chunks
            during = made
            late = [u async for u in turn.updates()]
            kept = [u for u in late if isinstance(u, p.TerminalOutputChunk)]
            assert len(kept) == _turn.REPLAY_LIMIT - 1  # the newest, and the idle
            assert all(u.data == "QUJD" and u.terminal_id == "t" for u in kept)
            if watch == "nobody":
                assert during == 0  # was one per chunk
                assert made == len(kept)  # made for what the late iterator read, only
            elif watch == "view listener":
                assert during == 0  # a view per chunk, not a model
                views = [u for u in heard if isinstance(u, TerminalChunk)]
                assert len(views) == chunks and len(heard) == chunks + 1  # and the idle
                assert all(v.data == "QUJD" and v.decoded() == b"ABC" for v in views)
                assert made == len(kept)
            else:
                assert during == chunks  # a listener gets every chunk's model
                assert len([u for u in heard if isinstance(u, p.TerminalOutputChunk)]) == chunks

    anyio.run(main)
