"""Streaming window aggregates: micro-batch times on the columnar path next to the per-record
path, on the same files in the same run.

The job::

    env.from_stream(files, for_bounded_out_of_orderness(1 s), timestamp_column="ts",
                    split_by="part", num_splits=2)
       .key_by("key").window(<window>).agg(n=count(), total=sum("v"))
       .sink_to(ForeachBatchSink(noop write))          # execute(trigger="available_now")

``<window>``: tumbling 5 minutes, or sliding 1 hour by 5 minutes. **Input**: Parquet files
``(key long, part long, ts long, v long)``, one per micro-batch (``maxFilesPerTrigger=1``),
``--rows`` rows each over ``--keys`` keys, event times rising by 10 minutes per batch with 2 s
of disorder. **Measured**: per path, the mean ``duration_ms`` of the batches after the first
(``recent_progress``: the whole ``foreachBatch`` function, checkpoint included), best of
``--repeat`` runs, the paths interleaved; records/s = rows / mean batch time.

Usage::

    python benchmarks/columnar_streaming.py
    python benchmarks/columnar_streaming.py --rows 500000 --batches 5 --repeat 3
"""

from __future__ import annotations

import argparse
import os
import tempfile

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def write_files(directory: str, batches: int, rows: int, keys: int, seed: int = 1) -> None:
    rng = np.random.default_rng(seed)
    os.makedirs(directory, exist_ok=True)
    for b in range(batches):
        base = b * 600_000
        ts = base + np.sort(rng.integers(0, 600_000, rows)) + rng.integers(-1_000, 1_000, rows)
        table = pa.table(
            {
                "key": rng.integers(0, keys, rows),
                "part": rng.integers(0, 4, rows),
                "ts": ts,
                "v": rng.integers(0, 100, rows),
            }
        )
        path = os.path.join(directory, f"part-{b:04d}.parquet")
        pq.write_table(table, path)
        os.utime(path, (1_700_000_000 + b, 1_700_000_000 + b))


def run(spark, directory: str, sliding: bool) -> list[int]:
    """One run over the files; the batches' ``duration_ms``."""
    from sparktide.common import Duration, Time
    from sparktide.common.watermark_strategy import WatermarkStrategy
    from sparktide.core.window.aggregates import Agg
    from sparktide.datastream import StreamExecutionEnvironment
    from sparktide.datastream.window import SlidingEventTimeWindows, TumblingEventTimeWindows
    from sparktide.spark.streaming import ForeachBatchSink

    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(2)
    schema = "key long, part long, ts long, v long"
    frame = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(directory)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(1_000))
    stream = env.from_stream(frame, strategy, timestamp_column="ts", split_by="part", num_splits=2)
    window = (
        SlidingEventTimeWindows.of(Time.hours(1), Time.minutes(5))
        if sliding
        else TumblingEventTimeWindows.of(Time.minutes(5))
    )
    aggregated = stream.key_by("key").window(window).agg(n=Agg.count(), total=Agg.sum("v"))
    aggregated.sink_to(
        ForeachBatchSink(lambda df, _: df.write.format("noop").mode("overwrite").save())
    )
    with tempfile.TemporaryDirectory() as ckpt:
        client = env.execute_async(checkpoint_location=ckpt, trigger="available_now")
        client.await_termination()
        return [int(p["duration_ms"]) for p in client.recent_progress]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000, help="rows per micro-batch")
    parser.add_argument("--keys", type=int, default=1_000)
    parser.add_argument("--batches", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from sparktide.spark.session import get_spark

    spark = get_spark("local[2]")
    print(f"rows/batch={args.rows:,} keys={args.keys:,} batches={args.batches} local[2]")
    print(f"load average {os.getloadavg()[0]:.2f}")
    print(f"{'window':<10} {'path':<10} {'batch ms':>9} {'rec/s':>11} {'vs per-record':>14}")
    with tempfile.TemporaryDirectory() as directory:
        write_files(directory, args.batches, args.rows, args.keys)
        for sliding in (False, True):
            best: dict[str, float] = {}
            for _ in range(args.repeat):
                for switch in ("off", "on"):
                    os.environ["SPARKTIDE_COLUMNAR"] = switch
                    durations = run(spark, directory, sliding)
                    steady = durations[1:] or durations
                    mean = sum(steady) / len(steady)
                    best[switch] = min(best.get(switch, float("inf")), mean)
            name = "sliding" if sliding else "tumbling"
            for switch, label in (("off", "per-record"), ("on", "columnar")):
                ms = best[switch]
                ratio = best["off"] / ms
                rate = args.rows / (ms / 1000)
                print(f"{name:<10} {label:<10} {ms:>9.0f} {rate:>11,.0f} {ratio:>13.2f}x")
    os.environ.pop("SPARKTIDE_COLUMNAR", None)


if __name__ == "__main__":
    main()
