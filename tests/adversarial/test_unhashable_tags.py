"""An update whose tag is not a string but a list or an object (unhashable): malformed, reported
and dropped as any other, never a ``TypeError`` out of the parser (the per-tag validator table
is a dict looked up by the tag)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from _memory import scripted_agent
from pydantic import ValidationError

from acp_notebook._protocol import parse_session_update
from acp_notebook._protocol._v1 import parse_v1_session_update

TAGS: list[Any] = [["agent_message_chunk"], {"a": 1}]


@pytest.mark.parametrize("tag", TAGS)
def test_the_v2_parser_refuses_an_unhashable_tag_as_malformed(tag: Any) -> None:
    with pytest.raises(ValidationError):
        parse_session_update({"sessionUpdate": tag})


@pytest.mark.parametrize("tag", TAGS)
def test_the_v1_parser_refuses_an_unhashable_tag_as_malformed(tag: Any) -> None:
    with pytest.raises(ValidationError):
        parse_v1_session_update({"sessionUpdate": tag})


@pytest.mark.anyio
@pytest.mark.parametrize("tag", TAGS)
async def test_the_client_reports_and_drops_an_update_with_an_unhashable_tag(tag: Any) -> None:
    async with scripted_agent() as (agent, peer):
        session = await agent.new_session()
        await peer.notify(
            "session/update", {"sessionId": session.id, "update": {"sessionUpdate": tag}}
        )
        # A second malformed update (no content), reported in order after the first.
        bad = {"sessionUpdate": "agent_message_chunk", "messageId": "m"}
        await peer.notify("session/update", {"sessionId": session.id, "update": bad})
        with anyio.fail_after(5):
            while not any("content" in problem for problem in session.problems):
                await anyio.sleep(0.01)
        assert len(session.problems) == 2, session.problems
        assert "malformed session/update dropped" in session.problems[0]
        assert [p for p in agent.problems if p.kind == "handler_failed"] == []
