"""Validate wire messages against the v2 JSON Schema shipped by the pinned reference SDK."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

SCHEMA_PATH = (
    Path(__file__).parent
    / "oracle"
    / "node_modules"
    / "@agentclientprotocol"
    / "sdk"
    / "schema"
    / "v2"
    / "schema.json"
)


@functools.cache
def schema() -> dict[str, Any]:
    if not SCHEMA_PATH.exists():
        raise RuntimeError(
            f"{SCHEMA_PATH} is missing: run `npm ci` (or `npm install`) in tests/oracle first"
        )
    return json.loads(SCHEMA_PATH.read_text("utf-8"))  # type: ignore[no-any-return]


@functools.cache
def validator(type_name: str) -> Draft202012Validator:
    defs = schema()["$defs"]
    if type_name not in defs:
        raise KeyError(f"no $defs/{type_name} in the v2 schema")
    return Draft202012Validator({"$ref": f"#/$defs/{type_name}", "$defs": defs})


def errors(type_name: str, instance: Any) -> list[str]:
    """Return the schema errors of ``instance`` as readable strings (empty when valid)."""
    return [
        f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}"
        for e in validator(type_name).iter_errors(instance)
    ]


def assert_valid(type_name: str, instance: Any) -> None:
    found = errors(type_name, instance)
    assert not found, f"{type_name} invalid: {found}\n{json.dumps(instance)[:2000]}"


@functools.cache
def _method_types() -> dict[tuple[str, str], str]:
    """(method, "params"|"result") -> $defs name, read from the schema's x-method annotations."""
    table: dict[tuple[str, str], str] = {}
    for name, definition in schema()["$defs"].items():
        method = definition.get("x-method")
        if not method:
            continue
        kind = "result" if name.endswith("Response") else "params"
        table[(method, kind)] = name
    return table


@functools.cache
def _root_validator() -> Draft202012Validator:
    return Draft202012Validator(schema())


def check_client_message(message: dict[str, Any], peer_methods: dict[Any, str]) -> list[str]:
    """Schema errors of one message our client sent (envelope and method-specific payload).

    ``peer_methods`` maps the ids of the agent's requests to their method names, so a response
    we sent can be checked against the right ``*Response`` type.
    """
    found = [f"envelope: {e.message}" for e in _root_validator().iter_errors(message)]
    table = _method_types()
    if "method" in message:
        type_name = table.get((message["method"], "params"))
        if type_name is None:
            found.append(f"method {message['method']!r} is not in the v2 schema")
        else:
            found += errors(type_name, message.get("params", {}))
    elif "result" in message:
        method = peer_methods.get(message.get("id"))
        type_name = table.get((method, "result")) if method else None
        if type_name is None:
            found.append(f"response to unknown request id {message.get('id')!r}")
        else:
            found += errors(type_name, message["result"])
    return found


def assert_client_traffic_valid(
    received_by_agent: list[dict[str, Any]], peer_methods: dict[Any, str] | None = None
) -> int:
    """Validate every message in ``received_by_agent`` (what our client sent). Returns the count."""
    count = 0
    for message in received_by_agent:
        found = check_client_message(message, peer_methods or {})
        assert not found, f"invalid message from our client: {found}\n{json.dumps(message)[:2000]}"
        count += 1
    return count


# -- v1: what our client sends once it speaks v1 (the v1 schema next to the v2 one) ----------

V1_SCHEMA_PATH = SCHEMA_PATH.parent.parent / "v1" / "schema.json"


@functools.cache
def v1_schema() -> dict[str, Any]:
    return json.loads(V1_SCHEMA_PATH.read_text("utf-8"))  # type: ignore[no-any-return]


@functools.cache
def _v1_validator(type_name: str) -> Draft202012Validator:
    return Draft202012Validator({"$ref": f"#/$defs/{type_name}", "$defs": v1_schema()["$defs"]})


@functools.cache
def _v1_method_types() -> dict[tuple[str, str], str]:
    table: dict[tuple[str, str], str] = {}
    for name, definition in v1_schema()["$defs"].items():
        if method := definition.get("x-method"):
            table[(method, "result" if name.endswith("Response") else "params")] = name
    return table


def check_v1_client_message(message: dict[str, Any], peer_methods: dict[Any, str]) -> list[str]:
    """`check_client_message` against the v1 schema."""
    found = [
        f"envelope: {e.message}" for e in Draft202012Validator(v1_schema()).iter_errors(message)
    ]
    table = _v1_method_types()
    if "method" in message:
        type_name = table.get((message["method"], "params"))
        if type_name is None:
            return [*found, f"method {message['method']!r} is not in the v1 schema"]
        instance = message.get("params", {})
    elif "result" in message:
        method = peer_methods.get(message.get("id"))
        type_name = table.get((method, "result")) if method else None
        if type_name is None:
            return [*found, f"response to unknown request id {message.get('id')!r}"]
        instance = message["result"]
    else:
        return found
    return found + [
        f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}"
        for e in _v1_validator(type_name).iter_errors(instance)
    ]
