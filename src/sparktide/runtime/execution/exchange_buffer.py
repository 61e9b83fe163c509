"""What an exchange writes to: per subtask of the receiving stage, an :class:`ExchangeBuffer`.

An exchange buffer is the list of :data:`~sparktide.runtime.execution.protocol.Entry` tuples the
writers append one by one (records of the general path, watermarks and statuses), plus the
records a hash exchange took a chunk at a time in the source stage
(:class:`~sparktide.runtime.execution.wiring.HashChunks`) **by columns**: a
:class:`RecordRun` per split holds the prefix its positions share (``(round, phase, split)``)
and, per record, its ``seq``, value, timestamp, key and key group, with no tuple and no
``StreamRecord`` per record. The watermarks and statuses between two chunks stay entries, so
they break the runs where they broke them before.

A runner takes the buffer's content in the stage's input order: the local runtime as entries
(:meth:`ExchangeBuffer.take`: each run's entries made once, then one sort of what is almost in
order), the Spark runner by packed chunks (:meth:`ExchangeBuffer.packed_runs`, each run cut into
chunks packed straight from its columns by
:func:`~sparktide.runtime.execution.protocol.pack_run`, the bytes the entries' chunk has).

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

from collections.abc import Callable, Iterator, Mapping, Sequence
from itertools import repeat
from typing import TYPE_CHECKING

from sparktide.runtime.elements import StreamRecord
from sparktide.runtime.execution.protocol import Entry, Position, pack_run

if TYPE_CHECKING:
    from sparktide.runtime.execution.arrow_values import ValueCodec

__all__ = ["ExchangeBuffer", "RecordRun"]


class RecordRun:
    """Records of one split sent through a hash exchange, by columns, in position order:
    record ``i`` is at ``(*prefix, seqs[i], 0)`` on ``channel``, for input ``index`` of the
    receiving stage (the entry ``(position, channel, index, StreamRecord(values[i],
    stamps[i]), keys[i], groups[i])``)."""

    __slots__ = (
        "channel",
        "groups",
        "index",
        "keys",
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
    ) -> None:
        """Append records (their ``seqs`` at or after the run's last)."""
        self.seqs.extend(seqs)
        self.values.extend(values)
        self.stamps.extend(stamps)
        self.keys.extend(keys)
        self.groups.extend(groups)

    def entries(self) -> list[Entry]:
        """The run's records as entries (what writing them one by one appends)."""
        r, phase, split = self.prefix
        n = len(self.seqs)
        return list(
            zip(
                [(r, phase, split, seq, 0) for seq in self.seqs],
                repeat(self.channel, n),
                repeat(self.index, n),
                map(StreamRecord, self.values, self.stamps),
                self.keys,
                self.groups,
                strict=False,
            )
        )

    def packed(
        self, size: int, codecs: Mapping[int, ValueCodec | None] | None
    ) -> Iterator[tuple[Position, bytes]]:
        """The run in chunks of at most ``size`` records: each chunk's first position and its
        bytes (:func:`~sparktide.runtime.execution.protocol.pack_run`)."""
        r, phase, split = self.prefix
        codec = None if codecs is None else codecs.get(self.index)
        for i in range(0, len(self.seqs), size):
            j = i + size
            yield (
                (r, phase, split, self.seqs[i], 0),
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
            entries.extend(run.entries())
        self.runs = []
        entries.sort(key=key)  # type: ignore[arg-type]  # the key orders entries
        return entries

    def packed_runs(
        self, size: int, codecs: Mapping[int, ValueCodec | None] | None
    ) -> Iterator[tuple[Position, bytes]]:
        """The runs held, packed in chunks of at most ``size`` records
        (:meth:`RecordRun.packed`), each with its first position; the entries stay, the buffer
        holds no run afterwards."""
        runs, self.runs = self.runs, []
        for run in runs:
            yield from run.packed(size, codecs)
