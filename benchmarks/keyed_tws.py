"""Keyed state and timers on Spark: a KeyedProcessFunction with a MapState and event-time timers
next to Spark's own ``transformWithStateInPandas``, batch and stream, on the same records, in one
Spark session (``local[2]``, parallelism 2, Spark's shuffle partitions 2).

**The job**, the same on both engines. Records ``(key long, ts long, value long)``, keys in
``[0, --keys)``. Per key a MapState from a 200 ms bucket of event time (``ts // 200``) to the
``(records, total)`` of the bucket's values; per bucket an event-time timer at the bucket's end
plus 1 s (``bucket * 200 + 199 + 1000``). The timer emits ``(key, at, records, total)`` (``at``
is the timer's time) and removes its bucket from the map. With 1 s of delay and 500 ms of
out-of-orderness a key's map holds the buckets of the last 1.5 to 2.5 s of event time that it
has records in (7 to 13 at the defaults)::

    sparktide   env.from_dataframe(records, for_bounded_out_of_orderness(500 ms),
                                   timestamp_column="ts")                   # batch
                env.from_stream(files, ...same...)                          # stream
                  .key_by(key).process(Buckets())      # MapState; a timer registered per
                                                       # record (the timer service keeps one
                                                       # per key and time)
                  .to_dataframe(ordered=False) -> noop # batch
                  .foreach_batch(noop write)           # stream, execute(trigger="available_now")

    Spark       files.withWatermark("event_time", 501 ms)   # common.spark_watermark
                  .groupBy("key").transformWithStateInPandas(BucketsProcessor(),
                      outputMode="Append", timeMode="EventTime")   # RocksDB state store
                  .writeStream.format("noop")                      # trigger(availableNow=True)

``BucketsProcessor`` adds up a key's rows per bucket in Python, then reads and writes the map
once per bucket and registers a timer when the bucket is new (what a competent user of the API
writes: each state call is a round trip to the JVM).

**Input.** ``--records`` records, event time moving on evenly by 1 s per ``--records /
--batches`` records (so a key has ``records / (keys * 5 * batches)`` records per bucket: 20 at
the defaults), each record up to 499 ms later (so none is late for the watermark), random keys
and values in ``[0, 1000)``. sparktide's batch reads them from a DataFrame cached in Spark
(two partitions, each a contiguous stretch of time: a source split each), the streams from
``--batches`` Parquet files, one per micro-batch (``maxFilesPerTrigger=1``).

**Spark in batch.** Spark runs ``transformWithStateInPandas`` on a batch DataFrame, but a batch
query has no watermark, so its event-time timers never fire and it emits nothing (the check
shows it). Spark's "batch" here is therefore the same query over the same files as one
micro-batch (every file in the first trigger) plus one sentinel record far in the future (key
-1): its watermark lets the closing no-data batch fire every timer, as the end of input does in
sparktide's batch; the sentinel's own timer never fires. Its input is the Parquet files, not the
cached DataFrame: reading them is part of Spark's measured time.

**Check.** First every run on a small input (``--check-records``, ``--check-keys``), their
outputs collected (without protobuf: sparktide's only). sparktide's batch emits every timer;
Spark's batch must emit the same rows. In a stream a timer fires once the watermark passes it;
after the last file the watermark is ``max ts - 501``, so both streams emit exactly the batch's
rows with ``at`` up to it (sparktide in its last batch, Spark in the no-data batch that closes
its run; a timer at the watermark itself fires in both), and the later timers stay pending.
What is compared: the sorted lists of ``(key, at, records, total)``.

**Measured**, per engine and mode, best of ``--repeat`` runs (the four alternating in each
round): wall time from building the job to the end of its run (a stream: its whole query, all
its micro-batches), records/s over it, and CPU time per record in µs split into Spark's JVM,
its Python workers and the driver (this process), read from ``/proc`` as
``benchmarks/floor.py`` reads it (``common.cpu_now``), of the run with the least CPU in total;
then per mode the ratio Spark / sparktide by wall time and by CPU (2x: sparktide needs half).
The load average is printed before and after: on a busy machine both engines slow down.

Spark's Python state API needs ``protobuf`` (``pip install -e '.[bench]'``, or ``pip install
protobuf``); without it Spark's runs are reported as failed with that reason. Spark's driver-side
state worker prints a few lines of its own (``Starting Streaming TransformWithStateInPandas
Python worker.`` ...) for each of its queries.

Usage::

    python benchmarks/keyed_tws.py                       # 10^6 records, 10^3 keys, best of 3
    python benchmarks/keyed_tws.py --records 100000 --keys 1000 --repeat 1
    python benchmarks/keyed_tws.py --modes stream --batches 20
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from common import (
    SPARK_STATE_STORE,
    CpuRun,
    cpu_timed,
    failure,
    file_stream,
    load_average,
    spark_versions,
    spark_watermark,
    write_batch_file,
)

from sparktide.datastream import KeyedProcessFunction

PARALLELISM = 2
STEP_MS = 1_000  # event time per micro-batch
BOUND_MS = 500  # the watermark's out-of-orderness bound
BUCKET_MS = 200  # a MapState entry per key and bucket of event time
DELAY_MS = 1_000  # a bucket's timer: its end plus the delay
START_MS = 1_700_000_000_000
SENTINEL_MS = START_MS + 10**9  # Spark's batch: the sentinel record's time
SCHEMA = "key long, ts long, value long"
OUTPUT_SCHEMA = "key long, at long, records long, total long"


def timer_at(bucket: int) -> int:
    """The time of a bucket's timer."""
    return bucket * BUCKET_MS + BUCKET_MS - 1 + DELAY_MS


def timer_bucket(at: int) -> int:
    """The bucket of a timer (the inverse of :func:`timer_at`)."""
    return (at - DELAY_MS + 1) // BUCKET_MS - 1


# ---------------------------------------------------------------------------------------------
# The job on each engine (pickled into Spark's tasks by value: they live in __main__)


class Buckets(KeyedProcessFunction):
    """Per key a MapState bucket -> (records, total); a timer per record at its bucket's
    :func:`timer_at`; a timer emits (key, at, records, total) and removes its bucket."""

    def open(self, runtime_context: Any) -> None:
        from sparktide.common import Types
        from sparktide.datastream.state import MapStateDescriptor

        pair = Types.TUPLE([Types.LONG(), Types.LONG()])
        self.sums = runtime_context.get_map_state(MapStateDescriptor("sums", Types.LONG(), pair))

    def process_element(self, value: Any, ctx: Any) -> None:
        bucket = value.ts // BUCKET_MS
        old = self.sums.get(bucket)
        self.sums.put(
            bucket, (1, value.value) if old is None else (old[0] + 1, old[1] + value.value)
        )
        ctx.timer_service().register_event_time_timer(timer_at(bucket))

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        bucket = timer_bucket(timestamp)
        records, total = self.sums.get(bucket)
        self.sums.remove(bucket)
        yield (ctx.get_current_key(), timestamp, records, total)


def record_key(row: Any) -> int:
    return row.key


def _processor_class() -> type:
    """Spark's version of :class:`Buckets` (a function: pyspark imports only when Spark runs)."""
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class BucketsProcessor(StatefulProcessor):
        def init(self, handle: Any) -> None:
            self.handle = handle
            self.sums = handle.getMapState("sums", "bucket long", "records long, total long")

        def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Any:
            added: dict[int, tuple[int, int]] = {}
            for frame in rows:
                for ts, value in zip(frame["ts"].tolist(), frame["value"].tolist(), strict=True):
                    records, total = added.get(ts // BUCKET_MS, (0, 0))
                    added[ts // BUCKET_MS] = (records + 1, total + value)
            for bucket, (records, total) in added.items():
                old = self.sums.getValue((bucket,))
                if old is None:
                    self.sums.updateValue((bucket,), (records, total))
                    self.handle.registerTimer(timer_at(bucket))
                else:
                    self.sums.updateValue((bucket,), (old[0] + records, old[1] + total))
            return iter([])

        def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Any:
            import pandas as pd

            at = expiredTimerInfo.getExpiryTimeInMs()
            bucket = timer_bucket(at)
            records, total = self.sums.getValue((bucket,))
            self.sums.removeKey((bucket,))
            yield pd.DataFrame(
                {"key": [key[0]], "at": [at], "records": [records], "total": [total]}
            )

    return BucketsProcessor


# ---------------------------------------------------------------------------------------------
# Input


@dataclass(frozen=True)
class Inputs:
    """The records: a cached DataFrame (sparktide's batch), one Parquet file per micro-batch
    (the streams), the same files and the sentinel (Spark's batch)."""

    records: int
    keys: int
    frame: Any
    stream_files: Path
    batch_files: Path
    last_watermark: int  # after the stream's last file


def records_table(records: int, keys: int, batches: int, seed: int) -> Any:
    """The records in the order of their base time (each up to ``BOUND_MS - 1`` later)."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    base = START_MS + np.arange(records, dtype="int64") * (batches * STEP_MS) // records
    ts = base + rng.integers(0, BOUND_MS, records)
    return pa.table(
        {"key": rng.integers(0, keys, records), "ts": ts, "value": rng.integers(0, 1000, records)}
    )


def write_inputs(table: Any, batches: int, work: Path) -> tuple[Path, Path]:
    """The stream's files (contiguous slices of ``table``) and Spark's batch files (the same,
    linked, and the sentinel); their folders."""
    import pyarrow as pa

    stream, batch = work / "stream", work / "batch"
    stream.mkdir(parents=True)
    batch.mkdir(parents=True)
    n = table.num_rows
    for b in range(batches):
        path = write_batch_file(
            table.slice(b * n // batches, (b + 1) * n // batches - b * n // batches), stream, b
        )
        os.link(path, batch / path.name)
    sentinel = pa.table({"key": [-1], "ts": [SENTINEL_MS], "value": [0]}, schema=table.schema)
    write_batch_file(sentinel, batch, batches)
    return stream, batch


def prepare(spark: Any, records: int, keys: int, batches: int, work: Path) -> Inputs:
    """Generate the records, write their files and cache their DataFrame (counted)."""
    import pyarrow.compute as pc

    table = records_table(records, keys, batches, seed=1)
    stream, batch = write_inputs(table, batches, work)
    frame = spark.createDataFrame(table).cache()
    if frame.count() != records:
        raise RuntimeError(f"cached {frame.count()} records, generated {records}")
    if frame.rdd.getNumPartitions() != PARALLELISM:
        raise RuntimeError(f"the records are in {frame.rdd.getNumPartitions()} partitions")
    watermark = pc.max(table["ts"]).as_py() - BOUND_MS - 1
    return Inputs(records, keys, frame, stream, batch, watermark)


# ---------------------------------------------------------------------------------------------
# Runs: each returns its output rows when collecting, else writes them to the noop sink


Rows = list[tuple[int, int, int, int]]


def _sparktide_env() -> Any:
    from sparktide.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(PARALLELISM)
    return env


def _buckets(stream: Any) -> Any:
    from sparktide.common import Types

    output = Types.ROW_NAMED(["key", "at", "records", "total"], [Types.LONG()] * 4)
    return stream.key_by(record_key, key_type=Types.LONG()).process(Buckets(), output_type=output)


def _strategy() -> Any:
    from sparktide.common import Duration, WatermarkStrategy

    return WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(BOUND_MS))


def _write(df: Any, rows: Rows | None) -> None:
    if rows is None:
        df.write.format("noop").mode("overwrite").save()
    else:
        rows.extend(tuple(r) for r in df.collect())


def _folder(engine: str, mode: str) -> str:
    return f"{engine}-{mode}".replace(" ", "-")


def sparktide_batch(spark: Any, inputs: Inputs, ckpt: Path, rows: Rows | None) -> None:
    env = _sparktide_env()
    stream = env.from_dataframe(inputs.frame, _strategy(), timestamp_column="ts")
    _write(_buckets(stream).to_dataframe(ordered=False), rows)


def sparktide_stream(spark: Any, inputs: Inputs, ckpt: Path, rows: Rows | None) -> None:
    env = _sparktide_env()
    stream = env.from_stream(file_stream(spark, inputs.stream_files, SCHEMA), _strategy(), "ts")
    _buckets(stream).foreach_batch(lambda df, _: _write(df, rows))
    env.execute(checkpoint_location=str(ckpt), trigger="available_now")


def _spark_query(spark: Any, files: Any, ckpt: Path, rows: Rows | None) -> None:
    """The Spark query over ``files`` to its end (available-now)."""
    spark.conf.set("spark.sql.streaming.stateStore.providerClass", SPARK_STATE_STORE)
    out = (
        spark_watermark(files, "ts", BOUND_MS)
        .groupBy("key")
        .transformWithStateInPandas(
            statefulProcessor=_processor_class()(),
            outputStructType=OUTPUT_SCHEMA,
            outputMode="Append",
            timeMode="EventTime",
        )
    )
    writer = out.writeStream.option("checkpointLocation", str(ckpt)).trigger(availableNow=True)
    if rows is None:
        writer = writer.format("noop")
    else:
        writer = writer.foreachBatch(lambda df, _: _write(df, rows))
    writer.start().awaitTermination()


def spark_batch(spark: Any, inputs: Inputs, ckpt: Path, rows: Rows | None) -> None:
    _spark_query(spark, file_stream(spark, inputs.batch_files, SCHEMA, None), ckpt, rows)


def spark_stream(spark: Any, inputs: Inputs, ckpt: Path, rows: Rows | None) -> None:
    _spark_query(spark, file_stream(spark, inputs.stream_files, SCHEMA), ckpt, rows)


def spark_batch_frame(spark: Any, inputs: Inputs) -> Rows:
    """Spark's query on the cached batch DataFrame (no watermark: no timer fires)."""
    out = inputs.frame.groupBy("key").transformWithStateInPandas(
        statefulProcessor=_processor_class()(),
        outputStructType=OUTPUT_SCHEMA,
        outputMode="Append",
        timeMode="EventTime",
    )
    return [tuple(r) for r in out.collect()]


Name = tuple[str, str]  # engine, mode
Contender = Callable[[Any, Inputs, Path, "Rows | None"], None]
CONTENDERS: dict[Name, Contender] = {
    ("sparktide", "batch"): sparktide_batch,
    ("Spark TWS", "batch"): spark_batch,
    ("sparktide", "stream"): sparktide_stream,
    ("Spark TWS", "stream"): spark_stream,
}


# ---------------------------------------------------------------------------------------------
# The check


def collect(spark: Any, inputs: Inputs, work: Path, names: list[Name]) -> dict[Name, Rows]:
    """The output rows of the contenders ``names``, sorted."""
    out: dict[Name, Rows] = {}
    for engine, mode in names:
        rows: Rows = []
        CONTENDERS[engine, mode](spark, inputs, work / _folder(engine, mode), rows)
        out[engine, mode] = sorted(rows)
    return out


def check(spark: Any, inputs: Inputs, work: Path, names: list[Name]) -> str:
    """The outputs of the contenders ``names`` compared (see the module's docstring), and
    sparktide's batch, which says what each must emit; raises when they differ."""
    got = collect(spark, inputs, work, sorted({("sparktide", "batch"), *names}))
    every = got["sparktide", "batch"]
    expected = {"batch": every, "stream": [r for r in every if r[1] <= inputs.last_watermark]}
    for (engine, mode), rows in got.items():
        want = expected[mode]
        if rows != want:
            only, missing = sorted(set(rows) - set(want)), sorted(set(want) - set(rows))
            raise SystemExit(
                f"check failed: {engine} {mode} emitted {len(rows):,} rows, expected "
                f"{len(want):,}; unexpected {only[:5]}, missing {missing[:5]}"
            )
    done = ", ".join(f"{engine} {mode}" for engine, mode in sorted(got))
    line = (
        f"checked ({inputs.records:,} records, {inputs.keys:,} keys; {done}): batch "
        f"{len(every):,} rows (every timer), stream {len(expected['stream']):,} rows (the timers "
        f"up to the last watermark, {inputs.last_watermark - START_MS} ms after the start)"
    )
    if any(engine == "Spark TWS" for engine, _ in names):
        frame_rows = len(spark_batch_frame(spark, inputs))
        line += f"; Spark's query on the batch DataFrame emitted {frame_rows} rows (no watermark)"
    return line


# ---------------------------------------------------------------------------------------------
# Measuring


def protobuf_missing() -> str | None:
    """Why Spark's Python state API cannot run here, or None."""
    if importlib.util.find_spec("google.protobuf") is None:
        return "Spark's Python state API needs protobuf: pip install -e '.[bench]'"
    return None


def measure(
    spark: Any, inputs: Inputs, work: Path, runs: dict[Name, list[CpuRun] | str], repeat: int
) -> None:
    """``repeat`` runs of each contender of ``runs`` added to its list, the contenders
    alternating in each round; a failed contender's list replaced by the reason."""
    for round_ in range(repeat):
        for name in list(runs):
            done = runs[name]
            if isinstance(done, str):
                continue
            ckpt = work / f"{_folder(*name)}-{round_}"
            try:
                done.append(cpu_timed(partial(CONTENDERS[name], spark, inputs, ckpt, None)))
            except Exception as exc:  # a failed contender is a result too
                runs[name] = failure(exc)
            shutil.rmtree(ckpt, ignore_errors=True)


def _best(runs: list[CpuRun]) -> tuple[float, CpuRun]:
    """The best wall time, and the run with the least CPU."""
    return min(r.seconds for r in runs), min(runs, key=lambda r: r.cpu.total)


def print_table(runs: dict[Name, list[CpuRun] | str], records: int) -> None:
    """Wall time, records/s, CPU per record (JVM, workers, driver, total), then the ratios."""
    from sparktide.nexmark.runner import print_markdown

    per_record = 1e6 / records
    head = ["engine", "mode", "wall s", "records/s"]
    head += [f"{part} µs/rec" for part in ("JVM", "workers", "driver", "CPU")]
    lines = []
    for (engine, mode), done in runs.items():
        if isinstance(done, str):
            lines.append([engine, mode, "failed", "-", "-", "-", "-", "-"])
            continue
        wall, least = _best(done)
        cpu = least.cpu
        cells = [engine, mode, f"{wall:.2f}", f"{records / wall:,.0f}"]
        cells += [f"{x * per_record:.2f}" for x in (cpu.jvm, cpu.workers, cpu.driver, cpu.total)]
        lines.append(cells)
    print_markdown(head, lines)
    for (engine, mode), done in runs.items():
        if isinstance(done, str):
            print(f"{engine} {mode} failed: {done}")
    for mode in ("batch", "stream"):
        ours, theirs = runs.get(("sparktide", mode)), runs.get(("Spark TWS", mode))
        if isinstance(ours, list) and isinstance(theirs, list):
            (wall, mine), (their_wall, their) = _best(ours), _best(theirs)
            print(
                f"{mode}: Spark TWS / sparktide: wall {their_wall / wall:.3g}x, "
                f"CPU {their.cpu.total / mine.cpu.total:.3g}x (Spark's cost over sparktide's)"
            )


# ---------------------------------------------------------------------------------------------
# Main


def parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--records", type=int, default=1_000_000, help="records measured")
    ap.add_argument("--keys", type=int, default=1_000, help="keys: 0 .. keys - 1")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per contender")
    ap.add_argument("--batches", type=int, default=10, help="micro-batches of the stream")
    ap.add_argument("--modes", default="batch,stream", help="batch and/or stream")
    ap.add_argument("--engines", default="sparktide,spark", help="sparktide and/or spark")
    ap.add_argument("--check-records", type=int, default=20_000, help="0: no check")
    ap.add_argument("--check-keys", type=int, default=200)
    args = ap.parse_args(argv)
    for name in ("records", "keys", "repeat", "batches", "check_keys"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.check_records < 0:
        ap.error("--check-records must be >= 0")
    args.modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not args.modes or set(args.modes) - {"batch", "stream"}:
        ap.error("--modes must name batch and/or stream")
    engines = {e.strip() for e in args.engines.split(",") if e.strip()}
    if not engines or engines - {"sparktide", "spark"}:
        ap.error("--engines must name sparktide and/or spark")
    args.names = [
        (engine, mode)
        for (engine, mode) in CONTENDERS
        if mode in args.modes and ("spark" if engine == "Spark TWS" else engine) in engines
    ]
    return args


def run(spark: Any, args: argparse.Namespace, work: Path) -> None:
    """The check, then the measured runs and their table."""
    missing = protobuf_missing()
    runs: dict[Name, list[CpuRun] | str] = {
        name: missing if missing and name[0] == "Spark TWS" else [] for name in args.names
    }
    names = [name for name, done in runs.items() if not isinstance(done, str)]
    if args.check_records:
        small = prepare(spark, args.check_records, args.check_keys, args.batches, work / "small")
        print(check(spark, small, work / "small", names), flush=True)
        small.frame.unpersist()
    inputs = prepare(spark, args.records, args.keys, args.batches, work / "input")
    print(
        f"{args.records:,} records, {args.keys:,} keys, {args.batches} Parquet files for the "
        f"streams; best of {args.repeat}; load average before the runs {load_average()}",
        flush=True,
    )
    measure(spark, inputs, work / "runs", runs, args.repeat)
    print(f"load average after the runs {load_average()}\n")
    print_table(runs, args.records)


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    from sparktide.spark.session import get_spark

    spark = get_spark(f"local[{PARALLELISM}]")
    spark.conf.set("spark.sql.shuffle.partitions", str(PARALLELISM))
    print(spark_versions(spark))
    print(
        f"local[{PARALLELISM}], parallelism {PARALLELISM}, Spark's state store RocksDB; "
        f"buckets of {BUCKET_MS} ms, timers {DELAY_MS} ms after a bucket's end, out-of-orderness "
        f"{BOUND_MS} ms, {STEP_MS} ms of event time per file"
    )
    work = Path(tempfile.mkdtemp(prefix="keyed-tws-"))
    try:
        run(spark, args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
