"""NEXMark q1 on sparktide next to what a PySpark user writes by hand, in one Spark session.

q1 turns every bid's price into euros (``price * 0.908``) and keeps ``auction``, ``bidder``,
``dateTime`` and ``extra``. The events come from sparktide's NEXMark generator
(:mod:`sparktide.nexmark`, ``--events`` events, default 10^6, of which 92% are bids), written as
two Parquet files and read into a DataFrame cached in Spark's memory (and counted) before
anything is timed, as ``python -m sparktide.nexmark`` does. One session, ``local[2]``,
parallelism 2. The contenders, each written to Spark's ``noop`` sink::

    sparktide       env.from_dataframe(bids, bounded out-of-orderness, timestamp_column=
                      "dateTime").map(to_euros, output_type=Q1_TYPE).to_dataframe(ordered=False)
    sparktide-row   the same with NEXMark's own q1 (sparktide.nexmark.queries.q1: its lambda
                      builds a named Row per bid)
    sparktide-batches
                    the same source, .map_batches(q1 over Arrow columns, Q1_TYPE): NEXMark's
                      q1b, no Python call per bid
    hand-written    bids.mapInArrow(loop, Q1 schema): per Arrow batch, the columns to Python
                      lists, one namedtuple per bid, to_euros per bid, the output batch built
                      from the results' columns
    hand-written-columns
                    bids.mapInArrow(q1 over Arrow columns, Q1 schema): the same function as
                      sparktide-batches, no Python object per bid; what any Python step on
                      Spark costs at the least (the JVM's side of mapInArrow, Arrow in and out)
    spark-sql       bids.select(..., F.lit(0.908) * F.col("price"), ...)
                      (sparktide.nexmark.sql.q1)

``to_euros`` is one Python function, the same for sparktide and the hand-written loop: it reads
the bid's fields by name and returns a tuple.

Figures per contender: the best wall time of ``--repeat`` runs (from building the DataFrame to
the end of the write), events/s (every event of the stream, persons and auctions included,
over that time, as the README's NEXMark table counts), and CPU time per bid in µs, split into
Spark's JVM, its Python workers and the driver (this process), of the run with the least CPU
in total. The ratios are the hand-written loop's (or Spark SQL's) cost over sparktide's: 1x is
parity, 0.5x means sparktide needs twice the time; and, when both ran, Spark SQL's cost over
each hand-written loop's: the most a per-record Python step, and any Python step, can reach
against Spark SQL on these events in this session.

CPU times are read from ``/proc/<pid>/stat`` (``utime`` + ``stime``, in clock ticks) right
before and right after each run, over this process's descendants: the JVM is the ``java``
process the PySpark gateway starts (its own threads: tasks, GC, JIT; not its children), the
Python workers are every process below it (``pyspark.daemon`` and the workers it forks), each
with ``cutime`` + ``cstime`` too, so that a worker that exits (and is reaped by the daemon) is
still counted. The reading after a run waits half a second (not timed), so that the workers'
last steps of their tasks count for the run that caused them. Resolution: one clock tick
(10 ms) per process.

Before the timed runs, each contender runs once untimed (it starts the Python workers) with an
aggregate of its output: the row count, the sum of the prices and two exact checksums (the sum
of ``pmod(xxhash64(price), 2^31)``, and the same over whole rows); the contenders must agree.

``--profile`` prints where sparktide's q1 (``map(to_euros)``) spends its time instead of the
table: cProfile's 20 functions with the most cumulative time, and the 20 with the most time of
their own.

* ``--profile local``: on the local runtime (parallelism 1, the generated Arrow tables, a
  counting sink; no Spark), after unprofiled runs of the same job and of the hand-written loop
  over the same bids in this process (µs per bid of each);
* ``--profile spark``: one run on Spark as above with PySpark's profiler of Python workers
  (``spark.sql.pyspark.udf.profiler=perf``: cProfile around every batch a ``mapInArrow`` task
  hands back, so it sees the tasks' Python code, not the JVM), the profiles of all the job's
  Python steps added together, after one unprofiled run (the workers' imports). cProfile
  measures wall time: a step that waits for its input from the JVM shows the wait in the
  Arrow reader's functions (``pyarrow/ipc.py``: ``open_stream``, ``__init__``).

Usage::

    python benchmarks/floor.py                          # 10^6 events, best of 3
    python benchmarks/floor.py --events 100000 --repeat 1
    python benchmarks/floor.py --contenders sparktide,hand-written,spark-sql
    python benchmarks/floor.py --profile local --events 100000
    python benchmarks/floor.py --profile spark --events 100000
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import shutil
import tempfile
import time
from collections import namedtuple
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
from common import CpuRun, cpu_timed, load_average

from sparktide.nexmark.queries import DOLLAR_TO_EURO, Q1_TYPE, bids_in_euros
from sparktide.nexmark.schema import BID_SCHEMA

BID_NAMES: list[str] = list(BID_SCHEMA.names)
Bid = namedtuple("Bid", BID_NAMES)  # type: ignore[misc]  # a name list known only at run time
Q1_SCHEMA = pa.schema(
    [
        ("auction", pa.int64()),
        ("bidder", pa.int64()),
        ("price", pa.float64()),
        ("dateTime", pa.int64()),
        ("extra", pa.string()),
    ]
)
Q1_DDL = "auction long, bidder long, price double, dateTime long, extra string"
ARROW_BATCH = 10_000  # spark.sql.execution.arrow.maxRecordsPerBatch's default
PARALLELISM = 2


# ---------------------------------------------------------------------------------------------
# The record function and the hand-written loop (pickled into Spark's tasks by value)


def to_euros(bid: Any) -> tuple[int, int, float, int, str]:
    """q1 of one bid: its fields, the price in euros."""
    return (bid.auction, bid.bidder, DOLLAR_TO_EURO * bid.price, bid.dateTime, bid.extra)


def hand_written(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """What a PySpark user writes for ``mapInArrow``: each batch's columns to Python lists, a
    namedtuple per record, the function per record, the output batch from the results."""
    fn = to_euros
    for batch in batches:
        bids = map(Bid, *(column.to_pylist() for column in batch.columns))
        results = [fn(bid) for bid in bids]
        columns = zip(*results, strict=True) if results else ([] for _ in Q1_SCHEMA)
        arrays = [pa.array(c, f.type) for c, f in zip(columns, Q1_SCHEMA, strict=True)]
        yield pa.RecordBatch.from_arrays(arrays, schema=Q1_SCHEMA)


def hand_written_columns(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The same over columns: each batch's q1 computed by Arrow, no Python object per bid."""
    for batch in batches:
        yield bids_in_euros(batch)


# ---------------------------------------------------------------------------------------------
# The contenders, their runs and their output


@dataclass(frozen=True)
class Checksum:
    """What the contenders must agree on: rows, sum of prices, and exact checksums."""

    rows: int
    price_sum: float
    price_hash: int
    row_hash: int

    def agrees(self, other: Checksum) -> bool:
        exact = (self.rows, self.price_hash, self.row_hash)
        same_sum = abs(self.price_sum - other.price_sum) <= 1e-9 * max(1.0, abs(self.price_sum))
        return exact == (other.rows, other.price_hash, other.row_hash) and same_sum


Build = Callable[[], Any]  # builds the contender's output DataFrame


def contenders(bids: Any, out_of_order_ms: int) -> dict[str, Build]:
    """Each contender's DataFrame builder, over the cached ``bids``."""
    from sparktide.datastream import StreamExecutionEnvironment
    from sparktide.nexmark.queries import Sources, q1, q1b
    from sparktide.nexmark.sql import Frames
    from sparktide.nexmark.sql import q1 as sql_q1

    def sources() -> Sources:
        env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
        env.set_parallelism(PARALLELISM)
        return Sources.of_frames(env, None, None, bids, out_of_order_ms)

    return {
        "sparktide": lambda: (
            sources().bids().map(to_euros, output_type=Q1_TYPE).to_dataframe(ordered=False)
        ),
        "sparktide-row": lambda: q1(sources()).to_dataframe(ordered=False),
        "sparktide-batches": lambda: q1b(sources()).to_dataframe(ordered=False),
        "hand-written": lambda: bids.select(*BID_NAMES).mapInArrow(hand_written, Q1_DDL),
        "hand-written-columns": lambda: bids.select(*BID_NAMES).mapInArrow(
            hand_written_columns, Q1_DDL
        ),
        "spark-sql": lambda: sql_q1(Frames(None, None, bids)),
    }


def timed_run(build: Build) -> CpuRun:
    """One run of ``build``'s DataFrame into the noop sink."""
    return cpu_timed(lambda: build().write.format("noop").mode("overwrite").save())


def checksum(build: Build) -> Checksum:
    """The output's row count, price sum and exact checksums (one untimed run)."""
    from pyspark.sql import functions as F

    frame = build()
    modulus = F.lit(2**31)
    row = frame.agg(
        F.count(F.lit(1)),
        F.sum("price"),
        F.sum(F.pmod(F.xxhash64("price"), modulus)),
        F.sum(F.pmod(F.xxhash64(*Q1_SCHEMA.names), modulus)),
    ).first()
    return Checksum(int(row[0]), float(row[1] or 0.0), int(row[2] or 0), int(row[3] or 0))


# ---------------------------------------------------------------------------------------------
# The Spark session and the cached events


@dataclass(frozen=True)
class CachedBids:
    """The bids DataFrame cached in Spark, with the stream's sizes."""

    frame: Any
    events: int
    bids: int
    out_of_order_ms: int


def cached_bids(spark: Any, events: int, seed: int, workdir: Path) -> CachedBids:
    """Generate ``events`` NEXMark events, write them as two Parquet files per kind, and
    cache the bids in Spark (counted)."""
    from sparktide.nexmark.config import GeneratorConfig
    from sparktide.nexmark.generator import generate
    from sparktide.nexmark.streaming import write_files

    config = GeneratorConfig(events=events, seed=seed)
    tables = generate(config)
    folders = write_files(tables, workdir, PARALLELISM)
    frame = spark.read.parquet(str(folders["bids"])).cache()
    count = frame.count()
    if count != tables.bids.num_rows:
        raise RuntimeError(f"cached {count} bids, generated {tables.bids.num_rows}")
    return CachedBids(frame, events, count, config.out_of_order_bound_ms)


def measure(builds: dict[str, Build], repeat: int) -> dict[str, list[CpuRun]]:
    """``repeat`` runs per contender, the contenders alternating within each round."""
    runs: dict[str, list[CpuRun]] = {name: [] for name in builds}
    for _ in range(repeat):
        for name, build in builds.items():
            runs[name].append(timed_run(build))
    return runs


def check_outputs(builds: dict[str, Build]) -> dict[str, Checksum]:
    """Each contender's checksum (an untimed first run: it also warms the workers up);
    raises when two contenders disagree."""
    sums = {name: checksum(build) for name, build in builds.items()}
    first_name, first = next(iter(sums.items()))
    for name, other in sums.items():
        if not other.agrees(first):
            raise RuntimeError(f"outputs differ: {first_name} {first}, {name} {other}")
    return sums


# ---------------------------------------------------------------------------------------------
# The table


def _ratio(mine: float, theirs: float) -> str:
    return f"{theirs / mine:.3g}x" if mine > 0 else "-"


def print_table(runs: dict[str, list[CpuRun]], data: CachedBids) -> None:
    """Wall time, events/s, CPU per bid (JVM, workers, driver, total) and the ratios."""
    from sparktide.nexmark.runner import print_markdown

    per_bid = 1e6 / data.bids
    head = ["contender", "wall s", "events/s"]
    head += [f"{part} µs/bid" for part in ("JVM", "workers", "driver", "CPU")]
    lines = []
    for name, done in runs.items():
        wall = min(r.seconds for r in done)
        cpu = min((r.cpu for r in done), key=lambda c: c.total)
        cells = [name, f"{wall:.2f}", f"{data.events / wall:,.0f}"]
        cells += [f"{x * per_bid:.2f}" for x in (cpu.jvm, cpu.workers, cpu.driver, cpu.total)]
        lines.append(cells)
    print_markdown(head, lines)
    print_ratios(runs)


RATIOS = (
    ("sparktide", "hand-written"),
    ("sparktide", "spark-sql"),
    ("sparktide-batches", "hand-written-columns"),
    ("sparktide-batches", "spark-sql"),
    ("hand-written", "spark-sql"),
    ("hand-written-columns", "spark-sql"),
)


def print_ratios(runs: dict[str, list[CpuRun]]) -> None:
    """Wall time and CPU of each pair of :data:`RATIOS` that ran: the second's cost over the
    first's."""
    for mine, other in RATIOS:
        if mine in runs and other in runs:
            wall, theirs_wall = (min(r.seconds for r in runs[n]) for n in (mine, other))
            cpu, theirs_cpu = (min(r.cpu.total for r in runs[n]) for n in (mine, other))
            print(
                f"{mine} / {other}: wall {_ratio(wall, theirs_wall)}, "
                f"CPU {_ratio(cpu, theirs_cpu)} ({other}'s cost over {mine}'s)"
            )


# ---------------------------------------------------------------------------------------------
# The profile on the local runtime


class CountingSink:
    """Counts the records that reach it."""

    def __init__(self) -> None:
        self.count = 0

    def invoke(self, value: Any, context: Any) -> None:
        self.count += 1


def local_q1(tables: Any, out_of_order_ms: int) -> float:
    """sparktide's q1 with ``to_euros`` on the local runtime: wall seconds."""
    from sparktide.datastream import StreamExecutionEnvironment
    from sparktide.nexmark.queries import Sources

    start = time.perf_counter()
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    env.set_parallelism(1)
    sources = Sources.of_tables(env, tables, 1, out_of_order_ms)
    sources.bids().map(to_euros, output_type=Q1_TYPE).add_sink(CountingSink())
    env.execute("nexmark q1")
    return time.perf_counter() - start


def local_hand_written(bids: pa.Table) -> float:
    """The hand-written loop over ``bids`` (strings decoded, as Spark sends them): seconds."""
    plain = bids.cast(pa.schema([pa.field(f.name, _plain(f.type)) for f in bids.schema]))
    start = time.perf_counter()
    rows = sum(b.num_rows for b in hand_written(plain.to_batches(ARROW_BATCH)))
    seconds = time.perf_counter() - start
    if rows != bids.num_rows:
        raise RuntimeError(f"the loop gave {rows} rows for {bids.num_rows} bids")
    return seconds


def _plain(arrow_type: pa.DataType) -> pa.DataType:
    return arrow_type.value_type if pa.types.is_dictionary(arrow_type) else arrow_type


def print_top(stats: pstats.Stats, what: str) -> None:
    """cProfile's top 20 of ``stats``, by cumulative time and by time of their own."""
    for order, label in (("cumulative", "cumulative time"), ("tottime", "own time")):
        print(f"cProfile of {what}, top 20 by {label}:", flush=True)
        stats.sort_stats(order).print_stats(20)


def profile_local(events: int, seed: int) -> None:
    """µs per bid of sparktide's q1 and of the hand-written loop in this process, then
    cProfile's top 20 of sparktide's q1 on the local runtime."""
    from sparktide.nexmark.config import GeneratorConfig
    from sparktide.nexmark.generator import generate

    config = GeneratorConfig(events=events, seed=seed)
    tables = generate(config)
    bids = tables.bids.num_rows
    bound = config.out_of_order_bound_ms
    local = min(local_q1(tables, bound) for _ in range(2))
    loop = min(local_hand_written(tables.bids) for _ in range(2))
    print(
        f"{events:,} events ({bids:,} bids), load average {load_average()}: sparktide q1 on the "
        f"local runtime {local * 1e6 / bids:.2f} µs/bid, the hand-written loop "
        f"{loop * 1e6 / bids:.2f} µs/bid (ratio {loop / local:.3g}x)\n"
    )
    profiler = cProfile.Profile()
    profiler.runcall(local_q1, tables, bound)
    print_top(pstats.Stats(profiler), "sparktide's q1 on the local runtime")


def profile_spark(spark: Any, data: CachedBids, workdir: Path) -> None:
    """One run of sparktide's q1 on Spark with PySpark's profiler of Python workers
    (``spark.sql.pyspark.udf.profiler=perf``: cProfile around each batch a ``mapInArrow``
    task hands back), then the top 20 of all its tasks' profiles together."""
    build = contenders(data.frame, data.out_of_order_ms)["sparktide"]
    timed_run(build)  # unprofiled: the workers import sparktide outside the profile
    spark.profile.clear(type="perf")
    spark.conf.set(UDF_PROFILER, "perf")
    try:
        run = timed_run(build)
    finally:
        spark.conf.unset(UDF_PROFILER)
    per_bid = 1e6 / data.bids
    print(
        f"sparktide q1 on Spark, profiled: {run.seconds:.2f} s, CPU µs/bid: JVM "
        f"{run.cpu.jvm * per_bid:.2f}, workers {run.cpu.workers * per_bid:.2f}\n"
    )
    folder = workdir / "profiles"
    spark.profile.dump(str(folder), type="perf")
    files = sorted(str(f) for f in folder.glob("*.pstats"))
    if not files:
        raise RuntimeError("the Python workers sent no profile back")
    print_top(pstats.Stats(*files), f"sparktide's q1 in Spark's Python workers ({len(files)} UDFs)")


# ---------------------------------------------------------------------------------------------
# Main


@contextmanager
def spark_bids(events: int, seed: int) -> Iterator[tuple[Any, CachedBids, Path]]:
    """The Spark session, the cached bids and a scratch folder (removed afterwards)."""
    from sparktide.spark.session import get_spark

    spark = get_spark(f"local[{PARALLELISM}]")
    spark.conf.set("spark.sql.shuffle.partitions", str(PARALLELISM))
    workdir = Path(tempfile.mkdtemp(prefix="floor-"))
    try:
        data = cached_bids(spark, events, seed, workdir / "events")
        print(
            f"NEXMark q1: {data.events:,} events, {data.bids:,} bids cached in "
            f"{data.frame.rdd.getNumPartitions()} partitions; local[{PARALLELISM}], "
            f"parallelism {PARALLELISM}; load average {load_average()}"
        )
        yield spark, data, workdir
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def side_by_side(data: CachedBids, names: list[str], repeat: int) -> None:
    """The contenders' checksums, then their table."""
    every = contenders(data.frame, data.out_of_order_ms)
    builds = {name: every[name] for name in names}
    for name, sums in check_outputs(builds).items():
        print(f"  {name}: {sums}")
    runs = measure(builds, repeat)
    print(f"\nbest of {repeat}; load average after the runs {load_average()}\n")
    print_table(runs, data)


CONTENDERS = (
    "sparktide",
    "sparktide-row",
    "sparktide-batches",
    "hand-written",
    "hand-written-columns",
    "spark-sql",
)
UDF_PROFILER = "spark.sql.pyspark.udf.profiler"


def parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000, help="events in the stream")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per contender")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--contenders",
        default=",".join(CONTENDERS),
        help=f"comma-separated, of: {','.join(CONTENDERS)}",
    )
    ap.add_argument(
        "--profile",
        choices=("local", "spark"),
        help="instead of the table: profile sparktide's q1 on the local runtime or on Spark",
    )
    args = ap.parse_args(argv)
    args.contenders = [c.strip() for c in args.contenders.split(",") if c.strip()]
    unknown = [c for c in args.contenders if c not in CONTENDERS]
    if unknown or not args.contenders:
        ap.error(f"--contenders: unknown {unknown}; choose among {','.join(CONTENDERS)}")
    if args.events < 1 or args.repeat < 1:
        ap.error("--events and --repeat must be >= 1")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    if args.profile == "local":
        profile_local(args.events, args.seed)
        return
    with spark_bids(args.events, args.seed) as (spark, data, workdir):
        if args.profile == "spark":
            profile_spark(spark, data, workdir)
        else:
            side_by_side(data, args.contenders, args.repeat)


if __name__ == "__main__":
    main()
