"""Merging position-ordered runs: a stage's input in position order, with bounded memory.

Every producer of a stage's input emits its entries in position order (a split's chain, an
upstream subtask). A stage subtask needs their union in ``(position, channel)`` order
(:mod:`sparktide.runtime.execution.protocol`). On Spark the runs reach a subtask in **chunks**,
each in position order, the chunks sorted by their first position (Spark sorts the rows, not the
entries). :class:`RunMerge` takes such chunks one at a time and hands back, in order, every
entry no later chunk can precede (those at a position below the first position of the chunk
just added); it holds the rest, at most ``budget`` entries, plus, when more runs than that
overlap, the tail of one chunk per run. :func:`merge_runs` merges whole runs (the local
runtime's buffers): no sort of what is already ordered.

>>> merge = RunMerge(budget=2)
>>> a = [((0, 1), 0, 0, "a1", None, None), ((0, 3), 0, 0, "a3", None, None)]
>>> b = [((0, 2), 1, 0, "b2", None, None), ((0, 4), 1, 0, "b4", None, None)]
>>> [e[3] for e in merge.add((0, 1), a)]
[]
>>> [e[3] for e in merge.add((0, 2), b)]  # over budget: what precedes (0, 2) is ready
['a1']
>>> [e[3] for e in merge.drain()]
['b2', 'a3', 'b4']
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from heapq import merge
from itertools import pairwise
from operator import itemgetter

from sparktide.runtime.execution.protocol import Entry, Position

__all__ = ["DEFAULT_BUDGET", "RunMerge", "merge_runs"]

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


class RunMerge:
    """Chunks of position-ordered runs in, the entries no later chunk can precede out.

    ``add(first, chunk)`` takes the next chunk (chunks come sorted by ``first``, the position of
    their first entry); once the merge holds ``budget`` entries it returns, merged, every entry
    at a position below ``first``. :meth:`drain` returns the rest at the end of the input.
    """

    def __init__(self, budget: int = DEFAULT_BUDGET) -> None:
        if type(budget) is not int or budget < 1:
            raise ValueError(f"budget must be an int >= 1 (entries), got {budget!r}")
        self.budget = budget
        self._runs: list[list[Entry]] = []  # each in order; together: what is held
        self.held = 0  # entries held
        self.peak = 0  # the most entries held at once

    def add(self, first: Position, chunk: list[Entry]) -> list[Entry]:
        """Hold ``chunk`` (in order; its first entry is at ``first``); returns the entries that
        are ready, in order, once the merge holds ``budget`` entries (else nothing)."""
        ready: list[Entry] = []
        if self.held + len(chunk) > self.budget:
            ready = self._cut(first)
        if chunk:
            self._hold(chunk)
        return ready

    def drain(self) -> list[Entry]:
        """Everything held, in order (the input has ended)."""
        out = merge_runs(self._runs)
        self._runs = []
        self.held = 0
        return out

    def _hold(self, chunk: list[Entry]) -> None:
        head = _order(chunk[0])
        for run in self._runs:  # a run it continues (the chunks of one producer, in turn)
            if _order(run[-1]) <= head:
                run.extend(chunk)
                break
        else:
            self._runs.append(list(chunk))
        self.held += len(chunk)
        if self.held > self.peak:
            self.peak = self.held

    def _cut(self, first: Position) -> list[Entry]:
        """Remove and return, in order, every held entry at a position below ``first``."""
        heads: list[list[Entry]] = []
        kept: list[list[Entry]] = []
        for run in self._runs:
            cut = bisect_left(run, first, key=_position)
            if cut:
                heads.append(run[:cut] if cut < len(run) else run)
                self.held -= cut
            if cut < len(run):
                kept.append(run[cut:] if cut else run)
        self._runs = kept
        return merge_runs(heads)

    @staticmethod
    def of_chunks(chunks: Iterable[tuple[Position, list[Entry]]], budget: int) -> list[Entry]:
        """Every entry of ``chunks`` in order (what a subtask processes, in one list).

        >>> RunMerge.of_chunks([((0,), [((0,), 0), ((2,), 0)]), ((1,), [((1,), 0)])], 1)
        [((0,), 0), ((1,), 0), ((2,), 0)]
        """
        merger = RunMerge(budget)
        out: list[Entry] = []
        for first, chunk in chunks:
            out.extend(merger.add(first, chunk))
        out.extend(merger.drain())
        return out
