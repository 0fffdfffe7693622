"""v1 -> v2: each v1 session update (and permission request) as the v2 models the reducer and
the cards already take. Pure: one `V1Translator` per session keeps the little state v1 leaves
to the client (which message a chunk without ``messageId`` belongs to, the modes).

* chunks become v2 chunks of one message: the v1 ``messageId`` when sent, else one id per run
  of same-role chunks (anything else in between, or a new turn, starts a new message);
* ``tool_call`` becomes a v2 ``tool_call_update`` that sets every field (a creation),
  ``tool_call_update`` one that patches only what was sent; a v1 ``diff`` (whole texts)
  becomes a v2 diff with ``changes`` and a ``git_patch`` computed here;
* ``plan`` becomes the items plan ``plan``; commands get their ``type``; v1 modes
  (``modes`` of session/new, ``current_mode_update``) become a ``mode`` select config
  option next to the agent's own config options;
* a turn's end (the ``session/prompt`` response) becomes the idle ``state_update``;
* the terminal extension in a tool call's ``_meta`` (``terminal_info``, ``terminal_output`` or
  ``terminal_output_delta``, ``terminal_exit``; claude-agent-acp and older codex-acp send it to a
  client that sets ``_meta.terminal_output`` in its capabilities) becomes v2 display terminals: a
  ``terminal_update`` when it first appears, and again when the tool call's
  ``rawInput.command`` comes (claude sends the input after the first report), a
  ``terminal_output_chunk`` per output (text, appended; a lone line feed becomes CR LF, as a
  terminal expects, since this text never went through a PTY), a ``terminal_update`` with
  ``exitStatus`` at the exit. Both spellings of the keys in use are read (``terminal_id`` /
  ``terminalId``, ``exit_code`` / ``exitCode``).
"""

from __future__ import annotations

import base64
import difflib
import re
from collections.abc import Mapping
from typing import Any

from pydantic import ConfigDict, TypeAdapter

from .._base import UnknownVariant, WireModel, is_set
from .._config import SessionConfigOption, UnknownSessionConfigOption
from .._permission import RequestPermissionRequest
from .._terminal import TerminalExitStatus
from .._tool_calls import ToolCallContent, ToolCallFields, raw_input_command
from .._updates import (
    IdleStateUpdate,
    SessionUpdate,
    TerminalOutputChunk,
    TerminalUpdate,
    session_update_adapter,
)
from ._models import (
    V1AgentMessageChunk,
    V1AgentThoughtChunk,
    V1AvailableCommandsUpdate,
    V1ConfigOptionUpdate,
    V1CurrentModeUpdate,
    V1Diff,
    V1Plan,
    V1PromptResponse,
    V1RequestPermissionRequest,
    V1SessionConfigOption,
    V1SessionModeState,
    V1SessionUpdate,
    V1ToolCall,
    V1ToolCallFields,
    V1ToolCallUpdate,
    V1UserMessageChunk,
)

__all__ = ["MODE_CONFIG_ID", "PLAN_ID", "V1Translator", "diff_patch", "terminal_bytes"]

PLAN_ID = "plan"
"""The plan id a v1 session's one plan gets."""
MODE_CONFIG_ID = "mode"
"""The config option id v1 modes are shown as (``session/set_mode`` sets it)."""

_TOOL_FIELDS = ("title", "name", "kind", "status", "locations", "raw_input", "raw_output")
_CHUNK_ROLES: dict[type[WireModel], str] = {
    V1UserMessageChunk: "user",
    V1AgentMessageChunk: "agent",
    V1AgentThoughtChunk: "thought",
}
_META_OUTPUT_KEYS = ("terminal_output", "terminal_output_delta")
_LONE_LF = re.compile(r"(?<!\r)\n")
# Built on first use, as the models are (``defer_build``): not at import.
_DEFER = ConfigDict(defer_build=True)
_content_adapter: TypeAdapter[ToolCallContent] = TypeAdapter(ToolCallContent, config=_DEFER)
_config_adapter: TypeAdapter[SessionConfigOption] = TypeAdapter(SessionConfigOption, config=_DEFER)
_v1_config_adapter: TypeAdapter[V1SessionConfigOption] = TypeAdapter(
    V1SessionConfigOption, config=_DEFER
)


def diff_patch(path: str, old_text: str | None, new_text: str) -> str:
    """A ``git_patch`` of one file, from its whole old and new texts."""
    old = [] if old_text is None else old_text.splitlines(keepends=True)
    new = new_text.splitlines(keepends=True)
    name = path
    head = [f"diff --git a/{name} b/{name}\n"]
    if old_text is None:
        head.append("new file mode 100644\n")
    body: list[str] = []
    for line in difflib.unified_diff(
        old,
        new,
        "/dev/null" if old_text is None else f"a/{name}",
        f"b/{name}",
        n=3,
    ):
        if line.startswith(("---", "+++")):
            body.append(line if line.endswith("\n") else line + "\n")
        elif line.endswith("\n"):
            body.append(line)
        else:
            body.append(line + "\n\\ No newline at end of file\n")
    return "".join(head + body)


def _content(item: Any) -> ToolCallContent:
    if isinstance(item, V1Diff):
        operation = "add" if item.old_text is None else "modify"
        wire: dict[str, Any] = {
            "type": "diff",
            "changes": [{"operation": operation, "path": item.path, "fileType": "text"}],
            "patch": {
                "format": "git_patch",
                "text": diff_patch(item.path, item.old_text, item.new_text),
            },
        }
        if item.meta is not None:
            wire["_meta"] = item.meta
        return _content_adapter.validate_python(wire)
    return item  # type: ignore[no-any-return]  # content and terminal: the v2 models already


def tool_call_fields(call: V1ToolCallFields | V1ToolCall, *, create: bool) -> dict[str, Any]:
    """The v2 wire fields of a v1 tool call: all of them when ``create`` (what it leaves out
    takes its default), else those it sent with a value (v1 reads null as unchanged)."""
    wire: dict[str, Any] = {"toolCallId": call.tool_call_id}
    for name in _TOOL_FIELDS:
        # an update's null is v1's "unchanged" (as omitted), never a v2 clear
        if create or (is_set(call, name) and getattr(call, name) is not None):
            value = getattr(call, name)
            key = {"raw_input": "rawInput", "raw_output": "rawOutput"}.get(name, name)
            if isinstance(value, list):
                value = [v.to_wire() if isinstance(v, WireModel) else v for v in value]
            wire[key] = value
    if create and call.status is None:
        wire["status"] = "pending"
    if create or (is_set(call, "content") and call.content is not None):
        if call.content is None:
            wire["content"] = [] if create else None
        else:
            wire["content"] = [_wire(_content(item)) for item in call.content]
    if is_set(call, "meta"):
        wire["_meta"] = call.meta
    return wire


def terminal_bytes(text: str) -> bytes:
    """The bytes a terminal gets for output text of the terminal extension: UTF-8, a lone
    line feed as CR LF (this text never went through a PTY)."""
    if "\n" in text:  # (without a CR, every LF is lone: str.replace is the same, and fast)
        text = _LONE_LF.sub("\r\n", text) if "\r" in text else text.replace("\n", "\r\n")
    return text.encode("utf-8", "replace")


def _terminal_id(value: Any) -> str | None:
    """The terminal id of a ``_meta`` terminal entry (``terminal_id`` or ``terminalId``)."""
    if not isinstance(value, dict):
        return None
    found = value.get("terminal_id", value.get("terminalId"))
    return found if isinstance(found, str) and found else None


def _wire(model: Any) -> Any:
    return model.to_wire() if isinstance(model, WireModel | UnknownVariant) else model


class V1Translator:
    """Translates one v1 session's traffic; see the module docstring."""

    def __init__(self) -> None:
        self._serial = 0
        self._run: tuple[str, str] | None = None  # (role, message id) of the open chunk run
        self.modes: V1SessionModeState | None = None
        self.config_options: list[SessionConfigOption] = []  # the agent's own, in v2 form
        self._commands: dict[str, str] = {}  # tool call id -> its rawInput.command
        self._meta_terminals: dict[str, str] = {}  # terminal id -> its tool call's id
        self._named: set[str] = set()  # terminal ids whose command has been given
        # (tool call id, terminal id) pairs `meta_output_ready` said yes to, until the next
        # tool call update that may change its answer
        self._ready: set[tuple[str, str]] = set()

    # -- turns and sessions ---------------------------------------------------------------
    def begin_turn(self) -> None:
        """A prompt is being sent: the next chunk starts a new message."""
        self._run = None

    def session_setup(self, modes: V1SessionModeState | None, options: list[Any] | None) -> Any:
        """The ``modes`` / ``configOptions`` of session/new or session/load: the v2 config
        options to show (the mode select first), or None when there are none."""
        if modes is not None:
            self.modes = modes
        if options is not None:
            self.config_options = [self._config_option(o) for o in options]
        return self.options()

    def options(self) -> list[SessionConfigOption]:
        """The session's config options in v2 form, the v1 modes as a ``mode`` select."""
        found = list(self.config_options)
        modes = self.modes
        taken = {getattr(o, "config_id", None) for o in found}
        if modes is not None and modes.available_modes and MODE_CONFIG_ID not in taken:
            select = {
                "type": "select",
                "configId": MODE_CONFIG_ID,
                "name": "Mode",
                "category": "mode",
                "currentValue": modes.current_mode_id,
                "options": [
                    {"value": m.id, "name": m.name}
                    | ({"description": m.description} if m.description is not None else {})
                    for m in modes.available_modes
                ],
            }
            found.insert(0, _config_adapter.validate_python(select))
        return found

    def end_turn(self, response: V1PromptResponse) -> IdleStateUpdate:
        """The ``session/prompt`` response as the idle state update that ends the turn."""
        self._run = None
        return IdleStateUpdate(stop_reason=response.stop_reason)

    # -- updates ----------------------------------------------------------------------------
    def update(self, update: V1SessionUpdate) -> list[SessionUpdate]:
        """The v2 updates that stand for one v1 update (empty when there is nothing to show)."""
        role = _CHUNK_ROLES.get(type(update))  # type: ignore[arg-type]
        if role is None:
            self._run = None
        if isinstance(update, V1UserMessageChunk | V1AgentMessageChunk | V1AgentThoughtChunk):
            return [self._chunk(update, role or "agent")]
        if isinstance(update, V1ToolCall | V1ToolCallUpdate):
            self._ready.clear()
            create = isinstance(update, V1ToolCall)
            wire = {"sessionUpdate": "tool_call_update", **tool_call_fields(update, create=create)}
            line = raw_input_command(update.raw_input)
            if line is not None:
                self._commands[update.tool_call_id] = line
            translated = [session_update_adapter.validate_python(wire)]
            translated += self._meta_terminal(update)
            translated += self._name_terminals(update.tool_call_id)
            return translated
        if isinstance(update, V1Plan):
            entries = [e.to_wire() for e in update.entries]
            plan = {"type": "items", "planId": PLAN_ID, "entries": entries}
            return [
                session_update_adapter.validate_python(
                    {"sessionUpdate": "plan_update", "plan": plan}
                )
            ]
        if isinstance(update, V1AvailableCommandsUpdate):
            commands = []
            for c in update.available_commands:
                command: dict[str, Any] = {"type": "command", **c.to_wire()}
                if c.input is not None:
                    command["input"] = {"type": "text", **c.input.to_wire()}
                commands.append(command)
            wire = {"sessionUpdate": "available_commands_update", "availableCommands": commands}
            return [session_update_adapter.validate_python(wire)]
        if isinstance(update, V1CurrentModeUpdate):
            if self.modes is not None:
                self.modes = self.modes.model_copy(
                    update={"current_mode_id": update.current_mode_id}
                )
            else:
                self.modes = V1SessionModeState.model_validate(
                    {"currentModeId": update.current_mode_id, "availableModes": []}
                )
            return self._options_update()
        if isinstance(update, V1ConfigOptionUpdate):
            self.config_options = [self._config_option(o) for o in update.config_options]
            return self._options_update()
        # session_info_update, usage_update, notice, compaction_*, unknown: the v2 models
        return [update]

    def _meta_terminal(self, call: V1ToolCall | V1ToolCallUpdate) -> list[SessionUpdate]:
        """The display-terminal updates of the terminal extension in ``call``'s ``_meta``."""
        meta = call.meta if isinstance(call.meta, dict) else None
        if not meta:
            return []
        found: list[SessionUpdate] = []

        def announce(terminal_id: str) -> None:
            if terminal_id not in self._meta_terminals:
                self._meta_terminals[terminal_id] = call.tool_call_id
                found.append(TerminalUpdate(terminal_id=terminal_id))

        info = meta.get("terminal_info")
        terminal_id = _terminal_id(info)
        if terminal_id is not None:
            announce(terminal_id)
        for key in _META_OUTPUT_KEYS:
            output = meta.get(key)
            terminal_id = _terminal_id(output)
            data = output.get("data") if isinstance(output, dict) else None
            if terminal_id is not None and isinstance(data, str):
                announce(terminal_id)
                encoded = base64.b64encode(terminal_bytes(data)).decode("ascii")
                found.append(TerminalOutputChunk(terminal_id=terminal_id, data=encoded))
        end = meta.get("terminal_exit")
        terminal_id = _terminal_id(end)
        if terminal_id is not None and isinstance(end, dict):
            announce(terminal_id)
            code = end.get("exit_code", end.get("exitCode"))
            signal = end.get("signal")
            status = TerminalExitStatus(
                exit_code=code if isinstance(code, int) and not isinstance(code, bool) else None,
                signal=signal if isinstance(signal, str) else None,
            )
            found.append(TerminalUpdate(terminal_id=terminal_id, exit_status=status))
        return found

    def _name_terminals(self, tool_call_id: str) -> list[SessionUpdate]:
        """A ``terminal_update`` with the command for each terminal of this tool call that has
        none yet, once the tool call's command is known."""
        command = self._commands.get(tool_call_id)
        if command is None:
            return []
        found: list[SessionUpdate] = []
        for terminal_id, owner in self._meta_terminals.items():
            if owner == tool_call_id and terminal_id not in self._named:
                self._named.add(terminal_id)
                found.append(TerminalUpdate(terminal_id=terminal_id, command=command))
        return found

    def _options_update(self) -> list[SessionUpdate]:
        wire = {
            "sessionUpdate": "config_option_update",
            "configOptions": [_wire(o) for o in self.options()],
        }
        return [session_update_adapter.validate_python(wire)]

    def message_id(self, role: str, sent: str | None) -> str:
        """The v2 message id of a chunk of ``role`` whose v1 ``messageId`` is ``sent``: it, when
        sent; else the open run's when it is of the same role; else a new one."""
        run = self._run
        if sent is not None:
            if run is None or run[1] != sent or run[0] != role:
                self._run = (role, sent)
            return sent
        if run is not None and run[0] == role:
            return run[1]
        self._serial += 1
        message_id = f"v1-{role}-{self._serial}"
        self._run = (role, message_id)
        return message_id

    def break_run(self) -> None:
        """An update that is not a message chunk came: the next chunk starts a new message."""
        self._run = None

    def hot_meta_output(self, tool_call_id: str, terminal_id: str) -> bool:
        """`meta_output_ready`; when it is, the update is taken as those two updates, and as
        any update that is not a message chunk, it ends the run of chunks (`break_run`)."""
        if (tool_call_id, terminal_id) in self._ready or self.meta_output_ready(
            tool_call_id, terminal_id
        ):
            self._run = None
            return True
        return False

    def meta_output_ready(self, tool_call_id: str, terminal_id: str) -> bool:
        """Whether terminal output in a ``tool_call_update`` of ``tool_call_id`` that carries
        nothing else translates to that update and one ``terminal_output_chunk`` alone: the
        terminal was announced, and no terminal of the call waits for its command."""
        if (tool_call_id, terminal_id) in self._ready:
            return True
        if terminal_id not in self._meta_terminals:
            return False
        if tool_call_id in self._commands:
            for other, owner in self._meta_terminals.items():
                if owner == tool_call_id and other not in self._named:
                    return False
        self._ready.add((tool_call_id, terminal_id))
        return True

    def _chunk(
        self, chunk: V1UserMessageChunk | V1AgentMessageChunk | V1AgentThoughtChunk, role: str
    ) -> SessionUpdate:
        message_id = self.message_id(role, chunk.message_id)
        wire = {
            "sessionUpdate": chunk.session_update,
            "messageId": message_id,
            "content": _wire(chunk.content),
        }
        if chunk.meta is not None:
            wire["_meta"] = chunk.meta
        return session_update_adapter.validate_python(wire)

    @staticmethod
    def _config_option(option: Any) -> SessionConfigOption:
        if isinstance(option, dict):
            option = _v1_config_adapter.validate_python(option)
        if isinstance(option, UnknownVariant):
            return UnknownSessionConfigOption(raw=option.raw)  # shown generically
        wire = option.to_wire()
        wire["configId"] = wire.pop("id")
        if isinstance(wire.get("options"), list):
            wire["options"] = [
                {("groupId" if k == "group" else k): v for k, v in o.items()}
                for o in wire["options"]
            ]
        return _config_adapter.validate_python(wire)

    # -- permission requests ----------------------------------------------------------------
    def permission(
        self, request: V1RequestPermissionRequest, known: Mapping[str, Any] | None = None
    ) -> RequestPermissionRequest:
        """The v2 request for a v1 one: its tool call as the ``tool_call`` subject, the title
        the tool call's (or its name, or its id), the same options.

        ``known``: the v2 wire fields of the tool call of that id that the session's updates
        reported already. The request's ``toolCall`` is a ``ToolCallUpdate`` (Mistral Vibe
        sends the id alone): what it sends wins field by field, the rest comes from ``known``,
        so the card and the policy see the title, kind and ``rawInput`` of the call."""
        call = request.tool_call
        fields = {**(known or {}), **tool_call_fields(call, create=False)}
        title = fields.get("title") or fields.get("name") or f"tool call {call.tool_call_id}"
        wire: dict[str, Any] = {
            "sessionId": request.session_id,
            "title": title,
            "subject": {"type": "tool_call", "toolCall": fields},
            "options": [o.to_wire() for o in request.options],
        }
        if request.meta is not None:
            wire["_meta"] = request.meta
        parsed = RequestPermissionRequest.model_validate(wire)
        ToolCallFields.model_validate(fields)  # (validated above as part of the subject)
        return parsed
