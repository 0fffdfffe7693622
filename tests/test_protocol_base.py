"""acp_notebook._protocol._base: the wire model machinery (aliases, unset fields, open unions)."""

from __future__ import annotations

from typing import Annotated, Literal

import pytest
from pydantic import Tag, TypeAdapter, ValidationError

from acp_notebook._protocol._base import (
    UNKNOWN_TAG,
    UnknownVariant,
    WireModel,
    is_custom_value,
    is_set,
    open_union_discriminator,
)


class _Thing(WireModel):
    kind: Literal["thing"] = "thing"
    some_field: str
    maybe: int | None = None


class _Other(WireModel):
    kind: Literal["other"] = "other"
    n: int


class _UnknownThing(UnknownVariant):
    tag_key = "kind"


_Union = Annotated[
    Annotated[_Thing, Tag("thing")]
    | Annotated[_Other, Tag("other")]
    | Annotated[_UnknownThing, Tag(UNKNOWN_TAG)],
    open_union_discriminator("kind", "kind", frozenset({"thing", "other"})),
]
_adapter: TypeAdapter[_Thing | _Other | _UnknownThing] = TypeAdapter(_Union)


def test_camel_case_on_the_wire_and_by_name() -> None:
    assert _Thing.from_wire({"someField": "x"}).some_field == "x"
    assert _Thing(some_field="y").some_field == "y"
    assert _Thing(some_field="y").to_wire() == {"kind": "thing", "someField": "y"}


def test_unset_fields_are_left_out_but_explicit_null_stays() -> None:
    assert "maybe" not in _Thing(some_field="a").to_wire()
    assert _Thing(some_field="a", maybe=None).to_wire()["maybe"] is None


def test_the_tag_is_written_even_when_not_set() -> None:
    wire = _Thing.from_wire({"someField": "a"}).to_wire()
    assert wire["kind"] == "thing"
    assert _Thing.__wire_tags__ == (("kind", "kind", "thing"),)


def test_unknown_fields_and_meta_are_kept() -> None:
    thing = _Thing.from_wire({"someField": "a", "future": [1], "_meta": {"k": 1}})
    assert thing.meta == {"k": 1}
    assert thing.to_wire() == {"kind": "thing", "someField": "a", "future": [1], "_meta": {"k": 1}}


def test_strict_types() -> None:
    with pytest.raises(ValidationError):
        _Thing.from_wire({"someField": 3})
    with pytest.raises(ValidationError):
        _Other.from_wire({"n": "3"})


def test_is_set_tells_omitted_from_null() -> None:
    assert not is_set(_Thing.from_wire({"someField": "a"}), "maybe")
    assert is_set(_Thing.from_wire({"someField": "a", "maybe": None}), "maybe")
    with pytest.raises(AttributeError, match="no field 'nope'"):
        is_set(_Thing(some_field="a"), "nope")


def test_custom_values_start_with_an_underscore() -> None:
    assert is_custom_value("_mine")
    assert not is_custom_value("mine")
    assert not is_custom_value("")


def test_unknown_variant_keeps_the_payload_verbatim() -> None:
    payload = {"kind": "future", "x": {"y": [1, None]}}
    unknown = _UnknownThing.model_validate(payload)
    assert unknown.raw == payload
    assert unknown.to_wire() == payload
    assert unknown.model_dump() == payload
    assert unknown.tag == "future"
    assert _UnknownThing(raw=payload).raw == payload
    # a payload whose only key is "raw" is taken as the constructor form
    assert _UnknownThing.model_validate({"raw": {"kind": "z"}}).raw == {"kind": "z"}


def test_open_union_picks_known_unknown_and_rejects_untagged() -> None:
    assert isinstance(_adapter.validate_python({"kind": "thing", "someField": "a"}), _Thing)
    assert isinstance(_adapter.validate_python({"kind": "other", "n": 1}), _Other)
    future = _adapter.validate_python({"kind": "future", "n": "whatever"})
    assert isinstance(future, _UnknownThing)
    assert future.raw == {"kind": "future", "n": "whatever"}
    for bad in ({"n": 1}, {"kind": 3}, {"kind": None}):
        with pytest.raises(ValidationError, match="'kind' tag is missing or not a string"):
            _adapter.validate_python(bad)


def test_open_union_accepts_models_and_unknowns_as_values() -> None:
    assert isinstance(_adapter.validate_python(_Other(n=2)), _Other)
    unknown = _UnknownThing(raw={"kind": "zzz"})
    assert _adapter.validate_python(unknown).raw == {"kind": "zzz"}


def test_a_known_tag_with_bad_fields_is_an_error_not_an_unknown() -> None:
    with pytest.raises(ValidationError):
        _adapter.validate_python({"kind": "other", "n": "not an int"})
