"""Reading a streaming job's keyed state as a table, next to Spark's own state data source.

The same ``--keys`` records (one per key, in ``--files`` files) go through two streaming
queries that each keep one count per key:

- a sparktide job (``key_by(key).process(...)`` with a ``ValueState`` of ``Types.LONG()``) on
  the heap or the RocksDB state backend (``--backend``), checkpointed at ``--parallelism``;
- Spark's ``groupBy("key").count()`` with the same number of shuffle partitions, on its HDFS
  or RocksDB state store provider (``--spark-store``).

Then, best of ``--repeat``, the seconds to read every key's count into a materialized result:
``SavepointReader.keyed_state`` as a ``pyarrow.Table`` (local), the same as a DataFrame read by
a Spark job (``StateFrames.keyed_state``, written to the ``noop`` sink), and
``spark.read.format("statestore")`` of the Spark query (written to the ``noop`` sink). The
table gives each time and its ratio to the state data source's.

Run (10^6 keys, a few minutes)::

    nice -n 19 python benchmarks/state_read.py --keys 1000000
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Callable

import pyarrow as pa
import pyarrow.parquet as pq

_ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
_HDFS_PROVIDER = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"


def _write_input(directory: str, keys: int, files: int) -> None:
    os.makedirs(directory)
    per = -(-keys // files)
    for f in range(files):
        ids = pa.array(range(f * per, min(keys, (f + 1) * per)), pa.int64())
        table = pa.table({"key": ids, "ts": ids})
        pq.write_table(table, f"{directory}/part-{f:04d}.parquet")


def _sparktide_job(spark, source: str, ckpt: str, args: argparse.Namespace) -> float:
    from sparktide.common import Duration, Types
    from sparktide.common.watermark_strategy import WatermarkStrategy
    from sparktide.datastream import KeyedProcessFunction, StreamExecutionEnvironment
    from sparktide.datastream.state import ValueStateDescriptor
    from sparktide.datastream.state_backend import (
        EmbeddedRocksDBStateBackend,
        HashMapStateBackend,
    )
    from sparktide.spark.streaming import ForeachBatchSink

    class Count(KeyedProcessFunction):
        def open(self, ctx):
            self.count = ctx.get_state(ValueStateDescriptor("count", Types.LONG()))

        def process_element(self, r, ctx):
            self.count.update((self.count.value() or 0) + 1)
            return iter(())

    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(args.parallelism)
    backend = (
        EmbeddedRocksDBStateBackend(enable_incremental_checkpointing=True)
        if args.backend == "rocksdb"
        else HashMapStateBackend()
    )
    env.set_state_backend(backend)
    frame = spark.readStream.schema("key long, ts long").parquet(source)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0))
    stream = env.from_stream(frame, strategy, timestamp_column="ts")
    out = ForeachBatchSink(lambda df, batch: None)
    keyed = stream.key_by(lambda r: r.key, key_type=Types.LONG())
    keyed.process(Count(), output_type=Types.LONG()).uid("count").sink_to(out)
    start = time.perf_counter()
    env.execute(checkpoint_location=ckpt, trigger="available_now")
    return time.perf_counter() - start


def _spark_query(spark, source: str, ckpt: str, args: argparse.Namespace) -> float:
    provider = _ROCKSDB_PROVIDER if args.spark_store == "rocksdb" else _HDFS_PROVIDER
    spark.conf.set("spark.sql.streaming.stateStore.providerClass", provider)
    spark.conf.set("spark.sql.shuffle.partitions", str(args.parallelism))
    counts = spark.readStream.schema("key long, ts long").parquet(source).groupBy("key").count()
    query = (
        counts.writeStream.format("noop")
        .outputMode("update")
        .option("checkpointLocation", ckpt)
        .trigger(availableNow=True)
        .start()
    )
    start = time.perf_counter()
    query.awaitTermination()
    return time.perf_counter() - start


def _best(repeat: int, run: Callable[[], int]) -> tuple[float, int]:
    best, rows = float("inf"), 0
    for _ in range(repeat):
        start = time.perf_counter()
        rows = run()
        best = min(best, time.perf_counter() - start)
    return best, rows


def _noop(df) -> int:
    df.write.format("noop").mode("overwrite").save()
    return -1  # rows not counted: the write reads them all


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--backend", choices=["hashmap", "rocksdb"], default="hashmap")
    parser.add_argument("--spark-store", choices=["hdfs", "rocksdb"], default="rocksdb")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    from sparktide.spark.session import get_spark
    from sparktide.state_api import SavepointReader

    spark = get_spark(f"local[{args.parallelism}]")
    root = tempfile.mkdtemp(prefix="state-read-")
    try:
        source = f"{root}/in"
        _write_input(source, args.keys, args.files)
        ckpt, spark_ckpt = f"{root}/sparktide", f"{root}/spark"
        job_s = _sparktide_job(spark, source, ckpt, args)
        query_s = _spark_query(spark, source, spark_ckpt, args)
        reader = SavepointReader.read(ckpt, trusted=True)
        frames = reader.frames(spark)
        timings = [
            ("sparktide local (pyarrow)",
             _best(args.repeat, lambda: reader.keyed_state("count", "count").num_rows)),
            ("sparktide on Spark (DataFrame)",
             _best(args.repeat, lambda: _noop(frames.keyed_state("count", "count")))),
            (f"Spark statestore ({args.spark_store})",
             _best(args.repeat, lambda: _noop(spark.read.format("statestore").load(spark_ckpt)))),
        ]  # fmt: skip
        rows = reader.keyed_state("count", "count").num_rows
        spark_rows = spark.read.format("statestore").load(spark_ckpt).count()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    base = timings[-1][1][0]
    print(f"keys {args.keys}, parallelism {args.parallelism}, sparktide backend {args.backend}")
    print(f"writing: sparktide job {job_s:.1f} s, Spark query {query_s:.1f} s")
    print(f"rows read: sparktide {rows}, Spark statestore {spark_rows}")
    print(f"{'read':34} {'seconds':>8} {'vs statestore':>14}")
    for name, (seconds, _) in timings:
        print(f"{name:34} {seconds:8.2f} {seconds / base:13.2f}x")


if __name__ == "__main__":
    main()
