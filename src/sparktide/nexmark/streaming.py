"""NEXMark as a stream: the events written as Parquet files, one file per kind and
micro-batch, and a query run over them with Structured Streaming (``env.from_stream``).

Each micro-batch reads the next file of every kind (``maxFilesPerTrigger=1``, files in
order), so micro-batch ``i`` holds the events ``[i * n / batches, (i + 1) * n / batches)``.
The run ends when the files are done (``trigger="available_now"``); its output is what the
final watermark fired (no end-of-input watermark in a stream).
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
from sparktide.nexmark.queries import QUERIES, Sources

__all__ = ["KINDS", "StreamRun", "run_stream", "write_files"]

KINDS = ("persons", "auctions", "bids")


def write_files(tables: EventTables, folder: Path, batches: int) -> dict[str, Path]:
    """Write each kind's table as ``batches`` Parquet files of consecutive rows (under
    ``folder/<kind>``, modification times in file order); the folder of each kind."""
    if type(batches) is not int or batches < 1:
        raise ValueError(f"batches must be an int >= 1, got {batches!r}")
    folders = {}
    now = time.time() - batches
    for kind in KINDS:
        table: pa.Table = getattr(tables, kind)
        target = folder / kind
        target.mkdir(parents=True, exist_ok=True)
        size, extra = divmod(table.num_rows, batches)
        first = 0
        for i in range(batches):
            rows = size + (1 if i < extra else 0)
            path = target / f"part-{i:05d}.parquet"
            pq.write_table(table.slice(first, rows), str(path))
            os.utime(path, (now + i, now + i))
            first += rows
        folders[kind] = target
    return folders


@dataclass
class StreamRun:
    """What a streaming run gave: the output rows (when collected), each micro-batch's
    duration and the wall time of the whole run."""

    rows: list[Any] = field(default_factory=list)
    batch_ms: list[int] = field(default_factory=list)
    seconds: float = 0.0


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
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(parallelism)
    frames = {}
    for kind, folder in folders.items():
        schema = spark.read.parquet(str(folder)).schema
        frames[kind] = (
            spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(folder))
        )
    sources = Sources.of_frames(
        env, frames["persons"], frames["auctions"], frames["bids"], out_of_order_ms, True
    )
    run = StreamRun()

    def write(df: Any, batch_id: int) -> None:
        if collect:
            run.rows.extend(df.collect())
        else:
            df.write.format("noop").mode("overwrite").save()

    sink: Callable[[Any, int], None] = write
    QUERIES[query](sources).foreach_batch(sink)
    start = time.perf_counter()
    client = env.execute_async(
        f"nexmark {query}", checkpoint_location=str(checkpoint), trigger="available_now"
    )
    client.await_termination()
    run.seconds = time.perf_counter() - start
    run.batch_ms = [int(m["duration_ms"]) for m in client.recent_progress]
    return run
