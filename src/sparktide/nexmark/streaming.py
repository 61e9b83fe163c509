"""NEXMark as a stream: the events written as Parquet files, one file per kind and
micro-batch, and a query run over them with Structured Streaming (``env.from_stream``).

Each micro-batch reads the next file of every kind (``maxFilesPerTrigger=1``, files in
order), so micro-batch ``i`` holds the events ``[i * n / batches, (i + 1) * n / batches)``.
The run ends when the files are done (``trigger="available_now"``); its output is what the
final watermark fired (no end-of-input watermark in a stream).

:func:`run_stream_live` runs a query while its input arrives, one micro-batch's files at a
time at a fixed cadence (:class:`~sparktide.nexmark.latency.LiveFeed`), for its batch times and
end-to-end latencies (:mod:`sparktide.nexmark.latency`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from sparktide.datastream import StreamExecutionEnvironment
from sparktide.nexmark.generator import EventTables
from sparktide.nexmark.latency import (
    CommittedBatch,
    LiveFeed,
    SparktideLatencyProbe,
    every_progress,
    timed_batches,
)
from sparktide.nexmark.queries import QUERIES, Sources

__all__ = ["KINDS", "StreamRun", "run_stream", "run_stream_live", "ticks_of", "write_files"]

KINDS = ("persons", "auctions", "bids")


def _slices(table: pa.Table, batches: int) -> list[pa.Table]:
    """``table`` as ``batches`` slices of consecutive rows (the first ones a row longer)."""
    if type(batches) is not int or batches < 1:
        raise ValueError(f"batches must be an int >= 1, got {batches!r}")
    size, extra = divmod(table.num_rows, batches)
    out = []
    first = 0
    for i in range(batches):
        rows = size + (1 if i < extra else 0)
        out.append(table.slice(first, rows))
        first += rows
    return out


def ticks_of(tables: EventTables, batches: int) -> list[dict[str, pa.Table]]:
    """The input of each of ``batches`` micro-batches: per kind, the next slice of its table
    (what :func:`write_files` writes as file ``i``)."""
    per_kind = {kind: _slices(getattr(tables, kind), batches) for kind in KINDS}
    return [{kind: per_kind[kind][i] for kind in KINDS} for i in range(batches)]


def write_files(tables: EventTables, folder: Path, batches: int) -> dict[str, Path]:
    """Write each kind's table as ``batches`` Parquet files of consecutive rows (under
    ``folder/<kind>``, modification times in file order); the folder of each kind."""
    folders = {}
    now = time.time() - batches
    for kind in KINDS:
        target = folder / kind
        target.mkdir(parents=True, exist_ok=True)
        for i, part in enumerate(_slices(getattr(tables, kind), batches)):
            path = target / f"part-{i:05d}.parquet"
            pq.write_table(part, str(path))
            os.utime(path, (now + i, now + i))
        folders[kind] = target
    return folders


@dataclass
class StreamRun:
    """What a streaming run gave: the output rows (when collected), each micro-batch's
    duration and the wall time of the whole run."""

    rows: list[Any] = field(default_factory=list)
    batch_ms: list[int] = field(default_factory=list)
    seconds: float = 0.0


def _query_env(
    query: str,
    spark: Any,
    folders: dict[str, Path],
    schemas: dict[str, Any],
    sink: Callable[[Any, int], None],
    out_of_order_ms: int,
    parallelism: int,
) -> tuple[StreamExecutionEnvironment, list[str]]:
    """An environment holding ``query`` over file streams of ``folders`` (one file per kind and
    micro-batch), its output going to ``sink``; and the kinds the query reads."""
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(parallelism)
    frames = {
        kind: spark.readStream.schema(schemas[kind])
        .option("maxFilesPerTrigger", 1)
        .parquet(str(folder))
        for kind, folder in folders.items()
    }
    sources = Sources.of_frames(
        env, frames["persons"], frames["auctions"], frames["bids"], out_of_order_ms, True
    )
    read: list[str] = []

    def reading(kind: str) -> Callable[[], Any]:
        def build() -> Any:
            read.append(kind)
            return getattr(sources, kind)()

        return build

    QUERIES[query](Sources(*(reading(kind) for kind in KINDS))).foreach_batch(sink)
    return env, read


def run_stream(
    query: str,
    spark: Any,
    folders: dict[str, Path],
    checkpoint: Path,
    *,
    out_of_order_ms: int = 0,
    parallelism: int = 2,
    collect: bool = False,
) -> StreamRun:
    """Run ``query`` over the files of :func:`write_files` until they are done."""
    run = StreamRun()

    def write(df: Any, batch_id: int) -> None:
        if collect:
            run.rows.extend(df.collect())
        else:
            df.write.format("noop").mode("overwrite").save()

    schemas = {kind: spark.read.parquet(str(folder)).schema for kind, folder in folders.items()}
    env, _ = _query_env(query, spark, folders, schemas, write, out_of_order_ms, parallelism)
    start = time.perf_counter()
    with every_progress(spark):
        client = env.execute_async(
            f"nexmark {query}", checkpoint_location=str(checkpoint), trigger="available_now"
        )
    client.await_termination()
    run.seconds = time.perf_counter() - start
    run.batch_ms = [int(b.duration_ms) for b in timed_batches(client)]
    return run


def run_stream_live(
    query: str,
    spark: Any,
    ticks: list[dict[str, pa.Table]],
    folder: Path,
    interval_ms: int,
    checkpoint: Path,
    *,
    out_of_order_ms: int = 0,
    parallelism: int = 2,
    timeout_s: float = 600.0,
) -> tuple[LiveFeed, list[CommittedBatch]]:
    """Run ``query`` while a :class:`~sparktide.nexmark.latency.LiveFeed` writes the kinds of
    ``ticks`` it reads into ``folder/<kind>`` every ``interval_ms`` (a micro-batch as soon as a
    file is there), until it read all of them; the feed (its arrivals) and the committed
    batches, for :class:`~sparktide.nexmark.latency.LatencyFigures`."""
    from pyspark.sql.pandas.types import from_arrow_schema

    folders = {kind: folder / kind for kind in KINDS}
    for path in folders.values():
        path.mkdir(parents=True, exist_ok=True)
    schemas = {kind: from_arrow_schema(table.schema) for kind, table in ticks[0].items()}
    probe = SparktideLatencyProbe()
    sink = probe.count_rows
    env, read = _query_env(query, spark, folders, schemas, sink, out_of_order_ms, parallelism)
    feed = LiveFeed([{kind: tick[kind] for kind in read} for tick in ticks], folder, interval_ms)
    with every_progress(spark):
        client = env.execute_async(
            f"nexmark {query} (live)", checkpoint_location=str(checkpoint), trigger="continuous"
        )
    return feed, probe.follow(client, feed, timeout_s)
