"""``Agent``: a connected, initialized ACP agent, and what it answers when the agent asks
(permission, questions, a v1 agent's terminals and files). Its sessions are ``_session``'s, their
turns ``_turn``'s; ``_connect`` opens one; a v1 agent's dialect is ``_v1``'s."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import anyio
from pydantic import ValidationError

from .. import _protocol as p
from .._connection._errors import AcpError, MethodNotFound, RpcError
from .._connection._hotpath import decode_hot_line
from .._connection._jsonrpc import Connection, Problem, ProblemKind
from .._connection._process import AgentProcess
from .._connection._trace import TraceRecorder
from .._protocol._visible import visible_text
from ._elicitation import ElicitationDecision, ElicitationHandler
from ._elicitation import decide as decide_elicitation
from ._errors import (
    AuthenticationRequired,
    ProtocolViolation,
    UnsupportedProtocolVersion,
    absolute_cwd,
    client_info,
    elicitation_request_adapter,
    first_error,
    v1_client_fields,
)
from ._permission import PermissionDecision, PermissionHandler, decide, invalid_options
from ._session import Session

if TYPE_CHECKING:
    # Both are imported when a v1 agent is met (``import acp_notebook`` stays light).
    from .._protocol import _v1 as v1
    from ._services import AgentServices
    from ._traces import TraceExport

log = logging.getLogger("acp_notebook.client")

PROTOCOL_VERSION = 2
V1_PROTOCOL_VERSION = 1  # `_protocol._v1.PROTOCOL_VERSION`, without importing the v1 layer
SUPPORTED_VERSIONS = (2, 1)
ProtocolChoice = Literal["auto", 1, 2]
"""``connect(protocol=...)``: negotiate (offer 2, speak 1 if that is what the agent speaks), or
force one version."""
# Updates for a session id we do not know yet, held while a session/new is in flight: the
# agent may send them right behind its answer, before the caller has registered the session.
EARLY_UPDATE_LIMIT = 200
# A permission request that names a known tool call gets that call's content (where Kimi puts
# its command) only up to this many items: each request would copy and validate it all again,
# and a real call has a few. The call's own box shows the rest.
MERGED_CONTENT_LIMIT = 64


class Agent:
    """A connected, initialized ACP agent: v2, or v1 behind the same API (``protocol_version``
    tells which; a v1 agent's traffic is translated into the v2 models, see ``_protocol._v1``).
    """

    def __init__(
        self,
        connection: Connection,
        process: AgentProcess | None,
        permission: PermissionHandler | None,
        elicitation: ElicitationHandler | None = None,
        protocol: ProtocolChoice = "auto",
        client_services: bool = False,
        trace: TraceRecorder | None = None,
    ) -> None:
        if protocol not in ("auto", 1, 2):
            raise ValueError(f"protocol must be 'auto', 1 or 2, not {protocol!r}")
        self.protocol: ProtocolChoice = protocol
        #: the version in use once initialized: 2, or 1 for a v1 agent
        self.protocol_version: int | None = None
        #: a v1 agent's ``agentCapabilities`` (``capabilities`` stays None for it)
        self.v1_capabilities: v1.V1AgentCapabilities | None = None
        self.connection = connection
        #: records every frame from here on (``connect(..., trace=True)``); None: only the
        #: connection's log keeps the last messages (`export_trace` says which)
        self.trace = trace
        if trace is not None:
            connection.observe(trace.observe)
        self.process = process
        self.permission = permission
        #: answers questions (``elicitation/create``) no view answered; None: ``cancel``
        self.elicitation = elicitation
        #: request-scoped questions (asked outside any session, e.g. while signing in)
        self.elicitations: list[ElicitationDecision] = []
        self.info: p.Implementation | None = None
        self.capabilities: p.AgentCapabilities | None = None
        self.auth_methods: list[p.AuthMethod] = []
        self.sessions: dict[str, Session] = {}
        self.problems: list[Problem] = []
        """What went wrong on the connection and with the messages it carried, oldest first."""
        self._opening = 0  # session/new requests in flight
        self._early: dict[str, list[Any]] = {}  # session id -> held update params, in order
        # Counted, not sized: each one already passed the connection's line limit.
        self._early_count = 0
        #: a v1 agent's client terminals and file system (``client_services=True``), else None
        self.services: AgentServices | None = None
        if client_services:
            from ._services import AgentServices

            self.services = AgentServices(self)
        connection.set_request_handler(self._on_request)
        connection.set_notification_handler(self._on_notification)
        # terminal output of the commonest shape: decoded by orjson, dispatched at once
        connection.set_fast_notifications(decode_hot_line, self._on_hot_updates)

    # -- lifecycle -----------------------------------------------------------------------
    async def initialize(self) -> None:
        """Negotiate: offer 2 (or the forced version); an answer of 1 with a v1 body (or, with
        ``protocol="auto"``, a v1 body under any number: some v1 agents echo the 2 they were
        offered) makes this a v1 connection. Anything else raises UnsupportedProtocolVersion."""
        if self.protocol == 1:
            from . import _v1 as dialect

            await dialect.initialize(self)
            return
        params: dict[str, Any] = {
            "protocolVersion": PROTOCOL_VERSION,
            "info": client_info(),
            "capabilities": {"elicitation": {"form": {}, "url": {}}},
        }
        if self.protocol == "auto":
            # What a v1 agent reads from this same request (v2 agents ignore the extra keys:
            # claude-agent-acp 0.101.0 answers it in both modes), so one initialize serves both.
            params |= v1_client_fields(self)
            # The TS SDK's protocol router (claude-agent-acp 0.101.0 in v1 mode) gives a v1 agent
            # a v1 initialize rewritten from the v2 `capabilities` alone (fs and terminal off,
            # `_meta` kept): the terminal extension must be there too to reach it.
            params["capabilities"]["_meta"] = {"terminal_output": True}
        try:
            result = await self.connection.request(p.Method.INITIALIZE, params)
        except RpcError as exc:
            data = exc.data if isinstance(exc.data, dict) else {}
            supported = data.get("supported")
            if exc.code == p.ErrorCode.UNSUPPORTED_PROTOCOL_VERSION or "supported" in data:
                if self.protocol == "auto" and isinstance(supported, list) and 1 in supported:
                    from . import _v1 as dialect

                    await dialect.initialize(self)
                    return
                raise UnsupportedProtocolVersion(
                    f"the agent does not support ACP v2: {exc.message} (it supports {supported!r})",
                    supported=supported,
                ) from exc
            raise
        if not isinstance(result, dict):
            raise UnsupportedProtocolVersion(
                f"initialize answered {result!r}, not an object", answered=result
            )
        version = result.get("protocolVersion")
        v1_keys = sorted({"agentCapabilities", "agentInfo"} & result.keys())
        v1_shaped = "info" not in result and "capabilities" not in result
        if self.protocol == "auto" and v1_shaped and (version == 1 or (version == 2 and v1_keys)):
            from . import _v1 as dialect

            dialect.adopt(self, result)
            return
        if version != PROTOCOL_VERSION:
            wanted = "2" if self.protocol == 2 else "1 or 2"
            raise UnsupportedProtocolVersion(
                f"the agent answered protocol version {version!r}; acp_notebook speaks {wanted}",
                answered=version,
            )
        try:
            response = p.InitializeResponse.model_validate(result)
        except ValidationError as exc:
            raise UnsupportedProtocolVersion(
                "the agent claims protocol version 2 but its initialize body is not v2-shaped"
                f" ({first_error(exc)}{'; v1 fields: ' + ', '.join(v1_keys) if v1_keys else ''})",
                answered=result,
            ) from exc
        if v1_keys:
            raise UnsupportedProtocolVersion(
                "the agent claims protocol version 2 but answers with v1 fields: "
                + ", ".join(v1_keys),
                answered=result,
            )
        self.info = response.info
        self.capabilities = response.capabilities
        self.auth_methods = list(response.auth_methods or [])
        self.protocol_version = PROTOCOL_VERSION

    async def login(self, method_id: str, *, api_key: str | None = None) -> None:
        """``auth/login`` (v1: ``authenticate``). ``api_key`` goes in its ``_meta["api-key"]``
        as a string, as Gemini CLI 0.61 reads it for a method whose ``_meta`` names ``api-key``
        (codex-acp 2.6.0 reads ``_meta["api-key"]["apiKey"]`` there, else its environment)."""
        if not self.auth_methods:
            raise AcpError("the agent advertised no auth methods")
        method = p.Method.AUTH_LOGIN if self.protocol_version != 1 else "authenticate"
        params: dict[str, Any] = {"methodId": method_id}
        if api_key is not None:
            params["_meta"] = {"api-key": api_key}
        await self._request(method, params)

    async def logout(self) -> None:
        if not self.auth_methods:
            raise AcpError("the agent advertised no auth methods")
        await self._request(p.Method.AUTH_LOGOUT if self.protocol_version != 1 else "logout", {})

    # -- sessions ------------------------------------------------------------------------
    async def new_session(
        self,
        cwd: str | os.PathLike[str] | None = None,
        *,
        mcp_servers: Sequence[Mapping[str, Any]] | None = None,
    ) -> Session:
        """``session/new``; ``mcp_servers``: its ``mcpServers`` entries, already in the shape of
        the agent's protocol version (the kernel tools' ``mcp_entry``). None: none (v2 omits
        the key, v1 sends ``[]``)."""
        path = absolute_cwd(cwd)
        servers = [dict(entry) for entry in mcp_servers or ()]
        self._opening += 1
        try:
            if self.protocol_version == V1_PROTOCOL_VERSION:
                from . import _v1 as dialect

                session = await dialect.new_session(self, path, servers)
            else:
                params: dict[str, Any] = {"cwd": path}
                if servers:
                    params["mcpServers"] = servers
                result = await self._request(p.Method.SESSION_NEW, params)
                parsed = p.NewSessionResponse.model_validate(result)
                session = Session(self, parsed.session_id, path)
                session.config_options = list(parsed.config_options or [])
            self.sessions[session.id] = session
            # Updates that came right behind the answer, in order, before any later one.
            held = self._early.pop(session.id, [])
            self._early_count -= len(held)
            for params in held:
                try:
                    self._dispatch_update(params)
                except Exception as exc:  # as the reader does for one it applies itself
                    log.exception("applying a held session/update failed")
                    session._problem(f"a session/update could not be applied: {exc!r}")
        finally:
            self._opening -= 1
            if not self._opening:
                for session_id, held in self._early.items():
                    self._problem(
                        f"{len(held)} session/update(s) for unknown session {session_id!r} ignored",
                        "unknown_session",
                    )
                self._early.clear()
                self._early_count = 0
        return session

    async def list_sessions(self, cwd: str | os.PathLike[str] | None = None) -> list[p.SessionInfo]:
        """All sessions the agent knows (following ``nextCursor`` pages)."""
        found: list[p.SessionInfo] = []
        params: dict[str, Any] = {} if cwd is None else {"cwd": absolute_cwd(cwd)}
        for _ in range(10_000):
            result = await self._request(p.Method.SESSION_LIST, params)
            page = p.ListSessionsResponse.model_validate(result)
            found.extend(page.sessions)
            if page.next_cursor is None:
                return found
            params = {**params, "cursor": page.next_cursor}
        raise ProtocolViolation("session/list kept returning cursors")

    async def resume_session(
        self,
        session_id: str,
        cwd: str | os.PathLike[str] | None = None,
        *,
        replay: bool = False,
        mcp_servers: Sequence[Mapping[str, Any]] | None = None,
    ) -> Session:
        """Reattach to a session. With ``replay`` the agent replays its history first.
        ``mcp_servers`` as for ``new_session``."""
        path = absolute_cwd(cwd)
        servers = [dict(entry) for entry in mcp_servers or ()]
        session = self.sessions.get(session_id) or Session(self, session_id, path)
        self.sessions[session_id] = session
        params: dict[str, Any] = {"sessionId": session_id, "cwd": path}
        if servers:
            params["mcpServers"] = servers
        if replay:
            params["replayFrom"] = {"type": "start"}
        try:
            if self.protocol_version == V1_PROTOCOL_VERSION:
                from . import _v1 as dialect

                await dialect.resume(self, session, replay, servers)
                return session
            result = await self._request(p.Method.SESSION_RESUME, params)
        except BaseException:
            self.sessions.pop(session_id, None)
            raise
        if isinstance(result, dict) and result.get("configOptions"):
            session.config_options = list(result["configOptions"])
        return session

    # -- plumbing ------------------------------------------------------------------------
    async def _request(self, method: str, params: dict[str, Any]) -> Any:
        try:
            return await self.connection.request(method, params)
        except RpcError as exc:
            if exc.code == p.ErrorCode.AUTH_REQUIRED:
                raise AuthenticationRequired(
                    f"{method}: authentication required: {exc.message}", self.auth_methods
                ) from exc
            raise

    async def _notify(self, method: str, params: dict[str, Any]) -> None:
        session = None
        if method == p.Method.SESSION_CANCEL:  # whoever sends it, the turn approves nothing more
            session = self.sessions.get(str(params.get("sessionId")))
            if session is not None:
                session._mark_cancelled()
        try:
            await self.connection.notify(method, params)
        finally:
            # The protocol's order: the cancel, then `cancelled` for each pending request.
            if session is not None:
                session._sweep("the session was cancelled", "cancel")
                if self.services is not None:  # and the commands it runs here are stopped
                    await self.services.kill_session(session.id)

    async def _on_notification(self, method: str, params: Any) -> None:
        if method == p.Method.ELICITATION_COMPLETE:
            self._on_elicitation_complete(params)
            return
        if method != p.Method.SESSION_UPDATE:
            log.debug("ignoring notification %s", method)
            return
        self._dispatch_update(params)

    def _on_hot_updates(self, messages: list[dict[str, Any]]) -> None:
        """Consecutive ``session/update`` lines of the hot shape (``_hotpath``): as
        `_on_notification` of each, in order, with each chunk validated by its own model
        (what ``parse_session_update`` picks); a session applies a run of its chunks of one
        terminal in one step (`Session._apply_chunks`)."""
        sessions = self.sessions
        index, count = 0, len(messages)
        while index < count:
            params = messages[index]["params"]
            session = sessions.get(params["sessionId"])
            if session is None or session._v1 is not None:
                self._dispatch_update(params)
                index += 1
                continue
            index = session._apply_chunks(messages, index)

    def _dispatch_update(self, params: Any) -> None:
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        session = self.sessions.get(session_id) if isinstance(session_id, str) else None
        if session is None:
            if (
                self._opening
                and isinstance(session_id, str)
                and self._early_count < EARLY_UPDATE_LIMIT
            ):
                self._early.setdefault(session_id, []).append(params)
                self._early_count += 1
                return
            self._problem(
                f"session/update for unknown session {session_id!r} ignored", "unknown_session"
            )
            return
        if session._v1 is not None:
            session._v1.apply(params.get("update"))
            return
        try:
            update = p.parse_session_update(params.get("update"))
        except ValidationError as exc:
            session._problem(f"malformed session/update dropped: {first_error(exc)}")
            return
        session._apply(update)

    async def _on_request(self, method: str, params: Any) -> Any:
        if method == p.Method.SESSION_REQUEST_PERMISSION:
            return await self._on_permission(params)
        if method == p.Method.ELICITATION_CREATE:
            return await self._on_elicitation(params)
        services = self.services
        if services is not None and self.protocol_version == V1_PROTOCOL_VERSION:
            from ._services import METHODS

            if method in METHODS:
                return await services.handle(method, params)
        raise MethodNotFound(method)

    async def _on_permission(self, params: Any) -> dict[str, Any]:
        try:
            if self.protocol_version == V1_PROTOCOL_VERSION:  # its toolCall as the subject
                from . import _v1 as dialect

                request = dialect.permission_request(self, params)
            else:
                request = self._with_known_tool_call(
                    p.RequestPermissionRequest.model_validate(params)
                )
        except ValidationError as exc:
            # Malformed: we cannot show it, so we cannot allow it.
            self._problem(f"malformed permission request answered cancelled: {first_error(exc)}")
            return {"outcome": {"outcome": "cancelled"}}
        decision = await self._client_permission(request)
        if self.services is not None:
            self.services.note_agent_decision(decision)
        return decision.response()

    def _known_tool_call(self, session_id: str, tool_call_id: str) -> dict[str, Any] | None:
        """The v2 wire fields the session's updates reported for tool call ``tool_call_id``
        (title, name, kind, rawInput, locations, content), or None when it knows no such call.

        A permission request's tool call is a patch of the call of that id (Mistral Vibe names
        it by id only): merged with this before any card, log or policy reads it."""
        session = self.sessions.get(session_id)
        call = session.state.tool_calls.get(tool_call_id) if session is not None else None
        if call is None:
            return None
        wire: dict[str, Any] = {"toolCallId": tool_call_id}
        for key, value in (
            ("title", call.title),
            ("name", call.name),
            ("kind", call.kind),
            ("rawInput", call.raw_input),
        ):
            if value is not None:
                wire[key] = value
        if call.locations:
            wire["locations"] = [item.to_wire() for item in call.locations]
        if call.content and len(call.content) <= MERGED_CONTENT_LIMIT:
            wire["content"] = [item.to_wire() for item in call.content]
        return wire

    def _with_known_tool_call(
        self, request: p.RequestPermissionRequest
    ) -> p.RequestPermissionRequest:
        """``request`` with its tool call merged over what the session knows of that id (see
        `_known_tool_call`): what the request sends wins field by field (a v2 null clears)."""
        subject = request.subject
        if not isinstance(subject, p.ToolCallPermissionSubject):
            return request
        known = self._known_tool_call(request.session_id, subject.tool_call.tool_call_id)
        if known is None:
            return request
        wire = request.to_wire()
        wire["subject"]["toolCall"] = {**known, **wire["subject"]["toolCall"]}
        return p.RequestPermissionRequest.model_validate(wire)

    async def _client_permission(
        self,
        request: p.RequestPermissionRequest,
        earlier: PermissionDecision | None = None,
        *,
        rules_may_allow: bool = True,
        asked_at: float | None = None,
    ) -> PermissionDecision:
        """Decide ``request``, the agent's or one the client services make (a command, a
        write): a decision of the session's current turn, asked of its asker, failing closed
        (unknown session, after the turn, after a cancel, invalid options, nobody to ask).

        ``earlier``: the agent's own request, allowed in this same turn, for exactly the command
        ``request`` runs (`AgentServices` matched them): it answers allow without asking again,
        once every check above has passed. ``rules_may_allow`` False: only a person may allow
        it (`PermissionDecision.rules_may_allow`), so ``earlier`` does not count. ``asked_at``
        (a ``time.time()``): when the request came, if before now (a write's diff was made
        first); a card's countdown counts from it."""
        session = self.sessions.get(request.session_id)
        decision = PermissionDecision(request, rules_may_allow=rules_may_allow)
        if asked_at is not None:
            decision.asked_at = asked_at
        if session is None:
            self._problem(
                f"permission request for unknown session {request.session_id!r}",
                "unknown_session",
            )
            decision.settle(None, "invalid", "unknown session")
            return decision
        decision.turn = session.turn
        session.permissions.append(decision)
        if session.after_idle_asked():
            pass  # background work of the last turn: its asker (the cell that started it) asks
        elif session.turn is None or session.turn.done:
            # Requests run in their own task, so the idle that ended the turn may have been
            # applied first; or the agent asks between turns. No cell waits for an answer any
            # more: fail closed, visibly.
            decision.settle(None, "cancel", "the turn ended")
            session._problem(f"permission request {request.title!r} came after the turn ended")
        elif session.cancelling:
            decision.settle(None, "cancel", "the turn was cancelled")
            session._problem(f"permission request {request.title!r} came after session/cancel")
        elif (reason := invalid_options(request)) is not None:
            # Ambiguous options: whatever we answered, the agent might read it as an allow.
            decision.settle(None, "invalid", reason)
            session._problem(f"permission request {request.title!r} is invalid: {reason}")
        elif (
            earlier is not None
            and earlier.allowed
            and earlier.turn is session.turn
            and decision.rules_may_allow
        ):
            once = [o.option_id for o in request.options if str(o.kind) == "allow_once"]
            if once:
                decision.settle(once[0], "earlier", earlier.request.title)
        with session._answering_slot(decision):
            await self._decide(session, decision)
        return decision

    async def _on_elicitation(self, params: Any) -> dict[str, Any]:
        try:
            request = elicitation_request_adapter().validate_python(params)
        except ValidationError as exc:
            # Malformed: we cannot show it, so nothing can be answered for it.
            self._problem(f"malformed elicitation/create answered cancel: {first_error(exc)}")
            return p.CreateElicitationResponse.cancel().to_wire()
        decision = ElicitationDecision(request)
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        if session_id is None:  # request-scoped (or an unknown mode): no cell is asking
            self.elicitations.append(decision)
            if isinstance(request, p.UnknownElicitationRequest):
                decision.cancel("invalid", f"unknown mode {visible_text(str(request.tag))!r}")
            return await self._decide_elicitation(None, decision)
        session = self.sessions.get(str(session_id))
        if session is None:
            self._problem(
                f"elicitation for unknown session {session_id!r} answered cancel", "unknown_session"
            )
            decision.cancel("invalid", "unknown session")
            self.elicitations.append(decision)
            return decision.response()
        decision.turn = session.turn
        session.elicitations.append(decision)
        what = visible_text(decision.message)[:80]
        if isinstance(request, p.UnknownElicitationRequest):
            decision.cancel("invalid", f"unknown mode {visible_text(str(request.tag))!r}")
            session._problem(f"question {what!r} has an unknown mode: answered cancel")
        elif session.after_idle_asked(questions=True):
            pass  # background work of the last turn: the cell that started it asks
        elif session.turn is None or session.turn.done:
            decision.cancel("cancel", "the turn ended")
            session._problem(f"question {what!r} came after the turn ended")
        elif session.cancelling:
            decision.cancel("cancel", "the turn was cancelled")
            session._problem(f"question {what!r} came after session/cancel")
        with session._answering_slot(decision):
            return await self._decide_elicitation(session, decision)

    async def _decide_elicitation(
        self, session: Session | None, decision: ElicitationDecision
    ) -> dict[str, Any]:
        asker = session._elicitation_asker if session is not None else None
        try:
            if decision.pending:
                return await decide_elicitation(decision, self.elicitation, asker)
            return decision.response()
        except anyio.get_cancelled_exc_class():
            decision.cancel("withdrawn", "the agent withdrew the request")
            return decision.response()
        finally:
            # Cancelled from outside (the agent withdrew it, or the connection closed).
            decision.cancel("withdrawn", "the request was withdrawn")

    def _on_elicitation_complete(self, params: Any) -> None:
        try:
            done = p.CompleteElicitationNotification.model_validate(params)
        except ValidationError as exc:
            self._problem(f"malformed elicitation/complete ignored: {first_error(exc)}")
            return
        questions = [*self.elicitations]
        for session in self.sessions.values():
            questions += session.elicitations
        for decision in questions:
            if getattr(decision.request, "elicitation_id", None) == done.elicitation_id:
                decision.completed = True
                return
        self._problem(
            f"elicitation/complete for unknown id {done.elicitation_id!r} ignored",
            "unknown_elicitation",
        )

    async def _decide(self, session: Session, decision: PermissionDecision) -> dict[str, Any]:
        try:
            if decision.pending:  # else answered already (after a cancel, an invalid request)
                return await decide(decision, self.permission, session._asker)
            return decision.response()
        except anyio.get_cancelled_exc_class():
            # The agent withdrew the request ($/cancel_request): the schema asks for a
            # `cancelled` outcome as the answer. Nothing else is awaited in this scope.
            decision.settle(None, "withdrawn", "the agent withdrew the request")
            return decision.response()
        finally:
            # Cancelled from outside (the agent withdrew it, or the connection closed).
            decision.settle(None, "withdrawn", "the request was withdrawn")

    def _problem(self, detail: str, kind: ProblemKind = "not_acp") -> None:
        """A message we cannot use as ACP (``kind`` "not_acp" unless said otherwise)."""
        log.warning("%s", detail)
        self.problems.append(Problem(kind, detail))

    def _fail_turns(self, error: BaseException) -> None:
        for session in self.sessions.values():
            if session.turn is not None and not session.turn.done:
                session._end_turn(session.turn, error)

    def export_trace(
        self, path: str | os.PathLike[str], *, secrets: Iterable[str] = ()
    ) -> TraceExport:
        """Write this connection's frames to ``path`` as an ``acp-inspector-trace`` v1 JSONL
        file (mode 0600): every frame when connected with ``trace=True`` (up to its cap),
        else the last ones its log keeps, long ones shortened and marked. ``_meta["api-key"]``
        values and every string of ``secrets`` are replaced by ``***``; the header's
        ``warning`` says what was left out."""
        from ._traces import export_trace

        return export_trace(self, path, secrets=secrets)

    def stderr_tail(self) -> str:
        return self.process.stderr_tail() if self.process is not None else ""

    def __repr__(self) -> str:
        name = self.info.name if self.info else "?"
        return f"<Agent {name}>"
