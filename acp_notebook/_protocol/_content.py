"""Content blocks (``ContentBlock``): text, image, audio, resource links, embedded resources."""

from __future__ import annotations

import base64
from typing import Annotated, Literal

from pydantic import Field, Tag

from ._base import UNKNOWN_TAG, UnknownVariant, WireModel, open_union_discriminator

__all__ = [
    "CONTENT_BLOCK_TYPES",
    "Annotations",
    "AudioContent",
    "BlobResourceContents",
    "ContentBlock",
    "EmbeddedResource",
    "Icon",
    "ImageContent",
    "ResourceLink",
    "Role",
    "TextContent",
    "TextResourceContents",
    "UnknownContentBlock",
]

Role = str
"""Open enum: ``assistant``, ``user`` or a custom/future value."""


class Annotations(WireModel):
    audience: list[Role] | None = None
    last_modified: str | None = None
    priority: float | None = Field(default=None, ge=0, le=1)


class Icon(WireModel):
    src: str
    mime_type: str | None = None
    sizes: list[str] | None = None
    theme: str | None = None


class TextContent(WireModel):
    type: Literal["text"] = "text"
    text: str
    annotations: Annotations | None = None


class ImageContent(WireModel):
    type: Literal["image"] = "image"
    data: str
    mime_type: str
    uri: str | None = None
    annotations: Annotations | None = None

    def data_bytes(self) -> bytes:
        return base64.b64decode(self.data)


class AudioContent(WireModel):
    type: Literal["audio"] = "audio"
    data: str
    mime_type: str
    annotations: Annotations | None = None

    def data_bytes(self) -> bytes:
        return base64.b64decode(self.data)


class ResourceLink(WireModel):
    type: Literal["resource_link"] = "resource_link"
    name: str
    uri: str
    title: str | None = None
    description: str | None = None
    icons: list[Icon] | None = None
    mime_type: str | None = None
    size: int | None = Field(default=None, ge=0)
    annotations: Annotations | None = None


class TextResourceContents(WireModel):
    text: str
    uri: str
    mime_type: str | None = None


class BlobResourceContents(WireModel):
    blob: str
    uri: str
    mime_type: str | None = None


class EmbeddedResource(WireModel):
    type: Literal["resource"] = "resource"
    # Closed union in the schema: text or blob contents.
    resource: TextResourceContents | BlobResourceContents
    annotations: Annotations | None = None


class UnknownContentBlock(UnknownVariant):
    """A content block of a custom (``_``-prefixed) or future type."""

    tag_key = "type"


CONTENT_BLOCK_TYPES: dict[str, type[WireModel]] = {
    "text": TextContent,
    "image": ImageContent,
    "audio": AudioContent,
    "resource_link": ResourceLink,
    "resource": EmbeddedResource,
}

ContentBlock = Annotated[
    Annotated[TextContent, Tag("text")]
    | Annotated[ImageContent, Tag("image")]
    | Annotated[AudioContent, Tag("audio")]
    | Annotated[ResourceLink, Tag("resource_link")]
    | Annotated[EmbeddedResource, Tag("resource")]
    | Annotated[UnknownContentBlock, Tag(UNKNOWN_TAG)],
    open_union_discriminator("type", "type", frozenset(CONTENT_BLOCK_TYPES)),
]
