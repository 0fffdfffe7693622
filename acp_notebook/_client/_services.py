"""The client services of one v1 agent connection, wired to its sessions.

`AgentServices` is what ``connect(..., client_services=True)`` gives a v1 agent: client
terminals (`_terminals.ClientTerminals`) and the client file system (`_files.ClientFiles`).

* Every allow goes through the agent's permission path (``Agent._client_permission``): the
  command, the write (its diff) or the read outside the session's folder becomes a
  `PermissionDecision` of the session's current turn, decided by the session's asker (a cell's
  run: its card, its ``--allow``/``--deny`` policy) or the agent's permission handler, with the
  same fail-closed rules as an agent's own ``session/request_permission``: nothing is allowed
  after a cancel, after the turn, without anyone to ask, or but by an option of kind
  ``allow_*``.
* One allow is enough: when the agent's own permission request for a tool call whose
  ``rawInput.command`` is exactly the command a ``terminal/create`` of the same turn runs (its
  argv as a shell reads it, or the script of ``sh -c SCRIPT`` / ``bash -lc SCRIPT``, in the
  session's folder, with no variables of the agent's) was allowed, that allow answers the
  command, once: it is not asked again. The script is read so only for a real shell: a bare
  ``sh``, ``bash`` ... that the command's ``PATH`` finds in one of `SYSTEM_FOLDERS`, or a path
  into one (a file named ``bash`` elsewhere may do anything). Anything else (another command,
  another folder, added variables, a later turn, a second run) asks.
* A command that runs outside the session's folder, or with a variable no shell can name
  (`TerminalRequest.person_reasons`), is decided by a person: neither a ``--allow`` rule nor an
  earlier allow answers it (its decision's ``rules_may_allow`` is False); a ``--deny`` rule
  still does.
* A client terminal is shown as the agent-owned terminals of v2 are: a ``terminal_update`` when
  it starts (the command line, the cwd, the size), a ``terminal_output_chunk`` per read of its
  PTY, a ``terminal_update`` with ``exitStatus`` when it ends, each applied to its session's
  state (so a v1 tool call's ``terminal`` content names a terminal the state knows).
"""

from __future__ import annotations

import base64
import os
import secrets
import time
from collections.abc import Mapping
from typing import Any, Protocol

import anyio

from .._protocol import (
    RequestPermissionRequest,
    SessionUpdate,
    TerminalCancelCapabilities,
    TerminalCapabilities,
    TerminalExitStatus,
    TerminalOutputChunk,
    TerminalSize,
    TerminalUpdate,
)
from .._protocol._permission import tool_call_command
from . import _files, _terminals
from ._files import ClientFiles, ReadRequest, WriteRequest
from ._permission import PermissionDecision
from ._terminals import ClientTerminals, TerminalExit, TerminalRequest


class _Session(Protocol):
    @property
    def cwd(self) -> str: ...
    @property
    def closed(self) -> bool: ...
    @property
    def turn(self) -> Any: ...  # the client Turn under way, if any
    def _apply(self, update: SessionUpdate) -> None: ...


class _Agent(Protocol):
    """What the services need of the client's ``Agent`` (which holds them)."""

    @property
    def sessions(self) -> Mapping[str, _Session]: ...
    async def _client_permission(
        self,
        request: RequestPermissionRequest,
        earlier: PermissionDecision | None = None,
        *,
        rules_may_allow: bool = True,
        asked_at: float | None = None,
    ) -> PermissionDecision: ...


__all__ = [
    "METHODS",
    "SYSTEM_FOLDERS",
    "WRITE_DIFF_CHARS",
    "WRITE_DIFF_SECONDS",
    "AgentServices",
    "file_permission",
]

#: A write's card gets a diff only when the old and the new text together have at most this
#: many characters; a larger write shows "old X bytes, new Y bytes" instead. difflib's time
#: grows with the product of the line counts: one 59 MB write held the notebook for 73 s and
#: put 243 MB into widget state. The card shows a few hundred lines of a diff at most anyway.
WRITE_DIFF_CHARS = 500_000
#: ... and only when it is made within this many seconds (in a worker thread, never on the
#: I/O thread); else the summary again. ``--timeout`` counts from the write's arrival, so the
#: time spent here is part of it.
WRITE_DIFF_SECONDS = 2.0

METHODS = _terminals.METHODS | _files.METHODS

_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh"})
#: Folders only an administrator can write to: a shell there is the system's own, so the
#: script of ``bash -c SCRIPT`` is what it runs (one allow may answer it)
SYSTEM_FOLDERS = frozenset({"/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin"})
_SCRIPT_FLAGS = frozenset({"-c", "-lc", "-cl"})

_OPTIONS = [
    {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
]


def diff_patch(path: str, old_text: str | None, new_text: str) -> str:
    """``_protocol._v1.diff_patch``, imported on the first write shown: the v1 layer's models
    are not needed before (a v2 agent's connection never needs them)."""
    from .._protocol._v1 import diff_patch as patch

    return patch(path, old_text, new_text)


def write_patch(request: WriteRequest) -> str | None:
    """The write's ``git_patch`` (old text against new), or None when the texts are too large
    for one (more than `WRITE_DIFF_CHARS` characters together). Slow: not on the I/O thread."""
    old = request.old_text or ""
    if len(old) + len(request.new_text) > WRITE_DIFF_CHARS:
        return None
    return diff_patch(request.resolved, request.old_text, request.new_text)


def _size(text: str) -> str:
    size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
    return f"{size:,} byte{'' if size == 1 else 's'}"


def write_summary(request: WriteRequest) -> str:
    """What a write's card says instead of a diff: the sizes of the old and the new text."""
    old = "no file yet" if request.old_text is None else f"old {_size(request.old_text)}"
    return (
        f"{old}, new {_size(request.new_text)}: too large to show a diff (a diff is made for"
        f" at most {WRITE_DIFF_CHARS:,} characters within {WRITE_DIFF_SECONDS:g} s)"
    )


def _summary_content(summary: str) -> dict[str, Any]:
    return {"type": "content", "content": {"type": "text", "text": summary}}


async def write_content(request: WriteRequest) -> dict[str, Any]:
    """The content a write's card shows: its diff, made in a worker thread within
    `WRITE_DIFF_SECONDS`, else the summary of `write_summary` (a text block)."""
    patch: str | None = None
    with anyio.move_on_after(WRITE_DIFF_SECONDS):
        patch = await anyio.to_thread.run_sync(write_patch, request, abandon_on_cancel=True)
    if patch is None:
        return _summary_content(await anyio.to_thread.run_sync(write_summary, request))
    operation = "add" if request.old_text is None else "modify"
    return {
        "type": "diff",
        "changes": [{"operation": operation, "path": request.resolved, "fileType": "text"}],
        "patch": {"format": "git_patch", "text": patch},
    }


def file_permission(
    request: ReadRequest | WriteRequest, content: dict[str, Any] | None = None
) -> RequestPermissionRequest:
    """A read outside the session's folder (or of a file that may be one: `ReadRequest.why`)
    or a write, as a tool-call permission request
    (options ``allow`` and ``reject``): a write carries ``content`` (`write_content`: its diff,
    old text against new, or its sizes), which the card renders as it renders an agent's
    edit. Without ``content``, a write shows its sizes only."""
    call_id = f"fs-{secrets.token_hex(6)}"
    notes: list[str] = []
    if isinstance(request, WriteRequest):
        title = f"Write {request.resolved}"
        if content is None:
            content = _summary_content(write_summary(request))
        call: dict[str, Any] = {
            "toolCallId": call_id,
            "title": title,
            "kind": "edit",
            "status": "pending",
            "locations": [{"path": request.resolved}],
            "content": [content],
        }
        if not request.inside_cwd:
            notes.append(f"outside the session's folder {request.cwd}")
        if request.new_dirs:
            notes.append("creates " + ", ".join(request.new_dirs))
    else:
        title = f"Read {request.resolved}"
        call = {
            "toolCallId": call_id,
            "title": title,
            "kind": "read",
            "status": "pending",
            "locations": [{"path": request.resolved}],
        }
        notes.append(request.why)
    wire: dict[str, Any] = {
        "sessionId": request.session_id,
        "title": title,
        "subject": {"type": "tool_call", "toolCall": call},
        "options": _OPTIONS,
    }
    if request.path != request.resolved:
        notes.insert(0, f"asked as {request.path}")
    if notes:
        wire["description"] = "; ".join(notes)
    return RequestPermissionRequest.model_validate(wire)


class AgentServices:
    """The ``terminal/*`` and ``fs/*`` methods of one agent connection (see the module docs).
    ``terminals`` must be entered (``async with``) while the connection is open."""

    def __init__(self, agent: _Agent, **terminal_options: Any) -> None:
        self._agent = agent
        self.terminals = ClientTerminals(
            self._approve_command,
            cwd_of=self._cwd_of,
            on_output=self._on_output,
            on_exit=self._on_exit,
            **terminal_options,
        )
        self.files = ClientFiles(self._approve_file, cwd_of=self._cwd_of)
        #: terminal id -> the request that was allowed for it
        self.allowed: dict[str, TerminalRequest] = {}
        self._shown: set[str] = set()
        #: the agent's own allowed requests that name a command, not yet used by a terminal
        self._earlier: list[PermissionDecision] = []

    def _cwd_of(self, session_id: str) -> str | None:
        session = self._agent.sessions.get(session_id)
        return None if session is None or session.closed else session.cwd

    async def handle(self, method: str, params: Any) -> dict[str, Any]:
        if method in _files.METHODS:
            return await self.files.handle(method, params)
        result = await self.terminals.handle(method, params)
        if method == "terminal/create":
            self._show(str(result["terminalId"]))
        return result

    # -- approvals: the permission path ----------------------------------------------------

    def note_agent_decision(self, decision: PermissionDecision) -> None:
        """The agent's own permission request was decided: keep an allow that names a command
        (see the module docs), for this turn only."""
        if decision.allowed and tool_call_command(decision.request) is not None:
            self._earlier.append(decision)

    def _take_earlier(self, request: TerminalRequest) -> PermissionDecision | None:
        """The agent's allowed request of this turn for exactly ``request``'s command, taken
        (used once); None when there is none."""
        session = self._agent.sessions.get(request.session_id)
        turn = session.turn if session is not None else None
        self._earlier = [d for d in self._earlier if d.turn is turn and turn is not None]
        if session is None or request.env or request.cwd != os.path.realpath(session.cwd):
            return None
        runs = {request.command_line()}
        if (
            len(request.args) == 2
            and request.args[0] in _SCRIPT_FLAGS
            and self._real_shell(request)
        ):
            runs.add(request.args[1])
        for decision in self._earlier:
            if (
                decision.request.session_id == request.session_id
                and tool_call_command(decision.request) in runs
            ):
                self._earlier.remove(decision)
                return decision
        return None

    def _real_shell(self, request: TerminalRequest) -> bool:
        """Whether ``request``'s program is a shell of the system: a bare shell name that its
        ``PATH`` finds in `SYSTEM_FOLDERS` first, or an absolute path into one of them."""
        command = request.command
        if os.path.basename(command) not in _SHELLS:
            return False
        if "/" in command and not os.path.isabs(command):
            return False  # relative to the cwd: whatever the agent put there
        found = self.terminals.program_file(request)
        return found is not None and os.path.dirname(found) in SYSTEM_FOLDERS

    async def _approve_command(self, request: TerminalRequest) -> bool:
        person = bool(request.person_reasons())
        earlier = None if person else self._take_earlier(request)
        decision = await self._agent._client_permission(
            request.permission_request(), earlier, rules_may_allow=not person
        )
        if decision.allowed:
            self.allowed[request.terminal_id] = request
        return decision.allowed

    async def _approve_file(self, request: ReadRequest | WriteRequest) -> bool:
        arrived = time.time()  # --timeout counts from here, the diff's time included
        content = await write_content(request) if isinstance(request, WriteRequest) else None
        permission = file_permission(request, content)
        decision = await self._agent._client_permission(permission, asked_at=arrived)
        return decision.allowed

    # -- output: the session's state -------------------------------------------------------

    def _apply(self, terminal_id: str, update: SessionUpdate) -> None:
        request = self.allowed.get(terminal_id)
        session = self._agent.sessions.get(request.session_id) if request else None
        if session is not None:
            session._apply(update)

    def _show(self, terminal_id: str) -> None:
        """The terminal's first update (once): what runs, where, how large."""
        request = self.allowed.get(terminal_id)
        if request is None or terminal_id in self._shown:
            return
        self._shown.add(terminal_id)
        update = TerminalUpdate(
            terminal_id=terminal_id,
            command=request.command_line(),
            cwd=request.cwd,
            size=TerminalSize(cols=self.terminals.cols, rows=self.terminals.rows),
            capabilities=TerminalCapabilities(cancel=TerminalCancelCapabilities()),
        )
        self._apply(terminal_id, update)

    def _on_output(self, terminal_id: str, data: bytes) -> None:
        self._show(terminal_id)
        chunk = TerminalOutputChunk(
            terminal_id=terminal_id, data=base64.b64encode(data).decode("ascii")
        )
        self._apply(terminal_id, chunk)

    def _on_exit(self, terminal_id: str, status: TerminalExit) -> None:
        self._show(terminal_id)
        exit_status = TerminalExitStatus(exit_code=status.exit_code, signal=status.signal)
        self._apply(terminal_id, TerminalUpdate(terminal_id=terminal_id, exit_status=exit_status))

    # -- stopping ------------------------------------------------------------------------

    def owns(self, terminal_id: str) -> bool:
        """Whether ``terminal_id`` is one of these client terminals (not the agent's)."""
        return terminal_id in self.allowed

    async def kill(self, session_id: str, terminal_id: str) -> None:
        """Stop one client terminal's command (the view's Stop button); one the agent has
        released already is gone: nothing to do."""
        if terminal_id in self.terminals.terminal_ids:
            await self.terminals.kill({"sessionId": session_id, "terminalId": terminal_id})

    async def kill_session(self, session_id: str) -> None:
        await self.terminals.kill_session(session_id)

    async def release_session(self, session_id: str) -> None:
        await self.terminals.release_session(session_id)
