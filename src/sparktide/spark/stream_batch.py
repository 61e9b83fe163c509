"""The frames of one micro-batch of a streaming run, on either path.

A micro-batch runs per record (:class:`PerRecordBatch`: the stage frames of
:mod:`sparktide.spark.stage_frames` over the batch's rows, with a heartbeat row per subtask so
that every subtask runs) or on Arrow columns (the batch of
:class:`~sparktide.spark.columnar_stream.ColumnarStream`). Both are a :class:`BatchFrames`:
what they tell the driver, as the typed values of :mod:`sparktide.spark.shipments`, and the
frame each streaming sink writes.

**One pass.** A micro-batch per record is one Spark job when every Spark-written sink has its
records written as typed columns by the tasks that produce them (a declared type,
:mod:`sparktide.spark.frame_rows`) and the option
:data:`~sparktide.common.config_options.STREAM_SINKS_ONE_PASS` is on (the default): the sinks'
rows come to the driver as Arrow with the rows for the driver, no frame is persisted, and each
sink gets its rows from the driver (:meth:`BatchFrames.driver_records`; a Parquet sink writes
them there, :mod:`sparktide.spark.driver_parquet`) or a DataFrame made on the driver from them
(in position order); only the frames a later stage reads as well are persisted (computed
once). Otherwise every frame is persisted and each sink's frame reads its rows from them (a
Spark job of its own). The heartbeat rows (one per subtask) are the same in every batch:
:class:`Heartbeats` makes their frames once per query and session.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from sparktide.runtime.execution.protocol import FIRST_STAGE, Shipment, pack_entries
from sparktide.spark.frames import local_frame, spark_schema_of
from sparktide.spark.shipments import Shipped, decode_rows, decode_shipment
from sparktide.spark.spark_job import arrow_row_schema
from sparktide.spark.stage_frames import StageFrames, build_stage_frames, exchange_above, union

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from sparktide.runtime.graph import SinkNode, SourceNode
    from sparktide.spark.executor import SparkExecutor
    from sparktide.spark.frame_rows import FrameRows
    from sparktide.spark.stream_job import StreamingJob

__all__ = ["BatchFrames", "DriverRecords", "Heartbeats", "PerRecordBatch"]


@dataclass(frozen=True)
class DriverRecords:
    """A streaming sink's records of a micro-batch, on the driver: ``table`` in position order,
    the rows of the DataFrame of ``schema`` that :meth:`BatchFrames.frame` would make of them
    in ``spark``."""

    table: pa.Table
    schema: StructType
    spark: SparkSession


class BatchFrames(Protocol):
    """One micro-batch's lazy frames (kept until :meth:`unpersist`)."""

    def driver_values(self) -> list[Shipped]:
        """Run the batch: what its tasks tell the driver."""
        ...

    def frame(self, node: SinkNode) -> DataFrame:
        """The batch's frame for streaming sink ``node``, in position order."""
        ...

    def driver_records(self, node: SinkNode) -> DriverRecords | None:
        """Sink ``node``'s records when they are on the driver (after :meth:`driver_values`),
        else ``None``."""
        ...

    def unpersist(self) -> None: ...


class PerRecordBatch:
    """A micro-batch on the per-record tasks (:mod:`sparktide.spark.stream_job`); ``one_pass``:
    its sinks' rows come to the driver in its one Spark job (see the module's docstring)."""

    def __init__(
        self,
        executor: SparkExecutor,
        stages: StageFrames,
        frame_rows: FrameRows | None = None,
        one_pass: bool = False,
    ) -> None:
        self.executor = executor
        self.stages = stages
        self.frame_rows = frame_rows  # the sinks whose records the tasks wrote typed
        self.one_pass = one_pass
        self._tables: dict[int, pa.Table] = {}  # one pass: each sink's records

    @staticmethod
    def one_pass_for(executor: SparkExecutor, frame_rows: FrameRows | None) -> bool:
        """Whether every Spark-written sink of the job has its records in ``frame_rows``
        (typed columns its tasks write), so that a batch can run in one pass."""
        written = [n.id for n in executor.plan.sinks if n.frame_writer is not None]
        return not written or (frame_rows is not None and all(i in frame_rows for i in written))

    @classmethod
    def build(
        cls,
        executor: SparkExecutor,
        sources: list[SourceNode],
        first_splits: list[int],
        frames: list[DataFrame],
        job: StreamingJob,
        heartbeats: Heartbeats,
        one_pass: bool,
    ) -> PerRecordBatch:
        """The stage frames of batch ``job.version`` over ``frames``, the batch's rows of each
        of ``sources`` (whose first split is the matching one of ``first_splits``). A frame read
        twice (by a later stage and by the driver, or by a sink) is persisted, so that it is
        computed once; in one pass the last stage's frame is read once, by the driver."""
        plan = executor.plan
        keep = _persisted if plan.stages or not one_pass else _as_is
        produced = []
        for node, first, frame in zip(sources, first_splits, frames, strict=True):
            task = node.source.prepare(frame).mapInArrow(
                job.stream_source_task(first, node.id), job.base.schema
            )
            if len(sources) > 1:
                task = exchange_above(task, node.source.num_splits)
            produced.append(keep(task))
        spark = frames[0].sparkSession
        stages = build_stage_frames(
            plan,
            produced,
            job.stream_stage_task,
            _all_but_last(len(plan.stages)) if one_pass else _persisted,
            lambda stage: heartbeats.of_stage(spark, job, stage),  # each stage builds a frame
            schema=job.base.schema,
        )
        return cls(executor, stages, job.base.frame_rows, one_pass)

    def _written(self) -> list[int]:
        return [n.id for n in self.executor.plan.sinks if n.frame_writer is not None]

    def driver_values(self) -> list[Shipped]:
        written = self._written()
        if not self.one_pass:
            return decode_rows(self.stages.to_driver(written).collect())
        from pyspark.sql import functions as F

        rows = union(self.stages.frames).filter(F.col("stage") < FIRST_STAGE).toArrow()
        return self._take_sink_rows(rows, written)

    def _take_sink_rows(self, rows: pa.Table, written: list[int]) -> list[Shipped]:
        """Keep the records of each sink of ``written`` among ``rows`` (as its frame's
        columns); the values of the other rows."""
        import pyarrow as pa
        import pyarrow.compute as pc

        if written and self.frame_rows is not None:
            targets = rows.column("target")
            collected = pc.equal(rows.column("stage"), Shipment.COLLECTED.value)
            for node_id in written:
                mine = rows.filter(pc.and_(collected, pc.equal(targets, node_id)))
                self._tables[node_id] = self.frame_rows.table(mine, node_id)
            sinks = pc.and_(collected, pc.is_in(targets, value_set=pa.array(written, pa.int32())))
            rows = rows.filter(pc.invert(sinks))
        columns = (rows.column(c).to_pylist() for c in ("stage", "target", "position", "payload"))
        return [decode_shipment(*row) for row in zip(*columns, strict=True)]

    def frame(self, node: SinkNode) -> DataFrame:
        records = self.driver_records(node)
        if records is not None:
            return records.spark.createDataFrame(records.table, schema=records.schema)
        if self.frame_rows is not None and node.id in self.frame_rows:
            return self.frame_rows.frame(self.stages.frames, node.id)
        return self.executor.collected_frame(self.stages.frames, node.id, ordered=True)

    def driver_records(self, node: SinkNode) -> DriverRecords | None:
        if not self.one_pass:
            return None
        spark = self.stages.frames[0].sparkSession
        return DriverRecords(self._tables[node.id], spark_schema_of(node.output_type), spark)

    def unpersist(self) -> None:
        self._tables.clear()
        self.stages.unpersist()


def _as_is(df: DataFrame) -> DataFrame:
    return df


def _persisted(df: DataFrame) -> DataFrame:
    return df.persist()


def _all_but_last(count: int) -> Callable[[DataFrame], DataFrame]:
    """Persists each of ``count`` frames given in turn but the last one."""
    built = itertools.count(1)
    return lambda df: df if next(built) == count else df.persist()


class Heartbeats:
    """The frames of an empty row for every subtask of a stage, one frame per stage (each
    subtask runs in every batch), made once per session: the rows are the same in every batch
    of a query, and a frame of its own per stage is read as it is (no filter, no projection
    made for it in each batch)."""

    def __init__(self) -> None:
        self._session: str | None = None  # the session's id (Spark Connect) of the frames
        self._made: dict[int, DataFrame] = {}  # per stage

    def of_stage(self, spark: SparkSession, job: StreamingJob, stage_index: int) -> DataFrame:
        """The heartbeats of stage ``stage_index`` in ``spark``'s session (made again in
        another Spark Connect session), in the columns that cross an exchange."""
        session = _session_id(spark)
        if session != self._session:
            self._session, self._made = session, {}
        made = self._made.get(stage_index)
        if made is None:
            stage = job.plan.stages[stage_index]
            placement = job.base.placement[stage.parallelism]
            rows = [
                (stage.index, t, placement[t], b"", pack_entries([]))
                for t in range(stage.parallelism)
            ]
            made = self._made[stage_index] = local_frame(spark, rows, arrow_row_schema())
        return made

    def __getstate__(self) -> dict[str, object]:
        return {"_session": None, "_made": {}}  # a frame stays in its session


def _session_id(spark: SparkSession) -> str | None:
    """The id of a Spark Connect session; ``None`` for a classic one (a query's batches all
    run in its one session, each handing over a new handle of it)."""
    session_id = getattr(spark, "session_id", None)
    return session_id if isinstance(session_id, str) else None
