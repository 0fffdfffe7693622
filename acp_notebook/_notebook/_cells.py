"""Cell-scoped turns: what one ``%%acp`` cell starts, shows and owns.

A cell's run lives in the kernel's main thread (where the cell awaits) and in the I/O thread
(where the agent's updates arrive). The view is refreshed from the I/O thread at most every
``REFRESH_INTERVAL`` seconds, so floods of updates cost a bounded number of widget messages.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import logging
import os
import signal
import string
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio

from .._client._elicitation import ElicitationAnswer, ElicitationDecision, too_many_fields
from .._client._permission import Answer, PermissionDecision
from .._client._session import Session, TerminalChunk
from .._client._turn import Turn
from .._policy._rules import Policy
from .._protocol import RequestPermissionRequest
from ._bridge import WAIT_SLICE, AgentHandle, IOThread, result_of
from ._errors import NONINTERACTIVE_TIMEOUT, TIMEOUT_ENV
from ._events import Events

log = logging.getLogger("acp_notebook.cells")

Outcome = tuple[str | None, str | None, str]  # (option_id, decided_by, detail)

REFRESH_INTERVAL = 0.1
WAITING_CLASS = "acp-cell-waiting"  # on the turn view while its cell awaits the turn
CANCEL_WAIT = 10.0


#: Permission cards of one cell open (undecided) at once. A request past that is answered
#: cancelled without a card, before any ``--allow`` rule is read (so never allowed), and counted
#: on one line (``_widgets._overflow``): a person answers cards one at a time, and an agent that
#: sends 2,000 requests at once must not build 2,000 cards. Parallel tool calls stay well below.
MAX_OPEN_PERMISSIONS = 16
#: Questions (``elicitation/create`` forms) of one cell open at once; past that, as above,
#: answered ``cancel`` without a form. A person fills in one form at a time.
MAX_OPEN_QUESTIONS = 8


def front_end_seen() -> bool:
    """Whether a widget front end has connected to this kernel.

    JupyterLab's and Notebook 7's widget manager (``@jupyter-widgets/base``) opens the
    ``jupyter.widget.control`` comm as soon as it connects to a kernel, to restore widget state;
    ipywidgets keeps that comm on ``Widget._control_comm``. nbclient (under ``jupyter
    execute`` and ``nbconvert --execute``) and nbval open no comm at all, so nothing can click a
    card there. ``_magics`` also takes a cell that came with a cell id for one run by a front
    end (see ``_unattended_timeout``); a front end that does neither cannot answer.

    The comm is only opened if ipywidgets was imported before the front end connected, so it
    is no signal for the first cells of a fresh kernel: the cell id is.
    """
    import ipywidgets  # type: ignore[import-untyped]

    return getattr(ipywidgets.Widget, "_control_comm", None) is not None


def noninteractive_timeout(configured: float | None) -> float | None:
    """The timeout for requests no front end can answer: ``configured`` (``%config``), else
    ``$ACP_NOTEBOOK_PERMISSION_TIMEOUT``, else ``NONINTERACTIVE_TIMEOUT``; None if <= 0."""
    value = configured
    if value is None:
        text = os.environ.get(TIMEOUT_ENV, "").strip()
        try:
            value = float(text) if text else NONINTERACTIVE_TIMEOUT
        except ValueError:
            log.warning("ignoring %s=%r: not a number of seconds", TIMEOUT_ENV, text)
            value = NONINTERACTIVE_TIMEOUT
    return value if value > 0 and value != float("inf") else None


@contextlib.contextmanager
def _sigint_sets(loop: asyncio.AbstractEventLoop, event: asyncio.Event) -> Iterator[None]:
    """While active, SIGINT sets ``event`` (only possible on the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_sigint(signum: int, frame: Any) -> None:
        loop.call_soon_threadsafe(event.set)

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _log_failure(task: asyncio.Future[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("cancelling the turn after a timeout failed: %r", task.exception())


class PromptTemplateError(ValueError):
    pass


def interpolate(body: str, namespace: Mapping[str, Any]) -> str:
    """``{name}`` from the user namespace; ``{{`` and ``}}`` stand for literal braces.

    Only plain names are filled in (with an optional ``!r``/``!s``/``!a`` conversion and a
    format spec such as ``{x:>8}``): no expressions, indexing or attributes.
    """
    formatter = string.Formatter()
    try:
        parts = list(formatter.parse(body))
    except ValueError as exc:
        raise PromptTemplateError(
            f"cannot fill in the prompt: {exc} (write {{{{ and }}}} for literal braces)"
        ) from None
    out: list[str] = []
    for literal, field_name, spec, conversion in parts:
        out.append(literal)
        if field_name is None:
            continue
        if not field_name.isidentifier() or (spec and "{" in spec):
            raw = "{" + field_name
            raw += f"!{conversion}" if conversion else ""
            raw += f":{spec}" if spec else ""
            raise PromptTemplateError(
                f"only {{name}} is interpolated; '{raw}}}' is not a plain name"
                " - compute it in a variable first (or write {{ and }} for literal braces)"
            )
        if field_name not in namespace:
            raise PromptTemplateError(
                f"{{{field_name}}} is not defined in the notebook"
                " (write {{ and }} for literal braces)"
            )
        try:
            value = formatter.convert_field(namespace[field_name], conversion)
            out.append(formatter.format_field(value, spec or ""))
        except (ValueError, TypeError) as exc:
            raise PromptTemplateError(f"cannot fill in {{{field_name}}}: {exc}") from None
    return "".join(out)


DETAIL = {"timeout": "no answer before the timeout", "closed": "the card was closed"}


def _detail(by: str) -> str:
    """A card's answer's detail: for a click (in the cell or the panel), who clicked (the
    username of the click's message, where the front end sends one; see ``_widgets._sender``),
    read while its handler runs; else why it ended."""
    if by in ("click", "panel"):
        from .._widgets._sender import sender

        return sender()
    return DETAIL.get(by, "")


@dataclass(eq=False)
class Request:
    """One request of a cell's turn that a person is asked, as its cards see it: the request
    (a snapshot), its cards (the cell's, the panel's: ``_widgets._asking.AskCard``), and the
    outcome once it settled, pushed to every card then (``settle``). Permission requests
    (``Asked``) and questions (``Question``) are its kinds; each adds the callback every card
    of it calls (any thread)."""

    run: CellRun
    request: Any
    cards: list[Any] = field(default_factory=list, kw_only=True)
    outcome: tuple[Any, ...] | None = field(default=None, kw_only=True)

    def second_card(self, timeout: float | None) -> Any:
        """Another card of the request (the side panel's inbox): a click there answers as
        ``panel``; closing it answers nothing (the cell's card and the run fail closed)."""
        raise NotImplementedError

    def push(self, outcome: tuple[Any, ...]) -> None:
        """Show the settled outcome on every card of the request (the owner's push)."""
        for card in list(self.cards):
            try:
                card.mark_decided(*outcome)
            except Exception:
                log.exception("updating a card of %s failed", type(self).__name__)


@dataclass(eq=False)
class Asked(Request):
    """A permission request: ``choose(option_id, by)``; when it was asked."""

    request: RequestPermissionRequest
    choose: Callable[[str | None, str], None]
    asked_at: float
    outcome: Outcome | None = field(default=None, kw_only=True)

    def second_card(self, timeout: float | None) -> Any:
        from .._widgets import PermissionCard

        def on_choose(option_id: str | None, by: str) -> None:
            if by != "closed":
                self.choose(option_id, "panel" if by == "click" else by)

        return PermissionCard(self.request, on_choose, timeout=timeout, outcome=self.outcome)


@dataclass(eq=False)
class Question(Request):
    """A question (``elicitation/create``): ``answer(action, content, by)``."""

    answer: Callable[[str, Any, str], None]
    outcome: tuple[str | None, str | None, str, Any] | None = field(default=None, kw_only=True)

    def second_card(self, timeout: float | None) -> Any:
        from .._widgets import ElicitationCard

        def on_answer(action: str, content: Any, by: str) -> None:
            if by != "closed":
                self.answer(action, content, "panel" if by == "click" else by)

        return ElicitationCard(self.request, on_answer, timeout=timeout, outcome=self.outcome)


GONE = "the cell that started this work is gone, and no side panel shows the request"


@dataclass
class CellRun:
    """One ``%%acp`` execution: its session, turn, view and policy.

    It *is* the session's permission handler while its turn runs (``ask``): it shows a card,
    then awaits the one answer a click (in the cell or the panel), its policy, a timeout or a
    closed card gives; a cancel, the turn's end or the agent's exit settle the decision from
    outside and cancel the wait. Either way every card of the request is updated by a push
    (``PermissionDecision.when_settled``), never by polling. Questions (``elicitation/create``)
    take the same path (``answer``).
    """

    key: str
    handle: AgentHandle
    session: Session
    turn: Turn
    view: Any  # TurnView
    policy: Policy
    timeout: float | None
    io: IOThread
    events: Events = field(default_factory=Events)
    #: the timeout of a card when no front end can answer it (see front_end_seen)
    unattended_timeout: float | None = None
    asked: list[Asked] = field(default_factory=list)  # permission requests, in order
    questions: list[Question] = field(default_factory=list)  # questions, in order
    cards: list[Any] = field(default_factory=list)  # the cell's permission cards
    forms: list[Any] = field(default_factory=list)  # question cards (elicitation/create)
    done: concurrent.futures.Future[Any] | None = None
    _dirty: bool = True
    changes: int = 0  # bumped on every update or decision (the saved record's change count)
    _unsubscribe: list[Any] = field(default_factory=list)
    _running: bool = False  # while run() runs (I/O thread)
    #: after the turn's idle, while the latest ``background`` snapshot names items of this turn:
    #: the view keeps listening to updates (permission requests and questions are not taken)
    background: bool = False
    _refresh_due: bool = False  # a background refresh is scheduled on the I/O loop
    _unsubscribe_updates: Any = None
    #: the cell's view was closed (the cell ran again, its output went)
    view_gone: bool = False
    #: the turn ended with its idle: the view follows late updates until the next turn
    after_idle: bool = False
    #: whether a side panel shows requests (its inbox is where a cell gone is asked)
    panel_shows: Callable[[], bool] = field(default=lambda: False, repr=False)
    _view_closing: bool = False
    #: the agent's ``run_code`` requests (``_kernel_code.CodeRequest``), in order
    code: list[Any] = field(default_factory=list)
    #: work for the thread that waits for this turn (``on_waiting_thread``)
    _jobs: list[Callable[[bool], None]] = field(default_factory=list)
    _jobs_open: bool = True  # until the cell stops waiting (or never waits: --bg)
    _wake: Callable[[], object] | None = None  # while a cell waits: wakes its loop
    _jobs_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    #: permission requests and questions of this cell not settled yet (I/O thread)
    _open_asks: int = 0
    _open_questions: int = 0
    #: the one line that counts requests refused past the caps (made on the first one)
    overflow: Any = None
    #: called (I/O thread) after each refresh of the view once the turn went idle: its saved
    #: transcript follows the background work (``_record.follow_background``)
    after_refresh: list[Callable[[], None]] = field(default_factory=list, repr=False)

    # -- I/O thread -------------------------------------------------------------------
    def attach(self) -> None:
        """Subscribe to the session and answer its requests (I/O thread, before the prompt
        is sent)."""
        self._unsubscribe_updates = self.session.subscribe(
            self._on_update, terminal_chunks=self._on_chunk
        )
        self._unsubscribe.append(self.session.ask_permissions(self.ask))
        self._unsubscribe.append(self.session.ask_elicitations(self.answer))

    def detach(self) -> None:
        self._detach_requests()
        self.background = False
        self.after_idle = False
        self._after_refresh()  # the last look: the background is over here
        if self._unsubscribe_updates is not None:
            self._unsubscribe_updates()
            self._unsubscribe_updates = None

    def _detach_requests(self) -> None:
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe.clear()

    def _on_update(self, session: Session, update: Any) -> None:
        if self.after_idle and session.turn is not self.turn:
            # The session's next turn started: its cell shows the rest (and carries on this
            # turn's background work); this view gets a last look, then stops listening.
            self._refresh_now()
            self.detach()
            return
        if session.turn is self.turn:
            if not self.view_gone:
                self.view.note_update(update)
            self.events.emit("session_update", self, update)
        self._dirty = True
        self.changes += 1
        if self.after_idle:
            if (
                self.background
                and getattr(update, "session_update", None) == "state_update"
                and not self.turn.state.background
            ):
                self._refresh_now()  # the items that left show their final state
                self._detach_requests()  # nothing of this turn is left to ask about
                self.background = False
            else:
                self._refresh_soon()  # what the agent says after idle shows here too

    def _on_chunk(self, session: Session, chunk: TerminalChunk) -> None:
        """A terminal's output (a view of it: no model made): what `_on_update` does with it,
        in short while this cell's turn runs (a flood comes this way)."""
        if session.turn is not self.turn or self.after_idle:
            self._on_update(session, chunk)
            return
        if not self.view_gone:
            self.view.note_update(chunk)  # (its terminal_id and session_update: no model)
        self.events.emit("session_update", self, chunk)
        self._dirty = True
        self.changes += 1

    def _refresh_soon(self) -> None:
        """A background refresh at most every ``REFRESH_INTERVAL`` (I/O thread)."""
        if self._refresh_due:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # applied outside the I/O loop: refresh at once
            self._refresh_now()
            return
        self._refresh_due = True
        loop.call_later(REFRESH_INTERVAL, self._background_refresh)

    def _background_refresh(self) -> None:
        self._refresh_due = False
        if self.after_idle and self._dirty:
            self._refresh_now()

    def _refresh_now(self) -> None:
        self._dirty = False
        if self.view_gone:
            return
        try:
            self.view.refresh()
        except Exception:
            log.exception("refreshing the turn view failed")
        self._after_refresh()

    def _after_refresh(self) -> None:
        for hook in list(self.after_refresh):
            try:
                hook()
            except Exception:
                log.exception("following the background work failed")

    # -- permission requests (I/O thread) ---------------------------------------------------
    async def ask(self, decision: PermissionDecision) -> Answer:
        """The session's permission handler while this cell's turn runs. A request a person
        must answer gets a card (buttons, countdown); one nobody is asked (a rule decided it,
        or it was settled already: a cancel came first) only a row in its tool call's view
        (`PermissionRow`, no widget), whose words are the card's."""
        from .._widgets import PermissionCard
        from .._widgets._card import PermissionRow

        if decision.turn is not self.turn:  # not this cell's turn: nobody here can answer
            return Answer(None, "no-handler", "no cell shows this turn")
        if self._open_asks >= MAX_OPEN_PERMISSIONS:  # before the policy: never allowed
            self._count_overflow("permission")
            why = f"{MAX_OPEN_PERMISSIONS} permission requests of this cell are still open"
            return Answer(None, "overflow", why)
        loop = asyncio.get_running_loop()
        answered: asyncio.Future[Answer] = loop.create_future()

        def resolve(answer: Answer) -> None:
            if not answered.done():
                answered.set_result(answer)

        def choose(option_id: str | None, by: str) -> None:  # any card of it, any thread
            log.debug("card answered %r by %s", option_id, by)
            answer = Answer(option_id, by, _detail(by))  # type: ignore[arg-type]
            self.io.soon(resolve, answer)

        decided = self.policy.decide(decision.request)
        if decided is not None and decided.allow and not decision.rules_may_allow:
            decided = None  # a person decides it (a client command outside its folder ...)
        asked = Asked(self, decision.request, choose, decision.asked_at)
        self.asked.append(asked)
        self._open_asks += 1
        if not self.view_gone:
            card: Any
            if decided is not None or not decision.pending:  # nobody is asked
                card = PermissionRow(decision.request)
            else:
                # --timeout counts from the request's arrival (a write's diff is made before)
                timeout = self.card_timeout(since=decision.asked_at)
                card = PermissionCard(decision.request, choose, timeout=timeout)
            asked.cards.append(card)
            self.cards.append(card)
            self.view.add_card(card)
            self._refresh_after_idle()
        self.changes += 1
        decision.when_settled(functools.partial(self._settled, asked))
        if decided is not None:
            return Answer(decided.option_id, "policy", decided.rule)
        if self.view_gone and not self.panel_shows():  # nobody can answer it anywhere
            return Answer(None, "closed", GONE)
        self.events.emit("permission", self, asked)  # the panel adds its card to asked.cards
        return await answered

    def _settled(self, asked: Asked, decision: PermissionDecision) -> None:
        """Push a settled decision to every card of it (I/O thread, as it settles)."""
        asked.outcome = (decision.option_id, decision.decided_by, decision.detail)
        self._open_asks -= 1
        self._request_settled(asked, asked.outcome, "permission_settled")

    # -- questions (I/O thread) -------------------------------------------------------------
    async def answer(self, decision: ElicitationDecision) -> ElicitationAnswer:
        """The session's question handler while this cell's turn runs: a form card, with the
        permission card's countdown; every path but a valid Submit or Decline is ``cancel``."""
        from .._widgets import ElicitationCard

        if decision.turn is not self.turn:
            return ElicitationAnswer("cancel", None, "no-handler", "no cell shows this turn")
        if self._open_questions >= MAX_OPEN_QUESTIONS:
            self._count_overflow("question")
            why = f"{MAX_OPEN_QUESTIONS} questions of this cell are still open"
            return ElicitationAnswer("cancel", None, "overflow", why)
        too_big = too_many_fields(decision.request)
        if too_big is not None:  # its card says so, and builds no field
            return self._refuse_form(decision, too_big)
        loop = asyncio.get_running_loop()
        answered: asyncio.Future[ElicitationAnswer] = loop.create_future()

        def resolve(answer: ElicitationAnswer) -> None:
            if not answered.done():
                answered.set_result(answer)

        def on_answer(action: str, content: Any, by: str) -> None:  # the card, any thread
            answer = ElicitationAnswer(action, content, by, _detail(by))  # type: ignore[arg-type]
            self.io.soon(resolve, answer)

        question = Question(self, decision.request, on_answer)
        self.questions.append(question)
        self._open_questions += 1
        if not self.view_gone:
            card = ElicitationCard(decision.request, on_answer, timeout=self.card_timeout())
            question.cards.append(card)
            self.forms.append(card)
            self.view.add_card(card)
            self._refresh_after_idle()
        self.changes += 1
        decision.when_settled(functools.partial(self._question_settled, question))
        if self.view_gone and not self.panel_shows():
            return ElicitationAnswer("cancel", None, "closed", GONE)
        self.events.emit("elicitation", self, question)  # the panel adds its card
        return await answered

    def _question_settled(self, question: Question, decision: ElicitationDecision) -> None:
        """Push a settled question to every card of it (I/O thread, as it settles)."""
        question.outcome = (
            decision.action,
            decision.decided_by,
            decision.detail,
            decision.content,
        )
        self._open_questions -= 1
        self._request_settled(question, question.outcome, "elicitation_settled")

    def _request_settled(self, record: Request, outcome: tuple[Any, ...], event: str) -> None:
        """What every kind of request does as it settles (I/O thread): its cards show the
        outcome, the record counts a change, the panel hears of it; a card's timeout ends the
        turn, as a cancel does (answered, then ``session/cancel``)."""
        record.push(outcome)
        self._dirty = True
        self.changes += 1
        self._refresh_after_idle()  # a row (no widget of its own) shows it on a refresh
        self.events.emit(event, self, record)
        if outcome[1] == "timeout":
            self._cancel_after_timeout()

    def _refuse_form(self, decision: ElicitationDecision, why: str) -> ElicitationAnswer:
        """A form too large to build: its card (no fields) shows why; answered cancel."""
        from .._widgets import ElicitationCard

        answer = ElicitationAnswer("cancel", None, "invalid", why)
        if not self.view_gone:
            outcome = (answer.action, answer.by, why, None)
            card = ElicitationCard(decision.request, lambda *_: None, outcome=outcome)
            self.forms.append(card)
            self.view.add_card(card)
            self._refresh_after_idle()
        self.changes += 1
        return answer

    def _count_overflow(self, kind: str) -> None:
        """One more request refused past a cap: counted on the cell's one overflow line."""
        from .._widgets._overflow import OverflowCard

        self.changes += 1
        if self.view_gone:
            return
        if self.overflow is None:
            self.overflow = OverflowCard(MAX_OPEN_PERMISSIONS, MAX_OPEN_QUESTIONS)
            self.overflow.add(kind)
            self.view.add_card(self.overflow)
            self._refresh_after_idle()
        else:
            self.overflow.add(kind)
        self._dirty = True

    def _refresh_after_idle(self) -> None:
        """A card added after the turn's idle (background work) shows without waiting for
        the next update."""
        if self.background:
            self._dirty = True
            self._refresh_soon()

    def card_timeout(self, since: float | None = None) -> float | None:
        """``--timeout``; else, without a front end to answer, the non-interactive one.
        ``since`` (a ``time.time()``): what is left of it from then (at least 0)."""
        if self.timeout is not None:
            timeout = self.timeout
        elif self.unattended_timeout is None or front_end_seen():
            return None
        else:
            timeout = self.unattended_timeout
        if since is None:
            return timeout
        return max(0.0, timeout - max(0.0, time.time() - since))

    # -- code cards (``_kernel_code``) -------------------------------------------------------
    def show_card(self, card: Any) -> None:
        """Show another kind of card (a code card) in the cell, in arrival order (I/O thread)."""
        if not self.view_gone:
            self.view.add_card(card)
            self._refresh_after_idle()
        self.note_change()

    def note_change(self) -> None:
        """Something the view or the saved record shows changed (a card's outcome, output)."""
        self._dirty = True
        self.changes += 1

    def cancel_after_timeout(self) -> None:
        """A card's countdown ended: cancel the turn, as a permission card's timeout does."""
        self._cancel_after_timeout()

    def fail_code(self, reason: str, detail: str = "") -> None:
        """Every code request of this turn that has not started fails closed (any thread)."""
        for request in list(self.code):
            request.fail_closed(reason, detail)

    def _code_end_reason(self) -> str:
        if self.handle.closed or not self.handle.alive:
            return "shutdown"
        return "cancelled" if self.turn.stop_reason == "cancelled" else "turn-ended"

    def on_waiting_thread(self, job: Callable[[bool], None]) -> bool:
        """Queue ``job`` for the thread that waits for this turn (the kernel's main thread,
        in the loop where the ``%%acp`` cell awaits: between its awaits, never while other
        user code runs). ``job(True)`` runs it; ``job(False)`` drops it when the cell stops
        waiting first. False (not queued) once the cell stopped waiting, or for a cell that
        never waits (``--bg``)."""
        with self._jobs_lock:
            if not self._jobs_open:
                return False
            self._jobs.append(job)
            wake = self._wake
        if wake is not None:
            wake()
        return True

    def no_waiter(self) -> None:
        """Nothing will wait for this turn (``--bg``): jobs are refused, queued ones dropped."""
        self._end_jobs()

    def _start_jobs(self, wake: Callable[[], object]) -> None:
        with self._jobs_lock:
            self._wake = wake

    def _run_jobs(self) -> None:
        """Run the queued jobs, in order, on this (the waiting) thread. A KeyboardInterrupt
        from a job (Interrupt while its code ran) goes on to the caller."""
        while True:
            with self._jobs_lock:
                if not self._jobs:
                    return
                job = self._jobs.pop(0)
            try:
                job(True)
            except Exception:
                log.exception("a job of the waiting cell failed")

    def _end_jobs(self) -> None:
        with self._jobs_lock:
            self._jobs_open = False
            self._wake = None
            left, self._jobs = self._jobs, []
        for job in left:
            try:
                job(False)
            except Exception:
                log.exception("dropping a job of the waiting cell failed")

    def _cancel_after_timeout(self) -> None:
        if self.turn.done or not self._running:
            return
        # On the I/O thread's loop (a settle runs there): start the cancel as a task of it.
        task = asyncio.ensure_future(self.session.cancel())
        task.add_done_callback(_log_failure)

    async def run(self) -> Any:
        """Send the prompt, keep the view fresh until the turn ends; return the stop reason.

        A turn that fails (the agent exited, the prompt was refused) raises the client's error
        itself, never wrapped in an exception group.
        """
        failure: Exception | None = None
        async with anyio.create_task_group() as tg:
            self._running = True
            tg.start_soon(self._refresher)
            try:
                await self.turn.send()
                result = await self.turn.wait()
            except Exception as exc:
                failure = exc
            finally:
                self._running = False
                tg.cancel_scope.cancel()
                self._final_refresh()
                self.events.emit("turn_ended", self)
        if failure is not None:
            raise failure
        return result

    async def _refresher(self) -> None:
        quiet = 0  # refreshes skipped since the last one
        while True:
            await anyio.sleep(REFRESH_INTERVAL)
            quiet += 1
            # Refresh on a change, and at least once a second so the elapsed time moves on
            # while nothing arrives (the view then only re-sends its footer).
            if self._dirty or quiet * REFRESH_INTERVAL >= 1.0:
                self._dirty = False
                quiet = 0
                try:
                    self.view.refresh()
                except Exception:
                    log.exception("refreshing the turn view failed")

    def _final_refresh(self) -> None:
        for decision in self.session.permissions:
            if decision.pending and decision.turn is self.turn:
                decision.settle(None, "cancel", "the turn ended")  # pushed to its cards
        self.fail_code(self._code_end_reason())  # code not started never runs now
        try:
            self.view.refresh()
        except Exception:
            log.exception("refreshing the turn view failed")
        if self.turn.error is None:
            # After the idle the view keeps listening until the session's next turn starts:
            # the agent may go on reporting (background work, a turn of its own after a
            # background command exits). While background work of this turn runs, the run
            # also keeps answering the session's requests: the client routes a request or
            # question for that work here.
            self.after_idle = True
            self.background = bool(self.turn.state.background)
            if not self.background:
                self._detach_requests()
        else:
            self.detach()

    def still_running(self) -> list[str]:
        """The commands of this turn the agent runs itself (its terminals, not the client
        terminals run here, which a cancel kills) that have not ended: a cancel does not stop
        every agent's (Codex's go on); closing the agent does. Read in the I/O thread."""
        return list(self.io.call(self._still_running))

    def _still_running(self) -> list[str]:
        services = self.session.agent.services
        found = []
        for terminal_id, term in self.turn.terminals.items():
            if not term.reported or term.exit_status is not None:
                continue
            if services is not None and services.owns(terminal_id):
                continue
            found.append(term.command or terminal_id)
        return found

    async def cancel(self) -> None:
        await self.session.cancel()

    # -- main thread --------------------------------------------------------------------
    async def wait_in_cell(self) -> Any:
        """Await the end of the turn in the kernel's loop; Interrupt cancels the turn.

        ipykernel's own SIGINT handling does not reach an awaiting cell reliably (with
        ipykernel 7.4 an ``await`` is only interrupted after it completes), so while the cell
        waits we install our own SIGINT handler: it sends ``session/cancel``, waits for the
        agent to go idle, and then raises ``KeyboardInterrupt`` as an interrupted cell should.
        """
        assert self.done is not None
        loop = asyncio.get_running_loop()
        interrupted = asyncio.Event()
        turn_done = asyncio.ensure_future(asyncio.shield(asyncio.wrap_future(self.done)))
        woken = asyncio.Event()  # a job was queued (on_waiting_thread): run it in this loop
        with _sigint_sets(loop, interrupted):
            # Tell the front end (and tests) the cell awaits the turn and Interrupt cancels it.
            self.view.add_class(WAITING_CLASS)
            stop = asyncio.ensure_future(interrupted.wait())
            self._start_jobs(functools.partial(loop.call_soon_threadsafe, woken.set))
            try:
                self._run_jobs()  # queued before the cell began to wait
                while not (turn_done.done() or interrupted.is_set()):
                    wake = asyncio.ensure_future(woken.wait())
                    try:
                        await asyncio.wait(
                            {turn_done, stop, wake}, return_when=asyncio.FIRST_COMPLETED
                        )
                    finally:
                        wake.cancel()
                    if woken.is_set() and not interrupted.is_set():
                        woken.clear()
                        self._run_jobs()
            except (asyncio.CancelledError, KeyboardInterrupt):
                interrupted.set()
            finally:
                stop.cancel()
                if interrupted.is_set():
                    self.fail_code("interrupted")  # before the cancel: nothing more runs
                self._end_jobs()
        self.view.remove_class(WAITING_CLASS)
        if turn_done.done() and not interrupted.is_set():
            return turn_done.result()
        # Interrupted: cancel the turn, give the agent a moment to report it, then stop.
        try:
            await asyncio.wrap_future(self.io.submit(self.cancel))
            await asyncio.wait({turn_done}, timeout=CANCEL_WAIT)
        except Exception as exc:
            log.warning("cancelling the turn failed: %r", exc)
        if not turn_done.done():
            turn_done.cancel()
        raise KeyboardInterrupt

    def wait_blocking(self) -> Any:
        assert self.done is not None
        try:
            self._pump_blocking()
            return self.done.result()
        except KeyboardInterrupt:
            self.cancel_blocking()
            raise

    def _pump_blocking(self) -> None:
        """Wait for the turn on this thread, running its queued jobs as they come."""
        assert self.done is not None
        stirred = threading.Event()  # the turn ended, or a job was queued
        self.done.add_done_callback(lambda _: stirred.set())
        self._start_jobs(stirred.set)
        try:
            self._run_jobs()
            while not self.done.done():
                stirred.wait(WAIT_SLICE)  # in slices: an Interrupt lands at once (WAIT_SLICE)
                if stirred.is_set():
                    stirred.clear()  # before the jobs: none queued meanwhile is missed
                    self._run_jobs()
        except KeyboardInterrupt:
            self.fail_code("interrupted")  # before the cancel: nothing more runs
            raise
        finally:
            self._end_jobs()

    def cancel_blocking(self) -> None:
        """Send ``session/cancel`` and give the agent a moment to go idle."""
        assert self.done is not None
        try:
            self.io.call(self.cancel)
        except Exception as exc:
            log.warning("cancel failed: %r", exc)
        try:
            result_of(self.done, CANCEL_WAIT)
        except Exception:
            log.debug("turn did not end cleanly after cancel", exc_info=True)

    def close_view(self) -> None:
        """The cell is run again (or its output goes): close the view. While this turn's
        background work goes on, the run keeps answering its requests, from the side panel's
        inbox only (``view_gone``): nobody is asked in a cell that no longer exists."""
        if self._view_closing:
            return
        self._view_closing = True
        self.io.soon(self._view_closed)
        for card in [*self.cards, *self.forms]:
            card.close_quietly()
        self.view.close_all()

    def _view_closed(self) -> None:
        self.view_gone = True
        if not self.background:
            self.detach()
