"""The frames of one micro-batch of a streaming run, on either path.

A micro-batch runs per record (:class:`PerRecordBatch`: the stage frames of
:mod:`sparktide.spark.stage_frames` over the batch's rows, with a heartbeat row per subtask so
that every subtask runs) or on Arrow columns (the batch of
:class:`~sparktide.spark.columnar_stream.ColumnarStream`). Both are a :class:`BatchFrames`:
what they tell the driver, as the typed values of :mod:`sparktide.spark.shipments`, and the
frame each streaming sink writes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from sparktide.runtime.execution.protocol import pack_entries
from sparktide.spark.shipments import Shipped, decode_rows
from sparktide.spark.spark_job import SPARK_SCHEMA
from sparktide.spark.stage_frames import StageFrames, build_stage_frames

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from sparktide.runtime.graph import SinkNode, SourceNode
    from sparktide.spark.executor import SparkExecutor
    from sparktide.spark.frame_rows import FrameRows
    from sparktide.spark.stream_job import StreamingJob

__all__ = ["BatchFrames", "PerRecordBatch"]


class BatchFrames(Protocol):
    """One micro-batch's lazy frames (kept until :meth:`unpersist`)."""

    def driver_values(self) -> list[Shipped]:
        """Run the batch: what its tasks tell the driver."""
        ...

    def frame(self, node: SinkNode) -> DataFrame:
        """The batch's frame for streaming sink ``node``, in position order."""
        ...

    def unpersist(self) -> None: ...


class PerRecordBatch:
    """A micro-batch on the per-record tasks (:mod:`sparktide.spark.stream_job`)."""

    def __init__(
        self, executor: SparkExecutor, stages: StageFrames, frame_rows: FrameRows | None = None
    ) -> None:
        self.executor = executor
        self.stages = stages
        self.frame_rows = frame_rows  # the sinks whose records the tasks wrote typed

    @classmethod
    def build(
        cls,
        executor: SparkExecutor,
        sources: list[SourceNode],
        first_splits: list[int],
        frames: list[DataFrame],
        job: StreamingJob,
    ) -> PerRecordBatch:
        """The stage frames of batch ``job.version`` over ``frames``, the batch's rows of each
        of ``sources`` (whose first split is the matching one of ``first_splits``)."""
        produced = []
        for node, first, frame in zip(sources, first_splits, frames, strict=True):
            task = node.source.prepare(frame).mapInArrow(
                job.stream_source_task(first, node.id), job.base.schema
            )
            if len(sources) > 1:
                # an exchange right above the task: it runs in the map stage of that exchange,
                # whose task i reads partition i (in a union, task ids would be shifted)
                task = task.repartition(node.source.num_splits)
            produced.append(task.persist())
        plan = executor.plan
        heartbeats = _heartbeats(frames[0].sparkSession, job) if plan.stages else None
        stages = build_stage_frames(
            plan,
            produced,
            job.stream_stage_task,
            lambda df: df.persist(),
            heartbeats,
            schema=job.base.schema,
        )
        return cls(executor, stages, job.base.frame_rows)

    def driver_values(self) -> list[Shipped]:
        written = [n.id for n in self.executor.plan.sinks if n.frame_writer is not None]
        return decode_rows(self.stages.to_driver(written).collect())

    def frame(self, node: SinkNode) -> DataFrame:
        if self.frame_rows is not None and node.id in self.frame_rows:
            return self.frame_rows.frame(self.stages.frames, node.id)
        return self.executor.collected_frame(self.stages.frames, node.id, ordered=True)

    def unpersist(self) -> None:
        self.stages.unpersist()


def _heartbeats(spark: SparkSession, job: StreamingJob) -> DataFrame:
    """An empty row for every subtask of every stage: each runs in every batch."""
    rows = [
        (stage.index, t, job.base.placement[stage.parallelism][t], b"", pack_entries([]))
        for stage in job.plan.stages
        for t in range(stage.parallelism)
    ]
    return spark.createDataFrame(rows, SPARK_SCHEMA)
