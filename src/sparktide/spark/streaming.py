"""Run a job over a Spark Structured Streaming DataFrame: one round per micro-batch.

``env.from_stream(streaming_df, ...)`` makes a :class:`StreamSource`; executing a job that reads
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

Each batch writes a full snapshot (see :mod:`sparktide.spark.checkpoint`); state of operators
that is not keyed state (attributes of user functions) is not checkpointed.
"""

from __future__ import annotations

import pickle
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import reduce
from operator import itemgetter
from typing import Any

from sparktide.common.watermark_strategy import WatermarkGenerator
from sparktide.datastream.source import Source, SourceSplit
from sparktide.runtime.execution.tasks import JobTasks
from sparktide.runtime.operators.base import OperatorSetup
from sparktide.runtime.processing_time import ManualProcessingTimeService
from sparktide.spark.checkpoint import CheckpointError, CheckpointStore
from sparktide.spark.executor import (
    COLLECTED,
    METRICS,
    PRINTED,
    SPARK_SCHEMA,
    SparkExecutor,
    SparkJob,
    arrow_row_schema,
)
from sparktide.spark.frames import records_of_batch, type_info_of_schema

__all__ = [
    "ForeachBatchSink",
    "JsonBatchSink",
    "ParquetBatchSink",
    "StreamSource",
    "StreamingJobClient",
    "has_stream_source",
    "start_stream",
]

SPLIT_STATE = -4
_NO_ADAPTIVE = ("spark.sql.adaptive.enabled", "spark.sql.adaptive.coalescePartitions.enabled")
_TRIGGERS = ("available_now", "once")


def _first(item: tuple) -> Any:
    return item[0]


_by_position_and_channel = itemgetter(0, 1)


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


# ---------------------------------------------------------------------------------------------
# the source


def _names(value: str | Sequence[str] | None, parameter: str, columns: list[str]) -> list[str]:
    if value is None:
        return []
    names = [value] if isinstance(value, str) else list(value)
    for name in names:
        if not isinstance(name, str) or name not in columns:
            raise ValueError(
                f"{parameter}: the streaming DataFrame has no column {name!r}; its columns are "
                f"{columns}"
            )
    return names


class StreamSource(Source):
    """The rows of a Structured Streaming DataFrame, as named ``Row`` records.

    The splits are fixed for the life of the checkpoint: with ``split_by`` the rows of each
    micro-batch are hash-partitioned by those columns into ``num_splits`` splits (required, since
    a split's watermark generator must see the same rows in every batch); without it the whole
    batch is one split. ``order_by`` sorts each split's rows within a batch.
    """

    def __init__(
        self,
        df: Any,
        split_by: str | Sequence[str] | None = None,
        order_by: str | Sequence[str] | None = None,
        num_splits: int | None = None,
    ) -> None:
        from pyspark.sql import DataFrame

        if not isinstance(df, DataFrame) or not df.isStreaming:
            raise TypeError(
                "streaming_df must be a streaming pyspark.sql.DataFrame (from spark.readStream"
                f"...); got {type(df).__name__}. For a bounded DataFrame use from_dataframe()"
            )
        self.columns: list[str] = list(df.columns)
        self.split_by = _names(split_by, "split_by", self.columns)
        self.order_by = _names(order_by, "order_by", self.columns)
        if num_splits is not None and (type(num_splits) is not int or num_splits < 1):
            raise ValueError(f"num_splits must be an int >= 1, got {num_splits!r}")
        if self.split_by and num_splits is None:
            raise ValueError(
                "num_splits is required with split_by: the number of splits must stay the same "
                "for the life of the checkpoint; pass e.g. num_splits=4"
            )
        if not self.split_by and num_splits not in (None, 1):
            raise ValueError(
                "num_splits needs split_by: without it every micro-batch is one split; pass "
                "split_by=... (e.g. a Kafka 'partition' column) or leave num_splits unset"
            )
        self.num_splits = num_splits or 1
        self.type_info = type_info_of_schema(df.schema)
        self.df = df

    def get_splits(self) -> list[SourceSplit]:
        return [SourceSplit(str(i), i) for i in range(self.num_splits)]

    def read_split(self, split: SourceSplit) -> Iterable[Any]:
        raise RuntimeError(
            "a streaming source runs on Spark only: use runtime='spark' (the default) and "
            "execute() or execute_async()"
        )

    def prepare(self, batch_df: Any) -> Any:
        """A micro-batch's DataFrame with one partition per split, sorted by ``order_by``."""
        df = (
            batch_df.repartition(self.num_splits, *self.split_by)
            if self.split_by
            else batch_df.coalesce(1)
        )
        return df.sortWithinPartitions(*self.order_by) if self.order_by else df

    def records(self, batches: Iterable[Any]) -> Iterator[Any]:
        for batch in batches:
            yield from records_of_batch(batch, self.columns)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["df"] = None
        return state

    def __repr__(self) -> str:
        return (
            f"StreamSource(columns={self.columns}, split_by={self.split_by}, "
            f"num_splits={self.num_splits}, order_by={self.order_by})"
        )


def has_stream_source(nodes: Iterable[Any]) -> bool:
    return any(n.kind == "source" and isinstance(n.source, StreamSource) for n in nodes)


# ---------------------------------------------------------------------------------------------
# sinks


class ForeachBatchSink:
    """Calls ``fn(batch_df, batch_id)`` with each micro-batch's output (a DataFrame of the
    stream's columns, in position order). ``fn`` may be called again with the same batch id
    after a failure: make what it does idempotent per batch id (e.g. overwrite a partition).

    >>> sink = ForeachBatchSink(lambda df, batch_id: None)
    """

    def __init__(self, fn: Callable[[Any, int], None]) -> None:
        if not callable(fn):
            raise TypeError(f"fn must be a callable (batch_df, batch_id), got {type(fn).__name__}")
        self.fn = fn

    def create_operator(self, type_info: Any) -> Any:
        raise RuntimeError(
            f"{type(self).__name__} is a streaming sink: it runs on Spark for a stream made by "
            "env.from_stream(...)"
        )

    @property
    def write_dataframe(self) -> Callable[[Any], None]:
        return self._write_once

    def _write_once(self, df: Any) -> None:
        self.write_batch(df, 0)

    def write_batch(self, df: Any, batch_id: int) -> None:
        self.fn(df, batch_id)


class ParquetBatchSink(ForeachBatchSink):
    """Writes each micro-batch's output as Parquet into ``<path>/batch=<id>/`` (overwritten
    when the batch is replayed, so the sink is idempotent per batch id). Read the whole output
    back with ``spark.read.parquet(path)`` (``batch`` becomes a column).

    >>> ParquetBatchSink("/tmp/out").path
    '/tmp/out'
    """

    format = "parquet"

    def __init__(self, path: str) -> None:
        if not isinstance(path, str) or not path:
            raise TypeError(f"path must be a non-empty str (a directory or URI), got {path!r}")
        super().__init__(self._write)
        self.path = path

    def _write(self, df: Any, batch_id: int) -> None:
        target = f"{self.path.rstrip('/')}/batch={batch_id}"
        df.write.mode("overwrite").format(self.format).save(target)


class JsonBatchSink(ParquetBatchSink):
    """Like :class:`ParquetBatchSink`, in JSON lines (``spark.read.json(path)`` reads it).

    >>> JsonBatchSink("/tmp/out").format
    'json'
    """

    format = "json"


def _batch_sink(writer: Any) -> Any:
    owner = getattr(writer, "__self__", None)
    return owner if isinstance(owner, ForeachBatchSink) else None


# ---------------------------------------------------------------------------------------------
# state of splits and subtasks


def _attribute_names(obj: Any) -> list[str]:
    names: list[str] = []
    for cls in type(obj).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        names.extend([slots] if isinstance(slots, str) else slots)
    names.extend(getattr(obj, "__dict__", {}))
    return names


def _is_clock(value: Any) -> bool:
    return hasattr(value, "current_processing_time") or hasattr(
        value, "get_current_processing_time"
    )


def _capture(obj: Any) -> dict[str, Any]:
    """The picklable data attributes of a watermark generator (nested generators included;
    clocks and functions are left out: the fresh generator keeps its own)."""
    out: dict[str, Any] = {}
    for name in _attribute_names(obj):
        try:
            value = getattr(obj, name)
        except AttributeError:
            continue
        if isinstance(value, WatermarkGenerator):
            out[name] = ("generator", _capture(value))
        elif callable(value) or _is_clock(value):
            continue
        else:
            try:
                pickle.dumps(value)
            except Exception:
                continue
            out[name] = ("value", value)
    return out


def _apply(obj: Any, captured: dict[str, Any]) -> None:
    for name, (kind, value) in captured.items():
        if kind == "generator":
            _apply(getattr(obj, name), value)
        else:
            setattr(obj, name, value)


def _restore_watermark(op: Any, watermark: int, services: dict[str, int]) -> None:
    """Put an operator (and its timer services) back at the watermark it had reached; the
    restored valve forwards only higher watermarks."""
    op.restore_watermark(watermark)
    manager = op.time_service_manager
    if manager is not None:
        for name, service in manager.services().items():
            if name in services:
                service.restore_watermark(services[name])


class _Discard:
    def emit_watermark(self, watermark: Any) -> None:
        pass

    def emit_watermark_status(self, status: Any) -> None:
        pass


class StreamingJob(SparkJob):
    """What the workers need to run one micro-batch (``version`` = batch id)."""

    def __init__(
        self,
        base: SparkJob,
        store: CheckpointStore,
        version: int,
        now: int,
        previous_now: int,
        previous: dict[str, Any] | None,
        split_states: dict[int, bytes],
    ) -> None:
        super().__init__(base.plan, base.job_parameters, None, None, base.placement)
        self.store = store
        self.version = version
        self.now = now
        self.previous_now = previous_now
        self.previous = previous  # the commit info of version - 1 (None: a fresh start)
        self.split_states = split_states

    # ------------------------------------------------------------------ source stage

    def run_stream_split(self, g: int, records: Iterable[Any]) -> Iterator[Any]:
        import pyarrow as pa

        clock = ManualProcessingTimeService(self.now)
        tasks = JobTasks(self.plan, self.job_parameters, clock, ship_prints=True, frame_sinks=True)
        task = tasks.build_split(g, records)
        if task.watermark_operators:
            raise ValueError(
                "assign_timestamps_and_watermarks(...) right after from_stream(...) is not "
                "supported yet on a streaming run; pass the strategy as "
                "from_stream(..., watermark_strategy=...)"
            )
        driver, tagger = task.driver, task.tagger
        emitter = driver.watermark_output
        saved = self.split_states.get(g)
        if saved is not None:
            state = pickle.loads(saved)
            _apply(driver.generator, state["generator"])
            emitter.current_watermark = state["watermark"]
            emitter.idle = state["idle"]
            tagger.seq = state["seq"]
        for op in tasks.operators:
            op.open()
        tagger.round, tagger.phase = self.version, 0
        tasks.cursor.backend = None
        while driver.read_up_to(65536) == 65536:
            pass
        tasks.cursor.backend = None
        tagger.phase = 1
        task.emit_periodic()
        for op in tasks.operators:
            op.close()
        yield self._rows(tasks, 1)
        state_bytes = pickle.dumps(
            {
                "generator": _capture(driver.generator),
                "watermark": emitter.current_watermark,
                "idle": emitter.idle,
                "seq": tagger.seq,
                "records": driver.records_read,
            }
        )
        yield pa.RecordBatch.from_pylist(
            [
                {
                    "stage": SPLIT_STATE,
                    "target": g,
                    "pkey": 0,
                    "position": b"",
                    "payload": state_bytes,
                }
            ],
            schema=arrow_row_schema(),
        )


    def stream_source_task(self, node_id: int) -> Callable[[Iterator[Any]], Iterator[Any]]:
        def run(batches: Iterator[Any]) -> Iterator[Any]:
            from pyspark import TaskContext

            context = TaskContext.get()
            partition = context.partitionId() if context is not None else 0
            node = next(n for n in self.plan.sources if n.id == node_id)
            yield from self.run_stream_split(partition, node.source.records(batches))

        return run

    # ------------------------------------------------------------------ exchange stages

    def _restore_subtask(self, task: Any, stage: Any, target: int) -> dict[int, Any]:
        """Restore keyed state, timers and valves of ``task``; returns the operators'
        watermarks to apply once they are open."""
        previous = self.previous
        if previous is None:
            return {}
        old_p = int(previous["parallelism"][str(stage.index)])
        entry = task.entry
        mine = entry.setup_info.key_group_range if entry.keyed_state_backend is not None else None
        snapshots: list[bytes] = []
        parts0: dict[str, bytes] = {}
        for i in range(old_p):
            if i != 0 and mine is not None:
                old = OperatorSetup(
                    subtask_index=i, parallelism=old_p, max_parallelism=stage.max_parallelism
                ).key_group_range
                if old.end < mine.start or old.start > mine.end:
                    continue
            elif i != 0:
                break
            _, parts = self.store.read_subtask(self.version - 1, stage.index, i)
            if i == 0:
                parts0 = parts
            if mine is not None and "keyed" in parts:
                snapshots.append(parts["keyed"])
        if snapshots:
            entry.initialize_state(snapshots)
        valves = pickle.loads(parts0["valves"]) if "valves" in parts0 else {}
        for index, valve in valves.items():
            current = task.valves[index]
            if valve.num_channels == current.num_channels:
                task.valves[index] = valve
            else:  # the upstream parallelism changed: every channel starts at the old output
                last = valve.last_output_watermark
                for channel in range(current.num_channels):
                    current.input_watermark(last, channel, _Discard())
        return pickle.loads(parts0["watermarks"]) if "watermarks" in parts0 else {}

    def _save_subtask(self, task: Any, stage: Any, target: int) -> None:
        entry = task.entry
        parts: dict[str, bytes] = {}
        if entry.keyed_state_backend is not None:
            parts["keyed"] = entry.snapshot_state().to_bytes()
        parts["valves"] = pickle.dumps(task.valves)
        watermarks = {}
        for node_id, op in task.operators.items():
            manager = op.time_service_manager
            services = (
                {n: s.current_watermark() for n, s in manager.services().items()}
                if manager is not None
                else {}
            )
            watermarks[node_id] = (op.current_watermark(), services)
        parts["watermarks"] = pickle.dumps(watermarks)
        meta = {"stage": stage.index, "subtask": target, "parallelism": stage.parallelism}
        self.store.write_subtask(self.version, stage.index, target, meta, parts)

    def run_stream_subtask(self, stage_index: int, target: int, chunks: list[bytes]) -> Any:
        stage = self.plan.stages[stage_index]
        tasks = JobTasks(
            self.plan,
            self.job_parameters,
            ManualProcessingTimeService(self.now),
            ship_prints=True,
            frame_sinks=True,
        )
        clock = ManualProcessingTimeService(self.previous_now)
        task = tasks.build_subtask(stage, target, clock, None)
        watermarks = self._restore_subtask(task, stage, target)
        for op in tasks.operators:
            op.open()
        for node_id, (watermark, services) in watermarks.items():
            op = task.operators.get(node_id)
            if op is not None:
                _restore_watermark(op, watermark, services)
        entries: list[tuple] = []
        for chunk in chunks:
            entries.extend(pickle.loads(chunk))
        entries.sort(key=_by_position_and_channel)  # as the bounded runners order them
        task.advance_clock(self.now, (self.version, -1, 0, 0, 0))
        task.process(entries)
        self._save_subtask(task, stage, target)
        for op in tasks.operators:
            op.close()
        clock.shutdown()
        return self._rows(tasks, 1)

    def stream_stage_task(self, stage_index: int) -> Callable[[Iterator[Any]], Iterator[Any]]:
        def run(batches: Iterator[Any]) -> Iterator[Any]:
            current: int | None = None
            chunks: list[bytes] = []
            for batch in batches:
                targets = batch.column("target").to_pylist()
                payloads = batch.column("payload").to_pylist()
                for t, payload in zip(targets, payloads, strict=True):
                    if t != current:
                        if current is not None:
                            yield self.run_stream_subtask(stage_index, current, chunks)
                        current, chunks = t, []
                    chunks.append(payload)
            if current is not None:
                yield self.run_stream_subtask(stage_index, current, chunks)

        return run


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
                sink = _batch_sink(node.frame_writer)
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
