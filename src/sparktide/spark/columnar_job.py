"""A built-in window aggregate on Spark, on Arrow columns end to end.

A bounded job of the shape ``from_dataframe(...)`` (a timestamp column, a built-in watermark
strategy without idleness) → ``key_by("field")`` → a tumbling or sliding event-time window with
a built-in aggregate (``node.window_aggregate``) → collect sinks, ``to_dataframe()`` or
Spark-written sinks, runs here instead of through the per-record tasks:

1. every source partition (split) runs a :class:`~sparktide.runtime.columnar.split.
   SplitAggregator` in ``mapInArrow``: partial aggregates per round, key and pane, the few raw
   records that may meet a late or fired window, and the split's watermarks (for every
   subtask);
2. Spark's shuffle moves them to the subtask owning their key group (``repartition`` on a
   placement key, :mod:`sparktide.spark.placement`);
3. each subtask runs a :class:`~sparktide.runtime.columnar.engine.WindowEngine` in
   ``mapInArrow``, emitting fired windows and late records as Arrow rows with their positions
   as ``long`` columns, so sorting by them gives the per-record path's order.

The output equals the per-record path's (see :mod:`sparktide.runtime.columnar.engine` for
float sums). An unordered output whose records cannot be late runs in Spark's own engine
instead (:mod:`sparktide.spark.columnar_sql`). Whether a job runs here is the path choice's
(:func:`~sparktide.runtime.execution.path.choose_path`, with
:mod:`sparktide.spark.columnar_sources`): the option ``sparktide.execution.columnar`` = ``off``
keeps every job on the per-record path, ``python`` on this one.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparktide.common.types import Row
from sparktide.common.watermark_strategy import (
    AscendingTimestampsWatermarks,
    BoundedOutOfOrdernessWatermarks,
    NoWatermarksGenerator,
    WatermarkStrategy,
)
from sparktide.runtime.columnar.engine import POSITION_WIDTH, WindowEngine
from sparktide.runtime.columnar.plans import ColumnarPlans, column_of
from sparktide.runtime.columnar.spec import AggregateKind, OutputForm, WindowAggregateSpec
from sparktide.runtime.columnar.split import (
    SHIPPED,
    SplitAggregator,
    SplitPlan,
    field_column,
    row_column,
)
from sparktide.runtime.elements import StreamRecord
from sparktide.runtime.execution.path import ExecutionPath, PathChoice
from sparktide.runtime.execution.planner import Plan
from sparktide.runtime.execution.protocol import PAD
from sparktide.runtime.execution.tasks import SUMMED_METRICS
from sparktide.runtime.graph import OperatorNode, ProcessingNode, SinkNode, SourceNode
from sparktide.spark.columnar_sql import sql_frame
from sparktide.spark.dataframe_source import DataFrameSource
from sparktide.spark.frames import ColumnTimestampAssigner, arrow_schema_of, records_of_batch
from sparktide.spark.placement import placement_keys

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

__all__ = [
    "POSITIONS",
    "ColumnarJob",
    "columnar_job",
    "narrowed",
    "shipped_schema",
    "shipped_table",
]

_MAIN, _LATE, _METRICS = 0, 1, 2  # what a result row is
_POSITIONS = [f"p{i}" for i in range(POSITION_WIDTH)]
POSITIONS = _POSITIONS
"""The ``long`` columns of a result row's position (padded with ``PAD``)."""


def watermark_bound(strategy: WatermarkStrategy | None) -> tuple[bool, int | None]:
    """``(built_in, bound)``: whether the strategy's generator is a built-in one the columnar
    path reproduces, and its out-of-orderness bound (``None``: no watermarks)."""
    if strategy is None or strategy.idle_timeout is not None or strategy.is_ingestion_time:
        return False, None
    if not isinstance(strategy.timestamp_assigner, ColumnTimestampAssigner):
        return False, None
    generator = strategy.create_watermark_generator()
    if type(generator) is NoWatermarksGenerator:
        return True, None
    if type(generator) in (BoundedOutOfOrdernessWatermarks, AscendingTimestampsWatermarks):
        bounded = cast(BoundedOutOfOrdernessWatermarks, generator)
        return True, int(bounded.max_out_of_orderness)
    return False, None


def columns_fit(schema: StructType, columns: list[str], spec: WindowAggregateSpec) -> bool:
    """Whether the key is an integer or string column and every aggregated field an integer
    or double column of a source of ``schema`` (other types keep the per-record path)."""
    from pyspark.sql import types as T

    key = column_of(columns, spec.key.field)
    if key is None or not isinstance(schema[key].dataType, T.IntegralType | T.StringType):
        return False
    fields = [a.field for a in spec.aggregates if a.kind is not AggregateKind.COUNT]
    if spec.field_aggregate is not None:
        fields = [spec.field_aggregate.field]
    for field in fields:
        name = column_of(columns, field)
        if name is None or not isinstance(schema[name].dataType, T.IntegralType | T.DoubleType):
            return False
    return True


@dataclass(frozen=True)
class ColumnarSink:
    node: SinkNode
    late: bool  # the late-data side output, else the main output


class ColumnarJob:
    """An eligible job (see the module docstring) and the DataFrames that run it."""

    def __init__(
        self,
        plan: Plan,
        source: SourceNode,
        window: ProcessingNode,
        spec: WindowAggregateSpec,
        sinks: list[ColumnarSink],
        splits: int,
        every: int | None,
        bound: int | None,
        sql: bool = False,
    ) -> None:
        df_source: DataFrameSource = source.source
        self.sql = sql  # an unordered frame runs in Spark's engine when it can
        self.source = df_source
        self.window = window
        self.spec = spec
        self.sinks = sinks
        self.splits = splits
        stage = plan.stage_of[window.id]
        self.parallelism = stage.parallelism
        assigner_ts = source.watermark_strategy.timestamp_assigner  # type: ignore[union-attr]
        plans = ColumnarPlans.of(
            spec,
            df_source.columns,
            assigner_ts.column,  # type: ignore[union-attr]
            bound=bound,
            every=every,
            parallelism=stage.parallelism,
            max_parallelism=stage.max_parallelism,
            splits=splits,
            late_rows=any(s.late for s in sinks),
            operator=window.name,
        )
        self.fields, self.slots, self.columns = plans.fields, plans.slots, plans.columns
        self.split_plan, self.engine_plan = plans.split, plans.engine
        self.output_schema = arrow_schema_of(spec.output_type)

    # ------------------------------------------------------------------ frames

    def _schemas(self, source_schema: pa.Schema) -> tuple[pa.Schema, pa.Schema]:
        shipped = shipped_schema(self.split_plan, source_schema)
        rows = [pa.field(row_column(f.name), f.type) for f in source_schema]
        result = [pa.field("out", pa.int8()), *(pa.field(p, pa.int64()) for p in _POSITIONS)]
        result += list(self.output_schema) + rows
        result += [pa.field(f"m_{m}", pa.int64()) for m in (*SUMMED_METRICS, "rounds")]
        return shipped, pa.schema(result)

    def results(self, main_only: bool = False, positions: bool = True) -> DataFrame:
        """The lazy DataFrame of every subtask's result rows; ``main_only``: only the main
        output's rows and columns (with their positions if ``positions``), what a sink's
        DataFrame reads, so Spark converts no column it would drop."""
        from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

        prepared = self.source.prepared()
        if len(self.columns) < len(self.source.columns):  # a projection keeps the partitions
            prepared = prepared.select(*[f"`{c}`" for c in self.columns])
        zone = prepared.sparkSession.conf.get("spark.sql.session.timeZone")
        source_schema = to_arrow_schema(prepared.schema, timezone=zone)
        shipped, result = self._schemas(source_schema)
        if main_only:
            kept = [*(_POSITIONS if positions else ()), *self.output_schema.names]
            result = pa.schema([result.field(name) for name in kept])
        split_task = SplitTask(self.split_plan, shipped, placement_keys(self.parallelism))
        subtask = SubtaskTask(self, shipped, result, main_only)
        return (
            prepared.mapInArrow(split_task, from_arrow_schema(SHIPPED_BLOBS))
            .repartition(self.parallelism, "pkey")
            .mapInArrow(subtask, from_arrow_schema(result))
        )

    def frame(self, node_id: int, ordered: bool) -> DataFrame | None:
        """The DataFrame of the main output for sink ``node_id`` (``None``: not the main
        output; the per-record path serves it)."""
        sink = next((s for s in self.sinks if s.node.id == node_id), None)
        if sink is None or sink.late:
            return None
        if not ordered and self.sql:
            prepared = self.source.prepared()
            plan, spec, schema = self.split_plan, self.spec, self.output_schema
            native = sql_frame(prepared, plan, spec, self.slots, schema, self.parallelism)
            if native is not None:
                return native
        return self._main_frame(self.results(main_only=True, positions=ordered), ordered)

    def _main_frame(self, results: DataFrame, ordered: bool) -> DataFrame:
        from pyspark.sql import functions as F

        rows = results.filter(F.col("out") == _MAIN) if "out" in results.columns else results
        if ordered:
            rows = rows.repartition(1).sortWithinPartitions(*_POSITIONS)
        return rows.select(*[F.col(f"`{f.name}`") for f in self.output_schema])

    def run(self) -> dict[str, int]:
        """Run the job: collect sinks receive their records with positions, Spark-written
        sinks their DataFrame; returns the job's metrics."""
        from pyspark.sql import functions as F

        results = self.results().persist()
        try:
            to_driver = (
                results.filter(F.col("out") != _MAIN)
                if not any(s.node.collected is not None and not s.late for s in self.sinks)
                else results
            )
            table = to_driver.toArrow()
            metrics = self._deliver(table)
            for sink in self.sinks:
                if sink.node.frame_writer is not None:
                    sink.node.frame_writer(self._main_frame(results, False))
        finally:
            results.unpersist()
        return metrics

    def _deliver(self, table: pa.Table) -> dict[str, int]:
        import pyarrow.compute as pc

        out = table.column("out")
        metrics: dict[str, int] = {"rounds": 0, **dict.fromkeys(SUMMED_METRICS, 0)}
        m = table.filter(pc.equal(out, _METRICS))
        for name in SUMMED_METRICS:
            metrics[name] = int(pc.sum(m.column(f"m_{name}")).as_py() or 0)
        metrics["rounds"] = int(pc.max(m.column("m_rounds")).as_py() or 0)
        main = table.filter(pc.equal(out, _MAIN))
        late = table.filter(pc.equal(out, _LATE))
        named = self.spec.form is OutputForm.NAMED_ROW
        for sink in self.sinks:
            collected = sink.node.collected
            if collected is None:
                continue
            if sink.late:
                names = self.source.columns
                batch = late.select([row_column(c) for c in names]).rename_columns(names)
                stamps = late.column(row_column(self.split_plan.timestamp))
                times = _times(stamps)
                rows = _rows(batch)
                positions = _positions(late)
            else:
                names = self.output_schema.names
                rows = _rows(main.select(names))
                ends = main.column("window_end").to_pylist() if named else [None] * main.num_rows
                times = [None if t is None else t - 1 for t in ends]
                positions = _positions(main)
            collected.extend(
                (p, StreamRecord(v, t)) for p, v, t in zip(positions, rows, times, strict=True)
            )
        return metrics


def shipped_schema(plan: SplitPlan, source_schema: pa.Schema) -> pa.Schema:
    """What a split of ``plan`` ships over a source of ``source_schema``: the fixed columns,
    the placement key, the key, each field's partial aggregates and the source row."""
    key_type = source_schema.field(plan.key).type
    shipped = [*SHIPPED, pa.field("pkey", pa.int64()), pa.field("key", key_type)]
    for i, name in enumerate(plan.fields):
        t = source_schema.field(name).type
        number = pa.int64() if pa.types.is_integer(t) else pa.float64()
        for what in plan.field_aggregates(i):
            kind = pa.int64() if what == "nn" else number
            shipped.append(pa.field(field_column(what, i), kind))
    if plan.records:
        shipped.append(pa.field("ext_seq", pa.int64()))
    shipped += [pa.field(row_column(f.name), f.type) for f in source_schema]
    return pa.schema(shipped)


def _rows(table: pa.Table) -> list[Row]:
    return [r for batch in table.to_batches() for r in records_of_batch(batch)]


def _times(column: pa.ChunkedArray) -> list[int | None]:
    from sparktide.runtime.columnar.split import timestamps_of

    times: list[int | None] = timestamps_of(column, "timestamp").tolist()
    return times


def _positions(table: pa.Table) -> list[tuple[int, ...]]:
    matrix = (
        np.column_stack(
            [np.asarray(table.column(p).to_numpy(), dtype=np.int64) for p in _POSITIONS]
        )
        if table.num_rows
        else np.zeros((0, POSITION_WIDTH), np.int64)
    )
    return [tuple(v for v in row if v != PAD) for row in matrix.tolist()]


# ---------------------------------------------------------------------- worker functions


class SplitTask:
    """``mapInArrow`` over the source partitions: split ``partition`` (pickled into tasks)."""

    def __init__(self, plan: SplitPlan, schema: pa.Schema, keys: list[int]) -> None:
        self.plan = plan
        self.schema = schema
        self.keys = np.asarray(keys, np.int64)

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        context = TaskContext.get()
        split = context.partitionId() if context is not None else 0
        aggregator = SplitAggregator(self.plan, split)
        for batch in batches:
            for table in aggregator.feed(pa.Table.from_batches([batch])):
                yield from self._ship(table)
        yield from self._ship(aggregator.finish())

    def _ship(self, table: pa.Table) -> Iterator[pa.RecordBatch]:
        """``table``'s rows as one Arrow IPC blob per target subtask: Spark moves a few
        binary cells instead of converting every row and column twice."""
        if not table.num_rows:
            return
        target = np.asarray(table.column("target").to_numpy(), dtype=np.int64)
        table = conform(table, self.schema, fill=False).drop_columns(["target"])
        pkeys: list[int] = []
        blobs: list[bytes] = []
        if int(target.min()) == int(target.max()):  # one subtask: no reordering
            parts = [(int(target[0]), table)]
        else:
            order = np.argsort(target, kind="stable")
            bounds = np.flatnonzero(np.diff(target[order])) + 1
            parts = [(int(target[rows[0]]), table.take(rows)) for rows in np.split(order, bounds)]
        for to, part in parts:
            pkeys.append(int(self.keys[to]))
            blobs.append(_ipc_bytes(narrowed(part)))
        yield pa.RecordBatch.from_arrays(
            [pa.array(pkeys, pa.int64()), pa.array(blobs, pa.binary())], schema=SHIPPED_BLOBS
        )


class SubtaskTask:
    """``mapInArrow`` over one subtask's shuffled input: its fired windows, late records and
    metrics."""

    def __init__(
        self, job: ColumnarJob, shipped: pa.Schema, result: pa.Schema, main_only: bool
    ) -> None:
        self.engine_plan = job.engine_plan
        self.spec = job.spec
        self.slots = job.slots
        self.shipped = shipped
        self.result = result
        self.main_only = main_only  # only the main output (a sink's DataFrame)
        self.output_schema = job.output_schema

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        tables = [
            pa.ipc.open_stream(blob).read_all()
            for batch in batches
            for blob in batch.column("payload").to_pylist()
        ]
        if not tables:
            return
        table = shipped_table(tables, self.shipped)
        if not table.num_rows:
            return
        out = WindowEngine(self.engine_plan).run(table)
        if out.records is not None:  # Flink's record: the source row, named as the source
            main = out.records.rename_columns(
                [n[len(row_column("")) :] for n in out.records.column_names]
            )
        else:
            main = named_rows(out.fired, self.spec, self.slots, self.output_schema)
        yield from self._rows(_MAIN, out.fired_positions, main)
        if self.main_only:
            return
        yield from self._rows(_LATE, out.late_positions, out.late_rows)
        import pyarrow.compute as pc

        rounds = int(pc.max(table.column("r")).as_py()) + 1
        metrics = {f"m_{k}": pa.array([v], pa.int64()) for k, v in out.metrics.items()}
        metrics["m_rounds"] = pa.array([rounds], pa.int64())
        metrics["m_failed_records"] = pa.array([0], pa.int64())
        metrics["out"] = pa.array([_METRICS], pa.int8())
        yield from conform(pa.table(metrics), self.result).to_batches()

    def _rows(self, kind: int, positions: np.ndarray, values: pa.Table) -> Iterator[pa.RecordBatch]:
        if not values.num_rows:
            return
        columns = {"out": pa.array(np.full(values.num_rows, kind, np.int8))}
        for i, p in enumerate(_POSITIONS):
            if p in self.result.names:
                columns[p] = pa.array(positions[:, i])
        for name in values.column_names:
            columns[name] = values.column(name)
        yield from conform(pa.table(columns), self.result).to_batches()


def named_rows(
    fired: pa.Table, spec: WindowAggregateSpec, slots: tuple[int, ...], schema: pa.Schema
) -> pa.Table:
    """``Row(key, window_start, window_end, <aggregates>)`` columns of fired windows, in the
    output type's Arrow schema; ``slots[j]``: the aggregated field of aggregate ``j`` (an
    index into the engine's fields; ``-1`` for ``count``). An aggregate over no value that is
    not null is null, as on the per-record path."""
    start = np.asarray(fired.column("start").to_numpy(), dtype=np.int64)
    count = np.asarray(fired.column("count").to_numpy(), dtype=np.int64)
    values: list[pa.Array] = [
        fired.column("key").combine_chunks(),
        pa.array(start),
        pa.array(start + spec.size_ms),
    ]
    for agg, i in zip(spec.aggregates, slots, strict=True):
        if agg.kind is AggregateKind.COUNT:
            values.append(pa.array(count))
            continue
        nn = np.asarray(fired.column(field_column("nn", i)).to_numpy(), dtype=np.int64)
        empty = nn == 0
        if agg.kind is AggregateKind.AVG:
            total = np.asarray(fired.column(field_column("sum", i)).to_numpy(), dtype=np.float64)
            values.append(pa.array(total / np.where(empty, 1, nn), mask=empty))
        else:
            column = np.asarray(fired.column(field_column(agg.kind.value, i)).to_numpy())
            values.append(pa.array(column, mask=empty))
    return pa.table(
        [v.cast(f.type) for v, f in zip(values, schema, strict=True)],
        schema=schema,
    )


SHIPPED_BLOBS = pa.schema([("pkey", pa.int64()), ("payload", pa.binary())])
"""What a split task gives Spark's shuffle: per target subtask (``pkey`` places it), a blob of
shipped rows in Arrow's IPC stream format (:func:`_ipc_bytes`)."""


def _ipc_bytes(table: pa.Table) -> bytes:
    """``table`` as an Arrow IPC stream.

    >>> t = pa.table({"a": [1, 2]})
    >>> pa.ipc.open_stream(_ipc_bytes(t)).read_all().equals(t)
    True
    """
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue())


def narrowed(table: pa.Table) -> pa.Table:
    """``table`` with each ``int64`` column whose values all fit in an ``int32`` narrowed to
    one: less for Spark's shuffle to move (:func:`shipped_table` widens them back).

    Nulls stay nulls.

    >>> t = narrowed(pa.table({"a": [1, None, -2], "b": [1, None, 2**40]}))
    >>> t.schema.types
    [DataType(int32), DataType(int64)]
    >>> t.column("a").to_pylist()
    [1, None, -2]
    """
    columns = []
    for column in table.columns:
        if column.type == pa.int64() and len(column):
            bounds = pc.min_max(column)
            low, high = bounds["min"].as_py(), bounds["max"].as_py()
            if low is None or (_INT32.min <= low and high <= _INT32.max):
                column = column.cast(pa.int32())
        columns.append(column)
    return pa.table(columns, names=table.column_names)


_INT32 = np.iinfo(np.int32)


def shipped_table(tables: list[pa.Table], shipped: pa.Schema) -> pa.Table:
    """The shipped rows of ``tables`` (blobs read back) in the ``shipped`` schema: columns a
    blob left out are null, narrowed ones (:func:`narrowed`) are widened back.

    >>> schema = pa.schema([("a", pa.int64()), ("b", pa.int8())])
    >>> shipped_table([pa.table({"a": pa.array([1], pa.int32())})], schema).to_pylist()
    [{'a': 1, 'b': None}]
    """
    if not tables:
        return shipped.empty_table()
    columns = []
    for f in shipped:
        parts = []
        for t in tables:
            if f.name not in t.column_names:
                parts.append(pa.nulls(t.num_rows, f.type))
                continue
            for chunk in t.column(f.name).chunks:
                parts.append(chunk if chunk.type == f.type else chunk.cast(f.type))
        columns.append(pa.concat_arrays(parts) if parts else pa.array([], f.type))
    return pa.table(columns, schema=shipped)


def conform(table: pa.Table, schema: pa.Schema, fill: bool = True) -> pa.Table:
    """``table`` in ``schema``'s column order and types: missing columns as nulls, or with
    ``fill=False`` left out (a shipped blob carries only what its rows hold)."""
    n = table.num_rows
    fields, columns = [], []
    for f in schema:
        if f.name in table.column_names:
            columns.append(table.column(f.name).cast(f.type))
        elif fill:
            columns.append(pa.nulls(n, f.type))
        else:
            continue
        fields.append(f)
    return pa.table(columns, schema=pa.schema(fields))


# ---------------------------------------------------------------------- building


@dataclass(frozen=True)
class WindowAggregateShape:
    """The parts of a job the path choice runs on columns: its one source, the window with a
    built-in aggregate that reads it, the window's ``spec``, the sinks after it and the
    watermark strategy's out-of-orderness ``bound``."""

    source: SourceNode
    window: OperatorNode
    spec: WindowAggregateSpec
    sinks: list[ColumnarSink]
    bound: int | None

    @classmethod
    def of(cls, plan: Plan) -> WindowAggregateShape:
        """The parts of ``plan``, which the path choice ran on columns (it checked the
        shape: a plan of another shape is a bug, said as such)."""
        source, stage = plan.sources[0], plan.stages[0]
        window = stage.entry
        sink_nodes = [n for n in stage.nodes[1:] if isinstance(n, SinkNode)]
        if (
            not isinstance(window, OperatorNode)
            or window.window_aggregate is None
            or len(sink_nodes) != len(stage.nodes) - 1
        ):
            raise ValueError(
                f"the path choice ran {window.name!r} on columns, but it is no built-in "
                "window aggregate followed by sinks"
            )
        spec = window.window_aggregate
        sinks = [ColumnarSink(n, plan.edges_in[n.id][0].tag is not None) for n in sink_nodes]
        _, bound = watermark_bound(source.watermark_strategy)
        return cls(source, window, spec, sinks, bound)


def columnar_job(
    plan: Plan, splits: int, every: int | None, choice: PathChoice
) -> ColumnarJob | None:
    """The columnar form of ``plan`` when the path choice ``choice`` runs it on columns
    (``columnar-python`` or ``columnar-sql``), else ``None``: the choice checked its shape
    (see the module docstring)."""
    if choice.path not in (ExecutionPath.COLUMNAR_PYTHON, ExecutionPath.COLUMNAR_SQL):
        return None
    shape = WindowAggregateShape.of(plan)
    sql = choice.path is ExecutionPath.COLUMNAR_SQL
    return ColumnarJob(
        plan, shape.source, shape.window, shape.spec, shape.sinks, splits, every, shape.bound, sql
    )
