"""Stateless one-input operators (map, flat_map, filter, type coercion), keyed reduce, sinks.

Records keep their timestamp through these operators (Flink's ``TimestampedCollector``). A
record belongs to one chain path, so stateless operators replace its value in place.
"""

from __future__ import annotations

import sys
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import compress, repeat
from typing import TYPE_CHECKING, TextIO, cast

from sparktide.common.typeinfo_base import TypeInformation
from sparktide.core.state import ValueState, ValueStateDescriptor
from sparktide.runtime.elements import MAX_TIMESTAMP, StreamRecord, Watermark
from sparktide.runtime.operators.base import AbstractStreamOperator

if TYPE_CHECKING:
    # the positions runners give printed lines and collected records: ordered values
    import pyarrow as pa
    from _typeshed import SupportsRichComparison as Position

    from sparktide.runtime.execution.position_columns import PositionColumns
    from sparktide.runtime.execution.protocol import ChunkTarget

__all__ = [
    "ChunkStep",
    "CoerceOperator",
    "CollectSinkOperator",
    "ColumnValues",
    "FrameCollector",
    "PrintSinkOperator",
    "SinkContext",
    "SinkFunctionOperator",
    "StreamFilter",
    "StreamFlatMap",
    "StreamGroupedReduce",
    "StreamMap",
    "ValueCollector",
    "as_callable",
    "rethrown",
]


def as_callable(function: object, method: str, parameter: str) -> Callable[..., object]:
    """``function.method`` for a Function object, or ``function`` itself if it is callable."""
    bound: object = getattr(function, method, None)
    if callable(bound) and not isinstance(function, type):
        return bound
    if callable(function):
        return function
    raise TypeError(
        f"{parameter} must be a callable or an object with a {method}() method, got "
        f"{type(function).__name__}"
    )


class _UserFunctionOperator(AbstractStreamOperator):
    def __init__(self, function: object) -> None:
        super().__init__()
        self.function = function

    def open(self) -> None:
        opener = getattr(self.function, "open", None)
        if callable(opener) and not isinstance(self.function, type):
            opener(self.runtime_context)

    def close(self) -> None:
        closer = getattr(self.function, "close", None)
        if callable(closer) and not isinstance(self.function, type):
            closer()
        super().close()


def rethrown(failure: Exception) -> Exception:
    """``failure``, caught in the frame that raises it again, without that frame's first entry
    in its traceback (raising adds it again): the traceback reads as if never caught."""
    tb = failure.__traceback__
    return failure.with_traceback(None if tb is None else tb.tb_next)


class ChunkStep(_UserFunctionOperator):
    """A stateless operator that also takes chunks (a split's records in a list, see
    :data:`~sparktide.runtime.execution.protocol.ChunkTarget`): ``process_chunk(seqs, values,
    timestamps)`` calls the function on each value in order and hands its outputs on to
    ``chunk_output`` in one chunk. When the function raises on item ``i``, what the items
    before ``i`` gave is handed on first (as record by record), then the error is raised with
    ``record`` (the failure context's record) the item's, and the cursor at its source record
    (``chunk_at(seq)``). The runner wires ``chunk_output`` and ``chunk_at``."""

    chunk_output: ChunkTarget
    chunk_at: Callable[[int], None]

    def process_chunk(
        self, seqs: Sequence[int], values: list[object], timestamps: list[int | None]
    ) -> None:
        """Process a chunk (see the class docstring)."""
        raise NotImplementedError(type(self).__name__ + ".process_chunk")

    def shown(self, seq: int, value: object) -> object:
        """The record a failure after this operator names for the output ``value`` of source
        record ``seq``: the record this operator was processing (here the output itself, as
        ``process_element`` hands on the record it received)."""
        return value


class StreamMap(ChunkStep):
    def __init__(self, function: object) -> None:
        super().__init__(function)
        self._map = as_callable(function, "map", "map function")

    def process_element(self, record: StreamRecord) -> None:
        record.value = self._map(record.value)
        self.output.collect(record)

    def process_chunk(
        self, seqs: Sequence[int], values: list[object], timestamps: list[int | None]
    ) -> None:
        fn = self._map
        out: list[object] = []
        append = out.append
        try:
            for value in values:
                append(fn(value))
        except Exception as exc:
            failure = exc
        else:
            self.chunk_output(seqs, out, timestamps)
            return
        i = len(out)
        if i:
            self.chunk_output(seqs[:i], out, timestamps[:i])
        record = StreamRecord(values[i], timestamps[i])  # noqa: F841 - the failure's record
        self.chunk_at(seqs[i])
        raise rethrown(failure)


class StreamFlatMap(ChunkStep):
    def __init__(self, function: object) -> None:
        super().__init__(function)
        # a flat_map returns an iterable of outputs (or None)
        self._flat_map = cast(
            "Callable[[object], Iterable[object] | None]",
            as_callable(function, "flat_map", "flat_map function"),
        )

    def process_element(self, record: StreamRecord) -> None:
        results = self._flat_map(record.value)
        if results is None:
            return
        collect = self.output.collect
        ts = record.timestamp
        for value in results:
            collect(StreamRecord(value, ts))

    def process_chunk(
        self, seqs: Sequence[int], values: list[object], timestamps: list[int | None]
    ) -> None:
        fn = self._flat_map
        self._chunk_in = (seqs, values)  # for :meth:`shown`
        out: list[object] = []
        out_seqs: list[int] = []
        out_ts: list[int | None] = []
        extend = out.extend
        try:
            for seq, value, ts in zip(seqs, values, timestamps, strict=True):
                results = fn(value)
                if results is None:
                    continue
                before = len(out)
                extend(results)
                k = len(out) - before
                if k:
                    out_seqs.extend(repeat(seq, k))
                    out_ts.extend(repeat(ts, k))
        except Exception as exc:
            failure = exc
        else:
            if out:
                self.chunk_output(out_seqs, out, out_ts)
            return
        k = len(out) - len(out_seqs)  # what the failing input gave before it raised
        out_seqs.extend(repeat(seq, k))
        out_ts.extend(repeat(ts, k))
        if out:
            self.chunk_output(out_seqs, out, out_ts)
        record = StreamRecord(value, ts)  # noqa: F841 - the failure's record
        self.chunk_at(seq)
        raise rethrown(failure)

    def shown(self, seq: int, value: object) -> object:
        """The input of the outputs of source record ``seq`` (``process_element``'s record)."""
        seqs, values = self._chunk_in
        return values[bisect_left(seqs, seq)]


class StreamFilter(ChunkStep):
    def __init__(self, function: object) -> None:
        super().__init__(function)
        self._filter = as_callable(function, "filter", "filter function")

    def process_element(self, record: StreamRecord) -> None:
        if self._filter(record.value):
            self.output.collect(record)

    def process_chunk(
        self, seqs: Sequence[int], values: list[object], timestamps: list[int | None]
    ) -> None:
        fn = self._filter
        keep: list[bool] = []
        append = keep.append
        try:
            for value in values:
                append(True if fn(value) else False)  # noqa: SIM210 - truth taken now
        except Exception as exc:
            failure = exc
        else:
            if all(keep):
                if keep:
                    self.chunk_output(seqs, values, timestamps)
            elif any(keep):
                self._pass(seqs, values, timestamps, keep)
            return
        i = len(keep)
        if any(keep):
            self._pass(seqs, values, timestamps, keep)
        record = StreamRecord(values[i], timestamps[i])  # noqa: F841 - the failure's record
        self.chunk_at(seqs[i])
        raise rethrown(failure)

    def _pass(
        self,
        seqs: Sequence[int],
        values: list[object],
        timestamps: list[int | None],
        keep: list[bool],
    ) -> None:
        """Hand on the items ``keep`` says (the first ``len(keep)``)."""
        self.chunk_output(
            list(compress(seqs, keep)),
            list(compress(values, keep)),
            list(compress(timestamps, keep)),
        )


class CoerceOperator(AbstractStreamOperator):
    """Gives each value the shape its declared type has (``Types.FLOAT()`` is 32-bit, ...)."""

    def __init__(self, type_info: TypeInformation, where: str) -> None:
        super().__init__()
        self._coerce = type_info.coerce
        self._where = where

    def process_element(self, record: StreamRecord) -> None:
        record.value = self._coerce(record.value, self._where)
        self.output.collect(record)


class StreamGroupedReduce(_UserFunctionOperator):
    """Rolling reduce per key: emits the reduced value after every element.

    In BATCH execution mode (``batch=True``) it emits only each key's final value, at the end of
    input, as Flink's batch runtime does.
    """

    STATE = "_reduce_state"

    def __init__(
        self, function: object, type_info: TypeInformation | None = None, batch: bool = False
    ) -> None:
        super().__init__(function)
        self._reduce = as_callable(function, "reduce", "reduce function")
        self._coerce = None if type_info is None else type_info.coerce
        self._type_info = type_info
        self._batch = batch

    def open(self) -> None:
        super().open()
        self._state: ValueState = self.runtime_context.get_state(
            ValueStateDescriptor(self.STATE, self._type_info)
        )

    def process_element(self, record: StreamRecord) -> None:
        self.keyed_state_backend.set_current_key(self.key_selector(record.value))  # type: ignore[union-attr,misc]
        self.process_keyed_element(record)

    def process_keyed_element(self, record: StreamRecord) -> None:
        state = self._state
        current = state.value()
        value = record.value if current is None else self._reduce(current, record.value)
        if self._coerce is not None:
            value = self._coerce(value, "reduce result")
        state.update(value)
        if not self._batch:
            self.output.collect(StreamRecord(value, record.timestamp))

    def process_watermark(self, watermark: Watermark) -> None:
        if self._batch and watermark.timestamp == MAX_TIMESTAMP:
            backend = self.keyed_state_backend
            if backend is None:
                raise RuntimeError("a keyed reduce needs a keyed stream: key_by(...) first")
            for key in list(backend.get_keys(self.STATE, None)):
                backend.set_current_key(key)
                self.output.collect(StreamRecord(self._state.value(), None))
        super().process_watermark(watermark)


class PrintSinkOperator(AbstractStreamOperator):
    """Prints each value as PyFlink does, ``"N> "``-prefixed when the sink runs in parallel
    (``"id:N> "`` / ``"id> "`` with a sink identifier).

    A value of a stream with a declared type prints the way that type shows it (Java's
    ``toString``: ``(a,1)``, ``+I[1,a]``, ``110.1``); otherwise ``str(value)``. When a runner
    sets ``shipped`` (a list), lines are appended there with their position instead, and the
    runner prints them in position order (:func:`flush_printed`): the local runtime at the end
    of every round, the Spark runner on the driver.
    """

    def __init__(
        self,
        type_info: TypeInformation | None = None,
        stream: TextIO | None = None,
        identifier: str | None = None,
    ) -> None:
        super().__init__()
        self._stream = stream
        self._identifier = identifier
        fmt = getattr(type_info, "format_for_print", None)
        pickled = type(type_info).__name__.startswith("Pickled")
        self._format: Callable[[object], str] = fmt if fmt is not None and not pickled else str
        self.shipped: list[tuple[Position, str]] | None = None
        self.position_of: Callable[[], Position] = tuple

    @property
    def stream(self) -> TextIO | None:
        """Where the lines are written (``None``: ``sys.stdout`` as it is when printing)."""
        return self._stream

    def open(self) -> None:
        info = self.setup_info
        ident = self._identifier
        if info.parallelism > 1:
            n = info.subtask_index + 1
            self._prefix = f"{ident}:{n}> " if ident else f"{n}> "
        else:
            self._prefix = f"{ident}> " if ident else ""

    def process_element(self, record: StreamRecord) -> None:
        line = f"{self._prefix}{self._format(record.value)}"
        if self.shipped is not None:
            self.shipped.append((self.position_of(), line))
        else:
            (self._stream or sys.stdout).write(line + "\n")


def flush_printed(operators: Iterable[AbstractStreamOperator]) -> None:
    """Write the lines the print sinks among ``operators`` shipped, in position order (one order
    for all print sinks, whatever subtask printed), and empty their lists."""
    lines: list[tuple[Position, str, TextIO | None]] = []
    for op in operators:
        if isinstance(op, PrintSinkOperator) and op.shipped:
            lines.extend((position, line, op.stream) for position, line in op.shipped)
            op.shipped.clear()
    lines.sort(key=lambda item: item[0])
    for _, line, stream in lines:
        (stream or sys.stdout).write(line + "\n")


class RecordCollector:
    """Appends ``(position, record)`` to ``out``; the runner sets ``position`` (a callable
    giving the current record's position).

    ``out`` is the driver's list on the local runtime, and a worker's copy on Spark (whose
    runner ships it back tagged with ``node_id``)."""

    __slots__ = ("node_id", "out", "position")

    def __init__(self, out: list[tuple[Position, StreamRecord]], node_id: int) -> None:
        self.out = out
        self.node_id = node_id
        self.position: Callable[[], Position] = tuple

    def __call__(self, record: StreamRecord) -> None:
        self.out.append((self.position(), record))

    @property
    def held(self) -> int:
        """The records ``out`` holds."""
        return len(self.out)

    def clear(self) -> None:
        """Empty ``out`` (its records were shipped)."""
        self.out.clear()

    def collect_chunk(
        self, positions: Sequence[Position], values: list[object], timestamps: list[int | None]
    ) -> None:
        """Records at ``positions`` (what the calls record by record would append, at once)."""
        self.out.extend(zip(positions, map(StreamRecord, values, timestamps), strict=True))


class FrameCollector(RecordCollector):
    """A :class:`RecordCollector` of a frame whose task writes its records as typed columns (on
    Spark): ``out`` holds, besides ``(position, record)`` pairs, a chunk's records as the
    columns of an Arrow batch with their positions (:class:`ColumnValues`), one item each."""

    __slots__ = ("_in_columns",)

    def __init__(self, out: list[tuple[Position, StreamRecord]], node_id: int) -> None:
        super().__init__(out, node_id)
        self._in_columns = 0  # records held as columns, beyond one item each

    def collect_columns(self, columns: ColumnValues) -> None:
        """A chunk's records as the columns of an Arrow batch (one item in ``out``, in its
        place)."""
        self.out.append(columns)  # type: ignore[arg-type]  # records as columns
        self._in_columns += columns.batch.num_rows - 1

    @property
    def held(self) -> int:
        return len(self.out) + self._in_columns

    def clear(self) -> None:
        self.out.clear()
        self._in_columns = 0


class ValueCollector(FrameCollector):
    """A :class:`FrameCollector` that keeps only the records' values in ``out`` (a sink whose
    records need neither positions nor timestamps: an unordered typed frame on Spark)."""

    __slots__ = ()

    def __call__(self, record: StreamRecord) -> None:
        self.out.append(record.value)  # values, not pairs

    def collect_values(self, values: list[object]) -> None:
        """The values of a chunk's records (what the calls record by record would append)."""
        self.out.extend(values)  # type: ignore[arg-type]  # values, not pairs


@dataclass(frozen=True)
class ColumnValues:
    """Records held as the columns of an Arrow batch (``batch``: a row per record, the columns
    of the records' declared type) in a :class:`FrameCollector`'s ``out``; ``positions``: their
    positions (an ordered frame's records), ``None`` in a :class:`ValueCollector`."""

    batch: pa.RecordBatch
    positions: PositionColumns | None = None


class CollectSinkOperator(AbstractStreamOperator):
    """Hands each record to ``sink(record)`` (the runner collects results this way)."""

    def __init__(self, sink: Callable[[StreamRecord], None]) -> None:
        super().__init__()
        self._sink = sink

    @property
    def sink(self) -> Callable[[StreamRecord], None]:
        """What each record is handed to (a :class:`RecordCollector` when a runner collects)."""
        return self._sink

    def process_element(self, record: StreamRecord) -> None:
        self._sink(record)


class SinkContext:
    """The ``context`` of ``SinkFunction.invoke``: the record's timestamp, the watermark and the
    processing time. The operator sets ``ts`` (what :meth:`timestamp` returns) before each
    call."""

    __slots__ = ("_op", "ts")

    def __init__(self, op: AbstractStreamOperator) -> None:
        self._op = op
        self.ts: int | None = None

    def timestamp(self) -> int | None:
        return self.ts

    def current_watermark(self) -> int:
        return self._op.current_watermark()

    def current_processing_time(self) -> int:
        return self._op.current_processing_time()


class SinkFunctionOperator(ChunkStep):
    """Calls a user ``SinkFunction.invoke(value, context)`` per record (of a chunk too: it
    hands nothing on)."""

    def __init__(self, function: object) -> None:
        super().__init__(function)
        self._invoke = as_callable(function, "invoke", "sink function")
        self._ctx = SinkContext(self)

    def process_element(self, record: StreamRecord) -> None:
        ctx = self._ctx
        ctx.ts = record.timestamp
        self._invoke(record.value, ctx)

    def process_chunk(
        self, seqs: Sequence[int], values: list[object], timestamps: list[int | None]
    ) -> None:
        ctx = self._ctx
        invoke = self._invoke
        for seq, value, ts in zip(seqs, values, timestamps, strict=True):  # noqa: B007
            ctx.ts = ts
            try:
                invoke(value, ctx)
            except Exception as exc:
                failure = exc
                break
        else:
            return
        record = StreamRecord(value, ts)  # noqa: F841 - the failure's record
        self.chunk_at(seq)
        raise rethrown(failure)
