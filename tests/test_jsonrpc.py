from __future__ import annotations

import json
import tracemalloc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from acp_notebook._connection._errors import ConnectionClosed, MethodNotFound, RpcError
from acp_notebook._connection._jsonrpc import BadLine, Connection, Problem, connection_pair
from acp_notebook._connection._lines import LineReader, LineTooLong, memory_byte_pipe

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class RawPeer:
    """The other end of a Connection, speaking raw bytes."""

    def __init__(self, send: Any, receive: Any) -> None:
        self.send_stream = send
        self.receive_stream = receive
        self._reader = LineReader(receive, 2**30)
        self._lines: list[bytes] = []
        self.raw_lines: list[bytes] = []

    async def send_raw(self, data: bytes) -> None:
        await self.send_stream.send(data)

    async def send(self, message: Any) -> None:
        await self.send_raw(json.dumps(message).encode() + b"\n")

    async def recv_line(self) -> bytes:
        while not self._lines:
            batch = await self._reader.receive_lines()
            assert batch is not None, "connection closed its output"
            for item in batch:
                assert isinstance(item, bytes)
                self._lines.append(item)
        line = self._lines.pop(0)
        self.raw_lines.append(line)
        return line

    async def recv(self) -> Any:
        return json.loads(await self.recv_line())


@asynccontextmanager
async def raw_peer(**kwargs: Any) -> AsyncIterator[tuple[Connection, RawPeer]]:
    to_conn, conn_in = memory_byte_pipe(64)
    conn_out, from_conn = memory_byte_pipe(64)
    conn = Connection(conn_in, conn_out, **kwargs)
    peer = RawPeer(to_conn, from_conn)
    try:
        async with conn:
            yield conn, peer
    finally:
        await to_conn.aclose()
        await from_conn.aclose()


async def echo(method: str, params: Any) -> Any:
    return {"method": method, "params": params}


async def test_request_round_trip_and_id_sequence() -> None:
    a, b = connection_pair()
    b.set_request_handler(echo)
    async with a, b:
        assert await a.request("one", {"x": 1}) == {"method": "one", "params": {"x": 1}}
        assert await a.request("two") == {"method": "two", "params": None}
    sent_ids = [m["id"] for d, m in a.log if d == "send" and isinstance(m, dict)]
    assert sent_ids == [0, 1]
    assert a.closed and b.closed


async def test_peer_id_zero_does_not_collide_with_ours() -> None:
    async with raw_peer(request_handler=echo) as (conn, peer):
        result: dict[str, Any] = {}

        async def ask() -> None:
            result["value"] = await conn.request("ours", {"n": 1})

        async with anyio.create_task_group() as tg:
            tg.start_soon(ask)
            ours = await peer.recv()
            assert ours["id"] == 0 and ours["method"] == "ours"
            # The peer sends its own request with id 0 before answering ours.
            await peer.send({"jsonrpc": "2.0", "id": 0, "method": "theirs", "params": {"n": 2}})
            answer = await peer.recv()
            assert answer == {
                "jsonrpc": "2.0",
                "id": 0,
                "result": {"method": "theirs", "params": {"n": 2}},
            }
            await peer.send({"jsonrpc": "2.0", "id": 0, "result": "for ours"})
        assert result["value"] == "for ours"


async def test_bad_json_is_answered_and_reported() -> None:
    problems: list[Problem] = []
    async with raw_peer(request_handler=echo, on_problem=problems.append) as (conn, peer):
        await peer.send_raw(b"{not json\n")
        reply = await peer.recv()
        assert reply["id"] is None and reply["error"]["code"] == -32700
        await peer.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"m","params":"\xff\xfe"}\n')
        reply = await peer.recv()  # not UTF-8, but its id can be read: the answer carries it
        assert reply["id"] == 1 and reply["error"]["code"] == -32700
        await peer.send_raw(b"42\n")
        reply = await peer.recv()
        assert reply["id"] is None and reply["error"]["code"] == -32600
        await peer.send({"jsonrpc": "2.0", "id": 7, "method": "still"})
        assert (await peer.recv())["result"] == {"method": "still", "params": None}
    assert len(problems) == 3
    assert [p.kind for p in problems] == ["unparsable", "unparsable", "not_jsonrpc"]
    assert [m for d, m in conn.log if isinstance(m, str)] == [str(p) for p in problems]


async def test_oversize_line_is_dropped_with_bounded_memory() -> None:
    problems: list[Problem] = []
    limit = 4096
    async with raw_peer(request_handler=echo, on_problem=problems.append, max_line_bytes=limit) as (
        conn,
        peer,
    ):
        block = b"a" * 2**20
        tracemalloc.start()
        try:
            head = b'{"jsonrpc":"2.0","method":"huge","params":"'
            await peer.send_raw(head)
            for _ in range(200):  # 200 MiB in one line
                await peer.send_raw(block)
            await peer.send_raw(b'"}\n{"jsonrpc":"2.0","id":"after","method":"m"}\n')
            reply = await peer.recv()
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert reply == {"jsonrpc": "2.0", "id": "after", "result": {"method": "m", "params": None}}
        assert conn.max_buffered <= limit + 256 * 1024
        assert peak < 16 * 2**20
    assert len(problems) == 1
    assert problems[0].kind == "too_long" and problems[0].preview is None
    assert f"line of {len(head) + 200 * 2**20 + 2} bytes" in str(problems[0])


async def test_batch_is_accepted_and_answered_line_by_line() -> None:
    seen: list[tuple[str, Any]] = []

    async def on_note(method: str, params: Any) -> None:
        seen.append((method, params))

    async with raw_peer(request_handler=echo, notification_handler=on_note) as (conn, peer):
        await peer.send(
            [
                {"jsonrpc": "2.0", "id": 1, "method": "a"},
                {"jsonrpc": "2.0", "method": "note", "params": [1]},
                {"jsonrpc": "2.0", "id": 2, "method": "b"},
                5,
            ]
        )
        replies = [await peer.recv() for _ in range(3)]
        assert all(isinstance(r, dict) for r in replies)
        by_id = {r["id"]: r for r in replies}
        assert by_id[1]["result"]["method"] == "a"
        assert by_id[2]["result"]["method"] == "b"
        assert by_id[None]["error"]["code"] == -32600
        assert seen == [("note", [1])]
        await peer.send([])
        reply = await peer.recv()
        assert reply["id"] is None and reply["error"]["code"] == -32600
        await conn.notify("ping")
        assert await peer.recv() == {"jsonrpc": "2.0", "method": "ping"}


async def test_request_errors() -> None:
    async def handler(method: str, params: Any) -> Any:
        if method == "known_error":
            raise RpcError(-32002, "Resource not found", {"uri": "x"})
        if method == "boom":
            raise ValueError("kaput")
        if method == "unserialisable":
            return object()
        raise MethodNotFound(method)

    problems: list[Problem] = []
    async with raw_peer(request_handler=handler, on_problem=problems.append) as (_conn, peer):
        for rid, method in enumerate(["nope", "known_error", "boom", "unserialisable"]):
            await peer.send({"jsonrpc": "2.0", "id": rid, "method": method})
        replies = {r["id"]: r["error"] for r in [await peer.recv() for _ in range(4)]}
    assert replies[0]["code"] == -32601 and "nope" in replies[0]["message"]
    assert replies[1] == {"code": -32002, "message": "Resource not found", "data": {"uri": "x"}}
    assert replies[2]["code"] == -32603 and "kaput" in replies[2]["message"]
    assert replies[3]["code"] == -32603
    assert any("kaput" in p.detail for p in problems)


async def test_no_request_handler_answers_method_not_found() -> None:
    async with raw_peer() as (_conn, peer):
        await peer.send({"jsonrpc": "2.0", "id": "q", "method": "x"})
        reply = await peer.recv()
    assert reply["id"] == "q" and reply["error"]["code"] == -32601


async def test_error_answer_raises_rpc_error() -> None:
    async with raw_peer() as (conn, peer), anyio.create_task_group() as tg:
        errors: list[RpcError] = []

        async def ask() -> None:
            with pytest.raises(RpcError) as info:
                await conn.request("m")
            errors.append(info.value)

        tg.start_soon(ask)
        request = await peer.recv()
        await peer.send(
            {
                "jsonrpc": "2.0",
                "id": request["id"],
                "error": {"code": -32000, "message": "auth"},
            }
        )
    assert (errors[0].code, errors[0].message) == (-32000, "auth")


async def test_unknown_notification_is_ignored() -> None:
    seen: list[str] = []

    async def on_note(method: str, params: Any) -> None:
        if method != "known":
            raise MethodNotFound(method)
        seen.append(method)

    problems: list[Problem] = []
    async with raw_peer(
        request_handler=echo, notification_handler=on_note, on_problem=problems.append
    ) as (_conn, peer):
        await peer.send({"jsonrpc": "2.0", "method": "_vendor/unknown", "params": {}})
        await peer.send({"jsonrpc": "2.0", "method": "known"})
        await peer.send({"jsonrpc": "2.0", "id": 1, "method": "after"})
        # The only line written back is the answer to the request.
        assert (await peer.recv())["id"] == 1
    assert seen == ["known"]
    assert problems == []
    assert len(peer.raw_lines) == 1


async def test_failing_notification_handler_does_not_stop_reading() -> None:
    async def on_note(method: str, params: Any) -> None:
        raise RuntimeError("handler bug")

    problems: list[Problem] = []
    async with raw_peer(
        request_handler=echo, notification_handler=on_note, on_problem=problems.append
    ) as (_conn, peer):
        await peer.send({"jsonrpc": "2.0", "method": "n"})
        await peer.send({"jsonrpc": "2.0", "id": 1, "method": "after"})
        assert (await peer.recv())["id"] == 1
    assert len(problems) == 1 and "handler bug" in problems[0].detail


async def test_notifications_keep_their_order() -> None:
    seen: list[int] = []
    done = anyio.Event()

    async def on_note(method: str, params: Any) -> None:
        n = params["n"]
        for _ in range(n % 3):
            await anyio.lowlevel.checkpoint()
        if n % 7 == 0:
            await anyio.sleep(0)
        seen.append(n)
        if n == 999:
            done.set()

    async with raw_peer(notification_handler=on_note) as (_conn, peer):
        payload = b"".join(
            json.dumps({"jsonrpc": "2.0", "method": "u", "params": {"n": n}}).encode() + b"\n"
            for n in range(1000)
        )
        for start in range(0, len(payload), 777):  # chunk boundaries inside lines
            await peer.send_raw(payload[start : start + 777])
        await done.wait()
    assert seen == list(range(1000))


async def test_peer_requests_run_concurrently() -> None:
    release = anyio.Event()

    async def handler(method: str, params: Any) -> Any:
        if method == "slow":
            await release.wait()
        return method

    async def on_note(method: str, params: Any) -> None:
        release.set()

    async with raw_peer(request_handler=handler, notification_handler=on_note) as (_conn, peer):
        await peer.send({"jsonrpc": "2.0", "id": 1, "method": "slow"})
        await peer.send({"jsonrpc": "2.0", "id": 2, "method": "fast"})
        assert (await peer.recv())["id"] == 2
        await peer.send({"jsonrpc": "2.0", "method": "release"})
        assert (await peer.recv())["id"] == 1


async def test_cancel_request_from_peer() -> None:
    started = anyio.Event()
    cancelled: list[str] = []

    async def handler(method: str, params: Any) -> Any:
        if method == "$/cancel_request":
            return "plain request"
        started.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            cancelled.append(method)
            if method == "permission":
                return {"outcome": {"outcome": "cancelled"}}
            raise
        return None

    async with raw_peer(request_handler=handler) as (_conn, peer):
        await peer.send({"jsonrpc": "2.0", "id": 5, "method": "slow"})
        await started.wait()
        # Unknown ids are ignored: no answer is sent for them.
        await peer.send(
            {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 6}}
        )
        await peer.send(
            {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 5}}
        )
        reply = await peer.recv()
        assert reply["id"] == 5 and reply["error"]["code"] == -32800
        # A handler may answer the cancellation itself.
        await peer.send({"jsonrpc": "2.0", "id": "p", "method": "permission"})
        await peer.send(
            {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": "p"}}
        )
        reply = await peer.recv()
        assert reply == {
            "jsonrpc": "2.0",
            "id": "p",
            "result": {"outcome": {"outcome": "cancelled"}},
        }
        # Cancelling an answered request does nothing.
        await peer.send(
            {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 5}}
        )
        await peer.send({"jsonrpc": "2.0", "id": 9, "method": "$/cancel_request"})
        reply = await peer.recv()
        assert reply["id"] == 9  # a request named like the notification goes to the handler
    assert cancelled[:2] == ["slow", "permission"]


async def test_cancel_arriving_with_the_request() -> None:
    async def handler(method: str, params: Any) -> Any:
        await anyio.sleep_forever()

    async with raw_peer(request_handler=handler) as (_conn, peer):
        await peer.send_raw(
            b'{"jsonrpc":"2.0","id":3,"method":"slow"}\n'
            b'{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":3}}\n'
        )
        reply = await peer.recv()
    assert reply["id"] == 3 and reply["error"]["code"] == -32800


async def test_cancel_request_to_peer() -> None:
    problems: list[Problem] = []
    async with raw_peer(on_problem=problems.append) as (conn, peer):
        outcome: list[Any] = []

        async def ask() -> None:
            with pytest.raises(RpcError) as info:
                await conn.request("session/prompt", {"p": 1})
            outcome.append(info.value.code)

        async with anyio.create_task_group() as tg:
            tg.start_soon(ask)
            request = await peer.recv()
            conn.cancel_request(request["id"])
            cancel = await peer.recv()
            assert cancel == {
                "jsonrpc": "2.0",
                "method": "$/cancel_request",
                "params": {"requestId": request["id"]},
            }
            await peer.send(
                {
                    "jsonrpc": "2.0",
                    "id": request["id"],
                    "error": {"code": -32800, "message": "cancelled"},
                }
            )
        assert outcome == [-32800]

        # Cancelling the waiting task sends $/cancel_request by itself.
        async with anyio.create_task_group() as tg:
            tg.start_soon(conn.request, "slow")
            request = await peer.recv()
            tg.cancel_scope.cancel()
        cancel = await peer.recv()
        assert cancel["method"] == "$/cancel_request"
        assert cancel["params"] == {"requestId": request["id"]}
        # Its late answer is dropped quietly.
        await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": None})
        # A later exchange shows the reader went past it without a problem.
        async with anyio.create_task_group() as tg:
            tg.start_soon(conn.request, "probe")
            probe = await peer.recv()
            await peer.send({"jsonrpc": "2.0", "id": probe["id"], "result": None})
    assert problems == []


async def test_end_of_stream_fails_pending_and_later_requests() -> None:
    async with raw_peer() as (conn, peer):
        async with anyio.create_task_group() as tg:
            failures: list[BaseException] = []

            async def ask() -> None:
                with pytest.raises(ConnectionClosed) as info:
                    await conn.request("m")
                failures.append(info.value)

            tg.start_soon(ask)
            await peer.recv()
            await peer.send_stream.aclose()
        await conn.wait_closed()
        assert conn.closed
        with pytest.raises(ConnectionClosed):
            await conn.request("later")
        with pytest.raises(ConnectionClosed):
            await conn.notify("later")
    assert len(failures) == 1


async def test_fail_raises_the_given_exception_everywhere() -> None:
    class Boom(ConnectionClosed):
        pass

    boom = Boom("agent died")
    async with raw_peer() as (conn, peer):
        async with anyio.create_task_group() as tg:

            async def ask() -> None:
                with pytest.raises(Boom) as info:
                    await conn.request("m")
                assert info.value is boom

            tg.start_soon(ask)
            await peer.recv()
            conn.fail(boom)
        with pytest.raises(Boom):
            await conn.request("later")
        conn.fail(ConnectionClosed("second"))  # the first failure wins
        assert conn.failure is boom


async def test_answer_for_unknown_id_is_reported() -> None:
    problems: list[Problem] = []
    async with raw_peer(request_handler=echo, on_problem=problems.append) as (_conn, peer):
        await peer.send({"jsonrpc": "2.0", "id": 42, "result": None})
        await peer.send({"jsonrpc": "2.0", "id": 1, "method": "m"})
        assert (await peer.recv())["id"] == 1
    assert len(problems) == 1 and "42" in problems[0].detail


async def test_written_lines_are_compact_utf8_without_raw_newlines() -> None:
    async with raw_peer() as (conn, peer):
        await conn.notify("n", {"text": "line1\nline2\u2028é", "lone": "\ud800"})
        line = await peer.recv_line()
    assert b"\n" not in line
    message = json.loads(line)
    assert message["params"]["text"] == "line1\nline2\u2028é"
    assert message["params"]["lone"] == "\ud800"


async def test_concurrent_writes_do_not_interleave() -> None:
    async with raw_peer() as (conn, peer):
        async with anyio.create_task_group() as tg:
            for n in range(50):
                tg.start_soon(conn.notify, "n", {"n": n, "blob": str(n) * 20000})
        got = sorted([(await peer.recv())["params"]["n"] for _ in range(50)])
    assert got == list(range(50))


async def test_compact_separators_and_non_ascii() -> None:
    async with raw_peer() as (conn, peer):
        await conn.notify("n", {"a": "é"})
        line = await peer.recv_line()
    assert line == '{"jsonrpc":"2.0","method":"n","params":{"a":"é"}}'.encode()


async def test_request_before_entering_is_an_error() -> None:
    a, b = connection_pair()
    with pytest.raises(RuntimeError):
        await a.request("m")
    async with a, b:
        pass


def test_line_too_long_item_type() -> None:
    assert LineTooLong(3) == LineTooLong(3)


# -- deep and huge JSON: a bad line, never the end of the connection --------------------------

DEPTH_LIMIT = 256  # documented in docs/design.md (Layer 2: connection)


def deep_list(levels: int) -> bytes:
    return b"[" * levels + b"]" * levels


def deep_object(levels: int) -> bytes:
    return b'{"a":' * levels + b"1" + b"}" * levels


def request_line(rid: Any, params: bytes, method: str = "m") -> bytes:
    """A request whose params are the raw JSON ``params`` (id and method come first)."""
    head = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method})[:-1]
    return head.encode() + b',"params":' + params + b"}\n"


async def still_alive(conn: Connection, peer: RawPeer) -> None:
    """Both directions still work: the peer's request is answered, ours gets its answer."""
    with anyio.fail_after(10):
        await peer.send({"jsonrpc": "2.0", "id": "alive?", "method": "ping"})
        assert await peer.recv() == {
            "jsonrpc": "2.0",
            "id": "alive?",
            "result": {"method": "ping", "params": None},
        }
        async with anyio.create_task_group() as tg:
            got: list[Any] = []

            async def ask() -> None:
                got.append(await conn.request("ours"))

            tg.start_soon(ask)
            ours = await peer.recv()
            await peer.send({"jsonrpc": "2.0", "id": ours["id"], "result": "fine"})
        assert got == ["fine"]
    assert not conn.closed


@pytest.mark.parametrize(
    ("line", "answer_id", "reason"),
    [
        (deep_list(1000) + b"\n", None, "nested too deeply"),
        (deep_object(1000) + b"\n", None, "nested too deeply"),
        (deep_list(100_000) + b"\n", None, "nested too deeply"),
        # inside a valid request: the id is read from the members before the deep one
        (request_line(5, deep_list(1000)), 5, "nested too deeply"),
        (request_line("s-1", deep_object(1000)), "s-1", "nested too deeply"),
        # deep enough to be refused, shallow enough for json to parse it
        (request_line(6, deep_list(300)), 6, "nested too deeply"),
        (deep_list(300) + b"\n", None, "nested too deeply"),
        # huge numbers: Python refuses to convert an int of more than 4300 digits
        (request_line(7, b"1" * 5000), 7, "an integer with too many digits"),
        (request_line(8, b'{"n":-' + b"9" * 100_000 + b"}"), 8, "an integer with too many digits"),
        # NaN and Infinity are not JSON
        (request_line(9, b"NaN"), 9, "NaN is not JSON"),
        (request_line(10, b"[-Infinity]"), 10, "-Infinity is not JSON"),
    ],
    ids=[
        "list-1000",
        "object-1000",
        "list-100000",
        "request-list-1000",
        "request-object-1000",
        "request-list-300",
        "list-300",
        "int-5000-digits",
        "int-100000-digits",
        "nan",
        "infinity",
    ],
)
async def test_deep_or_huge_json_is_a_bad_line(line: bytes, answer_id: Any, reason: str) -> None:
    problems: list[Problem] = []
    called: list[str] = []

    async def handler(method: str, params: Any) -> Any:
        called.append(method)
        return await echo(method, params)

    async with raw_peer(request_handler=handler, on_problem=problems.append) as (conn, peer):
        await peer.send_raw(line)
        with anyio.fail_after(10):
            reply = await peer.recv()
        assert reply["id"] == answer_id
        assert reply["error"]["code"] == -32700
        assert reason in reply["error"]["message"]
        await still_alive(conn, peer)
    assert called == ["ping"]  # the bad request never reached the handler
    (problem,) = problems
    # the problem carries fields, and its message says them
    assert isinstance(problem, BadLine) and problem.kind == "unparsable"
    assert problem.preview == line[:-1][:80].decode("utf-8", "replace")
    assert str(problem) == f"unparsable line ({reason}): {problem.preview!r}"
    assert problem.reason == reason
    assert problem.size == len(line) - 1
    assert problem.request_id == answer_id


async def test_depth_limit_boundary() -> None:
    """A message nested exactly DEPTH_LIMIT levels is served; one level more is refused."""
    async with raw_peer(request_handler=echo) as (conn, peer):
        # the message object is level 1, so params may nest DEPTH_LIMIT - 1 levels
        await peer.send_raw(request_line(1, deep_list(DEPTH_LIMIT - 1)))
        reply = await peer.recv()
        assert reply["id"] == 1 and "result" in reply
        await peer.send_raw(request_line(2, deep_list(DEPTH_LIMIT)))
        reply = await peer.recv()
        assert reply["id"] == 2 and reply["error"]["code"] == -32700
        await still_alive(conn, peer)


async def test_deep_notification_is_reported_not_handled() -> None:
    problems: list[Problem] = []
    seen: list[str] = []

    async def on_note(method: str, params: Any) -> None:
        seen.append(method)

    with anyio.fail_after(20):
        async with raw_peer(
            request_handler=echo, notification_handler=on_note, on_problem=problems.append
        ) as (conn, peer):
            await deep_notifications(conn, peer)
    assert seen == ["shallow"]
    assert len(problems) == 2 and all(isinstance(p, BadLine) for p in problems)


async def deep_notifications(conn: Connection, peer: RawPeer) -> None:
    note = b'{"jsonrpc":"2.0","method":"deep","params":'
    # too deep, but known to be a notification, however deep (the reader cuts what nests past
    # MAX_DEPTH before decoding, and reads the rest): nothing is answered
    await peer.send_raw(note + deep_list(300) + b"}\n")
    await peer.send_raw(note + deep_list(100_000) + b"}\n")
    await peer.send({"jsonrpc": "2.0", "method": "shallow"})
    await still_alive(conn, peer)  # its first answer is the first thing written back


async def test_deep_answer_to_our_request_fails_that_request_only() -> None:
    problems: list[Problem] = []
    async with raw_peer(request_handler=echo, on_problem=problems.append) as (conn, peer):
        errors: list[RpcError] = []

        async def ask() -> None:
            with pytest.raises(RpcError) as info:
                await conn.request("ask")
            errors.append(info.value)

        for levels in (300, 5000):
            with anyio.fail_after(10):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(ask)
                    ours = await peer.recv()
                    head = f'{{"jsonrpc":"2.0","id":{ours["id"]},"result":'.encode()
                    await peer.send_raw(head + deep_list(levels) + b"}\n")
        assert [e.code for e in errors] == [-32700, -32700]
        assert all("nested" in e.message for e in errors)
        await still_alive(conn, peer)
    # nothing was written back for the bad answers: they were answers, not requests
    assert all("error" not in json.loads(line) for line in peer.raw_lines if b"alive" not in line)
    assert len(problems) == 2


async def test_a_batch_with_an_element_too_deep_is_one_bad_line() -> None:
    # the reader never reads what nests past MAX_DEPTH, and it may not be JSON (here "1 2"):
    # no element of such a batch is acted on, however valid the others look
    seen: list[str] = []

    async def on_note(method: str, params: Any) -> None:
        seen.append(method)

    async with raw_peer(request_handler=echo, notification_handler=on_note) as (conn, peer):
        for deep in (deep_list(300), b"[" * 300 + b"1 2" + b"]" * 300, deep_list(5000)):
            batch = (
                b'[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"note"},'
                + request_line(2, deep)[:-1]
                + b',{"jsonrpc":"2.0","id":3,"method":"c"}]\n'
            )
            await peer.send_raw(batch)
            reply = await peer.recv()
            assert reply["id"] is None and reply["error"]["code"] == -32700, reply
            assert "nested too deeply" in reply["error"]["message"]
        await still_alive(conn, peer)  # nothing else was answered in between
    assert seen == []


async def test_id_after_the_deep_member_is_read_and_one_in_use_is_not_answered_twice() -> None:
    release = anyio.Event()

    async def handler(method: str, params: Any) -> Any:
        if method == "slow":
            await release.wait()
        return method

    with anyio.fail_after(20):
        async with raw_peer(request_handler=handler) as (_conn, peer):
            await deep_ids_answered_once(peer, release)


async def deep_ids_answered_once(peer: RawPeer, release: anyio.Event) -> None:
    # the id comes after the member nested too deeply: it is read all the same (the reader
    # cuts out what nests too deep before decoding), and the refusal answers it
    await peer.send_raw(b'{"jsonrpc":"2.0","params":' + deep_list(100_000) + b',"id":3}\n')
    reply = await peer.recv()
    assert reply["id"] == 3 and reply["error"]["code"] == -32700
    # an id that is in use by a request being served is not answered a second time
    await peer.send({"jsonrpc": "2.0", "id": 4, "method": "slow"})
    await peer.send_raw(request_line(4, deep_list(100_000)))
    reply = await peer.recv()
    assert reply["id"] is None and reply["error"]["code"] == -32700
    release.set()
    assert await peer.recv() == {"jsonrpc": "2.0", "id": 4, "result": "slow"}


async def test_deep_values_we_send_are_refused_not_fatal() -> None:
    async def handler(method: str, params: Any) -> Any:
        deep: list[Any] = []
        for _ in range(5000):
            deep = [deep]
        if method == "deep":
            return deep
        if method == "nan":
            return float("nan")
        return await echo(method, params)

    problems: list[Problem] = []
    async with raw_peer(request_handler=handler, on_problem=problems.append) as (conn, peer):
        deep: list[Any] = []
        for _ in range(5000):
            deep = [deep]
        with pytest.raises(TypeError, match="not JSON-serialisable"):
            await conn.request("m", {"deep": deep})
        with pytest.raises(TypeError, match="not JSON-serialisable"):
            await conn.notify("m", {"nan": float("nan")})
        for rid, method in ((1, "deep"), (2, "nan")):
            await peer.send({"jsonrpc": "2.0", "id": rid, "method": method})
            reply = await peer.recv()
            assert reply["id"] == rid and reply["error"]["code"] == -32603
        assert len(problems) == 2
        await still_alive(conn, peer)


async def test_a_line_of_millions_of_values_is_a_bad_line_and_the_connection_lives() -> None:
    """A 3 MB line of empty lists would decode to ~60 MB of objects: refused before decoding."""
    from acp_notebook._connection._jsonrpc import MAX_VALUES

    wide = b'{"jsonrpc":"2.0","id":3,"method":"m","params":[' + b"[]," * MAX_VALUES + b"[]]}\n"
    problems: list[Problem] = []
    async with raw_peer(request_handler=echo, on_problem=problems.append) as (_conn, peer):
        await peer.send_raw(wide)
        reply = await peer.recv()
        assert reply["id"] is None and reply["error"]["code"] == -32700
        await peer.send({"jsonrpc": "2.0", "id": 7, "method": "still"})
        assert (await peer.recv())["result"] == {"method": "still", "params": None}
    assert len(problems) == 1 and f"more than {MAX_VALUES} values" in str(problems[0])


async def test_observers_see_every_message_both_ways_until_they_unsubscribe() -> None:
    seen: list[tuple[str, Any]] = []
    long_text = "x" * 10_000  # the log keeps a shortened copy; an observer gets the message

    def broken(direction: str, message: Any) -> None:
        raise RuntimeError("an observer that fails does not stop the connection")

    async with raw_peer(request_handler=echo) as (conn, peer):
        stop = conn.observe(lambda direction, message: seen.append((direction, message)))
        conn.observe(broken)
        await peer.send({"jsonrpc": "2.0", "id": 1, "method": "m", "params": long_text})
        answer = await peer.recv()
        await peer.send([{"jsonrpc": "2.0", "method": "note"}])
        await conn.notify("ping")
        await peer.recv()
        stop()
        stop()  # a second call is harmless
        await conn.notify("unseen")
        await peer.recv()
    request = {"jsonrpc": "2.0", "id": 1, "method": "m", "params": long_text}
    assert seen == [
        ("recv", request),
        ("send", answer),
        ("recv", [{"jsonrpc": "2.0", "method": "note"}]),
        ("send", {"jsonrpc": "2.0", "method": "ping"}),
    ]


async def test_every_problem_is_a_typed_value_with_a_one_line_message() -> None:
    problems: list[Problem] = []
    release = anyio.Event()

    async def handler(method: str, params: Any) -> Any:
        if method == "slow":
            await release.wait()
        if method == "boom":
            raise ValueError("kaput")
        return None

    async def on_note(method: str, params: Any) -> None:
        raise RpcError(-32602, "no thanks")

    async with raw_peer(
        request_handler=handler,
        notification_handler=on_note,
        on_problem=problems.append,
        max_line_bytes=4096,
    ) as (conn, peer):
        await peer.send_raw(b"{not json\n")
        await peer.send_raw(b'{"x":"' + b"y" * 5000 + b'"}\n')
        await peer.send_raw(b"42\n")
        await peer.send_raw(b"[]\n")
        await peer.send_raw(b"[5]\n")
        await peer.send({"jsonrpc": "2.0", "id": 1})
        await peer.send({"jsonrpc": "2.0", "id": 99, "result": 1})
        await peer.send({"jsonrpc": "2.0", "id": [1], "method": "m"})
        await peer.send({"jsonrpc": "2.0", "id": 5, "method": "slow"})
        await peer.send({"jsonrpc": "2.0", "id": 5, "method": "slow"})
        await peer.send({"jsonrpc": "2.0", "id": 6, "method": "boom"})
        await peer.send({"jsonrpc": "2.0", "method": "note"})
        release.set()
        await peer.send({"jsonrpc": "2.0", "id": 7, "method": "last"})
        with anyio.fail_after(10):
            while not any(r.get("id") == 7 for r in [await peer.recv()]):
                pass
        notes = [m for d, m in conn.log if isinstance(m, str)]
    assert all(isinstance(p, Problem) for p in problems)
    kinds = [p.kind for p in problems]
    assert kinds[:9] == [
        "unparsable",
        "too_long",
        "not_jsonrpc",
        "not_jsonrpc",
        "not_jsonrpc",
        "not_jsonrpc",
        "unknown_response",
        "not_jsonrpc",
        "duplicate_id",
    ]
    # the request's task and the reader race: either order
    assert sorted(kinds[9:]) == ["handler_failed", "rejected"]
    assert notes == [str(p) for p in problems]  # the log keeps each as its one-line message
    assert all("\n" not in str(p) for p in problems)
    assert problems[0].preview == "{not json" and str(problems[0]).endswith(": '{not json'")
    assert problems[1].preview is None and "5008 bytes" in problems[1].detail
    assert problems[2].preview == "42"
    (failed,) = [p for p in problems if p.kind == "handler_failed"]
    assert "kaput" in failed.detail


async def test_the_read_loop_waits_as_long_as_the_pace_hook_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # back-pressure (the notebook's pacing): before each batch of lines the loop asks its pace with
    # the size of the chunk read and the seconds already waited, sleeps what it answers, and
    # asks again until it answers 0; nothing is lost or reordered
    import acp_notebook._connection._jsonrpc as jsonrpc

    rests: list[float] = []
    asked: list[tuple[int, float]] = []
    real_sleep = anyio.sleep

    async def sleep(seconds: float) -> None:
        rests.append(seconds)
        await real_sleep(0)

    def pace(chunk: int, waited: float) -> float:
        asked.append((chunk, waited))
        return 0.003 if waited < 0.005 else 0.0

    monkeypatch.setattr(jsonrpc.anyio, "sleep", sleep)
    got: list[Any] = []

    async def note(method: str, params: Any) -> None:
        got.append(params["n"])

    async with raw_peer(notification_handler=note) as (conn, peer):
        conn.pace = pace
        for n in range(3):
            await peer.send({"jsonrpc": "2.0", "method": "m", "params": {"n": n}})
            with anyio.fail_after(5):
                while len(got) <= n:
                    await real_sleep(0.001)
    assert got == [0, 1, 2]
    assert rests.count(0.003) >= 2 * 3  # twice per batch: waited 0, then 0.003
    line = len(json.dumps({"jsonrpc": "2.0", "method": "m", "params": {"n": 0}})) + 1
    assert asked[:3] == [(line, 0.0), (line, 0.003), (line, 0.006)]
