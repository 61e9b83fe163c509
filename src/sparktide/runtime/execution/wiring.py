"""How operator instances are connected: outputs, chain inputs, exchanges.

Shared by every runner. An exchange writer appends :data:`~.protocol.Entry` tuples to per-subtask
buffers (:class:`~.exchange_buffer.ExchangeBuffer`; a hash exchange fed by a split's chunks adds
their records by columns), positioned by the :class:`~.protocol.Cursor` (the layout of positions is
:mod:`sparktide.runtime.execution.protocol`'s); a runner moves the buffers to the next stage (in
memory, or through a Spark shuffle) and the stage processes them in position order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from sparktide.runtime.elements import StreamRecord, Watermark, WatermarkStatus
from sparktide.runtime.execution.exchange_buffer import ExchangeBuffer
from sparktide.runtime.execution.protocol import Cursor, SourceTagger, output_numbers
from sparktide.runtime.graph import Edge
from sparktide.runtime.keygroups import KeyGroupCache, assign_to_key_group
from sparktide.runtime.null_keys import KeyByGroups, NullKeyError
from sparktide.runtime.operators.co_process import AbstractTwoInputOperator
from sparktide.runtime.operators.simple import rethrown
from sparktide.runtime.output import Output

if TYPE_CHECKING:
    from sparktide.common.typeinfo_base import Coercer
    from sparktide.runtime.operators.base import AbstractStreamOperator

__all__ = [
    "ChainInput",
    "ExchangeTarget",
    "ExchangeWriter",
    "HashChunks",
    "NodeOutput",
    "ValveOutput",
]


def _fan_out(targets: list[Output], record: StreamRecord) -> None:
    """Each target gets a record of its own (an operator may reuse the one it receives, as
    ``map`` does): copies taken before any target runs, the original for the last."""
    value, timestamp = record.value, record.timestamp
    last = len(targets) - 1
    for i, target in enumerate(targets):
        target.collect(record if i == last else StreamRecord(value, timestamp))


class NodeOutput:
    """The output of one operator instance: main targets, side-output targets, coercion."""

    __slots__ = ("_coerce", "_main", "_side", "_where")

    def __init__(
        self, main: list[Output], side: dict[object, list[Output]], output_type: object
    ) -> None:
        self._main = main
        self._side = side
        coercer = getattr(output_type, "coercer", None)
        pickled = type(output_type).__name__.startswith("Pickled")
        self._coerce = coercer() if coercer is not None and not pickled else None
        self._where = "output value"

    def chunk_parts(self) -> tuple[Output, Coercer | None, str] | None:
        """``(target, coerce, where)`` when this output hands everything to one target (no
        fan-out, no side outputs read), coercing with ``coerce(value, where)`` (``None``: as
        it is); else ``None`` (records go one by one)."""
        return None if self._side else self.main_parts()

    def main_parts(self) -> tuple[Output, Coercer | None, str] | None:
        """``(target, coerce, where)`` when the main output goes to one target (no fan-out):
        a producer may hand it ``StreamRecord(coerce(value, where), timestamp)`` itself, as
        :meth:`collect` does (``coerce`` ``None``: the value as it is); else ``None``."""
        if len(self._main) != 1:
            return None
        return self._main[0], self._coerce, self._where

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

    def collect_side(self, tag: object, record: StreamRecord) -> None:
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

    __slots__ = ("collect", "emit_watermark", "emit_watermark_status", "index", "operator")

    collect: Callable[[StreamRecord], None]
    emit_watermark: Callable[[Watermark], None]
    emit_watermark_status: Callable[[WatermarkStatus], None]

    def __init__(self, op: AbstractStreamOperator, index: int) -> None:
        self.operator = op  # the operator fed (and its ``index``: input 1 or 2)
        self.index = index
        if isinstance(op, AbstractTwoInputOperator):
            if index == 2:
                self.collect = op.process_element2
                self.emit_watermark = op.process_watermark2
                self.emit_watermark_status = op.process_watermark_status2
            else:
                self.collect = op.process_element1
                self.emit_watermark = op.process_watermark1
                self.emit_watermark_status = op.process_watermark_status1
        else:
            self.collect = op.process_element
            self.emit_watermark = op.process_watermark
            self.emit_watermark_status = op.process_watermark_status

    def collect_side(self, tag: object, record: StreamRecord) -> None:
        """A side output nobody reads."""


class ExchangeWriter:
    """Sends an operator's output across an exchange to the subtasks of a stage.

    ``collect`` is the partitioning's own method, chosen once (a hash exchange's per record:
    the key, its key group from a :class:`~sparktide.runtime.keygroups.KeyGroupCache`, the
    entry)."""

    __slots__ = (
        "_at",
        "_buffers",
        "_channel",
        "_cursor",
        "_index",
        "_k",
        "_key_selector",
        "_kg_cache",
        "_maxp",
        "_next",
        "_parallelism",
        "_partitioner",
        "collect",
    )

    collect: Callable[[StreamRecord], None]

    def __init__(
        self,
        buffers: list[ExchangeBuffer],
        parallelism: int,
        max_parallelism: int,
        edge: Edge,
        channel: int,
        cursor: Cursor,
    ) -> None:
        self._buffers = buffers
        self._parallelism = parallelism
        self._maxp = max_parallelism
        self._partitioner = edge.partitioner
        self._key_selector = edge.key_selector
        self._index = edge.input_index
        self._channel = channel
        self._cursor = cursor
        self._at: object = None  # the source-stage input whose outputs _k counts
        self._k = 0
        # ~10^5 active keys stay cached; a None key raises NullKeyError (on a miss: no cost)
        self._kg_cache = KeyByGroups(max_parallelism)
        self._next = channel % parallelism
        part = edge.partitioning
        if part == "hash":
            self.collect = self._collect_hash
        elif part == "broadcast":
            self.collect = self._collect_broadcast
        elif part == "global":
            self.collect = self._collect_global
        elif part == "custom":
            self.collect = self._collect_custom
        else:
            self.collect = self._collect_round_robin

    def chunk_writer(self, tagger: SourceTagger) -> HashChunks | None:
        """What takes the chunks of the split ``tagger`` numbers (in the source stage) at once,
        for a hash exchange (``None``: another partitioning, chunks go record by record)."""
        if self.collect != self._collect_hash:
            return None
        return HashChunks(
            ExchangeTarget(
                self._buffers,
                self._parallelism,
                self._maxp,
                self._channel,
                self._index,
                self._key_selector,  # type: ignore[arg-type]
                self._kg_cache,
            ),
            tagger,
        )

    def _collect_hash(self, record: StreamRecord) -> None:
        key = self._key_selector(record.value)  # type: ignore[misc]
        try:
            kg = self._kg_cache[key]
        except TypeError:  # unhashable: the canonical error (or the group of a special key)
            kg = assign_to_key_group(key, self._maxp)
        c = self._cursor
        if c.source_stage:
            # an input's first output into this exchange keeps the input's position, its
            # further ones (a flat_map's) append their number, counted by this writer: the
            # same whether an operator before it emitted them at once or later (map_batches)
            position = c.position
            if position is self._at:
                k = self._k
                self._k = k + 1
                at = (*position, k)
            else:
                self._at, self._k = position, 1
                at = position
        else:
            at = c.out()
        self._buffers[kg * self._parallelism // self._maxp].append(
            (
                at,
                self._channel,
                self._index,
                record,
                key,
                kg,
            )
        )

    def _collect_broadcast(self, record: StreamRecord) -> None:
        """Every subtask, at one position: each gets its own record."""
        at, channel, index = self._cursor.out(), self._channel, self._index
        value, timestamp = record.value, record.timestamp
        for buf in self._buffers:
            buf.append((at, channel, index, StreamRecord(value, timestamp), None, None))

    def _collect_global(self, record: StreamRecord) -> None:
        entry = (self._cursor.out(), self._channel, self._index, record, None, None)
        self._buffers[0].append(entry)

    def _collect_custom(self, record: StreamRecord) -> None:
        target = self._partitioner(record.value, self._parallelism)  # type: ignore[misc]
        self._buffers[target].append(
            (self._cursor.out(), self._channel, self._index, record, None, None)
        )

    def _collect_round_robin(self, record: StreamRecord) -> None:
        target = self._next
        self._next = (target + 1) % self._parallelism
        self._buffers[target].append(
            (self._cursor.out(), self._channel, self._index, record, None, None)
        )

    def collect_side(self, tag: object, record: StreamRecord) -> None:
        """A side output nobody reads (read side outputs are routed before the exchange)."""

    def emit_watermark(self, watermark: Watermark) -> None:
        entry = (self._cursor.watermark_out(), self._channel, self._index, watermark, None, None)
        for buf in self._buffers:
            buf.append(entry)

    def emit_watermark_status(self, status: WatermarkStatus) -> None:
        entry = (self._cursor.watermark_out(), self._channel, self._index, status, None, None)
        for buf in self._buffers:
            buf.append(entry)


@dataclass(frozen=True)
class ExchangeTarget:
    """Where a hash exchange writer appends: the receiving stage's buffers (one per subtask),
    its parallelism and number of key groups, the writer's channel and input index, the key
    selector and the writer's key group cache."""

    buffers: list[ExchangeBuffer]
    parallelism: int
    max_parallelism: int
    channel: int
    index: int
    key_selector: Callable[[object], object]
    kg_cache: KeyGroupCache


class HashChunks:
    """A hash exchange's writer for a chunk of a split's records (see
    :mod:`~sparktide.runtime.execution.chunk_path`): the entries :meth:`ExchangeWriter.collect`
    appends for the chunk's records one by one, with the keys of the chunk taken in one loop,
    their key groups in one comprehension and the records added by columns to the run of the
    split each receiving subtask's buffer holds (:class:`~.exchange_buffer.RecordRun`: no
    entry, record or position tuple per record, no cursor moved per record). The chunk path
    runs in the source stage only, where an entry's position is its source record's
    (``(round, phase, split, seq, 0)``) for the record's first output, with the output's
    number appended for its further ones (:func:`~.protocol.output_numbers`), as
    :meth:`ExchangeWriter.collect` gives them.

    When the key selector (or the key's hash, or the null key check) raises on item ``i``, the
    entries of the items before ``i`` are appended first, the cursor is at item ``i``'s source
    record and the failure names item ``i`` (as when the records come one by one)."""

    __slots__ = ("_buffers", "_channel", "_index", "_maxp", "_owner_of", "_tagger", "_to")

    def __init__(self, to: ExchangeTarget, tagger: SourceTagger) -> None:
        self._to = to
        self._buffers = to.buffers
        self._channel = to.channel
        self._index = to.index
        self._maxp = maxp = to.max_parallelism
        parallelism = to.parallelism
        self._owner_of = [kg * parallelism // maxp for kg in range(maxp)]
        self._tagger = tagger

    def collect_chunk(
        self, seqs: Sequence[int], values: list[object], timestamps: list[int | None]
    ) -> None:
        selector = self._to.key_selector
        keys: list[object] = []
        key = keys.append
        failure: Exception | None = None
        try:
            for value in values:
                key(selector(value))
        except Exception as exc:
            failure = exc
        groups, failed = self._key_groups(keys)
        if failed is not None:
            failure = failed
        n = len(groups)
        self._append(seqs, values, timestamps, keys, groups)
        tagger = self._tagger
        if failure is None:
            if n:
                tagger.at_seq(seqs[-1])
            return
        record = StreamRecord(values[n], timestamps[n])  # noqa: F841  (failures name it)
        tagger.at_seq(seqs[n])
        raise rethrown(failure)

    def _key_groups(self, keys: list[object]) -> tuple[list[int], Exception | None]:
        """The key groups of ``keys`` up to the first that fails, and its failure."""
        cache = self._to.kg_cache
        try:
            return cache.groups(keys), None
        except (TypeError, NullKeyError):  # unhashable (or special) keys, or a None key
            pass
        groups: list[int] = []
        for k in keys:
            try:
                groups.append(cache[k])
            except TypeError:
                try:
                    groups.append(assign_to_key_group(k, self._maxp))
                except Exception as exc:
                    return groups, exc
            except NullKeyError as exc:
                return groups, exc
        return groups, None

    def _append(
        self,
        seqs: Sequence[int],
        values: list[object],
        timestamps: list[int | None],
        keys: list[object],
        groups: list[int],
    ) -> None:
        """The records of the first ``len(groups)`` items, by columns: per receiving subtask,
        onto the run of this split's records its buffer holds
        (:meth:`~.exchange_buffer.ExchangeBuffer.run_for`)."""
        t = self._tagger
        n = len(groups)
        prefix = (t.round, t.phase, t.split)
        channel, index, buffers = self._channel, self._index, self._buffers
        numbers = output_numbers(seqs[:n])  # before the records part: a record's own count
        if len(buffers) == 1:
            if n:
                run = buffers[0].run_for(prefix, channel, index)
                run.add(seqs[:n], values[:n], timestamps[:n], keys[:n], groups, numbers)
            return
        owner_of = self._owner_of
        picks: list[list[int]] = [[] for _ in buffers]
        adds = [p.append for p in picks]
        for i, kg in enumerate(groups):
            adds[owner_of[kg]](i)
        for buffer, picked in zip(buffers, picks, strict=True):
            if not picked:
                continue
            # one C loop per column (itemgetter of one index gives the item, not a tuple)
            take: Callable[[Sequence[Any]], Any] = (
                itemgetter(*picked) if len(picked) > 1 else _one(picked[0])
            )
            run = buffer.run_for(prefix, channel, index)
            run.add(
                take(seqs),
                take(values),
                take(timestamps),
                take(keys),
                take(groups),
                None if numbers is None else take(numbers),
            )


def _one(i: int) -> Callable[[Sequence[Any]], Any]:
    """Takes item ``i`` of a sequence, as a tuple of one (as ``itemgetter`` of several)."""
    return lambda items: (items[i],)


class ValveOutput:
    """Where a valve sends the combined watermark: the stage's entry operator."""

    __slots__ = ("emit_watermark", "emit_watermark_status")

    def __init__(self, target: ChainInput) -> None:
        self.emit_watermark = target.emit_watermark
        self.emit_watermark_status = target.emit_watermark_status
