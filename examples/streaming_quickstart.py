"""Streaming quickstart: clicks per user in 10-second event-time windows, read from a folder of
JSON files as they arrive, with allowed lateness and a late side output, written to Parquet,
stopped and resumed from its checkpoint.

The stream: JSON lines ``{"user": ..., "ts": ..., "clicks": ...}`` (``ts`` in epoch
milliseconds) in ``WORKDIR/events/``, read by Spark's file source one file per micro-batch
(``maxFilesPerTrigger=1``, files in the order they were written). The job::

    env.from_stream(files, bounded out-of-orderness 1 s, timestamp_column="ts")
       .key_by("user")
       .window(TumblingEventTimeWindows.of(10 s))
       .allowed_lateness(5 s)                   # a late record within 5 s fires its window again
       .side_output_late_data(LATE)             # later ones go to the side output
       .agg(clicks=Agg.sum("clicks"), events=Agg.count())
       -> ParquetBatchSink(WORKDIR/windows)     # one folder per micro-batch: batch=<id>/
    late records -> ParquetBatchSink(WORKDIR/late)

State (open windows, timers, the watermark of the source) is kept in ``WORKDIR/checkpoint``.
Each run writes the next files of the stream into ``WORKDIR/events/`` (as a producer would),
then processes what is there with ``trigger="available_now"``: every file not yet processed,
then it stops. The next run resumes from the checkpoint and reads only the files that arrived
since; windows left open by the first run fire when the new files move the watermark on.

Run it (``--runtime spark`` is the default of ``sparktide run``)::

    sparktide run examples/streaming_quickstart.py -- /tmp/quickstart                # files 0-2
    sparktide inspect /tmp/quickstart/checkpoint        # state, timers, watermark of the last batch
    sparktide run examples/streaming_quickstart.py -- /tmp/quickstart --new-files 2  # files 3-4

``python examples/streaming_quickstart.py /tmp/quickstart`` runs the same without the command's
progress lines. For a stream that runs until stopped, use ``trigger="continuous"`` (or
``"processing_time:10s"``): Ctrl-C stops it after the micro-batch in flight commits.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow.dataset as ds

from sparktide.common import Duration, Row, Types, WatermarkStrategy
from sparktide.datastream import OutputTag, StreamExecutionEnvironment
from sparktide.datastream.connectors import ParquetBatchSink
from sparktide.datastream.window import Agg, TumblingEventTimeWindows
from sparktide.spark.session import get_spark

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SCHEMA = "user string, ts long, clicks long"
CLICK = Types.ROW_NAMED(["user", "ts", "clicks"], [Types.STRING(), Types.LONG(), Types.LONG()])
LATE = OutputTag("late-clicks", CLICK)  # typed: the sink writes its columns

# the stream, one list per file, in the order the files arrive (ts in epoch milliseconds)
FILES: list[list[tuple[str, int, int]]] = [
    [("ann", 1_000, 2), ("bob", 3_000, 1), ("ann", 7_500, 4)],
    [("bob", 12_000, 3), ("ann", 13_000, 1)],  # watermark 11,999: window [0 s, 10 s) fires
    [("ann", 8_000, 5), ("bob", 25_000, 2)],  # ann @ 8 s: late, within the lateness: fires again
    [("bob", 4_000, 9), ("ann", 31_000, 1)],  # bob @ 4 s: too late, the side output
    [("ann", 42_000, 6)],  # watermark 40,999: window [30 s, 40 s) fires
]


def write_next_files(events: Path, count: int) -> list[Path]:
    """Write the next ``count`` files of :data:`FILES` that ``events`` does not hold yet (as a
    producer would: a hidden file renamed into place); the files written."""
    events.mkdir(parents=True, exist_ok=True)
    have = len([p for p in events.iterdir() if p.suffix == ".json"])
    written = []
    for index in range(have, min(have + count, len(FILES))):
        path = events / f"clicks-{index:04d}.json"
        hidden = events / f".{path.name}.tmp"
        lines = [{"user": user, "ts": ts, "clicks": n} for user, ts, n in FILES[index]]
        hidden.write_text("".join(json.dumps(line) + "\n" for line in lines))
        os.replace(hidden, path)
        # the file source takes files in modification-time order
        os.utime(path, (1_700_000_000 + index, 1_700_000_000 + index))
        written.append(path)
    return written


def build_job(env: StreamExecutionEnvironment, spark: SparkSession, work: str) -> None:
    """Windows to WORK/windows, late records to WORK/late."""
    files = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(f"{work}/events")
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(1))
    clicks = env.from_stream(files, strategy, timestamp_column="ts", source_name="clicks")
    windows = (
        clicks.key_by("user")
        .window(TumblingEventTimeWindows.of(Duration.of_seconds(10)))
        .allowed_lateness(Duration.of_seconds(5))
        .side_output_late_data(LATE)
        .agg(clicks=Agg.sum("clicks"), events=Agg.count())
        .uid("clicks-per-user")  # its state is found by this id when the job is resumed
    )
    windows.sink_to(ParquetBatchSink(f"{work}/windows")).name("windows")  # windows/batch=<id>/
    late = windows.get_side_output(LATE)
    late.sink_to(ParquetBatchSink(f"{work}/late")).name("late clicks")


def run(workdir: Path, new_files: int) -> list[dict[str, object]]:
    """Write the next ``new_files`` files, process every file not processed yet, print what
    this run committed; the metrics of its micro-batches."""
    written = write_next_files(workdir / "events", new_files)
    print(f"wrote {len(written)} new file(s): {', '.join(p.name for p in written) or '-'}")
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(2)
    build_job(env, get_spark(), str(workdir))
    client = env.execute_async(
        "clicks per user",
        checkpoint_location=str(workdir / "checkpoint"),
        trigger="available_now",
    )
    client.await_termination()
    batches: list[dict[str, object]] = [dict(m) for m in client.recent_progress]
    for m in batches:
        watermark = m["watermark"]
        print(f"committed batch {m['batch_id']}: {m['records']} records, watermark {watermark}")
    show(workdir)
    return batches


def show(workdir: Path) -> None:
    """Print every window row and late record written so far, by batch (the sinks' Parquet
    folders read back; ``spark.read.parquet(folder)`` reads them as well)."""
    for name in ("windows", "late"):
        folder = workdir / name
        if not folder.exists():
            print(f"{name}: none yet")
            continue
        table = ds.dataset(str(folder), format="parquet", partitioning="hive").to_table()
        print(f"{name}:")
        for row in sorted(table.to_pylist(), key=lambda r: (r["batch"], *map(str, r.values()))):
            batch = row.pop("batch")
            print(f"  batch {batch}: {Row(**row)}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workdir", nargs="?", default="streaming-quickstart-out")
    parser.add_argument(
        "--new-files", type=int, default=3, metavar="N",
        help="files of the stream to write before this run (default 3)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.new_files < 0:
        parser.error(f"--new-files must be >= 0, got {args.new_files}")
    run(Path(args.workdir), args.new_files)


if __name__ == "__main__":
    main()
