"""Run a job over a Spark Structured Streaming DataFrame: one round per micro-batch.

``env.from_stream(streaming_df, ...)`` makes a :class:`~sparktide.spark.stream_source.StreamSource`;
executing a job that reads
one starts a streaming query ``streaming_df.writeStream.foreachBatch(...)``. For each micro-batch
``v`` (the batch id is the round number):

1. The batch's processing time is read from the checkpoint, or recorded there at the batch's first
   attempt, so a replay sees the same time.
2. **Source stage.** The batch's rows are split (``split_by`` into ``num_splits`` splits, else one
   split) and each split runs its chain as one round: the split's watermark generator, watermark
   emitter and sequence number come from version ``v - 1`` of the checkpoint, the split reads
   all its rows and emits its periodic watermark (the end of the round). The input never ends,
   so no split emits ``MAX``.
3. **Exchange stages**, as in the bounded runner (:mod:`sparktide.spark.executor`), except that
   every subtask runs in every batch (a heartbeat row reaches each one): it restores the keyed
   state, timers, valves and operator watermarks of its key groups from version ``v - 1``,
   moves its processing-time clock from the previous batch's time to this batch's (firing due
   processing-time timers at the batch boundary), processes the batch's entries in position
   order and writes version ``v``.
4. **Sinks.** Streaming sinks (:class:`ForeachBatchSink`, :class:`ParquetBatchSink`,
   :class:`JsonBatchSink`) get the batch's output as a DataFrame; ``print()`` lines are printed
   on the driver.
5. **Commit.** Then the split states and the commit file of version ``v`` are written. A batch
   that Spark replays after a failure before the commit reprocesses from ``v - 1`` and
   overwrites; a batch replayed after the commit is skipped. With idempotent sinks the output
   is exactly once.

The worker side of steps 2 and 3 is :mod:`sparktide.spark.stream_job`; the sinks are in
:mod:`sparktide.spark.stream_sinks`. Each batch writes a full snapshot (see
:mod:`sparktide.spark.checkpoint`); state of operators that is not keyed state (attributes of
user functions) is not checkpointed.
"""

from __future__ import annotations

import pickle
import threading
import time
import uuid
from functools import reduce
from typing import Any

from sparktide.spark.checkpoint import CheckpointError, CheckpointStore
from sparktide.spark.executor import COLLECTED, METRICS, PRINTED, SPARK_SCHEMA, SparkExecutor
from sparktide.spark.stream_job import SPLIT_STATE, StreamingJob
from sparktide.spark.stream_sinks import (
    ForeachBatchSink,
    JsonBatchSink,
    ParquetBatchSink,
    batch_sink_of,
)
from sparktide.spark.stream_source import StreamSource, has_stream_source

__all__ = [
    "ForeachBatchSink",
    "JsonBatchSink",
    "ParquetBatchSink",
    "StreamSource",
    "StreamingJobClient",
    "has_stream_source",
    "start_stream",
]

_NO_ADAPTIVE = ("spark.sql.adaptive.enabled", "spark.sql.adaptive.coalescePartitions.enabled")
_TRIGGERS = ("available_now", "once")


def _first(item: tuple) -> Any:
    return item[0]


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


# ---------------------------------------------------------------------------------------------
# the driver


def fingerprint(plan: Any) -> dict[str, Any]:
    """What must not change between runs on one checkpoint (parallelism may)."""
    return {
        "sources": [[n.name, n.uid, len(n.source.get_splits())] for n in plan.sources],
        "stages": [
            {
                "operators": [[n.name, n.uid] for n in s.nodes],
                "max_parallelism": s.max_parallelism,
                "keyed": s.keyed,
            }
            for s in plan.stages
        ],
    }


class StreamingJobClient:
    """A running streaming job (what ``execute_async`` returns; PyFlink's ``JobClient``).

    ``await_termination(timeout)`` waits for the query to end (``True``) or the timeout to pass
    (``False``) and re-raises what failed the job; ``stop()`` stops it after the current batch;
    ``recent_progress`` holds the metrics of each micro-batch committed by this run:
    ``batch_id``, ``processing_time`` (the batch's recorded time), ``duration_ms``,
    ``records`` (read by the source splits), ``timers_fired`` and ``late_records_dropped``.
    """

    def __init__(self, job_name: str, runner: _StreamRunner) -> None:
        self._job_id = uuid.uuid4().hex
        self._job_name = job_name
        self._runner = runner

    def get_job_id(self) -> str:
        return self._job_id

    def get_job_name(self) -> str:
        return self._job_name

    @property
    def recent_progress(self) -> list[dict[str, Any]]:
        return list(self._runner.progress)

    @property
    def is_active(self) -> bool:
        return bool(self._runner.query.isActive)

    def last_committed_batch(self) -> int | None:
        return self._runner.store.committed_version()

    def await_termination(self, timeout: float | None = None) -> bool:
        if timeout is not None and (not isinstance(timeout, (int, float)) or timeout < 0):
            raise ValueError(f"timeout must be a number of seconds >= 0 or None, got {timeout!r}")
        try:
            if timeout is None:
                self._runner.query.awaitTermination()
                done = True
            else:
                done = bool(self._runner.query.awaitTermination(timeout))
        except Exception:
            if self._runner.error is not None:
                raise self._runner.error from None
            raise
        if self._runner.error is not None:
            raise self._runner.error
        return done

    def stop(self) -> None:
        self._runner.query.stop()

    def cancel(self) -> None:
        self.stop()

    def metrics(self) -> dict[str, Any]:
        """Totals over the committed micro-batches of this run."""
        out: dict[str, Any] = {"rounds": 0, "late_records_dropped": 0, "timers_fired": 0}
        for p in self._runner.progress:
            out["rounds"] += 1
            out["late_records_dropped"] += p["late_records_dropped"]
            out["timers_fired"] += p["timers_fired"]
        return out


class _StreamRunner:
    """Runs each micro-batch (the ``foreachBatch`` function) and commits it."""

    def __init__(self, executor: SparkExecutor, location: str) -> None:
        from sparktide.runtime.execution.tasks import splits_of

        self.executor = executor
        plan = executor.plan
        streams = [n for n in plan.sources if isinstance(n.source, StreamSource)]
        if len(streams) != 1 or len(plan.sources) != 1:
            raise ValueError(
                "a streaming job reads exactly one source, made by env.from_stream(...); this "
                f"job has {len(plan.sources)} source(s) ({len(streams)} streaming)"
            )
        self.node = streams[0]
        self.source: StreamSource = self.node.source
        splits_of(self.node)
        self.base = executor._job()
        self.store = CheckpointStore(location, fingerprint(plan))
        self.store.committed_version()  # fail early on a checkpoint of another job
        self.progress: list[dict[str, Any]] = []
        self.error: BaseException | None = None
        self.query: Any = None
        self.lock = threading.Lock()

    def on_batch(self, batch_df: Any, batch_id: int) -> None:
        try:
            with self.lock:
                self._on_batch(batch_df, int(batch_id))
        except BaseException as exc:
            self.error = exc
            raise

    def _heartbeats(self, spark: Any, job: StreamingJob) -> Any:
        rows = [
            (stage.index, t, job.placement[stage.parallelism][t], b"", pickle.dumps([]))
            for stage in self.executor.plan.stages
            for t in range(stage.parallelism)
        ]
        return spark.createDataFrame(rows, SPARK_SCHEMA)

    def _on_batch(self, batch_df: Any, batch_id: int) -> None:

        started = time.perf_counter()
        store = self.store
        committed = store.committed_version()
        if committed is not None and batch_id <= committed:
            return  # committed before a failure: Spark replays it, its output is written
        expected = 0 if committed is None else committed + 1
        if batch_id != expected:
            raise CheckpointError(
                f"micro-batch {batch_id} does not follow the last committed batch {committed} "
                f"of the checkpoint at {store.location!r} (Spark's offsets under "
                f"{store.spark_checkpoint_location!r} do not match sparktide's state); use a new "
                "checkpoint directory"
            )
        previous = None if committed is None else store.commit_info(committed)
        wall = _wall_clock_ms()
        previous_now = wall if previous is None else int(previous["processing_time"])
        # processing time never goes backwards, even on a restart on a machine whose clock is
        # behind; a replay sees the time recorded by the batch's first attempt
        now = store.batch_processing_time(batch_id, max(wall, previous_now))
        previous_now = min(previous_now, now)
        split_states = {} if committed is None else store.read_splits(committed)
        job = StreamingJob(self.base, store, batch_id, now, previous_now, previous, split_states)
        spark = batch_df.sparkSession
        conf = spark.conf
        saved = {k: conf.get(k, None) for k in _NO_ADAPTIVE}
        for key in _NO_ADAPTIVE:  # each subtask must keep its own shuffle partition
            conf.set(key, "false")
        try:
            self._run_batch(batch_df, batch_id, job, split_states, now, started)
        finally:
            for key, value in saved.items():
                if value is None:
                    conf.unset(key)
                else:
                    conf.set(key, value)

    def _run_batch(
        self,
        batch_df: Any,
        batch_id: int,
        job: StreamingJob,
        split_states: dict[int, bytes],
        now: int,
        started: float,
    ) -> None:
        from pyspark.sql import functions as F

        store = self.store
        spark = batch_df.sparkSession
        plan = self.executor.plan
        source_frame = self.source.prepare(batch_df).mapInArrow(
            job.stream_source_task(self.node.id), SPARK_SCHEMA
        )
        produced = [source_frame.persist()]
        heartbeats = self._heartbeats(spark, job) if plan.stages else None
        for stage in plan.stages:
            inputs = [df.filter(F.col("stage") == stage.index) for df in produced]
            inputs.append(heartbeats.filter(F.col("stage") == stage.index))
            merged = reduce(lambda a, b: a.unionAll(b), inputs)
            result = (
                merged.repartition(stage.parallelism, "pkey")
                .sortWithinPartitions("target", "position")
                .mapInArrow(job.stream_stage_task(stage.index), SPARK_SCHEMA)
            )
            produced.append(result.persist())
        try:
            written = [n for n in plan.nodes if n.frame_writer is not None]
            written_ids = [n.id for n in written]
            to_driver = (F.col("stage") < 0) & ~(
                (F.col("stage") == COLLECTED) & F.col("target").isin(written_ids)
            )
            rows = reduce(
                lambda a, b: a.unionAll(b), [df.filter(to_driver) for df in produced]
            ).collect()
            metrics = {"late_records_dropped": 0, "timers_fired": 0}
            printed: list[tuple[tuple, str]] = []
            new_splits = dict(split_states)
            records = 0
            for row in rows:
                stage = row["stage"]
                if stage == SPLIT_STATE:
                    new_splits[row["target"]] = row["payload"]
                    records += pickle.loads(row["payload"])["records"]
                elif stage == METRICS:
                    m = pickle.loads(row["payload"])
                    metrics["late_records_dropped"] += m["late_records_dropped"]
                    metrics["timers_fired"] += m["timers_fired"]
                elif stage == PRINTED:
                    printed.extend(pickle.loads(row["payload"]))
                else:
                    raise ValueError(
                        "execute_and_collect() and to_dataframe() are not available on a "
                        "streaming job; use sink_to(ForeachBatchSink(fn)) or "
                        "sink_to(ParquetBatchSink(path))"
                    )
            printed.sort(key=_first)
            for _, line in printed:
                print(line)
            for node in written:
                frame = self.executor._frame(produced, node.id, node.output_type, ordered=True)
                sink = batch_sink_of(node.frame_writer)
                if sink is not None:
                    sink.write_batch(frame, batch_id)
                else:
                    node.frame_writer(frame)  # type: ignore[misc]
            store.write_splits(batch_id, new_splits)
            duration = int((time.perf_counter() - started) * 1000)
            store.commit(
                batch_id,
                {
                    "processing_time": now,
                    "parallelism": {str(s.index): s.parallelism for s in plan.stages},
                    "metrics": {**metrics, "records": records, "duration_ms": duration},
                },
            )
            self.progress.append(
                {
                    "batch_id": batch_id,
                    "processing_time": now,
                    "duration_ms": duration,
                    "records": records,
                    **metrics,
                }
            )
        finally:
            for df in produced:
                df.unpersist()


def start_stream(
    graph: Any,
    env: Any,
    job_name: str,
    checkpoint_location: str | None,
    trigger: str | None,
) -> StreamingJobClient:
    """Start the streaming query of ``graph`` (see :meth:`StreamExecutionEnvironment.
    execute_async`)."""
    if checkpoint_location is None:
        raise ValueError(
            "checkpoint_location is required for a job reading env.from_stream(...): the "
            "directory (path or pyarrow.fs URI) where its state, timers and progress are kept; "
            "pass execute(..., checkpoint_location='/path/to/ckpt')"
        )
    if trigger is not None and trigger not in _TRIGGERS:
        raise ValueError(
            f"trigger must be one of {_TRIGGERS} or None (run micro-batches until stopped), got "
            f"{trigger!r}"
        )
    executor = SparkExecutor(graph, env)
    runner = _StreamRunner(executor, checkpoint_location)
    writer = runner.source.df.writeStream.foreachBatch(runner.on_batch).option(
        "checkpointLocation", runner.store.spark_checkpoint_location
    )
    writer = writer.queryName(f"sparktide-{uuid.uuid4().hex[:8]}")
    if trigger == "available_now":
        writer = writer.trigger(availableNow=True)
    elif trigger == "once":
        writer = writer.trigger(once=True)
    runner.query = writer.start()
    return StreamingJobClient(job_name, runner)
