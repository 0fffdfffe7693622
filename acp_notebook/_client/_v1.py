"""The v1 dialect of the client: what ``Agent`` and ``Session`` do differently with an agent
that speaks ACP v1 (``initialize``, sessions, their updates, the prompt's answer, modes and
config options, permission requests), delegated here so that the v2 path reads on its own.

A v1 session has a ``V1Translator`` (``_protocol._v1``) that turns its v1 traffic into the v2
models; everything above this module sees only those. Imported the first time a v1 agent is
met (``import acp_notebook`` stays light).
"""

from __future__ import annotations

import base64
import functools
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ValidationError

from .. import _protocol as p
from .._connection._errors import AcpError, RpcError
from .._connection._hotpath import decode_v1_hot_line
from .._protocol import _v1 as v1
from .._protocol._v1 import terminal_bytes
from .._state import SessionState
from ._errors import (
    ProtocolViolation,
    TurnInProgress,
    UnsupportedProtocolVersion,
    auth_method_adapter,
    first_error,
    v1_client_fields,
)
from ._session import Session

if TYPE_CHECKING:
    from ._agent import Agent
    from ._turn import Turn

_M = TypeVar("_M", bound=p.WireModel)
_ROLES = {
    "agent_message_chunk": "agent",
    "user_message_chunk": "user",
    "agent_thought_chunk": "thought",
}


def _output_chunk(terminal_id: str, data: bytes) -> p.TerminalOutputChunk:
    """The v2 chunk the translator makes of v1 terminal output whose bytes are ``data``."""
    return p.TerminalOutputChunk(terminal_id=terminal_id, data=base64.b64encode(data).decode())


def _meta_update(tool_call_id: str, meta: dict[str, Any]) -> p.SessionUpdate:
    """The v2 ``tool_call_update`` of a v1 one that carries only ``_meta`` terminal output."""
    wire = {"sessionUpdate": "tool_call_update", "toolCallId": tool_call_id, "_meta": meta}
    return p.parse_session_update(wire)


def _text_update(tag: str, message_id: str, content: dict[str, Any]) -> p.SessionUpdate:
    """The v2 message chunk of a v1 plain text chunk."""
    wire = {"sessionUpdate": tag, "messageId": message_id, "content": content}
    return p.parse_session_update(wire)


def permission_request(agent: Agent, params: Any) -> p.RequestPermissionRequest:
    """A v1 ``session/request_permission``, its ``toolCall`` merged over what the session knows
    of that call, as the v2 request the rest decides (raises ValidationError when malformed)."""
    request, notes = v1.parse_v1_permission_request(params)
    for note in notes:
        agent._problem(f"v1 permission request's toolCall: {note}")
    call = request.tool_call
    known = agent._known_tool_call(request.session_id, call.tool_call_id)
    return v1.V1Translator().permission(request, known)


class V1Session:
    """A v1 session's dialect: its translator, and what its ``Session`` delegates to it (the
    prompt's answer, each update, config options and modes, whether it may be closed)."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.translator = v1.V1Translator()

    def turn_ended(self, turn: Turn, result: Any) -> None:
        """A v1 ``session/prompt`` answer: the turn's end, applied as its idle update."""
        session = self.session
        try:
            response = parse(session.agent, v1.V1PromptResponse, result)
        except ValidationError as exc:
            detail = f"malformed session/prompt answer: {first_error(exc)}"
            session._problem(detail)
            session._end_turn(turn, ProtocolViolation(detail))
            return
        turn.usage = (response.model_extra or {}).get("usage")
        session._apply(self.translator.end_turn(response))
        if not turn.done:  # (the reducer had no current turn for it: end it all the same)
            session._end_turn(turn)

    def apply(self, raw: Any) -> None:
        """One v1 ``update``: parsed, translated, applied (a malformed one is reported)."""
        session = self.session
        try:
            update, notes = v1.parse_v1_session_update_lenient(raw)
        except ValidationError as exc:
            session._problem(f"malformed v1 session/update dropped: {first_error(exc)}")
            return
        for note in notes:  # what v1 reads as absent when invalid: shown, not hidden
            session._problem(f"v1 {update.session_update}: {note}")
        for translated in self.translator.update(update):
            session._apply(translated)

    async def set_config_option(self, config_id: str, value: str | bool) -> list[Any]:
        """v1: the ``mode`` option is the session's mode (``session/set_mode``); the others are
        v1 config options (``session/set_config_option``, whose answer lists them all)."""
        session, translator = self.session, self.translator
        own = {getattr(o, "config_id", None) for o in translator.config_options}
        if config_id == v1.MODE_CONFIG_ID and translator.modes is not None and config_id not in own:
            if not isinstance(value, str):
                raise AcpError("the mode is set by its id (a string)")
            mode = {"sessionId": session.id, "modeId": value}
            await session.agent._request("session/set_mode", mode)
            translator.modes = translator.modes.model_copy(update={"current_mode_id": value})
        else:
            params: dict[str, Any] = {"sessionId": session.id, "configId": config_id}
            params["value"] = value
            if isinstance(value, bool):
                params["type"] = "boolean"
            result = await session.agent._request(p.Method.SESSION_SET_CONFIG_OPTION, params)
            parsed = parse(session.agent, v1.V1SetSessionConfigOptionResponse, result)
            translator.session_setup(None, parsed.config_options)
        return session._set_config_options(translator.options())

    def can_close(self) -> bool:
        """Whether the agent advertised ``session/close``."""
        return can(self.session.agent, "close")


async def initialize(agent: Agent) -> None:
    """A v1 ``initialize`` (nothing advertised: no client file system, no terminals)."""
    params = {"protocolVersion": v1.PROTOCOL_VERSION, **v1_client_fields(agent)}
    try:
        result = await agent.connection.request(p.Method.INITIALIZE, params)
    except RpcError as exc:
        if exc.code != p.ErrorCode.UNSUPPORTED_PROTOCOL_VERSION:
            raise
        data = exc.data if isinstance(exc.data, dict) else {}
        raise UnsupportedProtocolVersion(
            f"the agent does not support ACP v1 either: {exc.message}"
            f" (it supports {data.get('supported')!r})",
            supported=data.get("supported"),
        ) from exc
    version = result.get("protocolVersion") if isinstance(result, dict) else None
    if version != v1.PROTOCOL_VERSION:
        raise UnsupportedProtocolVersion(
            f"the agent answered protocol version {version!r} to a v1 initialize",
            answered=result if not isinstance(result, dict) else version,
        )
    adopt(agent, result)


def adopt(agent: Agent, result: dict[str, Any]) -> None:
    """Speak v1 from here on, with what the v1 ``initialize`` answer says."""
    try:
        response = parse(agent, v1.V1InitializeResponse, result)
    except ValidationError as exc:
        raise UnsupportedProtocolVersion(
            f"the agent's v1 initialize body is malformed ({first_error(exc)})",
            answered=result,
        ) from exc
    if response.protocol_version != v1.PROTOCOL_VERSION:
        agent._problem(
            f"the agent answered protocol version {response.protocol_version} with a v1"
            " body: speaking v1",
            "not_acp",
        )
    agent.info = response.agent_info
    agent.v1_capabilities = response.agent_capabilities or v1.V1AgentCapabilities()
    agent.auth_methods = []
    for raw in response.auth_methods or []:
        wire = {"type": "agent"} | {("methodId" if k == "id" else k): v for k, v in raw.items()}
        try:
            agent.auth_methods.append(auth_method_adapter().validate_python(wire))
        except ValidationError as exc:
            agent._problem(f"malformed v1 auth method ignored: {first_error(exc)}")
    agent.protocol_version = v1.PROTOCOL_VERSION
    if agent.connection.fast_notifications is not None:  # (a test may have turned it off)
        agent.connection.set_fast_notifications(
            decode_v1_hot_line, functools.partial(on_hot_updates, agent)
        )


def on_hot_updates(agent: Agent, messages: list[dict[str, Any]]) -> None:
    """Consecutive v1 ``session/update`` lines of a v1 hot shape (``_hotpath.is_v1_hot_update``),
    in order: what `V1Session.apply` does with each, without the v1 models, and without the v2
    ones unless someone would see them (a listener, or a live iterator of the turn): a text
    chunk goes to the message's text, terminal output to the terminal's bytes (neither makes
    a problem; a run of one call's output to one terminal in one step), and the turn's replay
    keeps what makes their models."""
    sessions = agent.sessions
    index, count = 0, len(messages)
    while index < count:
        params = messages[index]["params"]
        found = sessions.get(params["sessionId"])
        dialect = None if found is None else found._v1
        if dialect is None:
            agent._dispatch_update(params)  # (held for a session being opened, or refused)
            index += 1
            continue
        raw = params["update"]
        tag = raw["sessionUpdate"]
        if tag == "tool_call_update":
            index = _terminal_outputs(dialect, messages, index)
            continue
        index += 1
        # A text chunk (inline: a flood of message chunks comes this way, one by one).
        session = dialect.session
        turn = session.turn
        role = _ROLES[tag]
        content = raw["content"]
        message_id = dialect.translator.message_id(role, raw.get("messageId"))
        if session._listeners or (turn is not None and turn._iterated and turn._streams):
            wire = {"sessionUpdate": tag, "messageId": message_id, "content": content}
            session._apply(p.parse_session_update(wire))
            continue
        session.state.apply_text_chunk(role, message_id, content["text"])
        if turn is not None and not turn._ended:
            turn._replay.push_lazy((_text_update, tag, message_id, content))
            _turn_moved(session, turn)


def _terminal_outputs(dialect: V1Session, messages: list[dict[str, Any]], start: int) -> int:
    """The terminal output of ``messages[start]`` (a ``tool_call_update`` of ``_meta`` output
    alone) and of the ones right after it of the same session, call and terminal; returns the
    index after the last one taken. (A flood comes this way: one loop, no call per line.)"""
    session = dialect.session
    session_id = session.id
    call_id = terminal_id = ""
    metas: list[dict[str, Any]] = []
    datas: list[bytes] = []
    end, count = start, len(messages)
    while end < count:
        params = messages[end]["params"]
        update = params["update"]
        if params["sessionId"] != session_id or update["sessionUpdate"] != "tool_call_update":
            break
        meta = update["_meta"]
        output = meta.get("terminal_output")  # (or, its one other name)
        if output is None:
            output = meta.get("terminal_output_delta")
        found = output.get("terminal_id")
        if found is None:
            found = output.get("terminalId")
        if metas:
            if update["toolCallId"] != call_id or found != terminal_id:
                break
        else:
            call_id, terminal_id = update["toolCallId"], found
            if not found or not dialect.translator.hot_meta_output(call_id, found):
                dialect.apply(update)  # (its first output, or a command to name its terminal)
                return start + 1
            turn = session.turn
            if session._model_listeners or (turn is not None and turn._iterated and turn._streams):
                patch = {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "_meta": meta}
                session._apply(p.parse_session_update(patch))
                session._apply(_output_chunk(found, terminal_bytes(output["data"])))
                return start + 1
        metas.append(meta)
        datas.append(terminal_bytes(output["data"]))
        end += 1
    # Nobody needs the models: a `terminal_chunks` listener (a cell's) gets the bytes as a
    # `TerminalChunk`, as it gets a v2 chunk (the `_meta` patch only names the bytes'
    # terminal: as a v2 agent's output, it is not an update a listener is told about).
    session.state.apply_terminal_outputs(call_id, metas, terminal_id, datas)
    turn = session.turn
    if turn is not None and not turn._ended:
        turn._replay.push_lazy_pairs(
            [(_meta_update, call_id, meta) for meta in metas],
            ((_output_chunk, terminal_id, data) for data in datas),
            [4 * ((len(data) + 2) // 3) for data in datas],  # (the length of its base64)
        )
        _turn_moved(session, turn)
    if session._chunk_listeners:
        session._tell_chunks(terminal_id, None, datas)
    return end


def _turn_moved(session: Session, turn: Turn) -> None:
    """What `Session._apply` does after the state, but for the replay and the streams."""
    waiter = turn._waiter
    if waiter is not None:
        turn._waiter = None
        waiter.set()
    if turn.state.done:  # (no update of these ends a turn: as `_apply`, all the same)
        session._end_turn(turn)


def parse(agent: Agent, model: type[_M], result: Any) -> _M:
    """A v1 answer, read as leniently as the v1 schema says; what it left out is reported."""
    parsed, notes = v1.parse_v1_response(model, result)
    for note in notes:
        agent._problem(f"v1 {model.__name__.removeprefix('V1')}: {note}")
    return parsed


def can(agent: Agent, what: str) -> bool:
    """Whether a v1 agent advertised ``sessionCapabilities.<what>`` (or ``loadSession``)."""
    caps = agent.v1_capabilities
    if caps is None:
        return False
    if what == "load":
        return bool(caps.load_session)
    sessions = caps.session_capabilities
    return sessions is not None and getattr(sessions, what, None) is not None


async def new_session(agent: Agent, path: str, servers: list[dict[str, Any]]) -> Session:
    result = await agent._request(p.Method.SESSION_NEW, {"cwd": path, "mcpServers": servers})
    parsed = parse(agent, v1.V1NewSessionResponse, result)
    session = Session(agent, parsed.session_id, path)
    session._v1 = V1Session(session)
    session.config_options = session._v1.translator.session_setup(
        parsed.modes, parsed.config_options
    )
    return session


async def resume(
    agent: Agent, session: Session, replay: bool, servers: list[dict[str, Any]]
) -> None:
    """v1 resume: ``session/load`` (the agent replays the history as updates first) or,
    without ``replay``, ``session/resume`` when the agent has it."""
    dialect = session._v1 = session._v1 or V1Session(session)
    params: dict[str, Any] = {"sessionId": session.id, "cwd": session.cwd}
    if not replay and can(agent, "resume"):
        if servers:
            params["mcpServers"] = servers
        result = await agent._request(p.Method.SESSION_RESUME, params)
        parsed: v1.V1LoadSessionResponse = parse(agent, v1.V1ResumeSessionResponse, result)
    elif can(agent, "load"):
        if session.state.messages or session.state.tool_calls:
            # The agent replays the whole history: into a fresh state, not on top of it.
            if session.turn is not None and not session.turn.done:
                raise TurnInProgress(f"session {session.id} has a prompt in flight")
            session.state = SessionState(session.id)
            dialect = session._v1 = V1Session(session)
        params["mcpServers"] = servers
        result = await agent._request("session/load", {**params})
        parsed = parse(agent, v1.V1LoadSessionResponse, result or {})
    else:
        raise AcpError("this v1 agent can neither load nor resume sessions")
    setup = dialect.translator.session_setup
    session.config_options = setup(parsed.modes, parsed.config_options)
