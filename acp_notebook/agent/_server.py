"""The embedded agent's ACP v2 server: methods, sessions and turns."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pydantic
from anyio.abc import ByteReceiveStream, ByteSendStream, TaskGroup

from .. import _protocol as p
from .._connection._errors import ConnectionClosed, MethodNotFound, RpcError
from .._connection._jsonrpc import Connection
from . import _wire as wire
from ._faults import MIB, CountingSendStream, Faults, flood_blocks, flood_stderr
from ._files import PathRefused, diff_content, read_text, resolve_inside
from ._pty import ExitStatus, PtyCommand
from ._scenario import Permission, Scenario, Script, SendUpdate, Sleep, Stop, substitute
from ._script import Run, Say, Tool, Write, parse_script
from ._store import FLUSH_SECONDS, SessionFile, Store, compact_history

__all__ = ["PROTOCOL_VERSION", "AgentServer", "Decision"]

logger = logging.getLogger("acp_notebook.agent")

PROTOCOL_VERSION = 2
ALLOW_KINDS = ("allow_once", "allow_always")
REJECT_KINDS = ("reject_once", "reject_always")


async def _flush_every(file: SessionFile, seconds: float) -> None:
    """Write what ``file`` holds every ``seconds``, until cancelled (a quiet command's last
    output reaches the file within that bound)."""
    while True:
        await anyio.sleep(seconds)
        file.flush()


def _new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:16]}"


M = TypeVar("M", bound=p.WireModel)


def _parse(model: type[M], params: Any) -> M:
    """Validate request params with the protocol model; a bad shape answers ``-32602``."""
    try:
        return model.from_wire({} if params is None else params)
    except pydantic.ValidationError as exc:
        raise _invalid_params(exc) from None


def _invalid_params(exc: pydantic.ValidationError) -> RpcError:
    """``-32602`` naming where the first problem is."""
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "params"
    return RpcError(p.ErrorCode.INVALID_PARAMS, f"Invalid params: {where}: {first['msg']}")


def _cwd(value: str) -> Path:
    cwd = Path(value)
    if not cwd.is_absolute():
        raise RpcError(p.ErrorCode.INVALID_PARAMS, "Invalid params: cwd must be an absolute path")
    if not cwd.is_dir():
        raise RpcError(p.ErrorCode.INVALID_PARAMS, f"Invalid params: cwd {cwd} is not a directory")
    return cwd


def _not_found(session_id: str) -> RpcError:
    return RpcError(
        p.ErrorCode.RESOURCE_NOT_FOUND,
        f"session not found: {session_id}",
        {"sessionId": session_id},
    )


def _prompt_text(blocks: list[Any]) -> str:
    parts: list[str] = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif block.get("type") == "resource":
            resource = block.get("resource")
            if isinstance(resource, dict) and isinstance(resource.get("text"), str):
                parts.append(resource["text"])
    return "\n".join(parts)


@dataclass(frozen=True)
class Decision:
    """What came of a permission request."""

    allow: bool
    always: bool = False
    reason: str = ""
    abort: bool = False  # the turn cannot go on (cancelled, or an unclear answer)


@dataclass
class Turn:
    cancelled: bool = False
    cancel_event: anyio.Event = field(default_factory=anyio.Event)
    permission_scope: anyio.CancelScope | None = None
    done: anyio.Event = field(default_factory=anyio.Event)

    def cancel(self, terminals: dict[str, PtyCommand]) -> None:
        self.cancelled = True
        self.cancel_event.set()
        if self.permission_scope is not None:
            self.permission_scope.cancel()
        for command in terminals.values():
            command.interrupt()


@dataclass
class Session:
    session_id: str
    cwd: Path
    file: SessionFile
    grants: dict[str, bool] = field(default_factory=dict)
    turn: Turn | None = None
    prompts: int = 0
    titled: bool = False
    terminals: dict[str, PtyCommand] = field(default_factory=dict)
    terminal_cancelled: set[str] = field(default_factory=set)
    #: the MCP servers the client gave (``session/new`` or the last resume), for ``@tool``
    mcp_servers: list[Any] = field(default_factory=list)
    #: its mode (`_wire.MODES`): ``plan`` runs and writes nothing
    mode: str = "ask"


class AgentServer:
    """Serves one client over a pair of byte streams until the client goes away."""

    def __init__(
        self,
        store: Store,
        *,
        faults: Faults | None = None,
        scenario: Scenario | None = None,
        grace: float = 1.0,
        version: str = "0",
        mcp: tuple[str, ...] = ("http", "stdio"),
    ) -> None:
        self.store = store
        #: the MCP transports it advertises (and the only ones it takes)
        self.mcp = mcp
        self.faults = faults or Faults()
        self.scenario = scenario
        self.grace = grace
        self.version = version
        self.sessions: dict[str, Session] = {}
        self._conn: Connection | None = None
        self._out: CountingSendStream | None = None
        self._tg: TaskGroup | None = None
        self._hanging = False
        self._flooded_stderr = False

    # -- plumbing ------------------------------------------------------------------------

    async def serve(self, receive: ByteReceiveStream, send: ByteSendStream) -> None:
        self._out = CountingSendStream(send, self.faults.crash_after)
        conn = Connection(receive, self._out, name="client")
        conn.set_request_handler(self._on_request)
        conn.set_notification_handler(self._on_notification)
        self._conn = conn
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                async with conn:
                    await conn.wait_closed()
                tg.cancel_scope.cancel()
        finally:
            self.store.flush()  # what the session files still hold

    @property
    def conn(self) -> Connection:
        assert self._conn is not None
        return self._conn

    async def _send_update(
        self, session: Session, update: dict[str, Any], *, record: bool = True
    ) -> None:
        if record:
            session.file.update(update)
        await self.conn.notify(
            p.Method.SESSION_UPDATE, wire.notification(session.session_id, update)
        )

    # -- dispatch ------------------------------------------------------------------------

    async def _on_request(self, method: str, params: Any) -> Any:
        if self._hanging:
            await anyio.sleep_forever()
        handlers: dict[str, Callable[[Any], Awaitable[Any]]] = {
            p.Method.INITIALIZE: self._initialize,
            p.Method.SESSION_NEW: self._session_new,
            p.Method.SESSION_LIST: self._session_list,
            p.Method.SESSION_RESUME: self._session_resume,
            p.Method.SESSION_PROMPT: self._session_prompt,
            p.Method.SESSION_CLOSE: self._session_close,
            p.Method.SESSION_SET_CONFIG_OPTION: self._set_config_option,
            p.Method.TERMINAL_CANCEL: self._terminal_cancel,
        }
        handler = handlers.get(method)
        if handler is None:
            raise MethodNotFound(method)
        return await handler(params)

    async def _on_notification(self, method: str, params: Any) -> None:
        if method == p.Method.SESSION_CANCEL:
            session_id = params.get("sessionId") if isinstance(params, dict) else None
            session = self.sessions.get(session_id) if isinstance(session_id, str) else None
            if session is not None and session.turn is not None:
                session.turn.cancel(session.terminals)
            return
        raise MethodNotFound(method)

    # -- methods -------------------------------------------------------------------------

    async def _initialize(self, params: Any) -> Any:
        _parse(p.InitializeRequest, params)  # any version: we answer 2, the client decides
        if self.faults.hang:
            self._hanging = True
        return wire.initialize_response(PROTOCOL_VERSION, self.version, mcp=self.mcp)

    def _session(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise _not_found(session_id)
        return session

    async def _session_new(self, params: Any) -> Any:
        request = _parse(p.NewSessionRequest, params)
        cwd = _cwd(request.cwd)
        session_id, file = self.store.create(str(cwd))
        self.sessions[session_id] = Session(
            session_id, cwd, file, mcp_servers=self._known_servers(request.mcp_servers)
        )
        return {"sessionId": session_id, "configOptions": wire.mode_options("ask")}

    async def _set_config_option(self, params: Any) -> Any:
        request = _parse_config(params)
        session = self._session(request.session_id)
        value = request.value
        if request.config_id != "mode" or not isinstance(value, str) or value not in wire.MODES:
            raise RpcError(
                p.ErrorCode.INVALID_PARAMS,
                f"Invalid params: no option {request.config_id!r} with value {value!r}",
            )
        session.mode = value
        return {"configOptions": wire.mode_options(value)}

    def _known_servers(self, servers: list[Any] | None) -> list[Any]:
        """The MCP servers of a request the agent takes (of the transports it advertised)."""
        kinds = {"http": p.McpServerHttp, "stdio": p.McpServerStdio}
        taken = tuple(kinds[k] for k in self.mcp if k in kinds)
        return [s for s in servers or [] if taken and isinstance(s, taken)]

    async def _session_list(self, params: Any) -> Any:
        request = _parse(p.ListSessionsRequest, params)
        cwd, cursor = request.cwd, request.cursor
        start = int(cursor) if cursor is not None and cursor.isdigit() else 0
        records = [r for r in self.store.list() if cwd is None or r.cwd == cwd]
        page = records[start : start + wire.LIST_PAGE]
        result: dict[str, Any] = {"sessions": [wire.session_info(r) for r in page]}
        if start + wire.LIST_PAGE < len(records):
            result["nextCursor"] = str(start + wire.LIST_PAGE)
        return result

    async def _session_resume(self, params: Any) -> Any:
        request = _parse(p.ResumeSessionRequest, params)
        session_id = request.session_id
        cwd = _cwd(request.cwd)
        replay = request.replay_from
        if replay is not None and not isinstance(replay, p.ReplayFromStart):
            raise RpcError(
                p.ErrorCode.INVALID_PARAMS, f"Invalid params: unsupported replayFrom {replay!r}"
            )
        record = self.store.load(session_id)
        file = self.store.open(session_id)
        if record is None or file is None:
            raise _not_found(session_id)
        session = self.sessions.get(session_id)
        if session is None:
            session = Session(session_id, cwd, file, grants=dict(record.grants))
            session.titled = record.title is not None
            session.prompts = sum(
                1 for u in record.updates if u.get("sessionUpdate") == "user_message"
            )
            self.sessions[session_id] = session
        else:
            session.cwd = cwd
        session.mcp_servers = self._known_servers(request.mcp_servers)
        if replay is not None:
            for update in compact_history(record.updates):
                await self._send_update(session, update, record=False)
        return {"configOptions": wire.mode_options(session.mode)}

    async def _session_prompt(self, params: Any) -> Any:
        request = _parse(p.PromptRequest, params)
        session = self._session(request.session_id)
        prompt = [block.to_wire() for block in request.prompt]
        if session.turn is not None:
            raise RpcError(p.ErrorCode.INVALID_REQUEST, "a turn is already running in this session")
        message_id = _new_id("msg")
        turn = Turn()
        session.turn = turn
        assert self._tg is not None
        self._tg.start_soon(self._turn, session, turn, prompt, message_id)
        return {"messageId": message_id}

    async def _session_close(self, params: Any) -> Any:
        session = self._session(_parse(p.CloseSessionRequest, params).session_id)
        turn = session.turn
        if turn is not None:
            turn.cancel(session.terminals)
            await turn.done.wait()
        self.sessions.pop(session.session_id, None)
        return {}

    async def _terminal_cancel(self, params: Any) -> Any:
        request = _parse(p.CancelTerminalRequest, params)
        session = self._session(request.session_id)
        terminal_id = request.terminal_id
        command = session.terminals.get(terminal_id)
        if command is not None:
            session.terminal_cancelled.add(terminal_id)
            command.interrupt()
        return {}

    # -- turns ---------------------------------------------------------------------------

    async def _turn(self, session: Session, turn: Turn, prompt: list[Any], message_id: str) -> None:
        stop: str = "end_turn"
        try:
            await self._send_update(session, wire.user_message(message_id, prompt))
            await self._send_update(session, wire.state("running"))
            text = _prompt_text(prompt)
            if not session.titled:
                session.titled = True
                title = (text.strip().splitlines() or ["(no text)"])[0][:80]
                session.file.title(title)
                await self._send_update(session, wire.session_info_update(title))
            await self._inject_faults(session)
            index = session.prompts
            session.prompts += 1
            if self.scenario is not None:
                stop = await self._play_scenario(session, turn, index)
            elif self.faults.flood_output_mib is None:
                stop = await self._run_script(session, turn, text)
            if turn.cancelled:
                stop = "cancelled"
        except ConnectionClosed:
            return
        finally:
            session.turn = None
            with anyio.CancelScope(shield=True):
                with contextlib.suppress(
                    ConnectionClosed, anyio.ClosedResourceError, anyio.BrokenResourceError
                ):
                    await self._send_update(session, wire.idle(stop))
            turn.done.set()

    async def _run_script(self, session: Session, turn: Turn, text: str) -> str:
        steps = parse_script(text)
        if not steps:
            steps = [Say("I read text prompts only, and this one has no text.")]
        for step in steps:
            if turn.cancelled:
                return "cancelled"
            if isinstance(step, Say):
                await self._say(session, step.text)
            elif session.mode == "plan" and isinstance(step, (Run, Write, Tool)):
                await self._say(session, f"(plan mode) I would {_planned(step)}, and did not.")
            elif isinstance(step, Run):
                if await self._run_command(session, turn, step.command) == "abort":
                    return "cancelled"
            elif isinstance(step, Tool):
                await self._call_tool(session, turn, step)
            elif await self._write_file(session, turn, step) == "abort":
                return "cancelled"
        return "end_turn"

    async def _say(self, session: Session, text: str) -> None:
        message_id = _new_id("msg")
        for piece in text.splitlines(keepends=True):
            await self._send_update(session, wire.agent_chunk(message_id, piece))

    async def _ask(self, session: Session, turn: Turn, params: dict[str, Any]) -> Decision:
        """Ask the client; anything but a clear allow or reject is a refusal that aborts."""
        await self._send_update(session, wire.state("requires_action"))
        offered = {o["optionId"]: o["kind"] for o in params["options"]}
        result: Any = None
        error: str | None = None
        with anyio.CancelScope() as scope:
            turn.permission_scope = scope
            if turn.cancelled:
                scope.cancel()
            try:
                result = await self.conn.request(p.Method.SESSION_REQUEST_PERMISSION, params)
            except RpcError as exc:
                error = f"the permission request failed: {exc}"
        turn.permission_scope = None
        if turn.cancelled or scope.cancelled_caught:
            return Decision(False, reason="the turn was cancelled", abort=True)
        await self._send_update(session, wire.state("running"))
        if error is not None:
            return Decision(False, reason=error, abort=True)
        try:
            outcome = p.RequestPermissionResponse.from_wire(result).outcome
        except pydantic.ValidationError:
            return Decision(False, reason="the permission answer is malformed", abort=True)
        if isinstance(outcome, p.CancelledPermissionOutcome):
            return Decision(False, reason="the permission request was cancelled", abort=True)
        if not isinstance(outcome, p.SelectedPermissionOutcome):
            return Decision(False, reason="unknown permission outcome", abort=True)
        kind = offered.get(outcome.option_id)
        if kind in ALLOW_KINDS:
            return Decision(True, always=kind == "allow_always")
        if kind in REJECT_KINDS:
            return Decision(False, always=kind == "reject_always", reason="rejected by the client")
        return Decision(False, reason=f"option {outcome.option_id!r} was not offered", abort=True)

    async def _decide(
        self, session: Session, turn: Turn, key: str, params: dict[str, Any]
    ) -> Decision:
        remembered = session.grants.get(key)
        if remembered is True:
            return Decision(True)
        if remembered is False:
            return Decision(False, reason="rejected earlier (reject always)")
        decision = await self._ask(session, turn, params)
        if decision.always and not decision.abort:
            session.grants[key] = decision.allow
            session.file.grant(key, decision.allow)
        return decision

    async def _refuse(
        self, session: Session, turn: Turn, tool_call_id: str, decision: Decision
    ) -> str:
        status = "cancelled" if turn.cancelled else "failed"
        await self._send_update(
            session,
            wire.tool_call(tool_call_id, status=status, content=[wire.text(decision.reason)]),
        )
        return "abort" if decision.abort else "next"

    async def _run_command(self, session: Session, turn: Turn, command: str) -> str:
        tool_call_id = _new_id("call")
        terminal_id = _new_id("term")
        cwd = str(session.cwd)
        await self._send_update(
            session,
            wire.tool_call(
                tool_call_id,
                title=command,
                kind="execute",
                status="pending",
                content=[{"type": "terminal", "terminalId": terminal_id}],
                raw_input={"command": command, "cwd": cwd},
            ),
        )
        params = wire.command_permission(
            session.session_id, command, cwd, tool_call_id, terminal_id
        )
        decision = await self._decide(session, turn, f"command:{command}", params)
        if not decision.allow:
            return await self._refuse(session, turn, tool_call_id, decision)
        pty = PtyCommand(command, session.cwd, grace=self.grace)
        # Registered before it is announced: the announcement offers ``terminal/cancel``, and a
        # client may use it the moment it reads it. (An interrupt before ``run`` still counts.)
        session.terminals[terminal_id] = pty

        lines = wire.ChunkLines(session.session_id, terminal_id)

        async def output(data: bytes) -> None:  # what _send_update does, encoded once
            update, encoded, line = lines(data)
            session.file.update(update, encoded=encoded)
            params = wire.notification(session.session_id, update)
            await self.conn.notify_encoded(p.Method.SESSION_UPDATE, params, line)

        try:
            await self._send_update(session, wire.terminal_start(terminal_id, command, cwd))
            await self._send_update(session, wire.tool_call(tool_call_id, status="in_progress"))
            if turn.cancelled:
                pty.interrupt()
            try:
                async with anyio.create_task_group() as flushing:
                    # the session file holds output in batches: written at least this often
                    flushing.start_soon(_flush_every, session.file, FLUSH_SECONDS)
                    try:
                        status = await pty.run(output)
                    finally:
                        flushing.cancel_scope.cancel()
            except OSError as exc:
                await self._send_update(session, wire.terminal_exit(terminal_id, None))
                await self._send_update(
                    session,
                    wire.tool_call(
                        tool_call_id,
                        status="failed",
                        content=[wire.text(f"could not start: {exc}")],
                    ),
                )
                return "next"
        finally:
            session.terminals.pop(terminal_id, None)
        await self._send_update(session, wire.terminal_exit(terminal_id, status))
        if turn.cancelled or terminal_id in session.terminal_cancelled:
            tool_status = "cancelled"
        else:
            tool_status = "completed" if status.success else "failed"
        await self._send_update(session, wire.tool_call(tool_call_id, status=tool_status))
        return "next"

    async def _call_tool(self, session: Session, turn: Turn, step: Tool) -> None:
        """``@tool NAME {args}``: one tool call per MCP server of the session, its result as
        the tool call's content (a cancel of the turn stops the call)."""
        from . import _mcp

        servers = session.mcp_servers or [None]
        for server in servers:
            tool_call_id = _new_id("call")
            where = _mcp.server_name(server) if server is not None else "MCP"
            await self._send_update(
                session,
                wire.tool_call(
                    tool_call_id,
                    title=f"{where}: {step.name}",
                    kind="other",
                    status="pending",
                    raw_input={"server": where, "tool": step.name, "arguments": step.arguments},
                ),
            )
            if server is None or step.error is not None:
                reason = step.error or "this session was given no MCP servers"
                await self._send_update(
                    session,
                    wire.tool_call(tool_call_id, status="failed", content=[wire.text(reason)]),
                )
                continue
            await self._send_update(session, wire.tool_call(tool_call_id, status="in_progress"))
            result: _mcp.ToolResult | None = None
            with anyio.CancelScope() as scope:
                turn.permission_scope = scope  # Turn.cancel cancels it
                if turn.cancelled:
                    scope.cancel()
                result = await _mcp.call_tool(server, step.name, step.arguments)
            turn.permission_scope = None
            if result is None or turn.cancelled:
                await self._send_update(
                    session,
                    wire.tool_call(
                        tool_call_id,
                        status="cancelled",
                        content=[wire.text("the turn was cancelled")],
                    ),
                )
                return
            text = result.text or "(no text)"
            if result.others:
                text += f"\n(and {result.others} non-text item(s))"
            await self._send_update(
                session,
                wire.tool_call(
                    tool_call_id,
                    status="failed" if result.is_error else "completed",
                    content=[wire.text(text)],
                ),
            )

    async def _write_file(self, session: Session, turn: Turn, step: Write) -> str:
        tool_call_id = _new_id("call")
        title = f"Write {step.path}"
        try:
            target = resolve_inside(session.cwd, step.path)
        except PathRefused as exc:
            await self._send_update(
                session,
                wire.tool_call(
                    tool_call_id,
                    title=title,
                    kind="edit",
                    status="failed",
                    content=[wire.text(f"refused without asking: {exc}")],
                ),
            )
            return "next"
        old = read_text(target)
        tool = wire.tool_call(
            tool_call_id,
            title=title,
            kind="edit",
            status="pending",
            content=[diff_content(target, old, step.content)],
            locations=[{"path": str(target)}],
            raw_input={"path": str(target)},
        )
        await self._send_update(session, tool)
        params = wire.tool_call_permission(session.session_id, f"Write `{step.path}`?", tool)
        decision = await self._decide(session, turn, f"write:{target}", params)
        if not decision.allow:
            return await self._refuse(session, turn, tool_call_id, decision)
        try:
            target = resolve_inside(session.cwd, step.path)  # again: it may have changed
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(step.content.encode("utf-8"))
        except (OSError, PathRefused) as exc:
            await self._send_update(
                session,
                wire.tool_call(tool_call_id, status="failed", content=[wire.text(str(exc))]),
            )
            return "next"
        await self._send_update(session, wire.tool_call(tool_call_id, status="completed"))
        return "next"

    # -- scenario ------------------------------------------------------------------------

    async def _play_scenario(self, session: Session, turn: Turn, index: int) -> str:
        assert self.scenario is not None
        variables = {"cwd": str(session.cwd), "sessionId": session.session_id}
        for step in self.scenario.turn(index):
            if turn.cancelled:
                return "cancelled"
            if isinstance(step, SendUpdate):
                await self._send_update(session, substitute(step.update, variables))
            elif isinstance(step, Sleep):
                with anyio.move_on_after(step.seconds):
                    await turn.cancel_event.wait()
            elif isinstance(step, Script):
                stop = await self._run_script(session, turn, step.text)
                if stop != "end_turn":
                    return stop
            elif isinstance(step, Stop):
                return step.reason
            elif isinstance(step, Permission):
                params = {"sessionId": session.session_id, **substitute(step.params, variables)}
                params = {**params, "sessionId": session.session_id}
                if not params["options"] or not all(
                    isinstance(o, dict) and "optionId" in o and "kind" in o
                    for o in params["options"]
                ):
                    return "_scenario_error"
                decision = await self._ask(session, turn, params)
                if turn.cancelled:
                    return "cancelled"
                if step.expect is not None and not self._matches(params, decision, step.expect):
                    return "_scenario_mismatch"
        return "end_turn"

    @staticmethod
    def _matches(params: dict[str, Any], decision: Decision, expect: tuple[str, ...]) -> bool:
        kinds = {str(o["kind"]) for o in params["options"]}
        if decision.allow:
            allowed = {k for k in kinds if k in ALLOW_KINDS}
            return bool(allowed & set(expect)) and (
                "allow_always" in expect if decision.always else "allow_once" in expect
            )
        if decision.abort:
            return "cancelled" in expect
        return ("reject_always" if decision.always else "reject_once") in expect

    # -- faults --------------------------------------------------------------------------

    async def _inject_faults(self, session: Session) -> None:
        faults = self.faults
        out = self._out
        assert out is not None
        if faults.flood_stderr_mib is not None and not self._flooded_stderr:
            self._flooded_stderr = True
            await anyio.to_thread.run_sync(flood_stderr, faults.flood_stderr_mib)
        if faults.bad_json:
            await out.send_raw_line(b'{"jsonrpc": "2.0", "method": this is not JSON')
        if faults.oversize_line is not None:
            await out.send_raw_line(wire.oversize_line(session.session_id, faults.oversize_line))
        if faults.bad_base64:
            terminal_id = _new_id("term")
            await self._send_update(
                session, wire.terminal_start(terminal_id, "(bad base64 fault)", str(session.cwd))
            )
            bad = {"sessionUpdate": "terminal_output_chunk", "terminalId": terminal_id}
            await self._send_update(session, {**bad, "data": "%%% not base64 %%%"}, record=False)
            await self._send_update(
                session, wire.terminal_chunk(terminal_id, b"after the bad chunk\n")
            )
            await self._send_update(session, wire.terminal_exit(terminal_id, ExitStatus(0)))
        if faults.flood_output_mib is not None:
            await self._flood(session, int(faults.flood_output_mib * MIB))

    async def _flood(self, session: Session, total: int) -> None:
        tool_call_id = _new_id("call")
        terminal_id = _new_id("term")
        command = f"(flood: {total} bytes)"
        await self._send_update(
            session,
            wire.tool_call(
                tool_call_id,
                title=command,
                kind="execute",
                status="in_progress",
                content=[{"type": "terminal", "terminalId": terminal_id}],
            ),
        )
        await self._send_update(
            session, wire.terminal_start(terminal_id, command, str(session.cwd))
        )
        digest = hashlib.sha256()
        lines = wire.ChunkLines(session.session_id, terminal_id)
        for block in flood_blocks(total):
            digest.update(block)
            update, encoded, line = lines(block)
            session.file.update(update, encoded=encoded)  # replayable, within the store's cap
            params = wire.notification(session.session_id, update)
            await self.conn.notify_encoded(p.Method.SESSION_UPDATE, params, line)
        meta = {"acpNotebook": {"bytes": total, "sha256": digest.hexdigest()}}
        await self._send_update(session, wire.terminal_exit(terminal_id, ExitStatus(0), meta=meta))
        await self._send_update(session, wire.tool_call(tool_call_id, status="completed"))
        await self._say(session, f"flood: sent {total} bytes, sha256 {digest.hexdigest()}")


def _planned(step: Run | Write | Tool) -> str:
    """What a step would do, in plan mode's words."""
    if isinstance(step, Run):
        return f"run `{step.command}`"
    if isinstance(step, Write):
        return f"write {step.path}"
    return f"call the tool {step.name}"


def _parse_config(params: Any) -> Any:
    """``session/set_config_option`` params (an id or a boolean value); -32602 otherwise."""
    spec = p.AGENT_METHODS[p.Method.SESSION_SET_CONFIG_OPTION]
    try:
        parsed = spec.parse_params(params)
    except pydantic.ValidationError as exc:
        raise _invalid_params(exc) from None
    if isinstance(parsed, p.UnknownSetSessionConfigOptionRequest):
        raise RpcError(p.ErrorCode.INVALID_PARAMS, "Invalid params: unknown value type")
    return parsed
