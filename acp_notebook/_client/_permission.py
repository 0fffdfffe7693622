"""Fail-closed permission decisions.

The agent asks; a handler chosen by the user answers with an ``optionId`` or ``None``.
Everything that is not a clear, offered answer becomes ``cancelled``: a handler that raises,
an id that was not offered, no answer before the turn is cancelled or ends, a malformed request.
Nothing here ever turns an unclear answer into an allow.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio

from .._protocol import RequestPermissionRequest
from .._protocol._visible import visible_text

log = logging.getLogger("acp_notebook.permission")

PermissionHandler = Callable[
    [RequestPermissionRequest], "str | Answer | Awaitable[str | Answer | None] | None"
]
"""Called with the request; returns an offered ``optionId``, an :class:`Answer`, or ``None``."""

DecidedBy = Literal[
    "handler",  # the permission handler answered
    "click",  # a person clicked a button on the cell's card
    "panel",  # a person clicked a button in the side panel
    "policy",  # an --allow/--deny rule matched (detail names it)
    "timeout",  # nobody answered in time
    "cancel",  # the turn was cancelled or ended first
    "closed",  # the card was closed or the kernel shut down
    "error",  # the handler raised
    "invalid",  # the answer was not an offered option
    "no-handler",  # nothing could answer
    "withdrawn",  # the agent withdrew the request
    "earlier",  # a client command the agent's own request, allowed this turn, named exactly
    "overflow",  # not asked: too many requests of the cell were open (answered cancelled)
]

CANCELLED: dict[str, Any] = {"outcome": {"outcome": "cancelled"}}


@dataclass(frozen=True)
class Answer:
    """What a handler decided and who decided it: a handler that is a card, a policy or a
    timeout says so, and the decision log keeps it. ``option_id`` None answers cancelled."""

    option_id: str | None
    by: DecidedBy = "handler"
    detail: str = ""


SettledCallback = Callable[["PermissionDecision"], None]


@dataclass(repr=False)
class PermissionDecision:
    """One entry of a session's decision log: what was asked, what was answered, and why."""

    request: RequestPermissionRequest
    option_id: str | None = None
    decided_by: DecidedBy | None = None
    detail: str = ""
    turn: Any = field(default=None, repr=False, compare=False)  # the client Turn it belongs to
    done: anyio.Event = field(default_factory=anyio.Event, repr=False, compare=False)
    #: when the request arrived (``time.time()``)
    asked_at: float = field(default_factory=time.time, repr=False, compare=False)
    #: False: a person decides it; a ``--allow`` rule or an earlier allow never approves it (a
    #: ``--deny`` rule still rejects). A client command outside its folder, for one.
    rules_may_allow: bool = field(default=True, repr=False, compare=False)
    _on_settled: list[SettledCallback] = field(default_factory=list, repr=False, compare=False)

    @property
    def pending(self) -> bool:
        return self.decided_by is None

    @property
    def option_kind(self) -> str | None:
        for option in self.request.options:
            if option.option_id == self.option_id:
                return str(option.kind)
        return None

    @property
    def allowed(self) -> bool:
        kind = self.option_kind
        return kind is not None and kind.startswith("allow")

    def settle(self, option_id: str | None, decided_by: DecidedBy, detail: str = "") -> bool:
        """Record the answer once; later calls are ignored. Returns True if this call decided."""
        if self.decided_by is not None:
            return False
        if option_id is not None and option_id not in offered_ids(self.request):
            option_id, decided_by, detail = None, "invalid", f"option {option_id!r} was not offered"
        self.option_id = option_id
        self.decided_by = decided_by
        self.detail = detail
        self.done.set()
        callbacks, self._on_settled = self._on_settled, []
        call_each(callbacks, self)  # pushed in the settling thread: cards update at once
        return True

    def when_settled(self, callback: SettledCallback) -> None:
        """Call ``callback(decision)`` once it is settled (at once if it is already)."""
        if self.decided_by is None:
            self._on_settled.append(callback)
        else:
            call_each([callback], self)

    def __repr__(self) -> str:
        """Short and deterministic: ``<PermissionDecision 'Run `ls`?' allow_once by policy
        --allow 'ls*'>``, ``<PermissionDecision 'Run `ls`?' pending>``."""
        head = f"<PermissionDecision {self.request.title!r}"
        if self.decided_by is None:
            return f"{head} pending>"
        what = self.option_kind or ("cancelled" if self.option_id is None else self.option_id)
        detail = visible_text(self.detail)
        if detail:
            detail = f" {detail}" if self.decided_by == "policy" else f" ({detail})"
        return f"{head} {what} by {self.decided_by}{detail}>"

    def response(self) -> dict[str, Any]:
        if self.option_id is None:
            return dict(CANCELLED)
        return {"outcome": {"outcome": "selected", "optionId": self.option_id}}


def call_each(callbacks: list[Callable[[Any], None]], decision: Any) -> None:
    """Call each ``callback(decision)``; one that raises is logged, the others still run."""
    for callback in callbacks:
        try:
            callback(decision)
        except Exception:
            log.exception("a settled-callback of %r failed", decision)


def offered_ids(request: RequestPermissionRequest) -> set[str]:
    return {option.option_id for option in request.options}


def _and(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


MAX_OPTIONS = 16


def invalid_options(request: RequestPermissionRequest) -> str | None:
    """Why ``request`` cannot be answered unambiguously, or ``None`` when it can.

    A request with no options, an option with an empty id or no kind, or two options under
    one id (whatever their kinds: the agent alone knows which one an answer would select) is
    invalid; it is to be answered ``cancelled`` before any handler, policy or card sees it.
    Agent strings in the reason have their hidden characters made visible. Unknown kinds are
    valid (they are UI hints).
    """
    options = list(request.options or [])
    if not options:
        return "no options"
    if len(options) > MAX_OPTIONS:  # a card shows each option: no real request needs more
        return f"{len(options)} options (at most {MAX_OPTIONS} are shown)"
    kinds: dict[str, list[str]] = {}
    for option in options:
        kind = str(option.kind or "")
        if not option.option_id:
            return f"an option has an empty id ({visible_text(kind) or 'no kind'})"
        if not kind:
            return f"option {visible_text(option.option_id)!r} has no kind"
        kinds.setdefault(option.option_id, []).append(visible_text(kind))
    for option_id, seen in kinds.items():
        if len(seen) > 1:
            return f"duplicate option id {visible_text(option_id)!r} ({_and(seen)})"
    return None


async def call_handler(
    handler: PermissionHandler, request: RequestPermissionRequest
) -> str | Answer | None:
    """Run a sync or async handler. Sync handlers run in a worker thread so they cannot
    block the event loop; the thread is abandoned if the decision is cancelled."""
    if inspect.iscoroutinefunction(handler):
        return await handler(request)  # type: ignore[no-any-return]
    result = await anyio.to_thread.run_sync(handler, request, abandon_on_cancel=True)
    if inspect.isawaitable(result):
        result = await result
    return result


Asker = Callable[["PermissionDecision"], Awaitable["str | Answer | None"]]
"""A session's own handler (the notebook's cell run): called with the decision, it awaits and
returns the answer; it never settles the decision itself."""


async def decide(
    decision: PermissionDecision,
    handler: PermissionHandler | None,
    asker: Asker | None = None,
) -> dict[str, Any]:
    """Ask ``asker`` (else ``handler``) and settle ``decision``; return the JSON-RPC result.

    The caller may settle the decision from elsewhere at any time (cancel, turn end, the
    agent withdrawing the request); whatever settles first wins, and the ask is cancelled.
    """
    if asker is None and handler is None:
        decision.settle(None, "no-handler", "no permission handler is set")
        return decision.response()

    async def ask() -> None:
        try:
            if asker is not None:
                answer = await asker(decision)
            else:
                assert handler is not None
                answer = await call_handler(handler, decision.request)
        except Exception as exc:  # a broken handler must not mean allow
            log.warning("permission handler raised: %r", exc)
            decision.settle(None, "error", f"handler raised {type(exc).__name__}: {exc}")
            return
        if isinstance(answer, Answer):
            decision.settle(answer.option_id, answer.by, answer.detail)
        elif answer is not None and not isinstance(answer, str):
            decision.settle(None, "invalid", f"handler returned {type(answer).__name__}")
        elif answer is None:
            decision.settle(None, "handler", "handler returned no option")
        else:
            decision.settle(answer, "handler")

    async with anyio.create_task_group() as tg:

        async def watch() -> None:
            await decision.done.wait()
            tg.cancel_scope.cancel()

        tg.start_soon(watch)
        tg.start_soon(ask)
    return decision.response()
