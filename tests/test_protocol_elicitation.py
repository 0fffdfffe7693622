"""The elicitation models against the v2 schema of the pinned SDK (tests/_schema.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from _schema import assert_valid, errors, schema
from pydantic import TypeAdapter, ValidationError

import acp_notebook._protocol as p

sys.path.insert(0, str(Path(__file__).parent / "adversarial" / "agents"))
from elicit_agent import EVERY_FIELD

REQUEST: TypeAdapter[Any] = TypeAdapter(p.CreateElicitationRequest)
PROPERTY: TypeAdapter[Any] = TypeAdapter(p.ElicitationPropertySchema)


def test_every_field_request_is_schema_valid_and_round_trips() -> None:
    params = {**EVERY_FIELD, "sessionId": "s1"}
    assert_valid("CreateElicitationRequest", params)
    parsed = REQUEST.validate_python(params)
    assert isinstance(parsed, p.FormElicitationRequest)
    assert REQUEST.dump_python(parsed, mode="json", by_alias=True, exclude_unset=True) == params


def test_property_types_follow_the_schema() -> None:
    tags = {
        b["properties"]["type"]["const"]
        for b in schema()["$defs"]["ElicitationPropertySchema"]["anyOf"]
        if "const" in b.get("properties", {}).get("type", {})
    }
    assert tags == set(p.ELICITATION_PROPERTY_TYPES)
    modes = {
        b["properties"]["mode"]["const"]
        for b in schema()["$defs"]["CreateElicitationRequest"]["anyOf"]
        if "const" in b.get("properties", {}).get("mode", {})
    }
    assert modes == set(p.ELICITATION_MODES)
    formats = {b["const"] for b in schema()["$defs"]["StringFormat"]["anyOf"] if "const" in b}
    assert formats == set(p.STRING_FORMATS)
    for name, model in [
        ("StringPropertySchema", p.StringPropertySchema),
        ("NumberPropertySchema", p.NumberPropertySchema),
        ("IntegerPropertySchema", p.IntegerPropertySchema),
        ("BooleanPropertySchema", p.BooleanPropertySchema),
        ("MultiSelectPropertySchema", p.MultiSelectPropertySchema),
        ("EnumOption", p.EnumOption),
    ]:
        wire = {f.alias or n for n, f in model.model_fields.items()} - {"type"}
        assert set(schema()["$defs"][name]["properties"]) == wire, name


def test_unknown_property_type_and_mode_are_kept() -> None:
    raw = {"type": "_geo", "precision": 3}
    prop = PROPERTY.validate_python(raw)
    assert isinstance(prop, p.UnknownPropertySchema) and prop.to_wire() == raw
    request = REQUEST.validate_python({"mode": "_psychic", "message": "hm", "sessionId": "s"})
    assert isinstance(request, p.UnknownElicitationRequest)


def test_wrongly_typed_hints_read_as_omitted() -> None:
    """``x-deserialize-default-on-error`` on titles, descriptions and defaults."""
    prop = PROPERTY.validate_python({"type": "string", "title": 5, "default": ["x"]})
    assert prop.title is None and prop.default is None
    prop = PROPERTY.validate_python({"type": "integer", "default": "3"})
    assert prop.default is None
    prop = PROPERTY.validate_python({"type": "boolean", "default": 1})
    assert prop.default is None
    prop = PROPERTY.validate_python(
        {"type": "array", "items": {"type": "string", "enum": ["a"]}, "default": ["a", 2]}
    )
    assert prop.default == ["a"]


def test_malformed_requests_are_rejected() -> None:
    with pytest.raises(ValidationError):
        REQUEST.validate_python({"mode": "form", "message": "x", "sessionId": "s"})
    with pytest.raises(ValidationError):
        REQUEST.validate_python({"mode": "url", "message": "x", "sessionId": "s"})
    with pytest.raises(ValidationError):  # a negative length is not a length
        PROPERTY.validate_python({"type": "string", "minLength": -1})


@pytest.mark.parametrize(
    "response",
    [
        p.CreateElicitationResponse.accept({"a": 1, "b": ["x"], "c": True}),
        p.CreateElicitationResponse.accept(),
        p.CreateElicitationResponse.decline(),
        p.CreateElicitationResponse.cancel(),
    ],
)
def test_our_responses_are_schema_valid(response: p.CreateElicitationResponse) -> None:
    assert errors("CreateElicitationResponse", response.to_wire()) == []


def test_complete_notification() -> None:
    body = {"elicitationId": "e1"}
    assert_valid("CompleteElicitationNotification", body)
    assert p.CompleteElicitationNotification.model_validate(body).elicitation_id == "e1"


def test_content_errors_on_a_valid_answer_is_empty() -> None:
    schema_model = REQUEST.validate_python({**EVERY_FIELD, "sessionId": "s"}).requested_schema
    good = {"name": "Ada", "count": 2, "size": "s"}
    assert p.content_errors(schema_model, good) == {}
    assert p.content_errors(schema_model, "Ada") == {
        "": "the answer must be an object of field values"
    }
    assert p.content_errors(schema_model, {**good, "ratio": float("nan")}) == {
        "ratio": "must be a number"
    }
