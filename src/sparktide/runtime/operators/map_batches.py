"""The vectorized map (``DataStream.map_batches``): a user function over batches of records.

The operator gathers the records it receives into a batch, hands the function their columns
(:class:`~sparktide.runtime.operators.batch_columns.BatchColumns`: an Arrow record batch, or a
pandas DataFrame) and emits the function's rows as records, one per input record, in order:
output row ``i`` keeps the timestamp of input record ``i`` and, in a runner, the position it
would have had from ``map`` (:class:`~sparktide.runtime.operators.deferred.OutputMarks`). A
batch ends after ``size`` records, and before any watermark or watermark status is forwarded,
before a simulated clock moves, at the end of input and whenever the runner drains the task:
what reaches the operators downstream, in which order relative to watermarks, is exactly what a
``map`` with the per-record function gives.

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

from collections.abc import Callable
from enum import Enum

import pyarrow as pa

from sparktide.runtime.elements import StreamRecord, Watermark, WatermarkStatus
from sparktide.runtime.execution.protocol import CursorState
from sparktide.runtime.failures import truncated_repr
from sparktide.runtime.operators.batch_columns import BatchColumns
from sparktide.runtime.operators.deferred import DeferredOutputOperator, OutputMarks

__all__ = ["BatchFormat", "MapBatchesOperator"]


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
    """Runs ``function`` over batches of at most ``size`` records (see the module docstring)."""

    kind = "map_batches operator"
    failure_advice = "handle the rows that fail inside the function"

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
        self._marks = OutputMarks()

    @property
    def held(self) -> int:
        """Records received and not emitted yet."""
        return len(self._values)

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

    def _flush(self) -> None:
        values = self._values
        if not values:
            return
        timestamps, held = self._timestamps, self._held
        self._values, self._timestamps, self._held = [], [], []
        outputs = self._apply(values)
        collect = self.output.collect
        cursor = self.cursor
        if cursor is None:
            for value, ts in zip(outputs, timestamps, strict=True):
                collect(StreamRecord(value, ts))
            return
        live = cursor.save()
        restore, advance = cursor.restore, cursor.advance
        try:
            for value, ts, mark in zip(outputs, timestamps, held, strict=True):
                restore(mark)
                collect(StreamRecord(value, ts))
                advance(mark)
        finally:
            restore(live)

    def _apply(self, values: list[object]) -> list[object]:
        """The function's records for ``values``, one per value."""
        where = "map_batches"  # a runner's note on the error names the operator
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
        return self._output.records(data, where)

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
