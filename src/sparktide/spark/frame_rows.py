"""Typed frame columns in a job's rows: the records of a collect sink whose frame has a declared
type leave the task that produces them as typed Arrow columns, one row per record.

A job built for such frames (:class:`FrameRows`, one :class:`FrameTarget` per sink) writes, in
the same ``mapInArrow`` output as its exchange entries and driver rows (the columns of
:func:`~sparktide.spark.spark_job.arrow_row_schema`), extra columns: each target's typed columns
(:func:`~sparktide.spark.frames.arrow_schema_of` of its type), the position of each record as
``width`` long columns padded with :data:`~sparktide.runtime.execution.protocol.PAD` (when a
target's frame is ordered), and the text of a user function's failure. Its rows for a target
have ``stage`` = ``Shipment.COLLECTED`` and ``target`` = the sink's node id; every other row
holds nulls in these columns. The frame the user reads is a filter and select of those rows in
the JVM (:meth:`FrameRows.frame`): no second Python pass decodes and encodes the records again.

>>> from sparktide.common import Types
>>> from sparktide.runtime.execution.protocol import PAD
>>> rows = FrameRows((FrameTarget(7, Types.TUPLE([Types.STRING(), Types.INT()]), True),), 3)
>>> rows.arrow_schema().names[5:]
['_f0_0', '_f0_1', '_error', '_p0', '_p1', '_p2']
>>> batch = rows.records(7, [("a", 1), ("b", 2)], [(0, 1), (0, 1, 3)]).to_pydict()
>>> batch["_f0_0"], batch["_p2"] == [PAD, 3]
(['a', 'b'], True)
>>> rows.records(7, [("a", 1), ("b", 2)], [(0, 1), (0, 2)]).to_pydict()["_p1"]
[1, 2]
"""

from __future__ import annotations

import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, cast

import pyarrow as pa

from sparktide.common.arrow_columns import arrow_schema_of
from sparktide.common.typeinfo_base import TypeInformation
from sparktide.runtime.elements import StreamRecord
from sparktide.runtime.execution.planner import Plan
from sparktide.runtime.execution.position_columns import PositionColumns
from sparktide.runtime.execution.protocol import Position, Shipment
from sparktide.runtime.operators.batch_columns import BatchColumns
from sparktide.runtime.operators.simple import ColumnValues
from sparktide.spark.failures import RemoteFailure
from sparktide.spark.frames import to_record_batch

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

__all__ = ["BASE_COLUMNS", "FrameRows", "FrameTarget", "failure_text", "position_width"]

#: the columns every row of a job has (:func:`~sparktide.spark.spark_job.arrow_row_schema`)
BASE_COLUMNS = ("stage", "target", "pkey", "position", "payload")

_BASE_TYPES = (pa.int32(), pa.int32(), pa.int64(), pa.binary(), pa.binary())
_ERROR = "_error"


def position_width(plan: Plan) -> int:
    """The length of the longest position in ``plan``: a source position and its output number
    (6), plus 3 per exchange stage (:mod:`sparktide.runtime.execution.protocol`)."""
    return 6 + 3 * len(plan.stages)


def failure_text(payload: bytes) -> str:
    """The user's exception of a pickled :class:`~sparktide.spark.failures.RemoteFailure`, as
    Python prints it (its type, message and note: operator, record, the user's frames; the
    note's ``__cause__`` form too, where Python does not print notes)."""
    import pickle

    failure: RemoteFailure = pickle.loads(payload)
    return "".join(traceback.format_exception(failure.exception())).rstrip("\n")


@dataclass(frozen=True)
class FrameTarget:
    """A collect sink whose frame is written in ``type_info``'s columns by the task that
    produces its records; ``ordered``: with the records' positions, to sort the frame by."""

    node_id: int
    type_info: TypeInformation
    ordered: bool


@dataclass(frozen=True)
class FrameRows:
    """The typed frame columns of a job's rows for ``targets`` (``width``: the position
    columns, :func:`position_width`)."""

    targets: tuple[FrameTarget, ...]
    width: int

    @classmethod
    def of(cls, plan: Plan, targets: Sequence[FrameTarget]) -> FrameRows:
        """The frame columns for ``targets`` in ``plan``'s rows (positions if one is ordered)."""
        ordered = any(t.ordered for t in targets)
        return cls(tuple(targets), position_width(plan) if ordered else 0)

    @cached_property
    def _index(self) -> dict[int, int]:
        return {t.node_id: k for k, t in enumerate(self.targets)}

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._index

    @cached_property
    def _value_fields(self) -> list[list[pa.Field]]:
        """Per target, its typed columns under the names they have in the rows."""
        return [
            [
                pa.field(f"_f{k}_{i}", f.type)
                for i, f in enumerate(arrow_schema_of(target.type_info))
            ]
            for k, target in enumerate(self.targets)
        ]

    @cached_property
    def _extra_fields(self) -> list[pa.Field]:
        positions = [pa.field(f"_p{i}", pa.int64()) for i in range(self.width)]
        values = [f for fields in self._value_fields for f in fields]
        return [*values, pa.field(_ERROR, pa.string()), *positions]

    def arrow_schema(self) -> pa.Schema:
        """The Arrow schema of the job's rows."""
        return self._schema

    @cached_property
    def _schema(self) -> pa.Schema:
        base = [pa.field(n, t) for n, t in zip(BASE_COLUMNS, _BASE_TYPES, strict=True)]
        return pa.schema([*base, *self._extra_fields])

    def spark_schema(self) -> StructType:
        """The Spark schema of the job's rows (a ``mapInArrow`` output)."""
        from pyspark.sql.pandas.types import from_arrow_schema

        return from_arrow_schema(self.arrow_schema())

    def rows(self, base: Sequence[list[object]], errors: list[str | None]) -> pa.RecordBatch:
        """A batch of rows without records: ``base``'s columns (:data:`BASE_COLUMNS`), the
        failure text of each (``errors``), nulls elsewhere."""
        n = len(base[0])
        arrays = [pa.array(c, t) for c, t in zip(base, _BASE_TYPES, strict=True)]
        for f in self._extra_fields:
            error = f.name == _ERROR
            arrays.append(pa.array(errors, pa.string()) if error else pa.nulls(n, f.type))
        return pa.RecordBatch.from_arrays(arrays, schema=self.arrow_schema())

    @cached_property
    def unordered(self) -> frozenset[int]:
        """The targets whose records need no positions (their tasks keep values only)."""
        return frozenset(t.node_id for t in self.targets if not t.ordered)

    @cached_property
    def ordered(self) -> frozenset[int]:
        """The targets whose records keep their positions (to sort the frame by)."""
        return frozenset(t.node_id for t in self.targets if t.ordered)

    def records(
        self, node_id: int, values: Sequence[object], positions: Sequence[Position] = ()
    ) -> pa.RecordBatch:
        """The rows of records ``values`` (at ``positions``: an ordered target's) of target
        ``node_id``, typed by :func:`~sparktide.spark.frames.to_record_batch` (its error for a
        value that does not fit)."""
        typed = to_record_batch(values, self.targets[self._index[node_id]].type_info)
        return self._typed_rows(node_id, typed, self._position_columns(node_id, positions))

    def collected(self, node_id: int, out: Sequence[object]) -> list[pa.RecordBatch]:
        """The rows of target ``node_id``'s collected ``out`` (an unordered target's values, an
        ordered one's ``(position, record)`` pairs), and records held as columns
        (:class:`~sparktide.runtime.operators.simple.ColumnValues`) taken as they are when they
        have the target's Arrow types (else as their values)."""
        batches: list[pa.RecordBatch] = []
        start = 0
        for i, item in enumerate(out):
            if type(item) is ColumnValues:
                if start < i:
                    batches.append(self._items(node_id, out[start:i]))
                batches.append(self._columns(node_id, item))
                start = i + 1
        if start < len(out) or not batches:
            batches.append(self._items(node_id, out[start:]))
        return batches

    def _items(self, node_id: int, items: Sequence[object]) -> pa.RecordBatch:
        """The rows of collected values, or ``(position, record)`` pairs (an ordered target's)."""
        if not self.targets[self._index[node_id]].ordered:
            return self.records(node_id, items)
        pairs = cast("Sequence[tuple[Position, StreamRecord]]", items)
        return self.records(node_id, [r.value for _, r in pairs], [p for p, _ in pairs])

    def _columns(self, node_id: int, item: ColumnValues) -> pa.RecordBatch:
        target = self.targets[self._index[node_id]]
        positions = self._position_columns(node_id, item.positions)
        batch = item.batch
        if batch.schema.types != [f.type for f in self._value_fields[self._index[node_id]]]:
            values = BatchColumns.of(target.type_info).records_of(batch)
            batch = to_record_batch(values, target.type_info)
        return self._typed_rows(node_id, batch, positions)

    def _typed_rows(
        self, node_id: int, typed: pa.RecordBatch, positions: list[pa.Array]
    ) -> pa.RecordBatch:
        """The rows of target ``node_id`` holding ``typed`` (its columns, of its types) at
        ``positions`` (its position columns)."""
        k = self._index[node_id]
        n = typed.num_rows
        base = (Shipment.COLLECTED.value, node_id, 0, b"", b"")
        arrays = [pa.repeat(pa.scalar(v, t), n) for v, t in zip(base, _BASE_TYPES, strict=True)]
        for j, fields in enumerate(self._value_fields):
            if j == k:
                arrays.extend(typed.columns)
            else:
                arrays.extend(pa.nulls(n, f.type) for f in fields)
        arrays.append(pa.nulls(n, pa.string()))
        arrays.extend(positions or self._nulls(n))
        return pa.RecordBatch.from_arrays(arrays, schema=self.arrow_schema())

    def _nulls(self, n: int) -> list[pa.Array]:
        """The position columns of ``n`` records of an unordered target."""
        return [pa.nulls(n, pa.int64()) for _ in range(self.width)]

    def _position_columns(
        self, node_id: int, positions: Sequence[Position] | PositionColumns | None
    ) -> list[pa.Array]:
        """The ``width`` long columns of an ordered target's ``positions`` padded with
        ``PAD``, by columns, not per record (none for an unordered target's)."""
        width = self.width
        if not self.targets[self._index[node_id]].ordered or positions is None:
            return []
        if not len(positions):
            return self._nulls(0)
        columns = positions
        if not isinstance(columns, PositionColumns):
            columns = PositionColumns.of(columns)
        if columns.width > width:
            raise RuntimeError(f"a position is longer than the plan's widest ({width})")
        matrix = columns.matrix(width)
        return [pa.array(matrix[:, i]) for i in range(width)]

    def table(self, rows: pa.Table, node_id: int) -> pa.Table:
        """The records of target ``node_id`` among ``rows`` (the job's rows of that target, as
        Arrow): the frame :meth:`frame` gives, made on the driver (in position order when the
        target is ordered)."""
        k = self._index[node_id]
        if self.targets[k].ordered and rows.num_rows > 1:
            rows = rows.sort_by([(f"_p{i}", "ascending") for i in range(self.width)])
        schema = arrow_schema_of(self.targets[k].type_info)
        columns = [rows.column(f.name) for f in self._value_fields[k]]
        return pa.Table.from_arrays(columns, schema=schema)

    def frame(self, produced: Sequence[DataFrame], node_id: int) -> DataFrame:
        """The frame of target ``node_id`` from the frames ``produced`` that hold its records:
        their rows filtered and selected in the JVM; a user function's failure (a
        ``Shipment.FAILED`` row) fails it with the user's exception as text; sorted by position
        (in one partition) when the target is ordered."""
        from pyspark.sql import functions as F

        from sparktide.spark.stage_frames import union

        k = self._index[node_id]
        stage = F.col("stage")
        mine = (stage == Shipment.COLLECTED.value) & (F.col("target") == node_id)
        keep = F.when(stage == Shipment.FAILED.value, F.raise_error(F.col(_ERROR))).otherwise(mine)
        rows = union([df.filter(keep) for df in produced])
        if self.targets[k].ordered:  # one partition, merged there by the JVM
            rows = rows.repartition(1).sortWithinPartitions(*(f"_p{i}" for i in range(self.width)))
        # else each partition holds one subtask's records, already in position order
        names = arrow_schema_of(self.targets[k].type_info).names
        fields = self._value_fields[k]
        return rows.select(*(F.col(f.name).alias(n) for f, n in zip(fields, names, strict=True)))
