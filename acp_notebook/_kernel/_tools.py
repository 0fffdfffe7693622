"""The kernel's tools for its agents: an MCP server (``%acp connect --kernel-tools``).

One :class:`KernelTools` per notebook serves the official MCP SDK's low-level ``Server`` over
streamable HTTP (stateless, JSON answers) on ``127.0.0.1``, on a port the OS picks, from a
daemon thread with an event loop of its own: the kernel's main thread stays free, and the
agents' I/O thread is not slowed by a tool. Each session of an agent connected with
``--kernel-tools`` gets a :class:`Grant`: a random bearer token (32 bytes, ``secrets``) that
``session/new`` (or the resume) passes in the agent's ``mcpServers`` (:func:`mcp_entry`).

* Every HTTP request is checked before the SDK sees it: no ``Authorization: Bearer`` header,
  a token no grant holds, a revoked grant, or a grant whose session is closed (or whose agent
  was closed) is answered 401 and recorded (:attr:`KernelTools.events`, and the ``on_event``
  callback: the notebook's event bus). The SDK's own DNS-rebinding check (Host and Origin
  must be localhost) stays on. Tokens are compared as bytes (a header that is not ASCII is a
  401 too). A GET (an SSE stream: nothing is ever sent on one here) is answered 405, and
  ``stop`` cancels what is still open after ``STOP_GRACE`` (a ``run_code`` call's card is
  withdrawn).
* ``inspect_variable`` shows nothing ``list_variables`` hides (private ``_names``, IPython's
  own names).
* ``list_variables``, ``inspect_variable`` and ``notebook_history`` read the user's objects.
  They run on the kernel's main thread (``on_main``: a callback on the kernel's event loop), so
  a summary never runs concurrently with user code: while a ``%%acp`` cell awaits its turn the
  loop runs them between the cell's awaits; while any other cell runs they wait for it to end
  (at most ``MAIN_THREAD_WAIT``, then the tool answers that the kernel is busy); and
  Interrupt stops a summary whose ``__repr__`` never returns, as it would stop a cell.
* ``run_code`` hands the code to ``_kernel_code.request_code``: the code card of the cell
  that owns the session's turn; nothing runs without an allow there.
* Every call is recorded (tool, session, the size of what went back to the agent).
* The port takes connections from any local user (the token is checked per request), and each
  connection is a file descriptor of the kernel's own process: at most ``MAX_CONNECTIONS`` are
  held at once (more are closed as soon as they are accepted), one that has not delivered a
  complete request ``REQUEST_DEADLINE`` seconds after it opened (or after its last answer) is
  closed, and the listen queue is short (``ACCEPT_BACKLOG``), so thousands of idle connections
  never use up the kernel's descriptors (issue 22, finding 11). An accept that fails (EMFILE:
  the process is out of descriptors for another reason) only pauses the listener: asyncio's
  server retries a second later.

The tokens are secrets: they are in the agent's connection log (the ``session/new`` request),
so :meth:`KernelTools.secrets` lists every token ever issued to an agent, for ``Notebook.log``
to redact; the stdio bridge gets its URL and token in its environment, never in its argv.

The SDK (``mcp``) and uvicorn are imported only when the server starts.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import hmac
import logging
import secrets
import signal
import socket
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

if TYPE_CHECKING:
    from .._client._agent import Agent
    from .._client._session import Session

__all__ = [
    "ACCEPT_BACKLOG",
    "ANSWER_CAP",
    "BRIDGE_MODULE",
    "ENV_TOKEN",
    "ENV_URL",
    "MAIN_THREAD_WAIT",
    "MAX_CONNECTIONS",
    "REQUEST_DEADLINE",
    "SERVER_NAME",
    "TOOL_NAMES",
    "Grant",
    "KernelTools",
    "ToolEvent",
    "ToolInterrupted",
    "loop_runner",
    "mcp_entry",
]

log = logging.getLogger("acp_notebook.kernel_tools")

T = TypeVar("T")

SERVER_NAME = "notebook"  # claude-agent-acp names the tools mcp__notebook__<tool>
BRIDGE_MODULE = "acp_notebook.mcp_bridge"
ENV_URL = "ACP_NOTEBOOK_MCP_URL"
ENV_TOKEN = "ACP_NOTEBOOK_MCP_TOKEN"
MAIN_THREAD_WAIT = 30.0  # seconds a reading tool waits for the kernel's main thread
EVENTS_KEPT = 200
HISTORY_DEFAULT = 5
HISTORY_MAX = 50
STOP_GRACE = 1
"""Seconds ``stop`` lets open requests finish before they are cancelled."""
TOOL_NAMES = ("list_variables", "inspect_variable", "notebook_history", "run_code")
#: characters of one tool answer (24,000: the prompt cap of ``--with``/``--cells``, the same
#: budget: 5,000 variables list in about 130,000 characters, 50 cells in up to 200,000)
ANSWER_CAP = 24_000
#: connections held open at once; more are closed as soon as they are accepted. Each is a file
#: descriptor of the kernel's process, and about 1,000 idle ones used up the usual limit of
#: 1,024: no cell ran any more (issue 22, finding 11). An agent's session uses one or two.
MAX_CONNECTIONS = 64
#: seconds a connection has to deliver a complete request (headers and body) after it opened,
#: or after its previous answer went; an idle or dribbling one is closed then, so a slot held
#: by nobody frees itself. A request received in full may wait longer (``run_code``'s card).
REQUEST_DEADLINE = 5.0
#: the listen queue (connections the OS completes before the server accepts them: they cost the
#: kernel no descriptor). The event loop accepts up to this many at a time before any can be
#: closed, so it also bounds the descriptors held beyond ``MAX_CONNECTIONS``; uvicorn's default
#: (2,048) let one burst take more than the kernel had.
ACCEPT_BACKLOG = 16

_TOOLS: dict[str, tuple[str, dict[str, Any]]] = {
    "list_variables": (
        "The variables of the notebook's kernel: name, type, shape and size (private names"
        " and modules hidden).",
        {"type": "object", "properties": {}},
    ),
    "inspect_variable": (
        "A summary of one variable of the kernel: a DataFrame's shape, dtypes, first rows and"
        " null counts; an array's shape, dtype, min, max and a sample; a capped repr otherwise.",
        {
            "type": "object",
            "properties": {"name": {"type": "string", "description": "the variable's name"}},
            "required": ["name"],
        },
    ),
    "notebook_history": (
        "The last n cells the user ran in the notebook, in order, with their text outputs.",
        {
            "type": "object",
            "properties": {
                "n": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": HISTORY_MAX,
                    "description": f"how many cells (default {HISTORY_DEFAULT})",
                }
            },
        },
    ),
    "run_code": (
        "Run Python code in the notebook's kernel, in the user's namespace, once the user"
        " allows it in the notebook; returns its output, rich results as text, and any error.",
        {
            "type": "object",
            "properties": {"code": {"type": "string", "description": "Python source"}},
            "required": ["code"],
        },
    ),
}


# -- values ----------------------------------------------------------------------------------


@dataclass(eq=False)
class Grant:
    """One session's right to the tools: its token, its agent, and (once ``session/new``
    answered) its session. Revoked, or with its session closed, it opens nothing."""

    token: str = field(repr=False)
    agent: str
    session: Session | None = None
    revoked: bool = False
    #: whether its agent still runs (None: not known); an agent that exited opens nothing
    alive: Callable[[], bool] | None = field(default=None, repr=False)

    @property
    def session_id(self) -> str | None:
        return None if self.session is None else self.session.id

    @property
    def refusal(self) -> str | None:
        """Why it opens nothing (None: it is usable)."""
        if self.revoked or (self.session is not None and self.session.closed):
            return "the session was closed"
        if self.alive is not None and not self.alive():
            return "the agent exited"
        return None


@dataclass(frozen=True)
class ToolEvent:
    """A tool call served, or a request refused (``kind``), for the user and the panel.
    ``chars``: how much text went back to the agent."""

    kind: Literal["call", "refused"]
    agent: str | None
    session_id: str | None
    tool: str | None
    detail: str
    chars: int = 0
    #: what the call was about (``inspect_variable``'s name, ``notebook_history``'s n)
    about: str = ""
    #: the text that went back to the agent (capped as the answer is)
    text: str = field(default="", repr=False)


# -- the mcpServers entry ------------------------------------------------------------------


def mcp_entry(agent: Agent, url: str, token: str) -> dict[str, Any] | None:
    """The ``mcpServers`` entry for the kernel's server, in the shape of ``agent``'s protocol:
    ``http`` (bearer token header) when it advertises HTTP MCP servers, else the stdio bridge
    (URL and token in its environment); None for a v2 agent that takes neither."""
    headers = [{"name": "Authorization", "value": f"Bearer {token}"}]
    env = [{"name": ENV_URL, "value": url}, {"name": ENV_TOKEN, "value": token}]
    argv = ["-m", BRIDGE_MODULE]
    if agent.protocol_version == 1:
        mcp = (agent.v1_capabilities.mcp_capabilities if agent.v1_capabilities else None) or {}
        if mcp.get("http") is True:
            return {"type": "http", "name": SERVER_NAME, "url": url, "headers": headers}
        # v1: every agent takes stdio servers; the entry has no "type".
        return {"name": SERVER_NAME, "command": sys.executable, "args": argv, "env": env}
    caps = agent.capabilities
    offered = caps.session.mcp if caps is not None and caps.session is not None else None
    if offered is not None and offered.http is not None:
        return {"type": "http", "name": SERVER_NAME, "url": url, "headers": headers}
    if offered is not None and offered.stdio is not None:
        return {
            "type": "stdio",
            "name": SERVER_NAME,
            "command": sys.executable,
            "args": argv,
            "env": env,
        }
    return None


# -- the main thread -------------------------------------------------------------------------


class ToolInterrupted(Exception):
    """Interrupt stopped a reading tool on the main thread (a ``__repr__`` that never ends)."""


def _interruptible(fn: Callable[[], T]) -> T:
    """``fn()`` with Python's own SIGINT handler: a waiting ``%%acp`` cell's handler only
    cancels the turn, from the loop, which a ``__repr__`` that never returns keeps from
    running; with this one Interrupt raises in the summary and the tool answers so."""
    if threading.current_thread() is not threading.main_thread():
        return fn()
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return fn()
    except KeyboardInterrupt:
        raise ToolInterrupted from None
    finally:
        signal.signal(signal.SIGINT, previous)


def loop_runner(loop: asyncio.AbstractEventLoop) -> Callable[[Callable[[], T], float], T]:
    """``run(fn, timeout)``: call ``fn`` in ``loop``'s thread (the kernel's main thread, between
    the awaits of whatever runs there; Interrupt stops it) and wait for its result; on a
    timeout ``fn`` is called off, if it has not started, and ``TimeoutError`` raised."""

    def run(fn: Callable[[], T], timeout: float) -> T:
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def call() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(_interruptible(fn))
            except BaseException as exc:  # never out into the kernel's loop
                future.set_exception(exc)

        loop.call_soon_threadsafe(call)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError from None

    return run


def _direct(fn: Callable[[], T], timeout: float) -> T:
    return fn()


# -- the server ------------------------------------------------------------------------------


class KernelTools:
    """The kernel's MCP server and its grants; see the module docstring.

    ``namespace()`` is the user namespace, ``shell`` IPython's shell (for the history),
    ``run_code(session, code)`` (the grant's own ``Session`` object: session ids are chosen by
    the agents, so two agents may share one) shows the code card
    (``_kernel_code.request_code``, given by the notebook: this module does not import it) and
    returns a future of its ``CodeOutcome`` (None: no ``run_code`` here), ``on_main`` runs a
    reading tool on the kernel's main thread (None: in the server's worker thread, for tests
    without a kernel), ``on_event`` sees every :class:`ToolEvent` (on the server's thread)."""

    def __init__(
        self,
        namespace: Callable[[], Mapping[str, object]],
        *,
        shell: object | None = None,
        run_code: Callable[[Session, str], concurrent.futures.Future[Any]] | None = None,
        on_main: Callable[[Callable[[], Any], float], Any] | None = None,
        on_event: Callable[[ToolEvent], None] | None = None,
        main_wait: float = MAIN_THREAD_WAIT,
        max_connections: int = MAX_CONNECTIONS,
        request_deadline: float = REQUEST_DEADLINE,
    ) -> None:
        self.namespace = namespace
        self.shell = shell
        self.run_code = run_code
        self.on_main = on_main or _direct
        self.on_event = on_event
        self.main_wait = main_wait
        self.max_connections = max_connections
        self.request_deadline = request_deadline
        #: the connections open now (uvicorn protocols), at most ``max_connections``
        self._open: set[object] = set()
        self.events: collections.deque[ToolEvent] = collections.deque(maxlen=EVENTS_KEPT)
        self._lock = threading.Lock()
        self._grants: list[Grant] = []
        self._secrets: dict[str, list[str]] = {}  # agent -> every token it was given
        self._server: Any = None  # uvicorn.Server
        self._thread: threading.Thread | None = None
        self._port: int | None = None

    # -- lifecycle -------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def open_connections(self) -> int:
        """How many connections the server holds open now."""
        return len(self._open)

    @property
    def url(self) -> str:
        if self._port is None:
            raise RuntimeError("the kernel tools server is not running")
        return f"http://127.0.0.1:{self._port}/mcp"

    def start(self, timeout: float = 10.0) -> None:
        """Start serving (once); returns when the server accepts connections."""
        with self._lock:
            if self.running:
                return
            import uvicorn
            from mcp.server.lowlevel import Server

            app = Server(
                SERVER_NAME, on_list_tools=self._list_tools, on_call_tool=self._call_tool
            ).streamable_http_app(stateless_http=True, json_response=True, host="127.0.0.1")
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            config = uvicorn.Config(
                self._guarded(app),
                log_config=None,
                log_level="warning",
                access_log=False,
                http=_guarded_protocol(self._open, self.max_connections, self.request_deadline),
                backlog=ACCEPT_BACKLOG,
                lifespan="on",
                # stop() ends what is still open: a run_code call waiting on its card is
                # cancelled (the card withdrawn), not left to outlive the server
                timeout_graceful_shutdown=STOP_GRACE,
            )
            server = uvicorn.Server(config)
            ready = threading.Event()

            async def serve() -> None:
                task = asyncio.ensure_future(server.serve(sockets=[sock]))
                while not server.started and not task.done():
                    await asyncio.sleep(0.01)
                ready.set()
                await task

            def main() -> None:
                try:
                    asyncio.run(serve())
                except BaseException:  # pragma: no cover - logged, the thread ends
                    log.exception("the kernel tools server stopped")
                finally:
                    ready.set()
                    sock.close()

            self._port = sock.getsockname()[1]
            self._server = server
            self._thread = threading.Thread(target=main, name="acp-kernel-tools", daemon=True)
            self._thread.start()
        if not ready.wait(timeout) or not server.started:
            self.stop()
            raise RuntimeError("the kernel tools server did not start")

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving; every grant is revoked (a later start gives new ones)."""
        with self._lock:
            server, thread = self._server, self._thread
            self._server = self._thread = None
            self._port = None
            for grant in self._grants:
                grant.revoked = True
            self._grants.clear()
        if server is not None:
            server.should_exit = True
        if thread is not None:
            thread.join(timeout)

    # -- grants ----------------------------------------------------------------------------
    def issue(self, agent: str) -> Grant:
        """A fresh grant (and token) for a session of ``agent`` about to be opened."""
        grant = Grant(secrets.token_urlsafe(32), agent)
        with self._lock:
            self._grants.append(grant)
            self._secrets.setdefault(agent, []).append(grant.token)
        return grant

    def bind(self, grant: Grant, session: Session) -> None:
        grant.session = session

    def revoke(self, grant: Grant) -> None:
        with self._lock:
            grant.revoked = True
            if grant in self._grants:
                self._grants.remove(grant)

    def revoke_agent(self, agent: str) -> None:
        """The agent is closed: none of its tokens opens anything any more."""
        with self._lock:
            for grant in [g for g in self._grants if g.agent == agent]:
                grant.revoked = True
                self._grants.remove(grant)

    @property
    def grants(self) -> list[Grant]:
        with self._lock:
            return list(self._grants)

    def secrets(self, agent: str) -> dict[str, str]:
        """Every token ever given to ``agent``, keyed for ``redact`` (revoked ones too: the
        log still holds the requests that carried them)."""
        with self._lock:
            return {f"{ENV_TOKEN}.{i}": t for i, t in enumerate(self._secrets.get(agent, []))}

    def _grant_for(self, authorization: str | None) -> tuple[Grant | None, str]:
        """The usable grant the header names, or None and why not."""
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token:
            return None, "no bearer token"
        with self._lock:
            known = [g for g in self._grants if _same(g.token, token)]
            revoked = any(_same(t, token) for tokens in self._secrets.values() for t in tokens)
        if not known:
            return None, "the session was closed" if revoked else "an unknown token"
        grant = known[0]
        why = grant.refusal
        if why is not None:
            return None, why
        return grant, ""

    def _owner(self, authorization: str | None) -> str | None:
        """The agent a (possibly revoked) token was given to."""
        token = (authorization or "").partition(" ")[2].strip()
        with self._lock:
            for agent, tokens in self._secrets.items():
                if token and any(_same(t, token) for t in tokens):
                    return agent
        return None

    def _record(self, event: ToolEvent) -> None:
        self.events.append(event)
        if self.on_event is not None:
            try:
                self.on_event(event)
            except Exception:  # pragma: no cover - a listener's bug must not fail the tool
                log.exception("a kernel tools listener failed")

    # -- HTTP --------------------------------------------------------------------------------
    def _guarded(self, app: Any) -> Callable[..., Any]:
        async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
            if scope["type"] != "http":
                await app(scope, receive, send)
                return
            authorization = None
            for key, value in scope.get("headers", []):
                if key.lower() == b"authorization":
                    authorization = value.decode("latin-1")
            grant, why = self._grant_for(authorization)
            if grant is not None and scope.get("method") not in ("POST", "DELETE"):
                # Stateless JSON answers: nothing ever comes on a GET stream, and an open one
                # only kept the server's thread alive past stop (and past a revoked grant).
                await send(
                    {
                        "type": "http.response.start",
                        "status": 405,
                        "headers": [(b"allow", b"POST, DELETE")],
                    }
                )
                await send({"type": "http.response.body", "body": b""})
                return
            if grant is None:
                self._record(ToolEvent("refused", self._owner(authorization), None, None, why))
                body = f"401 Unauthorized: {why}\n".encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"text/plain; charset=utf-8"),
                            (b"www-authenticate", b'Bearer realm="acp_notebook kernel tools"'),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
            await app(scope, receive, send)

        return guarded

    # -- MCP ---------------------------------------------------------------------------------
    async def _list_tools(self, ctx: Any, params: Any) -> Any:
        import mcp_types as t

        return t.ListToolsResult(
            tools=[
                t.Tool(name=name, description=text, input_schema=schema)
                for name, (text, schema) in _TOOLS.items()
            ]
        )

    async def _call_tool(self, ctx: Any, params: Any) -> Any:
        import mcp_types as t

        headers = getattr(ctx.request, "headers", None)
        grant, why = self._grant_for(headers.get("authorization") if headers else None)
        if grant is None:  # revoked between the check and now
            return _result(t, f"refused: {why}", error=True)
        name = str(params.name)
        args = dict(params.arguments or {})
        try:
            text, error, image = await self._run_tool(grant, name, args, ctx.request)
        except Exception as exc:
            log.exception("kernel tool %s failed", name)
            text, error, image = f"{name} failed: {type(exc).__name__}: {exc}", True, None
        text = _capped(text, name)
        self._record(
            ToolEvent(
                "call",
                grant.agent,
                grant.session_id,
                name,
                "error" if error else "ok",
                len(text),
                _about(name, args),
                text,
            )
        )
        return _result(t, text, error=error, image=image)

    async def _run_tool(
        self, grant: Grant, name: str, args: dict[str, Any], request: Any = None
    ) -> tuple[str, bool, bytes | None]:
        if name == "run_code":
            return await self._run_code(grant, args, request)
        if name not in _TOOLS:
            return f"no tool {name!r}; the tools are {', '.join(_TOOLS)}", True, None
        from . import _context

        if name == "list_variables":
            rows = await self._on_main(lambda: _context.list_variables(self._users_names()))
            if isinstance(rows, str):
                return rows, True, None
            return _variables_text(rows), False, None
        if name == "inspect_variable":
            wanted = args.get("name")
            if not isinstance(wanted, str) or not wanted:
                return "inspect_variable needs a name (a string)", True, None

            if _context.hidden_name(wanted):  # what list_variables hides is not shown either
                return f"name {wanted!r} is private: the kernel tools do not show it", True, None

            def inspect() -> Any:
                namespace = self._users_names()
                if wanted not in namespace:
                    return None
                return _context.summarize(wanted, namespace[wanted])

            summary = await self._on_main(inspect)
            if isinstance(summary, str):
                return summary, True, None
            if summary is None:
                return f"name {wanted!r} is not defined in the kernel", True, None
            return summary.text, False, summary.png
        n = args.get("n", HISTORY_DEFAULT)
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= HISTORY_MAX:
            return f"notebook_history needs n between 1 and {HISTORY_MAX}", True, None
        if self.shell is None:
            return "this kernel has no IPython history", True, None
        cells = await self._on_main(lambda: _context.recent_cells(self.shell, n))
        if isinstance(cells, str):
            return cells, True, None
        return _cells_text(cells), False, None

    def _users_names(self) -> dict[str, object]:
        """The namespace without what IPython put there itself (``user_ns_hidden``: its
        ``open``, ``exit`` ...), unless the user rebound the name."""
        namespace = self.namespace()
        hidden = getattr(self.shell, "user_ns_hidden", None) or {}
        return {k: v for k, v in namespace.items() if not (k in hidden and hidden[k] is v)}

    async def _on_main(self, fn: Callable[[], Any]) -> Any:
        """``fn()`` on the kernel's main thread, from a worker thread so that the server's loop
        goes on; a busy kernel or an Interrupt is answered as text (a ``str``)."""
        import anyio

        try:
            return await anyio.to_thread.run_sync(self.on_main, fn, self.main_wait)
        except TimeoutError:
            return f"the kernel is busy (another cell has run for more than {self.main_wait:g} s)"
        except ToolInterrupted:
            return "interrupted by the user (Interrupt)"

    async def _run_code(
        self, grant: Grant, args: dict[str, Any], request: Any = None
    ) -> tuple[str, bool, None]:
        """Show the code card and wait for its outcome. A client that gives up on the call
        (its HTTP request goes away: Claude's per-call timeout) withdraws the card: nobody
        waits for that code any more, so a late Allow must not run it."""
        code = args.get("code")
        if not isinstance(code, str) or not code.strip():
            return "run_code needs code (a non-empty string)", True, None
        session = grant.session
        if self.run_code is None or session is None:
            return "run_code is not available here: no notebook session", True, None
        future = self.run_code(session, code)
        watcher = asyncio.ensure_future(_cancel_when_gone(request, future))
        try:
            outcome = await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if future.cancelled() and (task is None or not task.cancelling()):
                return "not run: the client stopped waiting", True, None
            future.cancel()  # this handler was cancelled (the server stops): withdraw the card
            raise
        finally:
            watcher.cancel()
        parts = []
        if outcome.output:
            parts.append(outcome.output)
        if outcome.error:
            parts.append(outcome.error)
        if not outcome.ran:
            parts.append(f"not run: {outcome.reason}")
        text = "\n".join(parts) or "(no output)"
        return text, (not outcome.ran) or outcome.error is not None, None


def _guarded_protocol(open_now: set[object], limit: int, deadline: float) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol, with a cap on the connections open at once (``open_now``, at
    most ``limit``: another is closed at once) and a deadline for each request to arrive in
    full. Only ``asyncio.Protocol``'s own methods and h11's public state are relied on."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class Guarded(H11Protocol):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._refused = False
            self._deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            if len(open_now) >= limit:
                self._refused = True
                transport.abort()  # its descriptor is closed on the loop's next turn
                return
            open_now.add(self)
            super().connection_made(transport)
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._refused:
                return
            open_now.discard(self)
            self._disarm()
            super().connection_lost(exc)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()  # the next request on this connection gets a deadline too

        def _arm(self) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(deadline, self._too_late)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _too_late(self) -> None:
            self._deadline = None
            if self.conn.their_state in (h11.DONE, h11.MUST_CLOSE):
                return  # the request is all here; its answer may take long (a code card)
            log.info("kernel tools: closed a connection with no complete request in time")
            self.transport.close()

    return Guarded


def _same(token: str, given: str) -> bool:
    """Whether ``given`` (a header's value, read as latin-1) is ``token``, in constant time;
    as bytes: ``hmac.compare_digest`` raises on a ``str`` that is not ASCII."""
    return hmac.compare_digest(token.encode(), given.strip().encode())


async def _cancel_when_gone(request: Any, future: concurrent.futures.Future[Any]) -> None:
    """Cancel ``future`` as soon as the HTTP client of ``request`` (a Starlette request) is
    gone: its ASGI ``receive`` answers ``http.disconnect`` then (the body was read already, so
    nothing else comes). Not a poll: a poll left a window in which the agent had moved on (and
    asked its next question) while the card still took an Allow."""
    receive = getattr(request, "receive", None)
    if receive is None:
        return
    while not future.done():
        message = await receive()
        if message.get("type") == "http.disconnect":
            log.info("kernel tools: the client gave up on run_code; its card is withdrawn")
            future.cancel()
            return
        await asyncio.sleep(0.05)  # another message (not expected): never a busy loop


def _about(tool: str, args: dict[str, Any]) -> str:
    """A few words on what a call was about, for the cell that shows it went."""
    if tool == "inspect_variable" and isinstance(args.get("name"), str):
        return str(args["name"])[:80]
    if tool == "notebook_history":
        return f"n={args.get('n', HISTORY_DEFAULT)}"
    return ""


def _capped(text: str, tool: str) -> str:
    """At most ``ANSWER_CAP`` characters of a tool's text, and a line saying what was cut."""
    if len(text) <= ANSWER_CAP:
        return text
    cut = len(text) - ANSWER_CAP
    hint = "inspect_variable NAME" if tool == "list_variables" else "a narrower call"
    return text[:ANSWER_CAP] + f"\n… {cut} characters cut by {tool} (the cap); ask {hint}"


def _result(t: Any, text: str, *, error: bool = False, image: bytes | None = None) -> Any:
    content: list[Any] = [t.TextContent(type="text", text=text)]
    if image is not None:
        import base64

        data = base64.b64encode(image).decode("ascii")
        content.append(t.ImageContent(type="image", data=data, mime_type="image/png"))
    return t.CallToolResult(content=content, is_error=error)


def _variables_text(rows: list[Any]) -> str:
    if not rows:
        return "no variables defined"
    lines = []
    for v in rows:
        extra = ", ".join(x for x in (v.shape and f"shape {v.shape}", v.size and v.size) if x)
        lines.append(f"{v.name}: {v.type_name}" + (f" ({extra})" if extra else ""))
    return "\n".join(lines)


def _cells_text(cells: list[Any]) -> str:
    if not cells:
        return "no cells have run yet"
    blocks = []
    for cell in cells:
        block = f"In [{cell.number}]:\n{cell.source}"
        if cell.output:
            block += f"\nOut [{cell.number}]:\n{cell.output}"
        blocks.append(block)
    return "\n\n".join(blocks)
