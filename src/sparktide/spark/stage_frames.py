"""The stage frames of a run on Spark: the lazy DataFrames of a job's source and exchange stages.

Bounded runs (:mod:`sparktide.spark.executor`) and the micro-batches of streaming runs
(:mod:`sparktide.spark.streaming`) build them the same way; they differ only in what is given:
the source frames (the job's own splits, or a micro-batch's rows), the task each stage's
subtasks run, what is kept (``persist``) and, for a micro-batch, a heartbeat row per subtask so
that every subtask runs in every batch. A stage reads the rows meant for it from the frames of the
stages that feed it (its input edges' producers; the source frames for a source), shuffled to the
partition of their target subtask and sorted by ``(target, position)`` there (see
:mod:`sparktide.spark.executor` for the row columns). A job that writes typed frame columns
(:mod:`sparktide.spark.frame_rows`) has more columns than these: they are left out of what crosses
an exchange and of the rows for the driver.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import reduce
from typing import TYPE_CHECKING

from sparktide.runtime.execution.planner import SOURCE_STAGE, Plan, Stage
from sparktide.runtime.execution.protocol import FIRST_STAGE, Shipment
from sparktide.spark.frame_rows import BASE_COLUMNS
from sparktide.spark.spark_job import SPARK_SCHEMA

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import StructType

__all__ = ["StageFrames", "build_stage_frames", "exchange_above", "union"]

StageTask = Callable[[Iterator["pa.RecordBatch"]], Iterator["pa.RecordBatch"]]
"""The ``mapInArrow`` function of a stage's subtasks."""


def union(frames: Sequence[DataFrame]) -> DataFrame:
    """The rows of every frame (``unionAll``, by column position)."""
    return reduce(lambda a, b: a.unionAll(b), frames)


def exchange_above(task: DataFrame, partitions: int) -> DataFrame:
    """An exchange right above a source's ``task`` (``partitions``: the task's partitions): the
    task runs in the map stage of that exchange, whose task ``i`` reads partition ``i`` (in a
    union, task ids would be shifted), and its frame is computed once however many stages'
    unions read it (the exchange is reused). Where a row lands does not matter (each stage
    shuffles its rows to their subtasks again), so the rows are hashed by their chunk's first
    position: a round-robin ``repartition(n)`` would first sort each task's whole output in
    the JVM (Spark's ``sortBeforeRepartition``, which makes it deterministic), holding it in
    execution memory, which on NEXMark's q4 at 10^7 events cost 9% of its time."""
    return task.repartition(partitions, "position")


def _as_is(df: DataFrame) -> DataFrame:
    return df


def _rows_for(df: DataFrame, stage: int) -> DataFrame:
    """The rows of ``df`` for stage ``stage``, in the columns that cross an exchange. Written
    as SQL strings: two py4j calls on a classic session, where Column expressions take one per
    name and operator (a micro-batch builds one such frame per feeding frame and stage)."""
    return df.where(f"stage = {stage}").selectExpr(*BASE_COLUMNS)


@dataclass(frozen=True)
class StageFrames:
    """The frames of a run, in the order they were built, and the stage each comes from
    (:data:`~sparktide.runtime.execution.planner.SOURCE_STAGE` for the source frames)."""

    frames: list[DataFrame]
    origins: list[int]

    def of_stage(self, origin: int) -> list[DataFrame]:
        """The frames built by stage ``origin`` (all of them when it built none)."""
        own = [df for df, o in zip(self.frames, self.origins, strict=True) if o == origin]
        return own or self.frames

    def to_driver(self, written: Sequence[int]) -> DataFrame:
        """The rows for the driver (:class:`~sparktide.runtime.execution.protocol.Shipment`)
        of every frame, but the records of the sinks in ``written`` (node ids of the sinks
        Spark writes: their records are read as frames)."""
        from pyspark.sql import functions as F

        to_driver: Column = F.col("stage") < FIRST_STAGE
        if written:
            to_driver &= ~(
                (F.col("stage") == Shipment.COLLECTED.value) & F.col("target").isin(list(written))
            )
        return union([df.filter(to_driver).select(*BASE_COLUMNS) for df in self.frames])

    def unpersist(self) -> None:
        for df in self.frames:
            df.unpersist()


def build_stage_frames(
    plan: Plan,
    sources: list[DataFrame],
    stage_task: Callable[[int], StageTask],
    keep: Callable[[DataFrame], DataFrame] = _as_is,
    heartbeats: Callable[[int], DataFrame] | None = None,
    schema: str | StructType = SPARK_SCHEMA,
) -> StageFrames:
    """The frames of ``plan``'s stages after the source frames ``sources`` (kept as given):
    stage ``s`` runs ``stage_task(s)`` over the rows for it of every earlier frame of a stage
    that feeds it (and ``heartbeats(s)``: more rows for it, in the columns that cross an
    exchange), giving rows of ``schema``; ``keep`` is applied to each stage's frame as it is
    built (e.g. ``persist``)."""
    frames = list(sources)
    origins = [SOURCE_STAGE] * len(frames)
    for stage in plan.stages:
        feeding = _feeding(plan, stage)
        earlier = [df for df, o in zip(frames, origins, strict=True) if o in feeding]
        inputs = [_rows_for(df, stage.index) for df in earlier]
        if heartbeats is not None:
            inputs.append(heartbeats(stage.index))
        if not inputs:
            continue
        result = (
            union(inputs)
            .repartition(stage.parallelism, "pkey")
            .sortWithinPartitions("target", "position")
            .mapInArrow(stage_task(stage.index), schema)
        )
        frames.append(keep(result))
        origins.append(stage.index)
    return StageFrames(frames, origins)


def _feeding(plan: Plan, stage: Stage) -> set[int]:
    """The stages whose frames may hold rows for ``stage`` (:data:`~sparktide.runtime.
    execution.planner.SOURCE_STAGE`: the source frames): those of its input edges' producers.
    A frame of another stage has none, and reading it would add its partitions to the
    exchange for nothing."""
    return {
        SOURCE_STAGE if e.source.id in plan.source_stage else plan.stage_of[e.source.id].index
        for e in stage.input_edges
    }
