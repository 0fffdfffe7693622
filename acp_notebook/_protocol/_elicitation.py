"""``elicitation/create`` and ``elicitation/complete``: form and URL questions from the agent.

The requested schema is the restricted JSON Schema of the v2 schema's ``ElicitationSchema``:
an object of primitive properties (string, number, integer, boolean, and string arrays for
multiple choice). :func:`content_errors` checks an answer against it (pure, no I/O).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping
from datetime import date, datetime
from typing import Annotated, Any, Literal

from pydantic import Field, Tag, field_validator

from ._base import UNKNOWN_TAG, UnknownVariant, WireModel, open_union_discriminator

__all__ = [
    "ELICITATION_ACTIONS",
    "ELICITATION_MODES",
    "ELICITATION_PROPERTY_TYPES",
    "PATTERN_BUDGET",
    "PATTERN_TOO_COSTLY",
    "STRING_FORMATS",
    "BooleanPropertySchema",
    "CompleteElicitationNotification",
    "CreateElicitationRequest",
    "CreateElicitationResponse",
    "ElicitationPropertySchema",
    "ElicitationSchema",
    "EnumOption",
    "FormElicitationRequest",
    "IntegerPropertySchema",
    "MultiSelectItems",
    "MultiSelectPropertySchema",
    "NumberPropertySchema",
    "StringPropertySchema",
    "UnknownElicitationRequest",
    "UnknownPropertySchema",
    "UrlElicitationRequest",
    "content_errors",
    "property_choices",
]

STRING_FORMATS = frozenset({"email", "uri", "date", "date-time"})
"""Formats checked by :func:`content_errors`; any other format is an annotation only."""

ELICITATION_ACTIONS = frozenset({"accept", "decline", "cancel"})

#: seconds that the ``pattern`` checks of one answer may take in all. A pattern is the agent's
#: code: ``^([a-zA-Z0-9]+\s?)*$`` against 20 characters and a ``!`` held the kernel 17 s in
#: ``re`` (twice as long with each character), and Interrupt did not stop it (issue 22,
#: finding 12). The ``regex`` package stops a match at its ``timeout``; a field not checked
#: in time fails (``PATTERN_TOO_COSTLY``), so such an answer is never sent.
PATTERN_BUDGET = 1.0
PATTERN_TOO_COSTLY = "could not be checked against the requested pattern in time (too costly)"


def _or_none(value: Any, kind: type | tuple[type, ...]) -> Any:
    """``x-deserialize-default-on-error``: a wrongly typed optional hint reads as omitted."""
    if value is None or (isinstance(value, kind) and not isinstance(value, bool)):
        return value
    if kind is bool and isinstance(value, bool):
        return value
    return None


class _Hints(WireModel):
    title: str | None = None
    description: str | None = None

    @field_validator("title", "description", mode="before")
    @classmethod
    def _text_or_none(cls, value: Any) -> Any:
        return _or_none(value, str)


class EnumOption(WireModel):
    """A titled choice: ``const`` is sent, ``title`` is shown."""

    const: str
    title: str
    description: str | None = None


class StringPropertySchema(_Hints):
    """A string field, or a single choice when ``enum`` or ``one_of`` is set."""

    type: Literal["string"] = "string"
    min_length: int | None = Field(default=None, ge=0)
    max_length: int | None = Field(default=None, ge=0)
    pattern: str | None = None
    format: str | None = None
    default: str | None = None
    enum: list[str] | None = Field(default=None, min_length=1)
    one_of: list[EnumOption] | None = Field(default=None, min_length=1)

    @field_validator("default", mode="before")
    @classmethod
    def _default(cls, value: Any) -> Any:
        return _or_none(value, str)


class NumberPropertySchema(_Hints):
    type: Literal["number"] = "number"
    minimum: float | None = None
    maximum: float | None = None
    default: float | None = None

    @field_validator("default", mode="before")
    @classmethod
    def _default(cls, value: Any) -> Any:
        return _or_none(value, (int, float))


class IntegerPropertySchema(_Hints):
    type: Literal["integer"] = "integer"
    minimum: int | None = None
    maximum: int | None = None
    default: int | None = None

    @field_validator("default", mode="before")
    @classmethod
    def _default(cls, value: Any) -> Any:
        return _or_none(value, int)


class BooleanPropertySchema(_Hints):
    type: Literal["boolean"] = "boolean"
    default: bool | None = None

    @field_validator("default", mode="before")
    @classmethod
    def _default(cls, value: Any) -> Any:
        return value if value is None or isinstance(value, bool) else None


class MultiSelectItems(WireModel):
    """``{"type": "string", "enum": [...]}`` or titled ``{"anyOf": [EnumOption, ...]}``.

    Any other ``type`` is kept (``type`` and extra fields) and offers no choices.
    """

    type: str | None = None
    enum: list[str] | None = Field(default=None, min_length=1)
    any_of: list[EnumOption] | None = Field(default=None, min_length=1)


class MultiSelectPropertySchema(_Hints):
    """Multiple choice: an array of strings picked from ``items``."""

    type: Literal["array"] = "array"
    min_items: int | None = Field(default=None, ge=0)
    max_items: int | None = Field(default=None, ge=0)
    items: MultiSelectItems
    default: list[str] | None = None

    @field_validator("default", mode="before")
    @classmethod
    def _default(cls, value: Any) -> Any:
        if not isinstance(value, list):
            return None
        return [v for v in value if isinstance(v, str)]  # x-deserialize-skip-invalid-items


class UnknownPropertySchema(UnknownVariant):
    """A property type this library does not know: shown as a text field with its schema."""

    tag_key = "type"


ELICITATION_PROPERTY_TYPES: dict[str, type[WireModel]] = {
    "string": StringPropertySchema,
    "number": NumberPropertySchema,
    "integer": IntegerPropertySchema,
    "boolean": BooleanPropertySchema,
    "array": MultiSelectPropertySchema,
}

ElicitationPropertySchema = Annotated[
    Annotated[StringPropertySchema, Tag("string")]
    | Annotated[NumberPropertySchema, Tag("number")]
    | Annotated[IntegerPropertySchema, Tag("integer")]
    | Annotated[BooleanPropertySchema, Tag("boolean")]
    | Annotated[MultiSelectPropertySchema, Tag("array")]
    | Annotated[UnknownPropertySchema, Tag(UNKNOWN_TAG)],
    open_union_discriminator("type", "type", frozenset(ELICITATION_PROPERTY_TYPES)),
]


class ElicitationSchema(WireModel):
    """The form: ``properties`` by name, and which of them are ``required``."""

    type: Literal["object"] = "object"
    title: str | None = None
    description: str | None = None
    properties: dict[str, ElicitationPropertySchema]
    required: list[str] | None = None

    @field_validator("title", "description", mode="before")
    @classmethod
    def _text_or_none(cls, value: Any) -> Any:
        return _or_none(value, str)


class _Scope(WireModel):
    """Session scope (``session_id``, optional ``tool_call_id``) or request scope."""

    message: str
    session_id: str | None = None
    tool_call_id: str | None = None
    request_id: int | str | None = None

    @field_validator("tool_call_id", mode="before")
    @classmethod
    def _tool_call(cls, value: Any) -> Any:
        return _or_none(value, str)


class FormElicitationRequest(_Scope):
    mode: Literal["form"] = "form"
    requested_schema: ElicitationSchema


class UrlElicitationRequest(_Scope):
    mode: Literal["url"] = "url"
    elicitation_id: str
    url: str


class UnknownElicitationRequest(UnknownVariant):
    """A mode this library does not know: answered ``cancel``."""

    tag_key = "mode"


ELICITATION_MODES: dict[str, type[WireModel]] = {
    "form": FormElicitationRequest,
    "url": UrlElicitationRequest,
}

CreateElicitationRequest = Annotated[
    Annotated[FormElicitationRequest, Tag("form")]
    | Annotated[UrlElicitationRequest, Tag("url")]
    | Annotated[UnknownElicitationRequest, Tag(UNKNOWN_TAG)],
    open_union_discriminator("mode", "mode", frozenset(ELICITATION_MODES)),
]
"""Params of ``elicitation/create`` (agent -> client request)."""


class CreateElicitationResponse(WireModel):
    """Result of ``elicitation/create``: ``accept`` (with ``content``), ``decline``, ``cancel``."""

    action: str
    content: dict[str, Any] | None = None

    @classmethod
    def accept(cls, content: Mapping[str, Any] | None = None) -> CreateElicitationResponse:
        if content is None:
            return cls(action="accept")
        return cls(action="accept", content=dict(content))

    @classmethod
    def decline(cls) -> CreateElicitationResponse:
        return cls(action="decline")

    @classmethod
    def cancel(cls) -> CreateElicitationResponse:
        return cls(action="cancel")


class CompleteElicitationNotification(WireModel):
    """Params of ``elicitation/complete``: the URL elicitation ``elicitation_id`` is done."""

    elicitation_id: str


# -- checking an answer --------------------------------------------------------------------

_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:\S+")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")


def _format_error(fmt: str, value: str) -> str | None:
    if fmt == "email" and not _EMAIL.fullmatch(value):
        return "is not an email address"
    if fmt == "uri" and not _URI.fullmatch(value):
        return "is not a URI (scheme:...)"
    if fmt == "date":
        try:
            if not _DATE.fullmatch(value):
                raise ValueError
            date.fromisoformat(value)
        except ValueError:
            return "is not a date (YYYY-MM-DD)"
    if fmt == "date-time":
        try:
            if not _DATE_TIME.fullmatch(value):
                raise ValueError
            datetime.fromisoformat(value.replace("z", "+00:00").replace("Z", "+00:00"))
        except ValueError:
            return "is not a date-time (RFC 3339, e.g. 2026-12-01T10:00:00Z)"
    return None


def property_choices(prop: Any) -> list[tuple[str, str]] | None:
    """``(value, label)`` choices of a single or multiple choice property, else ``None``."""
    if isinstance(prop, StringPropertySchema):
        if prop.one_of:
            return [(o.const, o.title) for o in prop.one_of]
        if prop.enum:
            return [(v, v) for v in prop.enum]
        return None
    if isinstance(prop, MultiSelectPropertySchema):
        if prop.items.any_of:
            return [(o.const, o.title) for o in prop.items.any_of]
        if prop.items.enum:
            return [(v, v) for v in prop.items.enum]
        return []
    return None


def _pattern_error(pattern: str, value: str, deadline: float) -> str | None:
    """Why ``value`` fails ``pattern`` (searched, as JSON Schema does), with what is left of
    the answer's ``PATTERN_BUDGET`` as the match's timeout (``regex`` releases the GIL while
    it matches a ``str``); imported here, on the first pattern, not with the protocol."""
    import regex  # type: ignore[import-untyped]

    left = deadline - time.monotonic()
    if left <= 0:
        return PATTERN_TOO_COSTLY
    try:
        found = regex.search(pattern, value, timeout=left)
    except regex.error:
        return None  # not a pattern Python can read: the agent checks it
    except TimeoutError:
        return PATTERN_TOO_COSTLY
    return None if found else "does not match the requested pattern"


def _string_error(prop: StringPropertySchema, value: Any, deadline: float) -> str | None:
    if not isinstance(value, str):
        return "must be text"
    choices = property_choices(prop)
    if choices is not None:
        return None if value in {c for c, _ in choices} else "is not one of the choices"
    if prop.min_length is not None and len(value) < prop.min_length:
        return f"must be at least {prop.min_length} characters"
    if prop.max_length is not None and len(value) > prop.max_length:
        return f"must be at most {prop.max_length} characters"
    if prop.format in STRING_FORMATS and (error := _format_error(prop.format, value)):
        return error
    if prop.pattern:
        return _pattern_error(prop.pattern, value, deadline)
    return None


def _number_error(prop: NumberPropertySchema | IntegerPropertySchema, value: Any) -> str | None:
    if isinstance(prop, IntegerPropertySchema):
        if type(value) is not int:
            return "must be a whole number"
    elif type(value) not in (int, float) or not math.isfinite(value):
        return "must be a number"
    if prop.minimum is not None and value < prop.minimum:
        return f"must be at least {prop.minimum:g}"
    if prop.maximum is not None and value > prop.maximum:
        return f"must be at most {prop.maximum:g}"
    return None


def _array_error(prop: MultiSelectPropertySchema, value: Any) -> str | None:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return "must be a list of choices"
    allowed = {c for c, _ in property_choices(prop) or []}
    if any(v not in allowed for v in value):
        return "has a value that is not one of the choices"
    if len(set(value)) != len(value):
        return "has a choice twice"
    if prop.min_items is not None and len(value) < prop.min_items:
        return f"needs at least {prop.min_items} choices"
    if prop.max_items is not None and len(value) > prop.max_items:
        return f"allows at most {prop.max_items} choices"
    return None


def _value_error(prop: Any, value: Any, deadline: float) -> str | None:
    if isinstance(prop, StringPropertySchema):
        return _string_error(prop, value, deadline)
    if isinstance(prop, NumberPropertySchema | IntegerPropertySchema):
        return _number_error(prop, value)
    if isinstance(prop, BooleanPropertySchema):
        return None if isinstance(value, bool) else "must be true or false"
    if isinstance(prop, MultiSelectPropertySchema):
        return _array_error(prop, value)
    return None  # an unknown property type: any JSON value, the agent checks it


def content_errors(
    schema: ElicitationSchema, content: Any, *, budget: float = PATTERN_BUDGET
) -> dict[str, str]:
    """Why ``content`` does not answer ``schema``: field name -> reason (empty when it does).

    Required fields must be present; every value must have its property's type and respect
    its choices, lengths, format (email, uri, date, date-time), pattern, bounds and item
    counts. A field the schema did not ask for is an error too (key ``""`` for a content
    that is not an object). Pattern checks share ``budget`` seconds; a field whose pattern
    was not decided in time fails (``PATTERN_TOO_COSTLY``).
    """
    if not isinstance(content, Mapping):
        return {"": "the answer must be an object of field values"}
    errors: dict[str, str] = {}
    deadline = time.monotonic() + budget
    for name in schema.required or []:
        if name in schema.properties and content.get(name) is None:
            errors[name] = "is required"
    for name, value in content.items():
        if name not in schema.properties:
            errors[str(name)] = "was not asked for"
        elif value is None:
            continue
        elif error := _value_error(schema.properties[name], value, deadline):
            errors[name] = error
    return errors
