"""Code the agent asks to run in the kernel (the ``run_code`` kernel tool), behind approval.

:func:`request_code` is the one entry point, thread-safe: the MCP server calls it from its own
thread. It finds the ``%%acp`` cell whose run owns the session's current turn, shows a
**code card** there (the code, highlighted, with Allow and Reject), and resolves the returned
future with a :class:`CodeOutcome`. Code runs only after an explicit allow (a click, or the
cell's ``--allow-code``), on the kernel's main thread, from the loop in which the cell awaits
its turn (``CellRun.on_waiting_thread``): between the cell's awaits, never concurrently with
user code, in the user namespace. What it prints, displays and returns (rich reprs as their
``text/plain``) and its traceback go to the card's own output area and back to the agent.

Everything else fails closed, and the outcome says which path it took (``reason``): a reject,
the card's timeout, Interrupt, the end of the turn while the card is open, the agent closed or
the kernel shutting down, a call while the session's turn is being cancelled, or no turn
running at all. A request allowed but not yet started is dropped on all of these paths too.

Threads: the card's choice arrives on any thread and is handed to the I/O thread, where the
turn's state is read; the code itself runs on the cell's thread. A request's state changes
under its own lock, so a request that was settled never runs, and one that started running
is never reported as not run.
"""

from __future__ import annotations

import ast
import concurrent.futures
import contextlib
import itertools
import linecache
import logging
import signal
import threading
import traceback
from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from .._protocol._visible import source_lines

if TYPE_CHECKING:
    from .._client._session import Session
    from ._cells import CellRun
    from ._events import Events


class Notebook(Protocol):
    """What this module needs of ``_notebook.Notebook`` (not imported: ``_notebook`` starts
    the kernel tools, whose ``run_code`` imports this module)."""

    events: Events

    @property
    def runs(self) -> list[CellRun]: ...

    def install_once(self, what: str) -> bool: ...


__all__ = [
    "MAX_CODE",
    "MAX_OPEN",
    "OUTPUT_CAP",
    "CodeOutcome",
    "CodeRequest",
    "request_code",
    "run_source",
]

log = logging.getLogger("acp_notebook.kernel_code")

#: Characters of output (and of a traceback) kept: the rest is cut, and the cut said.
OUTPUT_CAP = 20_000
#: Longest code shown on a card (highlighting 100,000 characters takes about 0.3 s of the I/O
#: thread); longer code is refused unseen, as a command over 100,000 characters is never
#: approved by a rule.
MAX_CODE = 100_000
#: Code cards open (undecided) at once in one cell; more are refused: an agent that sends
#: thousands of requests does not get thousands of cards.
MAX_OPEN = 8

NotRun = Literal[
    "rejected",
    "timeout",
    "interrupted",
    "turn-ended",
    "shutdown",
    "cancelled",
    "no-turn",
    "refused",
]

#: Why code did not run, as the agent and the card read it.
NOT_RUN: dict[str, str] = {
    "rejected": "the user rejected the code",
    "timeout": "no answer before the code card's timeout",
    "interrupted": "the cell was interrupted",
    "turn-ended": "the turn ended before the code could run",
    "shutdown": "the agent was closed or the kernel is shutting down",
    "cancelled": "the turn was cancelled",
    "no-turn": "no %%acp cell is running a turn of this session",
    "refused": "the request cannot be shown",
}
ABANDONED = "the agent stopped waiting for the answer (its tool call was given up)"
NO_WAITER = "the cell of this turn does not wait for it (--bg): code runs only in a cell that waits"

_BY = {"click": "by a click", "policy": "by policy --allow-code"}


@dataclass(frozen=True)
class CodeOutcome:
    """What became of one ``run_code`` request.

    ``ran``: the code started (``reason`` ``allowed`` or ``policy``); ``output`` is what it
    printed, displayed and returned, ``error`` its traceback (or why it did not run).
    """

    ran: bool
    output: str
    error: str | None
    reason: str


def _not_run(reason: str, detail: str = "") -> CodeOutcome:
    return CodeOutcome(False, "", detail or NOT_RUN[reason], reason)


def _cap(text: str, cap: int = OUTPUT_CAP) -> str:
    if len(text) <= cap:
        return text
    return text[:cap] + f"\n… ({len(text) - cap} more characters not shown)"


_numbers = itertools.count(1)


def run_source(code: str, namespace: MutableMapping[str, Any], shell: Any = None) -> CodeOutcome:
    """Run ``code`` in ``namespace`` now, on this thread; capture its output as text.

    stdout, stderr, what it ``display``\\ s (its ``text/plain``) and the value of a last
    expression (as IPython's formatter shows it, else ``repr``), in that order; the traceback
    of an exception, without this function's frame. ``KeyboardInterrupt`` is reported
    (``reason`` ``interrupted``) and raised again once the outcome is made: the caller
    decides what an interrupt means. The reason of an outcome that ran is ``allowed``.
    """
    from IPython.utils import capture

    capture_output: Any = vars(capture)["capture_output"]  # untyped under IPython 8
    filename = f"<agent code {next(_numbers)}>"
    # numbered as Python numbers them (a lone CR ends a line; FF, U+2028 ... do not)
    linecache.cache[filename] = (len(code), None, source_lines(code), filename)
    error: str | None = None
    interrupted: KeyboardInterrupt | None = None
    value_text = ""
    with capture_output(stdout=True, stderr=True, display=True) as captured:
        try:
            tree = ast.parse(code, filename, mode="exec")
            last: ast.Expression | None = None
            final = tree.body[-1] if tree.body else None
            if isinstance(final, ast.Expr):
                tree.body.pop()
                last = ast.Expression(final.value)
            globals_: Any = namespace  # a dict in practice: IPython's user_ns
            exec(compile(tree, filename, "exec"), globals_)  # a person allowed it
            if last is not None:
                value = eval(compile(last, filename, "eval"), globals_)
                if value is not None:
                    value_text = _as_text(value, shell)
        except BaseException as exc:  # the agent's code may raise anything, SystemExit too
            tb = exc.__traceback__.tb_next if exc.__traceback__ is not None else None
            error = "".join(traceback.format_exception(type(exc), exc, tb))
            if isinstance(exc, KeyboardInterrupt):
                interrupted = exc
    parts = [captured.stdout, captured.stderr]
    for shown in captured.outputs:
        text = shown.data.get("text/plain") if isinstance(shown.data, dict) else None
        if isinstance(text, str):
            parts.append(text if text.endswith("\n") else text + "\n")
    if value_text:
        parts.append(value_text if value_text.endswith("\n") else value_text + "\n")
    outcome = CodeOutcome(
        True,
        _cap("".join(parts)),
        None if error is None else _cap(error),
        "interrupted" if interrupted is not None else "allowed",
    )
    if interrupted is not None:
        raise _Interrupted(outcome) from interrupted
    return outcome


class _Interrupted(KeyboardInterrupt):
    def __init__(self, outcome: CodeOutcome) -> None:
        super().__init__()
        self.outcome = outcome


def _as_text(value: Any, shell: Any) -> str:
    formatter = getattr(shell, "display_formatter", None)
    if formatter is not None:
        try:
            data, _metadata = formatter.format(value, include=("text/plain",))
            text = data.get("text/plain")
            if isinstance(text, str):
                return text
        except Exception:
            log.debug("formatting the code's value failed", exc_info=True)
    try:
        return repr(value)
    except Exception as exc:
        return f"<repr of {type(value).__name__} failed: {exc!r}>"


class CodeRequest:
    """One ``run_code`` call: its code, the cell run that shows it, its card and its future.

    States: ``asked`` (the card is open), ``queued`` (allowed: waiting for the cell's thread),
    ``running``, ``done``. Only ``asked`` and ``queued`` can fail closed.
    """

    def __init__(
        self,
        run: CellRun,
        code: str,
        future: concurrent.futures.Future[CodeOutcome],
        *,
        timeout: float | None,
        namespace: MutableMapping[str, Any] | None,
    ) -> None:
        self.run = run
        self.code = code
        self.future = future
        self.timeout = timeout
        self.namespace = namespace
        self.card: Any = None
        self.state: Literal["asked", "queued", "running", "done"] = "asked"
        self.outcome: CodeOutcome | None = None
        self.allowed_by: str | None = None
        self.allowed_from = ""  # who clicked Allow, where the front end named them
        self._lock = threading.Lock()
        future.add_done_callback(self._abandoned)

    def _abandoned(self, future: concurrent.futures.Future[CodeOutcome]) -> None:
        """The caller cancelled the future (the agent's tool call was given up: a client
        timeout, a closed connection): the card must not run code nobody waits for."""
        if future.cancelled():
            self.fail_closed("cancelled", ABANDONED)

    # -- settling (any thread) -------------------------------------------------------------
    def fail_closed(self, reason: str, detail: str = "", shown: str = "") -> bool:
        """Settle a request that has not started: it never runs. False if it started.
        ``shown``: more for the card's line only (who clicked; the agent is not told)."""
        with self._lock:
            if self.state not in ("asked", "queued"):
                return False
            self.state = "done"
            self.outcome = _not_run(reason, detail)
        self._finish(self.outcome, f"Not run - {self.outcome.error}{shown}")
        return True

    def _finish(self, outcome: CodeOutcome, line: str) -> None:
        card = self.card
        if card is not None:
            try:
                card.mark(line)
                if outcome.ran:
                    card.show_result(outcome.output, outcome.error)
            except Exception:
                log.exception("updating the code card failed")
        self.run.note_change()
        if not self.future.done():
            with contextlib.suppress(concurrent.futures.InvalidStateError):  # caller cancelled
                self.future.set_result(outcome)

    # -- the I/O thread ----------------------------------------------------------------------
    def ask(self) -> None:
        """Show the card (or let ``--allow-code`` allow it); I/O thread."""
        from .._widgets._code_card import CodeCard

        run = self.run
        if self.state != "asked":  # given up before it got here
            return
        refused = _refusal(run)
        if refused is not None:
            self.fail_closed(*refused)
            return
        if len(self.code) > MAX_CODE:
            self.fail_closed(
                "refused",
                f"the code is too long to show: {len(self.code):,}"
                f" characters (at most {MAX_CODE:,})",
            )
            return
        if sum(1 for r in run.code if r.state == "asked" and r.card is not None) >= MAX_OPEN:
            self.fail_closed(
                "refused",
                f"{MAX_OPEN} code cards of this cell are still open: wait for their answers",
            )
            return
        by_policy = run.policy.allow_code
        timeout = None if by_policy else self.timeout or run.card_timeout()
        who = run.handle.label if run.handle.agent.info is not None else run.handle.name
        if not run.view_gone:
            card = CodeCard(self.code, self._choose, who=who, timeout=timeout)
            with self._lock:  # a request given up meanwhile (any thread) found no card to mark
                self.card = card
                state: str = self.state  # (another thread may have settled it)
                settled = self.outcome if state == "done" else None
            if settled is not None:
                card.mark(f"Not run - {settled.error}")
            run.show_card(card)
        if by_policy:
            self.allow("policy")

    def _choose(self, allowed: bool, by: str) -> None:  # the card, any thread
        from .._widgets._sender import sender

        who = sender() if by == "click" else ""  # read while the click's handler runs
        try:
            self.run.io.soon(self._decide, allowed, by, who)
        except RuntimeError:  # the I/O loop is gone: the kernel is shutting down
            self.fail_closed("shutdown")

    def _decide(self, allowed: bool, by: str, who: str = "") -> None:
        if allowed and by == "click":
            self.allow("click", who)
            return
        if by == "timeout":
            if self.fail_closed("timeout"):
                self.run.cancel_after_timeout()  # as a permission card's timeout does
        elif by == "closed":
            self.fail_closed("turn-ended", "the code card was closed (the cell ran again?)")
        else:
            self.fail_closed("rejected", shown=f" ({_BY['click']} from {who})" if who else "")

    def allow(self, by: str, who: str = "") -> None:
        """An explicit allow: hand the code to the cell's thread (I/O thread); ``who``: the
        username of the click, where the front end sent one."""
        refused = _refusal(self.run)
        if refused is not None:
            self.fail_closed(*refused)
            return
        with self._lock:
            if self.state != "asked":
                return
            self.state = "queued"
            self.allowed_by = by
            self.allowed_from = f" from {who}" if who else ""
        if self.card is not None:
            self.card.mark(f"Allowed - {_BY.get(by, by)}{self.allowed_from}; running…")
        self.run.note_change()
        if not self.run.on_waiting_thread(self._job):
            self.fail_closed("no-turn", NO_WAITER)

    # -- the cell's thread -------------------------------------------------------------------
    def _job(self, go: bool) -> None:
        """Run the code (``go``), or drop it (the cell stopped waiting). KeyboardInterrupt in
        the code is reported, then raised again: the cell treats it as an Interrupt."""
        if not go:
            self.fail_closed("turn-ended")
            return
        run = self.run
        with self._lock:
            if self.state != "queued":
                return
            # Read here, on the cell's thread, once more: nothing runs for a turn that ended,
            # was cancelled, or whose agent was closed since the allow.
            refused = _refusal(run)
            if refused is None:
                self.state = "running"
        if refused is not None:
            self.fail_closed(*refused)
            return
        shell = _shell()
        namespace = self.namespace
        if namespace is None:
            namespace = shell.user_ns if shell is not None else {}
        by = self.allowed_by or "click"
        reason = "policy" if by == "policy" else "allowed"
        try:
            outcome = _with_default_sigint(lambda: run_source(self.code, namespace, shell))
        except _Interrupted as stopped:
            self._ran(stopped.outcome, by)
            raise KeyboardInterrupt from None
        self._ran(CodeOutcome(True, outcome.output, outcome.error, reason), by)

    def _ran(self, outcome: CodeOutcome, by: str) -> None:
        with self._lock:
            self.state = "done"
            self.outcome = outcome
        how = "ran"
        if outcome.reason == "interrupted":
            how = "interrupted"
        elif outcome.error:
            how = "failed"
        self._finish(outcome, f"Allowed - {_BY.get(by, by)}{self.allowed_from}; {how}")


def _refusal(run: CellRun) -> tuple[NotRun] | tuple[NotRun, str] | None:
    """Why code of ``run``'s turn cannot run now, or None."""
    handle = run.handle
    if handle.closed or not handle.alive or run.io.stopped:
        return ("shutdown",)
    if run.turn.done:
        return ("cancelled",) if run.turn.stop_reason == "cancelled" else ("turn-ended",)
    if run.session.cancelling:
        return ("cancelled",)
    if run.session.turn is not run.turn:
        return ("turn-ended",)
    return None


def _shell() -> Any:
    from IPython.core import getipython

    return vars(getipython)["get_ipython"]()


def _with_default_sigint(fn: Any) -> Any:
    """Run ``fn`` with Python's own SIGINT handler (Interrupt stops the code), on the main
    thread; the cell's handler (which only cancels the turn) is put back after."""
    if threading.current_thread() is not threading.main_thread():
        return fn()
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return fn()
    finally:
        signal.signal(signal.SIGINT, previous)


def _install(notebook: Notebook) -> None:
    """Once per notebook: closing an agent (``%acp close``, the panel's Close, kernel shutdown)
    fails its cells' code requests closed, whether or not their turns end with it."""
    if not notebook.install_once("kernel_code"):
        return

    def closed(handle: Any) -> None:
        for run in notebook.runs:
            if run.handle is handle:
                run.fail_code("shutdown")

    notebook.events.subscribe("agent_closed", closed)


def _running_runs(notebook: Notebook, session: str | Session) -> list[CellRun]:
    return [
        run
        for run in notebook.runs
        if (run.session.id == session if isinstance(session, str) else run.session is session)
        and run.done is not None
        and not run.done.done()
    ]


def request_code(
    notebook: Notebook,
    session: str | Session,
    code: str,
    *,
    timeout: float | None = None,
    namespace: MutableMapping[str, Any] | None = None,
) -> concurrent.futures.Future[CodeOutcome]:
    """Ask to run ``code`` in the cell that owns ``session``'s current turn (any thread). The
    future resolves once the code ran or the request failed closed. The kernel tools pass the
    ``Session`` object of the caller's grant: an id names a session of one agent only, and two
    agents may well give their sessions the same id (a ``str`` matches by id: for tests).

    ``timeout``: seconds the card waits for a click (default: the cell's ``--timeout``, or the
    unattended timeout when no front end can click). ``namespace``: where the code runs
    (default: the kernel's ``user_ns``; tests without a kernel pass a dict).
    """
    future: concurrent.futures.Future[CodeOutcome] = concurrent.futures.Future()
    _install(notebook)
    runs = _running_runs(notebook, session)
    if not runs:
        future.set_result(_not_run("no-turn"))
        return future
    io = runs[0].io
    if io.stopped:
        future.set_result(_not_run("shutdown"))
        return future

    def ask() -> None:  # the I/O thread: the turn's state is read here
        found = [r for r in runs if r.session.turn is r.turn and not r.turn.done]
        run = found[0] if found else runs[0]
        request = CodeRequest(run, code, future, timeout=timeout, namespace=namespace)
        run.code.append(request)
        request.ask()

    try:
        io.soon(ask)
    except RuntimeError:  # the loop closed under us
        future.set_result(_not_run("shutdown"))
    return future
