"""The jobs of the fault suite, their input files and their reference output.

Every job reads one folder of CSV (or Parquet) files, ``kind,key,ts,v`` per record, one file
per micro-batch (``maxFilesPerTrigger=1``), and writes rows ``(kind, key, ts, v)`` to one
:class:`~sparktide.spark.streaming.ParquetBatchSink`. Each job's output does not depend on
where micro-batches begin and end (records are never late, keyed functions see each key's
records in input order, broadcast rules and events meet in line order), so a run that was
killed and restarted must give exactly the rows of an uninterrupted one.

The reference is the bounded run of the same job over all input on the local runtime, one
round per file, minus what only the end of input fires (the windows the final watermark of a
stream has not passed).

This module is imported by name (``faults.jobs``) in Spark's Python workers: the driver puts
``tests/`` on ``sys.path`` before the session starts.
"""

from __future__ import annotations

import asyncio
import csv
import os
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparktide.common import Duration, Row, Time, Types
from sparktide.common.watermark_strategy import WatermarkStrategy
from sparktide.datastream import (
    AsyncDataStream,
    AsyncFunction,
    KeyedBroadcastProcessFunction,
    KeyedProcessFunction,
    StreamExecutionEnvironment,
)
from sparktide.datastream.output_tag import OutputTag
from sparktide.datastream.state import MapStateDescriptor, ValueStateDescriptor
from sparktide.datastream.state_backend import EmbeddedRocksDBStateBackend, HashMapStateBackend
from sparktide.datastream.window import TumblingEventTimeWindows

SCHEMA = "kind string, key string, ts long, v long"
COLUMNS = ("kind", "key", "ts", "v")
EVENT = Types.ROW_NAMED(list(COLUMNS), [Types.STRING(), Types.STRING(), Types.LONG(), Types.LONG()])
OUT_OF_ORDER = 500
WINDOW = 2_000
PER_FILE = 16
FILES = 3
KEYS = 4

Record = tuple[str, str, int, int]
"""One input record or output row: ``(kind, key, ts, v)``."""

RULES = MapStateDescriptor("rules", Types.STRING(), Types.LONG())
COUNT = ValueStateDescriptor("count", Types.LONG())
FAILED = OutputTag("failed", EVENT)


# ------------------------------------------------------------------------------ input


def records(files: int = FILES, seed: int = 28) -> list[list[Record]]:
    """The input, one list per file: events of ``KEYS`` keys and some broadcast rules;
    timestamps ascend by 100 per record with a jitter below the out-of-orderness bound (no
    record is ever late)."""
    rng = random.Random(seed)
    out = []
    for f in range(files):
        rows: list[Record] = []
        for j in range(PER_FILE):
            i = f * PER_FILE + j
            ts = 1_000 + i * 100 + rng.randrange(0, OUT_OF_ORDER // 2)
            if rng.random() < (0.5 if f == 0 and j < 4 else 0.1):
                rows.append(("rule", f"r{rng.randrange(3)}", ts, rng.randrange(1, 50)))
            else:
                rows.append(("event", f"k{rng.randrange(KEYS)}", ts, i))
        out.append(rows)
    return out


def file_name(index: int, fmt: str) -> str:
    return f"part-{index:04d}.{fmt}"


def write_file(folder: Path, index: int, rows: Sequence[Record], fmt: str = "csv") -> Path:
    """Write input file ``index`` atomically, with a modification time that orders it (the
    file source reads files in that order)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / file_name(index, fmt)
    tmp = folder / f".{path.name}.tmp"
    if fmt == "csv":
        with open(tmp, "w", newline="") as out:
            writer = csv.writer(out)
            writer.writerow(COLUMNS)
            writer.writerows(rows)
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        columns = list(zip(*rows, strict=True)) if rows else [[], [], [], []]
        table = pa.table(
            {
                n: pa.array(c, pa.string() if n in ("kind", "key") else pa.int64())
                for n, c in zip(COLUMNS, columns, strict=True)
            }
        )
        pq.write_table(table, tmp)
    os.replace(tmp, path)
    os.utime(path, (1_700_000_000 + index, 1_700_000_000 + index))
    return path


# ------------------------------------------------------------------------------ functions


class CountPerKey(KeyedProcessFunction):
    """Per event: its key's running count (keyed ``ValueState``)."""

    def open(self, runtime_context: Any) -> None:
        self.count = runtime_context.get_state(COUNT)

    def process_element(self, value: Any, ctx: Any) -> Any:
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        yield Row(kind="p", key=value.key, ts=value.ts, v=n * 1_000 + value.v)


class CountOrFail(CountPerKey):
    """:class:`CountPerKey`, raising for every seventh value after updating the count (the
    failed-records side output must roll the update back)."""

    def process_element(self, value: Any, ctx: Any) -> Any:
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        if value.v % 7 == 3:
            raise ValueError(f"value {value.v} refused")
        yield Row(kind="p", key=value.key, ts=value.ts, v=n * 1_000 + value.v)


class RuleTagged(KeyedBroadcastProcessFunction):
    """Per event: its key's count and the sum of the broadcast rules it meets."""

    def open(self, runtime_context: Any) -> None:
        self.count = runtime_context.get_state(COUNT)

    def process_element(self, value: Any, ctx: Any) -> Any:
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        rules = sum(v for _, v in ctx.get_broadcast_state(RULES).items())
        yield Row(kind="b", key=value.key, ts=value.ts, v=n * 1_000_000 + rules)

    def process_broadcast_element(self, value: Any, ctx: Any) -> None:
        ctx.get_broadcast_state(RULES).put(value.key, value.v)


class Enrich(AsyncFunction):
    """A fake lookup service: answers each event after yielding to the event loop."""

    async def async_invoke(self, value: Any) -> list[Any]:
        await asyncio.sleep(0)
        return [Row(kind="a", key=value.key, ts=value.ts, v=value.v * value.v % 97)]


def _window_row(a: Any, b: Any) -> Any:
    return Row(kind="w", key=a.key, ts=a.ts // WINDOW * WINDOW, v=a.v + b.v)


def _windowed(stream: Any) -> Any:
    """Per key, the sum of ``v`` in tumbling event-time windows, as ``w`` rows stamped with
    the window's start."""
    return (
        stream.key_by(lambda r: r.key)
        .window(TumblingEventTimeWindows.of(Time.milliseconds(WINDOW)))
        .reduce(_window_row, output_type=EVENT)
        .map(lambda r: Row(kind="w", key=r.key, ts=r.ts // WINDOW * WINDOW, v=r.v), EVENT)
    )


def _events(stream: Any) -> Any:
    return stream.filter(lambda r: r.kind == "event")


# ------------------------------------------------------------------------------ jobs


def union_job(stream: Any) -> Any:
    """A keyed ``process``, a keyed window after it, and the ``union`` of both into one
    sink: a non-keyed stage after an exchange."""
    counted = _events(stream).key_by(lambda r: r.key).process(CountPerKey(), output_type=EVENT)
    return counted.union(_windowed(counted))


def keyed_job(stream: Any) -> Any:
    """A keyed ``process``, then a keyed window over its output: two keyed stages, each
    subtask's state native on RocksDB."""
    counted = _events(stream).key_by(lambda r: r.key).process(CountPerKey(), output_type=EVENT)
    return _windowed(counted)


def broadcast_job(stream: Any) -> Any:
    """Events keyed by key, connected to the broadcast rules of the same stream."""
    rules = stream.filter(lambda r: r.kind == "rule").broadcast(RULES)
    events = _events(stream).key_by(lambda r: r.key)
    return events.connect(rules).process(RuleTagged(), EVENT)


def async_job(stream: Any) -> Any:
    """Async enrichment (ordered), then a keyed window over the enriched events."""
    enriched = AsyncDataStream.ordered_wait(
        _events(stream), Enrich(), Time.seconds(30), output_type=EVENT
    )
    return enriched.union(_windowed(enriched))


def failed_job(stream: Any) -> Any:
    """A keyed ``process`` whose failed records go to a side output, unioned with it."""
    counted = (
        _events(stream)
        .key_by(lambda r: r.key)
        .process(CountOrFail(), output_type=EVENT)
        .with_failed_records(FAILED)
    )
    failed = counted.get_side_output(FAILED).map(
        lambda f: Row(kind="f", key=f.key, ts=f.value.ts, v=f.value.v), EVENT
    )
    return counted.union(failed)


@dataclass(frozen=True)
class Job:
    """A job of the suite: how it builds on a stream, and its input's file format."""

    name: str
    build: Callable[[Any], Any]
    fmt: str = "csv"


JOBS = {
    j.name: j
    for j in (
        Job("union", union_job),
        Job("keyed", keyed_job),
        Job("broadcast", broadcast_job),
        Job("async", async_job),
        Job("failed", failed_job, fmt="parquet"),
    )
}


# ------------------------------------------------------------------------------ runs


def backend(name: str) -> Any:
    """The state backend named ``hashmap`` or ``rocksdb`` (incremental checkpoints)."""
    if name == "hashmap":
        return HashMapStateBackend()
    if name == "rocksdb":
        return EmbeddedRocksDBStateBackend(enable_incremental_checkpointing=True)
    raise ValueError(f"backend must be 'hashmap' or 'rocksdb', got {name!r}")


def strategy() -> WatermarkStrategy:
    return WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(OUT_OF_ORDER))


def run_stream(
    spark: Any, job: Job, state_backend: str, inp: str, ckpt: str, out: str, parallelism: int
) -> None:
    """Run ``job`` on Spark over the files in ``inp`` until they are all processed."""
    from sparktide.spark.streaming import ParquetBatchSink

    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(parallelism)
    env.set_state_backend(backend(state_backend))
    reader = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1)
    frame = reader.option("header", True).csv(inp) if job.fmt == "csv" else reader.parquet(inp)
    stream = env.from_stream(frame, strategy(), timestamp_column="ts")
    job.build(stream).sink_to(ParquetBatchSink(out))
    env.execute(checkpoint_location=ckpt, trigger="available_now")


def reference(job: Job, files: Sequence[Sequence[Record]]) -> list[Record]:
    """The bounded run of ``job`` over ``files`` on the local runtime (one round per file),
    minus the windows only the end of input fires."""
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    env.get_config().set_watermark_every(PER_FILE)
    env.set_parallelism(2)
    rows = [Row(kind=k, key=key, ts=ts, v=v) for f in files for k, key, ts, v in f]
    assigner = strategy().with_timestamp_assigner(lambda r, _: r.ts)
    stream = env.from_collection(rows, type_info=EVENT).assign_timestamps_and_watermarks(assigner)
    out: list[Record] = [tuple(r) for r in job.build(stream).execute_and_collect()]
    final = max(r[2] for f in files for r in f) - OUT_OF_ORDER - 1
    return [r for r in out if r[0] != "w" or r[2] + WINDOW - 1 <= final]


def read_output(out: Path) -> list[Record]:
    """The rows the Parquet sink wrote under ``out`` (every ``batch=<id>`` directory)."""
    import pyarrow.parquet as pq

    rows: list[Record] = []
    if not out.is_dir():
        return rows
    for batch in sorted(out.glob("batch=*")):
        for part in sorted(batch.glob("*.parquet")):
            table = pq.read_table(part, columns=list(COLUMNS))
            rows.extend(zip(*(table.column(c).to_pylist() for c in COLUMNS), strict=True))
    return rows
