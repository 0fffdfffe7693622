"""acp_notebook._protocol._content: content blocks."""

from __future__ import annotations

import base64

import pytest
from pydantic import TypeAdapter, ValidationError

from acp_notebook._protocol._content import (
    CONTENT_BLOCK_TYPES,
    AudioContent,
    BlobResourceContents,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
    UnknownContentBlock,
)

blocks: TypeAdapter[object] = TypeAdapter(ContentBlock)


def test_every_known_type_maps_to_its_model() -> None:
    samples = {
        "text": {"type": "text", "text": "hi"},
        "image": {"type": "image", "data": "", "mimeType": "image/png"},
        "audio": {"type": "audio", "data": "", "mimeType": "audio/wav"},
        "resource_link": {"type": "resource_link", "name": "n", "uri": "file:///x"},
        "resource": {"type": "resource", "resource": {"uri": "u", "text": "t"}},
    }
    assert set(samples) == set(CONTENT_BLOCK_TYPES)
    for tag, payload in samples.items():
        block = blocks.validate_python(payload)
        assert type(block) is CONTENT_BLOCK_TYPES[tag]
        assert block.to_wire() == payload  # type: ignore[attr-defined]


def test_image_and_audio_decode_their_bytes() -> None:
    raw = b"\x89PNG\x00\xff"
    data = base64.b64encode(raw).decode()
    assert ImageContent(data=data, mime_type="image/png").data_bytes() == raw
    assert AudioContent(data=data, mime_type="audio/wav").data_bytes() == raw


def test_an_embedded_resource_is_text_or_blob() -> None:
    text = blocks.validate_python({"type": "resource", "resource": {"uri": "u", "text": "t"}})
    assert isinstance(text, EmbeddedResource)
    assert isinstance(text.resource, TextResourceContents)
    blob = blocks.validate_python({"type": "resource", "resource": {"uri": "u", "blob": "AA=="}})
    assert isinstance(blob, EmbeddedResource)
    assert isinstance(blob.resource, BlobResourceContents)
    with pytest.raises(ValidationError):
        blocks.validate_python({"type": "resource", "resource": {"uri": "u"}})


def test_limits_on_priority_and_size() -> None:
    with pytest.raises(ValidationError):
        blocks.validate_python({"type": "text", "text": "x", "annotations": {"priority": 1.5}})
    with pytest.raises(ValidationError):
        blocks.validate_python({"type": "resource_link", "name": "n", "uri": "u", "size": -1})
    link = blocks.validate_python({"type": "resource_link", "name": "n", "uri": "u", "size": 0})
    assert isinstance(link, ResourceLink)
    assert link.size == 0
    text = blocks.validate_python({"type": "text", "text": "x", "annotations": {"priority": 0.5}})
    assert isinstance(text, TextContent)
    assert text.annotations is not None
    assert text.annotations.priority == 0.5


def test_custom_and_future_blocks_are_kept_verbatim() -> None:
    for payload in ({"type": "_vendor", "x": 1}, {"type": "video", "data": "..."}):
        block = blocks.validate_python(payload)
        assert isinstance(block, UnknownContentBlock)
        assert block.to_wire() == payload


def test_a_block_without_a_type_is_rejected() -> None:
    with pytest.raises(ValidationError):
        blocks.validate_python({"text": "no type"})
