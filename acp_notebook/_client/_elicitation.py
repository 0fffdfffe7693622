"""Fail-closed answers to ``elicitation/create`` (questions the agent asks the user).

The agent asks with a form (a restricted JSON Schema) or a URL; a handler, a person (the
cell's form) or a rule answers ``accept`` (with the form's content), ``decline`` or
``cancel``. Everything that is not a clear, valid answer becomes ``cancel``: a handler that
raises or returns content the schema does not accept, no answer before the turn is cancelled
or ends, a timeout, a closed form, a mode this library does not know. Content is checked
against the requested schema before it is sent; invalid content is never sent.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio

from .. import _protocol as p
from .._protocol._visible import visible_text
from ._permission import call_each

log = logging.getLogger("acp_notebook.elicitation")

ElicitationHandler = Callable[
    [Any], "Mapping[str, Any] | str | Awaitable[Mapping[str, Any] | str | None] | None"
]
"""Called with the request; returns the form's content (a mapping: ``accept``), ``"accept"``
(a URL, or a form without fields), ``"decline"``, ``"cancel"`` or ``None`` (``cancel``)."""

DecidedBy = Literal[
    "handler",  # the elicitation handler answered
    "click",  # a person answered on the cell's form
    "panel",  # a person answered in the side panel
    "timeout",  # nobody answered in time
    "cancel",  # the turn was cancelled or ended first
    "closed",  # the form was closed, the kernel shut down, the session or agent closed
    "error",  # the handler raised
    "invalid",  # the answer does not match the requested schema, or the request is unusable
    "no-handler",  # nothing could answer
    "withdrawn",  # the agent withdrew the request
    "overflow",  # not asked: too many questions of the cell were open
]

Action = Literal["accept", "decline", "cancel"]

#: A form with more fields than this is refused (answered ``cancel``) and never built: the
#: protocol's forms are a few flat fields a person fills in at once, and each field costs the
#: cell four to six widget models (one form of 3,000 fields made 66,000 widgets).
MAX_FORM_FIELDS = 50


@dataclass(frozen=True)
class ElicitationAnswer:
    """An answer and who gave it (a form's click or timeout says so; the log keeps it)."""

    action: str
    content: Any = None
    by: DecidedBy = "handler"
    detail: str = ""


ElicitationAsker = Callable[["ElicitationDecision"], Awaitable["ElicitationAnswer"]]
"""A session's own answerer (the notebook's cell run): awaits and returns the answer; it never
settles the decision itself."""


@dataclass(repr=False)
class ElicitationDecision:
    """One entry of a session's question log: what was asked, what was answered, and why."""

    request: Any  # p.FormElicitationRequest | p.UrlElicitationRequest | p.UnknownElicitationRequest
    action: Action | None = None
    content: dict[str, Any] | None = None
    decided_by: DecidedBy | None = None
    detail: str = ""
    #: field -> reason, when an answer was refused as invalid
    errors: dict[str, str] = field(default_factory=dict)
    #: a URL elicitation the agent reported done (``elicitation/complete``)
    completed: bool = False
    turn: Any = field(default=None, repr=False, compare=False)  # the client Turn it belongs to
    done: anyio.Event = field(default_factory=anyio.Event, repr=False, compare=False)
    _on_settled: list[Callable[[ElicitationDecision], None]] = field(
        default_factory=list, repr=False, compare=False
    )

    @property
    def pending(self) -> bool:
        return self.decided_by is None

    @property
    def mode(self) -> str:
        return str(getattr(self.request, "mode", None) or self.request.tag)

    @property
    def message(self) -> str:
        return message_of(self.request)

    @property
    def schema(self) -> p.ElicitationSchema | None:
        return schema_of(self.request)

    def check(self, action: str, content: Any) -> tuple[Action, dict[str, Any] | None, str]:
        """``(action, content, why-not)``: the answer to send for ``action``/``content``;
        an answer that cannot be sent comes back as ``cancel`` with the reason."""
        if action not in p.ELICITATION_ACTIONS:
            return "cancel", None, f"{visible_text(str(action))!r} is not an answer"
        if action != "accept":
            return action, None, ""  # type: ignore[return-value]
        if isinstance(self.request, p.UrlElicitationRequest):
            return "accept", None, ""
        schema = self.schema
        if schema is None:
            return "cancel", None, "the request's mode is not known"
        values = {} if content is None else content
        errors = p.content_errors(schema, values)
        if errors:
            self.errors = errors
            summary = "; ".join(f"{visible_text(k) or 'answer'} {v}" for k, v in errors.items())
            return "cancel", None, f"invalid answer: {summary}"
        return "accept", {k: v for k, v in values.items() if v is not None}, ""

    def settle(self, action: str, content: Any, decided_by: DecidedBy, detail: str = "") -> bool:
        """Record the answer once (checked first); later calls are ignored. True if decided."""
        if self.decided_by is not None:
            return False
        checked, values, why = self.check(action, content)
        if why:
            decided_by, detail = "invalid", why
        self.action = checked
        self.content = values
        self.decided_by = decided_by
        self.detail = detail
        self.done.set()
        callbacks, self._on_settled = self._on_settled, []
        call_each(callbacks, self)  # pushed in the settling thread: forms update at once
        return True

    def when_settled(self, callback: Callable[[ElicitationDecision], None]) -> None:
        """Call ``callback(decision)`` once it is settled (at once if it is already)."""
        if self.decided_by is None:
            self._on_settled.append(callback)
        else:
            call_each([callback], self)

    def cancel(self, decided_by: DecidedBy, detail: str) -> bool:
        return self.settle("cancel", None, decided_by, detail)

    def response(self) -> dict[str, Any]:
        if self.action == "accept":
            return p.CreateElicitationResponse.accept(self.content).to_wire()
        if self.action == "decline":
            return p.CreateElicitationResponse.decline().to_wire()
        return p.CreateElicitationResponse.cancel().to_wire()

    def __repr__(self) -> str:
        head = f"<ElicitationDecision {visible_text(self.message)[:60]!r}"
        if self.decided_by is None:
            return f"{head} pending>"
        detail = f" ({visible_text(self.detail)})" if self.detail else ""
        return f"{head} {self.action} by {self.decided_by}{detail}>"


def message_of(request: Any) -> str:
    """The question's message (an unknown mode's too, from its raw payload)."""
    if isinstance(request, p.UnknownElicitationRequest):
        return str(request.raw.get("message", ""))
    return str(request.message)


def schema_of(request: Any) -> p.ElicitationSchema | None:
    """A form's requested schema; None for a URL or an unknown mode."""
    if isinstance(request, p.FormElicitationRequest):
        return request.requested_schema
    return None


def too_many_fields(request: Any) -> str | None:
    """Why a form is refused for its size (more than `MAX_FORM_FIELDS` fields), or None."""
    schema = schema_of(request)
    count = len(schema.properties) if schema is not None else 0
    if count <= MAX_FORM_FIELDS:
        return None
    return f"the form has {count:,} fields (at most {MAX_FORM_FIELDS} are shown): not asked"


def _split(answer: Any) -> tuple[str, Any]:
    if answer is None:
        return "cancel", None
    if isinstance(answer, str):
        return answer, None
    if isinstance(answer, Mapping):
        return "accept", dict(answer)
    return f"a {type(answer).__name__}", None


async def call_handler(handler: ElicitationHandler, request: Any) -> Any:
    """Run a sync or async handler; sync ones in a worker thread (abandoned on cancel)."""
    if inspect.iscoroutinefunction(handler):
        return await handler(request)
    result = await anyio.to_thread.run_sync(handler, request, abandon_on_cancel=True)
    if inspect.isawaitable(result):
        result = await result
    return result


async def decide(
    decision: ElicitationDecision,
    handler: ElicitationHandler | None,
    asker: ElicitationAsker | None = None,
) -> dict[str, Any]:
    """Ask ``asker`` (else ``handler``) and settle ``decision``; return the JSON-RPC result.

    Whatever settles the decision first wins (a cancel, the turn's end, the agent withdrawing
    the request); the ask is then cancelled.
    """
    if asker is None and handler is None:
        decision.cancel("no-handler", "no elicitation handler is set")
        return decision.response()

    async def ask() -> None:
        try:
            if asker is not None:
                given = await asker(decision)
                decision.settle(given.action, given.content, given.by, given.detail)
                return
            assert handler is not None
            answer = await call_handler(handler, decision.request)
        except Exception as exc:  # a broken handler answers nothing
            log.warning("elicitation handler raised: %r", exc)
            decision.cancel("error", f"handler raised {type(exc).__name__}: {exc}")
            return
        action, content = _split(answer)
        decision.settle(action, content, "handler", "" if answer is not None else "no answer")

    async with anyio.create_task_group() as tg:

        async def watch() -> None:
            await decision.done.wait()
            tg.cancel_scope.cancel()

        tg.start_soon(watch)
        tg.start_soon(ask)
    return decision.response()
