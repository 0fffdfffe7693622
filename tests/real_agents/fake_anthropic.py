"""A fake Anthropic Messages API on 127.0.0.1, for running claude-agent-acp offline.

It streams Server-Sent Events the way the real ``POST /v1/messages`` does (``message_start``,
``content_block_start`` / ``content_block_delta`` / ``content_block_stop``, ``message_delta``,
``message_stop``). What it answers comes from a script: a list of `Text` and `ToolUse` replies,
given in order to the *agent-loop* requests (the ones that offer tools). Side requests the CLI
makes on its own (a title for the session, a quota probe, ...) offer no tools and get a short
text without consuming the script. Every request is recorded (path and JSON body), so tests
can check what the agent sent back, e.g. a ``tool_result``. Unknown paths are recorded in
``unknown`` and answered with an empty JSON object.

Test-only code: stdlib only.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "claude-fake-1"
SIDE_TEXT = "Fake title"  # the answer to a side request (no tools offered)
EXHAUSTED_TEXT = "(the fake API's script is exhausted)"


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class ToolUse:
    name: str
    input: dict[str, Any]
    id: str = field(default_factory=lambda: "toolu_" + uuid.uuid4().hex[:24])


Reply = Text | ToolUse


@dataclass
class Request:
    method: str
    path: str
    body: Any  # the parsed JSON body (None when there was none)
    headers: dict[str, str]

    @property
    def agent_loop(self) -> bool:
        """A request of the agent's own loop: a Messages call that offers tools."""
        return (
            self.method == "POST"
            and self.path.split("?")[0] == "/v1/messages"
            and isinstance(self.body, dict)
            and bool(self.body.get("tools"))
        )

    def tool_results(self) -> list[dict[str, Any]]:
        """Every ``tool_result`` block in the request's messages."""
        found: list[dict[str, Any]] = []
        for message in (self.body or {}).get("messages", []):
            content = message.get("content")
            if isinstance(content, list):
                found += [
                    b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"
                ]
        return found


def _events(reply: Reply, input_tokens: int) -> Iterator[tuple[str, dict[str, Any]]]:
    message_id = "msg_" + uuid.uuid4().hex[:24]
    yield (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": MODEL,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": input_tokens, "output_tokens": 1},
            },
        },
    )
    if isinstance(reply, Text):
        yield (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        )
        # Two deltas, as the real API splits text.
        half = len(reply.text) // 2
        for piece in (reply.text[:half], reply.text[half:]):
            if piece:
                yield (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "text_delta", "text": piece},
                    },
                )
        stop_reason = "end_turn"
    else:
        yield (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {
                    "type": "tool_use",
                    "id": reply.id,
                    "name": reply.name,
                    "input": {},
                },
            },
        )
        raw = json.dumps(reply.input)
        half = len(raw) // 2
        for piece in (raw[:half], raw[half:]):
            yield (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": piece},
                },
            )
        stop_reason = "tool_use"
    yield "content_block_stop", {"type": "content_block_stop", "index": 0}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": 5},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def _non_streaming(reply: Reply) -> dict[str, Any]:
    if isinstance(reply, Text):
        content: list[dict[str, Any]] = [{"type": "text", "text": reply.text}]
        stop = "end_turn"
    else:
        content = [{"type": "tool_use", "id": reply.id, "name": reply.name, "input": reply.input}]
        stop = "tool_use"
    return {
        "id": "msg_" + uuid.uuid4().hex[:24],
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client hanging up is fine
            super().handle_error(request, client_address)


class FakeAnthropic:
    """The server. ``with FakeAnthropic([Text("hi")]) as api: api.url ...``"""

    def __init__(self, script: Iterable[Reply] = ()) -> None:
        self.script: list[Reply] = list(script)
        self.requests: list[Request] = []
        self.unknown: list[Request] = []
        self.replied: list[Reply] = []  # the script replies given so far, in order
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- the script ---------------------------------------------------------------------
    def add(self, *replies: Reply) -> None:
        with self._lock:
            self.script.extend(replies)

    def _next_reply(self, request: Request) -> Reply:
        with self._lock:
            if not request.agent_loop:
                return Text(SIDE_TEXT)
            reply = self.script.pop(0) if self.script else Text(EXHAUSTED_TEXT)
            self.replied.append(reply)
            return reply

    def agent_requests(self) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.agent_loop]

    # -- the server ---------------------------------------------------------------------
    @property
    def port(self) -> int:
        assert self._server is not None, "not started"
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeAnthropic:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass  # recorded in fake.requests instead

            def _read(self) -> Request:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                request = Request(
                    self.command, self.path, body, {k.lower(): v for k, v in self.headers.items()}
                )
                with fake._lock:
                    fake.requests.append(request)
                return request

            def _json(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("request-id", "req_fake")
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                request = self._read()
                path = request.path.split("?")[0]
                if path.startswith("/v1/models"):
                    model = {
                        "type": "model",
                        "id": MODEL,
                        "display_name": "Fake",
                        "created_at": "2026-01-01T00:00:00Z",
                    }
                    if path == "/v1/models":
                        self._json(
                            200,
                            {
                                "data": [model],
                                "has_more": False,
                                "first_id": MODEL,
                                "last_id": MODEL,
                            },
                        )
                    else:
                        self._json(200, model)
                    return
                with fake._lock:
                    fake.unknown.append(request)
                self._json(200, {})

            def do_HEAD(self) -> None:
                self._read()
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self) -> None:
                request = self._read()
                path = request.path.split("?")[0]
                if path == "/v1/messages/count_tokens":
                    self._json(200, {"input_tokens": 10})
                    return
                if path != "/v1/messages":
                    with fake._lock:
                        fake.unknown.append(request)
                    self._json(200, {})
                    return
                reply = fake._next_reply(request)
                body = request.body if isinstance(request.body, dict) else {}
                if not body.get("stream"):
                    self._json(200, _non_streaming(reply))
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.send_header("request-id", "req_fake")
                self.end_headers()
                for name, data in _events(reply, input_tokens=10):
                    self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
                    self.wfile.flush()
                self.close_connection = True

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextmanager
def serving(script: Iterable[Reply] = ()) -> Iterator[FakeAnthropic]:
    with FakeAnthropic(script) as api:
        yield api
