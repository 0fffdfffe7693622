"""Starting a cell's turn: the one command ``%%acp`` calls (``Notebook.start_cell``).

The face reads the cell (its options, the prompt after interpolation, the objects it attaches,
its key) into a ``CellRequest``; this module does the rest: it replaces the cell's earlier run,
picks the session and its agent, opens the turn, makes its view and its ``CellRun``, and starts
it on the I/O thread. What the face shows (the view, the attachments, the note that the cell ran
before) it reads from the ``CellStarted`` it gets back; errors are typed (``SessionBusy`` and
the notebook's other errors), never worded here.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._client._errors import TurnInProgress
from .._policy._rules import Policy
from ._attach import Attachment, accepts, prompt_blocks
from ._cells import CellRun, front_end_seen
from ._errors import DEFAULT_SESSION, SessionBusy

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from .._client._session import Session
    from .._client._turn import Turn
    from ._owner import Notebook


@dataclass(frozen=True)
class CellRequest:
    """What a ``%%acp`` cell asks for, read by the face."""

    key: str
    """the cell's key: ``cell:<id>`` when the front end sent one, else ``exec:<count>``"""
    prompt: str
    """the prompt after interpolation (what the view echoes)"""
    session: str | None = None
    """the session's name; None: the agent's name when ``agent`` is given, else the default"""
    agent: str | None = None
    new: bool = False
    policy: Policy = field(default_factory=Policy)
    """the cell's ``--allow``, ``--deny`` and ``--allow-code``"""
    timeout: float | None = None
    """how long a card waits for a click (None: as long as it takes)"""
    unattended_timeout: float | None = None
    """how long a card waits when no front end can answer it (None: no limit)"""
    attachments: Sequence[Attachment] = ()
    panel_shows: Callable[[], bool] | None = None
    """whether the side panel shows this notebook's cards (a card says so)"""


@dataclass
class CellStarted:
    """A cell's turn, started: what the face shows and keeps."""

    run: CellRun
    session_name: str
    turn: Turn
    view: Any
    accepts: Any
    """the prompt capabilities of the agent (what an attachment may be sent as)"""
    continues: bool = False
    """the cell ran before in this same session (with a cell id): the agent has its turns"""


#: Seconds a new terminal waits for a view of it to say ``ready`` before the turn shows its
#: terminals as text: a widget front end without the labextension (VS Code, Colab, nbclassic)
#: cannot load the terminal's model and would show an error box in its place.
TEXT_TERMINALS_AFTER = 5.0


def _watch_terminal(
    nb: Notebook, view_of: Callable[[], Any], io: Any, front_end: bool
) -> Callable[[Any], None]:
    """What a view does with each live terminal widget it makes (I/O thread): a ``ready``
    from a view of it says the labextension is here. While the kernel does not know yet, with a
    widget front end, the view's first terminal starts one wait: no ``ready`` from any view
    within :data:`TEXT_TERMINALS_AFTER` seconds, and the view shows its terminals as text
    (and the kernel's later turns do so from the start)."""
    waiting = threading.Event()  # one wait per view

    def made(widget: Any) -> None:
        widget.on_ready(lambda seen: nb.extension_seen(unstyled=seen.unstyled))
        if not front_end or nb.extension is not None or waiting.is_set():
            return
        waiting.set()
        nb.expect_extension(TEXT_TERMINALS_AFTER)

        def check() -> None:  # the I/O thread
            if nb.extension is not True:
                nb.extension_missing()
                view_of().use_text_terminals()

        def due() -> None:  # the timer's thread
            # the agent's I/O loop may have closed (RuntimeError): no view left to change
            with contextlib.suppress(RuntimeError):
                io.soon(check)

        timer = threading.Timer(TEXT_TERMINALS_AFTER, due)
        timer.daemon = True
        timer.start()

    return made


def shows_text(nb: Notebook, run: CellRun) -> bool:
    """Whether the cell's turn is shown without the labextension (I/O thread): its view shows
    its terminals as text, or this kernel has learnt that its front end lacks the extension, or
    that its page lacks the extension's output-area styles (``Notebook.unstyled``: VS Code with
    the nbextension, whose terminals render live); then the transcript replaces the live view
    when the turn ends (nothing hides one of the two). A cell whose turn ends before the wait
    is over first waits for it (``Notebook.extension_known``): a terminal's view may still be
    on its way, and what it says decides how the turn shows."""
    if getattr(run.view, "text_terminals", False):
        return True
    if nb.extension is False:
        run.view.use_text_terminals()
        return True
    return nb.unstyled


def mode_shown(session: Session, agent_id: str | None) -> tuple[str | None, str | None] | None:
    """The session's mode as a turn shows it (read in the I/O thread): its name, and what the
    agent does without asking in it, or whatever its mode (`_modes.unasked_always`)."""
    from ._facts import _config_options
    from ._modes import mode_fact, unasked_always

    try:
        fact = mode_fact(_config_options(session), agent_id)
    except Exception:  # what a turn shows beside its work never fails it
        log.exception("reading the mode of session %s failed", session.id)
        return None
    if fact is None:
        always = unasked_always(agent_id)
        return (None, always) if always else None
    option = fact.option
    value = str(option.current)
    name = option.current_name
    if name.lower() != value.lower():
        name = f"{name} ({value})"
    return name, fact.unasked


def start_cell(nb: Notebook, request: CellRequest) -> CellStarted:
    """Start ``request``'s turn (see the module's docstring)."""
    from .._widgets import TurnView

    previous = nb.replace_run(request.key, None)
    if previous is not None:
        if previous.done is not None and not previous.done.done():
            previous.cancel_blocking()
        previous.close_view()
    name = request.session
    if name is None:  # `--agent claude` talks in session 'claude'
        name = request.agent if request.agent is not None else DEFAULT_SESSION
    named = nb.session(name, new=request.new, agent=request.agent)
    session = named.session
    handle = nb.agent(named.agent)
    io = handle.io
    accept = accepts(handle.agent)
    attached = list(request.attachments)
    content = prompt_blocks(request.prompt, attached, accept) if attached else request.prompt
    try:
        turn = io.call(session.start_turn, content)
    except TurnInProgress:
        raise SessionBusy(name) from None

    def stop_terminal(terminal_id: str) -> None:  # the terminal's stop button (main thread)
        io.submit(_cancel_item, session, view, "terminal", terminal_id)

    def stop_tool_call(tool_call_id: str) -> None:  # a background tool call's Stop button
        io.submit(_cancel_item, session, view, "tool_call", tool_call_id)

    def make_view() -> Any:
        return TurnView(
            turn.state,
            request.prompt,
            on_cancel_terminal=stop_terminal,
            on_cancel_tool_call=stop_tool_call,
            call_soon=io.soon,
            grants=lambda: sum(
                1
                for d in list(session.permissions)
                if not d.pending and d.option_kind == "allow_always"
            ),
            on_terminal=_watch_terminal(nb, lambda: view, io, front_end),
            text_terminals=nb.extension is False,
            mode=functools.partial(mode_shown, session, handle.registry_id),
        )

    front_end = request.key.startswith("cell:") or front_end_seen()
    view = io.call(make_view)
    run = CellRun(
        request.key, handle, session, turn, view, request.policy, request.timeout, io, nb.events
    )
    run.unattended_timeout = request.unattended_timeout
    if request.panel_shows is not None:
        run.panel_shows = request.panel_shows
    io.call(run.attach)
    nb.replace_run(request.key, run)
    # The agent keeps the earlier turns: it sees this prompt again, after its last answer.
    # (Without a cell id, as under nbval, a key is only an execution count: no telling.)
    continues = (
        previous is not None and previous.session is session and request.key.startswith("cell:")
    )
    return CellStarted(run, name, turn, view, accept, continues=continues)


def begin(nb: Notebook, started: CellStarted) -> None:
    """Start the turn on the I/O thread, once the face has shown its view."""
    run = started.run
    run.done = run.io.submit(run.run)
    nb.events.emit("turn_started", run)


async def _cancel_item(session: Session, view: Any, kind: str, item_id: str) -> None:
    """``terminal/cancel`` or ``tool_call/cancel`` (I/O thread); an error answer is shown on
    the item in the view."""
    try:
        if kind == "terminal":
            await session.cancel_terminal(item_id)
        else:
            await session.cancel_tool_call(item_id)
    except Exception as exc:
        message = str(getattr(exc, "message", None) or exc)
        session._problem(f"{kind}/cancel for {item_id} failed: {message}")
        view.stop_failed(kind, item_id, message)
