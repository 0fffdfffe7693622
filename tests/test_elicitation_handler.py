"""`decide()` with an elicitation handler (the client API's `elicitation_handler`, no widget):
what a handler returns becomes the answer only when it is one; a handler that raises, returns
something that is no answer, or an answer the form refuses, cancels (fails closed). Measured
as untested by the coverage run of issue 23."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import TypeAdapter

import acp_notebook._protocol as p
from acp_notebook._client._elicitation import ElicitationDecision, decide

ADAPTER: TypeAdapter[Any] = TypeAdapter(p.CreateElicitationRequest)
FORM = {
    "sessionId": "s1",
    "mode": "form",
    "message": "Which name?",
    "requestedSchema": {
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "required": ["name"],
    },
}


def _decision() -> ElicitationDecision:
    return ElicitationDecision(ADAPTER.validate_python(FORM))


@pytest.mark.anyio
async def test_a_sync_handler_s_answer_is_sent() -> None:
    decision = _decision()
    response = await decide(decision, lambda request: {"name": "ada"})
    assert (decision.action, decision.decided_by) == ("accept", "handler")
    assert response == {"action": "accept", "content": {"name": "ada"}}


@pytest.mark.anyio
async def test_an_async_handler_s_decline_is_sent() -> None:
    async def handler(request: Any) -> str:
        assert request.message == "Which name?"
        return "decline"

    decision = _decision()
    response = await decide(decision, handler)
    assert (decision.action, decision.decided_by) == ("decline", "handler")
    assert response == {"action": "decline"}


@pytest.mark.anyio
async def test_a_handler_that_raises_cancels() -> None:
    def handler(request: Any) -> Any:
        raise RuntimeError("broken")

    decision = _decision()
    response = await decide(decision, handler)
    assert (decision.action, decision.decided_by) == ("cancel", "error")
    assert "RuntimeError: broken" in decision.detail
    assert response == {"action": "cancel"}


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (42, "'a int' is not an answer"),
        ("yes", "'yes' is not an answer"),
        ({"name": 7}, "invalid answer: name"),
        ({}, "invalid answer: name"),
    ],
)
@pytest.mark.anyio
async def test_what_is_no_valid_answer_cancels(answer: Any, why: str) -> None:
    decision = _decision()
    response = await decide(decision, lambda request: answer)
    assert (decision.action, decision.decided_by) == ("cancel", "invalid")
    assert decision.detail.startswith(why), decision.detail
    assert response == {"action": "cancel"}


@pytest.mark.anyio
async def test_no_handler_cancels() -> None:
    decision = _decision()
    assert await decide(decision, None) == {"action": "cancel"}
    assert decision.decided_by == "no-handler"
