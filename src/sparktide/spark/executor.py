"""Run a planned job on Spark: one Spark task per source split and per stage subtask.

The same tasks as the local runtime (:mod:`sparktide.runtime.execution`) run inside Python
workers through ``mapInArrow``:

1. **Source stage.** A DataFrame source runs on the DataFrame's own partitions (one split each);
   every other split is a row of ``spark.range`` with one partition per split. Each task runs its
   split's chain (timestamp assigner and watermark generator per split) in rounds of
   ``watermark_every`` records, exactly as the local runtime does, and emits exchange entries.
2. **Exchange stages**, in topological order. The entries for a stage (from the source stage and
   earlier stages) are shuffled to the partition of their target subtask, sorted by
   ``(target, position)`` within the partition, and processed by that subtask's operators.
   Watermarks travel in-band: an exchange writes a copy for every subtask.
3. **Sinks.** User sinks run in the workers; ``execute_and_collect`` results and ``print()``
   lines come back to the driver as rows and are delivered (printed) in position order.

Each task is a transport for the sessions of :mod:`sparktide.runtime.execution.driver`: a source
task runs a :class:`~sparktide.runtime.execution.driver.RoundLoop` over its split, a stage task a
:class:`~sparktide.runtime.execution.driver.SubtaskSession` over its merged input.

Rows between steps have the columns ``stage`` (the target stage, or for the driver a
:class:`~sparktide.runtime.execution.protocol.Shipment`: collected results, metrics, printed
lines, a failure), ``target`` (subtask, or the collecting sink's node id),
``pkey`` (a value that Spark's hash partitioning sends to the target's partition), ``position``
(the first position of the row, as sortable bytes) and ``payload``: a pickled chunk of up to
``CHUNK`` items for that target, each with its position, in position order. A subtask merges its
chunks by position before it processes them. The whole run is one Spark job (adaptive execution
is off while it runs, :func:`without_adaptive_execution`). Since every subtask processes the
same entries in the same order as on the local runtime, the output is the same as the local
runtime's, at any parallelism.
"""

from __future__ import annotations

import pickle
import sys
import time
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import reduce
from itertools import groupby
from operator import itemgetter
from typing import TYPE_CHECKING, TypeVar, cast

from sparktide.runtime.execution.driver import (
    JobEnvironment,
    RoundLoop,
    SimulatedTime,
    SplitSession,
    SubtaskSession,
)
from sparktide.runtime.execution.planner import SOURCE_STAGE, Plan, plan_job
from sparktide.runtime.execution.protocol import (
    FIRST_STAGE,
    Entry,
    Position,
    Shipment,
    decode_position,
    encode_position,
)
from sparktide.runtime.execution.tasks import SUMMED_METRICS, JobTasks
from sparktide.runtime.graph import JobGraph
from sparktide.runtime.mailbox import Mailbox
from sparktide.runtime.operators.simple import (
    CollectSinkOperator,
    PrintSinkOperator,
    RecordCollector,
)
from sparktide.runtime.processing_time import (
    ManualProcessingTimeService,
    ProcessingTimeService,
    SystemProcessingTimeService,
)
from sparktide.spark.dataframe_source import DataFrameSource
from sparktide.spark.failures import (
    failure_of_mark,
    failure_payload,
    raise_first_failure,
    upstream_failed,
)
from sparktide.spark.frame_types import (
    NotInferableError,
    Shape,
    merge,
    shape_of,
    type_of_shapes,
)
from sparktide.spark.frames import spark_schema_of, to_record_batch
from sparktide.spark.pickling import check_picklable
from sparktide.spark.placement import placement_keys
from sparktide.spark.progress import SparkProgress
from sparktide.spark.session import get_spark, is_connect
from sparktide.spark.stream_sinks import batch_sink_of

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, Row
    from pyspark.sql.conf import RuntimeConfig

    from sparktide.common.typeinfo import TypeInformation
    from sparktide.runtime.elements import StreamRecord

__all__ = ["SparkExecutor", "SparkJob", "without_adaptive_execution"]

_COLLECTED = Shipment.COLLECTED.value
_METRICS = Shipment.METRICS.value
_PRINTED = Shipment.PRINTED.value
_FAILED = Shipment.FAILED.value
CHUNK = 8192  # items per shipped row
FLUSH = 65536  # items a task holds before it ships them

#: what a run turns off on the session while it runs (and restores after): adaptive execution
#: would submit a job per shuffle and may coalesce partitions, but each subtask must keep its
#: own shuffle partition
NO_ADAPTIVE = ("spark.sql.adaptive.enabled", "spark.sql.adaptive.coalescePartitions.enabled")


@contextmanager
def without_adaptive_execution(conf: RuntimeConfig) -> Iterator[None]:
    """Turn off adaptive execution (:data:`NO_ADAPTIVE`) on a session while inside; the
    session's own values (or their absence) come back when the block ends or fails."""
    saved = {key: conf.get(key, None) for key in NO_ADAPTIVE}
    for key in NO_ADAPTIVE:
        conf.set(key, "false")
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                conf.unset(key)
            else:
                conf.set(key, value)


_Shipped = TypeVar("_Shipped", bound="tuple[object, ...]")  # an entry, record or line


_position = itemgetter(0)  # of an entry, or of a collected record or printed line


def _first_position(chunk: list[_Shipped]) -> Position:
    """The position of a shipped chunk's first item (every item starts with its position)."""
    return cast("Position", chunk[0][0])


_by_position_and_channel = itemgetter(0, 1)  # as the local runtime orders a stage's input


def arrow_row_schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema(
        [
            ("stage", pa.int32()),
            ("target", pa.int32()),
            ("pkey", pa.int64()),
            ("position", pa.binary()),
            ("payload", pa.binary()),
        ]
    )


SPARK_SCHEMA = "stage int, target int, pkey long, position binary, payload binary"


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class SparkJob:
    """What the workers need to run any task of one job (pickled into every task): the
    transport of :mod:`sparktide.runtime.execution.driver`'s sessions over Arrow rows."""

    def __init__(
        self,
        plan: Plan,
        job_parameters: dict[str, str],
        watermark_every: int | None,
        simulated: tuple[int, int] | None,
        placement: dict[int, list[int]],
        chunk: int = CHUNK,
        flush: int = FLUSH,
    ) -> None:
        self.plan = plan
        self.job_parameters = job_parameters
        self.every = watermark_every
        self.simulated = SimulatedTime.of(simulated)
        self.placement = placement  # parallelism -> pkey per target subtask
        self.chunk = chunk  # items per shipped row
        self.flush = flush  # items a task holds before it ships them
        self.range_splits: list[int] = []  # global indexes of the splits run by spark.range

    # ------------------------------------------------------------------ helpers

    def _clock(self) -> tuple[ProcessingTimeService, Mailbox | None]:
        if self.simulated is not None:
            return ManualProcessingTimeService(self.simulated.start), None
        mailbox = Mailbox()
        return SystemProcessingTimeService(mailbox), mailbox

    def _source_clock(self) -> ManualProcessingTimeService:
        if self.simulated is not None:
            return ManualProcessingTimeService(self.simulated.start)
        clock = ManualProcessingTimeService(0)
        clock.get_current_processing_time = _wall_clock_ms  # type: ignore[method-assign]
        return clock

    def tasks(self, source_clock: ProcessingTimeService) -> JobTasks:
        """The task builder of one worker task (sinks and prints collect for the driver)."""
        return JobTasks(
            self.plan, self.job_parameters, source_clock, ship_prints=True, frame_sinks=True
        )

    def rows(self, tasks: JobTasks, rounds: int, final: bool = True) -> pa.RecordBatch:
        """The task's output as Arrow rows: its exchange entries for each (stage, subtask), its
        collected records and printed lines, in chunks of at most ``CHUNK`` items (a pickled
        list of ``(position, ...)`` tuples, each chunk in position order), and its metrics."""
        import pyarrow as pa

        columns: tuple[list[object], ...] = ([], [], [], [], [])

        def add(stage: int, target: int, pkey: int, items: list[_Shipped]) -> None:
            for i in range(0, len(items), self.chunk):
                chunk = items[i : i + self.chunk]
                for column, value in zip(
                    columns,
                    (
                        stage,
                        target,
                        pkey,
                        encode_position(_first_position(chunk)),
                        pickle.dumps(chunk, 5),
                    ),
                    strict=True,
                ):
                    column.append(value)
            items.clear()

        for stage in self.plan.stages:
            keys = self.placement[stage.parallelism]
            for target, entries in enumerate(tasks.buffers[stage.index]):
                add(stage.index, target, keys[target], entries)
        for op in tasks.operators:
            if isinstance(op, CollectSinkOperator) and isinstance(op._sink, RecordCollector):
                add(Shipment.COLLECTED.value, op._sink.node_id, 0, op._sink.out)
            elif isinstance(op, PrintSinkOperator) and op.shipped:
                add(Shipment.PRINTED.value, 0, 0, op.shipped)
        if final:
            metrics = {"rounds": rounds, **tasks.metrics()}
            row = (Shipment.METRICS.value, 0, 0, b"", pickle.dumps(metrics))
            for column, value in zip(columns, row, strict=True):
                column.append(value)
        types = (pa.int32(), pa.int32(), pa.int64(), pa.binary(), pa.binary())
        return pa.RecordBatch.from_arrays(
            [pa.array(c, t) for c, t in zip(columns, types, strict=True)], schema=arrow_row_schema()
        )

    def driver_row(self, shipment: Shipment, target: int, payload: bytes) -> pa.RecordBatch:
        """One Arrow row for the driver carrying ``payload``."""
        import pyarrow as pa

        row = {
            "stage": shipment.value,
            "target": target,
            "pkey": 0,
            "position": b"",
            "payload": payload,
        }
        return pa.RecordBatch.from_pylist([row], schema=arrow_row_schema())

    # ------------------------------------------------------------------ failures

    def failed(
        self, tasks: JobTasks, exc: Exception, stage_index: int, batch: int | None = None
    ) -> Iterator[pa.RecordBatch]:
        """The rows of a task whose user function raised ``exc`` (see
        :mod:`sparktide.spark.failures`) in micro-batch ``batch`` (``None``: a bounded run);
        what the task holds is dropped. An exception raised outside the operators is raised as
        it is."""
        context = tasks.describe(exc, batch)
        if context is None:
            raise exc
        position = encode_position(tasks.cursor.position)
        yield self.failure_rows(stage_index, position, failure_payload(exc, context))

    def failure_rows(self, stage_index: int, position: bytes, payload: bytes) -> pa.RecordBatch:
        """The failure for the driver, and for every subtask of the stages after
        ``stage_index`` a mark that carries it (:func:`upstream_failed`): such a subtask
        processes nothing and passes the failure on, so every frame of the job holds it."""
        import pyarrow as pa

        rows = [(Shipment.FAILED.value, 0, 0, position, payload)]
        mark = upstream_failed(position, payload)
        for stage in self.plan.stages:
            if stage.index > stage_index:
                keys = self.placement[stage.parallelism]
                rows.extend((stage.index, t, keys[t], b"", mark) for t in range(stage.parallelism))
        names = arrow_row_schema().names
        return pa.RecordBatch.from_pylist(
            [dict(zip(names, row, strict=True)) for row in rows], schema=arrow_row_schema()
        )

    # ------------------------------------------------------------------ source stage

    def _buffered(self, tasks: JobTasks) -> int:
        """How many items the task holds for shipping."""
        n = sum(len(entries) for per_stage in tasks.buffers.values() for entries in per_stage)
        for op in tasks.operators:
            if isinstance(op, CollectSinkOperator) and isinstance(op._sink, RecordCollector):
                n += len(op._sink.out)
            elif isinstance(op, PrintSinkOperator) and op.shipped:
                n += len(op.shipped)
        return n

    def flush_rows(self, tasks: JobTasks) -> Iterator[pa.RecordBatch]:
        """Ship what the task holds once it reaches ``flush`` items (bounded worker memory)."""
        if self._buffered(tasks) >= self.flush:
            yield self.rows(tasks, 0, final=False)

    def run_split(
        self, g: int, records: Iterable[object] | None = None
    ) -> Iterator[pa.RecordBatch]:
        """Source split ``g``: its rounds, shipping its output as it grows."""
        clock = self._source_clock()
        tasks = self.tasks(clock)
        try:
            session = SplitSession(tasks.build_split(g, records), self.every, self.flush)
            session.open()
            loop = RoundLoop([session], clock, self.simulated)
            for _ in loop.steps():
                yield from self.flush_rows(tasks)
            session.finish()
            session.close()
            yield self.rows(tasks, loop.rounds)
        except Exception as exc:
            yield from self.failed(tasks, exc, SOURCE_STAGE)

    def source_task(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Runs the splits listed in ``self.range_splits`` (one per ``spark.range`` row)."""
        for batch in batches:
            for i in batch.column(0).to_pylist():
                yield from self.run_split(self.range_splits[int(i)])

    def frame_source_task(
        self, first_split: int, node_id: int
    ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
        """Runs split ``first_split + partition`` of a DataFrame source on its partition."""

        def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            from pyspark import TaskContext

            context = TaskContext.get()
            partition = context.partitionId() if context is not None else 0
            node = next(n for n in self.plan.sources if n.id == node_id)
            records = node.source.records(batches)
            yield from self.run_split(first_split + partition, records)

        return run

    # ------------------------------------------------------------------ exchange stages

    def run_subtask(
        self, stage_index: int, target: int, rows: Iterable[tuple[bytes, bytes]]
    ) -> Iterator[pa.RecordBatch]:
        """Subtask ``target`` of a stage. ``rows``: its input chunks ``(first position,
        payload)`` sorted by first position; they are merged by position and processed as soon
        as no later chunk can precede them, and the output is shipped as it grows, so a worker
        holds about ``flush`` entries at a time, not the whole input and output."""
        tasks = self.tasks(self._source_clock())
        try:
            yield from self._run_subtask(tasks, stage_index, target, rows)
        except Exception as exc:
            yield from self.failed(tasks, exc, stage_index)

    def _run_subtask(
        self, tasks: JobTasks, stage_index: int, target: int, rows: Iterable[tuple[bytes, bytes]]
    ) -> Iterator[pa.RecordBatch]:
        stage = self.plan.stages[stage_index]
        clock, mailbox = self._clock()
        session = SubtaskSession(tasks.build_subtask(stage, target, clock, mailbox), self.simulated)
        session.open()
        pool: list[Entry] = []
        for first, payload in rows:
            failed = failure_of_mark(payload)
            if failed is not None:  # sorted first: nothing was processed yet
                clock.shutdown()
                yield self.failure_rows(stage_index, *failed)
                return
            if len(pool) >= self.flush:  # process what no chunk from here on can precede
                pool.sort(key=_by_position_and_channel)
                cut = bisect_left(pool, decode_position(first), key=_position)
                session.process(pool[:cut])
                del pool[:cut]
                yield from self.flush_rows(tasks)
            pool.extend(pickle.loads(payload))
        pool.sort(key=_by_position_and_channel)
        session.process(pool)
        pool.clear()
        session.finish()
        session.close()
        yield self.rows(tasks, session.rounds)

    def stage_task(
        self, stage_index: int
    ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
        def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            def rows() -> Iterator[tuple[int, bytes, bytes]]:
                for batch in batches:
                    yield from zip(
                        batch.column("target").to_pylist(),
                        batch.column("position").to_pylist(),
                        batch.column("payload").to_pylist(),
                        strict=True,
                    )

            for target, group in groupby(rows(), key=itemgetter(0)):
                yield from self.run_subtask(stage_index, target, (row[1:] for row in group))

        return run


class _ShapeScanner:
    """Describes the values of a partition's collected chunks: one row (pickled
    :class:`~sparktide.spark.frame_types.Shape` or the reason there is none, count), and one row
    per failure of the job (its pickled ``RemoteFailure``)."""

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        loads = pickle.loads
        shape: Shape | None = None
        error: str | None = None
        count = 0
        failures: list[bytes] = []
        try:
            for batch in batches:
                stages = batch.column(0).to_pylist()
                for stage, payload in zip(stages, batch.column(1).to_pylist(), strict=True):
                    if stage == _FAILED:
                        failures.append(payload)
                        continue
                    for _, record in loads(payload):
                        shape = merge(shape, shape_of(record.value))
                        count += 1
        except NotInferableError as exc:
            error = str(exc)
        yield pa.RecordBatch.from_pydict(
            {
                "shape": [pickle.dumps(shape), *(None for _ in failures)],
                "error": [error, *(None for _ in failures)],
                "records": [count, *(0 for _ in failures)],
                "failure": [None, *failures],
            },
            schema=_shape_schema(),
        )


def _shape_schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema(
        [
            ("shape", pa.binary()),
            ("error", pa.string()),
            ("records", pa.int64()),
            ("failure", pa.binary()),
        ]
    )


def _inferred_type(rows: DataFrame, caller: str) -> TypeInformation:
    """The type of the records in the collected ``rows`` (one Spark job over them); the user's
    error if a function of the job raised."""
    described = (
        rows.select("stage", "payload")
        .mapInArrow(_ShapeScanner(), "shape binary, error string, records long, failure binary")
        .collect()
    )
    # a user function raised: its error, not a frame of partial input
    raise_first_failure([(b"", r["failure"]) for r in described if r["failure"] is not None])
    return type_of_shapes(
        [(pickle.loads(r["shape"]), r["error"], r["records"]) for r in described],
        caller,
    )


class _FrameDecoder:
    """Turns chunks of collected records into Arrow batches of the stream's columns;
    ``ordered``: the partition holds every chunk, merged here in position order."""

    def __init__(self, type_info: TypeInformation | None, ordered: bool) -> None:
        self.type_info = type_info
        self.ordered = ordered

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        loads = pickle.loads

        def payloads() -> Iterator[bytes]:
            for batch in batches:
                stages = batch.column(0).to_pylist()
                for stage, payload in zip(stages, batch.column(1).to_pylist(), strict=True):
                    if stage == _FAILED:  # the stream's input is incomplete: no frame of it
                        raise_first_failure([(b"", payload)])
                    yield payload

        chunks: Iterator[list[tuple[Position, StreamRecord]]] = (loads(p) for p in payloads())
        if self.ordered:
            merged = [item for chunk in chunks for item in chunk]
            merged.sort(key=_position)
            chunks = (merged[i : i + CHUNK] for i in range(0, len(merged), CHUNK))
        for chunk in chunks:
            yield to_record_batch([record.value for _, record in chunk], self.type_info)


class SparkExecutor:
    """Runs one job graph on a SparkSession (the active one, or an embedded local one)."""

    chunk_items = CHUNK  # items per shipped row
    flush_items = FLUSH  # items a task holds before it ships them

    def __init__(self, graph: JobGraph, env: JobEnvironment) -> None:
        self.env = env
        self.config = env.get_config()
        self.plan = plan_job(graph, env.get_parallelism(), env.get_max_parallelism())
        check_picklable(self.plan)
        self.spark = get_spark()
        self.tasks = JobTasks(self.plan, {}, None)  # the split layout (computed on the driver)

    def __getstate__(self) -> dict[str, object]:
        """What a streaming job's ``foreachBatch`` function needs where Spark Connect runs it
        (on the server): the plan, without the session and the environment of the client."""
        state = dict(self.__dict__)
        state["spark"] = state["env"] = state["config"] = None
        return state

    def job(self) -> SparkJob:
        """What the workers run (the same for every batch of a streaming run)."""
        plan = self.plan
        return SparkJob(
            plan,
            self.config.get_global_job_parameters(),
            self.config.get_watermark_every(),
            self.config.get_simulated_processing_time(),
            {s.parallelism: placement_keys(s.parallelism) for s in plan.stages},
            self.chunk_items,
            self.flush_items,
        )

    def _source_frames(self, job: SparkJob) -> list[DataFrame]:
        """The source stage: DataFrame sources run on their own partitions, every other split
        as one row of ``spark.range``."""
        frames = []
        g = 0
        for node, n in zip(self.plan.sources, self.tasks.split_counts, strict=True):
            if isinstance(node.source, DataFrameSource):
                prepared = node.source.prepared()
                task = prepared.mapInArrow(job.frame_source_task(g, node.id), SPARK_SCHEMA)
                # an exchange right above the task: it runs in the map stage of that exchange,
                # whose task i reads partition i (in a union, task ids would be shifted)
                frames.append(task.repartition(n))
            else:
                job.range_splits.extend(range(g, g + n))
            g += n
        if job.range_splits:
            k = len(job.range_splits)
            frames.insert(0, self.spark.range(0, k, 1, k).mapInArrow(job.source_task, SPARK_SCHEMA))
        return frames

    def build(self, keep: Callable[[DataFrame], DataFrame] = lambda df: df) -> list[DataFrame]:
        """The job as lazy DataFrames of rows, one per source frame and per stage (``keep`` is
        applied to each as it is built, e.g. ``persist``)."""
        from pyspark.sql import functions as F

        job = self.job()
        produced = [keep(df) for df in self._source_frames(job)]
        self.origins: list[int] = [SOURCE_STAGE] * len(produced)
        for stage in self.plan.stages:
            inputs = [df.filter(F.col("stage") == stage.index) for df in produced]
            if not inputs:
                continue
            merged = reduce(lambda a, b: a.unionAll(b), inputs)
            result = (
                merged.repartition(stage.parallelism, "pkey")
                .sortWithinPartitions("target", "position")
                .mapInArrow(job.stage_task(stage.index), SPARK_SCHEMA)
            )
            produced.append(keep(result))
            self.origins.append(stage.index)
        return produced

    def run(self) -> dict[str, int]:
        """Run every sink: user sinks in the workers, Spark-written sinks through their
        ``frame_writer``, collected results and printed lines back to the driver. Adaptive
        execution is off while it runs (one Spark job for the whole run)."""
        with without_adaptive_execution(self.spark.conf):
            return self._run()

    def _run(self) -> dict[str, int]:
        from pyspark.sql import functions as F

        produced = self.build(lambda df: df.persist())
        written = [n for n in self.plan.nodes if n.frame_writer is not None]
        metrics: dict[str, int] = {"rounds": 0, **dict.fromkeys(SUMMED_METRICS, 0)}
        try:
            if produced:
                to_driver = F.col("stage") < FIRST_STAGE
                if written:
                    to_driver &= ~(
                        (F.col("stage") == _COLLECTED)
                        & F.col("target").isin([n.id for n in written])
                    )
                final = reduce(
                    lambda a, b: a.unionAll(b), [df.filter(to_driver) for df in produced]
                )
                listener = self.config.get_progress_listener()
                if listener is None or is_connect(self.spark):  # Connect: no status tracker
                    collected = final.collect()
                else:
                    with SparkProgress(self.spark.sparkContext, listener):
                        collected = final.collect()
                self._deliver(collected, metrics)
                for node in written:
                    # sinks that write the stream's own columns need them typed (FileSink
                    # turns records into its row type: pickled values are its transport)
                    infer = (
                        None if batch_sink_of(node.frame_writer) is None else f"sink {node.name!r}"
                    )
                    frame = self.collected_frame(produced, node.id, node.output_type, False, infer)
                    node.frame_writer(frame)  # type: ignore[misc]
        finally:
            for df in produced:
                df.unpersist()
        return metrics

    def frame(
        self, node_id: int, type_info: TypeInformation | None, ordered: bool = True
    ) -> DataFrame:
        """A lazy DataFrame of what collect sink ``node_id`` receives, in columns of
        ``type_info`` (:mod:`sparktide.spark.frames`); ``ordered``: sorted by position, so a
        ``collect()`` gives ``execute_and_collect``'s order. The frame runs the job when the
        user reads it, so the session keeps coalescing of shuffle partitions off (each subtask
        keeps its own partition)."""
        self.spark.conf.set("spark.sql.adaptive.coalescePartitions.enabled", "false")
        produced = self.build()
        plan = self.plan
        origin = SOURCE_STAGE if node_id in plan.source_stage else plan.stage_of[node_id].index
        # only the frames of the sink's own stage: the lazy plan then computes every other
        # frame once, as the input of the stage that needs it (user functions run once)
        own = [df for df, o in zip(produced, self.origins, strict=True) if o == origin]
        if type_info is None:
            # the records decide the columns: the job runs now, once, and what the sink
            # collected is kept (truncating the plan) for the inference and the DataFrame
            checkpointed = [df.localCheckpoint() for df in own or produced]
            return self.collected_frame(checkpointed, node_id, None, ordered, "to_dataframe()")
        return self.collected_frame(own or produced, node_id, type_info, ordered)

    def collected_frame(
        self,
        produced: list[DataFrame],
        node_id: int,
        type_info: TypeInformation | None,
        ordered: bool,
        infer_for: str | None = None,
    ) -> DataFrame:
        """The DataFrame of collect sink ``node_id`` in the columns of ``type_info``; without
        one, of the type inferred from the records (:mod:`sparktide.spark.frame_types`) when
        ``infer_for`` names what the user called, else one column of pickled values (the
        transport of sinks that turn records into their own row type)."""
        from pyspark.sql import functions as F

        rows = reduce(
            lambda a, b: a.unionAll(b),
            [
                df.filter(
                    ((F.col("stage") == _COLLECTED) & (F.col("target") == node_id))
                    | (F.col("stage") == _FAILED)
                )
                for df in produced
            ],
        )
        if type_info is None and infer_for is not None:
            type_info = _inferred_type(rows, infer_for)
        if ordered:  # one partition, merged there (a global orderBy would run the job twice)
            rows = rows.repartition(1)
        # else each partition holds one subtask's records, already in position order
        return rows.select("stage", "payload").mapInArrow(
            _FrameDecoder(type_info, ordered), spark_schema_of(type_info)
        )

    def _deliver(self, rows: list[Row], metrics: dict[str, int]) -> None:
        raise_first_failure([(r["position"], r["payload"]) for r in rows if r["stage"] == _FAILED])
        by_id = {n.id: n for n in self.plan.nodes}
        printed: list[tuple[Position, str]] = []
        for row in rows:
            if row["stage"] == _PRINTED:
                printed.extend(pickle.loads(row["payload"]))
            elif row["stage"] == _METRICS:
                m = pickle.loads(row["payload"])
                metrics["rounds"] = max(metrics["rounds"], m["rounds"])
                for name in SUMMED_METRICS:
                    metrics[name] += m[name]
            else:  # Shipment.COLLECTED: a collect sink's records
                node = by_id[row["target"]]
                if node.collected is None:
                    raise RuntimeError(f"records came back for {node}, which is no collect sink")
                node.collected.extend(pickle.loads(row["payload"]))
        printed.sort(key=_position)
        out = sys.stdout
        for _, line in printed:
            out.write(line + "\n")
