"""How operator instances are connected: outputs, chain inputs, exchanges, positions.

Shared by every runner. An exchange writer appends entries ``(position, channel, input, element,
key, key_group)`` to per-subtask buffers; a runner moves the buffers to the next stage (in
memory, or through a Spark shuffle) and the stage processes them in position order.

Positions (GUIDE §4): a source element has ``(round, phase, split, seq, sub, n)``; an element
emitted while a stage processes an input at position ``t`` gets ``t + (phase, key_group, n)``
(phase 0: from a record, 1: from timers fired by a watermark, 2: the forwarded watermark, 3:
processing time; ``n`` numbers the outputs of one input).
"""

from __future__ import annotations

from typing import Any

from sparktide.runtime.elements import StreamRecord, Watermark, WatermarkStatus
from sparktide.runtime.graph import Edge
from sparktide.runtime.keygroups import assign_to_key_group

__all__ = [
    "NO_KEY",
    "ChainInput",
    "Cursor",
    "ExchangeWriter",
    "NodeOutput",
    "SourceTagger",
    "ValveOutput",
]


class _NoKey:
    """Stands in for a backend in non-keyed stages: outputs are tagged with key group 0."""

    current_key_group = 0


NO_KEY = _NoKey()


class Cursor:
    """The position of the element being processed; outputs are tagged from it.

    Whoever sets ``tag`` resets ``n``; each output takes the next ``n``, so several outputs of
    one input (a flat_map) keep their order even when an exchange spreads them over several
    subtasks. Outputs of timers (``phase`` 1 or 2) are numbered per key group instead, so their
    positions do not depend on which other key groups share the subtask: the same at any
    parallelism. Outputs of a record (phase 0) carry the record's input ``channel``: when two
    operators emitted records at equal positions (their outputs meet in a union), the channel
    keeps them apart, in the order of the inputs (the upstream operators' channels are numbered
    in that order, at any parallelism).
    """

    __slots__ = ("backend", "channel", "kg_n", "kg_tag", "n", "phase", "tag")

    def __init__(self) -> None:
        self.tag: tuple = ()
        self.phase = 0
        self.n = 0
        self.backend: Any = None  # None in the source stage, else a backend or NO_KEY
        self.kg_tag: tuple | None = None  # the tag kg_n counts for
        self.kg_n: dict[int, int] = {}
        self.channel = 0  # the input channel of the record being processed

    def out(self) -> tuple:
        backend = self.backend
        if backend is None:
            n = self.n
            self.n = n + 1
            return (*self.tag, n)
        if not self.phase:
            n = self.n
            self.n = n + 1
            return (*self.tag, 0, self.channel, n)
        kg = backend.current_key_group or 0
        counts = self.kg_n
        if self.kg_tag is not self.tag:
            counts.clear()
            self.kg_tag = self.tag
        n = counts.get(kg, 0)
        counts[kg] = n + 1
        return (*self.tag, self.phase, kg, n)

    def watermark_out(self) -> tuple:
        if self.backend is None:
            return (*self.tag, 0)
        return (*self.tag, 2, 0, 0)


class SourceTagger:
    """First output of a split's driver: stamps each element with its source position."""

    __slots__ = ("cursor", "downstream", "phase", "round", "seq", "split")

    def __init__(self, cursor: Cursor, split: int, downstream: Any) -> None:
        self.cursor = cursor
        self.split = split
        self.downstream = downstream
        self.round = 0
        self.phase = 0
        self.seq = 0

    def collect(self, record: StreamRecord) -> None:
        self.seq += 1
        cursor = self.cursor
        cursor.tag = (self.round, self.phase, self.split, self.seq, 0)
        cursor.n = 0
        self.downstream.collect(record)

    def collect_side(self, tag: Any, record: StreamRecord) -> None:
        self.downstream.collect_side(tag, record)

    def mark(self, sub: int = 1) -> None:
        """Position what follows after the last record read (watermarks, statuses)."""
        cursor = self.cursor
        cursor.tag = (self.round, self.phase, self.split, self.seq, sub)
        cursor.n = 0

    def emit_watermark(self, watermark: Watermark) -> None:
        self.mark()
        self.downstream.emit_watermark(watermark)

    def emit_watermark_status(self, status: WatermarkStatus) -> None:
        self.mark()
        self.downstream.emit_watermark_status(status)


def _fan_out(targets: list[Any], record: StreamRecord) -> None:
    """Each target gets a record of its own (an operator may reuse the one it receives, as
    ``map`` does): copies taken before any target runs, the original for the last."""
    value, timestamp = record.value, record.timestamp
    last = len(targets) - 1
    for i, target in enumerate(targets):
        target.collect(record if i == last else StreamRecord(value, timestamp))


class NodeOutput:
    """The output of one operator instance: main targets, side-output targets, coercion."""

    __slots__ = ("_coerce", "_main", "_side", "_where")

    def __init__(self, main: list[Any], side: dict[Any, list[Any]], output_type: Any) -> None:
        self._main = main
        self._side = side
        coercer = getattr(output_type, "coercer", None)
        pickled = type(output_type).__name__.startswith("Pickled")
        self._coerce = coercer() if coercer is not None and not pickled else None
        self._where = "output value"

    @property
    def needed(self) -> bool:
        """False when a single target can take the operator's output directly."""
        return len(self._main) != 1 or bool(self._side) or self._coerce is not None

    def collect(self, record: StreamRecord) -> None:
        if self._coerce is not None:
            record.value = self._coerce(record.value, self._where)
        main = self._main
        if len(main) == 1:
            main[0].collect(record)
            return
        _fan_out(main, record)

    def collect_side(self, tag: Any, record: StreamRecord) -> None:
        targets = self._side.get(tag)
        if not targets:
            return
        _fan_out(targets, record)

    def emit_watermark(self, watermark: Watermark) -> None:
        for target in self._main:
            target.emit_watermark(watermark)
        for targets in self._side.values():
            for target in targets:
                target.emit_watermark(watermark)

    def emit_watermark_status(self, status: WatermarkStatus) -> None:
        for target in self._main:
            target.emit_watermark_status(status)
        for targets in self._side.values():
            for target in targets:
                target.emit_watermark_status(status)


class ChainInput:
    """Feeds a chained operator's input ``index`` (1 or 2)."""

    __slots__ = ("collect", "emit_watermark", "emit_watermark_status")

    def __init__(self, op: Any, index: int) -> None:
        if index == 2:
            self.collect = op.process_element2
            self.emit_watermark = op.process_watermark2
            self.emit_watermark_status = op.process_watermark_status2
        elif hasattr(op, "process_element1"):
            self.collect = op.process_element1
            self.emit_watermark = op.process_watermark1
            self.emit_watermark_status = op.process_watermark_status1
        else:
            self.collect = op.process_element
            self.emit_watermark = op.process_watermark
            self.emit_watermark_status = op.process_watermark_status

    def collect_side(self, tag: Any, record: StreamRecord) -> None:
        """A side output nobody reads."""


class ExchangeWriter:
    """Sends an operator's output across an exchange to the subtasks of a stage."""

    __slots__ = (
        "_buffers",
        "_channel",
        "_cursor",
        "_index",
        "_key_selector",
        "_kg_cache",
        "_maxp",
        "_next",
        "_parallelism",
        "_partitioning",
    )

    def __init__(
        self,
        buffers: list[list[tuple]],
        parallelism: int,
        max_parallelism: int,
        edge: Edge,
        channel: int,
        cursor: Cursor,
    ) -> None:
        self._buffers = buffers
        self._parallelism = parallelism
        self._maxp = max_parallelism
        self._partitioning = edge.partitioning
        self._key_selector = edge.key_selector
        self._index = edge.input_index
        self._channel = channel
        self._cursor = cursor
        self._kg_cache: dict[Any, int] = {}
        self._next = channel % parallelism

    def collect(self, record: StreamRecord) -> None:
        part = self._partitioning
        if part == "hash":
            key = self._key_selector(record.value)  # type: ignore[misc]
            try:
                kg = self._kg_cache[key]
            except KeyError:
                kg = assign_to_key_group(key, self._maxp)
                if len(self._kg_cache) > 65536:
                    self._kg_cache.clear()
                self._kg_cache[key] = kg
            except TypeError:
                kg = assign_to_key_group(key, self._maxp)
            c = self._cursor
            self._buffers[kg * self._parallelism // self._maxp].append(
                (
                    c.tag if c.backend is None else c.out(),
                    self._channel,
                    self._index,
                    record,
                    key,
                    kg,
                )
            )
            return
        if part == "global":
            target = 0
        else:
            target = self._next
            self._next = (target + 1) % self._parallelism
        self._buffers[target].append(
            (self._cursor.out(), self._channel, self._index, record, None, None)
        )

    def collect_side(self, tag: Any, record: StreamRecord) -> None:
        """A side output nobody reads (read side outputs are routed before the exchange)."""

    def emit_watermark(self, watermark: Watermark) -> None:
        entry = (self._cursor.watermark_out(), self._channel, self._index, watermark, None, None)
        for buf in self._buffers:
            buf.append(entry)

    def emit_watermark_status(self, status: WatermarkStatus) -> None:
        entry = (self._cursor.watermark_out(), self._channel, self._index, status, None, None)
        for buf in self._buffers:
            buf.append(entry)


class ValveOutput:
    """Where a valve sends the combined watermark: the stage's entry operator."""

    __slots__ = ("emit_watermark", "emit_watermark_status")

    def __init__(self, target: ChainInput) -> None:
        self.emit_watermark = target.emit_watermark
        self.emit_watermark_status = target.emit_watermark_status
