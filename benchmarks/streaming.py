"""Streaming on Spark: the keyed-timer job with 10^4 .. 10^6 keys in state, sparktide next to
Spark's own ``transformWithStateInPandas``, on the same micro-batches in the same run.

The job, per key: a count in a ValueState; every record increments it and registers an
event-time timer at ``ts + delay``; a timer emits ``(key, timer time, count)``::

    sparktide   env.from_stream(files, for_bounded_out_of_orderness(bound), timestamp_column="ts")
                  .key_by(key).process(Alarm(delay))          # parallelism --parallelism
                  .sink_to(ForeachBatchSink(noop write))      # execute(trigger="available_now")

    Spark       files.withWatermark("event_time", bound + 1 ms)
                  .groupBy("key").transformWithStateInPandas(AlarmProcessor(delay),
                      outputMode="Append", timeMode="EventTime")   # RocksDB state store
                  .writeStream.format("noop")                     # trigger(availableNow=True)

(Flink's bounded out-of-orderness watermark is ``max ts - bound - 1`` and fires timers
``<= watermark``; Spark's is ``max ts`` minus the ``withWatermark`` delay, so Spark gets
``bound + 1`` ms to fire the same timers: ``common.spark_watermark``.) Spark's Python state
API needs ``protobuf`` (``pip install protobuf``); an engine that fails is printed as ``failed``
with the reason.

**Input.** Parquet files ``(key long, ts long)`` written before anything runs, read by a file
stream with ``maxFilesPerTrigger=1``: one file, one micro-batch, the same files for both engines.
First ``ceil(keys / warm-up records)`` warm-up files put every key into state (keys in order),
then ``--settle`` batches let the warm-up's timers fire, then ``--batches`` measured batches.
Every steady batch holds ``--batch-records`` records over a slice of consecutive keys that moves
on by ``--batch-records`` keys per batch (wrapping around: with fewer keys than records a batch
touches every key several times). Batch ``b`` has event times in ``[b s, b s + 500 ms)`` with
``s = 1000`` ms, shuffled; the bound is 500 ms and the delay 1000 ms, so nothing is late and the
timers of batch ``b`` all fire two batches later in sparktide (watermark at the end of each
batch) and three batches later in Spark (a batch fires the timers up to the watermark of the
batches before it): every steady batch fires about ``--batch-records`` timers.

**Measured**, per engine and key count, over the measured batches only: records/s (their
records over the sum of their durations), p50, p95 and p99 batch time (for both engines the
Structured Streaming query's ``durationMs["triggerExecution"]``: the whole micro-batch, Spark's
planning and its offset and commit logs as well as the engine's work; sparktide's own
``duration_ms`` times only its ``foreachBatch`` function), and
checkpoint bytes per key after the run: sparktide's checkpoint directory without Spark's own
``spark/`` part, Spark's ``state/`` directory. Each is what the engine keeps on disk, not one
snapshot: sparktide's retained versions (snapshots and what it logs between them), the RocksDB
store's ``minBatchesToRetain`` versions (default 100, sharing their SST files); with few keys
the timers and the per-batch files weigh more per key than with many. The header prints the
load average: on a busy machine both engines slow down.

**Latency** (``--interval-ms``, default 1000; 0 skips it). Then, per key count, sparktide (per
backend) and Spark's floor run again while the same files arrive one every ``--interval-ms``
(a micro-batch starts as soon as a file is there; the warm-up files each arrive once the run read
the ones before, and the cadence starts after them, so that a warm-up slower than the cadence
leaves no backlog to the batches measured): Spark's floor is a trivial stateful query,
``groupBy("key").count()`` in update mode into ``foreachBatch``. A last table gives, over the
measured batches, p50/p95/p99 of the batch time and of the end-to-end latency: from a file's
arrival in the folder to the commit of the micro-batch that wrote the result rows it led to
(see :mod:`sparktide.nexmark.latency`, which both this and ``python -m sparktide.nexmark
--stream`` use).

**Check.** First both engines run a small input (``--check-keys``; the two halves of the keys
in turn) and their outputs are compared. Spark fires a timer one batch later than sparktide
and, within a batch, after it has processed the batch's rows: a timer registered in batch ``b``
fires after ``b + 2`` in sparktide and after the rows of ``b + 3`` in Spark, which the key is
not in, so the counts are equal. What sparktide fires in its last batch Spark fires in the
no-data batch that closes its run; were that batch missing, only the timers up to the
watermark of the last-but-one batch would be compared (the line says so).

**State backends** (``--backend hashmap,rocksdb``: sparktide once per backend; RocksDB with
incremental checkpoints). A second table, per sparktide run: p50 and p95 batch time, the
resident set of the largest PySpark worker process after each measured batch (first, last,
min-max: flat when state does not pile up in the workers), the checkpoint bytes each batch
uploaded against the total size of its checkpoint's files (medians over the measured batches;
RocksDB: its incremental checkpoints, the SST files that are new plus the few small files every
checkpoint has; the heap: the state files the batch wrote against the state files its commit
names), and how the subtasks got their state, summed over the measured batches (reused in
memory, reused on disk, restored from the checkpoint, created). ``--changed 0.01``: every
steady batch touches 1% of the keys (instead of ``--batch-records`` records).

Usage::

    python benchmarks/streaming.py                            # 10^4 and 10^5 keys
    python benchmarks/streaming.py --keys 10000,100000,1000000
    python benchmarks/streaming.py --keys 10000 --batch-records 20000 --batches 10
    python benchmarks/streaming.py --engines sparktide --backend rocksdb,hashmap \
        --keys 10000,1000000 --changed 0.01 --batches 50 --check-keys 0
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

from common import (
    SPARK_STATE_STORE,
    failure,
    file_stream,
    spark_versions,
    spark_watermark,
    write_batch_file,
)

from sparktide.datastream import KeyedProcessFunction
from sparktide.nexmark.latency import (
    CommittedBatch,
    LatencyFigures,
    LiveFeed,
    SparktideLatencyProbe,
    every_progress,
    latency_table,
    percentile,
    spark_floor,
    timed_batches,
)

STEP_MS = 1_000  # batch b starts at event time b * STEP_MS
SPREAD_MS = 500  # its records' times are in [b * STEP_MS, b * STEP_MS + SPREAD_MS)
BOUND_MS = 500  # the watermark's out-of-orderness bound
DELAY_MS = 1_000  # timer at ts + delay
START_MS = 1_700_000_000_000
SCHEMA = "key long, ts long"
ALARM_SCHEMA = "key long, at long, count long"


# ---------------------------------------------------------------------------------------------
# The job on each engine (pickled into Spark's tasks by value: they live in __main__)


class Alarm(KeyedProcessFunction):
    """Per key: a count in ValueState, an event-time timer at ts + delay per record; a timer
    emits (key, timer time, count)."""

    def __init__(self, delay_ms: int) -> None:
        self.delay_ms = delay_ms

    def open(self, runtime_context: Any) -> None:
        from sparktide.common import Types
        from sparktide.datastream.state import ValueStateDescriptor

        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value: Any, ctx: Any) -> None:
        self.count.update((self.count.value() or 0) + 1)
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + self.delay_ms)

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        from sparktide.common import Row

        yield Row(key=ctx.get_current_key(), at=timestamp, count=self.count.value())


def record_key(row: Any) -> int:
    return row.key


def _stateful_processor_class() -> type:
    """Spark's version of :class:`Alarm` (a function: pyspark imports only when Spark runs)."""
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class AlarmProcessor(StatefulProcessor):
        def __init__(self, delay_ms: int) -> None:
            self.delay_ms = delay_ms

        def init(self, handle: Any) -> None:
            self.handle = handle
            self.count = handle.getValueState("count", "count long")

        def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Any:
            n = 0
            stamps: set[int] = set()
            for frame in rows:
                n += len(frame)
                stamps.update(frame["ts"].unique().tolist())
            previous = self.count.get()
            self.count.update(((previous[0] if previous else 0) + n,))
            for ts in stamps:  # one timer per distinct time, as a timer service keeps them
                self.handle.registerTimer(ts + self.delay_ms)
            return iter([])

        def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Any:
            import pandas as pd

            count = self.count.get()
            yield pd.DataFrame(
                {
                    "key": [key[0]],
                    "at": [expiredTimerInfo.getExpiryTimeInMs()],
                    "count": [count[0] if count else 0],
                }
            )

    return AlarmProcessor


# ---------------------------------------------------------------------------------------------
# Input files


class Plan:
    """The micro-batches of one key count: warm-up, settle and measured batches."""

    def __init__(
        self, keys: int, batch_records: int, warmup_records: int, settle: int, batches: int
    ):
        self.keys = keys
        self.batch_records = batch_records
        self.warmup = math.ceil(keys / warmup_records)
        self.warmup_records = warmup_records
        self.settle = settle
        self.batches = batches

    @property
    def total(self) -> int:
        return self.warmup + self.settle + self.batches

    @property
    def measured(self) -> range:
        """Batch ids of the measured batches."""
        return range(self.warmup + self.settle, self.total)

    def batch(self, b: int, seed: int = 1) -> tuple[Any, Any]:
        """``(keys, ts)`` arrays of batch ``b``."""
        import numpy as np

        rng = np.random.default_rng(seed + b)
        if b < self.warmup:
            keys = np.arange(b * self.warmup_records, min((b + 1) * self.warmup_records, self.keys))
        else:
            first = (b - self.warmup) * self.batch_records
            keys = (first + np.arange(self.batch_records)) % self.keys
        rng.shuffle(keys)
        ts = START_MS + b * STEP_MS + rng.integers(0, SPREAD_MS, len(keys))
        return keys.astype("int64"), ts.astype("int64")


def write_files(plan: Plan, directory: Path, seed: int = 1) -> int:
    """One Parquet file per micro-batch, modification times in batch order; the records."""
    import pyarrow as pa

    directory.mkdir(parents=True)
    records = 0
    for b in range(plan.total):
        keys, ts = plan.batch(b, seed)
        records += len(keys)
        write_batch_file(pa.table({"key": keys, "ts": ts}), directory, b)
    return records


# ---------------------------------------------------------------------------------------------
# Runs


class Run:
    """One engine's run: per batch (id, records, latency ms), output rows if collected, bytes of
    its state in the checkpoint; sparktide's runs also per batch the largest worker RSS, the
    checkpoint bytes uploaded and the checkpoint's total bytes, and how subtasks got their
    state."""

    def __init__(
        self,
        batches: list[tuple[int, int, float]],
        ckpt_bytes: int,
        rows: list[tuple[int, int, int]],
        state: dict[int, BatchState] | None = None,
    ) -> None:
        self.batches = batches
        self.ckpt_bytes = ckpt_bytes
        self.rows = rows
        self.state = state or {}


class BatchState:
    """What one sparktide batch did with its state: the largest worker RSS after it, the
    checkpoint bytes it uploaded, the checkpoint's total bytes, per outcome its restores."""

    def __init__(self, rss: int, uploaded: int, total: int, restores: dict[str, int]) -> None:
        self.rss = rss
        self.uploaded = uploaded
        self.total = total
        self.restores = restores


def worker_rss_bytes() -> int:
    """The resident set of the largest PySpark worker process of this machine (``/proc``)."""
    largest = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read()
            if b"pyspark.daemon" not in cmdline and b"pyspark.worker" not in cmdline:
                continue
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        largest = max(largest, int(line.split()[1]) * 1024)
        except OSError:
            continue
    return largest


def batch_state(metrics: Any, ckpt: Path) -> BatchState:
    """A batch's :class:`BatchState` from its metrics (and, on the heap, its commit file)."""
    import json

    restores = {
        k: int(v["count"])
        for k, v in metrics.get("state_restores", {}).items()
        if isinstance(v, dict) and v.get("count")
    }
    native = metrics.get("rocksdb_checkpoints")
    if native is not None:
        uploaded, total = int(native["uploaded_bytes"]), int(native["total_bytes"])
    else:  # the state files of the chains the commit names, those this batch wrote
        version = metrics["batch_id"]
        body = json.loads((ckpt / "commits" / f"{version}.json").read_text())["body"]
        state = [r for p, r in body["files"].items() if p.startswith("state/")]
        total = sum(r["size"] for r in state)
        uploaded = sum(r["size"] for r in state if r["version"] == version)
    return BatchState(worker_rss_bytes(), uploaded, total, restores)


def _files(spark: Any, directory: Path) -> Any:
    return file_stream(spark, directory, SCHEMA)


def dir_bytes(path: Path, skip: str | None = None) -> int:
    """Bytes of the files under ``path``, without its subdirectory ``skip``."""
    total = 0
    for root, dirs, files in os.walk(path):
        if skip is not None and Path(root) == path and skip in dirs:
            dirs.remove(skip)
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    return total


def _sparktide_job(
    spark: Any, frame: Any, parallelism: int, backend: str, sink: Callable[[Any, int], None]
) -> Any:
    """An environment holding the keyed-timer job over ``frame``, its output to ``sink``."""
    from sparktide.common import Duration, Types, WatermarkStrategy
    from sparktide.datastream import StreamExecutionEnvironment
    from sparktide.datastream.connectors import ForeachBatchSink
    from sparktide.datastream.state_backend import (
        EmbeddedRocksDBStateBackend,
        HashMapStateBackend,
    )

    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(parallelism)
    env.set_state_backend(
        EmbeddedRocksDBStateBackend(enable_incremental_checkpointing=True)
        if backend == "rocksdb"
        else HashMapStateBackend()
    )
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(BOUND_MS))
    output = Types.ROW_NAMED(["key", "at", "count"], [Types.LONG(), Types.LONG(), Types.LONG()])
    (
        env.from_stream(frame, strategy, timestamp_column="ts")
        .key_by(record_key, key_type=Types.LONG())
        .process(Alarm(DELAY_MS), output_type=output)
        .sink_to(ForeachBatchSink(sink))
    )
    return env


def run_sparktide(
    spark: Any,
    files: Path,
    ckpt: Path,
    parallelism: int,
    collect: bool = False,
    backend: str = "hashmap",
) -> Run:
    rows: list[tuple[int, int, int]] = []

    def sink(df: Any, batch_id: int) -> None:
        if collect:
            rows.extend(tuple(r) for r in df.collect())
        else:
            df.write.format("noop").mode("overwrite").save()

    env = _sparktide_job(spark, _files(spark, files), parallelism, backend, sink)
    with every_progress(spark):
        client = env.execute_async(checkpoint_location=str(ckpt), trigger="available_now")
    state: dict[int, BatchState] = {}
    client.add_listener(lambda m: state.__setitem__(m["batch_id"], batch_state(m, ckpt)))
    client.await_termination()
    ids = [p["batch_id"] for p in client.recent_progress]
    timed = timed_batches(client)
    batches = [(i, b.records, b.duration_ms) for i, b in zip(ids, timed, strict=True)]
    return Run(batches, dir_bytes(ckpt, skip="spark"), rows, state)


def live_ticks(plan: Plan) -> list[dict[str, Any]]:
    """The plan's batches as the ticks of a :class:`LiveFeed` (one file each)."""
    import pyarrow as pa

    ticks = []
    for b in range(plan.total):
        keys, ts = plan.batch(b)
        ticks.append({"in": pa.table({"key": keys, "ts": ts})})
    return ticks


def live_sparktide(
    spark: Any, feed: LiveFeed, ckpt: Path, parallelism: int, backend: str, timeout_s: float
) -> list[CommittedBatch]:
    """The keyed-timer job while ``feed`` writes its input (a micro-batch as soon as a file is
    there), until it read all of it: its committed batches."""
    probe = SparktideLatencyProbe()
    frame = _files(spark, feed.folders["in"])
    env = _sparktide_job(spark, frame, parallelism, backend, probe.count_rows)
    with every_progress(spark):
        client = env.execute_async(checkpoint_location=str(ckpt), trigger="continuous")
    return probe.follow(client, feed, timeout_s)


def latency_runs(
    spark: Any, plan: Plan, work: Path, args: argparse.Namespace, backends: list[str]
) -> list[LatencyFigures]:
    """sparktide (per backend) and Spark's floor (``groupBy(key).count()``) while the plan's
    files arrive every ``--interval-ms``; figures over the measured batches."""
    ticks = live_ticks(plan)
    timeout = plan.total * args.interval_ms / 1000 + 600
    first = plan.warmup + plan.settle
    figures = []
    for backend in backends:
        feed = LiveFeed(ticks, work / f"live-{backend}", args.interval_ms, plan.warmup)
        batches = live_sparktide(
            spark, feed, work / f"live-ckpt-{backend}", args.parallelism, backend, timeout
        )
        name = f"sparktide {backend}, {plan.keys:,} keys"
        figures.append(LatencyFigures.of(name, feed.arrivals, batches, first))
    feed = LiveFeed(ticks, work / "live-floor", args.interval_ms, plan.warmup)
    batches = spark_floor(spark, feed, "in", "key", work / "live-ckpt-floor", timeout)
    name = f"Spark floor: groupBy(key).count(), {plan.keys:,} keys"
    figures.append(LatencyFigures.of(name, feed.arrivals, batches, first))
    return figures


def run_spark(spark: Any, files: Path, ckpt: Path, collect: bool = False) -> Run:
    spark.conf.set("spark.sql.streaming.stateStore.providerClass", SPARK_STATE_STORE)
    spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "100000")  # every batch
    processor = _stateful_processor_class()(DELAY_MS)
    out = (
        spark_watermark(_files(spark, files), "ts", BOUND_MS)
        .groupBy("key")
        .transformWithStateInPandas(
            statefulProcessor=processor,
            outputStructType=ALARM_SCHEMA,
            outputMode="Append",
            timeMode="EventTime",
        )
    )
    rows: list[tuple[int, int, int]] = []
    writer = out.writeStream.option("checkpointLocation", str(ckpt)).trigger(availableNow=True)
    if collect:
        writer = writer.foreachBatch(lambda df, _: rows.extend(tuple(r) for r in df.collect()))
    else:
        writer = writer.format("noop")
    query = writer.start()
    query.awaitTermination()
    # the batches that read a file, numbered as the files (no-data batches left out)
    with_input = [p for p in query.recentProgress if p["numInputRows"] > 0]
    batches = [
        (b, p["numInputRows"], float(p["durationMs"]["triggerExecution"]))
        for b, p in enumerate(with_input)
    ]
    return Run(batches, dir_bytes(ckpt / "state"), rows)


# ---------------------------------------------------------------------------------------------
# The check


def check(spark: Any, keys: int, parallelism: int, work: Path) -> str:
    """Both engines on a small input; what is comparable must be equal."""
    # halves of the keys in turn (warm-up too): a key is touched every other batch, so never
    # in the batch after the one in which sparktide fires its timers (two batches after)
    plan = Plan(keys, keys // 2, keys // 2, 0, 6)
    files = work / "check-in"
    write_files(plan, files)
    ours = run_sparktide(spark, files, work / "check-sparktide", parallelism, collect=True)
    theirs = run_spark(spark, files, work / "check-spark", collect=True)
    if sorted(ours.rows) == sorted(theirs.rows):
        return (
            f"checked: {len(ours.rows):,} rows equal ({keys:,} keys, {plan.total} batches; Spark "
            "fires each timer one batch later, the last ones in its closing no-data batch)"
        )
    # without Spark's closing no-data batch: compare the timers up to the lowest watermark after
    # the last-but-one batch (sparktide fires the others in its last batch)
    comparable = START_MS + (plan.total - 2) * STEP_MS - BOUND_MS - 1
    a = sorted(r for r in ours.rows if r[1] <= comparable)
    b = sorted(r for r in theirs.rows if r[1] <= comparable)
    if a != b:
        only_a, only_b = sorted(set(a) - set(b)), sorted(set(b) - set(a))
        raise SystemExit(
            f"check failed: {len(a)} sparktide rows, {len(b)} Spark rows; only sparktide: "
            f"{only_a[:5]}, only Spark: {only_b[:5]}"
        )
    return (
        f"checked: {len(a):,} rows equal ({keys:,} keys, {plan.total} batches; timers up to the "
        f"watermark of the last-but-one batch; sparktide fired {len(ours.rows) - len(a):,} more "
        f"in its last batch, Spark {len(theirs.rows) - len(b):,})"
    )


# ---------------------------------------------------------------------------------------------
# Output


COLUMNS = (
    "engine",
    "keys",
    "batches",
    "records/batch",
    "records/s",
    "p50 ms",
    "p95 ms",
    "p99 ms",
    "ckpt bytes/key",
)


def _line(cols: tuple[str, ...]) -> str:
    engine, keys, batches, per_batch, rate, p50, p95, p99, per_key = cols
    return (
        f"{engine:<20} | {keys:>9} | {batches:>7} | {per_batch:>13} | {rate:>9} | {p50:>7} | "
        f"{p95:>7} | {p99:>7} | {per_key:>14}"
    )


def _row(engine: str, plan: Plan, run: Run | str) -> str:
    if isinstance(run, str):
        failed = (engine, f"{plan.keys:,}", "failed", "-", "-", "-", "-", "-", "-")
        return _line(failed) + f"\n    {run}"
    measured = set(plan.measured)
    batches = [(records, ms) for b, records, ms in run.batches if b in measured]
    records = sum(r for r, _ in batches)
    seconds = sum(ms for _, ms in batches) / 1000
    latencies = [ms for _, ms in batches]
    return _line(
        (
            engine,
            f"{plan.keys:,}",
            f"{len(batches)}",
            f"{records // max(len(batches), 1):,}",
            f"{records / seconds:,.0f}" if seconds else "-",
            *(f"{percentile(latencies, q):,.0f}" if latencies else "-" for q in (0.5, 0.95, 0.99)),
            f"{run.ckpt_bytes / plan.keys:,.1f}",
        )
    )


STATE_COLUMNS = (
    "backend",
    "keys",
    "p50 ms",
    "p95 ms",
    "worker RSS MB first/last (min-max)",
    "uploaded/batch",
    "ckpt total",
    "ratio",
    "restores",
)


def _state_line(cols: tuple[str, ...]) -> str:
    backend, keys, p50, p95, rss, uploaded, total, ratio, restores = cols
    return (
        f"{backend:<8} | {keys:>9} | {p50:>7} | {p95:>7} | {rss:>34} | {uploaded:>14} | "
        f"{total:>14} | {ratio:>6} | {restores}"
    )


def _state_row(backend: str, plan: Plan, run: Run) -> str:
    import statistics

    measured = [b for b in plan.measured if b in run.state]
    latencies = [ms for b, _, ms in run.batches if b in set(measured)]
    if not measured or not latencies:
        return _state_line((backend, f"{plan.keys:,}", *["-"] * 7))
    rss = [run.state[b].rss / 2**20 for b in measured]
    uploaded = statistics.median(run.state[b].uploaded for b in measured)
    total = statistics.median(run.state[b].total for b in measured)
    restores: dict[str, int] = {}
    for b in measured:
        for k, n in run.state[b].restores.items():
            restores[k] = restores.get(k, 0) + n
    return _state_line(
        (
            backend,
            f"{plan.keys:,}",
            f"{percentile(latencies, 0.5):,.0f}",
            f"{percentile(latencies, 0.95):,.0f}",
            f"{rss[0]:,.0f}/{rss[-1]:,.0f} ({min(rss):,.0f}-{max(rss):,.0f})",
            f"{uploaded:,.0f}",
            f"{total:,.0f}",
            f"{uploaded / total:.1%}" if total else "-",
            ", ".join(f"{k} {n}" for k, n in sorted(restores.items())),
        )
    )


def _attempt(fn: Callable[[], Run]) -> Run | str:
    """The run, or why it failed (the table goes on)."""
    try:
        return fn()
    except Exception as exc:  # a failed engine is a result too
        return failure(exc)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--keys", default="10000,100000", help="key counts, comma-separated")
    ap.add_argument("--batch-records", type=int, default=10_000, help="records per steady batch")
    ap.add_argument("--batches", type=int, default=10, help="measured batches per run")
    ap.add_argument("--settle", type=int, default=3, help="unmeasured steady batches first")
    ap.add_argument("--warmup-records", type=int, default=100_000, help="records per warm-up batch")
    ap.add_argument("--check-keys", type=int, default=200, help="keys of the check (0: skip)")
    ap.add_argument("--engines", default="sparktide,spark", help="which engines run")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--parallelism", type=int, default=2, help="sparktide's and Spark's shuffle")
    ap.add_argument("--work-dir", default=None, help="input files and checkpoints (default: tmp)")
    ap.add_argument(
        "--backend", default="hashmap", help="sparktide's state backends: hashmap and/or rocksdb"
    )
    ap.add_argument(
        "--changed",
        type=float,
        default=None,
        help="fraction of the keys each steady batch touches (instead of --batch-records)",
    )
    ap.add_argument(
        "--interval-ms", type=int, default=1000,
        help="the cadence at which the files arrive in the latency runs (0: no latency runs)",
    )  # fmt: skip
    args = ap.parse_args(argv)
    try:
        key_counts = [int(k) for k in args.keys.split(",") if k.strip()]
    except ValueError:
        ap.error(f"--keys must be comma-separated integers, got {args.keys!r}")
    if not key_counts or min(key_counts) < 1:
        ap.error("--keys needs at least one key count, each >= 1")
    for name in ("batch_records", "batches", "warmup_records", "parallelism"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.settle < 0 or args.check_keys < 0 or args.check_keys == 1:
        ap.error("--settle must be >= 0 and --check-keys 0 or >= 2")
    backends = [b.strip() for b in args.backend.split(",") if b.strip()]
    if not backends or set(backends) - {"hashmap", "rocksdb"}:
        ap.error(f"--backend must name hashmap and/or rocksdb, got {args.backend!r}")
    if args.interval_ms < 0:
        ap.error(f"--interval-ms must be >= 0 (0: no latency runs), got {args.interval_ms}")
    if args.changed is not None and not 0 < args.changed <= 1:
        ap.error("--changed must be a fraction in (0, 1]")
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    if not engines or set(engines) - {"sparktide", "spark"}:
        ap.error(f"--engines must name sparktide and/or spark, got {args.engines!r}")

    from sparktide.spark.session import get_spark

    started = time.perf_counter()
    spark = get_spark(args.master)
    spark.conf.set("spark.sql.shuffle.partitions", args.parallelism)
    print(spark_versions(spark))
    print(
        f"{platform.machine()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; "
        f"Spark master {spark.sparkContext.master}; sparktide parallelism {args.parallelism}, "
        f"Spark shuffle partitions {args.parallelism}, state store RocksDB"
    )
    print(
        "per steady batch "
        + (
            f"{args.batch_records:,} records"
            if args.changed is None
            else f"{args.changed:.1%} of the keys"
        )
        + f", {args.settle} settle + "
        f"{args.batches} measured batches, warm-up batches of {args.warmup_records:,} records; "
        f"event time {STEP_MS} ms per batch ({SPREAD_MS} ms spread), out-of-orderness "
        f"{BOUND_MS} ms, timer delay {DELAY_MS} ms"
    )
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="sparktide-streaming-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        if args.check_keys and set(engines) == {"sparktide", "spark"}:
            print(check(spark, args.check_keys, args.parallelism, work / "check"), flush=True)
        header = _line(COLUMNS)
        print(header)
        print("-" * len(header), flush=True)
        state_rows: list[str] = []
        latencies: list[LatencyFigures] = []
        for keys in key_counts:
            per_batch = (
                args.batch_records if args.changed is None else max(1, round(keys * args.changed))
            )
            plan = Plan(keys, per_batch, args.warmup_records, args.settle, args.batches)
            files = work / f"in-{keys}"
            write_files(plan, files)
            for backend in backends if "sparktide" in engines else []:
                ckpt = work / f"sparktide-{keys}"
                run = _attempt(
                    partial(run_sparktide, spark, files, ckpt, args.parallelism, backend=backend)
                )
                print(_row(f"sparktide {backend}", plan, run), flush=True)
                if not isinstance(run, str):
                    state_rows.append(_state_row(backend, plan, run))
                    print(f"    {state_rows[-1]}", flush=True)
                shutil.rmtree(ckpt, ignore_errors=True)
            if "spark" in engines:
                run = _attempt(partial(run_spark, spark, files, work / f"spark-{keys}"))
                print(_row("Spark TWS (pandas)", plan, run), flush=True)
            if args.interval_ms:
                live = work / f"live-{keys}"
                live_backends = backends if "sparktide" in engines else []
                latencies += latency_runs(spark, plan, live, args, live_backends)
            for name in (f"in-{keys}", f"sparktide-{keys}", f"spark-{keys}", f"live-{keys}"):
                shutil.rmtree(work / name, ignore_errors=True)
        if state_rows:
            print()
            header = _state_line(STATE_COLUMNS)
            print(header)
            print("-" * len(header))
            print("\n".join(state_rows), flush=True)
        if latencies:
            print(
                f"\nlatency: the same files arriving one micro-batch every {args.interval_ms} ms, "
                "a micro-batch as soon as one is there; over the measured batches:\n"
            )
            print(latency_table(latencies), flush=True)
    finally:
        if args.work_dir is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"total {time.perf_counter() - started:.0f} s; load average now {os.getloadavg()[0]:.1f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
