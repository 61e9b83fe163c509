"""What an exchange writes to: per subtask of the receiving stage, an :class:`ExchangeBuffer`.

An exchange buffer is the list of :data:`~sparktide.runtime.execution.protocol.Entry` tuples the
writers append one by one (records of the general path, watermarks and statuses), plus the
records a hash exchange took a chunk at a time in the source stage
(:class:`~sparktide.runtime.execution.wiring.HashChunks`) **by columns**: a
:class:`RecordRun` per split holds the prefix its positions share (``(round, phase, split)``)
and, per record, its ``seq``, value, timestamp, key and key group (and its number among its
source record's outputs, once a chunk brings several outputs of one record), with no tuple and no
``StreamRecord`` per record. The watermarks and statuses between two chunks stay entries, so
they break the runs where they broke them before.

A runner takes the buffer's content in the stage's input order: the local runtime as chunks
(:meth:`ExchangeBuffer.take_chunks`: the runs by columns, the entries between them as sorted
lists, which a stage subtask iterates one after another), the Spark runner by packed chunks
(:meth:`ExchangeBuffer.packed_runs`, each run cut into chunks packed straight from its columns
by :func:`~sparktide.runtime.execution.protocol.pack_run`, the bytes the entries' chunk has).

>>> from sparktide.runtime.elements import Watermark
>>> buffer = ExchangeBuffer()
>>> run = RecordRun((0, 0, 1), channel=0, index=1)
>>> run.add([1, 2], ["a", "b"], [5, 6], ["k", "k"], [7, 7])
>>> buffer.add_run(run)
>>> buffer.append(((0, 0, 1, 2, 1), 0, 1, Watermark(6), None, None))
>>> buffer.held()
3
>>> [(p, e) for p, _, _, e, _, _ in buffer.take(lambda e: (e[0], e[1]))][1:]
[((0, 0, 1, 2, 0), StreamRecord('b', 6)), ((0, 0, 1, 2, 1), Watermark(6))]
>>> buffer.held()
0
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator, Mapping, Sequence
from itertools import repeat
from operator import itemgetter
from typing import TYPE_CHECKING

from sparktide.runtime.elements import StreamRecord
from sparktide.runtime.execution.protocol import (
    Entry,
    InputChunk,
    Position,
    pack_entries,
    pack_run,
)

if TYPE_CHECKING:
    from sparktide.runtime.execution.arrow_values import ValueCodec

__all__ = ["EntryList", "ExchangeBuffer", "RecordRun"]

_order = itemgetter(0, 1)  # (position, channel): a stage's input order


class RecordRun:
    """Records of one split sent through a hash exchange, by columns, in position order:
    record ``i`` is at ``(*prefix, seqs[i], 0)`` on ``channel``, for input ``index`` of the
    receiving stage (the entry ``(position, channel, index, StreamRecord(values[i],
    stamps[i]), keys[i], groups[i])``), with ``ns[i]`` appended when it is not 0 (the further
    outputs of one source record, e.g. a flat_map's: ``ns`` is ``None`` while the run holds
    none)."""

    __slots__ = (
        "channel",
        "groups",
        "index",
        "keys",
        "ns",
        "prefix",
        "seqs",
        "stamps",
        "values",
        "written_after",
    )

    def __init__(
        self, prefix: tuple[int, int, int], channel: int, index: int, written_after: int = 0
    ) -> None:
        self.prefix = prefix
        self.channel = channel
        self.index = index
        # how many entries its buffer held when the run began: one appended since breaks it
        self.written_after = written_after
        self.seqs: list[int] = []
        self.values: list[object] = []
        self.stamps: list[int | None] = []
        self.keys: list[object] = []
        self.groups: list[int] = []
        self.ns: list[int] | None = None

    def __len__(self) -> int:
        return len(self.seqs)

    def continues(
        self, prefix: tuple[int, int, int], channel: int, index: int, written: int
    ) -> bool:
        """Whether records at ``prefix`` on ``channel`` for input ``index`` extend this run,
        its buffer holding ``written`` entries (an entry appended since the run began, a
        watermark or a status, ends it)."""
        return (
            self.written_after == written
            and self.prefix == prefix
            and self.channel == channel
            and self.index == index
        )

    def add(
        self,
        seqs: Sequence[int],
        values: Sequence[object],
        stamps: Sequence[int | None],
        keys: Sequence[object],
        groups: Sequence[int],
        ns: Sequence[int] | None = None,
    ) -> None:
        """Append records (their ``seqs`` at or after the run's last; ``ns``: their numbers
        among their source records' outputs, ``None`` when all are 0)."""
        if ns is not None:
            if self.ns is None:
                self.ns = [0] * len(self.seqs)
            self.ns.extend(ns)
        elif self.ns is not None:
            self.ns.extend(repeat(0, len(seqs)))
        self.seqs.extend(seqs)
        self.values.extend(values)
        self.stamps.extend(stamps)
        self.keys.extend(keys)
        self.groups.extend(groups)

    def columns(self) -> Iterator[Entry]:
        """The run's entries in order, from its columns (a position tuple and a record made per
        record; ``zip`` reuses its tuple when the loop unpacks it)."""
        r, phase, split = self.prefix
        n = len(self.seqs)
        ns = self.ns
        return zip(
            [(r, phase, split, seq, 0) for seq in self.seqs]
            if ns is None
            else [
                (r, phase, split, seq, 0, k) if k else (r, phase, split, seq, 0)
                for seq, k in zip(self.seqs, ns, strict=True)
            ],
            repeat(self.channel, n),
            repeat(self.index, n),
            map(StreamRecord, self.values, self.stamps),
            self.keys,
            self.groups,
            strict=False,
        )

    @property
    def entries(self) -> list[Entry]:
        """The run's records as entries (what writing them one by one appends)."""
        return list(self.columns())

    def position(self, i: int) -> Position:
        """The position of record ``i``."""
        r, phase, split = self.prefix
        k = 0 if self.ns is None else self.ns[i]
        return (r, phase, split, self.seqs[i], 0, k) if k else (r, phase, split, self.seqs[i], 0)

    def first(self) -> tuple[Position, int]:
        """``(position, channel)`` of the run's first record (the run is not empty)."""
        return self.position(0), self.channel

    def last(self) -> tuple[Position, int]:
        """``(position, channel)`` of the run's last record (the run is not empty)."""
        return self.position(-1), self.channel

    def packed(
        self, size: int, codecs: Mapping[int, ValueCodec | None] | None
    ) -> Iterator[tuple[Position, bytes]]:
        """The run in chunks of at most ``size`` records: each chunk's first position and its
        bytes (:func:`~sparktide.runtime.execution.protocol.pack_run`; a run with numbered
        outputs as its entries, :func:`~sparktide.runtime.execution.protocol.pack_entries`)."""
        if self.ns is not None:
            entries = self.entries
            for i in range(0, len(entries), size):
                yield entries[i][0], pack_entries(entries[i : i + size], codecs)
            return
        codec = None if codecs is None else codecs.get(self.index)
        for i in range(0, len(self.seqs), size):
            j = i + size
            yield (
                self.position(i),
                pack_run(
                    self.prefix,
                    self.channel,
                    self.index,
                    self.seqs[i:j],
                    self.values[i:j],
                    self.stamps[i:j],
                    self.keys[i:j],
                    self.groups[i:j],
                    codec,
                ),
            )


class EntryList(list[Entry]):
    """Entries in order, as a chunk a stage subtask takes
    (:class:`~sparktide.runtime.execution.protocol.InputChunk`)."""

    __slots__ = ()

    def columns(self) -> Iterator[Entry]:
        """The entries in order."""
        return iter(self)

    @property
    def entries(self) -> list[Entry]:
        """The entries."""
        return self

    def first(self) -> tuple[Position, int]:
        """``(position, channel)`` of the first entry."""
        return self[0][0], self[0][1]

    def last(self) -> tuple[Position, int]:
        """``(position, channel)`` of the last entry."""
        return self[-1][0], self[-1][1]


class ExchangeBuffer(list[Entry]):
    """The input a subtask of a stage receives through an exchange: the entries appended one by
    one (it is their list: ``append`` costs what a list's does) and the :class:`RecordRun`\\ s
    added by columns."""

    __slots__ = ("runs",)

    def __init__(self) -> None:
        super().__init__()
        self.runs: list[RecordRun] = []

    def add_run(self, run: RecordRun) -> None:
        """Hold ``run`` (records by columns)."""
        self.runs.append(run)

    def run_for(self, prefix: tuple[int, int, int], channel: int, index: int) -> RecordRun:
        """The run records at ``prefix`` on ``channel`` for input ``index`` extend: the last
        run held, when it has them and no entry was appended since it began (the watermarks
        and statuses between records break the runs, so that the runs and the entries between
        them follow one another in position order), else a new one (held)."""
        runs, written = self.runs, len(self)
        if runs and runs[-1].continues(prefix, channel, index, written):
            return runs[-1]
        run = RecordRun(prefix, channel, index, written)
        runs.append(run)
        return run

    def held(self) -> int:
        """How many entries the buffer holds, runs included."""
        return len(self) + sum(map(len, self.runs))

    def take(self, key: Callable[[Entry], object]) -> list[Entry]:
        """Everything held, as entries sorted by ``key`` (a stage's input order); the buffer is
        left empty."""
        entries = list(self)
        self.clear()
        for run in self.runs:
            entries.extend(run.columns())
        self.runs = []
        entries.sort(key=key)  # type: ignore[arg-type]  # the key orders entries
        return entries

    def take_chunks(self, key: Callable[[Entry], object]) -> list[InputChunk]:
        """Everything held, in a stage's input order (``key`` sorts the entries: by position
        and channel, or by position where one channel feeds the stage), as chunks to process
        one after another: the runs by columns, the entries between them as lists; the buffer
        is left empty. When an entry falls inside a run's positions, or two runs overlap (no
        split's writer makes either), everything goes as entries, sorted (:meth:`take`)."""
        runs = sorted(self.runs, key=RecordRun.first)
        if not runs:
            only = EntryList(self)
            self.clear()
            only.sort(key=key)  # type: ignore[arg-type]  # the key orders entries
            return [only] if only else []
        entries = sorted(self, key=key)  # type: ignore[arg-type]
        out: list[InputChunk] = []
        i, before = 0, None
        for run in runs:
            head, tail = run.first(), run.last()
            j = bisect_left(entries, head, lo=i, key=_order)
            if (before is not None and before > head) or (
                j < len(entries) and _order(entries[j]) <= tail
            ):
                return [EntryList(self.take(key))]
            if j > i:
                out.append(EntryList(entries[i:j]))
            out.append(run)
            i, before = j, tail
        if i < len(entries):
            out.append(EntryList(entries[i:]))
        self.clear()
        self.runs = []
        return out

    def packed_runs(
        self, size: int, codecs: Mapping[int, ValueCodec | None] | None
    ) -> Iterator[tuple[Position, bytes]]:
        """The runs held, packed in chunks of at most ``size`` records
        (:meth:`RecordRun.packed`), each with its first position; the entries stay, the buffer
        holds no run afterwards."""
        runs, self.runs = self.runs, []
        for run in runs:
            yield from run.packed(size, codecs)
