"""Scripted turns for deterministic notebooks and tests (``--scenario FILE``).

A scenario is JSONL, one object per line (blank lines and lines starting with ``#`` are
skipped). Each object has exactly one of these keys:

``{"update": {...}}``
    send this ``session/update`` (the ``update`` object; the session id is added).
``{"permission": {"title", "options", "subject"?}, "expect": [kinds]?}``
    send ``session/request_permission``. With ``expect`` (option kinds such as
    ``["allow_once", "allow_always"]``) any other answer ends the turn with stop reason
    ``_scenario_mismatch``.
``{"sleep": seconds}``
    pause.
``{"script": "prompt text"}``
    run this text as if it were the prompt (commands, file writes, messages).
``{"stopReason": "..."}``
    end the turn now with this stop reason.
``{"turn": {}}``
    start the script of the next prompt. Prompt *n* plays turn *n* modulo the number of turns.

Strings may contain ``${cwd}`` and ``${sessionId}``, replaced when played.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "Permission",
    "Scenario",
    "ScenarioError",
    "ScenarioStep",
    "Script",
    "SendUpdate",
    "Sleep",
    "Stop",
    "load_scenario",
    "parse_scenario",
    "substitute",
]


class ScenarioError(ValueError):
    """The scenario file is malformed (the message names the line)."""


@dataclass(frozen=True)
class SendUpdate:
    update: dict[str, Any]


@dataclass(frozen=True)
class Permission:
    params: dict[str, Any]
    expect: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Sleep:
    seconds: float


@dataclass(frozen=True)
class Script:
    text: str


@dataclass(frozen=True)
class Stop:
    reason: str


ScenarioStep = SendUpdate | Permission | Sleep | Script | Stop


@dataclass
class Scenario:
    turns: list[list[ScenarioStep]] = field(default_factory=list)

    def turn(self, index: int) -> list[ScenarioStep]:
        if not self.turns:
            return []
        return self.turns[index % len(self.turns)]


_KEYS = ("update", "permission", "sleep", "script", "stopReason", "turn")


def _step(obj: dict[str, Any], where: str) -> ScenarioStep | None:
    keys = [k for k in _KEYS if k in obj]
    if len(keys) != 1:
        raise ScenarioError(f"{where}: expected exactly one of {', '.join(_KEYS)}")
    key = keys[0]
    value = obj[key]
    if key == "turn":
        return None
    if key == "update":
        if not isinstance(value, dict) or not isinstance(value.get("sessionUpdate"), str):
            raise ScenarioError(f"{where}: 'update' must be an object with a sessionUpdate")
        return SendUpdate(value)
    if key == "permission":
        if not isinstance(value, dict) or not isinstance(value.get("options"), list):
            raise ScenarioError(f"{where}: 'permission' must be an object with options")
        expect = obj.get("expect")
        if expect is not None and (
            not isinstance(expect, list) or not all(isinstance(k, str) for k in expect)
        ):
            raise ScenarioError(f"{where}: 'expect' must be a list of option kinds")
        return Permission(value, tuple(expect) if expect is not None else None)
    if key == "sleep":
        if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
            raise ScenarioError(f"{where}: 'sleep' must be a non-negative number")
        return Sleep(float(value))
    if not isinstance(value, str):
        raise ScenarioError(f"{where}: '{key}' must be a string")
    return Script(value) if key == "script" else Stop(value)


def parse_scenario(text: str, name: str = "<scenario>") -> Scenario:
    scenario = Scenario()
    current: list[ScenarioStep] = []
    started = False
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        where = f"{name}:{number}"
        try:
            obj = json.loads(stripped)
        except ValueError as exc:
            raise ScenarioError(f"{where}: not JSON ({exc})") from None
        if not isinstance(obj, dict):
            raise ScenarioError(f"{where}: expected a JSON object")
        step = _step(obj, where)
        if step is None:
            if started or current:
                scenario.turns.append(current)
            current = []
            started = True
        else:
            current.append(step)
    if current or started:
        scenario.turns.append(current)
    return scenario


def load_scenario(path: Path) -> Scenario:
    return parse_scenario(path.read_text("utf-8"), str(path))


def substitute(value: Any, variables: dict[str, str]) -> Any:
    """Replace ``${name}`` in every string inside ``value`` (a JSON-like structure)."""
    if isinstance(value, str):
        for name, replacement in variables.items():
            value = value.replace("${" + name + "}", replacement)
        return value
    if isinstance(value, list):
        return [substitute(v, variables) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, variables) for k, v in value.items()}
    return value
