"""Client terminals: ACP v1's ``terminal/*`` methods, run on the kernel's side.

`ClientTerminals` answers ``terminal/create``, ``terminal/output``, ``terminal/wait_for_exit``,
``terminal/kill`` and ``terminal/release`` (params and results are the v1 wire dicts).

* Nothing runs without an allow. Before a command starts, the injected ``approve`` callback is
  awaited with a `TerminalRequest` (command, args, cwd, env, the terminal id it would get, the
  session id); anything but an explicit ``True`` (see `_approval.ask`) means it never starts
  and ``terminal/create`` is answered with an error.
* What was approved is what runs: ``[command, *args]`` is exec'd as an argv, never handed to a
  shell, with the approved cwd and the approved variables on top of ``base_env``. The one
  exception is a request that `reads_as_script` (no args, whitespace in ``command``, no program
  file of that name): it runs as ``/bin/sh -c command``, and is judged and shown as that script.
  `TerminalRequest.command_line` is how a shell would read that argv (``shlex`` quoting), which
  is what a ``--allow``/``--deny`` policy judges (`TerminalRequest.permission_request`). The
  program is looked up on ``PATH`` once, when the request comes (`ClientTerminals.
  program_file`), and that file is exec'd by its absolute path (`TerminalRequest.executable`,
  its ``argv[0]`` as named): no later search can start another. A program named like a script
  (``'ls -l; rm x'``) is one word to the policy, which no rule approves.
* Some requests a person decides, whatever the rules (`TerminalRequest.person_reasons`): a cwd
  outside the session's folder (symlinks resolved: a rule names a command, not where it runs,
  and a program reads its folder's configuration, a repository's hooks ...), a variable no
  shell can name (`unnameable`), and a ``PATH`` with an entry that is not absolute (``''``,
  ``.``, ``bin``: a name may find the agent's file there; judged as ``PATH=... command``,
  which no rule approves). The permission request says why in its description and judges
  the command without such variables, so a ``--deny`` rule still sees the program.
* Each command runs in a PTY, in its own session and process group, launched through
  `_connection._supervisor`: its watchdog (its parent, a child subreaper on Linux) kills it
  and everything it started when this process goes away, ``kill -9`` included. When the
  command exits, the watchdog kills whatever it left (in its group or not), then exits.
  The PTY is its stdin, stdout and stderr (``isatty`` is true, ``TERM=xterm-256color``; the
  output keeps the terminal's ``\r\n`` and escape sequences) but not its controlling terminal:
  nobody types into it, so a program that opens ``/dev/tty`` to prompt fails at once instead of
  waiting forever.
* Output kept for ``terminal/output`` is bounded: ``outputByteLimit`` and `MAX_OUTPUT_BYTES`,
  whichever is smaller, dropping the oldest output at a UTF-8 character boundary. The
  ``on_output(terminal_id, data)`` hook gets every byte as it comes (for a terminal widget, which
  has its own caps); ``on_exit(terminal_id, status)`` gets the end.
* ``terminal/kill`` and ``terminal/release`` SIGTERM the group, then SIGKILL it after
  ``kill_grace`` seconds; `ClientTerminals.close` does that for every terminal (closing the
  agent, Interrupt, kernel shutdown) and is idempotent; `ClientTerminals.kill_all_now` SIGKILLs
  every group at once, from any thread.

Errors are `RpcError`: ``-32602`` for malformed params, ``-32002`` for an unknown session or
terminal id and a missing cwd or program, `_approval.NOT_ALLOWED` for a refusal, ``-32600`` when
the service is closed or full.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import logging
import os
import re
import secrets
import shlex
import signal
import subprocess
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from types import TracebackType
from typing import Any, Final, Self

import anyio
from anyio.abc import TaskGroup
from pydantic import Field, ValidationError

from .._connection._errors import INVALID_PARAMS, INVALID_REQUEST, RpcError
from .._connection._exit import signal_of
from .._connection._process import read_pty, spawn_in_pty
from .._protocol import ErrorCode, RequestPermissionRequest
from .._protocol._base import WireModel
from ._approval import Approve, ask, refusal

__all__ = [
    "MAX_OUTPUT_BYTES",
    "METHODS",
    "ClientTerminals",
    "TerminalExit",
    "TerminalRequest",
    "unnameable",
]

logger = logging.getLogger(__name__)

MAX_OUTPUT_BYTES: Final = 16 * 2**20  # kept per terminal for terminal/output, whatever asked
MAX_TERMINALS: Final = 64  # live (unreleased) terminals and pending approvals, per service
READ_BYTES: Final = 64 * 1024
_DRAIN_IDLE_SECONDS: Final = 0.2
_POLL_SECONDS: Final = 0.05
METHODS: Final = frozenset(
    {
        "terminal/create",
        "terminal/output",
        "terminal/wait_for_exit",
        "terminal/kill",
        "terminal/release",
    }
)
RESOURCE_NOT_FOUND: Final = ErrorCode.RESOURCE_NOT_FOUND
# Words a shell reads as syntax, not as a program name, when they come first and unquoted.
_RESERVED: Final = frozenset(
    {"!", "{", "}", "[[", "]]", "case", "coproc", "do", "done", "elif", "else", "esac", "fi"}
    | {"for", "function", "if", "in", "select", "then", "time", "until", "while"}
)
_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# bash imports a function from a variable named so (``BASH_FUNC_echo%%='() { ...; }'``).
_FUNCTION_PREFIX: Final = "BASH_FUNC_"

OnOutput = Callable[[str, bytes], None]


# -- the v1 params (schema/v1: CreateTerminalRequest, TerminalOutputRequest, ...) -----------


class _EnvVariable(WireModel):
    name: str
    value: str


class _CreateParams(WireModel):
    session_id: str
    command: str
    args: list[str] | None = None
    env: list[_EnvVariable] | None = None
    cwd: str | None = None
    output_byte_limit: int | None = Field(default=None, ge=0)


class _TerminalParams(WireModel):
    session_id: str
    terminal_id: str


def _invalid(exc: ValidationError) -> RpcError:
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first.get("loc", ()))
    return RpcError(INVALID_PARAMS, f"invalid params: {where}: {first.get('msg')}", {"at": where})


def _no_nul(value: str, what: str) -> None:
    if "\x00" in value:
        raise RpcError(INVALID_PARAMS, f"invalid params: {what} contains a NUL", {"at": what})


# -- what is asked, what ended ---------------------------------------------------------------


def _first_word(word: str) -> str:
    """``word`` as the first word of a command line, quoted so that a shell reads it as a
    program name: never as an assignment (``X=1``) or a reserved word (``if``, ``time``)."""
    quoted = shlex.quote(word)
    if quoted == word and (word in _RESERVED or "=" in word):
        return f"'{word}'"
    return quoted


def unnameable(name: str) -> bool:
    """Whether a variable named ``name`` is one no shell can name: not an identifier (``X%``,
    ``1``: only ``env`` passes it, and GNU ``env`` reads ``env 'X%=1' rm x`` otherwise than a
    policy might), or one bash reads a function from (``BASH_FUNC_*``). No rule approves it."""
    return _NAME.fullmatch(name) is None or name.startswith(_FUNCTION_PREFIX)


def _assignments(env: tuple[tuple[str, str], ...]) -> list[str]:
    """The words that give a program ``env``: ``NAME=value`` prefixes, or ``env`` and its
    operands when some name is not an identifier."""
    if not env:
        return []
    if all(_NAME.fullmatch(name) for name, _ in env):
        return [f"{name}={shlex.quote(value)}" for name, value in env]
    return ["env", *(shlex.quote(f"{name}={value}") for name, value in env)]


#: The shell that runs a request `reads_as_script`: ``SCRIPT_SHELL -c COMMAND``.
SCRIPT_SHELL: Final = "/bin/sh"

_SPACE = re.compile(r"\s")


def reads_as_script(command: str, args: tuple[str, ...]) -> bool:
    """Whether a ``terminal/create`` reads as a whole script in ``command``: no ``args`` and
    whitespace in ``command`` (Kimi CLI, older Claude Code adapters and CodeBuddy send
    ``{"command": "ls -la | wc -l"}``; Zed runs every command through a shell). The caller
    also checks that no program file has that name."""
    return not args and _SPACE.search(command.strip()) is not None


@dataclass(frozen=True)
class TerminalRequest:
    """A command an agent asks to run: what ``approve`` is shown, exactly what then runs."""

    session_id: str
    terminal_id: str
    command: str
    args: tuple[str, ...]
    cwd: str  # absolute, symlinks resolved: where it will run
    env: tuple[tuple[str, str], ...]  # the agent's variables, on top of the base environment
    output_byte_limit: int | None
    #: the session's folder, absolute, symlinks resolved (None: not known, so not inside it)
    folder: str | None = None
    #: ``command`` is a script (`reads_as_script`), run as ``SCRIPT_SHELL -c command``
    script: bool = False
    #: the file ``command`` names, absolute, as ``exec`` finds it when the request comes
    #: (`ClientTerminals.program_file`): what is started, so that no later search of ``PATH``
    #: can start another (None: a script, or no such file)
    program: str | None = None
    #: the command's ``PATH`` (its environment's, the agent's variables on top) when an entry
    #: is not absolute (``''`` and ``.`` are its folder, ``bin`` or ``node_modules/.bin`` a
    #: folder in it): a name may find a file the agent wrote there, so the command is judged
    #: and shown as ``PATH=... command`` (no rule approves a ``PATH`` assignment) and a person
    #: decides. None: every entry is absolute.
    search_path: str | None = None

    @property
    def argv(self) -> tuple[str, ...]:
        if self.script:
            return (SCRIPT_SHELL, "-c", self.command)
        return (self.command, *self.args)

    @property
    def executable(self) -> str | None:
        """The file that is started with `argv` (its ``argv[0]`` stays as the agent named it,
        as a shell would pass it): the program found when it was asked (`program`), None for
        a script (``/bin/sh``) or a name not found (then the start fails as it would)."""
        return None if self.script else self.program

    @property
    def outside(self) -> bool:
        """Whether it runs anywhere but in the session's folder or a folder below it."""
        folder = self.folder
        return folder is None or os.path.commonpath([folder, self.cwd]) != folder

    @property
    def unnameable_env(self) -> tuple[tuple[str, str], ...]:
        """The agent's variables that no shell can name (`unnameable`)."""
        return tuple((name, value) for name, value in self.env if unnameable(name))

    def person_reasons(self) -> tuple[str, ...]:
        """Why a person must decide this request, whatever ``--allow`` rules say (empty: a
        rule may approve it)."""
        reasons = []
        if self.outside:
            where = f" {self.folder}" if self.folder is not None else ""
            reasons.append(f"it runs outside the session's folder{where}")
        risky = self.unnameable_env
        if risky:
            words = " ".join(shlex.quote(f"{name}={value}") for name, value in risky)
            reasons.append(f"it sets variables no shell can name: {words}")
        if self.search_path is not None:
            entries = " ".join(
                repr(e) for e in self.search_path.split(":") if not e.startswith("/")
            )
            found = ""
            if self.program is not None and "/" not in self.command:
                found = f"; {shlex.quote(self.command)} is {shlex.quote(self.program)}"
            reasons.append(
                f"its PATH has entries relative to where it runs ({entries}): a program's name "
                f"may find a file written there{found}"
            )
        return tuple(reasons)

    def _words(self) -> str:
        if self.script:  # judged and shown as the script it is, which is what the shell runs
            return self.command
        return " ".join([_first_word(self.command), *map(shlex.quote, self.args)])

    def _shown_env(self) -> tuple[tuple[str, str], ...]:
        """The agent's variables, and ``PATH`` first when it has an entry that is not absolute
        (`search_path`) and the agent does not set it."""
        if self.search_path is None or any(name == "PATH" for name, _ in self.env):
            return self.env
        return (("PATH", self.search_path), *self.env)

    def command_line(self) -> str:
        """The argv (and the agent's variables) as a shell would have to be given them:
        ``LANG=C ls -l 'a b'``. Variables whose names a shell cannot assign go through
        ``env``."""
        return " ".join([*_assignments(self._shown_env()), self._words()])

    def judged_line(self) -> str:
        """What a policy judges: `command_line` without the variables no shell can name (they
        are in the request's description, and they make a person decide), so that a
        ``--deny`` rule sees the program whatever a reader makes of ``env``'s operands."""
        nameable = tuple((n, v) for n, v in self._shown_env() if not unnameable(n))
        return " ".join([*_assignments(nameable), self._words()])

    def permission_request(self) -> RequestPermissionRequest:
        """The request as a v2 command permission (options ``allow`` and ``reject``), the shape
        `acp_notebook._policy._rules.Policy.decide` judges; `person_reasons`, when there are any, in
        its description."""
        line = self.judged_line()
        wire: dict[str, Any] = {
            "sessionId": self.session_id,
            "title": f"Run {line}",
            "options": [
                {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
            ],
            "subject": {
                "type": "command",
                "command": line,
                "cwd": self.cwd,
                "terminalId": self.terminal_id,
            },
        }
        reasons = self.person_reasons()
        if reasons:
            wire["description"] = "\n".join(
                ["A person decides (no --allow rule approves it):", *(f"- {r}" for r in reasons)]
            )
        return RequestPermissionRequest.model_validate(wire)


@dataclass(frozen=True)
class TerminalExit:
    """How a command ended: its exit code, or the name of the signal that killed it."""

    exit_code: int | None = None
    signal: str | None = None

    @classmethod
    def from_returncode(cls, returncode: int) -> TerminalExit:
        name = signal_of(returncode)
        return cls(signal=name) if name is not None else cls(exit_code=returncode)

    def to_wire(self) -> dict[str, Any]:
        """``TerminalExitStatus`` / ``WaitForTerminalExitResponse``: both keys, one null."""
        return {"exitCode": self.exit_code, "signal": self.signal}


class _Output:
    """The text kept for ``terminal/output``: at most ``limit`` bytes of UTF-8, the newest.

    Bytes are decoded as they come (a character split across reads is joined; invalid bytes
    become U+FFFD, which counts as its 3 UTF-8 bytes), so every cut is between characters."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.truncated = False
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._chunks: deque[tuple[str, int]] = deque()
        self._size = 0

    def feed(self, data: bytes, *, final: bool = False) -> None:
        text = self._decoder.decode(data, final)
        if not text:
            return
        size = len(text.encode())
        self._chunks.append((text, size))
        self._size += size
        excess = self._size - self.limit
        while excess > 0:
            self.truncated = True
            head, head_size = self._chunks[0]
            if head_size <= excess:
                self._chunks.popleft()
                self._size -= head_size
                excess -= head_size
                continue
            kept = head.encode()[excess:]
            start = 0
            while start < len(kept) and kept[start] & 0xC0 == 0x80:  # inside a character
                start += 1
            rest = kept[start:].decode()
            self._chunks[0] = (rest, len(kept) - start)
            self._size -= head_size - (len(kept) - start)
            excess = 0

    @property
    def text(self) -> str:
        if len(self._chunks) > 1:
            joined = "".join(text for text, _ in self._chunks)
            self._chunks = deque([(joined, self._size)])
        return self._chunks[0][0] if self._chunks else ""


# -- one running command -------------------------------------------------------------------


class _Terminal:
    def __init__(self, request: TerminalRequest, limit: int) -> None:
        self.request = request
        self.output = _Output(limit)
        self.exit: TerminalExit | None = None
        self.done = anyio.Event()
        self.pid = 0
        self.master = -1
        self._proc: subprocess.Popen[bytes] | None = None  # the watchdog, the command's parent
        self._watch_w = -1
        self._watchdog_exited = False  # then the command's pid (its group id) may be reused

    def spawn(self, env: dict[str, str], cols: int, rows: int) -> None:
        """Start the command (blocking: run in a thread). Raises OSError if it cannot run."""
        # An argv, never a shell: the approved one, its program the file found when it was asked.
        request = self.request
        child = spawn_in_pty(
            request.argv,
            cwd=request.cwd,
            env=env,
            cols=cols,
            rows=rows,
            executable=request.executable,
        )
        self._proc, self.pid = child.process, child.pid
        self._watch_w, self.master = child.watch, child.master

    def signal_group(self, sig: int) -> None:
        if self.pid and self.exit is None and not self._watchdog_exited:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, sig)

    def _release_fds(self) -> None:
        for fd in (self.master, self._watch_w):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.master = self._watch_w = -1

    async def run(self, on_output: OnOutput | None) -> None:
        """Stream output until the command is gone; then reap it and record how it ended."""
        assert self._proc is not None
        proc = self._proc
        exited = anyio.Event()
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._wait_exit, exited)
                await self._pump(on_output, exited)
                await exited.wait()
        except Exception:
            logger.exception("client terminal %s failed", self.request.terminal_id)
        finally:
            with anyio.CancelScope(shield=True):
                self.signal_group(signal.SIGKILL)  # no-op unless we stopped early
                returncode = await anyio.to_thread.run_sync(proc.wait)
                self.output.feed(b"", final=True)
                self._release_fds()
                self.exit = TerminalExit.from_returncode(returncode)
                self.done.set()

    async def _wait_exit(self, exited: anyio.Event) -> None:
        # The watchdog exits once the command and what it left are gone. A pidfd is readable
        # once the process has exited: no worker thread is held for the command's whole life
        # (anyio lends 40; 40 long commands would starve every other use).
        assert self._proc is not None
        watchdog = self._proc.pid
        try:
            pidfd = os.pidfd_open(watchdog)
        except (AttributeError, OSError):  # no pidfd (not Linux 5.3+): a thread of our own
            await anyio.to_thread.run_sync(
                lambda: os.waitid(os.P_PID, watchdog, os.WEXITED | os.WNOWAIT),
                abandon_on_cancel=True,
                limiter=anyio.CapacityLimiter(1),
            )
        else:
            try:
                await anyio.wait_readable(pidfd)
            finally:
                os.close(pidfd)
        self._watchdog_exited = True  # it reaped the command: no group signal from here on
        exited.set()

    async def _pump(self, on_output: OnOutput | None, exited: anyio.Event) -> None:
        fd = self.master
        while True:
            with anyio.move_on_after(
                _DRAIN_IDLE_SECONDS if exited.is_set() else _POLL_SECONDS
            ) as waiting:
                await anyio.wait_readable(fd)
            if waiting.cancelled_caught:
                if exited.is_set():
                    return  # gone, and nothing more came: someone outside the group holds it
                continue
            data = read_pty(fd, READ_BYTES)
            if data is None:  # its end: every holder of the PTY's other side is gone
                return
            if not data:
                continue
            self.output.feed(data)
            if on_output is not None:
                try:
                    on_output(self.request.terminal_id, data)
                except Exception:
                    logger.exception("on_output hook failed")


# -- the service -----------------------------------------------------------------------------


class ClientTerminals:
    """The ``terminal/*`` methods of one agent connection.

    ``approve(request)`` decides every command (see the module docs). ``cwd_of(session_id)`` is
    the session's folder (the default cwd) or None for an unknown session. ``base_env`` is the
    environment commands start from (default: this process's). Use as ``async with``."""

    def __init__(
        self,
        approve: Approve[TerminalRequest],
        *,
        cwd_of: Callable[[str], str | os.PathLike[str] | None],
        on_output: OnOutput | None = None,
        on_exit: Callable[[str, TerminalExit], None] | None = None,
        approve_timeout: float | None = None,
        base_env: dict[str, str] | None = None,
        max_output_bytes: int = MAX_OUTPUT_BYTES,
        max_terminals: int = MAX_TERMINALS,
        kill_grace: float = 1.0,
        cols: int = 80,
        rows: int = 24,
    ) -> None:
        self._approve = approve
        self._cwd_of = cwd_of
        self.on_output = on_output
        self.on_exit = on_exit
        self.approve_timeout = approve_timeout
        self._base_env = base_env
        self.max_output_bytes = max_output_bytes
        self.max_terminals = max_terminals
        self.kill_grace = kill_grace
        self.cols, self.rows = cols, rows
        self._terminals: dict[str, _Terminal] = {}
        self._pending: set[str] = set()
        #: how many times each session's commands were killed (an Interrupt of its turn): a
        #: command asked for before a kill is not started after it, or is stopped once started
        self._kills: dict[str, int] = {}
        self._tg: TaskGroup | None = None
        self._closed = False

    async def __aenter__(self) -> Self:
        self._tg = await anyio.create_task_group().__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        with anyio.CancelScope(shield=True):
            await self.close()
        assert self._tg is not None
        self._tg.cancel_scope.cancel()
        return await self._tg.__aexit__(exc_type, exc, tb)

    # -- dispatch ------------------------------------------------------------------------

    async def handle(self, method: str, params: Any) -> dict[str, Any]:
        """Answer one ``terminal/*`` request (``method`` in `METHODS`)."""
        if method == "terminal/create":
            return await self.create(params)
        if method == "terminal/output":
            return await self.output(params)
        if method == "terminal/wait_for_exit":
            return await self.wait_for_exit(params)
        if method == "terminal/kill":
            return await self.kill(params)
        if method == "terminal/release":
            return await self.release(params)
        raise RpcError(ErrorCode.METHOD_NOT_FOUND, f"method not found: {method}")

    # -- terminal/create -----------------------------------------------------------------

    async def create(self, params: Any) -> dict[str, Any]:
        request = self._request(params)
        if self._closed or self._tg is None:
            raise RpcError(INVALID_REQUEST, "client terminals are closed", {"reason": "closed"})
        if len(self._terminals) + len(self._pending) >= self.max_terminals:
            raise RpcError(
                INVALID_REQUEST,
                f"too many terminals ({self.max_terminals}); release some first",
                {"reason": "too_many_terminals", "limit": self.max_terminals},
            )
        self._pending.add(request.terminal_id)
        kills = self._kills.get(request.session_id, 0)
        try:
            verdict = await ask(self._approve, request, timeout=self.approve_timeout)
            if not verdict.allowed:
                raise refusal(f"running {request.command_line()!r}", verdict)
            if self._kills.get(request.session_id, 0) != kills:
                raise RpcError(
                    INVALID_REQUEST,
                    "the turn was cancelled: the command was not started",
                    {"reason": "cancelled"},
                )
            if self._closed:
                raise RpcError(INVALID_REQUEST, "client terminals are closed", {"reason": "closed"})
            limit = self.max_output_bytes
            if request.output_byte_limit is not None:
                limit = min(limit, request.output_byte_limit)
            terminal = _Terminal(request, limit)
            with anyio.CancelScope(shield=True):  # started is registered: close() can kill it
                try:
                    await anyio.to_thread.run_sync(
                        terminal.spawn, self._environment(request), self.cols, self.rows
                    )
                except OSError as exc:
                    raise RpcError(
                        RESOURCE_NOT_FOUND if exc.errno == errno.ENOENT else INVALID_PARAMS,
                        f"cannot run {request.command!r}: {exc.strerror}",
                        {"reason": "exec_failed", "errno": exc.errno},
                    ) from exc
                self._terminals[request.terminal_id] = terminal
                self._tg.start_soon(self._run, terminal)
                if self._closed:  # close() ran while it started: it must not outlive close()
                    terminal.signal_group(signal.SIGKILL)
                    raise RpcError(
                        INVALID_REQUEST, "client terminals are closed", {"reason": "closed"}
                    )
                if self._kills.get(request.session_id, 0) != kills:
                    # kill_session ran while it started (it could not see it yet): stop it as
                    # that would have; it stays known, its output and exit status readable
                    await self._stop(terminal)
        finally:
            self._pending.discard(request.terminal_id)
        return {"terminalId": request.terminal_id}

    def _request(self, params: Any) -> TerminalRequest:
        try:
            parsed = _CreateParams.model_validate(params)
        except ValidationError as exc:
            raise _invalid(exc) from None
        if not parsed.command:
            raise RpcError(INVALID_PARAMS, "invalid params: command is empty", {"at": "command"})
        args = tuple(parsed.args or ())
        _no_nul(parsed.command, "command")
        for i, arg in enumerate(args):
            _no_nul(arg, f"args.{i}")
        env: list[tuple[str, str]] = []
        for i, var in enumerate(parsed.env or ()):
            if not var.name or "=" in var.name:
                raise RpcError(
                    INVALID_PARAMS, f"invalid params: env.{i}.name {var.name!r}", {"at": f"env.{i}"}
                )
            _no_nul(var.name, f"env.{i}.name")
            _no_nul(var.value, f"env.{i}.value")
            env.append((var.name, var.value))
        cwd, folder = self._cwd(parsed.session_id, parsed.cwd)
        request = TerminalRequest(
            session_id=parsed.session_id,
            terminal_id=f"term-{secrets.token_hex(6)}",
            command=parsed.command,
            args=args,
            cwd=cwd,
            env=tuple(env),
            output_byte_limit=parsed.output_byte_limit,
            folder=folder,
        )
        program = self.program_file(request)
        entries = os.get_exec_path(self._environment(request))
        if not all(os.path.isabs(entry) for entry in entries):
            request = replace(request, search_path=os.pathsep.join(entries))
        if reads_as_script(request.command, args) and program is None:
            return replace(request, script=True)
        return replace(request, program=program)

    def _cwd(self, session_id: str, cwd: str | None) -> tuple[str, str]:
        """Where the command runs and the session's folder, both absolute, symlinks resolved."""
        if cwd is not None:
            _no_nul(cwd, "cwd")
            if not os.path.isabs(cwd):
                raise RpcError(INVALID_PARAMS, "invalid params: cwd is not absolute", {"at": "cwd"})
        session_cwd = self._cwd_of(session_id)
        if session_cwd is None:
            raise RpcError(
                RESOURCE_NOT_FOUND, f"unknown session {session_id!r}", {"sessionId": session_id}
            )
        folder = os.path.realpath(os.fspath(session_cwd))
        if cwd is None:
            cwd = os.fspath(session_cwd)
        resolved = os.path.realpath(cwd)
        if not os.path.isdir(resolved):
            raise RpcError(RESOURCE_NOT_FOUND, f"no such folder: {cwd}", {"cwd": cwd})
        return resolved, folder

    def program_file(self, request: TerminalRequest) -> str | None:
        """The file ``exec`` would run for ``request``'s program, found as the launcher's
        ``os.execvp`` finds it (in the command's environment, relative names from its cwd):
        the first executable file. None when there is none. As found, not normalized: a
        caller that trusts some folders compares the path's folder as written."""
        command = request.command
        if "/" in command:
            found = [command]
        else:
            found = [os.path.join(d, command) for d in os.get_exec_path(self._environment(request))]
        for path in found:
            full = os.path.join(request.cwd, path)  # an absolute path stays as it is
            if os.path.isfile(full) and os.access(full, os.X_OK):
                return full
        return None

    def _environment(self, request: TerminalRequest) -> dict[str, str]:
        env = dict(os.environ if self._base_env is None else self._base_env)
        env.update(TERM="xterm-256color", COLUMNS=str(self.cols), LINES=str(self.rows))
        env.update(request.env)
        return env

    async def _run(self, terminal: _Terminal) -> None:
        await terminal.run(self.on_output)
        if self.on_exit is not None and terminal.exit is not None:
            try:
                self.on_exit(terminal.request.terminal_id, terminal.exit)
            except Exception:
                logger.exception("on_exit hook failed")

    # -- the other methods ---------------------------------------------------------------

    def _terminal(self, params: Any) -> _Terminal:
        try:
            parsed = _TerminalParams.model_validate(params)
        except ValidationError as exc:
            raise _invalid(exc) from None
        terminal = self._terminals.get(parsed.terminal_id)
        if terminal is None or terminal.request.session_id != parsed.session_id:
            raise RpcError(
                RESOURCE_NOT_FOUND,
                f"unknown terminal {parsed.terminal_id!r}",
                {"terminalId": parsed.terminal_id},
            )
        return terminal

    async def output(self, params: Any) -> dict[str, Any]:
        terminal = self._terminal(params)
        result: dict[str, Any] = {
            "output": terminal.output.text,
            "truncated": terminal.output.truncated,
        }
        if terminal.exit is not None:
            result["exitStatus"] = terminal.exit.to_wire()
        return result

    async def wait_for_exit(self, params: Any) -> dict[str, Any]:
        terminal = self._terminal(params)
        await terminal.done.wait()
        assert terminal.exit is not None
        return terminal.exit.to_wire()

    async def kill(self, params: Any) -> dict[str, Any]:
        await self._stop(self._terminal(params))
        return {}

    async def release(self, params: Any) -> dict[str, Any]:
        terminal = self._terminal(params)
        await self._stop(terminal)
        self._terminals.pop(terminal.request.terminal_id, None)
        return {}

    async def _stop(self, terminal: _Terminal) -> None:
        """SIGTERM the group, SIGKILL it after the grace period, wait until it is gone."""
        with anyio.CancelScope(shield=True):
            if terminal.done.is_set():
                return
            terminal.signal_group(signal.SIGTERM)
            with anyio.move_on_after(self.kill_grace):
                await terminal.done.wait()
            terminal.signal_group(signal.SIGKILL)
            await terminal.done.wait()

    # -- shutdown ------------------------------------------------------------------------

    async def release_session(self, session_id: str) -> None:
        """Stop and forget every terminal of one session (its close, an Interrupt of its cell);
        the other sessions' terminals go on."""
        terminals = [t for t in self._terminals.values() if t.request.session_id == session_id]
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as tg:
                for terminal in terminals:
                    tg.start_soon(self._stop, terminal)
        for terminal in terminals:
            self._terminals.pop(terminal.request.terminal_id, None)

    async def kill_session(self, session_id: str) -> None:
        """Stop every running command of one session (an Interrupt of its turn: SIGTERM, then
        SIGKILL after the grace period) and wait until each is gone; its terminals stay known,
        so the agent can still read their output and exit status."""
        self._kills[session_id] = self._kills.get(session_id, 0) + 1
        terminals = [t for t in self._terminals.values() if t.request.session_id == session_id]
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as tg:
                for terminal in terminals:
                    tg.start_soon(self._stop, terminal)

    def kill_all_now(self) -> None:
        """SIGKILL every terminal's process group at once (any thread; does not wait)."""
        for terminal in list(self._terminals.values()):
            terminal.signal_group(signal.SIGKILL)

    async def close(self, grace: float | None = None) -> None:
        """Refuse new commands, stop every running one (SIGTERM, SIGKILL after ``grace``,
        default ``kill_grace``) and wait until each is gone. Idempotent."""
        self._closed = True
        terminals = list(self._terminals.values())
        with anyio.CancelScope(shield=True):
            for terminal in terminals:
                terminal.signal_group(signal.SIGTERM)
            with anyio.move_on_after(self.kill_grace if grace is None else grace):
                for terminal in terminals:
                    await terminal.done.wait()
            self.kill_all_now()
            for terminal in terminals:
                await terminal.done.wait()

    # -- for tests and the notebook --------------------------------------------------------

    def process_group(self, terminal_id: str) -> int | None:
        """The process group id of a terminal's command (its pid), None when unknown."""
        terminal = self._terminals.get(terminal_id)
        return terminal.pid if terminal is not None else None

    @property
    def terminal_ids(self) -> list[str]:
        return list(self._terminals)
