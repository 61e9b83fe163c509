"""Chunks through a split's chain: the records a split reader hands out in one list go through
the chained stateless operators as lists, and reach the chain's exit together.

A chunk is ``(seqs, values, timestamps)`` (:data:`~.protocol.ChunkTarget`): an item per record,
``seqs[i]`` the number in its split of the source record item ``i`` came from; an item's output
number within its source record is implicit (the items of one ``seq`` are consecutive, in
order). :func:`chunk_target` wires a split's chain for chunks, from the tagger's downstream on:

* a map, filter or flat_map (exactly those classes, no failed-records side output) takes the
  chunk (``process_chunk``) and hands on the chunk of its outputs; a sink function's operator
  takes it and calls the function per item; an ``assign_timestamps_and_watermarks`` operator
  assigns the chunk's timestamps and tells its generator once, when that leaves the state
  per-record calls leave (else it takes the chunk record by record);
* a ``map_batches`` operator holds the chunk's items for its batches and hands on chunks of
  its outputs; when it feeds the collect sink of a typed frame directly, it hands that sink
  its output columns instead: an unordered frame's values
  (:meth:`CollectValues.collect_columns`), an ordered frame's records with their positions by
  columns (:meth:`CollectChunks.collect_columns`);
* an output that coerces to a declared type coerces the chunk (:class:`CoerceChunks`);
* a collect sink's :class:`~sparktide.runtime.operators.simple.RecordCollector` appends the
  chunk with the positions the record-by-record path gives (:class:`CollectChunks`), a
  :class:`~sparktide.runtime.operators.simple.ValueCollector` its values
  (:class:`CollectValues`);
* a hash exchange (``key_by``) appends the chunk's entries at once
  (:class:`~sparktide.runtime.execution.wiring.HashChunks`);
* anything else (another exchange, a fan-out to several targets, side outputs, any other operator)
  gets the chunk replayed record by record, the cursor set as the tagger sets it
  (:class:`ReplayChunks`).

A failure names what record-by-record processing names: a stage that is not an operator
(coercion, replay) is registered under the name of the operator (or source) whose output it
handles, and shows the record that operator was processing (its ``shown``); a keyed exchange's
chunks are the ``key_by`` into the receiving operator, and show the record being keyed; the
items before the failing one are handed on first, and the cursor is at the failing item's
source record.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping, Sequence
from dataclasses import dataclass
from typing import cast

import pyarrow as pa

from sparktide.common.typeinfo_base import Coercer
from sparktide.runtime.elements import StreamRecord
from sparktide.runtime.execution.protocol import ChunkTarget, SourceTagger
from sparktide.runtime.execution.wiring import ChainInput, ExchangeWriter, NodeOutput
from sparktide.runtime.failures import KeyByStep
from sparktide.runtime.operators.map_batches import ColumnsTarget, MapBatchesOperator
from sparktide.runtime.operators.simple import (
    ChunkStep,
    CollectSinkOperator,
    ColumnValues,
    FrameCollector,
    RecordCollector,
    SinkFunctionOperator,
    StreamFilter,
    StreamFlatMap,
    StreamMap,
    ValueCollector,
    rethrown,
)
from sparktide.runtime.operators.timestamps import TimestampsAndWatermarksOperator
from sparktide.runtime.output import Output

__all__ = [
    "ChunkOwner",
    "CoerceChunks",
    "CollectChunks",
    "CollectValues",
    "ReplayChunks",
    "chunk_target",
    "reader_owner",
    "takes_columns",
]

_CHUNK_STEPS = (
    StreamMap,
    StreamFilter,
    StreamFlatMap,
    SinkFunctionOperator,
    MapBatchesOperator,
    TimestampsAndWatermarksOperator,
)


@dataclass(frozen=True)
class ChunkOwner:
    """Whose output a stage handles: its ``name`` (as failures name it) and ``shown(seq,
    value)``, the record it was processing when its output ``value`` (of source record
    ``seq``) failed further on."""

    name: str
    shown: Callable[[int, object], object]


def _as_is(seq: int, value: object) -> object:
    return value


def reader_owner(name: str) -> ChunkOwner:
    """The split reader as owner: a failure right after it shows the record read."""
    return ChunkOwner(name, _as_is)


class CoerceChunks:
    """Coerces each value of a chunk to the declared output type (``coerce(value, where)``)."""

    __slots__ = ("_at", "_coerce", "_downstream", "_shown", "_where")

    def __init__(
        self,
        coerce: Coercer,
        where: str,
        downstream: ChunkTarget,
        owner: ChunkOwner,
        at: Callable[[int], None],
    ) -> None:
        self._coerce = coerce
        self._where = where
        self._downstream = downstream
        self._shown = owner.shown
        self._at = at

    def collect_chunk(
        self, seqs: Sequence[int], values: list[object], timestamps: list[int | None]
    ) -> None:
        coerce, where = self._coerce, self._where
        try:
            out = [coerce(value, where) for value in values]
        except Exception:
            pass  # redone one by one below, to find the failing item
        else:
            self._downstream(seqs, out, timestamps)
            return
        out = []
        for value in values:  # coercion has no side effects: redoing it is safe
            try:
                out.append(coerce(value, where))
            except Exception as exc:
                failure = exc
                break
        i = len(out)
        if i:
            self._downstream(seqs[:i], out, timestamps[:i])
        record = StreamRecord(self._shown(seqs[i], values[i]), timestamps[i])  # noqa: F841
        self._at(seqs[i])
        raise rethrown(failure)


class ReplayChunks:
    """Hands a chunk on record by record to an output that takes records, the cursor set for
    each source record as the tagger sets it."""

    __slots__ = ("_at", "_collect", "_shown")

    def __init__(self, target: Output, owner: ChunkOwner, at: Callable[[int], None]) -> None:
        self._collect = target.collect
        self._shown = owner.shown
        self._at = at

    def collect_chunk(
        self, seqs: Sequence[int], values: list[object], timestamps: list[int | None]
    ) -> None:
        collect, at = self._collect, self._at
        last = -1
        for seq, value, ts in zip(seqs, values, timestamps, strict=True):
            if seq != last:
                at(seq)
                last = seq
            try:
                collect(StreamRecord(value, ts))
            except Exception as exc:
                failure = exc
                break
        else:
            return
        record = StreamRecord(self._shown(seq, value), ts)  # noqa: F841 - the failure's record
        raise rethrown(failure)


class _ToCollector:
    """A stage that hands chunks to a collect sink's collector (``_collector``), the split's
    cursor in ``_tagger``."""

    __slots__ = ("_collector", "_tagger")

    def __init__(self, collector: RecordCollector, tagger: SourceTagger) -> None:
        self._collector = collector
        self._tagger = tagger


class CollectChunks(_ToCollector):
    """A collect sink's collector: appends a chunk at the positions its records would get."""

    __slots__ = ()

    def collect_chunk(
        self, seqs: Sequence[int], values: list[object], timestamps: list[int | None]
    ) -> None:
        self._collector.collect_chunk(self._tagger.positions(seqs), values, timestamps)

    def collect_columns(
        self, seqs: Sequence[int], batch: pa.RecordBatch, timestamps: list[int | None]
    ) -> None:
        """A chunk's records as the columns of ``batch`` (a ``map_batches`` output's), at the
        positions :meth:`collect_chunk` gives them, by columns (a :class:`FrameCollector`)."""
        positions = self._tagger.position_columns(seqs)
        cast(FrameCollector, self._collector).collect_columns(ColumnValues(batch, positions))


class CollectValues(_ToCollector):
    """A collect sink's :class:`ValueCollector`: appends a chunk's values; the cursor is left
    where :meth:`SourceTagger.positions` leaves it."""

    __slots__ = ()
    _collector: ValueCollector

    def collect_chunk(
        self, seqs: Sequence[int], values: list[object], timestamps: list[int | None]
    ) -> None:
        self._collector.collect_values(values)
        self._tagger.leave_after(seqs)

    def collect_columns(
        self, seqs: Sequence[int], batch: pa.RecordBatch, timestamps: list[int | None]
    ) -> None:
        """A chunk's values as the columns of ``batch`` (a ``map_batches`` output's)."""
        self._collector.collect_columns(ColumnValues(batch))
        self._tagger.leave_after(seqs)


def _step(
    output: Output,
) -> ChunkStep | MapBatchesOperator | TimestampsAndWatermarksOperator | None:
    """The stateless operator (or sink function) ``output`` feeds, if it takes chunks as it
    is."""
    if not isinstance(output, ChainInput) or output.index == 2:
        return None
    op = output.operator
    if type(op) not in _CHUNK_STEPS or "process_element" in vars(op):  # a guard wraps it
        return None
    return op  # type: ignore[return-value]


def _collector(output: Output) -> RecordCollector | None:
    """The collector of the collect sink ``output`` feeds, if any (and not wrapped)."""
    if not isinstance(output, ChainInput) or output.index == 2:
        return None
    op = output.operator
    if type(op) is not CollectSinkOperator or "process_element" in vars(op):
        return None
    sink = op.sink
    return sink if isinstance(sink, RecordCollector) else None


def _uncoerced(output: Output) -> Output | None:
    """What ``output`` hands chunks to as they are (itself, or a node output's one target when it
    does not coerce); ``None`` when the chunks are coerced or go record by record."""
    if not isinstance(output, NodeOutput):
        return output
    parts = output.chunk_parts()
    if parts is None or parts[1] is not None:
        return None
    return parts[0]


def _columns_target(output: Output, tagger: SourceTagger) -> ColumnsTarget | None:
    """What takes a ``map_batches`` output's columns as they are: the collect sink of a typed
    frame (written from columns: an unordered frame's values, an ordered frame's records with
    their positions by columns), fed directly."""
    direct = _uncoerced(output)
    collector = None if direct is None else _collector(direct)
    if isinstance(collector, ValueCollector):
        return CollectValues(collector, tagger).collect_columns
    if isinstance(collector, FrameCollector):
        return CollectChunks(collector, tagger).collect_columns
    return None


def takes_columns(output: Output) -> bool:
    """Whether the chunks handed to ``output`` go, as they are, to a ``map_batches`` step (which
    takes a batch's columns: a source's chunks need not build their rows, see
    :meth:`~sparktide.runtime.source_reader.SplitReader.take_columns`)."""
    direct = _uncoerced(output)
    return direct is not None and isinstance(_step(direct), MapBatchesOperator)


def chunk_target(
    output: Output,
    owner: ChunkOwner,
    tagger: SourceTagger,
    names: MutableMapping[int, str | KeyByStep],
) -> ChunkTarget:
    """What takes the chunks ``owner`` hands to ``output`` (see the module docstring);
    ``names`` (the runner's names of what it built, for failures) gets the stages made."""
    at = tagger.at_seq
    if isinstance(output, NodeOutput):
        parts = output.chunk_parts()
        if parts is not None:
            target, coerce, where = parts
            downstream = chunk_target(target, owner, tagger, names)
            if coerce is None:
                return downstream
            stage = CoerceChunks(coerce, where, downstream, owner, at)
            names[id(stage)] = owner.name
            return stage.collect_chunk
    step = _step(output)
    if step is not None:
        if not isinstance(step, SinkFunctionOperator):
            inner = ChunkOwner(cast(str, names[id(step)]), step.shown)  # an operator's name
            step.chunk_output = chunk_target(step.output, inner, tagger, names)
        if isinstance(step, MapBatchesOperator):
            step.columns_output = _columns_target(step.output, tagger)
        step.chunk_at = at
        return step.process_chunk
    collector = _collector(output)
    if isinstance(collector, ValueCollector):
        return CollectValues(collector, tagger).collect_chunk
    if collector is not None:
        return CollectChunks(collector, tagger).collect_chunk
    if isinstance(output, ExchangeWriter):
        chunks = output.chunk_writer(tagger)
        if chunks is not None:
            names[id(chunks)] = names[id(output)]  # the key_by into the receiving operator
            return chunks.collect_chunk
    replay = ReplayChunks(output, owner, at)
    names[id(replay)] = owner.name
    return replay.collect_chunk
