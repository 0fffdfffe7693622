"""Drive a real ipykernel with jupyter_client, the way a front end would (no browser)."""

from __future__ import annotations

import os
import queue
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import KernelManager
from jupyter_core.paths import jupyter_runtime_dir
from jupyter_core.utils import ensure_dir_exists

from acp_notebook._magics import default_agent_name

GUARD = 120.0  # seconds; only a guard against hanging forever, never an assertion on speed


@dataclass
class Execution:
    msg_id: str
    messages: list[dict[str, Any]] = field(default_factory=list)
    done: bool = False

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [m for m in self.messages if m["msg_type"] == kind]

    @property
    def error(self) -> dict[str, Any] | None:
        errors = self.of_type("error")
        return errors[0]["content"] if errors else None

    def text(self) -> str:
        """Everything printed or displayed as text/plain by this execution, as a front end
        shows it (see :meth:`shown`)."""
        return self.shown("text/plain")

    def html(self) -> str:
        """Everything this execution displayed as text/html, as a front end shows it."""
        return self.shown("text/html", streams=False)

    def shown(self, mime: str, *, streams: bool = True) -> str:
        """The ``mime`` data of this execution's outputs, in order (with its streams and
        errors, unless ``streams`` is false). A display made under a display id shows what
        the latest ``update_display_data`` of that id (in this execution) put there: a turn
        whose terminals show as text (no terminal view said ``ready`` in time, a loaded
        machine) replaces its live view by its transcript that way, instead of adding one."""
        parts: list[str] = []
        at: dict[str, int] = {}  # display id -> its part
        stream = ""  # the stream the last part is: its next message goes on where it ended
        for m in self.messages:
            content = m["content"]
            kind = m["msg_type"]
            display_id = (content.get("transient") or {}).get("display_id")
            if kind == "stream" and streams:
                # one print can reach the front end as two messages (the kernel's output
                # thread flushed between its writes): a front end shows them as one text
                if stream == content["name"]:
                    parts[-1] += content["text"]
                else:
                    parts.append(content["text"])
                stream = content["name"]
                continue
            if kind in ("display_data", "execute_result", "error"):
                stream = ""
            if kind in ("display_data", "execute_result"):
                if display_id:
                    at[display_id] = len(parts)
                parts.append(content["data"].get(mime, ""))
            elif kind == "update_display_data" and display_id in at:
                parts[at[display_id]] = content["data"].get(mime, "")
            elif kind == "error" and streams:
                parts.append("\n".join(content["traceback"]))
        return "\n".join(parts)


class Kernel:
    """A kernel plus a record of every widget model it opened (like a front end keeps)."""

    def __init__(self, km: KernelManager, kc: BlockingKernelClient) -> None:
        self.km = km
        self.kc = kc
        self.models: dict[str, dict[str, Any]] = {}  # comm id -> state
        #: like JupyterLab with the labextension: each terminal's view says ``ready`` when its
        #: model opens (without it, a turn shows its terminals as text after a few seconds)...
        self.extension = True
        #: ... and the side panel's model says ``rendered`` (without it, `%acp panel` prints the
        #: panel as text, and a request whose cell is gone fails closed for want of a panel)
        self.panel_view = True
        #: a terminal view on a page without the extension's styles (VS Code with the
        #: nbextension): its ``ready`` says ``unstyled``
        self.unstyled = False
        #: seconds a terminal's view takes to say ``ready`` after its model opens (a slow
        #: renderer, a loaded machine): the ready is sent from the first pump after that
        self.ready_after = 0.0
        self._due_readies: list[tuple[float, str]] = []
        self.closed: set[str] = set()
        self.comm_msgs: list[tuple[float, dict[str, Any]]] = []
        self.executions: dict[str, Execution] = {}
        #: display id -> the data of its latest display_data or update_display_data, whatever
        #: the message's parent (a transcript a background command keeps up to date)
        self.displays: dict[str, dict[str, Any]] = {}

    # -- iopub ------------------------------------------------------------------------
    def _take(self, msg: dict[str, Any]) -> None:
        kind = msg["msg_type"]
        content = msg["content"]
        if kind == "comm_open":
            state = dict(content.get("data", {}).get("state", {}))
            self.models[content["comm_id"]] = state
            if self.extension and state.get("_model_name") == "TerminalModel":
                if self.ready_after:
                    due = time.monotonic() + self.ready_after
                    self._due_readies.append((due, content["comm_id"]))
                else:
                    self.terminal_ready(content["comm_id"])
            if self.panel_view and state.get("_model_name") == "AgentPanelModel":
                rendered: dict[str, Any] = {"type": "rendered"}
                if self.unstyled:  # the nbextension's panel model says so too
                    rendered.update(sidebar=False, unstyled=True)
                self.custom(content["comm_id"], rendered)
        elif kind == "comm_msg":
            self.comm_msgs.append((time.monotonic(), msg))
            data = content.get("data", {})
            if (
                data.get("method") in ("update", "echo_update")
                and content["comm_id"] in self.models
            ):
                self.models[content["comm_id"]].update(data.get("state", {}))
        elif kind == "comm_close":
            self.closed.add(content["comm_id"])
        elif kind in ("display_data", "update_display_data"):
            display_id = (content.get("transient") or {}).get("display_id")
            if display_id:
                self.displays[display_id] = content.get("data", {})
        parent = msg["parent_header"].get("msg_id")
        execution = self.executions.get(parent)
        if execution is not None:
            execution.messages.append(msg)
            if kind == "status" and content["execution_state"] == "idle":
                execution.done = True

    def forget(self) -> None:
        """Back to what a driver knows of a kernel it has just started: nothing recorded, and
        the front end of the labextension (see :class:`SharedKernel`)."""
        self.models.clear()
        self.closed.clear()
        self.comm_msgs.clear()
        self.executions.clear()
        self.displays.clear()
        self._due_readies.clear()
        self.extension = self.panel_view = True
        self.unstyled = False
        self.ready_after = 0.0

    def pump(self, timeout: float = 0.05) -> bool:
        now = time.monotonic()
        for due, comm_id in [r for r in self._due_readies if r[0] <= now]:
            self._due_readies.remove((due, comm_id))
            self.terminal_ready(comm_id)
        try:
            msg = self.kc.get_iopub_msg(timeout=timeout)
        except queue.Empty:
            return False
        self._take(msg)
        return True

    def wait_for(self, predicate: Callable[[], Any], what: str, guard: float = GUARD) -> Any:
        deadline = time.monotonic() + guard
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            self.pump()
        raise AssertionError(f"timed out waiting for {what}")

    # -- shell ------------------------------------------------------------------------
    def submit(self, code: str, cell_id: str | None = None) -> Execution:
        content = {
            "code": code,
            "silent": False,
            "store_history": True,
            "user_expressions": {},
            "allow_stdin": False,
            "stop_on_error": True,
        }
        metadata = {"cellId": cell_id} if cell_id else {}
        msg = self.kc.session.msg("execute_request", content, metadata=metadata)
        self.kc.shell_channel.send(msg)
        execution = Execution(msg["header"]["msg_id"])
        self.executions[execution.msg_id] = execution
        return execution

    def run(self, code: str, cell_id: str | None = None, *, ok: bool = True) -> Execution:
        execution = self.submit(code, cell_id)
        self.wait_for(lambda: execution.done, f"idle after {code[:60]!r}")
        if ok and execution.error:
            raise AssertionError("cell failed:\n" + "\n".join(execution.error["traceback"]))
        return execution

    def terminal_ready(self, comm_id: str) -> None:
        """What a terminal's view in the labextension sends once it renders."""
        ready: dict[str, Any] = {"type": "ready", "token": uuid.uuid4().hex}
        if self.unstyled:
            ready["unstyled"] = True
        self.custom(comm_id, ready)

    def custom(self, comm_id: str, message: dict[str, Any]) -> None:
        """A widget's custom message from the front end."""
        content = {"comm_id": comm_id, "data": {"method": "custom", "content": message}}
        self.kc.shell_channel.send(self.kc.session.msg("comm_msg", content))

    def click(self, comm_id: str, username: str = "") -> None:
        """What the browser sends when a person clicks an ipywidgets Button (``username``: the
        name the front end puts in the message's header, as the labextension makes JupyterLab
        do for its signed-in user)."""
        content = {"comm_id": comm_id, "data": {"method": "custom", "content": {"event": "click"}}}
        msg = self.kc.session.msg("comm_msg", content)
        msg["header"]["username"] = username
        self.kc.shell_channel.send(msg)

    def settle(self, agent: str | None = None) -> None:
        """Return once the kernel has handled every message sent to it before (comm messages
        such as clicks, in order) and the agent's I/O thread has run everything they queued:
        a round trip through both, instead of a sleep."""
        nb = "from acp_notebook._magics import _notebook_of as _nb_of\n"
        self.run(nb + f"_nb_of(get_ipython()).agent({agent!r}).io.call(lambda: None)")

    def cell_waiting(self) -> bool:
        """A turn view says its cell is awaiting the turn (what a person sees as a busy cell)."""
        return any(
            "acp-cell-waiting" in state.get("_dom_classes", ())
            for cid, state in self.models.items()
            if cid not in self.closed
        )

    def buttons(self, description: str) -> list[str]:
        """Open buttons with this label that a front end could show: like a browser, only
        count a button once a container model lists it among its children (the kernel has
        finished building it by then, click handler included)."""
        shown = {
            ref.removeprefix("IPY_MODEL_")
            for state in self.models.values()
            for ref in state.get("children", ())
            if isinstance(ref, str)
        }
        return [
            cid
            for cid, state in self.models.items()
            if state.get("_model_name") == "ButtonModel"
            and state.get("description") == description
            and cid not in self.closed
            and cid in shown
        ]


def save_coverage(k: Kernel, guard: float = 10.0) -> None:
    """Under `pytest --cov` a kernel measures itself too (coverage's subprocess patch starts it
    from the environment, pyproject.toml [tool.coverage.run]), but a killed kernel writes
    nothing: ask it to save what it measured before it is killed. Without --cov (no
    COVERAGE_PROCESS_CONFIG) this does nothing; a kernel still busy after `guard` seconds is
    killed unsaved, as before."""
    if "COVERAGE_PROCESS_CONFIG" not in os.environ or not k.km.is_alive():
        return
    # one expression, so nothing is bound in the kernel's namespace
    code = "(lambda cov: cov and cov.save())(__import__('coverage').Coverage.current())"
    msg_id = k.kc.execute(code, silent=True, store_history=False)
    deadline = time.monotonic() + guard
    while time.monotonic() < deadline:
        try:
            reply = k.kc.get_shell_msg(timeout=0.5)
        except queue.Empty:
            continue
        if reply["parent_header"].get("msg_id") == msg_id:
            return


def over_ipc() -> dict[str, str]:
    """A KernelManager's settings for IPC sockets named after a new connection file. Without
    that file, jupyter_client names the sockets ``kernel-ipc-N`` relative to each process's own
    directory: the kernel (started in another one) and its client never meet."""
    runtime = jupyter_runtime_dir()
    ensure_dir_exists(runtime, 0o700)
    connection_file = Path(runtime) / f"kernel-acp-test-{uuid.uuid4().hex}.json"
    return {"transport": "ipc", "connection_file": str(connection_file)}


def start_kernel(cwd: str | None = None) -> tuple[KernelManager, BlockingKernelClient]:
    """A python3 kernel and a ready client, over IPC sockets rather than TCP ports.

    Over TCP, jupyter_client picks free ports, closes them and writes them down; the kernel binds
    them about half a second later. Any connection another process opens in between may be
    given one of them as its local port (the suite's workers open hundreds), and the kernel
    then dies with "Address already in use" (it did in a CI run). IPC socket paths are named
    after the kernel's own connection file, so nothing else can take them."""
    km = KernelManager(kernel_name="python3", **over_ipc())
    km.start_kernel(cwd=cwd)
    kc = km.client()
    # JupyterLab sends every message with an empty username (jupyter_client would send $USER);
    # a test that plays a named person says so (Kernel.click's username)
    kc.session.username = ""
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=GUARD)
    except BaseException:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
        raise
    return km, kc


@contextmanager
def kernel(cwd: str) -> Iterator[Kernel]:
    km, kc = start_kernel(cwd)
    k = Kernel(km, kc)
    try:
        yield k
    finally:
        save_coverage(k)
        kc.stop_channels()
        km.shutdown_kernel(now=True)


@contextmanager
def acp_kernel(tmp_path: Path) -> Iterator[Kernel]:
    """A kernel working in ``tmp_path/work`` with ``%load_ext acp_notebook`` done."""
    work = tmp_path / "work"
    work.mkdir()
    with kernel(str(work)) as kern:
        kern.run("%load_ext acp_notebook")
        yield kern


#: The end of a test in a kernel that is kept (see :class:`SharedKernel`), what the kernel's
#: shutdown would do: this kernel's notebook is shut down (every agent closed, what they run
#: killed, the I/O thread stopped) and forgotten.
SHUTDOWN = """\
from acp_notebook._notebook import _owner as _acp_owner
_acp_old, _acp_owner._current = _acp_owner._current, None
if _acp_old is not None:
    _acp_old.shutdown()
del _acp_old, _acp_owner
"""
#: Run in a shared kernel once it has loaded the extension, and at the end of each
#: :data:`RESET`: ``gc.freeze()`` moves every object then alive (the kernel's and the extension's
#: modules, what earlier tests imported) out of the collector's generations, so that a
#: collection walks only what came after. Without it ``%reset -f``'s ``gc.collect()`` walked the
#: whole heap, ~110,000 objects and about 0.12 of the reset's 0.14 CPU-s, and so did each full
#: collection during a test. Nothing a test's code sees changes: a frozen object is neither
#: freed nor moved, and one that becomes garbage later is only kept until the kernel ends.
FREEZE = '__import__("gc").freeze()\n'
#: A fresh start for the next test in it: the extension's magics are registered again (their
#: notebook is made anew on first use, as after ``%load_ext``), the environment is the one the
#: kernel started with (:data:`KEEP_ENVIRON`), the kernel moves to the test's folder,
#: ``%reset -f`` empties the user namespace (this cell's own names included) and collects what
#: the last test left, and what is still alive is frozen (:data:`FREEZE`).
RESET = (
    """\
from acp_notebook._magics import load_ipython_extension as _acp_load
import os as _acp_os
_acp_os.environ.clear()
_acp_os.environ.update(get_ipython()._acp_test_environ)
_acp_os.chdir({work!r})
_acp_load(get_ipython())
%reset -f
"""
    + FREEZE
)
#: Run once in a shared kernel: its environment as it started, for :data:`RESET`.
KEEP_ENVIRON = "get_ipython()._acp_test_environ = dict(__import__('os').environ)"


class SharedKernel:
    """One kernel (``%load_ext acp_notebook`` done) for the tests of a module that need no
    kernel of their own, made fresh for each (a kernel's start and the imports of its first
    ``%acp connect`` are about 1 CPU-s; the reset costs about 0.02 CPU-s). At the end of
    each test its notebook is shut down, as the kernel's shutdown would: its agents are gone
    before the fixtures it asked for end.

    For tests that change nothing outside the notebook, the user namespace and the
    environment: no interrupt, ``%config``, monkeypatched module or process-tree check (those
    keep a kernel of their own). What a test sees is what a fresh kernel would show it: its
    folder as the working directory, the kernel's first environment, an empty namespace, a new
    notebook (no agent, session or panel), and a driver that has recorded nothing yet. A test
    that fails, or a reset that fails, retires the kernel: the next test gets a new one."""

    def __init__(self) -> None:
        self._kernel: Kernel | None = None
        self._stack = ExitStack()

    @contextmanager
    def fresh(self, tmp_path: Path, request: Any) -> Iterator[Kernel]:
        """The kernel, reset for this test (``request``: its pytest request), working in
        ``tmp_path/work``."""
        work = tmp_path / "work"
        work.mkdir()
        kern = self._kernel
        if kern is not None:
            try:
                kern.run(RESET.format(work=str(work)))
            except AssertionError:  # (a guard: a kernel stuck since the last test)
                self.close()
                kern = None
        if kern is None:
            kern = self._kernel = self._stack.enter_context(kernel(str(work)))
            kern.run(KEEP_ENVIRON)
            kern.run("%load_ext acp_notebook\n" + FREEZE)
        kern.forget()
        failed = request.session.testsfailed
        try:
            yield kern
        except BaseException:
            self.close()
            raise
        if request.session.testsfailed != failed:  # (its call failed: reported by now)
            self.close()
            return
        try:
            kern.run(SHUTDOWN)
        except AssertionError:  # (the guard again)
            self.close()
            raise

    def close(self) -> None:
        self._kernel = None
        self._stack.close()


@contextmanager
def kernel_for_test(shared: SharedKernel, tmp_path: Path, request: Any) -> Iterator[Kernel]:
    """A test's kernel, working in ``tmp_path/work`` with ``%load_ext acp_notebook`` done: the
    module's shared one, reset (``shared``), or one of its own for a test marked
    ``own_kernel`` (it interrupts the kernel, changes its configuration or modules, or checks
    its processes)."""
    if request.node.get_closest_marker("own_kernel"):
        with acp_kernel(tmp_path) as kern:
            yield kern
    else:
        with shared.fresh(tmp_path, request) as kern:
            yield kern


def new_cell_id() -> str:
    return uuid.uuid4().hex[:12]


def process_gone(pid: int) -> bool:
    """No process with this id exists (any more)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


#: The name ``%acp connect -- {sys.executable} ...`` gives its agent (``python3`` under
#: ``python3 -m pytest``, ``python`` under ``python -m pytest``): what the product would give.
PYTHON_AGENT = default_agent_name([sys.executable])
