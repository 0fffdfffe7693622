"""The IPython entry point: ``%acp`` and ``%%acp``, the faces a person types.

A ``%%acp`` cell must *await* its turn so that the approve/reject buttons in its own output keep
working (ipykernel >= 7.4 delivers widget messages to an awaiting cell; a blocking wait would
deadlock). A magic function cannot await, so an input transformer rewrites a ``%%acp`` cell into
``await <run_cell_async>(line, body)`` and IPython runs it with top-level await. The magic itself
stays registered for ``%%acp?`` help and for callers that invoke it directly.

The rooms: ``_parsers`` (the options of both magics, their help), ``_cell`` (a ``%%acp`` cell:
read it, call ``Notebook.start_cell``, wait, show the transcript), ``_commands`` (the ``%acp``
subcommands), ``_auth`` (``%acp auth``: the forms and the login terminal around the notebook's
sign-in commands), ``_words`` (every sentence a person reads). They parse, call the notebook
layer and word its results; the workflows are the notebook's.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, magics_class
from traitlets import Enum, Float, List, Unicode, observe

from .. import _lazy
from .._notebook._errors import NONINTERACTIVE_TIMEOUT, TIMEOUT_ENV
from .._widgets._protocols import TRANSPORT_ENV
from ._parsers import _plain_help, acp_options, cell_magic, cell_options, line_magic

if TYPE_CHECKING:
    from .._notebook._owner import Notebook
    from ._cell import _notebook_of, run_cell_async
    from ._commands import default_agent_name
    from ._words import words

# ``%load_ext`` imports only this module and the options (``_parsers``): the notebook, the
# client, pydantic, anyio and ipywidgets are imported by the first ``%acp`` or ``%%acp``
# (``AcpMagics.notebook``). These names come from their rooms on first use (PEP 562).
_LAZY = {
    "_notebook_of": "._cell",
    "run_cell_async": "._cell",
    "default_agent_name": "._commands",
    "words": "._words",
}


def _fresh_notebook() -> Notebook:
    from .._notebook._owner import Notebook

    return Notebook()


@magics_class
class AcpMagics(Magics):
    """The magics of one kernel; they act on its :class:`Notebook`."""

    noninteractive_timeout = Float(
        None,
        allow_none=True,
        help=f"Seconds a permission request waits when no front end can answer it (nbclient,"
        f" jupyter execute, nbconvert --execute: no widget front end connected), before it is"
        f" answered cancelled and the turn ends. Default: ${TIMEOUT_ENV}, else"
        f" {NONINTERACTIVE_TIMEOUT:g}; 0 waits forever. --timeout on a cell wins.",
    ).tag(config=True)

    terminal_transport = Enum(
        ("auto", "text", "binary"),
        "auto",
        help=f"How terminal bytes reach the browser: binary frames, or base64 text for a path"
        f" that breaks on binary (jupyter_server's relay to a Kernel or Enterprise Gateway);"
        f" auto is text behind a gateway the kernel can see, binary elsewhere. Sets"
        f" ${TRANSPORT_ENV} for the kernel; terminals made later follow it.",
    ).tag(config=True)

    allowed_agents = List(
        Unicode(),
        default_value=None,
        allow_none=True,
        help="The agents %acp connect may start (None: any): registry shortcuts (claude),"
        " 'embedded', programs by absolute path (/opt/bin/agent) or globs over the command"
        " line (npx -y @acme/*). The"
        " kernel's $ACP_NOTEBOOK_ALLOWED_AGENTS applies too: an agent must be on both lists"
        " that are set, so this narrows an operator's list and never widens it.",
    ).tag(config=True)

    @observe("allowed_agents")
    def _allowed_agents_changed(self, change: Any) -> None:
        notebook = getattr(self, "_notebook", None)  # config is applied before __init__ ends
        if notebook is not None:  # (else it is set when the notebook is made)
            notebook.set_allowed_agents(change["new"])

    @observe("terminal_transport")
    def _terminal_transport_changed(self, change: Any) -> None:
        os.environ[TRANSPORT_ENV] = str(change["new"])

    def __init__(
        self,
        shell: Any = None,
        *,
        notebook: Notebook | None = None,
        make: Callable[[], Notebook] = _fresh_notebook,
        **kwargs: Any,
    ):
        """``notebook``: the notebook the magics act on; without one, ``make()`` makes it on
        first use (``%load_ext`` passes the kernel's, ``_notebook.current``)."""
        super().__init__(shell, **kwargs)
        self._notebook: Notebook | None = None
        self._make = make
        self._making = threading.Lock()
        #: the cell running while no notebook exists (its ``pre_run_cell`` info), replayed on
        #: the notebook if that cell makes it
        self.cell_info: Any = None
        if notebook is not None:
            self._adopt(notebook)

    @property
    def notebook_made(self) -> bool:
        return self._notebook is not None

    @property
    def notebook(self) -> Notebook:
        """The notebook (made now if no ``%acp`` needed it before)."""
        nb = self._notebook
        if nb is None:
            with self._making:
                nb = self._notebook
                if nb is None:
                    nb = self._adopt(self._make())
                    info, self.cell_info = self.cell_info, None
                    if info is not None:
                        _cell_starts(nb, info)
        return nb

    def _adopt(self, notebook: Notebook) -> Notebook:
        from .._notebook._pacing import follow_requests

        notebook.set_allowed_agents(self.allowed_agents)
        # a request reaching the kernel holds a flood (no flood before the notebook exists)
        follow_requests(getattr(self.shell, "kernel", None), notebook.pacing)
        self._notebook = notebook
        return notebook

    @line_magic("acp")
    def acp(self, line: str) -> None:
        from ._commands import _acp_line
        from ._words import _visible_error

        try:
            _acp_line(self.notebook, line)
        except UsageError as exc:
            raise _visible_error(exc) from None

    @cell_magic("acp")
    def acp_cell(self, line: str, cell: str) -> None:
        # Called directly (without the input transformer): run the turn and block until it ends.
        from .._connection._errors import AcpError
        from ._cell import _finish_cell, _start_cell
        from ._parsers import parse_cell_line as _parse_cell_line
        from ._words import _visible_error, turn_failure

        try:
            run = _start_cell(self.notebook, self.shell, line, cell)
        except UsageError as exc:
            raise _visible_error(exc) from None
        if _parse_cell_line(line).bg:
            run.no_waiter()
            return
        try:
            run.wait_blocking()
        except AcpError as exc:
            raise _visible_error(UsageError(turn_failure(exc))) from None
        finally:
            _finish_cell(run)


# What `%acp?` and `%%acp?` page (magic_arguments set these docstrings from the parsers).
AcpMagics.acp.__doc__ = _plain_help(acp_options.__doc__)


AcpMagics.acp_cell.__doc__ = _plain_help(cell_options.__doc__)


def transform_cell(lines: list[str]) -> list[str]:
    """Input transformer: a ``%%acp`` cell becomes an awaited call (see module docstring)."""
    if not lines or not lines[0].startswith("%%acp"):
        return lines
    first = lines[0].rstrip("\n")
    if first.rstrip().endswith("?") or not (first == "%%acp" or first[5:6].isspace()):
        return lines
    line = first[5:].strip()
    body = "".join(lines[1:])
    return [
        "await __import__('acp_notebook._magics', fromlist=['run_cell_async'])"
        f".run_cell_async({line!r}, {body!r})\n"
    ]


def load_ipython_extension(ipython: Any, notebook: Notebook | None = None) -> None:
    """Register the magics for this kernel's notebook (``_notebook.current()``), which the
    first ``%acp`` or ``%%acp`` makes (``notebook``: that one, now)."""
    from .._widgets._acks import acknowledge_comms, answer_widget_control

    if notebook is not None:
        _install_panel(notebook)
    # Widget edits during an awaiting %%acp cell (a form's fields) must be acknowledged, or the
    # front end holds every later edit of a model (see _widgets/_acks.py).
    kernel = getattr(ipython, "kernel", None)
    acknowledge_comms(kernel)
    answer_widget_control(kernel)  # a front end that connects from now on is seen
    ipython.register_magics(AcpMagics(ipython, notebook=notebook, make=_kernel_notebook))
    cleanup = ipython.input_transformers_cleanup
    if transform_cell not in cleanup:
        cleanup.append(transform_cell)
    if _pre_run_cell not in ipython.events.callbacks["pre_run_cell"]:
        ipython.events.register("pre_run_cell", _pre_run_cell)
    if _post_run_cell not in ipython.events.callbacks["post_run_cell"]:
        ipython.events.register("post_run_cell", _post_run_cell)


def _install_panel(nb: Notebook) -> Notebook:
    from .. import _sidepanel

    _sidepanel.install(nb)  # the side panel listens to the notebook's events
    return nb


def _kernel_notebook() -> Notebook:
    from .._notebook._owner import current

    return _install_panel(current())


def _magics_of(shell: Any) -> AcpMagics | None:
    registry = getattr(getattr(shell, "magics_manager", None), "registry", {})
    found = registry.get("AcpMagics")
    return found if isinstance(found, AcpMagics) else None


def _post_run_cell(result: Any) -> None:
    from IPython.core.getipython import get_ipython

    shell = get_ipython()
    magics = _magics_of(shell)
    if magics is not None and not magics.notebook_made:
        magics.cell_info = None  # nothing of acp_notebook ran in it
        return
    from ._cell import _notebook_of

    _notebook_of(shell).pacing.cell_ended()


_OWN_MAGIC = re.compile(r"\s*%%?acp(?![\w.])")


def _pre_run_cell(info: Any) -> None:
    """The cell about to run; when it showed a turn, its output (the turn's view) is going:
    what that turn's background work asks is then asked in the side panel only. Before the
    notebook exists (no ``%acp`` yet) nothing is done unless the cell is a ``%acp`` one: the
    cell is kept, and told to the notebook if it makes one."""
    from IPython.core.getipython import get_ipython

    shell = get_ipython()
    magics = _magics_of(shell)
    source = getattr(info, "raw_cell", "") or ""
    if magics is not None and not magics.notebook_made and not _OWN_MAGIC.match(source):
        magics.cell_info = info
        return
    from ._cell import _notebook_of

    _cell_starts(_notebook_of(shell), info)


def _cell_starts(nb: Notebook, info: Any) -> None:
    nb.cell_started(getattr(info, "cell_id", None))
    source = getattr(info, "raw_cell", "") or ""
    # %%acp waits for its own turn, %acp for the agent: their output is read at full speed
    nb.pacing.cell_started(magic=_OWN_MAGIC.match(source) is not None)
    shown = nb.cells.get(f"cell:{nb.cell_id}") if nb.cell_id else None
    if shown is not None:
        shown.close_view()


def unload_ipython_extension(ipython: Any) -> None:
    cleanup = ipython.input_transformers_cleanup
    if transform_cell in cleanup:
        cleanup.remove(transform_cell)
    with contextlib.suppress(ValueError):
        ipython.events.unregister("pre_run_cell", _pre_run_cell)
    with contextlib.suppress(ValueError):
        ipython.events.unregister("post_run_cell", _post_run_cell)
    magics = _magics_of(ipython)
    if magics is None or magics.notebook_made:
        from ._cell import _notebook_of

        _notebook_of(ipython).pacing.cell_ended()  # no cell will say it ended any more


__all__ = [
    "AcpMagics",
    "_notebook_of",
    "default_agent_name",
    "load_ipython_extension",
    "run_cell_async",
    "unload_ipython_extension",
    "words",
]

__getattr__, __dir__ = _lazy.attach(__name__, _LAZY, __all__)
