"""A fake OpenAI Responses API on 127.0.0.1, for running codex-acp offline.

``POST /v1/responses`` (with ``stream: true``) answers Server-Sent Events the way the real API
does for a text answer: ``response.created``, ``response.output_item.added``,
``response.output_text.delta`` (one per word), ``response.output_item.done`` with the whole
message, then ``response.completed`` with usage. Each turn's answer is the next text of the
script, or `EXHAUSTED_TEXT` when the script is empty; the side request Codex makes on its own
after the first turn (a title for the conversation) gets `TITLE_TEXT` without consuming the
script.

A rule (``api.on(keyword, call, then)``) makes the fake call a tool: the first turn whose prompt
contains the keyword is answered with a ``custom_tool_call`` (``response.output_item.added``,
``response.custom_tool_call_input.delta``, ``response.output_item.done``, ``response.completed``),
and the request that brings that call's ``custom_tool_call_output`` back is answered ``then``.
`exec_command` builds the call Codex 2.6.0 runs a command with (see there). With ``api.review``
set, the requests of Codex's model reviewer (Auto review) are answered with that JSON.

Every request is recorded (method, path, JSON
body and headers, the ``Authorization`` header included, so a test can check the key that
reached it). Any other path is recorded in ``unknown`` and answered 404.

Test-only code: stdlib only.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

EXHAUSTED_TEXT = "(the fake API's script is exhausted)"
TITLE_TEXT = "Fake title"


@dataclass
class Request:
    method: str
    path: str
    body: Any  # the parsed JSON body (None when there was none)
    headers: dict[str, str]  # names in lower case

    @property
    def is_turn(self) -> bool:
        return self.method == "POST" and self.path.split("?")[0] == "/v1/responses"

    def user_texts(self) -> list[str]:
        """The texts of the request's user messages, in order (the conversation so far)."""
        parts: list[str] = []
        for item in (self.body or {}).get("input") or []:
            if not isinstance(item, dict) or item.get("role") != "user":
                continue
            content = item.get("content")
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and isinstance(block.get("text"), str):
                    parts.append(block["text"])
        return parts

    def items(self, kind: str) -> list[dict[str, Any]]:
        """The request's input items of this ``type`` (``custom_tool_call_output``, ...)."""
        found = (self.body or {}).get("input") or []
        return [i for i in found if isinstance(i, dict) and i.get("type") == kind]

    def tool_output(self, call_id: str) -> str | None:
        """The text of the ``custom_tool_call_output`` for ``call_id`` in this request's
        input, or None when it has none (the tool has not answered yet)."""
        for item in self.items("custom_tool_call_output"):
            if item.get("call_id") != call_id:
                continue
            output = item.get("output")
            if isinstance(output, list):  # content items: [{"type": "input_text", ...}]
                return "".join(str(o.get("text", "")) for o in output if isinstance(o, dict))
            return str(output)
        return None

    @property
    def is_review(self) -> bool:
        """A request of Codex's model reviewer (Auto review, its "guardian"): it asks whether
        an action the agent wants to take may run, for a JSON answer (``outcome``)."""
        body = self.body if isinstance(self.body, dict) else {}
        return str(body.get("prompt_cache_key", "")).startswith("guardian:")

    @property
    def is_title(self) -> bool:
        """Codex's own request for a conversation title (not a turn of the user's)."""
        texts = self.user_texts()
        return bool(texts) and "generate a very short title" in texts[-1]


@dataclass(frozen=True)
class ToolCall:
    """An answer that calls a tool: a ``custom_tool_call`` output item (a freeform tool, whose
    ``input`` is raw text, not JSON arguments)."""

    input: str
    name: str = "exec"
    call_id: str = field(default_factory=lambda: "call_" + uuid.uuid4().hex[:24])


def exec_command(cmd: str, *, justification: str | None = None) -> ToolCall:
    """The call Codex 2.6.0 (codex 0.166.0) makes a model use to run ``cmd``. Its requests send
    no ``tools``: an ``additional_tools`` input item holds the namespace ``functions`` with one
    freeform tool, ``exec``, which evaluates JavaScript in a V8 isolate whose global ``tools``
    has the nested tools, ``exec_command({cmd, sandbox_permissions, justification, ...})``
    among them. With a ``justification`` the command asks to run outside the sandbox
    (``sandbox_permissions: "require_escalated"``, the justification being the question put to
    the user); Codex then asks for approval first when its approval policy is on-request."""
    args: dict[str, Any] = {"cmd": cmd}
    if justification is not None:
        args.update(sandbox_permissions="require_escalated", justification=justification)
    script = f"const r = await tools.exec_command({json.dumps(args)});\ntext(r.output);\n"
    return ToolCall(script)


@dataclass(frozen=True)
class Rule:
    """When a turn's prompt contains ``keyword``, answer ``call`` once; to the first request
    that carries that call's output, answer ``then``."""

    keyword: str
    call: ToolCall
    then: str


Reply = str | ToolCall


def _tool_call_events(call: ToolCall, model: str) -> Iterator[dict[str, Any]]:
    response_id = "resp_" + uuid.uuid4().hex[:24]
    base = {"id": response_id, "object": "response", "model": model, "output": []}
    yield {"type": "response.created", "response": {**base, "status": "in_progress"}}
    item = {
        "id": "ctc_" + uuid.uuid4().hex[:24],
        "type": "custom_tool_call",
        "call_id": call.call_id,
        "name": call.name,
    }
    added = {**item, "input": "", "status": "in_progress"}
    yield {"type": "response.output_item.added", "output_index": 0, "item": added}
    yield {
        "type": "response.custom_tool_call_input.delta",
        "item_id": item["id"],
        "output_index": 0,
        "delta": call.input,
    }
    done = {**item, "input": call.input, "status": "completed"}
    yield {"type": "response.output_item.done", "output_index": 0, "item": done}
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    }
    completed = {**base, "status": "completed", "output": [done], "usage": usage}
    yield {"type": "response.completed", "response": completed}


def _events(text: str, model: str) -> Iterator[dict[str, Any]]:
    response_id = "resp_" + uuid.uuid4().hex[:24]
    item_id = "msg_" + uuid.uuid4().hex[:24]
    base = {"id": response_id, "object": "response", "model": model, "output": []}
    yield {"type": "response.created", "response": {**base, "status": "in_progress"}}
    item = {"id": item_id, "type": "message", "role": "assistant", "status": "in_progress"}
    yield {"type": "response.output_item.added", "output_index": 0, "item": {**item, "content": []}}
    words = text.split(" ")
    for i, word in enumerate(words):
        delta = word if i == 0 else " " + word
        yield {
            "type": "response.output_text.delta",
            "item_id": item_id,
            "output_index": 0,
            "content_index": 0,
            "delta": delta,
        }
    done = {
        **item,
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    yield {"type": "response.output_item.done", "output_index": 0, "item": done}
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": len(words),
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 10 + len(words),
    }
    completed = {**base, "status": "completed", "output": [done], "usage": usage}
    yield {"type": "response.completed", "response": completed}


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hangs up mid-stream is not the test's business


class FakeOpenAI:
    """``with FakeOpenAI(["hello"]) as api:`` serves on ``api.url`` (``http://127.0.0.1:P/v1``)."""

    def __init__(self, script: Iterable[str] = ()) -> None:
        self.script = list(script)
        self.rules: list[Rule] = []
        self.replied: list[Reply] = []  # every answer given to a turn, in order
        self._called: set[str] = set()  # the rules' calls made so far (by call id)
        self._answered: set[str] = set()  # those whose output came back (and got ``then``)
        #: the reviewer's answer (Auto review), e.g. ``{"outcome": "allow", ...}``; None: the
        #: review requests are answered like turns (the script)
        self.review: dict[str, Any] | None = None
        self.requests: list[Request] = []
        self.unknown: list[Request] = []
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def add(self, *texts: str) -> None:
        with self._lock:
            self.script.extend(texts)

    def on(self, keyword: str, call: ToolCall, then: str) -> None:
        """Answer ``call`` to the first turn whose prompt (its last user text) contains
        ``keyword``, and ``then`` to the first request that brings the call's output back."""
        with self._lock:
            self.rules.append(Rule(keyword, call, then))

    def turns(self) -> list[Request]:
        """The requests for the user's turns (title and review requests left out)."""
        with self._lock:
            return [r for r in self.requests if r.is_turn and not (r.is_title or r.is_review)]

    def reviews(self) -> list[Request]:
        """The requests of Codex's model reviewer (Auto review)."""
        with self._lock:
            return [r for r in self.requests if r.is_turn and r.is_review]

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def _answer(self, request: Request) -> Reply:
        if request.is_title:
            return TITLE_TEXT
        if request.is_review and self.review is not None:
            return json.dumps(self.review)
        texts = request.user_texts()
        with self._lock:
            answer: Reply | None = None
            for rule in self.rules:
                call_id = rule.call.call_id
                if call_id not in self._called:
                    if texts and rule.keyword in texts[-1]:
                        self._called.add(call_id)
                        answer = rule.call
                        break
                elif call_id not in self._answered and request.tool_output(call_id) is not None:
                    # (later requests of the session carry the output too, as history)
                    self._answered.add(call_id)
                    answer = rule.then
                    break
            if answer is None:
                answer = self.script.pop(0) if self.script else EXHAUSTED_TEXT
            self.replied.append(answer)
            return answer

    def start(self) -> FakeOpenAI:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _read(self) -> Request:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                headers = {k.lower(): v for k, v in self.headers.items()}
                request = Request(self.command, self.path, body, headers)
                with api._lock:
                    api.requests.append(request)
                return request

            def _not_found(self, request: Request) -> None:
                with api._lock:
                    api.unknown.append(request)
                payload = json.dumps({"error": {"message": "not found", "type": "fake"}}).encode()
                self.send_response(404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:
                self._not_found(self._read())

            def do_POST(self) -> None:
                request = self._read()
                if not request.is_turn:
                    self._not_found(request)
                    return
                model = str((request.body or {}).get("model", "fake"))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                answer = api._answer(request)
                if isinstance(answer, ToolCall):
                    events = _tool_call_events(answer, model)
                else:
                    events = _events(answer, model)
                for event in events:
                    frame = f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"
                    self.wfile.write(frame.encode())
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

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
