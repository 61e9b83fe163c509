"""The keyed-timer job of benchmarks/spark.py with its values pickled or as Arrow columns.

On the synthetic set of benchmarks/spark.py (``--records``, default 10^6), the timer job
(``map`` to ``(key, 1)``, ``key_by``, ``CountWithTimer``, noop write) runs with the exchanged
values declared as a tuple ``TUPLE([LONG, LONG])`` and as a row ``ROW_NAMED(["key", "one"],
[LONG, LONG])``, each with Arrow values off (``_ARROW_VALUES = False``: pickled lists) and on
(tuples: forced with ``True``, since by default they stay pickled; rows: the default). The four
variants run interleaved, best of ``--repeat``, in one Spark session. Run:
``python benchmarks/arrow_values_spark.py --records 1000000 --repeat 3``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import spark as bench  # benchmarks/spark.py: the datasets and the job's functions


def key_and_one_row(row: Any) -> Any:
    from sparktide.common.types import Row

    return Row.of_values([row[0], 1], ["key", "one"])


def timer_frame(data: Any, df: Any, shape: str, parallelism: int, every: int) -> Any:
    from sparktide.common import Duration, Types, WatermarkStrategy
    from sparktide.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(parallelism)
    env.get_config().set_watermark_every(every)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(data.out_of_order_ms)
    )
    source = env.from_dataframe(df, strategy, timestamp_column="ts", source_name=data.name)
    if shape == "tuple":
        mapped = source.map(bench.key_and_one, output_type=Types.TUPLE([Types.LONG()] * 2))
    else:
        row = Types.ROW_NAMED(["key", "one"], [Types.LONG(), Types.LONG()])
        mapped = source.map(key_and_one_row, output_type=row)
    out = mapped.key_by(bench.first_field, key_type=Types.LONG()).process(
        bench.CountWithTimer(data.timer_delay_ms),
        output_type=Types.TUPLE([Types.LONG(), Types.LONG(), Types.LONG()]),
    )
    return out.to_dataframe(ordered=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--keys", type=int, default=1_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--parallelism", type=int, default=2)
    ap.add_argument("--watermark-every", type=int, default=100_000)
    args = ap.parse_args()

    from pyspark import cloudpickle

    from sparktide.spark import spark_job
    from sparktide.spark.session import get_spark

    cloudpickle.register_pickle_by_value(bench)  # the workers cannot import it

    spark = get_spark("local[2]")
    spark.conf.set("spark.sql.shuffle.partitions", args.parallelism)
    p, every = args.parallelism, args.watermark_every
    df, n = bench.synthetic_frame(spark, args.records, args.keys, p)
    data = bench.Dataset(
        "synthetic",
        df,
        n,
        bench._long_type,
        bench.SYNTH_WINDOW_MS,
        bench.SYNTH_DISORDER_MS,
        bench.SYNTH_TIMER_DELAY_MS,
        "",
    )
    variants = [("tuple", False), ("tuple", True), ("row", False), ("row", None)]
    best = dict.fromkeys(variants, float("inf"))
    for shape, arrow in variants:  # warm-up
        spark_job._ARROW_VALUES = arrow
        timer_frame(data, df, shape, p, every).write.format("noop").mode("overwrite").save()
    for _ in range(args.repeat):
        for shape, arrow in variants:
            spark_job._ARROW_VALUES = arrow
            start = time.perf_counter()
            timer_frame(data, df, shape, p, every).write.format("noop").mode("overwrite").save()
            best[shape, arrow] = min(best[shape, arrow], time.perf_counter() - start)
    print(f"keyed timers on Spark local[2], {n:,} records, best of {args.repeat}")
    print(f"{'values':10} | {'exchange':28} | {'seconds':>8} | {'records/s':>10}")
    labels = {False: "pickled", True: "Arrow (forced)", None: "Arrow (default)"}
    for (shape, arrow), seconds in best.items():
        print(f"{shape:10} | {labels[arrow]:28} | {seconds:8.2f} | {n / seconds:10,.0f}")


if __name__ == "__main__":
    main()
