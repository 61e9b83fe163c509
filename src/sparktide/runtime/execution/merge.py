"""Merging position-ordered runs: a stage's input in position order, with bounded memory.

Every producer of a stage's input emits its entries in position order (a split's chain, an
upstream subtask). A stage subtask needs their union in ``(position, channel)`` order
(:mod:`sparktide.runtime.execution.protocol`). On Spark the runs reach a subtask in **chunks**,
each in position order, the chunks sorted by their first position (Spark sorts the rows, not the
entries). :class:`ChunkMerge` takes such chunks one at a time
(:class:`~sparktide.runtime.execution.protocol.EntryChunk`: their entries by columns) and
hands back, in order and as chunks, every entry no later chunk can precede (those at a
position below the first position of the chunk just added); it holds the rest, at most
``budget`` entries, plus, when more runs than that overlap, the tail of one chunk per run. Runs
that follow one another are concatenated; where runs overlap, what is ready is ordered by one
vectorized sort (numpy's ``lexsort`` over the padded position matrices and the channels:
:func:`sort_chunks`), not a tuple comparison per entry. :func:`merge_runs` merges whole runs
(the local runtime's buffers): no sort of what is already ordered.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from heapq import merge
from itertools import chain, pairwise
from operator import itemgetter
from typing import TYPE_CHECKING

from sparktide.runtime.execution.position_columns import PaddedPositions
from sparktide.runtime.execution.protocol import Entry, EntryChunk, Position

if TYPE_CHECKING:
    import numpy as np

__all__ = ["DEFAULT_BUDGET", "ChunkMerge", "merge_runs", "sort_chunks"]

DEFAULT_BUDGET = 65536
"""Entries a task holds before it processes or ships what it can (``ExecutionConfig.
set_task_buffer``)."""

_order = itemgetter(0, 1)  # (position, channel): a stage's input order
_position = itemgetter(0)


def merge_runs(runs: Sequence[list[Entry]]) -> list[Entry]:
    """The entries of ``runs`` (each in ``(position, channel)`` order) in that order: runs that
    follow one another are concatenated, overlapping ones merged.

    >>> merge_runs([[((1,), 0)], [((0,), 0), ((2,), 0)]])
    [((0,), 0), ((1,), 0), ((2,), 0)]
    >>> merge_runs([[((0,), 0)], [((1,), 0)]])
    [((0,), 0), ((1,), 0)]
    """
    runs = [run for run in runs if run]
    if len(runs) <= 1:
        return runs[0] if runs else []
    runs.sort(key=lambda run: _order(run[0]))
    if all(_order(a[-1]) <= _order(b[0]) for a, b in pairwise(runs)):
        out = runs[0]
        for run in runs[1:]:
            out.extend(run)
        return out
    return list(merge(*runs, key=_order))


def _input_order(matrix: np.ndarray, channels: np.ndarray) -> np.ndarray:
    """The row indexes of ``matrix`` (padded positions) and ``channels`` in ``(position,
    channel)`` order."""
    import numpy as np

    return np.lexsort((channels, *(matrix[:, i] for i in range(matrix.shape[1] - 1, -1, -1))))


def _gather(
    columns: Sequence[int | Sequence[object]],
    sizes: Sequence[int],
    pick: Callable[[Sequence[object]], Sequence[object]],
) -> int | Sequence[object]:
    """One column of several chunks (each one int, or a value per entry), concatenated and
    taken in the order ``pick`` takes; one int when every chunk has that int."""
    first = columns[0]
    if type(first) is int and all(c == first for c in columns):
        return first
    joined: list[object] = []
    for column, n in zip(columns, sizes, strict=True):
        joined.extend([column] * n if type(column) is int else column)  # type: ignore[arg-type]
    return pick(joined)


def sort_chunks(chunks: Sequence[EntryChunk]) -> EntryChunk:
    """The entries of ``chunks`` in ``(position, channel)`` order, by one vectorized sort of
    their padded position matrices and channels (numpy's ``lexsort``), as one chunk whose
    columns are taken in that order (no tuple per entry).

    >>> from sparktide.runtime.execution.protocol import pack_entries, unpack_chunk
    >>> def chunk(channel, *positions):
    ...     return unpack_chunk(pack_entries([(p, channel, 1, p, None, None) for p in positions]))
    >>> [e[:2] for e in sort_chunks([chunk(1, (0, 1), (0, 1, 0), (2,)), chunk(0, (0, 1), (1,))])
    ...     .columns()]
    [((0, 1), 0), ((0, 1), 1), ((0, 1, 0), 1), ((1,), 0), ((2,), 1)]
    """
    import numpy as np

    width = max(c.positions.width for c in chunks)
    matrix = np.concatenate([c.positions.matrix(width) for c in chunks])
    channels = np.concatenate([c.channel_array() for c in chunks])
    order = _input_order(matrix, channels)
    indexes = order.tolist()
    pick: Callable[[Sequence[object]], Sequence[object]]
    if len(indexes) == 1:
        only = indexes[0]
        pick = lambda column: (column[only],)  # noqa: E731
    else:
        pick = itemgetter(*indexes)
    sizes = [len(c) for c in chunks]
    return EntryChunk(
        pick(list(chain.from_iterable(c.tags for c in chunks))),
        PaddedPositions(matrix[order]),
        channels[order].tolist(),
        _gather([c.inputs for c in chunks], sizes, pick),  # type: ignore[arg-type]
        pick(list(chain.from_iterable(c.elements for c in chunks))),
        pick(list(chain.from_iterable(c.keys for c in chunks))),
        _gather([c.groups for c in chunks], sizes, pick),  # type: ignore[arg-type]
    )


class ChunkMerge:
    """Chunks in (:class:`~sparktide.runtime.execution.protocol.EntryChunk`, each in order,
    sorted by their first position), the entries no later chunk can precede out, in
    ``(position, channel)`` order, as chunks to process one after another: ``add(chunk)``
    holds the chunk; once the merge holds ``budget`` entries it returns every entry at a
    position below the chunk's first. :meth:`drain` returns the rest at the end of the input.
    The chunks of one producer follow one another (a run: its chunks are handed out as they
    are); where runs overlap, what is ready is ordered by one vectorized sort
    (:func:`sort_chunks`).

    >>> from sparktide.runtime.execution.protocol import pack_entries, unpack_chunk
    >>> def chunk(channel, *positions):
    ...     entries = [(p, channel, 1, f"{p[1]}/{channel}", None, None) for p in positions]
    ...     return unpack_chunk(pack_entries(entries))
    >>> def elements(chunks):
    ...     return [e[3] for c in chunks for e in c.columns()]
    >>> merge = ChunkMerge(budget=2)
    >>> merge.add(chunk(0, (0, 1), (0, 3)))
    []
    >>> elements(merge.add(chunk(1, (0, 2), (0, 4))))  # over budget: what precedes (0, 2)
    ['1/0']
    >>> elements(merge.drain())
    ['2/1', '3/0', '4/1']
    """

    def __init__(self, budget: int = DEFAULT_BUDGET) -> None:
        if type(budget) is not int or budget < 1:
            raise ValueError(f"budget must be an int >= 1 (entries), got {budget!r}")
        self.budget = budget
        self._runs: list[list[EntryChunk]] = []  # each in order; together: what is held
        self.held = 0  # entries held
        self.peak = 0  # the most entries held at once

    def add(self, chunk: EntryChunk | None) -> list[EntryChunk]:
        """Hold ``chunk`` (None: an empty one); returns the chunks of entries that are ready,
        in order, once the merge holds ``budget`` entries (else nothing)."""
        if chunk is None or not len(chunk):
            return []
        ready: list[EntryChunk] = []
        head = chunk.first()
        if self.held + len(chunk) > self.budget:
            ready = self._take(head[0])
        for run in self._runs:  # a run it continues (the chunks of one producer, in turn)
            if run[-1].last() <= head:
                run.append(chunk)
                break
        else:
            self._runs.append([chunk])
        self.held += len(chunk)
        self.peak = max(self.peak, self.held)
        return ready

    def drain(self) -> list[EntryChunk]:
        """Everything held, in order (the input has ended)."""
        return self._take(None)

    def _take(self, first: Position | None) -> list[EntryChunk]:
        """Remove and return, in order, every held entry at a position below ``first`` (None:
        every held entry)."""
        heads: list[list[EntryChunk]] = []
        kept: list[list[EntryChunk]] = []
        for run in self._runs:
            head, tail = _cut(run, first)
            if head:
                heads.append(head)
            if tail:
                kept.append(tail)
        self._runs = kept
        self.held = sum(len(c) for run in kept for c in run)
        if len(heads) == 1:  # one run: in order already
            return heads[0]
        return [sort_chunks([c for head in heads for c in head])] if heads else []


def _cut(
    run: list[EntryChunk], first: Position | None
) -> tuple[list[EntryChunk], list[EntryChunk]]:
    """``run``'s chunks split into those of the entries at a position below ``first`` and the
    rest (a chunk that straddles ``first`` is split)."""
    if first is None:
        return run, []
    for i, chunk in enumerate(run):
        if chunk.tags[-1] < first:
            continue
        cut = bisect_left(chunk.tags, first)
        if not cut:
            return run[:i], run[i:]
        before, after = chunk.split(cut)
        return [*run[:i], before], [after, *run[i + 1 :]]
    return run, []
