"""A session's mode and configuration options, as facts: what they are, whether the mode lets
the agent act without asking, and which value a person's word picks.

The mode is the session's config option of category ``mode`` (a v2 agent's, or a v1 agent's
modes, which the client turns into the option ``mode``), else the option whose id is ``mode``.
Whether a mode acts without asking is not in the protocol: it comes from what this project
knows of the agent (`_registry.NOTES`), and from agents known never to ask.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .._protocol._visible import visible_text as visible
from ._errors import NoSuchConfigOption, NoSuchConfigValue
from ._facts import choices

MODE = "mode"
"""The key a person names the mode by, whatever its option's id (`mode_option`)."""


@dataclass(frozen=True)
class ConfigFact:
    """One config option of a session: ``current`` (a value, or a boolean) and, for a select,
    its ``choices`` as ``(name, value)`` pairs. Names are visible text."""

    config_id: str
    name: str
    category: str | None
    current: str | bool
    current_name: str
    choices: tuple[tuple[str, str], ...]
    boolean: bool = False


@dataclass(frozen=True)
class ModeFact:
    """The session's mode and, when it lets the agent act without asking, what it does then."""

    option: ConfigFact
    unasked: str | None


def config_facts(options: Sequence[dict[str, Any]]) -> list[ConfigFact]:
    """The options (wire dicts) as facts; one that is neither a select nor a boolean is left
    out (it cannot be set from here)."""
    facts = []
    for option in options:
        config_id = option.get("configId")
        kind = option.get("type")
        current = option.get("currentValue")
        if not isinstance(config_id, str) or kind not in ("select", "boolean"):
            continue
        listed = tuple(choices(option)) if kind == "select" else ()
        if kind == "boolean":
            current = bool(current)
            current_name = "on" if current else "off"
        else:
            current = str(current)
            current_name = next((n for n, v in listed if v == current), visible(current))
        category = option.get("category")
        facts.append(
            ConfigFact(
                config_id=config_id,
                name=visible(str(option.get("name") or config_id)),
                category=category if isinstance(category, str) else None,
                current=current,
                current_name=current_name,
                choices=listed,
                boolean=kind == "boolean",
            )
        )
    return facts


def find_option(facts: Sequence[ConfigFact], key: str) -> ConfigFact:
    """The option a person names by ``key``: `MODE`, a config id, or its name (any case).
    Raises `NoSuchConfigOption` with the ids there are."""
    if key == MODE:
        found = mode_option(facts)
        if found is not None:
            return found
    for fact in facts:
        if key in (fact.config_id, fact.name) or key.lower() == fact.name.lower():
            return fact
    raise NoSuchConfigOption(key, [f.config_id for f in facts])


def mode_option(facts: Sequence[ConfigFact]) -> ConfigFact | None:
    return next((f for f in facts if f.category == MODE), None) or next(
        (f for f in facts if f.config_id == MODE), None
    )


def pick_value(fact: ConfigFact, word: str) -> str | bool:
    """The value ``word`` names: a choice's value or name (any case; ``on``/``off``, ``true``/
    ``false`` for a boolean). Raises `NoSuchConfigValue` with the choices."""
    if fact.boolean:
        lowered = word.lower()
        if lowered in ("on", "true", "yes", "1"):
            return True
        if lowered in ("off", "false", "no", "0"):
            return False
        raise NoSuchConfigValue(fact.config_id, word, ["on", "off"])
    for _, value in fact.choices:
        if word == value:
            return value
    for name, value in fact.choices:
        if word.lower() in (value.lower(), name.lower()):
            return value
    raise NoSuchConfigValue(fact.config_id, word, [v for _, v in fact.choices])


def unasked_in(agent_id: str | None, value: str) -> str | None:
    """What the agent does without asking in mode ``value``, or None (it asks, or nothing is
    known of it)."""
    from ._registry import notes

    if agent_id is None:
        return None
    said = notes(agent_id)
    return said.unasked_modes.get(value) or said.unasked


def mode_fact(options: Sequence[dict[str, Any]], agent_id: str | None) -> ModeFact | None:
    """The session's mode, None when it has none. An agent known to act without asking in
    any mode has a `ModeFact` whose option is its mode, or none: see `unasked_always`."""
    option = mode_option(config_facts(options))
    if option is None:
        return None
    return ModeFact(option, unasked_in(agent_id, str(option.current)))


def unasked_always(agent_id: str | None) -> str | None:
    """What an agent does without asking whatever its mode (pi, Hermes, OpenCode unless
    configured), or None."""
    from ._registry import notes

    return notes(agent_id).unasked if agent_id is not None else None
