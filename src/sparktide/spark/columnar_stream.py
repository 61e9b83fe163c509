"""A built-in window aggregate of a streaming run, on Arrow columns, one micro-batch at a time.

A streaming job of the shape ``from_stream(...)`` (a timestamp column and a built-in strategy:
bounded out-of-orderness, monotonous or none, without idleness) → ``key_by("field")`` → a
tumbling or sliding event-time window with a built-in aggregate (``count()`` / ``agg(...)``, or
Flink's record: ``sum``/``min``/``max``/``min_by``/``max_by``; integer or string keys, integer
or double fields) →
streaming sinks of its main output (and of its late side output when that sink is typed as the
source's rows; a late-data tag without a sink is counted as the per-record path counts it) runs
each micro-batch (round = batch id) on the columnar split and engine of the bounded path
(:mod:`sparktide.spark.columnar_job`) instead of the per-record tasks, with the same output in
every batch, order included:

1. each split runs a :class:`~sparktide.runtime.columnar.split.SplitAggregator` continuing from
   its state of the previous batch (the :class:`~sparktide.spark.checkpoint_meta.SplitState`
   the per-record split writes: watermark, sequence number, the generator's highest timestamp)
   and ships partials, raw records and its periodic watermark;
2. each subtask restores its key groups exactly as the per-record subtask does
   (:meth:`StreamingJob.open_subtask <sparktide.spark.stream_job.StreamingJob>`: the worker
   cache or the checkpoint, rescaled by key-group range), reads the window operator's state as
   the engine's open windows (:mod:`sparktide.runtime.columnar.operator_state`), runs the
   :class:`~sparktide.runtime.columnar.engine.WindowEngine` on the batch, and writes the engine's
   windows back as the window operator's keyed state and timers, with the valve and watermarks,
   through the same checkpoint code. A checkpoint of either path restores with the other.

Other key or field types, idleness, lambdas, a late-data sink typed otherwise than the source's
rows and every other shape keep the per-record path, as does the option
``sparktide.execution.columnar`` = ``off``; the path choice
(:func:`~sparktide.runtime.execution.path.choose_path`) decides, this module builds.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from sparktide.core.window.aggregates import read_field
from sparktide.runtime.columnar.engine import EngineState, WindowEngine
from sparktide.runtime.columnar.operator_state import (
    AccumulatorLayout,
    RecordLayout,
    RestoredWindows,
    restore_windows,
    snapshot_windows,
)
from sparktide.runtime.columnar.plans import ColumnarPlans
from sparktide.runtime.columnar.spec import WindowAggregateSpec
from sparktide.runtime.columnar.split import (
    SplitAggregator,
    SplitResume,
    field_column,
    row_column,
)
from sparktide.runtime.execution.driver import SubtaskSession
from sparktide.runtime.execution.path import ExecutionPath, PathChoice
from sparktide.runtime.execution.planner import Plan
from sparktide.runtime.execution.protocol import Shipment
from sparktide.runtime.graph import SinkNode, SourceNode
from sparktide.runtime.processing_time import ManualProcessingTimeService
from sparktide.spark.checkpoint_meta import OperatorWatermarks, SplitState
from sparktide.spark.columnar_job import (
    POSITIONS,
    ColumnarSink,
    SplitTask,
    WindowAggregateShape,
    conform,
    named_rows,
    shipped_schema,
    shipped_table,
)
from sparktide.spark.frames import (
    arrow_schema_of,
    local_frame,
    records_of_batch,
    spark_schema_of,
)
from sparktide.spark.placement import placement_keys
from sparktide.spark.shipments import (
    Shipped,
    SubtaskReport,
    TaskCounts,
    TaskMetrics,
    decode_shipment,
)
from sparktide.spark.split_state import apply_generator_state, capture_generator_state
from sparktide.spark.stream_source import StreamSource

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from sparktide.runtime.columnar.engine import EnginePlan
    from sparktide.runtime.columnar.split import SplitPlan
    from sparktide.runtime.execution.tasks import JobTasks, SubtaskTask
    from sparktide.runtime.snapshot import KeyedOperatorSnapshot
    from sparktide.runtime.valve import StatusWatermarkValve
    from sparktide.spark.stream_job import StreamingJob

__all__ = ["ColumnarStream", "columnar_stream"]

_MAIN, _LATE, _DRIVER = 0, 1, 2  # what a result row is
_TO_DRIVER, _TO_SUBTASK = 0, 1  # where a split's row goes

STREAM_BLOBS = pa.schema(
    [
        ("dest", pa.int8()),
        ("target", pa.int32()),
        ("pkey", pa.int64()),
        ("payload", pa.binary()),
    ]
)
"""What a split task gives: per target subtask an Arrow IPC blob of shipped rows (``dest`` =
subtask), and the split's state for the driver (``dest`` = driver, ``target`` = the split)."""


class ColumnarStream:
    """An eligible streaming job (see the module docstring) and its micro-batches."""

    def __init__(
        self,
        plan: Plan,
        source: SourceNode,
        spec: WindowAggregateSpec,
        sinks: list[ColumnarSink],
        bound: int | None,
    ) -> None:
        self.plan = plan
        self.stream: StreamSource = source.source
        self.strategy = source.watermark_strategy
        self.spec = spec
        self.sinks = sinks
        stage = plan.stages[0]
        self.stage = stage
        self.splits = self.stream.num_splits
        timestamp = self.strategy.timestamp_assigner.column  # type: ignore[union-attr]
        plans = ColumnarPlans.of(
            spec,
            self.stream.columns,
            timestamp,
            bound=bound,
            every=None,
            parallelism=stage.parallelism,
            max_parallelism=stage.max_parallelism,
            splits=self.splits,
            late_rows=any(s.late for s in sinks),
            source="from_stream",
            operator=stage.entry.name,
        )
        self.fields, self.slots, self.columns = plans.fields, plans.slots, plans.columns
        self.split_plan, self.engine_plan = plans.split, plans.engine
        record, by = spec.field_aggregate, self.split_plan.by
        self.layout: AccumulatorLayout | RecordLayout = (
            AccumulatorLayout.of(spec.aggregates, self.slots, len(self.fields))
            if record is None
            else RecordLayout(self.fields[0], by or record.kind)
        )
        self.output_schema = arrow_schema_of(spec.output_type)

    # ------------------------------------------------------------------ one micro-batch

    def batch(self, frame: DataFrame, job: StreamingJob) -> _Batch:
        """The DataFrames of micro-batch ``job.version`` (lazy until :meth:`_Batch.collect`)."""
        from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

        prepared = self.stream.prepare(frame).select(*[f"`{c}`" for c in self.columns])
        zone = prepared.sparkSession.conf.get("spark.sql.session.timeZone")
        source_schema = to_arrow_schema(prepared.schema, timezone=zone)
        shipped = shipped_schema(self.split_plan, source_schema)
        keys = placement_keys(self.stage.parallelism)
        split_task = StreamSplitTask(self.split_plan, shipped, keys, job, self.strategy)
        splits = prepared.mapInArrow(split_task, from_arrow_schema(STREAM_BLOBS)).persist()
        spark = prepared.sparkSession
        beats = [(_TO_SUBTASK, t, keys[t], b"") for t in range(self.stage.parallelism)]
        heartbeats = local_frame(spark, beats, STREAM_BLOBS)
        result = self._result_schema(source_schema)
        subtask = StreamSubtaskTask(self, job, shipped, result)
        from pyspark.sql import functions as F

        results = (
            splits.filter(F.col("dest") == _TO_SUBTASK)
            .unionAll(heartbeats)
            .repartition(self.stage.parallelism, "pkey")
            .mapInArrow(subtask, from_arrow_schema(result))
            .persist()
        )
        return _Batch(self, splits, results)

    def _result_schema(self, source_schema: pa.Schema) -> pa.Schema:
        fields = [pa.field("out", pa.int8()), *(pa.field(p, pa.int64()) for p in POSITIONS)]
        fields += list(self.output_schema)
        if any(s.late for s in self.sinks):
            fields += [pa.field(row_column(f.name), f.type) for f in source_schema]
        fields += [
            pa.field("stage", pa.int32()),
            pa.field("target", pa.int32()),
            pa.field("payload", pa.binary()),
        ]
        return pa.schema(fields)


class _Batch:
    """One micro-batch's DataFrames: the splits' rows and the subtasks' results."""

    def __init__(self, stream: ColumnarStream, splits: DataFrame, results: DataFrame) -> None:
        self.stream = stream
        self.splits = splits
        self.results = results

    def driver_values(self) -> list[Shipped]:
        """What the batch tells the driver, as the per-record tasks tell it
        (:mod:`sparktide.spark.shipments`): the splits' states, the subtasks' reports and
        the tasks' metrics."""
        from pyspark.sql import functions as F

        states = self.splits.filter(F.col("dest") == _TO_DRIVER).select("target", "payload")
        split_state = Shipment.SPLIT_STATE.value
        values = [
            decode_shipment(split_state, r["target"], b"", r["payload"]) for r in states.collect()
        ]
        driver = self.results.filter(F.col("out") == _DRIVER).select("stage", "target", "payload")
        values += [
            decode_shipment(r["stage"], r["target"], b"", r["payload"]) for r in driver.collect()
        ]
        return values

    def frame(self, node: SinkNode) -> DataFrame:
        """The batch's DataFrame for streaming sink ``node``, in position order."""
        from pyspark.sql import functions as F

        sink = next(s for s in self.stream.sinks if s.node.id == node.id)
        rows = self.results.filter(F.col("out") == (_LATE if sink.late else _MAIN))
        rows = rows.repartition(1).sortWithinPartitions(*POSITIONS)
        schema = spark_schema_of(node.output_type)
        if sink.late:
            return rows.select(
                *[F.col(f"`{row_column(f.name)}`").cast(f.dataType).alias(f.name) for f in schema]
            )
        return rows.select(*[F.col(f"`{f.name}`").cast(f.dataType) for f in schema])

    def driver_records(self, node: SinkNode) -> None:
        """The sinks' records stay in Spark (:meth:`frame`)."""
        return None

    def unpersist(self) -> None:
        self.results.unpersist()
        self.splits.unpersist()


# ---------------------------------------------------------------------- worker functions


class StreamSplitTask(SplitTask):
    """``mapInArrow`` over a micro-batch's splits (partition = split): continues each split
    from its state of the previous batch and ships its state for the driver."""

    def __init__(
        self,
        plan: SplitPlan,
        schema: pa.Schema,
        keys: list[int],
        job: StreamingJob,
        strategy: object,
    ) -> None:
        super().__init__(plan, schema, keys)
        self.version = job.version
        self.split_states = job.split_states
        self.strategy = strategy
        self.targets = {int(k): t for t, k in enumerate(keys)}

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        context = TaskContext.get()
        split = context.partitionId() if context is not None else 0
        generator = self.strategy.create_watermark_generator()  # type: ignore[attr-defined]
        saved = self.split_states.get(split)
        resume = None
        if saved is not None:
            if saved.generator is not None:
                apply_generator_state(generator, saved.generator)
            max_ts = generator.snapshot_state() if self.plan.bound is not None else 0
            resume = SplitResume(saved.seq, int(max_ts), saved.watermark)
        aggregator = SplitAggregator(self.plan, split, resume, round_=self.version)
        for batch in batches:
            for table in aggregator.feed(pa.Table.from_batches([batch])):
                yield from self._to_subtasks(table)
        yield from self._to_subtasks(aggregator.end_round())
        if self.plan.bound is not None:
            generator.restore_state(aggregator.max_ts)
        state = SplitState(
            watermark=aggregator.emitted,
            idle=False,
            seq=aggregator.read,
            records=aggregator.read - aggregator.first_read,
            generator=capture_generator_state(generator),
        )
        yield _blobs(_TO_DRIVER, [split], [0], [state.to_bytes()])

    def _to_subtasks(self, table: pa.Table) -> Iterator[pa.RecordBatch]:
        for batch in self._ship(table):
            n = batch.num_rows
            pkeys = batch.column("pkey").to_pylist()
            targets = [self.targets[k] for k in pkeys]
            yield _blobs(_TO_SUBTASK, targets, pkeys, batch.column("payload").to_pylist(), n)


def _blobs(
    dest: int, targets: list[int], pkeys: list[int], payloads: list[bytes], n: int | None = None
) -> pa.RecordBatch:
    n = len(targets) if n is None else n
    return pa.RecordBatch.from_arrays(
        [
            pa.array(np.full(n, dest, np.int8)),
            pa.array(targets, pa.int32()),
            pa.array(pkeys, pa.int64()),
            pa.array(payloads, pa.binary()),
        ],
        schema=STREAM_BLOBS,
    )


class StreamSubtaskTask:
    """``mapInArrow`` over one subtask's input of a micro-batch: restore, run the engine,
    write the state back, emit fired windows, late records and the subtask's metrics."""

    def __init__(
        self, stream: ColumnarStream, job: StreamingJob, shipped: pa.Schema, result: pa.Schema
    ) -> None:
        self.job = job
        self.spec = stream.spec
        self.slots = stream.slots
        self.stage = stream.stage
        self.engine_plan: EnginePlan = stream.engine_plan
        self.layout = stream.layout
        self.output_schema = stream.output_schema
        self.shipped = shipped
        self.result = result

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        tables: list[pa.Table] = []
        target = -1
        for batch in batches:
            targets = batch.column("target").to_pylist()
            if targets:
                target = targets[0]
            tables += [
                pa.ipc.open_stream(blob).read_all()
                for blob in batch.column("payload").to_pylist()
                if blob
            ]
        if target < 0:
            return
        table = shipped_table(tables, self.shipped)
        try:
            yield from self.run(target, table)
        except Exception as exc:
            damaged = self.job.damaged_database(exc, self.stage, target)
            if damaged is not None:  # the local database is discarded: the retry restores
                raise damaged from exc
            raise

    def run(self, target: int, table: pa.Table) -> Iterator[pa.RecordBatch]:
        job, spec = self.job, self.spec
        tasks = job.base.tasks(ManualProcessingTimeService(job.now))
        # the per-record subtask, restored as the per-record path restores it
        task, session = job.open_subtask(tasks, self.stage, target)
        template = task.entry.snapshot_state()
        restored = restore_windows(
            template, self.layout, spec.size_ms, spec.allowed_lateness_ms, self._dtypes()
        )
        valve = task.valves[1]
        engine = WindowEngine(self.engine_plan)
        out = engine.run(table, self._engine_state(task, restored, valve))
        after = engine.state()
        session.close()
        for s, value in _watermark_inputs(table):  # the valve as the per-record subtask's
            valve.input_watermark(value, s, _Discard())
        report = self._save(tasks, target, after, template, restored, valve)

        if out.records is not None:  # Flink's record: the source row, named as the source
            main = out.records.rename_columns(
                [n[len(row_column("")) :] for n in out.records.column_names]
            )
        else:
            main = named_rows(out.fired, spec, self.slots, self.output_schema)
        yield from self._rows(_MAIN, out.fired_positions, main)
        if any(name.startswith(row_column("")) for name in self.result.names):
            yield from self._rows(_LATE, out.late_positions, out.late_rows)
        metrics = TaskMetrics(1, TaskCounts.of(out.metrics))
        yield from self._driver(Shipment.SUBTASK_METRICS, target, pickle.dumps(report))
        yield from self._driver(Shipment.METRICS, target, pickle.dumps(metrics))

    def _dtypes(self) -> list[np.dtype[np.generic]]:
        """The dtype of each field the engine holds."""
        dtypes: list[np.dtype[np.generic]] = [np.dtype(np.int64)] * self.engine_plan.fields
        for i, what in self.engine_plan.held:
            if what != "nn":
                column = self.shipped.field(field_column(what, i))
                dtypes[i] = np.dtype(column.type.to_pandas_dtype())
        return dtypes

    def _engine_state(
        self, task: SubtaskTask, restored: RestoredWindows, valve: StatusWatermarkValve
    ) -> EngineState:
        """The engine's state as the restored subtask holds it."""
        channels = np.asarray(
            [valve.channel_watermark(s) for s in range(self.engine_plan.splits)], np.int64
        )
        return EngineState(
            pa.array(restored.keys, self.shipped.field("key").type),
            restored.windows,
            channels,
            int(task.entry.current_watermark()),
            self._rows_of(restored.records) if self.engine_plan.records else None,
        )

    def _save(
        self,
        tasks: JobTasks,
        target: int,
        after: EngineState,
        template: KeyedOperatorSnapshot,
        restored: RestoredWindows,
        valve: StatusWatermarkValve,
    ) -> SubtaskReport:
        """Write the next version as the per-record subtask holding the engine's state
        ``after`` would; what it wrote and holds."""
        job, stage, spec = self.job, self.stage, self.spec
        saved = tasks.build_subtask(stage, target, ManualProcessingTimeService(job.now), None)
        named = self.layout if isinstance(self.layout, AccumulatorLayout) else None
        records = self._records_of(after.rows) if after.rows is not None else []
        snapshot = snapshot_windows(
            after,
            named,
            template,
            spec.size_ms,
            spec.allowed_lateness_ms,
            restored.next_seq,
            records,
        )
        saved.entry.initialize_state([snapshot])
        saved_session = SubtaskSession(saved, simulated=None)
        saved_session.open()
        marks: dict[str, OperatorWatermarks] = {}
        for node_id, op in saved.operators.items():
            manager = op.time_service_manager
            services = (
                dict.fromkeys(manager.services(), after.watermark) if manager is not None else {}
            )
            marks[job.identities[node_id]] = OperatorWatermarks(after.watermark, services)
        saved_session.restore_watermarks(marks, job.identities)
        saved.valves[1] = valve
        written = job.save_subtask(saved, stage, target)
        report = SubtaskReport(saved_session.metrics(), written)
        saved_session.close()
        return report

    def _rows_of(self, records: list[object]) -> pa.Table:
        """Windows' records (source rows) as the engine's row columns."""
        columns = self.engine_plan.columns
        return pa.table(
            {
                row_column(c): pa.array(
                    [read_field(r, c, "a window's record") for r in records],
                    self.shipped.field(row_column(c)).type,
                )
                for c in columns
            }
        )

    def _records_of(self, rows: pa.Table) -> list[object]:
        """The engine's row columns as the source's records (what the window operator holds)."""
        columns = list(self.engine_plan.columns)
        table = rows.select([row_column(c) for c in columns]).rename_columns(columns)
        return [r for batch in table.to_batches() for r in records_of_batch(batch, columns)]

    def _rows(self, kind: int, positions: np.ndarray, values: pa.Table) -> Iterator[pa.RecordBatch]:
        if not values.num_rows:
            return
        columns = {"out": pa.array(np.full(values.num_rows, kind, np.int8))}
        for i, p in enumerate(POSITIONS):
            columns[p] = pa.array(positions[:, i])
        for name in values.column_names:
            columns[name] = values.column(name)
        yield from conform(pa.table(columns), self.result).to_batches()

    def _driver(self, shipment: Shipment, target: int, payload: bytes) -> Iterator[pa.RecordBatch]:
        row = {
            "out": pa.array([_DRIVER], pa.int8()),
            "stage": pa.array([shipment.value], pa.int32()),
            "target": pa.array([target], pa.int32()),
            "payload": pa.array([payload], pa.binary()),
        }
        yield from conform(pa.table(row), self.result).to_batches()


def _watermark_inputs(table: pa.Table) -> list[tuple[int, int]]:
    """``(split, watermark)`` of the batch's watermark rows, in the order the valve gets them."""
    from sparktide.runtime.columnar.split import Kind

    kind = np.asarray(table.column("kind").to_numpy(zero_copy_only=False))
    rows = np.flatnonzero(kind == Kind.WATERMARK)
    if not len(rows):
        return []
    cols = {
        name: np.asarray(table.column(name).to_numpy(zero_copy_only=False), np.int64)[rows]
        for name in ("r", "phase", "s", "time")
    }
    order = np.lexsort((cols["s"], cols["phase"], cols["r"]))
    return list(zip(cols["s"][order].tolist(), cols["time"][order].tolist(), strict=True))


class _Discard:
    def emit_watermark(self, watermark: object) -> None:
        pass

    def emit_watermark_status(self, status: object) -> None:
        pass


# ---------------------------------------------------------------------- building


def columnar_stream(plan: Plan, choice: PathChoice) -> ColumnarStream | None:
    """The columnar form of a streaming job's ``plan`` when the path choice ``choice`` runs it
    on columns (``columnar-stream``), else ``None``: the choice checked its shape (see the
    module docstring)."""
    if choice.path is not ExecutionPath.COLUMNAR_STREAM:
        return None
    shape = WindowAggregateShape.of(plan)
    return ColumnarStream(plan, shape.source, shape.spec, shape.sinks, shape.bound)
