"""A fake OpenAI Chat Completions API on 127.0.0.1, for running Qwen Code, GitHub Copilot CLI
and Cline offline.

``POST /v1/chat/completions`` answers, streamed (``stream: true``: Server-Sent Events of
``chat.completion.chunk`` objects, then ``data: [DONE]``) or not (one ``chat.completion``):

* when the conversation's last message is a tool result (``role: "tool"``): `DONE_TEXT`;
* when the last user message holds `KEYWORD` and the request offers a shell tool: one call to
  that tool, whose command is the rest of the keyword's line (`shell_tool` finds the tool among
  the request's ``tools`` by its name, and the argument that takes the command by its schema);
* otherwise ``api.text`` (`TEXT` unless a test changes it).

``GET /v1/models`` (and ``/models``) lists `MODEL`. Every request is recorded (method, path,
JSON body, headers in lower case); any other path is recorded in ``unknown`` and answered 404.
The same answers are served under ``/chat/completions`` (a base URL without ``/v1``).

Test-only code: stdlib only.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "fake-chat-1"
TEXT = "Hello from the fake Chat Completions API"
DONE_TEXT = "The fake model saw the command's result"
KEYWORD = "RUN-THIS:"  # the last user message's line "RUN-THIS: <command>" asks for a call

# Shell tools by name, most specific first (Qwen Code: run_shell_command; Copilot CLI: bash;
# Cline: run_commands; others: shell, execute_command, ...), and the argument names that take
# the command (a string, or an array of strings: Cline's ``commands``).
SHELL_TOOLS = (
    "run_shell_command",
    "run_commands",
    "execute_command",
    "run_command",
    "bash",
    "shell",
    "exec_command",
    "terminal",
)
COMMAND_ARGS = ("command", "commands", "cmd", "script")


@dataclass
class Request:
    method: str
    path: str
    body: Any  # the parsed JSON body (None when there was none)
    headers: dict[str, str]  # names in lower case

    @property
    def is_completion(self) -> bool:
        return self.method == "POST" and self.path.split("?")[0].endswith("/chat/completions")

    @property
    def messages(self) -> list[dict[str, Any]]:
        found = (self.body or {}).get("messages") if isinstance(self.body, dict) else None
        return [m for m in found or [] if isinstance(m, dict)]

    @property
    def tools(self) -> list[dict[str, Any]]:
        found = (self.body or {}).get("tools") if isinstance(self.body, dict) else None
        return [t for t in found or [] if isinstance(t, dict)]

    def tool_names(self) -> list[str]:
        return [str((t.get("function") or {}).get("name")) for t in self.tools]

    def user_texts(self) -> list[str]:
        """The texts of the user messages, in order (a message's text parts joined)."""
        return [_text(m.get("content")) for m in self.messages if m.get("role") == "user"]

    def tool_results(self) -> list[dict[str, Any]]:
        """The ``role: "tool"`` messages (results of the calls the fake asked for)."""
        return [m for m in self.messages if m.get("role") == "tool"]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and "text" in p
        )
    return ""


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]
    id: str


def shell_tool(tools: list[dict[str, Any]], command: str) -> ToolCall | None:
    """A call of the request's shell tool running ``command``, its other required arguments
    filled with plain values, or None when no offered tool looks like a shell."""
    by_name = {str((t.get("function") or {}).get("name")): t for t in tools}
    for wanted in SHELL_TOOLS:
        found = next((t for n, t in by_name.items() if n.lower() == wanted), None)
        if found is None:
            continue
        function = found.get("function") or {}
        schema = function.get("parameters") or {}
        properties: dict[str, Any] = schema.get("properties") or {}
        arg = next((a for a in COMMAND_ARGS if a in properties), None)
        if arg is None:
            continue
        arguments: dict[str, Any] = {}
        for name in schema.get("required") or []:
            arguments[name] = _plain(name, properties.get(name) or {})
        kind = properties[arg].get("type")
        arguments[arg] = [command] if kind == "array" else command
        return ToolCall(str(function["name"]), arguments, "call_" + uuid.uuid4().hex[:20])
    return None


def _plain(name: str, schema: dict[str, Any]) -> Any:
    """A harmless value for a required argument the fake does not care about."""
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "boolean":
        return False
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    if kind == "array":
        return []
    if kind == "object":
        return {}
    return "Run the command" if name == "description" else ""


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hangs up mid-stream is not the test's business


class FakeOpenAIChat:
    """``with FakeOpenAIChat() as api:`` serves on ``api.url`` (``http://127.0.0.1:P/v1``)."""

    def __init__(self, text: str = TEXT) -> None:
        self.text = text
        self.requests: list[Request] = []
        self.unknown: list[Request] = []
        self.calls: list[ToolCall] = []  # the tool calls answered, in order
        self._lock = threading.Lock()
        self._server: _Server | None = None

    # -- what it answers ----------------------------------------------------------------
    def _answer(self, request: Request) -> str | ToolCall:
        messages = request.messages
        if messages and messages[-1].get("role") == "tool":
            return DONE_TEXT
        users = request.user_texts()
        last = users[-1] if users else ""
        if KEYWORD in last:
            command = last.split(KEYWORD, 1)[1].splitlines()[0].strip()
            call = shell_tool(request.tools, command)
            if call is not None:
                with self._lock:
                    self.calls.append(call)
                return call
        return self.text

    def completions(self) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.is_completion]

    # -- the server ---------------------------------------------------------------------
    @property
    def port(self) -> int:
        assert self._server is not None, "not started"
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> FakeOpenAIChat:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass  # recorded in api.requests instead

            def _read(self) -> Request:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                headers = {k.lower(): v for k, v in self.headers.items()}
                request = Request(self.command, self.path, body, headers)
                with api._lock:
                    api.requests.append(request)
                return request

            def _json(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _not_found(self, request: Request) -> None:
                with api._lock:
                    api.unknown.append(request)
                self._json(404, {"error": {"message": "not found", "type": "fake"}})

            def do_GET(self) -> None:
                request = self._read()
                path = request.path.split("?")[0].rstrip("/")
                if path in ("/v1/models", "/models"):
                    model = {"id": MODEL, "object": "model", "created": 0, "owned_by": "fake"}
                    self._json(200, {"object": "list", "data": [model]})
                elif path in (f"/v1/models/{MODEL}", f"/models/{MODEL}"):
                    self._json(200, {"id": MODEL, "object": "model", "created": 0})
                else:
                    self._not_found(request)

            def do_POST(self) -> None:
                request = self._read()
                if not request.is_completion:
                    self._not_found(request)
                    return
                body = request.body if isinstance(request.body, dict) else {}
                model = str(body.get("model") or MODEL)
                answer = api._answer(request)
                if not body.get("stream"):
                    self._json(200, _completion(answer, model))
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                usage = bool((body.get("stream_options") or {}).get("include_usage"))
                for chunk in _chunks(answer, model, usage):
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

        self._server = _Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeOpenAIChat:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


_USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


def _completion(answer: str | ToolCall, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": None}
    if isinstance(answer, ToolCall):
        function = {"name": answer.name, "arguments": json.dumps(answer.arguments)}
        message["tool_calls"] = [{"id": answer.id, "type": "function", "function": function}]
        finish = "tool_calls"
    else:
        message["content"] = answer
        finish = "stop"
    return {
        "id": "chatcmpl-" + uuid.uuid4().hex[:24],
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": _USAGE,
    }


def _chunks(answer: str | ToolCall, model: str, usage: bool) -> Iterator[dict[str, Any]]:
    base = {
        "id": "chatcmpl-" + uuid.uuid4().hex[:24],
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    if isinstance(answer, ToolCall):
        yield chunk({"role": "assistant", "content": None})
        head = {"name": answer.name, "arguments": ""}
        yield chunk({"tool_calls": [{"index": 0, "id": answer.id, "type": "function",
                                      "function": head}]})  # fmt: skip
        raw = json.dumps(answer.arguments)
        half = len(raw) // 2
        for piece in (raw[:half], raw[half:]):  # in two pieces, as the real API splits it
            yield chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
        yield chunk({}, "tool_calls")
    else:
        yield chunk({"role": "assistant", "content": ""})
        words = answer.split(" ")
        for i, word in enumerate(words):
            yield chunk({"content": word if i == 0 else " " + word})
        yield chunk({}, "stop")
    if usage:
        yield {**base, "choices": [], "usage": _USAGE}
