"""NEXMark q2 as a stream next to the fastest streams Spark can run over the same files.

q2 keeps ``(auction, price)`` of the bids on every 123rd auction: no state, so every micro-batch
can compute its share alone, and the same rows come out of a bounded run and of any stream over
the events. The events come from sparktide's NEXMark generator (``--events``, default 10^6),
written as ``--batches`` Parquet files per kind (``sparktide.nexmark.streaming.write_files``),
read one file per micro-batch (``maxFilesPerTrigger=1``, ``availableNow``) by every stream
below. One session, ``local[2]``, parallelism 2. The contenders, each written to Spark's
``noop`` sink:

    sparktide bounded   NEXMark's q2 on sparktide over the events cached in Spark
                          (as ``python -m sparktide.nexmark --runtime spark`` runs it)
    sparktide stream    the same job over the files (``python -m sparktide.nexmark --stream``)
    Spark SQL stream    Structured Streaming, each micro-batch's bids through NEXMark's q2 in
                          Spark SQL (``sparktide.nexmark.sql.q2``) in ``foreachBatch``
    Python step stream  Structured Streaming, each micro-batch's bids through one
                          ``mapInArrow`` computing q2 over Arrow columns (numpy on the
                          auction column, Arrow's filter; no Python object per bid): the
                          least a micro-batch with a Python step costs on Spark

Before the timed runs, each stream runs once untimed with a counting sink: every one must give
as many rows as Spark SQL's q2 over the cached events.

Figures: events/s (every event of the stream over the run's wall time, as the NEXMark runner
counts), the ratio to sparktide's bounded run, and for the streams the p50 and p95 of their
micro-batches' ``triggerExecution``. Best of ``--repeat`` per contender, the contenders taking
turns. A stream at 0.5x the bounded run needs its micro-batches, Spark's own work in them
included, to take at most twice the bounded run's time per event: the Spark SQL and Python step
rows show how close Spark itself comes.

Usage::

    python benchmarks/stream_floor.py                       # 10^6 events, 20 micro-batches
    python benchmarks/stream_floor.py --events 200000 --batches 10 --repeat 1
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
from common import load_average

PARALLELISM = 2
Q2_DDL = "auction long, price long"


def q2_columns(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """q2 over Arrow columns: the bids on every 123rd auction, ``(auction, price)``."""
    for batch in batches:
        chosen = batch.filter(pa.array(batch.column("auction").to_numpy() % 123 == 0))
        yield pa.RecordBatch.from_arrays(
            [chosen.column("auction"), chosen.column("price")], names=["auction", "price"]
        )


@dataclass(frozen=True)
class Run:
    """One contender's run: its wall time and its micro-batches' times (ms)."""

    seconds: float
    batch_ms: list[float]


def _noop(df: Any) -> None:
    df.write.format("noop").mode("overwrite").save()


def spark_stream(
    spark: Any,
    folder: Path,
    step: Callable[[Any], Any],
    checkpoint: Path,
    sink: Callable[[Any], None] = _noop,
) -> Run:
    """Structured Streaming over the bids' files, each micro-batch's frame through ``step``
    into ``sink`` (Spark's noop sink)."""
    from sparktide.nexmark.latency import every_progress, trigger_ms

    schema = spark.read.parquet(str(folder)).schema
    frame = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(folder))
    start = time.perf_counter()
    with every_progress(spark):
        query = (
            frame.writeStream.foreachBatch(lambda df, _id: sink(step(df)))
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
    query.awaitTermination()
    seconds = time.perf_counter() - start
    return Run(seconds, list(trigger_ms(query).values()))


@dataclass(frozen=True)
class CachedEvents:
    """The events cached in Spark (the NEXMark runner's ``Frames``) and the generator's
    out-of-order bound (ms)."""

    frames: Any
    bound: int


def contenders(
    spark: Any, events: CachedEvents, folders: dict[str, Path], work: Path
) -> dict[str, Callable[[int], Run]]:
    """Each contender's run, a callable taking the run's index (for a fresh checkpoint)."""
    from sparktide.nexmark.runner import run_spark_bounded

    def bounded(_i: int) -> Run:
        return Run(run_spark_bounded("q2", events.frames, PARALLELISM, events.bound), [])

    def stream(i: int) -> Run:
        run = sparktide_stream(spark, events, folders, work / f"ckpt-sparktide-{i}")
        return Run(run.seconds, [float(ms) for ms in run.batch_ms])

    def spark_run(name: str, step: Callable[[Any], Any]) -> Callable[[int], Run]:
        return lambda i: spark_stream(
            spark, folders["bids"], step, work / f"ckpt-{_slug(name)}-{i}"
        )

    runs = {"sparktide bounded": bounded, "sparktide stream": stream}
    return runs | {name: spark_run(name, step) for name, step in stream_steps().items()}


def sparktide_stream(
    spark: Any,
    events: CachedEvents,
    folders: dict[str, Path],
    checkpoint: Path,
    collect: bool = False,
) -> Any:
    """sparktide's q2 over the files, as ``python -m sparktide.nexmark --stream`` runs it (its
    ``StreamRun``; with ``collect``, the output rows too)."""
    from sparktide.nexmark.streaming import run_stream

    return run_stream(
        "q2", spark, folders, checkpoint, out_of_order_ms=events.bound, parallelism=PARALLELISM,
        collect=collect,
    )  # fmt: skip


def stream_steps() -> dict[str, Callable[[Any], Any]]:
    """What Spark's own streams do with each micro-batch's bids: q2 in Spark SQL, or in one
    ``mapInArrow`` over Arrow columns."""
    from sparktide.nexmark.sql import Frames
    from sparktide.nexmark.sql import q2 as sql_q2

    def in_sql(df: Any) -> Any:
        return sql_q2(Frames(None, None, df))

    def in_python(df: Any) -> Any:
        return df.select("auction", "price").mapInArrow(q2_columns, Q2_DDL)

    return {"Spark SQL stream": in_sql, "Python step stream": in_python}


def check_rows(spark: Any, events: CachedEvents, folders: dict[str, Path], work: Path) -> int:
    """Untimed: the rows of q2 from every stream, each equal to Spark SQL's q2 over the cached
    events (raises when one differs); that count."""
    from sparktide.nexmark.sql import q2 as sql_q2

    expected = sql_q2(events.frames).count()
    counts: list[int] = []
    for name, step in stream_steps().items():
        counts.clear()
        checkpoint = work / f"ckpt-check-{_slug(name)}"
        spark_stream(spark, folders["bids"], step, checkpoint, lambda df: counts.append(df.count()))
        _same(name, sum(counts), expected)
    run = sparktide_stream(spark, events, folders, work / "ckpt-check-sparktide", collect=True)
    _same("sparktide stream", len(run.rows), expected)
    return int(expected)


def _slug(name: str) -> str:
    return name.replace(" ", "-")


def _same(name: str, rows: int, expected: int) -> None:
    if rows != expected:
        raise RuntimeError(
            f"{name} gave {rows:,} rows of q2, Spark SQL over the events {expected:,}"
        )


def _percentile(values: list[float], q: float) -> str:
    from sparktide.nexmark.latency import percentile

    return f"{percentile(values, q):,.0f}" if values else ""


def print_table(best: dict[str, Run], events: int, batches: int) -> None:
    from sparktide.nexmark.runner import print_markdown

    bounded = best["sparktide bounded"].seconds
    head = ["contender", "wall s", "events/s", "vs sparktide bounded", "batches"]
    head += ["p50 batch ms", "p95 batch ms"]
    lines = []
    for name, run in best.items():
        cells = [name, f"{run.seconds:.2f}", f"{events / run.seconds:,.0f}"]
        cells += [f"{bounded / run.seconds:.3g}x", str(len(run.batch_ms) or "")]
        cells += [_percentile(run.batch_ms, 0.5), _percentile(run.batch_ms, 0.95)]
        lines.append(cells)
    print_markdown(head, lines)
    stream_floor = (bounded * 2) / batches * 1000
    print(
        f"\n0.5x sparktide's bounded run means {batches} micro-batches in "
        f"{bounded * 2:.2f} s: {stream_floor:,.0f} ms a micro-batch, Spark's own work included"
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000, help="events in the stream")
    ap.add_argument("--batches", type=int, default=20, help="micro-batches (files per kind)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per contender")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if min(args.events, args.batches, args.repeat) < 1:
        ap.error("--events, --batches and --repeat must be >= 1")

    from sparktide.nexmark.config import GeneratorConfig
    from sparktide.nexmark.generator import generate
    from sparktide.nexmark.runner import cached_frames
    from sparktide.nexmark.streaming import write_files
    from sparktide.spark.session import get_spark

    config = GeneratorConfig(events=args.events, seed=args.seed)
    tables = generate(config)
    spark = get_spark(f"local[{PARALLELISM}]")
    spark.conf.set("spark.sql.shuffle.partitions", str(PARALLELISM))
    work = Path(tempfile.mkdtemp(prefix="stream-floor-"))
    try:
        splits = write_files(tables, work / "splits", PARALLELISM)
        events = CachedEvents(cached_frames(spark, splits), config.out_of_order_bound_ms)
        folders = write_files(tables, work / "stream", args.batches)
        print(
            f"NEXMark q2: {args.events:,} events, {args.batches} micro-batches of "
            f"{args.events // args.batches:,}; local[{PARALLELISM}]; load average {load_average()}"
        )
        rows = check_rows(spark, events, folders, work)
        print(f"every stream gave Spark SQL's {rows:,} rows of q2 (an untimed run each)")
        runs: dict[str, list[Run]] = {}
        every = contenders(spark, events, folders, work)
        for i in range(args.repeat):
            for name, run in every.items():
                runs.setdefault(name, []).append(run(i))
        best = {name: min(done, key=lambda r: r.seconds) for name, done in runs.items()}
        print(f"\nbest of {args.repeat}; load average after the runs {load_average()}\n")
        print_table(best, args.events, args.batches)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
