"""Turn the text of a prompt into the steps the embedded agent performs.

A prompt is a tiny script:

* a line starting with ``$ `` is a command;
* a fenced block with info string ``sh``, ``bash`` or ``shell`` is one command (the whole block);
* a fenced ``console`` block holds commands on its lines starting with ``$ `` (other lines, the
  expected output of a transcript, are ignored);
* a fenced block with info string ``file path=relative/path`` asks to write that file;
* a line ``@tool NAME {json arguments}`` (or ``@tool NAME key=value ...``) calls tool NAME on
  every MCP server of the session (the arguments may be left out);
* everything else is text the agent says back, one message per paragraph run.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Run", "Say", "Step", "Tool", "Write", "parse_script"]

_SHELL_FENCES = frozenset({"sh", "bash", "shell"})


@dataclass(frozen=True)
class Say:
    """Plain text the agent sends as a message."""

    text: str


@dataclass(frozen=True)
class Run:
    """A shell command to run in a PTY once the client allows it."""

    command: str


@dataclass(frozen=True)
class Write:
    """A text file to write (``path`` is as written in the prompt, not yet checked)."""

    path: str
    content: str


@dataclass(frozen=True)
class Tool:
    """An MCP tool call; ``error`` says why the line's arguments are unusable (then nothing
    is called)."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


Step = Say | Run | Write | Tool

_TOOL_LINE = re.compile(r"@tool\s+(\S+)\s*(.*)")


def _tool_line(line: str) -> Tool | None:
    found = _TOOL_LINE.fullmatch(line.strip())
    if found is None:
        return None
    name, raw = found[1], found[2].strip()
    if not raw:
        return Tool(name)
    if not raw.startswith(("{", "[")):
        return _key_values(name, raw)
    try:
        arguments = json.loads(raw)
    except ValueError as exc:
        return Tool(name, error=f"the arguments are not JSON: {exc}")
    if not isinstance(arguments, dict):
        return Tool(name, error="the arguments must be a JSON object")
    return Tool(name, arguments)


def _key_values(name: str, raw: str) -> Tool:
    """``key=value`` words (a value is read as JSON when it is JSON, else kept as text):
    ``%%acp`` interpolates ``{...}``, so in a cell this form needs no doubled braces."""
    try:
        words = shlex.split(raw)
    except ValueError as exc:
        return Tool(name, error=f"the arguments cannot be split: {exc}")
    arguments: dict[str, Any] = {}
    for word in words:
        key, sep, value = word.partition("=")
        if not sep or not key:
            return Tool(name, error=f"expected key=value or a JSON object, got {word!r}")
        try:
            arguments[key] = json.loads(value)
        except ValueError:
            arguments[key] = value
    return Tool(name, arguments)


def _fence_open(line: str) -> tuple[int, str] | None:
    """``(length, info)`` of an opening fence line (3 or more backticks, as CommonMark), or
    None: a longer fence is how text holding ``` lines of its own is fenced."""
    stripped = line.strip()
    length = len(stripped) - len(stripped.lstrip("`"))
    if length < 3:
        return None
    info = stripped[length:].strip()
    return None if "`" in info else (length, info)


def _fence_closes(line: str, length: int) -> bool:
    """Whether ``line`` closes a fence of ``length`` backticks: as many or more, nothing else."""
    stripped = line.strip()
    return len(stripped) >= length and stripped == "`" * len(stripped)


def _file_path(info: str) -> str | None:
    """Return the ``path=`` of a ``file`` info string, or None if this is not one."""
    try:
        words = shlex.split(info)
    except ValueError:
        return None
    if not words or words[0] != "file":
        return None
    for word in words[1:]:
        if word.startswith("path="):
            return word[len("path=") :]
    return None


def _command_line(line: str) -> str | None:
    if line.startswith("$ "):
        command = line[2:].strip()
        return command or None
    return None


class _Builder:
    def __init__(self) -> None:
        self.steps: list[Step] = []
        self._text: list[str] = []

    def text(self, line: str) -> None:
        self._text.append(line)

    def step(self, step: Step) -> None:
        self.flush()
        self.steps.append(step)

    def flush(self) -> None:
        text = "\n".join(self._text).strip("\n")
        self._text = []
        if text.strip():
            self.steps.append(Say(text))


def parse_script(text: str) -> list[Step]:
    """Parse prompt text into steps, in order."""
    out = _Builder()
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = _fence_open(line)
        if fence is None:
            command = _command_line(line)
            tool = _tool_line(line) if command is None else None
            if command is not None:
                out.step(Run(command))
            elif tool is not None:
                out.step(tool)
            else:
                out.text(line)
            i += 1
            continue
        # A fence: collect its body up to the closing fence (or the end of the prompt).
        length, info = fence
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not _fence_closes(lines[j], length):
            body.append(lines[j])
            j += 1
        closed = j < len(lines)
        kind = info.split(maxsplit=1)[0] if info else ""
        path = _file_path(info)
        if kind in _SHELL_FENCES:
            command = "\n".join(body).strip()
            if command:
                out.step(Run(command))
        elif kind == "console":
            for body_line in body:
                command = _command_line(body_line.lstrip())
                if command is not None:
                    out.step(Run(command))
        elif path is not None:
            content = "\n".join(body) + ("\n" if body else "")
            out.step(Write(path, content))
        else:
            out.text(line)
            for body_line in body:
                out.text(body_line)
            if closed:
                out.text(lines[j])
        i = j + 1
    out.flush()
    return out.steps
