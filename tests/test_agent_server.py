"""`AgentServer`'s answers, in memory: raw JSON-RPC from a bare `Connection`, so that what the
server answers to a bad request (and with which code) is seen as the wire carries it. The same
server as a subprocess is tests/test_agent_e2e.py."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_notebook._connection._errors import RpcError
from acp_notebook._connection._jsonrpc import Connection
from acp_notebook._protocol import ErrorCode, Method
from acp_notebook.agent import serve_in_memory

pytestmark = pytest.mark.anyio

INIT = {"protocolVersion": 2, "info": {"name": "t", "version": "0"}, "capabilities": {}}


async def never_answer(method: str, params: Any) -> Any:
    await anyio.sleep_forever()  # a permission request stays pending: the turn waits


@asynccontextmanager
async def client(tmp_path: Path) -> AsyncIterator[Connection]:
    async with serve_in_memory(data_dir=tmp_path / "data") as (receive, send):
        conn = Connection(receive, send, name="agent", request_handler=never_answer)
        async with conn:
            assert (await conn.request(Method.INITIALIZE, INIT))["protocolVersion"] == 2
            yield conn


async def refused(conn: Connection, method: str, params: Any) -> RpcError:
    with pytest.raises(RpcError) as caught:
        await conn.request(method, params)
    return caught.value


async def test_unknown_methods_and_bad_params_get_their_codes(tmp_path: Path) -> None:
    async with client(tmp_path) as conn:
        unknown = await refused(conn, "fs/read_text_file", {"path": "/etc/passwd"})
        relative = await refused(conn, Method.SESSION_NEW, {"cwd": "relative/dir"})
        shapeless = await refused(conn, Method.SESSION_PROMPT, {"sessionId": 5})
        missing = await refused(conn, Method.SESSION_CLOSE, {"sessionId": "sess-nope"})
    assert unknown.code == ErrorCode.METHOD_NOT_FOUND
    assert relative.code == ErrorCode.INVALID_PARAMS and "absolute" in relative.message
    assert shapeless.code == ErrorCode.INVALID_PARAMS
    assert missing.code == ErrorCode.RESOURCE_NOT_FOUND
    assert missing.data == {"sessionId": "sess-nope"}


async def test_a_second_prompt_while_a_turn_runs_is_an_invalid_request(tmp_path: Path) -> None:
    async with client(tmp_path) as conn:
        session_id = (await conn.request(Method.SESSION_NEW, {"cwd": str(tmp_path)}))["sessionId"]
        long_turn = {"sessionId": session_id, "prompt": [{"type": "text", "text": "$ sleep 30"}]}
        await conn.request(Method.SESSION_PROMPT, long_turn)
        busy = await refused(conn, Method.SESSION_PROMPT, long_turn)
        with anyio.fail_after(30):  # closing cancels the turn, waiting for its permission
            assert await conn.request(Method.SESSION_CLOSE, {"sessionId": session_id}) == {}
    assert busy.code == ErrorCode.INVALID_REQUEST and "already running" in busy.message
