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
   lines come back to the driver as rows and are delivered (printed) in position order. The
   records of a typed ``to_dataframe()`` or Spark-written sink leave their producing tasks in
   typed columns (:mod:`sparktide.spark.frame_rows`): the DataFrame is a filter of those rows.

On the driver a run goes through the steps a streaming micro-batch goes through too (see
docs/architecture.md, "The driver pipeline"): the stage frames are built
(:func:`~sparktide.spark.stage_frames.build_stage_frames`), the rows for the driver collected
and decoded into typed values (:mod:`sparktide.spark.shipments`), gathered in a
:class:`~sparktide.spark.shipments.BatchOutcome` and delivered.

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

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from sparktide.common.config_options import CHUNKED_RECORDS
from sparktide.core.metrics import MetricsReport
from sparktide.runtime.execution.driver import JobEnvironment
from sparktide.runtime.execution.path import PathChoice, Request
from sparktide.runtime.execution.planner import SOURCE_STAGE, Plan, plan_job
from sparktide.runtime.execution.protocol import Shipment
from sparktide.runtime.execution.tasks import JobTasks
from sparktide.runtime.graph import JobGraph, SinkNode
from sparktide.spark.collected_frames import FrameDecoder, inferred_type
from sparktide.spark.columnar_job import ColumnarJob, columnar_job
from sparktide.spark.columnar_sources import spark_path
from sparktide.spark.dataframe_source import DataFrameSource
from sparktide.spark.frame_rows import FrameRows, FrameTarget
from sparktide.spark.frames import spark_schema_of
from sparktide.spark.pickling import check_picklable
from sparktide.spark.placement import placement_keys
from sparktide.spark.progress import SparkProgress
from sparktide.spark.session import get_spark, is_connect
from sparktide.spark.session_conf import session_settings
from sparktide.spark.shipments import BatchOutcome, decode_rows
from sparktide.spark.spark_job import CHUNK, FLUSH, SparkJob
from sparktide.spark.stage_frames import StageFrames, build_stage_frames, exchange_above, union
from sparktide.spark.stream_sinks import batch_sink_of

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Row
    from pyspark.sql.conf import RuntimeConfig

    from sparktide.common.typeinfo import TypeInformation

__all__ = ["SparkExecutor", "plan_of", "without_adaptive_execution"]

_COLLECTED = Shipment.COLLECTED.value
_FAILED = Shipment.FAILED.value

#: what a run turns off on the session while it runs (and restores after): adaptive execution
#: would submit a job per shuffle and may coalesce partitions, but each subtask must keep its
#: own shuffle partition
NO_ADAPTIVE = ("spark.sql.adaptive.enabled", "spark.sql.adaptive.coalescePartitions.enabled")


@contextmanager
def without_adaptive_execution(conf: RuntimeConfig) -> Iterator[None]:
    """Turn off adaptive execution (:data:`NO_ADAPTIVE`) on a session while inside; the
    session's own values (or their absence) come back when the block ends or fails."""
    with session_settings(conf, dict.fromkeys(NO_ADAPTIVE, "false")):
        yield


def plan_of(graph: JobGraph, env: JobEnvironment) -> Plan:
    """The plan of ``graph`` at the parallelism, max parallelism and state backend of ``env``."""
    return plan_job(
        graph, env.get_parallelism(), env.get_max_parallelism(), env.get_state_backend()
    )


class SparkExecutor:
    """Runs one job graph on a SparkSession (the active one, or an embedded local one)."""

    chunk_items = CHUNK  # items per shipped row
    flush_items = FLUSH  # items a task holds before it ships them

    def __init__(self, graph: JobGraph, env: JobEnvironment, plan: Plan | None = None) -> None:
        """``plan``: the plan of ``graph`` in ``env`` when the caller made it already."""
        self.env = env
        self.config = env.get_config()
        self.plan = plan_of(graph, env) if plan is None else plan
        check_picklable(self.plan)
        self.spark = get_spark()
        self.tasks = JobTasks(self.plan, {}, None)  # the split layout (computed on the driver)
        self.user_metrics = MetricsReport()  # what the tasks report (get_metrics_group())
        self._paths: dict[Request, PathChoice] = {}  # the choice per request, made once

    def __getstate__(self) -> dict[str, object]:
        """What a streaming job's ``foreachBatch`` function needs where Spark Connect runs it
        (on the server): the plan, without the session and the environment of the client."""
        state = dict(self.__dict__)
        state["spark"] = state["env"] = state["config"] = None
        return state

    def path(self, request: Request) -> PathChoice:
        """The path the job takes for ``request`` (:mod:`sparktide.runtime.execution.path`),
        chosen once per request."""
        choice = self._paths.get(request)
        if choice is None:
            choice = spark_path(self.plan, self.config.get_configuration(), request)
            self._paths[request] = choice
        return choice

    def columnar(self, request: Request) -> ColumnarJob | None:
        """The job on Arrow columns (:mod:`sparktide.spark.columnar_job`) when the path
        choice for ``request`` runs it there, else ``None`` (per record)."""
        every = self.config.get_watermark_every()
        return columnar_job(self.plan, sum(self.tasks.split_counts), every, self.path(request))

    def job(self, frame_rows: FrameRows | None = None) -> SparkJob:
        """What the workers run (the same for every batch of a streaming run); ``frame_rows``:
        the collect sinks whose records the tasks write as typed frame columns."""
        plan = self.plan
        return SparkJob(
            plan,
            self.config.get_global_job_parameters(),
            self.config.get_watermark_every(),
            self.config.get_simulated_processing_time(),
            {s.parallelism: placement_keys(s.parallelism) for s in plan.stages},
            self.chunk_items,
            self.config.get_task_buffer() or self.flush_items,
            fast_windows=self.path(Request.run()).fast_windows,
            chunks=bool(CHUNKED_RECORDS.read(self.config.get_configuration().to_dict())),
            frame_rows=frame_rows,
        )

    def _source_frames(self, job: SparkJob, direct: bool = False) -> list[DataFrame]:
        """The source stage: DataFrame sources run on their own partitions, every other split
        as one row of ``spark.range``. ``direct``: the frames are read once, by one stage, and
        never in a union (a lazy frame of a job with at most one exchange stage)."""
        frames: list[tuple[DataFrame, int]] = []  # a frame and its splits (0: range splits)
        g = 0
        for node, n in zip(self.plan.sources, self.tasks.split_counts, strict=True):
            if isinstance(node.source, DataFrameSource):
                prepared = node.source.prepared()
                task = prepared.mapInArrow(job.frame_source_task(g, node.id), job.schema)
                frames.append((task, n))
            else:
                job.range_splits.extend(range(g, g + n))
            g += n
        if job.range_splits:
            k = len(job.range_splits)
            task = self.spark.range(0, k, 1, k).mapInArrow(job.source_task, job.schema)
            frames.insert(0, (task, 0))
        if direct and len(frames) == 1 and len(self.plan.stages) <= 1:
            # its task i reads partition i wherever it runs: no shuffle of the whole output
            return [frames[0][0]]
        return [exchange_above(task, n) if n else task for task, n in frames]

    def build(
        self,
        keep: Callable[[DataFrame], DataFrame] = lambda df: df,
        direct: bool = False,
        frame_rows: FrameRows | None = None,
    ) -> StageFrames:
        """The job as lazy DataFrames of rows, one per source frame and per stage (``keep`` is
        applied to each as it is built, e.g. ``persist``); ``direct``: the frames are read once,
        by the stage after them (see :meth:`_source_frames`); ``frame_rows``: the sinks whose
        records the tasks write as typed frame columns."""
        job = self.job(frame_rows)
        sources = [keep(df) for df in self._source_frames(job, direct)]
        return build_stage_frames(self.plan, sources, job.stage_task, keep, schema=job.schema)

    def run(self) -> dict[str, int]:
        """Run every sink: user sinks in the workers, Spark-written sinks through their
        ``frame_writer``, collected results and printed lines back to the driver. Adaptive
        execution is off while it runs (one Spark job for the whole run)."""
        with without_adaptive_execution(self.spark.conf):
            columnar = self.columnar(Request.run())
            return self._run() if columnar is None else columnar.run()

    def _run(self) -> dict[str, int]:
        """The driver pipeline of a bounded run: build the stage frames, collect the rows for
        the driver, decode them, deliver them, then write the frames of Spark-written sinks."""
        written = [n for n in self.plan.sinks if n.frame_writer is not None]
        frame_rows = self.written_frame_rows(ordered=False)
        stages = self.build(lambda df: df.persist(), frame_rows=frame_rows)
        outcome = BatchOutcome()
        try:
            if stages.frames:
                rows = self._collect(stages.to_driver([n.id for n in written]))
                outcome = BatchOutcome.of(decode_rows(rows))
                self._deliver(outcome)
                self._write_frames(stages, written, frame_rows)
        finally:
            stages.unpersist()
        return outcome.job_metrics()

    def _collect(self, frame: DataFrame) -> list[Row]:
        """The rows of ``frame``, reporting the job's progress to the configured listener."""
        listener = self.config.get_progress_listener()
        if listener is None or is_connect(self.spark):  # Connect: no status tracker
            return frame.collect()
        with SparkProgress(self.spark.sparkContext, listener):
            return frame.collect()

    def written_frame_rows(self, ordered: bool) -> FrameRows | None:
        """The typed frame columns of the Spark-written sinks with a declared type (their
        tasks write their records typed, :mod:`sparktide.spark.frame_rows`); ``None``: no such
        sink."""
        typed = [
            FrameTarget(n.id, n.output_type, ordered)
            for n in self.plan.sinks
            if n.frame_writer is not None and n.output_type is not None
        ]
        return FrameRows.of(self.plan, typed) if typed else None

    def _write_frames(
        self, stages: StageFrames, written: list[SinkNode], frame_rows: FrameRows | None
    ) -> None:
        """Give each Spark-written sink the frame of its records (of the typed columns the
        tasks wrote, for the sinks in ``frame_rows``)."""
        for node in written:
            if frame_rows is not None and node.id in frame_rows:
                node.frame_writer(frame_rows.frame(stages.frames, node.id))  # type: ignore[misc]
                continue
            # sinks that write the stream's own columns need them typed (FileSink
            # turns records into its row type: pickled values are its transport)
            infer = None if batch_sink_of(node.frame_writer) is None else f"sink {node.name!r}"
            frame = self.collected_frame(stages.frames, node.id, False, infer)
            node.frame_writer(frame)  # type: ignore[misc]

    def frame(
        self, node_id: int, type_info: TypeInformation | None, ordered: bool = True
    ) -> DataFrame:
        """A lazy DataFrame of what collect sink ``node_id`` receives, in columns of
        ``type_info`` (:mod:`sparktide.spark.frames`), written by the tasks that produce them
        (:mod:`sparktide.spark.frame_rows`; without a type, inferred and decoded by a second
        pass); ``ordered``: sorted by position, so a ``collect()`` gives
        ``execute_and_collect``'s order. The frame runs the job when the
        user reads it, so the session keeps coalescing of shuffle partitions off (each subtask
        keeps its own partition)."""
        self.spark.conf.set("spark.sql.adaptive.coalescePartitions.enabled", "false")
        columnar = self.columnar(Request.frame(node_id, ordered))
        columnar_frame = None if columnar is None else columnar.frame(node_id, ordered)
        if columnar_frame is not None:
            return columnar_frame
        plan = self.plan
        origin = SOURCE_STAGE if node_id in plan.source_stage else plan.stage_of[node_id].index
        if type_info is None:
            # the records decide the columns: the job runs now, once, and what the sink
            # collected is kept (truncating the plan) for the inference and the DataFrame
            own = self.build().of_stage(origin)
            checkpointed = [df.localCheckpoint() for df in own]
            return self.collected_frame(checkpointed, node_id, ordered, "to_dataframe()")
        # the tasks that produce the records write them typed; the frame is their rows
        frame_rows = FrameRows.of(plan, [FrameTarget(node_id, type_info, ordered)])
        stages = self.build(direct=True, frame_rows=frame_rows)
        # only the frames of the sink's own stage: the lazy plan then computes every other
        # frame once, as the input of the stage that needs it (user functions run once)
        return frame_rows.frame(stages.of_stage(origin), node_id)

    def collected_frame(
        self,
        produced: list[DataFrame],
        node_id: int,
        ordered: bool,
        infer_for: str | None = None,
    ) -> DataFrame:
        """The DataFrame of collect sink ``node_id``, a stream without a declared type, from
        the pickled chunks in ``produced``: in the columns of the type inferred from its records
        (:mod:`sparktide.spark.frame_types`) when ``infer_for`` names what the user called, else
        one column of pickled values (the transport of sinks that turn records into their own
        row type)."""
        from pyspark.sql import functions as F

        rows = union(
            [
                df.filter(
                    ((F.col("stage") == _COLLECTED) & (F.col("target") == node_id))
                    | (F.col("stage") == _FAILED)
                )
                for df in produced
            ]
        )
        type_info = None if infer_for is None else inferred_type(rows, infer_for)
        if ordered:  # one partition, merged there (a global orderBy would run the job twice)
            rows = rows.repartition(1)
        # else each partition holds one subtask's records, already in position order
        return rows.select("stage", "payload").mapInArrow(
            FrameDecoder(type_info, ordered), spark_schema_of(type_info)
        )

    def _deliver(self, outcome: BatchOutcome) -> None:
        """Raise a user function's failure, else hand each collect sink its records, merge
        the tasks' user metrics and print the ``print()`` lines in position order."""
        outcome.raise_failure()
        by_id = {n.id: n for n in self.plan.sinks}
        for shipped in outcome.collected:
            node = by_id[shipped.node_id]
            if node.collected is None:
                raise RuntimeError(f"records came back for {node}, which is no collect sink")
            node.collected.extend(shipped.records)
        self.user_metrics.merge(outcome.user_metrics)
        outcome.print_lines()
