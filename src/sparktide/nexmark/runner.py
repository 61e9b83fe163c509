"""``python -m sparktide.nexmark``: generate NEXMark events, run queries, print a table.

Per query: sparktide's events/s (all events of the stream over the wall time of the job, from
building it to its last output), the same per core used (1 on the local runtime, the
parallelism on Spark), Spark SQL's events/s on the same events and the ratio (``vs Spark SQL``
> 1 means sparktide is faster), PyFlink's when a PyFlink installation is found
(``SPARKTIDE_PYFLINK_PYTHON``, or ``--pyflink PYTHON``) and the ratio, and the peak resident
memory of the process tree while sparktide ran (this process, Spark's JVM and its workers).

Inputs: the events are generated once (its rate is printed), written as Parquet files (one per
kind and split). Spark SQL and sparktide on Spark read them as DataFrames cached in Spark's
memory; the local runtime reads the Arrow tables in the process. Outputs go nowhere: Spark's
``noop`` writer, a counting sink on the local runtime, a filter that keeps nothing in PyFlink.
Times are the best of ``--repeat``.

``--stream`` runs the queries as streams over the Parquet files instead (``--batches`` files
per kind, one per micro-batch) and reports events/s and the p50/p95/p99 micro-batch time
(Structured Streaming's ``triggerExecution``: the whole micro-batch, Spark's own work in it
too), beside the same query's bounded run on Spark in the same session (the events cached, best of
``--repeat``, run after the stream) and the ratio of the two. Then
each query runs again while the same files arrive one micro-batch's worth every
``--interval-ms`` (0: skip), and so does Spark's floor, a trivial stateful Structured Streaming
query (``groupBy(auction).count()`` of the bids): a second table gives their p50/p95/p99 batch
time and end-to-end latency, from a file's arrival to the commit of the micro-batch that wrote
the result rows it led to (:mod:`sparktide.nexmark.latency`).

Usage::

    python -m sparktide.nexmark --events 1000000 --queries q0,q5 --runtime spark
    python -m sparktide.nexmark --events 100000 --runtime local
    python -m sparktide.nexmark --events 1000000 --stream --batches 20 --interval-ms 1000
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparktide.common import env_overrides
from sparktide.datastream import StreamExecutionEnvironment
from sparktide.nexmark.config import GeneratorConfig
from sparktide.nexmark.generator import EventTables, generate
from sparktide.nexmark.latency import (
    LatencyFigures,
    LiveFeed,
    Percentiles,
    latency_table,
    markdown_table,
    percentile_cells,
    spark_floor,
)
from sparktide.nexmark.memory import PeakMemory, release_freed_memory
from sparktide.nexmark.queries import QUERIES, Sources
from sparktide.nexmark.sql import SQL_QUERIES, Frames
from sparktide.nexmark.streaming import KINDS, run_stream, run_stream_live, ticks_of, write_files

__all__ = ["cached_frames", "main", "print_markdown", "pyflink_job", "run_spark_bounded"]

PYFLINK_QUERIES = ("q0", "q1", "q2", "q3", "q4", "q5", "q7", "q11", "q12")
"""The queries with a PyFlink version (:mod:`sparktide.nexmark.pyflink_jobs`)."""


@dataclass
class QueryResult:
    """One query's figures: one line of the table."""

    query: str
    seconds: float | None = None
    sql_seconds: float | None = None
    pyflink_seconds: float | None = None
    peak_mib: float | None = None
    batch_ms: Percentiles | None = None
    batches: int = 0
    bounded_seconds: float | None = None  # with --stream: the bounded run on Spark


_COUNTS: dict[str, int] = {}


class CountingSink:
    """Counts what reaches it (local runtime, in this process) under ``name``."""

    def __init__(self, name: str) -> None:
        self.name = name

    def invoke(self, value: Any, context: Any) -> None:
        _COUNTS[self.name] = _COUNTS.get(self.name, 0) + 1


def _best(times: list[float | None]) -> float | None:
    real = [t for t in times if t is not None]
    return min(real) if real else None


def _kept(tables: EventTables | None) -> EventTables:
    """The generated events, kept in this process for the runs that read them from here."""
    if tables is None:
        raise RuntimeError("the events were not kept in this process: only Spark reads them")
    return tables


def _run_local(query: str, tables: EventTables, parallelism: int, bound: int) -> float:
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    env.set_parallelism(parallelism)
    start = time.perf_counter()
    sources = Sources.of_tables(env, tables, parallelism, bound)
    QUERIES[query](sources).add_sink(CountingSink(query))
    env.execute(f"nexmark {query}")
    return time.perf_counter() - start


def cached_frames(spark: Any, folders: dict[str, Path]) -> Frames:
    """Each kind's Parquet files in ``folders`` read into a DataFrame cached in Spark's memory
    (and counted, so that it is cached before anything is timed)."""
    loaded = {kind: spark.read.parquet(str(folders[kind])).cache() for kind in KINDS}
    for df in loaded.values():
        df.count()
    return Frames(**loaded)


def run_spark_bounded(query: str, frames: Frames, parallelism: int, bound: int) -> float:
    """Seconds of ``query`` on sparktide over the cached ``frames``, into Spark's noop sink."""
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(parallelism)
    start = time.perf_counter()
    sources = Sources.of_frames(env, frames.persons, frames.auctions, frames.bids, bound)
    QUERIES[query](sources).to_dataframe(ordered=False).write.format("noop").mode(
        "overwrite"
    ).save()
    return time.perf_counter() - start


def _run_sql(query: str, frames: Frames) -> float:
    start = time.perf_counter()
    SQL_QUERIES[query](frames).write.format("noop").mode("overwrite").save()
    return time.perf_counter() - start


PYFLINK_JOBS = Path(__file__).with_name("pyflink_jobs.py")
"""The script of the NEXMark queries on PyFlink, run by a Python with apache-flink."""


def pyflink_job_argv(
    query: str, folders: dict[str, Path], bound: int, collect: bool = False
) -> list[str]:
    """The command line of :data:`PYFLINK_JOBS` (the script first) running ``query``."""
    args = [str(PYFLINK_JOBS), query, str(folders["bids"]), str(bound)]
    args += ["--persons", str(folders["persons"]), "--auctions", str(folders["auctions"])]
    return [*args, "--collect"] if collect else args


def pyflink_job(
    python: str, query: str, folders: dict[str, Path], bound: int, collect: bool = False
) -> dict[str, Any] | None:
    """Run ``query`` on PyFlink (:mod:`sparktide.nexmark.pyflink_jobs`, by ``python``) over the
    Parquet folders of each kind: ``{"seconds": ...}``, with ``"rows"`` (lists of fields)
    when ``collect``; ``None`` (and PyFlink's error on stderr) when it fails."""
    env = env_overrides.process_environment()
    # thread mode runs the functions in the JVM through this interpreter: put it first on PATH
    env["PATH"] = f"{Path(python).parent}{os.pathsep}{env.get('PATH', '')}"
    args = [python, *pyflink_job_argv(query, folders, bound, collect)]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=7200, env=env)
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("{"):
            result: dict[str, Any] = json.loads(line)
            return result
    sys.stderr.write(f"PyFlink {query} failed:\n{proc.stderr[-2000:]}\n")
    return None


def _run_pyflink(python: str, query: str, folders: dict[str, Path], bound: int) -> float | None:
    result = pyflink_job(python, query, folders, bound)
    return None if result is None else float(result["seconds"])


def _pyflink_python(given: str | None) -> str | None:
    for candidate in (given, env_overrides.pyflink_python()):
        if candidate and Path(candidate).exists():
            ok = subprocess.run([candidate, "-c", "import pyflink"], capture_output=True)
            if ok.returncode == 0:
                return candidate
    return None


def _cell(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def _ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or b is None else f"{b / a:.3g}x"


def print_table(rows: list[QueryResult], events: int, cores: int, stream: bool) -> None:
    """The table in Markdown."""

    def rate(seconds: float | None) -> float | None:
        return None if seconds is None else events / seconds

    if stream:
        head = ["query", "events/s", "per core", "bounded events/s", "stream / bounded"]
        head += ["batches", "p50 batch ms", "p95 batch ms", "p99 batch ms"]
        lines = [
            [
                r.query,
                _cell(rate(r.seconds), ",.0f"),
                _cell(None if r.seconds is None else events / r.seconds / cores, ",.0f"),
                _cell(rate(r.bounded_seconds), ",.0f"),
                _ratio(r.seconds, r.bounded_seconds),
                str(r.batches),
                *percentile_cells(r.batch_ms),
            ]
            for r in rows
        ]
    else:
        head = ["query", "events/s", "per core", "Spark SQL events/s", "vs Spark SQL"]
        head += ["PyFlink events/s", "vs PyFlink", "peak MiB"]
        lines = [
            [
                r.query,
                _cell(rate(r.seconds), ",.0f"),
                _cell(None if r.seconds is None else events / r.seconds / cores, ",.0f"),
                _cell(rate(r.sql_seconds), ",.0f"),
                _ratio(r.seconds, r.sql_seconds),
                _cell(rate(r.pyflink_seconds), ",.0f"),
                _ratio(r.seconds, r.pyflink_seconds),
                _cell(r.peak_mib, ",.0f"),
            ]
            for r in rows
        ]
    print_markdown(head, lines)


def print_markdown(head: list[str], lines: list[list[str]]) -> None:
    """A Markdown table of ``lines`` under ``head``, every column right-aligned.

    >>> print_markdown(["query", "events/s"], [["q1", "1,234"]])
    | query | events/s |
    |------:|---------:|
    |    q1 |    1,234 |
    """
    print(markdown_table(head, lines))


def _parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="python -m sparktide.nexmark",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--events", type=int, default=1_000_000, help="events in the stream")
    ap.add_argument("--queries", default=",".join(QUERIES), help="comma-separated, e.g. q0,q5")
    ap.add_argument("--runtime", choices=("local", "spark"), default="spark")
    ap.add_argument("--parallelism", type=int, default=2)
    ap.add_argument("--rate", type=int, default=10_000, help="events per second of event time")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--out-of-order-group", type=int, default=1, help="events permuted per group (1: none)"
    )
    ap.add_argument("--repeat", type=int, default=1, help="runs per contender (best is kept)")
    ap.add_argument("--no-sql", action="store_true", help="skip Spark SQL")
    ap.add_argument("--pyflink", default=None, help="a Python with PyFlink (else the env var)")
    ap.add_argument("--no-pyflink", action="store_true", help="skip PyFlink")
    ap.add_argument("--stream", action="store_true", help="run as streams over Parquet files")
    ap.add_argument("--batches", type=int, default=10, help="micro-batches with --stream")
    ap.add_argument(
        "--interval-ms", type=int, default=1000,
        help="with --stream: the cadence at which the files arrive in the latency runs "
        "(0: no latency runs)",
    )  # fmt: skip
    args = ap.parse_args(argv)
    unknown = [q for q in args.queries.split(",") if q not in QUERIES]
    if unknown:
        ap.error(f"--queries: unknown {unknown}; the queries are {','.join(QUERIES)}")
    if args.parallelism < 1 or args.repeat < 1:
        ap.error("--parallelism and --repeat must be >= 1")
    if args.interval_ms < 0:
        ap.error(f"--interval-ms must be >= 0 (0: no latency runs), got {args.interval_ms}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    queries = args.queries.split(",")
    config = GeneratorConfig(
        events=args.events,
        seed=args.seed,
        rate=args.rate,
        out_of_order_group_size=args.out_of_order_group,
    )
    bound = config.out_of_order_bound_ms
    start = time.perf_counter()
    tables = generate(config)
    took = time.perf_counter() - start
    print(
        f"NEXMark: {args.events:,} events ({tables.persons.num_rows:,} persons, "
        f"{tables.auctions.num_rows:,} auctions, {tables.bids.num_rows:,} bids), generated in "
        f"{took:.2f} s ({args.events / max(took, 1e-9):,.0f} events/s); "
        f"{platform.python_version()}, {os.cpu_count()} cores"
    )
    workdir = Path(tempfile.mkdtemp(prefix="nexmark-"))
    try:
        splits = write_files(tables, workdir / "splits", args.parallelism)
        # the events stay in this process only for the runs that read them from here (the
        # local runtime, the stream's files): a run on Spark reads the Parquet files, and the
        # peak memory of its process tree is the job's, not the generator's
        kept = tables if args.runtime == "local" or args.stream else None
        del tables
        release_freed_memory()  # what the generator and the writer freed is not the runs'
        return _measure(args, queries, config, kept, splits, workdir, bound)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _progress_line(row: QueryResult) -> str:
    """What a query's runs took, the figures it has (a stream run has no Spark SQL figure, a
    bounded one no bounded-on-Spark figure).

    >>> _progress_line(QueryResult("q1", seconds=1.5, sql_seconds=0.25))
    '  q1: sparktide 1.50 s, Spark SQL 0.25 s'
    """
    figures = (
        ("bounded", row.bounded_seconds),
        ("Spark SQL", row.sql_seconds),
        ("PyFlink", row.pyflink_seconds),
    )
    ran = [f"sparktide {_cell(row.seconds, '.2f')} s"]
    ran += [f"{name} {value:.2f} s" for name, value in figures if value is not None]
    return f"  {row.query}: " + ", ".join(ran)


def _measure(
    args: argparse.Namespace,
    queries: list[str],
    config: GeneratorConfig,
    tables: EventTables | None,
    splits: dict[str, Path],
    workdir: Path,
    bound: int,
) -> int:
    parallelism = args.parallelism
    needs_spark = args.stream or args.runtime == "spark" or not args.no_sql
    spark = None
    frames = None
    if needs_spark:
        from sparktide.spark.session import get_spark

        spark = get_spark(f"local[{parallelism}]")
        spark.conf.set("spark.sql.shuffle.partitions", str(parallelism))
    if spark is not None:
        frames = cached_frames(spark, splits)
    pyflink = None if args.no_pyflink or args.stream else _pyflink_python(args.pyflink)
    rows = []
    for query in queries:
        row = QueryResult(query)
        if args.stream:
            folders = write_files(_kept(tables), workdir / f"stream-{query}", args.batches)
            run = run_stream(
                query, spark, folders, workdir / f"ckpt-{query}", out_of_order_ms=bound,
                parallelism=parallelism,
            )  # fmt: skip
            row.seconds, row.batches = run.seconds, len(run.batch_ms)
            row.batch_ms = Percentiles.of(run.batch_ms)
            if frames is not None:
                row.bounded_seconds = _best(
                    [
                        run_spark_bounded(query, frames, parallelism, bound)
                        for _ in range(args.repeat)
                    ]
                )
        else:
            times: list[float | None] = []
            with PeakMemory() as peak:
                for _ in range(args.repeat):
                    if frames is None or args.runtime == "local":
                        times.append(_run_local(query, _kept(tables), parallelism, bound))
                    else:
                        times.append(run_spark_bounded(query, frames, parallelism, bound))
            row.seconds, row.peak_mib = _best(times), peak.mib
            if frames is not None and not args.no_sql:
                row.sql_seconds = _best([_run_sql(query, frames) for _ in range(args.repeat)])
            if pyflink is not None and query in PYFLINK_QUERIES:
                row.pyflink_seconds = _best(
                    [_run_pyflink(pyflink, query, splits, bound) for _ in range(args.repeat)]
                )
        rows.append(row)
        print(_progress_line(row), file=sys.stderr, flush=True)
    cores = 1 if args.runtime == "local" and not args.stream else parallelism
    mode = "stream" if args.stream else args.runtime
    print(f"\nsparktide on {mode}, parallelism {parallelism} ({cores} core(s) per figure):\n")
    print_table(rows, args.events, cores, args.stream)
    if args.stream and args.interval_ms:
        if spark is None:  # a stream runs on Spark: the session is made before its runs
            raise RuntimeError("--stream ran without a Spark session")
        figures = _latency_runs(args, queries, _kept(tables), spark, workdir, bound)
        print(
            f"\nlatency: the same files arriving one micro-batch's worth every "
            f"{args.interval_ms} ms, a micro-batch as soon as one is there:\n"
        )
        print(latency_table(figures))
    return 0


FLOOR_KEY = "auction"
"""The key of Spark's floor query, ``groupBy(auction).count()`` of the bids."""


def _latency_runs(
    args: argparse.Namespace,
    queries: list[str],
    tables: EventTables,
    spark: Any,
    workdir: Path,
    bound: int,
) -> list[LatencyFigures]:
    """Each query, then Spark's floor, while the files of ``tables`` arrive at the cadence."""
    ticks = ticks_of(tables, args.batches)
    timeout = args.batches * args.interval_ms / 1000 + 600
    figures = []
    for query in queries:
        feed, batches = run_stream_live(
            query, spark, ticks, workdir / f"live-{query}", args.interval_ms,
            workdir / f"live-ckpt-{query}", out_of_order_ms=bound,
            parallelism=args.parallelism, timeout_s=timeout,
        )  # fmt: skip
        figures.append(LatencyFigures.of(query, feed.arrivals, batches))
        cells = percentile_cells(figures[-1].latency_ms)
        print(f"  {query} (live): latency p50/p95/p99 {'/'.join(cells)} ms", file=sys.stderr)
    feed = LiveFeed([{"bids": t["bids"]} for t in ticks], workdir / "live-floor", args.interval_ms)
    batches = spark_floor(spark, feed, "bids", FLOOR_KEY, workdir / "live-ckpt-floor", timeout)
    figures.append(
        LatencyFigures.of(f"Spark floor: groupBy({FLOOR_KEY}).count()", feed.arrivals, batches)
    )
    return figures
