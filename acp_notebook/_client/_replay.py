"""Bounded buffers of session updates for ``Turn.updates()`` (layer 3: client).

A turn must not keep every raw update it saw: a terminal flood is mostly base64 text that the
state decodes into its own capped buffer, and a list of every update would hold all of it
(1 GiB of output is 1.4 GB of base64) for as long as the turn lives. So a turn keeps only a
bounded *replay* of its updates, and each iterator gets its own bounded queue from the moment
it is created. Both are :class:`UpdateBuffer` instances with different limits.

*Bulk* updates are the ones whose payload the state does not keep as it is: terminal output
(``terminal_output_chunk``, and ``terminal_update`` carrying an ``output`` snapshot). Every
other update (messages, tool calls, plans, state changes) is small, or its content is kept by
the state anyway, so holding it costs only the wrapper.
"""

from __future__ import annotations

import functools
import heapq
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Iterable
from itertools import accumulate, islice, repeat
from operator import call, itemgetter
from typing import Any, Protocol

import anyio

from .. import _protocol as p

__all__ = [
    "ITERATOR_BULK_BYTES",
    "ITERATOR_LIMIT",
    "REPLAY_BULK_BYTES",
    "REPLAY_LIMIT",
    "UpdateBuffer",
    "UpdateStream",
    "bulk_weight",
]

_CHUNK = p.TerminalOutputChunk


def _validate_chunk(raw: dict[str, Any]) -> Any:
    return _chunk_validator()(raw)


@functools.cache
def _chunk_validator() -> Callable[[Any], Any]:
    """Made on first use: the deferred model is built first (pydantic's stand-in validator
    rebuilds it from its caller's frames, which a shallow stack may not have)."""
    _CHUNK.model_rebuild()
    return _CHUNK.__pydantic_validator__.validate_python


#: what the buffers hold of an update whose model is not made: a hot chunk's wire dict, or
#: what makes the model: a partial, or a tuple ``(function, *arguments)`` (one object where a
#: partial is three: what a v1 flood pushes at every line)
_LAZY = (dict, functools.partial, tuple)


def _model(update: Any) -> Any:
    """The model of a held update: a wire dict is a hot chunk, a partial or a tuple makes it."""
    kind = type(update)
    if kind is dict:
        return _validate_chunk(update)
    if kind is functools.partial:
        return update()
    if kind is tuple:
        return update[0](*update[1:])
    return update


_consume = deque[Any](maxlen=0).extend  # runs an iterator to its end, keeping nothing

# What a turn keeps for iterators that start late (after updates have arrived).
REPLAY_LIMIT = 5_000  # updates
REPLAY_BULK_BYTES = 1 * 2**20  # characters of terminal base64 among them
# What one iterator may have queued but not consumed yet.
ITERATOR_LIMIT = 20_000  # updates
ITERATOR_BULK_BYTES = 16 * 2**20  # characters of terminal base64 among them


def bulk_weight(update: Any) -> int:
    """The size of ``update``'s terminal payload (its base64 text), 0 if it carries none."""
    if type(update) is _CHUNK or isinstance(update, _CHUNK):
        return len(update.data)
    if isinstance(update, p.TerminalUpdate) and update.output is not None:
        return len(update.output.data)
    return 0


class UpdateBuffer:
    """Updates in arrival order, at most ``max_items`` of them and ``max_bulk`` bulk bytes.

    Past a limit the oldest bulk update goes first; only when no bulk update is left does the
    oldest other update go. So a flood of terminal output keeps the turn's structure (the
    prompt, tool calls, terminal starts and exits, the final state) and its latest output.
    ``dropped`` counts the updates that went. The order of what is kept never changes.
    """

    def __init__(self, max_items: int, max_bulk: int) -> None:
        if max_items < 1 or max_bulk < 0:
            raise ValueError("max_items must be positive and max_bulk not negative")
        self.max_items = max_items
        self.max_bulk = max_bulk
        self._dropped = 0
        # Two queues, each oldest first, merged by arrival number when read: dropping the
        # oldest bulk update (what a flood does at every chunk) is a popleft, not a search.
        self._bulk: deque[tuple[int, Any, int]] = deque()  # (arrival number, update, weight)
        self._other: deque[tuple[int, Any]] = deque()  # (arrival number, update)
        self._bulk_bytes = 0
        self._arrived = 0
        # `push_chunk` drops late, in one go, an eighth past the limits (see `_settle`): not
        # further, for what is held longer costs the garbage collector more than it saves.
        self._slack_items = max_items + max_items // 8
        self._slack_bulk = max_bulk + max_bulk // 8

    def __len__(self) -> int:
        self._settle()
        return len(self._bulk) + len(self._other)

    @property
    def bulk_bytes(self) -> int:
        """Bulk bytes held right now."""
        self._settle()
        return self._bulk_bytes

    @property
    def dropped(self) -> int:
        """How many updates went."""
        self._settle()
        return self._dropped

    def push(self, update: Any) -> None:
        self._settle()
        key = self._arrived
        self._arrived = key + 1
        weight = bulk_weight(update)
        if weight:
            self._bulk.append((key, update, weight))
            self._bulk_bytes += weight
        else:
            self._other.append((key, update))
        bulk, other = self._bulk, self._other
        while self._bulk_bytes > self.max_bulk or len(bulk) + len(other) > self.max_items:
            self._drop_one()

    def push_chunk(self, raw: dict[str, Any]) -> None:
        """`push` of a ``terminal_output_chunk`` given as its wire dict, of the exact hot shape
        (``_hotpath.is_hot_message``, so its model validates): the model is made only if the
        update is read (`popleft`, `snapshot`), never for one dropped unread."""
        weight = len(raw["data"])
        if not weight:
            self.push(_validate_chunk(raw))  # not bulk: kept as any other update
            return
        key = self._arrived
        self._arrived = key + 1
        bulk = self._bulk
        bulk.append((key, raw, weight))
        self._bulk_bytes += weight
        if self._bulk_bytes > self._slack_bulk or len(bulk) > self._slack_items:
            self._settle()

    def push_lazy(self, make: functools.partial[Any] | tuple[Any, ...], weight: int = 0) -> None:
        """`push` of an update given as what makes its model (called when the update is read:
        `popleft`, `snapshot`): a partial, or a tuple ``(function, *arguments)``; ``weight``:
        its bulk weight (the length of its base64)."""
        bulk = self._bulk
        other = self._other
        if weight:
            key = self._arrived
            self._arrived = key + 1
            if not bulk and (len(other) >= self.max_items or weight > self.max_bulk):
                # The oldest bulk update over the limits would be this one: it goes at once
                # (a v1 flood, whose every line pushes a tool call update and output, leaves
                # no bulk update in a full buffer: each output goes as it comes).
                self._dropped += 1
                return
            bulk.append((key, make, weight))
            bulk_bytes = self._bulk_bytes = self._bulk_bytes + weight
            if bulk_bytes > self._slack_bulk or len(bulk) > self._slack_items:
                self._settle()
            return
        if self._bulk_bytes > self.max_bulk or len(bulk) + len(other) > self.max_items:
            self._settle()  # (what the bulk updates pushed since left over the limits)
            bulk = self._bulk
        key = self._arrived
        self._arrived = key + 1
        other.append((key, make))
        if len(bulk) + len(other) > self.max_items:  # (within the limits before: drop one)
            if bulk:
                self._bulk_bytes -= bulk.popleft()[2]
            else:
                other.popleft()
            self._dropped += 1

    def push_lazy_pair(self, first: tuple[Any, ...], second: tuple[Any, ...], weight: int) -> None:
        """``push_lazy(first)`` then ``push_lazy(second, weight)``, in one call (a v1 line of
        terminal output stands for two updates: its tool call update, then its output)."""
        other = self._other
        if self._bulk or not weight or len(other) < self.max_items:
            self.push_lazy(first)
            self.push_lazy(second, weight)
            return
        # Full, without a bulk update (what a v1 flood of output leaves: see `push_lazy`):
        # ``first`` pushes out the oldest update, and ``second`` goes at once.
        key = self._arrived
        self._arrived = key + 2
        other.append((key, first))
        other.popleft()
        self._dropped += 2

    def push_lazy_pairs(
        self,
        firsts: list[tuple[Any, ...]],
        seconds: Iterable[tuple[Any, ...]],
        weights: list[int],
    ) -> None:
        """`push_lazy_pair` of each first, second and weight in turn (a run of v1 terminal
        output lines); ``seconds`` is read only when needed: into a full buffer with no bulk
        update, every first pushes out the oldest update and every second goes at once."""
        other = self._other
        count = len(firsts)
        if not self._bulk and len(other) >= self.max_items and all(weights):
            key = self._arrived
            self._arrived = key + 2 * count
            other.extend(zip(range(key, key + 2 * count, 2), firsts, strict=True))
            popleft = other.popleft
            for _ in repeat(None, count):
                popleft()
            self._dropped += 2 * count
            return
        for first, second, weight in zip(firsts, seconds, weights, strict=True):
            self.push_lazy_pair(first, second, weight)

    def _settle(self) -> None:
        """Drop what `push` would have dropped by now, oldest bulk first, in one go.

        Only `push_chunk` (and `push_lazy` of a bulk update) leaves the buffer over its
        limits, and only with bulk updates pushed since it was last within them: dropping
        the oldest bulk updates until it is within them again drops what dropping after each
        push would have, in order (each limit only grows as updates come, so what one push
        dropped the next would too; no other update goes as long as a bulk one is left, and
        the others were within the limit
        before). Counted with C loops: the running sum of the weights, a bisection, a slice.
        """
        bulk = self._bulk
        excess_bytes = self._bulk_bytes - self.max_bulk
        excess_items = len(bulk) + len(self._other) - self.max_items
        if excess_bytes <= 0 and excess_items <= 0:
            return
        if excess_bytes <= 0 and excess_items <= min(8, len(bulk)):  # a flood's usual step
            for _ in range(excess_items):
                self._bulk_bytes -= bulk.popleft()[2]
            self._dropped += excess_items
            return
        drop = max(excess_items, 0)
        if excess_bytes > 0:
            sums = list(accumulate(map(itemgetter(2), bulk)))  # its last is _bulk_bytes
            drop = max(drop, bisect_left(sums, excess_bytes) + 1)
        drop = min(drop, len(bulk))
        if drop:
            if excess_bytes <= 0:
                sums = list(accumulate(map(itemgetter(2), islice(bulk, drop))))
            self._bulk_bytes -= sums[drop - 1]
            self._dropped += drop
            if 4 * drop < len(bulk):
                _consume(map(call, repeat(bulk.popleft, drop)))  # (popleft, drop times, in C)
            else:
                self._bulk = bulk = deque(islice(bulk, drop, None))
        while len(bulk) + len(self._other) > self.max_items:  # (no bulk update is left)
            self._drop_one()

    def _drop_one(self) -> None:
        if self._bulk:
            self._bulk_bytes -= self._bulk.popleft()[2]
        else:
            self._other.popleft()
        self._dropped += 1

    def popleft(self) -> tuple[bool, Any]:
        """``(True, update)`` for the oldest update held, ``(False, None)`` when empty."""
        self._settle()
        bulk, other = self._bulk, self._other
        if bulk and (not other or bulk[0][0] < other[0][0]):
            _, update, weight = bulk.popleft()
            self._bulk_bytes -= weight
            return True, _model(update)
        if other:
            return True, _model(other.popleft()[1])
        return False, None

    def snapshot(self) -> list[Any]:
        """The updates held, oldest first (references, not copies)."""
        self._settle()
        bulk = self._bulk
        if any(type(entry[1]) in _LAZY for entry in bulk):  # models from now on, made once
            self._bulk = bulk = deque((key, _model(update), weight) for key, update, weight in bulk)
        if any(type(entry[1]) in _LAZY for entry in self._other):
            self._other = deque((key, _model(update)) for key, update in self._other)
        # arrival numbers are unique: the merge never compares two updates
        return [entry[1] for entry in heapq.merge(bulk, self._other)]


class _Source(Protocol):
    """What a stream reads from (a ``Turn``)."""

    @property
    def done(self) -> bool: ...

    @property
    def _changed(self) -> anyio.Event: ...


class UpdateStream:
    """An async iterator over one turn's updates (what ``Turn.updates()`` returns).

    It starts with the turn's replay (what the turn still keeps of the updates that arrived
    before it was created), then yields every later update, in order, and ends when the turn
    ends. Updates wait in the stream's own :class:`UpdateBuffer` until they are consumed; a
    consumer that falls more than ``ITERATOR_LIMIT`` updates or ``ITERATOR_BULK_BYTES`` of
    terminal output behind loses the oldest (bulk first). ``dropped`` counts what this stream
    did not yield: left out of the replay, or dropped from its queue. The turn refers to its
    streams weakly, so a stream nobody holds any more (a loop that broke) stops filling.
    """

    def __init__(self, source: _Source, replay: UpdateBuffer) -> None:
        self._source = source
        self._queue = UpdateBuffer(ITERATOR_LIMIT, ITERATOR_BULK_BYTES)
        for update in replay.snapshot():
            self._queue.push(update)
        self._skipped = replay.dropped
        self._closed = False

    @property
    def dropped(self) -> int:
        return self._skipped + self._queue.dropped

    def _put(self, update: p.SessionUpdate) -> None:
        if not self._closed:
            self._queue.push(update)

    def __aiter__(self) -> UpdateStream:
        return self

    async def __anext__(self) -> p.SessionUpdate:
        while True:
            found, update = self._queue.popleft()
            if found:
                result: p.SessionUpdate = update
                return result
            if self._closed or self._source.done:
                raise StopAsyncIteration
            await self._source._changed.wait()

    async def aclose(self) -> None:
        """Stop: drop what is queued; the iteration ends."""
        self._closed = True
        self._queue = UpdateBuffer(1, 0)
