"""The vectorized map (``DataStream.map_batches``): a user function over batches of records.

The operator gathers the records it receives into a batch, hands the function their columns
(:class:`~sparktide.runtime.operators.batch_columns.BatchColumns`: an Arrow record batch, or a
pandas DataFrame) and emits the function's rows as records, one per input record, in order:
output row ``i`` keeps the timestamp of input record ``i`` and, in a runner, the position it
would have had from ``map`` (:class:`~sparktide.runtime.operators.deferred.OutputMarks`). A
batch ends after ``size`` records, and before any watermark or watermark status is forwarded,
before a simulated clock moves, at the end of input and whenever the runner drains the task:
what reaches the operators downstream, in which order relative to watermarks, is exactly what a
``map`` with the per-record function gives. Records that come in chunks (a split's chain) make
the same batches; a batch read from Arrow with exactly the input columns reaches the function
as it was read, and its output keeps the function's columns (:class:`MapBatchesOperator`).

>>> import pyarrow.compute as pc
>>> from sparktide.common.typeinfo import Types
>>> from sparktide.runtime.operators.batch_columns import BatchColumns
>>> from sparktide.runtime.elements import StreamRecord, Watermark
>>> from sparktide.testing import OneInputStreamOperatorTestHarness
>>> doubled = MapBatchesOperator(
...     lambda batch: batch.set_column(0, "value", pc.multiply(batch.column(0), 2)),
...     BatchColumns.of(Types.LONG()), BatchColumns.of(Types.LONG()), BatchFormat.PYARROW, 2)
>>> h = OneInputStreamOperatorTestHarness(doubled)
>>> h.open()
>>> h.process_element(StreamRecord(1, 10)); h.get_output()  # waits for its batch
[]
>>> h.process_element(StreamRecord(2, 20)); h.get_output()
[StreamRecord(2, 10), StreamRecord(4, 20)]
>>> h.process_element(StreamRecord(3, 30)); h.process_watermark(Watermark(30))
>>> h.get_output()[2:]
[StreamRecord(6, 30), Watermark(30)]
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from itertools import repeat
from typing import TYPE_CHECKING, TypeAlias, cast

import pyarrow as pa

from sparktide.common.arrow_rows import BatchRows, cut, rows_of_batch
from sparktide.runtime.elements import StreamRecord, Watermark, WatermarkStatus
from sparktide.runtime.failures import truncated_repr
from sparktide.runtime.operators.batch_columns import BatchColumns
from sparktide.runtime.operators.deferred import DeferredOutputOperator, OutputMarks

if TYPE_CHECKING:
    from sparktide.runtime.execution.protocol import ChunkTarget, CursorState

__all__ = ["BatchFormat", "ColumnsTarget", "MapBatchesOperator"]

ColumnsTarget: TypeAlias = Callable[[Sequence[int], pa.RecordBatch, list[int | None]], None]
"""What takes a chunk's outputs as columns: ``(seqs, batch, timestamps)``, a row per item."""


class BatchFormat(Enum):
    """What the function of ``map_batches`` receives."""

    PYARROW = "pyarrow"  # a pyarrow.RecordBatch
    PANDAS = "pandas"  # a pandas.DataFrame

    @classmethod
    def parse(cls, value: object) -> BatchFormat:
        """``value`` (a :class:`BatchFormat` or its name) as a :class:`BatchFormat`."""
        if isinstance(value, cls):
            return value
        for member in cls:
            if value == member.value:
                return member
        choices = ", ".join(repr(m.value) for m in cls)
        raise ValueError(f"batch_format must be one of {choices}, got {value!r}")


class MapBatchesOperator(DeferredOutputOperator):
    """Runs ``function`` over batches of at most ``size`` records (see the module docstring).

    In a split's chain it also takes chunks (:mod:`~sparktide.runtime.execution.chunk_path`
    wires ``chunk_output``, ``chunk_at`` and, where the records are only written as columns,
    ``columns_output``); the batches are the same as record by record. A batch whose records
    all came in chunks made from Arrow batches of exactly the input columns
    (:meth:`BatchColumns.of_chunk`) is handed to the function as those columns; its output
    goes on as the function's columns (``columns_output``, for a batch holding all outputs of
    its records) or as records that keep them (:class:`~sparktide.common.arrow_rows.RowChunk`).
    A source record's outputs go on in one chunk: those of a record whose items a batch's end
    separates wait for the next batch."""

    kind = "map_batches operator"
    failure_advice = "handle the rows that fail inside the function"
    chunk_output: ChunkTarget
    chunk_at: Callable[[int], None]
    columns_output: ColumnsTarget | None = None

    def __init__(
        self,
        function: Callable[[object], object],
        input_columns: BatchColumns,
        output_columns: BatchColumns,
        batch_format: BatchFormat,
        size: int,
    ) -> None:
        super().__init__()
        if type(size) is not int or size < 1:
            raise ValueError(f"the batch size must be an int >= 1, got {size!r}")
        self.function = function
        self._input = input_columns
        self._output = output_columns
        self._pandas = batch_format is BatchFormat.PANDAS
        self._size = size
        self._values: list[object] = []
        self._timestamps: list[int | None] = []
        self._held: list[CursorState] = []  # the mark of each held record (in a runner)
        self._runs: list[_Run] = []  # the held items that came in chunks
        # outputs waiting for the rest of their source record's items (a chunk's seqs)
        self._back_seqs: Sequence[int] = ()
        self._back_values: list[object] = []
        self._back_timestamps: list[int | None] = []
        self._marks = OutputMarks()

    @property
    def held(self) -> int:
        """Records received and not emitted yet."""
        return len(self._values)

    def shown(self, seq: int, value: object) -> object:
        """The record a failure after this operator names for its output ``value``."""
        return value

    # ------------------------------------------------------------------ inputs

    def process_element(self, record: StreamRecord) -> None:
        values = self._values
        values.append(record.value)
        self._timestamps.append(record.timestamp)
        cursor = self.cursor
        if cursor is not None:
            self._held.append(self._marks.mark(cursor)[0])
        if len(values) >= self._size:
            self._flush()

    def process_chunk(
        self, seqs: Sequence[int], values: list[object], timestamps: list[int | None]
    ) -> None:
        """Hold a chunk's items, running the function on each batch they complete (the rows
        of a chunk not built yet, :class:`~sparktide.common.arrow_rows.BatchRows`, are built
        only if the batch cannot take its columns)."""
        arrow = self._input.of_chunk(values)
        kind: type = type(values)
        unbuilt = kind is BatchRows
        if arrow is None and unbuilt:
            values, unbuilt = cast("BatchRows", values).rows(), False
        start, n, size = 0, len(values), self._size
        while start < n:
            stop = min(n, start + size - len(self._values))
            whole = start == 0 and stop == n
            self._runs.append(
                _Run(
                    len(self._values),
                    seqs if whole else seqs[start:stop],
                    arrow if whole or arrow is None else arrow.slice(start, stop - start),
                    unbuilt,
                )
            )
            if unbuilt:  # places for the rows, built from the run's columns if needed
                self._values.extend(repeat(None, stop - start))
            else:
                self._values.extend(values if whole else values[start:stop])
            self._timestamps.extend(timestamps if whole else timestamps[start:stop])
            if len(self._values) >= size:
                self.chunk_at(seqs[stop - 1])  # where record by record would be
                self._flush(seqs[stop] if stop < n else None)
            start = stop

    def process_watermark(self, watermark: Watermark) -> None:
        self._flush()
        super().process_watermark(watermark)

    def process_watermark_status(self, status: WatermarkStatus) -> None:
        self._flush()
        super().process_watermark_status(status)

    def drain(self) -> None:
        self._flush()

    def before_clock_advance(self) -> None:
        self._flush()

    def finish(self) -> None:
        self._flush()
        super().finish()

    # ------------------------------------------------------------------ one batch

    def _flush(self, next_seq: int | None = None) -> None:
        """Run the function on the held items and hand its outputs on; ``next_seq``: the
        source record of the next item of the chunk being taken, if any (its outputs so far
        wait)."""
        values = self._values
        if not values:
            self._emit_back()
            return
        timestamps, held, runs = self._timestamps, self._held, self._runs
        self._values, self._timestamps, self._held, self._runs = [], [], [], []
        seqs = _chunk_seqs(runs, len(values))
        batch = self._apply(values, runs, seqs is not None)
        columns = self.columns_output
        if columns is not None and seqs is not None and _whole(seqs, next_seq, self._back_seqs):
            columns(seqs, batch, timestamps)
            return
        outputs = self._output.records_of(batch)
        done = 0
        marks = iter(held)
        for run in runs:
            self._emit_records(outputs, timestamps, done, run.start, marks)
            done = run.start + len(run.seqs)
            last = done == len(values)
            self._emit_chunk(
                run.seqs,
                cut(outputs, run.start, done),
                timestamps[run.start : done],
                next_seq if last else None,
            )
        self._emit_records(outputs, timestamps, done, len(values), marks)
        if next_seq is None:
            self._emit_back()

    def _emit_records(
        self,
        outputs: list[object],
        timestamps: list[int | None],
        start: int,
        stop: int,
        marks: Iterator[CursorState],
    ) -> None:
        """Hand on ``outputs[start:stop]`` record by record, each under its input's mark."""
        if start >= stop:
            return
        self._emit_back()
        collect = self.output.collect
        cursor = self.cursor
        if cursor is None:
            for i in range(start, stop):
                collect(StreamRecord(outputs[i], timestamps[i]))
            return
        live = cursor.save()
        restore, advance = cursor.restore, cursor.advance
        try:
            for i in range(start, stop):
                mark = next(marks)
                restore(mark)
                collect(StreamRecord(outputs[i], timestamps[i]))
                advance(mark)
        finally:
            restore(live)

    def _emit_chunk(
        self,
        seqs: Sequence[int],
        outputs: list[object],
        timestamps: list[int | None],
        next_seq: int | None,
    ) -> None:
        """Hand on the outputs of chunk items, but those of source record ``next_seq`` (whose
        next items are in the next batch): they wait to go on with those."""
        if self._back_seqs:
            seqs, outputs = [*self._back_seqs, *seqs], [*self._back_values, *outputs]
            timestamps = [*self._back_timestamps, *timestamps]
            self._back_seqs = ()
        if next_seq is not None and seqs and seqs[-1] == next_seq:
            cut_at = len(seqs) - 1  # the outputs of record next_seq at the end wait
            while cut_at > 0 and seqs[cut_at - 1] == next_seq:
                cut_at -= 1
            self._back_seqs = seqs[cut_at:]
            self._back_values, self._back_timestamps = outputs[cut_at:], timestamps[cut_at:]
            seqs, outputs, timestamps = seqs[:cut_at], outputs[:cut_at], timestamps[:cut_at]
        if seqs:
            self.chunk_output(seqs, outputs, timestamps)

    def _emit_back(self) -> None:
        """Hand on the outputs waiting for the rest of their source record's items."""
        seqs = self._back_seqs
        if seqs:
            self._back_seqs = ()
            self.chunk_output(seqs, self._back_values, self._back_timestamps)

    def _apply(self, values: list[object], runs: list[_Run], chunked: bool) -> pa.RecordBatch:
        """The function's output for ``values`` (the columns of ``output_type``, one row per
        value): the input as the chunks' Arrow batches where all items came in chunks
        (``chunked``) with Arrow columns."""
        where = "map_batches"  # a runner's note on the error names the operator
        batch = _arrow_of(runs) if chunked else None
        if batch is None:
            for run in runs:
                if run.unbuilt:
                    stop = run.start + len(run.seqs)
                    arrow = cast("pa.RecordBatch", run.arrow)
                    values[run.start : stop] = rows_of_batch(arrow, self._input.names)
            batch = self._input.batch(values, where)
        # integers with nulls stay integers (objects) rather than becoming floats with NaN
        data_in = batch.to_pandas(integer_object_nulls=True) if self._pandas else batch
        result = self.function(data_in)
        data = self._as_arrow(result, where)
        if data.num_rows != len(values):
            raise ValueError(
                f"{where}: the function returned {data.num_rows} rows for a batch of "
                f"{len(values)}; map_batches maps each row to one row, in order (each output "
                "row keeps its input row's timestamp): filter or flat_map before or after it"
            )
        return self._output.checked(data, where)

    def _as_arrow(self, result: object, where: str) -> pa.RecordBatch | pa.Table:
        if isinstance(result, (pa.RecordBatch, pa.Table)):
            return result
        if self._pandas or type(result).__module__.startswith("pandas"):
            import pandas as pd

            if isinstance(result, pd.DataFrame):
                return pa.Table.from_pandas(result, preserve_index=False)
        raise TypeError(
            f"{where}: the function must return a pyarrow.RecordBatch, a pyarrow.Table or a "
            f"pandas.DataFrame, got {type(result).__name__}: {truncated_repr(result)}"
        )


@dataclass(frozen=True)
class _Run:
    """Held items that came in one chunk: from item ``start`` of the batch, one per ``seqs``,
    with their Arrow columns (``arrow``) when the chunk had them; ``unbuilt``: the items are
    not held (only places for them: their rows are made from ``arrow`` if needed)."""

    start: int
    seqs: Sequence[int]
    arrow: pa.RecordBatch | None
    unbuilt: bool = False


def _chunk_seqs(runs: list[_Run], n: int) -> Sequence[int] | None:
    """The source records of ``n`` held items when they all came in chunks (else ``None``:
    records came one by one too)."""
    if len(runs) == 1 and runs[0].start == 0 and len(runs[0].seqs) == n:
        return runs[0].seqs
    if sum(len(r.seqs) for r in runs) != n:
        return None
    return [seq for r in runs for seq in r.seqs]


def _whole(seqs: Sequence[int], next_seq: int | None, back: Sequence[int]) -> bool:
    """Whether a batch of the items of records ``seqs`` holds all their outputs: none waits
    for it (``back``) and the next item (of record ``next_seq``) is another record's. Only
    such a batch goes on as columns: the positions of a record's outputs are numbered in one
    piece."""
    return not back and (next_seq is None or seqs[-1] != next_seq)


def _arrow_of(runs: list[_Run]) -> pa.RecordBatch | None:
    """The batch of the held items, all of which came in ``runs``, when every run has its
    Arrow columns."""
    if any(r.arrow is None for r in runs):
        return None
    if len(runs) == 1:
        return runs[0].arrow
    return pa.Table.from_batches([r.arrow for r in runs]).combine_chunks().to_batches()[0]
