"""One agent-owned display terminal: its bytes (bounded), metadata and lazy text/HTML."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, Literal

from .._connection._exit import exit_label
from .._protocol import TerminalExitStatus
from ._ansi import AnsiHtml, AnsiTranscript

__all__ = [
    "BLOCK_BYTES",
    "DEFAULT_MAX_BYTES",
    "ExitStatus",
    "RunState",
    "TerminalPhase",
    "TerminalState",
    "patch_meta",
    "terminal_phase",
]

DEFAULT_MAX_BYTES = 16 * 2**20
_MIN_MAX_BYTES = 8
# Small appends are gathered into blocks of about this size; bigger chunks are blocks of their
# own. Dropping old bytes drops whole blocks, so nothing is ever compacted or copied whole.
BLOCK_BYTES = 256 * 1024
OWN_BLOCK_BYTES = 16 * 1024  # a chunk this big is kept as it came (no copy into the tail)


def patch_meta(old: dict[str, Any] | None, new: dict[str, Any] | None) -> dict[str, Any] | None:
    """The v2 ``_meta`` patch: ``None`` clears, an object patches by top-level key
    (a key set to ``None`` is removed). The caller handles "omitted"."""
    if new is None:
        return None
    merged = dict(old or {})
    for key, value in new.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


class ExitStatus(TerminalExitStatus):
    """A terminal's exit status as the state keeps it: the wire model, with a short repr.

    ``TerminalState.exit_status`` turns every wire ``TerminalExitStatus`` into one of these, so
    ``term.exit_status`` prints as ``ExitStatus(exit_code=0)`` (only the values that are there),
    not as a wire model with every field. Fields, ``to_wire()`` and the fields-set record are
    the wire model's.
    """

    @classmethod
    def of(cls, status: Any) -> Any:
        """``status`` as an :class:`ExitStatus` when it is a wire exit status, else as it is."""
        if isinstance(status, TerminalExitStatus) and not isinstance(status, cls):
            return cls.model_validate(status.to_wire())
        return status

    def __repr__(self) -> str:
        values = {"exit_code": self.exit_code, "signal": self.signal, "meta": self.meta}
        values.update(self.model_extra or {})
        shown = ", ".join(
            f"{name}={value!r}" for name, value in values.items() if value is not None
        )
        return f"ExitStatus({shown})"

    __str__ = __repr__


class TerminalState:
    """Bytes and metadata of one terminal, keyed by ``terminal_id``.

    Memory is bounded: at most ``max_bytes`` bytes are kept. Past that the oldest
    bytes are dropped at a line start; the cut points lie on a fixed grid of the
    stream offsets, so what is kept depends only on the byte stream, never on
    how it was chunked. ``total_bytes`` still counts every byte of the stream
    (since the last snapshot), ``omitted_bytes`` the ones dropped.

    The bytes are held as a queue of immutable blocks (small appends gathered into a
    ``bytearray`` tail until it reaches ``BLOCK_BYTES``), and dropping old bytes drops
    whole blocks: what the store holds is the kept bytes plus at most one partly dropped
    block and the tail, never a compaction copy of the whole buffer.

    ``text`` and ``html`` are computed lazily: appending bytes costs a copy into the
    tail (or none, for a big chunk); the converters only run, over the bytes not
    converted yet, when ``text`` or ``html`` is read.
    """

    def __init__(self, terminal_id: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.terminal_id = terminal_id
        self.command: str | None = None
        self.cwd: str | None = None
        self.size: Any = None  # TerminalSize model
        self.capabilities: Any = None  # TerminalCapabilities model
        self.meta: dict[str, Any] | None = None
        self._exit_status: Any = None
        self.tool_call_ids: list[str] = []  # tool calls whose content anchors this terminal
        self.reported = False  # a terminal_update or chunk has been seen
        #: the kept bytes include streamed chunks (False: only snapshots, or nothing, so far)
        self.streamed = False
        #: the index of the turn it was first reported in (None: before any turn); a later
        #: turn that carries it on shows only its output from then on
        self.first_turn: int | None = None
        self.revision = 0
        self.generation = 0  # bumped by every snapshot (``replace``): stream offsets restart
        #: a renderer's memo of its last rendering of these bytes, ``(key, result)``: kept here
        #: so that it goes with the terminal (``_widgets._static.render_state_tail``)
        self.rendered: tuple[tuple[object, ...], tuple[str, str]] | None = None
        self._max = max(_MIN_MAX_BYTES, max_bytes)
        self._block = max(1, self._max // 4)
        self._reset_bytes(b"")

    # -- bytes -----------------------------------------------------------------
    def _reset_bytes(self, data: bytes) -> None:
        self._blocks: deque[bytes] = deque([bytes(data)] if data else [])
        self._tail = bytearray()  # the newest bytes, after the blocks
        self._phys = 0  # stream offset of the first byte held (of _blocks[0])
        self._start = 0  # stream offset of the first kept byte
        self._total = len(data)
        self._grid = 1  # next grid block that may hold the next cut
        # Each converter has seen the bytes [base, fed) of the stream.
        self._plain: AnsiTranscript | None = None
        self._plain_base = self._plain_fed = 0
        self._html: AnsiHtml | None = None
        self._html_base = self._html_fed = 0
        self._text_cache: tuple[int, int, str] | None = None
        self._html_cache: tuple[int, int, str] | None = None
        # newlines in the stream offsets [lo, hi): (lo, hi, count), for ``tail``
        self._lines_cache: tuple[int, int, int] | None = None
        self._trim()

    def replace(self, data: bytes) -> None:
        """A snapshot: these bytes replace everything kept so far."""
        self._reset_bytes(data)
        self.streamed = False
        self.generation += 1
        self.revision += 1

    def append(self, data: bytes, pieces: int = 1) -> None:
        """Live output: bytes appended in order (``pieces``: how many chunks of output, none of
        them empty, they join; each counts in ``revision``, as if appended one by one, and
        they go to the tail as small chunks do unless they make a block)."""
        size = len(data)
        if not size:
            return
        self.streamed = True
        if size >= BLOCK_BYTES or (size >= OWN_BLOCK_BYTES and pieces == 1):
            self._seal()  # a big chunk is a block of its own: not copied into the tail
            self._blocks.append(bytes(data))
        else:
            tail = self._tail
            tail += data  # (in place)
            if len(tail) >= BLOCK_BYTES:
                self._seal()
        total = self._total = self._total + size
        if total - self._start > self._max:
            self._trim()
        self.revision += pieces

    def _seal(self) -> None:
        """Turn the tail into a block."""
        if self._tail:
            self._blocks.append(bytes(self._tail))
            self._tail = bytearray()

    def _held(self) -> list[bytes | bytearray]:
        """The blocks then the tail: every byte held, from stream offset ``_phys`` on."""
        return [*self._blocks, self._tail]

    def _slice(self, lo: int, hi: int) -> bytes:
        """The held bytes at stream offsets ``[lo, hi)`` (clipped to what is held)."""
        lo = max(lo, self._phys)
        hi = min(hi, self._total)
        if lo >= hi:
            return b""
        parts: list[bytes] = []
        pos = self._phys
        for block in self._held():
            end = pos + len(block)
            if end > lo and pos < hi:
                parts.append(bytes(block[max(lo - pos, 0) : hi - pos]))
            if end >= hi:
                break
            pos = end
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def _find_newline(self, lo: int, hi: int) -> int:
        """Stream offset of the first newline in ``[lo, hi)`` (held bytes only), else -1."""
        pos = self._phys
        for block in self._held():
            end = pos + len(block)
            if end > lo and pos < hi:
                found = block.find(b"\n", max(lo - pos, 0), hi - pos)
                if found >= 0:
                    return pos + found
            if end >= hi:
                break
            pos = end
        return -1

    def _count_newlines(self, lo: int, hi: int) -> int:
        """How many newlines the held bytes at stream offsets ``[lo, hi)`` hold."""
        count = 0
        pos = self._phys
        for block in self._held():
            end = pos + len(block)
            if end > lo and pos < hi:
                count += block.count(b"\n", max(lo - pos, 0), hi - pos)
            if end >= hi:
                break
            pos = end
        return count

    def _cut(self, k: int) -> int | None:
        """Stream offset of the first line start in grid block ``k`` (else the block start)."""
        lo = k * self._block
        hi = lo + self._block
        if hi > self._total:
            return None  # block not complete yet (cannot happen while max >= 2 * block)
        found = self._find_newline(lo - 1, hi - 1)
        return found + 1 if found >= 0 else lo

    def _trim(self) -> None:
        while self._total - self._start > self._max:
            cut = self._cut(self._grid)
            if cut is None:
                break
            self._grid += 1
            self._start = cut
        # Drop the blocks that hold only dropped bytes. The byte just before the first kept
        # one stays held: the next cut looks at it (is the grid block's start a line start?).
        keep_from = max(self._start - 1, 0)
        blocks = self._blocks
        while blocks and self._phys + len(blocks[0]) <= keep_from:
            self._phys += len(blocks.popleft())
        if blocks and keep_from - self._phys >= BLOCK_BYTES:  # a big chunk, mostly dropped
            blocks[0] = blocks[0][keep_from - self._phys :]
            self._phys = keep_from
        if not blocks and self._tail and keep_from > self._phys:
            del self._tail[: keep_from - self._phys]
            self._phys = keep_from

    @property
    def data(self) -> bytes:
        """The kept bytes."""
        return self._slice(self._start, self._total)

    def since(self, offset: int) -> bytes:
        """The kept bytes from stream offset ``offset`` on (from the first kept byte if that
        one was dropped already); copies only that tail. Offsets restart at each snapshot,
        so compare :attr:`generation` first."""
        start = max(offset, self._start)
        if start >= self._total:
            return b""
        return self._slice(start, self._total)

    def tail(self, max_bytes: int) -> tuple[int, bytes]:
        """The end of the kept bytes, at most ``max_bytes`` of them and from a line start
        (unless no newline is in reach), and how many lines of the kept bytes come before it:
        what ``data`` cut that way gives, without copying or scanning all of ``data`` (the
        count of the lines before goes on from the last call's)."""
        start, total = self._start, self._total
        if total - start <= max_bytes:
            return 0, self._slice(start, total)
        lo = total - max_bytes
        cut = self._find_newline(lo - 1, total - 1)
        if cut >= 0:
            lo = cut + 1
        cache = self._lines_cache
        if cache is not None and cache[0] == start and cache[1] <= lo:
            earlier = cache[2] + self._count_newlines(cache[1], lo)
        else:
            earlier = self._count_newlines(start, lo)
        self._lines_cache = (start, lo, earlier)
        return earlier, self._slice(lo, total)

    @property
    def total_bytes(self) -> int:
        return self._total

    @property
    def omitted_bytes(self) -> int:
        return self._start

    @property
    def exit_status(self) -> Any:
        """An :class:`ExitStatus` (a ``TerminalExitStatus``) once the process exited, else None."""
        return self._exit_status

    @exit_status.setter
    def exit_status(self, status: Any) -> None:
        self._exit_status = ExitStatus.of(status)

    @property
    def exited(self) -> bool:
        return self.exit_status is not None

    # -- text ------------------------------------------------------------------
    def _pending(self, fed: int) -> bytes:
        return self._slice(fed, self._total)

    def _omitted_note(self) -> str:
        return f"[… {self._start} bytes omitted …]\n" if self._start else ""

    @property
    def text(self) -> str:
        """Sanitised plain transcript of the kept bytes."""
        cache = self._text_cache
        if cache is not None and cache[:2] == (self._start, self._total):
            return cache[2]
        if self._plain is None or self._plain_base != self._start:
            self._plain = AnsiTranscript()
            self._plain_base = self._plain_fed = self._start
        self._plain.feed(self._pending(self._plain_fed))
        self._plain_fed = self._total
        text = self._omitted_note() + self._plain.text()
        self._text_cache = (self._start, self._total, text)
        return text

    @property
    def html(self) -> str:
        """HTML (inside of a ``<pre>``) of the kept bytes; all text escaped."""
        cache = self._html_cache
        if cache is not None and cache[:2] == (self._start, self._total):
            return cache[2]
        if self._html is None or self._html_base != self._start:
            self._html = AnsiHtml()
            self._html_base = self._html_fed = self._start
        self._html.feed(self._pending(self._html_fed))
        self._html_fed = self._total
        note = self._omitted_note()
        markup = (f'<span class="acp-omitted">{note[:-1]}</span>\n' if note else "") + (
            self._html.html()
        )
        self._html_cache = (self._start, self._total, markup)
        return markup

    @property
    def exit_label(self) -> str:
        """``running``, else the one exit label: ``exit 0``, ``signal SIGTERM`` or ``exited``."""
        status = self.exit_status
        if status is None:
            return "running"
        return exit_label(getattr(status, "exit_code", None), getattr(status, "signal", None))

    def __repr__(self) -> str:
        return (
            f"TerminalState({self.terminal_id!r}, command={self.command!r}, "
            f"bytes={self._total - self._start}, exited={self.exited})"
        )


RunState = Literal["waiting", "running", "not-run", "stopped", "exited"]


@dataclass(frozen=True)
class TerminalPhase:
    """What a terminal's header says about its command, read from more than its bytes.

    ``state``: ``waiting`` (a permission about it is still asked: nothing ran), ``running``,
    ``not-run`` (the permission was refused: nothing ran), ``stopped`` (the turn was cancelled and
    the agent reported no exit code or signal), ``exited``. ``label`` is the badge's words.
    ``note`` holds the agent's words sent as the terminal's output when nothing ran or the run
    was cut (claude-agent-acp sends its tool result, "User refused permission to run tool",
    as the output snapshot): prose, shown as a line of text, never in the terminal's screen.
    ``shows_bytes``: whether the bytes belong on the screen.
    """

    state: RunState
    label: str
    note: str = ""
    shows_bytes: bool = True


def _no_exit_report(status: Any) -> bool:
    """No exit status yet, or one with neither a code nor a signal (``{}``): the agent did not
    say how a process ended, or that one ran."""
    return getattr(status, "exit_code", None) is None and getattr(status, "signal", None) is None


def terminal_phase(
    term: TerminalState, *, asking: bool = False, refused: bool = False, cancelled: bool = False
) -> TerminalPhase:
    """The :class:`TerminalPhase` of ``term``. ``asking``: a permission request about one of its
    tool calls (or about it) is still open; ``refused``: one was answered with anything but an
    allow; ``cancelled``: its turn was cancelled (Interrupt, Stop)."""
    status = term.exit_status
    if refused and _no_exit_report(status):
        # Nothing ran: whatever came as output (claude-agent-acp streams its tool result in v1,
        # sends it as a snapshot in v2) is the agent's words. An exit code says it ran after all.
        return TerminalPhase("not-run", "not run", _note(term), shows_bytes=False)
    if status is None:
        if asking and term.total_bytes == 0:
            return TerminalPhase("waiting", "waiting for approval")
        return TerminalPhase("running", "running")
    if cancelled and _no_exit_report(status):
        if term.streamed:  # what streamed before the cut is the command's own output
            return TerminalPhase("stopped", "stopped")
        return TerminalPhase("stopped", "stopped", _note(term), shows_bytes=False)
    return TerminalPhase("exited", term.exit_label)


def _note(term: TerminalState) -> str:
    """The agent's words sent as the output of a command that did not run (plain text)."""
    return term.text.strip() if term.total_bytes else ""
