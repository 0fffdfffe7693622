"""A ``%%acp`` cell: read it (options, prompt, attachments, key) into a ``CellRequest``, call
``Notebook.start_cell``, show the view, wait for the turn and leave its transcript."""

from __future__ import annotations

import argparse
import contextlib
import functools
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from IPython.core.error import UsageError

from .._connection._errors import AcpError
from .._notebook._attach import Attached, Attachment, gather, parse_names
from .._notebook._bridge import AgentHandle
from .._notebook._cells import (
    CellRun,
    PromptTemplateError,
    interpolate,
    noninteractive_timeout,
)
from .._notebook._errors import (
    NotebookError,
)
from .._notebook._owner import Notebook
from .._notebook._record import Record, follow_background, update_display
from .._notebook._start import CellRequest
from .._policy._rules import Policy
from ._parsers import parse_cell_line
from ._words import (
    _one_line,
    _say,
    _Static,
    _visible_error,
    interrupted_words,
    show,
    turn_failure,
    words,
)


def _cell_key(nb: Notebook, shell: Any) -> str:
    if nb.cell_id:
        return f"cell:{nb.cell_id}"
    return f"exec:{getattr(shell, 'execution_count', 0)}"


def _notebook_of(shell: Any) -> Notebook:
    """The notebook the shell's ``AcpMagics`` were registered with."""
    registry = getattr(getattr(shell, "magics_manager", None), "registry", {})
    magics = registry.get("AcpMagics")
    found = getattr(magics, "notebook", None)
    if isinstance(found, Notebook):
        return found
    from .._notebook._owner import current

    return current()


def _start_cell(nb: Notebook, shell: Any, line: str, body: str) -> CellRun:
    """Start a ``%%acp`` cell's turn; errors the user can act on are one-line UsageErrors."""
    try:
        return _start_cell_inner(nb, shell, line, body)
    except NotebookError as exc:
        raise UsageError(words(exc, nb)) from None
    except AcpError as exc:
        raise UsageError(f"%%acp: {_one_line(exc)}") from None


def _start_cell_inner(nb: Notebook, shell: Any, line: str, body: str) -> CellRun:
    from .. import _sidepanel

    args = parse_cell_line(line)
    try:
        prompt = interpolate(body, shell.user_ns)
    except PromptTemplateError as exc:
        raise UsageError(f"%%acp: {exc}") from None
    if not prompt.strip():
        raise UsageError("%%acp: the cell is empty; write a prompt below the magic line")
    attached = _attachments(args, shell)  # before anything is sent (or a session opened)
    key = _cell_key(nb, shell)
    request = CellRequest(
        key,
        prompt,
        session=args.session,
        agent=args.agent,
        new=args.new,
        policy=Policy.from_globs(args.allow, args.deny, allow_code=args.allow_code),
        timeout=args.timeout,
        unattended_timeout=_unattended_timeout(shell, key),
        attachments=attached,
        panel_shows=functools.partial(_sidepanel.panel_shows, nb),
    )
    started = nb.start_cell(request)
    if args.output:
        shell.user_ns[args.output] = started.turn
    if started.continues:
        _say(
            f"acp: this cell ran before in session {started.session_name!r}: the agent still"
            f" has its earlier turns (turn {started.turn.state.index + 1}); --new starts a"
            " fresh session"
        )
    if attached or args.cells:  # what goes to the agent, shown before it goes
        show(Attached(attached, started.accepts, cells_asked=args.cells or 0))
    # with a display id: a view whose terminals show as text is replaced by its transcript
    show(started.view, display_id=view_display_id(started.view))
    nb.begin_cell(started)
    return started.run


def _attachments(args: argparse.Namespace, shell: Any) -> list[Attachment]:
    """The ``--with`` objects and ``--cells`` of a cell; a name that is not a variable of the
    notebook is a UsageError (nothing is sent)."""
    try:
        names = parse_names(args.with_names)
    except ValueError as exc:
        raise UsageError(f"%%acp --with: {str(exc)!r} is not a variable name") from None
    namespace = shell.user_ns
    missing = [name for name in names if name not in namespace]
    if missing:
        raise UsageError(
            f"%%acp --with: not defined: {', '.join(missing)} (nothing was sent to the agent)"
        )
    if not names and not args.cells:
        return []
    return gather(names, namespace, shell, args.cells or 0)


def _unattended_timeout(shell: Any, key: str) -> float | None:
    """How long a card waits when no front end can answer it: ``%config
    AcpMagics.noninteractive_timeout``, else its environment variable or default. None (no
    limit) for a cell that came with a cell id: JupyterLab, Notebook 7 and VS Code send one with
    each execute_request; nbclient (jupyter execute, nbconvert --execute, papermill) and nbval
    do not. Without one, ``_cells.front_end_seen`` still spares a widget front end."""
    if key.startswith("cell:"):
        return None
    registry = getattr(getattr(shell, "magics_manager", None), "registry", {})
    magics = registry.get("AcpMagics")
    return noninteractive_timeout(getattr(magics, "noninteractive_timeout", None))


def view_display_id(view: Any) -> str:
    """The display id a cell's live view is shown under."""
    return f"acp-view-{getattr(view, 'model_id', '') or id(view)}"


def _finish_cell(run: CellRun, record: Record | None = None) -> None:
    """Show the turn's final transcript (and empty the slot its record kept while it ran); a
    command the turn left running in the background keeps it up to date. Where the view showed
    its terminals as text (a front end without the labextension, whose CSS would hide one of
    the two), the transcript replaces the live view: the cell shows the turn once."""
    from IPython.core.getipython import get_ipython

    nb = _notebook_of(get_ipython())
    as_text = run.io.call(functools.partial(nb.text_terminals, run))
    bundle = run.io.call(run.view.static_bundle)  # the state is only read on the I/O thread
    if as_text:
        display_id = view_display_id(run.view)
        update_display(_Static(bundle), raw=False, display_id=display_id)
    else:
        display_id = uuid.uuid4().hex
        show(_Static(bundle), raw=False, display_id=display_id)
    if record is not None:
        record.close()
    run.io.call(functools.partial(follow_background, run, display_id))


async def run_cell_async(line: str, body: str) -> None:
    """What a ``%%acp`` cell runs (through the input transformer): awaits the turn."""
    from IPython.core.getipython import get_ipython

    shell = get_ipython()
    try:
        run = _start_cell(_notebook_of(shell), shell, line, body)
    except UsageError as exc:
        raise _visible_error(exc) from None
    args = parse_cell_line(line)
    nb = _notebook_of(shell)
    # the transcript so far, saved as the turn goes (not where nothing would hide it)
    record = Record(run, bg=args.bg, plain=lambda: nb.extension is False or nb.unstyled)
    record.start()
    if args.bg:
        run.no_waiter()  # no cell waits: the agent's run_code is refused, never left queued
        return
    try:
        await run.wait_in_cell()
    except AcpError as exc:  # the agent died, the prompt was refused: one line, no traceback
        _finish_cell(run, record)
        raise _visible_error(UsageError(turn_failure(exc))) from None
    except KeyboardInterrupt:
        _finish_cell(run, record)
        said = interrupted_words(_still_running(run), run.handle.name)
        raise TurnInterrupted(said) from None
    except BaseException:
        _finish_cell(run, record)
        raise
    # a terminal's view still due to say whether the extension renders here; the turn has
    # ended, so Interrupt only cuts this wait short
    with contextlib.suppress(KeyboardInterrupt):
        await nb.extension_known()
    _finish_cell(run, record)


def _still_running(run: CellRun) -> list[str]:
    try:
        return run.still_running()
    except (KeyboardInterrupt, RuntimeError):
        return []


class TurnInterrupted(KeyboardInterrupt):
    """Interrupt during a ``%%acp`` cell (or a ``%acp`` wait for the agent). IPython shows it
    as its one line (through ``_render_traceback_``), not as a traceback."""

    def _render_traceback_(self) -> list[str]:
        return [f"KeyboardInterrupt: {self}"]


def _interruptible(handle: AgentHandle, what: str, fn: Callable[[], Awaitable[Any]]) -> Any:
    """Await ``fn()`` in the I/O thread. An Interrupt withdraws it (its request is cancelled:
    ``$/cancel_request``) and ends the cell in one line; the agent and the kernel go on. A
    sign-in the agent never answers (gemini's browser login on a machine without one) is
    stopped this way."""
    try:
        return handle.io.await_withdrawable(fn)
    except KeyboardInterrupt:
        raise TurnInterrupted(f"{what} was interrupted: the request was withdrawn") from None
