"""Shared machinery for the ACP v2 wire models.

* :class:`WireModel` is the base of every known wire object: snake_case fields, camelCase on the
  wire, unknown fields kept, ``_meta`` exposed as ``meta``.
* :func:`is_set` tells an omitted patch field from one that was sent (possibly as ``null``).
* :class:`UnknownVariant` holds a variant of an open union that this version does not know,
  keeping the payload untouched so it can be stored, forwarded or rendered generically.
* :func:`open_union_discriminator` picks the model of a tagged union: known tag -> its model,
  any other string -> the ``Unknown*`` model, no string tag -> a validation error.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Self, get_args, get_origin

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)
from pydantic.alias_generators import to_camel

__all__ = [
    "UNKNOWN_TAG",
    "UnknownVariant",
    "WireModel",
    "is_custom_value",
    "is_set",
    "open_union_discriminator",
]

UNKNOWN_TAG = "__unknown__"
"""The pydantic ``Tag`` used for the ``Unknown*`` member of every open union."""


def _tag_fields(cls: type[BaseModel]) -> tuple[tuple[str, str, str], ...]:
    """Fields whose type is a one-value ``Literal`` defaulting to that value (the union tags)."""
    found: list[tuple[str, str, str]] = []
    for name, info in cls.model_fields.items():
        annotation = info.annotation
        if get_origin(annotation) is not Literal:
            continue
        values = get_args(annotation)
        if len(values) == 1 and info.default == values[0] and isinstance(values[0], str):
            found.append((name, info.alias or name, values[0]))
    return tuple(found)


class WireModel(BaseModel):
    """Base of every known ACP object.

    Serialise with :meth:`to_wire`; only the fields that were set (by the peer or by our own
    constructor call) are written, so omitted patch fields stay omitted and ``None`` stays
    ``null``. Tag fields (``type``, ``sessionUpdate``, ...) are always written.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="allow",
        strict=True,
        # Validators and serialisers are built when a model is first used, not at import:
        # building all of them was half of `import acp_notebook`'s time.
        defer_build=True,
    )

    meta: dict[str, Any] | None = Field(default=None, alias="_meta")

    __wire_tags__: ClassVar[tuple[tuple[str, str, str], ...]] = ()

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        cls.__wire_tags__ = _tag_fields(cls)

    @model_serializer(mode="wrap")
    def _serialize_wire(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> Any:
        data = handler(self)
        tags = self.__wire_tags__
        if tags and isinstance(data, dict):
            by_alias = info.by_alias is not False
            missing = {
                (alias if by_alias else name): value
                for name, alias, value in tags
                if (alias if by_alias else name) not in data
            }
            if missing:
                data = {**missing, **data}
        return data

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready dict to put on the wire (camelCase, unset fields left out)."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)

    @classmethod
    def from_wire(cls, data: Any) -> Self:
        """Validate a decoded JSON object; raises ``pydantic.ValidationError``."""
        return cls.model_validate(data)


def is_set(model: BaseModel, name: str) -> bool:
    """True when field ``name`` was present on the wire (or passed to the constructor).

    A patch field is *omitted* when ``not is_set(m, name)``, *cleared* when it is set and
    ``None``, and carries a value otherwise.
    """
    # (`__pydantic_fields__`: what `model_fields` reads, without its class property's cost,
    # which was most of a v1 chunk's translation)
    if name not in type(model).__pydantic_fields__:
        raise AttributeError(f"{type(model).__name__} has no field {name!r}")
    return name in model.__pydantic_fields_set__


def is_custom_value(value: str) -> bool:
    """Open enum values starting with ``_`` are implementation extensions."""
    return value.startswith("_")


class UnknownVariant(BaseModel):
    """A variant of an open union that this library does not know.

    ``raw`` is the whole payload as received; :meth:`to_wire` (and any enclosing model's
    serialisation) gives it back unchanged. Build one from a payload with
    ``UnknownX.model_validate(payload)`` or ``UnknownX(raw=payload)``.
    """

    # Built on first use, as the known models are (one ``Unknown*`` per open union).
    model_config = ConfigDict(strict=True, defer_build=True)

    tag_key: ClassVar[str] = "type"

    raw: dict[str, Any]

    @model_validator(mode="before")
    @classmethod
    def _wrap_payload(cls, data: Any) -> Any:
        if isinstance(data, dict) and not (len(data) == 1 and "raw" in data):
            return {"raw": data}
        return data

    @model_serializer(mode="plain")
    def _serialize_wire(self) -> dict[str, Any]:
        return self.raw

    def to_wire(self) -> dict[str, Any]:
        """The payload exactly as it was received."""
        return self.raw

    @property
    def tag(self) -> Any:
        """The discriminator value of the payload (a string this library does not know)."""
        return self.raw.get(self.tag_key)


def open_union_discriminator(key: str, attr: str, known: frozenset[str]) -> Discriminator:
    """Discriminator for an open union tagged by wire key ``key`` (model attribute ``attr``).

    A known tag selects the ``Tag`` of the same name; any other string selects
    :data:`UNKNOWN_TAG`; a missing or non-string tag is a validation error.
    """

    def pick(value: Any) -> str | None:
        if type(value) is dict:
            tag = value.get(key)
            if tag is None and attr != key:
                tag = value.get(attr)
        elif isinstance(value, UnknownVariant):
            tag = value.raw.get(key)
        else:
            tag = getattr(value, attr, None)
        if type(tag) is not str:
            return None
        return tag if tag in known else UNKNOWN_TAG

    return Discriminator(
        pick,
        custom_error_type="invalid_union_tag",
        custom_error_message=f"the {key!r} tag is missing or not a string",
    )
