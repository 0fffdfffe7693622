"""The v1 hot path (``_hotpath.decode_v1_hot_line``, ``_v1.on_hot_updates``): a v1 agent's
plain text chunks and its ``_meta`` terminal output skip the v1 and v2 models, and change nothing
but the time.

* `decode_v1_hot_line` takes exactly the v1 hot shapes, and gives the dict the stdlib gives;
* a client reading v1 traffic with the fast path and one with it switched off end with the same
  messages (text and content), tool calls, terminals, problems, replay, listeners' updates and
  log, whoever watches (hypothesis; real connections in memory);
* a v1 flood nobody watches makes no model per line.
"""

from __future__ import annotations

import base64
import contextlib
import json
import weakref
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hotpath import TEXT, encoded, wire

from acp_notebook import _protocol as p
from acp_notebook import connect_streams
from acp_notebook._client import _turn
from acp_notebook._client._session import TerminalChunk
from acp_notebook._connection._hotpath import decode_v1_hot_line, is_v1_hot_update
from acp_notebook._connection._jsonrpc import Connection
from acp_notebook._connection._lines import memory_byte_pipe

WATCHES = ["iterator", "nobody", "listener", "view listener", "iterator gone"]
ROLES = ["agent_message_chunk", "user_message_chunk", "agent_thought_chunk"]


def message(update: dict[str, Any], session_id: str = "s") -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": session_id, "update": update},
    }


def text_chunk(text: str, tag: str = "agent_message_chunk", mid: str | None = None) -> Any:
    update: dict[str, Any] = {"sessionUpdate": tag, "content": {"type": "text", "text": text}}
    if mid is not None:
        update["messageId"] = mid
    return update


def output(call: str, terminal: str, data: str, key: str = "terminal_output") -> Any:
    meta = {key: {"terminal_id": terminal, "data": data}}
    return {"sessionUpdate": "tool_call_update", "toolCallId": call, "_meta": meta}


# -- the decoder ------------------------------------------------------------------------------


@settings(max_examples=200)
@given(st.data(), TEXT, st.sampled_from(ROLES), st.one_of(st.none(), TEXT))
def test_a_v1_text_chunk_decodes_as_the_stdlib_decodes_it(
    data: st.DataObject, text: str, tag: str, mid: str | None
) -> None:
    line_bytes = data.draw(encoded(message(text_chunk(text, tag, mid))))
    found = decode_v1_hot_line(line_bytes)
    try:
        expected = json.loads(line_bytes)
    except ValueError:
        expected = None
    if found is not None:
        assert found == expected and is_v1_hot_update(found["params"]["update"])
    elif not any(0xD800 <= ord(c) <= 0xDFFF for c in text + (mid or "")):
        pytest.fail(f"a hot v1 line was left to the usual path: {line_bytes[:200]!r}")


@pytest.mark.parametrize(
    "update",
    [
        text_chunk("x") | {"_meta": {"a": 1}},
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "image", "data": "x"}},
        {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "x", "annotations": {"priority": 1}},
        },
        text_chunk("x") | {"messageId": 3},
        output("c", "t", "x") | {"status": "completed"},
        {"sessionUpdate": "tool_call_update", "toolCallId": "c", "_meta": {"terminal_exit": {}}},
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "c",
            "_meta": {"terminal_output": {"terminal_id": "t", "data": 5}},
        },
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "c",
            "_meta": {"terminal_output": {"terminal_id": "t", "data": "x"}, "other": 1},
        },
        {"sessionUpdate": "tool_call", "toolCallId": "c", "title": "x"},
    ],
)
def test_other_v1_updates_are_left_to_the_usual_path(update: Any) -> None:
    line = json.dumps(message(update)).encode()
    assert decode_v1_hot_line(line) is None


# -- the same state, both ways ------------------------------------------------------------------


@contextlib.asynccontextmanager
async def v1_client(lines: list[bytes], together: bool = False) -> AsyncIterator[Any]:
    """A client connected to a v1 peer that sends ``lines`` during each prompt (its answer
    ends the turn): one write each, or all in one write (``together``: the client reads them
    at once, and applies a run of them in one step)."""
    client_send, peer_receive = memory_byte_pipe(64)
    peer_send, client_receive = memory_byte_pipe(64)

    async def answer(method: str, params: Any) -> Any:
        if method == "initialize":
            return {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}
        if method == "session/new":
            return {"sessionId": "s"}
        if method == "session/prompt":
            if together and lines:
                await peer_send.send(b"".join(line + b"\n" for line in lines))
            else:
                for line in lines:
                    await peer_send.send(line + b"\n")
            return {"stopReason": "end_turn"}
        return {}

    peer = Connection(peer_receive, peer_send, name="client", request_handler=answer)
    async with peer, connect_streams(client_receive, client_send) as agent:
        yield agent


async def ingest(
    lines: list[bytes], fast: bool, watch: str, together: bool = False
) -> dict[str, Any]:
    """Send ``lines`` to a client during a v1 turn (the prompt's answer ends it)."""
    heard: list[Any] = []
    async with v1_client(lines, together) as agent:
        assert agent.protocol_version == 1
        if not fast:
            agent.connection.set_fast_notifications(None)
        session = await agent.new_session(cwd="/")
        turn = session.start_turn("go")
        early = turn.updates() if watch == "iterator" else None
        if watch == "listener":
            session.subscribe(lambda _s, u: heard.append(wire(u)))
        if watch == "view listener":

            def on_chunk(_s: Any, chunk: TerminalChunk) -> None:
                heard.append(wire(chunk.model))

            session.subscribe(lambda _s, u: heard.append(wire(u)), terminal_chunks=on_chunk)
        if watch == "iterator gone":
            gone = turn.updates()
            await gone.aclose()
            stream = weakref.ref(gone)
            del gone
            # CPython frees it with its last reference (no cycle holds a stream): no
            # gc.collect(), which walked the worker's whole heap (6 CPU-s a run, both modules)
            assert stream() is None
        await turn.send()
        await turn.wait()
        seen = [wire(u) async for u in early] if early is not None else None
        replay = turn.updates()
        late = [wire(u) async for u in replay]
        state = session.state
        return {
            "heard": heard,
            "seen": seen,
            "late": late,
            "dropped": replay.dropped,
            "messages": {
                mid: (m.role, m.text, [c.to_wire() for c in m.content], m.revision)
                for mid, m in state.messages.items()
            },
            "turn text": turn.text,
            "tool calls": {
                cid: (c.status, c.meta, c.revision, c.title) for cid, c in state.tool_calls.items()
            },
            "terminals": {
                tid: (t.data, t.total_bytes, t.revision, t.command, t.reported)
                for tid, t in state.terminals.items()
            },
            "revision": state.revision,
            "session problems": list(session.problems),
            "agent problems": [(x.kind, x.detail) for x in agent.problems],
            "log": [entry for entry in agent.connection.log if entry[0] == "recv"][2:],
        }


@st.composite
def traffic(draw: st.DrawFn) -> list[bytes]:
    lines = []
    for _ in range(draw(st.integers(0, 14))):
        kind = draw(
            st.sampled_from(
                ["text", "text", "text meta", "open", "output", "output", "command", "other"]
            )
        )
        call = draw(st.sampled_from(["c1", "c2"]))
        terminal = draw(st.sampled_from(["a", "b"]))
        text = draw(TEXT)
        if kind in ("text", "text meta"):
            mid = draw(st.one_of(st.none(), st.sampled_from(["m1", "m2"])))
            update = text_chunk(text, draw(st.sampled_from(ROLES)), mid)
            if kind == "text meta":
                update["_meta"] = {"n": 1}
        elif kind == "open":
            update = {"sessionUpdate": "tool_call", "toolCallId": call, "title": "run"}
            update["_meta"] = {"terminal_info": {"terminal_id": terminal}}
        elif kind == "output":
            key = draw(st.sampled_from(["terminal_output", "terminal_output_delta"]))
            update = output(call, terminal, text, key)
            if draw(st.booleans()):
                entry = update["_meta"][key]
                entry["terminalId"] = entry.pop("terminal_id")
        elif kind == "command":
            update = {"sessionUpdate": "tool_call_update", "toolCallId": call}
            update["rawInput"] = {"command": "make"}
        else:
            update = {"sessionUpdate": "plan", "entries": []}
        session_id = "zz" if draw(st.integers(0, 9)) == 0 else "s"
        lines.append(draw(encoded(message(update, session_id))))
    return lines


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(traffic(), st.sampled_from(WATCHES), st.booleans())
def test_the_v1_fast_path_and_the_model_path_give_the_same_state(
    lines: list[bytes], watch: str, together: bool
) -> None:
    fast = anyio.run(ingest, lines, True, watch, together)
    usual = anyio.run(ingest, lines, False, watch, together)
    if watch == "view listener":
        # The same updates, in order, as a plain listener hears, except that on the fast path
        # a cell's listener is not told of the `_meta` patch each piece of output came in
        # (it gets the output's bytes as a chunk, as from a v2 agent); the state is the same.
        plain = anyio.run(ingest, lines, True, "listener", together)["heard"]
        for heard in (fast.pop("heard"), usual.pop("heard")):
            assert [u for u in heard if not output_patch(u)] == [
                u for u in plain if not output_patch(u)
            ]
            patches = [u for u in plain if output_patch(u)]
            assert all(u in patches for u in heard if output_patch(u))
    assert fast == usual
    assert len(fast["late"]) + fast["dropped"] >= len(fast.get("heard", ()))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    traffic(),
    st.sampled_from(["nobody", "iterator gone"]),
    st.integers(1, 6),
    st.integers(0, 400),
    st.integers(0, 40),
)
def test_a_full_replay_keeps_the_same_updates_on_both_paths(
    lines: list[bytes], watch: str, max_items: int, max_bulk: int, outputs: int
) -> None:
    """A run of output lines into a replay already full (what a v1 flood leaves: every line
    pushes out the oldest update, its output goes at once) drops what the model path drops."""
    opening = json.dumps(message(OPENING)).encode()
    run = [json.dumps(message(output("c", "t", f"line {n}\n"))).encode() for n in range(outputs)]
    lines = [opening, *lines, *run]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_turn, "REPLAY_LIMIT", max_items)
        patch.setattr(_turn, "REPLAY_BULK_BYTES", max_bulk)
        fast = anyio.run(ingest, lines, True, watch, True)
        usual = anyio.run(ingest, lines, False, watch, True)
    assert fast == usual
    assert len(fast["late"]) <= max_items


def output_patch(heard: tuple[dict[str, Any], list[str]]) -> bool:
    """Whether an update heard (`wire`) is the ``tool_call_update`` a v1 agent's terminal output
    makes: its id and a ``_meta`` carrying the output, nothing else."""
    update = heard[0]
    meta = update.get("_meta")
    return (
        update.get("sessionUpdate") == "tool_call_update"
        and set(update) == {"sessionUpdate", "toolCallId", "_meta"}
        and isinstance(meta, dict)
        and bool({"terminal_output", "terminal_output_delta"} & set(meta))
    )


#: a v1 tool call that announces its terminal ``t``
OPENING = {
    "sessionUpdate": "tool_call",
    "toolCallId": "c",
    "title": "run",
    "_meta": {"terminal_info": {"terminal_id": "t"}},
}


@pytest.fixture
def models(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many v1 models (``parsed``) and v2 update models (``made``) are made from now."""
    from acp_notebook._protocol import _v1 as v1

    counts = {"parsed": 0, "made": 0}
    lenient, real = v1.parse_v1_session_update_lenient, p.parse_session_update

    def counting_v1(raw: Any) -> Any:
        counts["parsed"] += 1
        return lenient(raw)

    def counting(data: Any) -> Any:
        counts["made"] += 1
        return real(data)

    monkeypatch.setattr(v1, "parse_v1_session_update_lenient", counting_v1)
    monkeypatch.setattr(p, "parse_session_update", counting)
    return counts


def test_a_v1_flood_nobody_watches_makes_no_model_per_line(models: dict[str, int]) -> None:
    lines = [json.dumps(message(OPENING)).encode()]
    for n in range(3000):
        lines.append(json.dumps(message(output("c", "t", f"line {n}\n"))).encode())
        lines.append(json.dumps(message(text_chunk(f"word {n} "))).encode())

    result = anyio.run(ingest, lines, True, "nobody")
    assert models["parsed"] == 1  # the opening (its terminal_info announces the terminal)
    data = result["terminals"]["t"][0]
    assert data == "".join(f"line {n}\r\n" for n in range(3000)).encode()
    # (each tool call update between them ends a run of chunks: a message each)
    assert result["turn text"] == "\n\n".join(f"word {n} " for n in range(3000))
    # made for what the late iterator read (the replay keeps the last 5,000), not per line
    assert 0 < models["made"] <= len(result["late"]) < 9000
    models["parsed"] = 0
    anyio.run(ingest, lines, False, "nobody")
    assert models["parsed"] == len(lines)  # (the usual path: a v1 model per line)


def test_a_v1_flood_a_cell_watches_makes_no_model_per_output_line(models: dict[str, int]) -> None:
    """A cell subscribes with a ``terminal_chunks`` listener: a v1 agent's output reaches it as
    `TerminalChunk` views of the bytes (as a v2 agent's does), with no v1 or v2 model made per
    line; a message chunk, which the cell's listener takes as a model, still makes one."""
    lines = [json.dumps(message(OPENING)).encode()]
    lines += [json.dumps(message(output("c", "t", f"line {n}\n"))).encode() for n in range(3000)]
    lines.append(json.dumps(message(text_chunk("done"))).encode())
    chunks: list[TerminalChunk] = []

    async def run() -> bytes:
        async with v1_client(lines) as agent:
            session = await agent.new_session(cwd="/")
            session.subscribe(lambda _s, _u: None, terminal_chunks=lambda _s, c: chunks.append(c))
            turn = await session.prompt("go")
            await turn.wait()
            return bytes(session.state.terminals["t"].data)

    data = anyio.run(run)
    assert models["parsed"] == 1  # the opening
    assert (
        models["made"] <= 2
    )  # the message chunk, the first output's patch: not one per output line
    expected = "".join(f"line {n}\r\n" for n in range(3000)).encode()
    assert data == expected
    # the first output names the terminal the usual way; each one after it is a view
    assert len(chunks) == 3000 and all(c.terminal_id == "t" for c in chunks)
    assert b"".join(c.decoded() or b"" for c in chunks) == expected
    last = chunks[-1]
    # the view made inline is the one `from_bytes` makes, slot for slot
    made = TerminalChunk.from_bytes("t", b"line 2999\r\n")
    assert {k: getattr(last, k) for k in TerminalChunk.__slots__} == {
        k: getattr(made, k) for k in TerminalChunk.__slots__
    }
    assert base64.b64decode(last.data) == b"line 2999\r\n"
    assert last.model == p.TerminalOutputChunk(terminal_id="t", data=last.data)


def test_a_failing_chunk_listener_is_logged_and_loses_no_byte(
    caplog: pytest.LogCaptureFixture,
) -> None:
    lines = [json.dumps(message(OPENING)).encode()]
    lines += [json.dumps(message(output("c", "t", f"{n}\n"))).encode() for n in range(5)]
    calls: list[bytes | None] = []

    def failing(_session: Any, chunk: TerminalChunk) -> None:
        calls.append(chunk.decoded())
        raise RuntimeError("a listener's bug")

    async def run() -> bytes:
        async with v1_client(lines) as agent:
            session = await agent.new_session(cwd="/")
            session.subscribe(lambda _s, _u: None, terminal_chunks=failing)
            session.subscribe(lambda _s, _u: None, terminal_chunks=failing)
            turn = await session.prompt("go")
            await turn.wait()
            return bytes(session.state.terminals["t"].data)

    assert anyio.run(run) == b"0\r\n1\r\n2\r\n3\r\n4\r\n"
    # both listeners got every piece after the first (which names the terminal, as a model)
    assert calls[-8:] == [
        b"1\r\n",
        b"1\r\n",
        b"2\r\n",
        b"2\r\n",
        b"3\r\n",
        b"3\r\n",
        b"4\r\n",
        b"4\r\n",
    ]
    assert caplog.text.count("session update listener failed") == len(calls)
