"""Interval join throughput: sparktide (local runtime and on Spark) next to Spark's native join.

Data (made by ``spark.range``, cached and counted before anything is timed, so every contender
reads the same in-memory rows): ``--left`` rows (default 10^6) and ``--right`` rows (default
10^5), columns ``key`` (long, ``--keys`` distinct values, default 10^3, hashed from the row id)
and ``ts`` (epoch ms). Each side has ``--parallelism`` partitions (= source splits) that
interleave: every partition covers the whole time range in increasing order, like the
partitions of a queue, and every ts is moved back by up to ``--disorder`` ms (default 2 s;
the watermark's bound, so no record is late). The range is ``--right / --keys`` seconds: each
key sees a right record about every second and ``left / right`` left records per second.

The join pairs each left row ``l`` with the right rows ``r`` of the same key and
``l.ts + lower <= r.ts <= l.ts + upper`` (``--lower`` / ``--upper``, default -500 / 500 ms:
about one match per left row)::

    sparktide   rows  = env.from_dataframe(l + side 0 UNION r + side 1,
                                       for_bounded_out_of_orderness(disorder), "ts")
                left, right = rows.filter(side == 0), rows.filter(side == 1)
                left.key_by(key).interval_join(right.key_by(key)).between(lower, upper)
                    .process(Pair())            # yields (key, left ts, right ts), typed LONGs
                    .to_dataframe(ordered=False).write.format("noop").save()

    Spark       l.join(r, (l.key == r.key) & r.ts.between(l.ts + lower, l.ts + upper))
                 .select(l.key, l.ts, r.ts).write.format("noop").save()

Why the batch join as Spark's counterpart: on a bounded input whose records are never late,
the interval join's result is exactly this equi-join with a time-range condition (checked
below on the warm-up slice), and it is what a Spark user writes for a backfill; Spark plans it
as a sort-merge join on ``key`` with the range as a post-filter. Structured Streaming's
stream-stream join with watermarks computes the same pairs incrementally, but it needs a
streaming source and micro-batches (its time is dominated by the trigger and state-store
commits, and its watermark is one global ``max - delay``, not per split), so it would not
measure the join itself on the same in-memory rows.

sparktide runs on Spark (``runtime="spark"``, ``--parallelism`` subtasks, a watermark every
``--watermark-every`` records per split) and, unless ``--skip-local``, on its local runtime
(same data, same parallelism). Times are wall times from building the job to the end of the
noop write, best of ``--repeat``, after an untimed warm-up of every contender on a few
thousand rows whose output counts are checked equal. ``ratio`` is the contender's records/s
over Spark's (0.01x = 100 times slower); records = left + right input rows.

Usage::

    python benchmarks/joins.py                               # 10^6 x 10^5
    python benchmarks/joins.py --left 200000 --right 20000   # quicker
    python benchmarks/joins.py --lower -2000 --upper 0 --skip-local
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from typing import Any

from common import result_cells, spark_versions, timed

from sparktide.datastream import ProcessJoinFunction

START_MS = 1_700_000_000_000
WARMUP_LEFT = 4_000


# ---------------------------------------------------------------------------------------------
# The job's functions (pickled into Spark's tasks by value: they live in __main__)


def key_of(row: Any) -> Any:
    return row[0]


def is_left(row: Any) -> bool:
    return row[2] == 0  # type: ignore[no-any-return]


def is_right(row: Any) -> bool:
    return row[2] == 1  # type: ignore[no-any-return]


class Pair(ProcessJoinFunction):
    """(key, left ts, right ts) for every joined pair."""

    def process_element(self, left: Any, right: Any, ctx: Any) -> Any:
        yield left[0], ctx.get_left_timestamp(), ctx.get_right_timestamp()


# ---------------------------------------------------------------------------------------------
# Data and contenders


def side_frame(spark: Any, n: int, keys: int, splits: int, span_ms: int, disorder: int, seed: int):
    """``n`` rows over ``splits`` interleaved partitions covering ``span_ms`` (cached)."""
    from pyspark.sql import functions as F

    # range partition i holds ids [i n/P, (i+1) n/P): seq = (id P) mod n + (id P) div n deals
    # sequence numbers round-robin, so every partition covers the whole range in order
    seq = F.expr(f"(id * {splits}) % {n} + (id * {splits}) div {n}")
    df = spark.range(0, n, 1, splits).select(
        seq.alias("seq"),
        F.expr(f"pmod(xxhash64(id, {seed}), {keys})").alias("key"),
        F.expr(f"pmod(xxhash64(id, {seed + 1}), {max(disorder, 1)})").alias("jitter"),
    )
    ts = F.lit(START_MS) + F.expr(f"seq * {span_ms} div {n}") - F.col("jitter")
    df = df.select("key", ts.cast("long").alias("ts")).cache()
    return df, df.count()


def sparktide_frame(left: Any, right: Any, args: argparse.Namespace, runtime: str) -> Any:
    from pyspark.sql import functions as F

    from sparktide.common import Duration, Types, WatermarkStrategy
    from sparktide.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment(runtime=runtime)
    env.set_parallelism(args.parallelism)
    env.get_config().set_watermark_every(args.watermark_every)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(args.disorder))
    # one DataFrame source whose partitions are the left's then the right's (the Spark runner
    # cannot run two DataFrame sources in one job yet); each split is all left or all right
    both = left.withColumn("side", F.lit(0)).unionByName(right.withColumn("side", F.lit(1)))
    rows = env.from_dataframe(both, strategy, timestamp_column="ts", source_name="rows")
    lefts, rights = rows.filter(is_left), rows.filter(is_right)
    joined = (
        lefts.key_by(key_of, key_type=Types.LONG())
        .interval_join(rights.key_by(key_of, key_type=Types.LONG()))
        .between(args.lower, args.upper)
        .process(Pair(), output_type=Types.TUPLE([Types.LONG(), Types.LONG(), Types.LONG()]))
    )
    return joined.to_dataframe(ordered=False)


def native_frame(left: Any, right: Any, args: argparse.Namespace) -> Any:
    from pyspark.sql import functions as F

    cond = (F.col("l.key") == F.col("r.key")) & F.col("r.ts").between(
        F.col("l.ts") + args.lower, F.col("l.ts") + args.upper
    )
    joined = left.alias("l").join(right.alias("r"), cond)
    return joined.select(F.col("l.key"), F.col("l.ts"), F.col("r.ts"))


# ---------------------------------------------------------------------------------------------
# Output

COLUMNS = ("engine", "records", "seconds", "records/s", "ratio")


def _line(cols: tuple[str, ...]) -> str:
    engine, records, seconds, rate, ratio = cols
    return f"{engine:<20} | {records:>10} | {seconds:>8} | {rate:>10} | {ratio:>8}"


def _row(engine: str, records: int, seconds: float | str, native_rate: float | None) -> str:
    line = _line((engine, *result_cells(records, seconds, native_rate)))
    return line + (f"\n    {seconds}" if isinstance(seconds, str) else "")  # why it failed


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--left", type=int, default=1_000_000, help="left rows")
    ap.add_argument("--right", type=int, default=100_000, help="right rows")
    ap.add_argument("--keys", type=int, default=1_000)
    ap.add_argument("--lower", type=int, default=-500, help="lower bound, ms")
    ap.add_argument("--upper", type=int, default=500, help="upper bound, ms")
    ap.add_argument("--disorder", type=int, default=2_000, help="out-of-orderness, ms")
    ap.add_argument("--parallelism", type=int, default=2)
    ap.add_argument("--watermark-every", type=int, default=10_000, help="records per split")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--skip-local", action="store_true", help="no local-runtime row")
    ap.add_argument("--driver-memory", default="4g", help="Spark driver memory ('' for 1g)")
    args = ap.parse_args(argv)
    for name in ("left", "right", "keys", "parallelism", "watermark_every", "repeat"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.lower > args.upper:
        ap.error(f"--lower ({args.lower}) must be <= --upper ({args.upper})")
    if args.disorder < 0:
        ap.error("--disorder must be >= 0")

    from sparktide.spark.session import get_spark

    if args.driver_memory and "PYSPARK_SUBMIT_ARGS" not in os.environ:
        os.environ["PYSPARK_SUBMIT_ARGS"] = f"--driver-memory {args.driver_memory} pyspark-shell"
    spark = get_spark(args.master)
    spark.conf.set("spark.sql.shuffle.partitions", args.parallelism)
    p = args.parallelism
    span = max(1, args.right // args.keys) * 1000  # a right record per key and second
    print(spark_versions(spark))
    print(
        f"{platform.machine()}, {os.cpu_count()} cores, load average "
        f"{os.getloadavg()[0]:.1f}; Spark master {spark.sparkContext.master}, shuffle "
        f"partitions {p}"
    )

    def frames(n_left: int, n_right: int) -> tuple[Any, Any]:
        left, _ = side_frame(spark, n_left, args.keys, p, span, args.disorder, 1)
        right, _ = side_frame(spark, n_right, args.keys, p, span, args.disorder, 3)
        return left, right

    # warm-up (Python workers, the placement job of the Spark runner) and a check of the
    # result on a slice: every contender finds the same pairs
    warm_right = max(1, WARMUP_LEFT * args.right // args.left)
    wl, wr = frames(WARMUP_LEFT, warm_right)
    counts = {"Spark (native)": native_frame(wl, wr, args).count()}
    counts["sparktide on Spark"] = sparktide_frame(wl, wr, args, "spark").count()
    if not args.skip_local:
        counts["sparktide local"] = sparktide_frame(wl, wr, args, "local").count()
    if len(set(counts.values())) != 1:
        raise SystemExit(f"the contenders disagree on the warm-up slice: {counts}")
    for frame in (wl, wr):
        frame.unpersist()

    left, right = frames(args.left, args.right)
    pairs = native_frame(left, right, args).count()
    n = args.left + args.right
    print(
        f"{args.left:,} left x {args.right:,} right rows, {args.keys:,} keys, {p} interleaved "
        f"splits per side over {span // 1000:,} s, ts moved back by up to {args.disorder:,} ms; "
        f"between({args.lower}, {args.upper}) ms -> {pairs:,} pairs"
    )
    print(
        f"sparktide: parallelism {p}, bounded out-of-orderness {args.disorder:,} ms, a "
        f"watermark every {args.watermark_every:,} records per split; timed: build + noop "
        f"write, best of {args.repeat}; warm-up slice checked: {counts['Spark (native)']:,} "
        "pairs from every contender"
    )
    header = _line(COLUMNS)
    print(header)
    print("-" * len(header))
    native_s = timed(lambda: native_frame(left, right, args), args.repeat)
    native_rate = n / native_s if isinstance(native_s, float) else None
    print(_row("Spark (native)", n, native_s, native_rate), flush=True)
    runtimes = ["spark"] if args.skip_local else ["spark", "local"]
    for runtime in runtimes:
        seconds = timed(lambda r=runtime: sparktide_frame(left, right, args, r), args.repeat)
        engine = "sparktide on Spark" if runtime == "spark" else "sparktide local"
        print(_row(engine, n, seconds, native_rate), flush=True)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
