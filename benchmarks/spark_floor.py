"""What a built-in window aggregate on Spark costs beyond moving its columns into Python.

On the synthetic rows of ``benchmarks/spark.py`` (cached, ``--records`` rows, local[2]), one
Spark session, best of ``--repeat``:

* Spark's native tumbling count and sum (``groupBy(key, window)``);
* the source's columns moved into Python and dropped there (``mapInArrow`` with a function that
  only counts rows): the key and the timestamp (what ``count()`` reads), and the key, the
  timestamp and the field (what ``sum(field)``, Flink's record, reads);
* the same, then Spark's shuffle of one row per task into a second ``mapInArrow`` that drops
  it: what a second stage with Python workers costs by itself (the columnar path shuffles its
  partials to the subtasks);
* sparktide's built-in ``count()`` and ``sum('v')`` (the columnar path).

The transfer is the floor of the columnar path: Spark reads its cached column batches directly,
``mapInArrow`` turns them into rows, then into Arrow.

Usage::

    python benchmarks/spark_floor.py                     # 5·10^6 rows, best of 5
    python benchmarks/spark_floor.py --records 1000000 --repeat 3
"""

from __future__ import annotations

import argparse
import os
import time
import types
from collections.abc import Callable, Iterator
from typing import Any

import spark as bench


def _count_rows(batches: Iterator[Any]) -> Iterator[Any]:
    import pyarrow as pa

    rows = sum(b.num_rows for b in batches)
    yield pa.RecordBatch.from_pydict({"rows": pa.array([rows], pa.int64())})


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--records", type=int, default=5_000_000)
    ap.add_argument("--keys", type=int, default=1_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)

    from sparktide.spark.session import get_spark

    spark = get_spark()
    spark.conf.set("spark.sql.shuffle.partitions", 2)
    df, n = bench.synthetic_frame(spark, args.records, args.keys, 2)
    data = types.SimpleNamespace(
        out_of_order_ms=bench.SYNTH_DISORDER_MS,
        window_ms=bench.SYNTH_WINDOW_MS,
        name="synthetic",
        sum_field="v",
    )

    def noop(frame: Any) -> None:
        frame.write.format("noop").mode("overwrite").save()

    queries: dict[str, Callable[[], None]] = {
        "Spark native tumbling count": lambda: noop(bench.native_frame(data, df, "count")),
        "Spark native tumbling sum": lambda: noop(bench.native_frame(data, df, "sum")),
        "into Python: key, ts": lambda: noop(
            df.select("key", "ts").mapInArrow(_count_rows, "rows long")
        ),
        "into Python: key, ts, v": lambda: noop(df.mapInArrow(_count_rows, "rows long")),
        "  + a second Python stage": lambda: noop(
            df.mapInArrow(_count_rows, "rows long")
            .repartition(2, "rows")
            .mapInArrow(_count_rows, "rows long")
        ),
        "sparktide count()": lambda: noop(
            bench.builtin_frame(data, df, "count", False, 2, 100_000)
        ),
        "sparktide sum('v')": lambda: noop(bench.builtin_frame(data, df, "sum", False, 2, 100_000)),
    }
    for run in queries.values():  # warm-up: Python workers, JIT
        run()
    best = dict.fromkeys(queries, float("inf"))
    for _ in range(args.repeat):
        for name, run in queries.items():
            start = time.perf_counter()
            run()
            best[name] = min(best[name], time.perf_counter() - start)
    print(f"{n:,} rows, local[2], best of {args.repeat}, load average {os.getloadavg()[0]:.1f}")
    print(f"{'query':<28} | {'seconds':>7} | {'rec/s':>11}")
    print("-" * 52)
    for name, seconds in best.items():
        print(f"{name:<28} | {seconds:7.3f} | {n / seconds:11,.0f}")


if __name__ == "__main__":
    main()
