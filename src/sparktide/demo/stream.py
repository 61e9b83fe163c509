"""The flights demo as a stream (``sparktide demo --stream``): the replay written as Parquet
files, one per micro-batch, read back by a Spark Structured Streaming file source and run
through the demo's flight-only jobs, then checked against the bounded run.

Why the outputs can be equal. The bounded runner reads its splits in rounds of
``watermark_every`` items per split, and a streaming run makes one round of each micro-batch
(see ``docs/architecture.md``). So file ``k`` holds items ``[k * N, (k + 1) * N)`` of every split
of the replay (``N = batch_records``), the file source reads one file per micro-batch
(``maxFilesPerTrigger=1``, files ordered by modification time), ``split_by`` puts each airport
into the split of the same index as in the bounded replay (EWR, JFK, LGA) and ``order_by`` keeps
each split's items in replay order. Both runs read the replay padded with ticks to a multiple
of ``N`` items per split (:meth:`FlightReplay.padded`): a bounded split reading fewer than ``N``
items in its last round ends with the final watermark and no periodic one, whereas every
micro-batch emits its periodic watermark. Every micro-batch is then exactly one round of the
bounded run with ``watermark_every=N``, and the streamed output equals the bounded output minus what
only the end of the input fires: a bounded run ends with the watermark ``MAX``, which fires
every window and timer still pending; a stream never ends.

Which jobs. Jobs a (hourly windows, late side output, timeline trace) and b (plane sessions)
read the departures; job c (not-departed alerts) reads the schedule, a second replay with its
own event time (the scheduled departure), so it runs as a second streaming query on its own
files. Job d, the weather join, reads flights and weather and is not part of the streaming
demo yet.

>>> columns = [field.name for field in STREAM_SCHEMA]
>>> columns[:4]
['split', 'pos', 'ts', 'tick']
>>> from sparktide.common import Row
>>> item_of_row(Row(**dict(zip(columns, _row_of(Tick("JFK", 60_000), 1, 0, 60_000)))))
Tick(origin='JFK', at_ms=60000)
"""

from __future__ import annotations

import math
import os
import pickle
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from sparktide.common.typeinfo import Types
from sparktide.common.watermark_strategy import WatermarkStrategy
from sparktide.datastream import StreamExecutionEnvironment
from sparktide.demo.flights import (
    NYC_TIMEZONE,
    Flight,
    FlightReplay,
    Tick,
    departure_strategy,
    is_flight,
    schedule_strategy,
)
from sparktide.demo.jobs import (
    DemoResults,
    DemoSettings,
    alert_job,
    collect_tables,
    departure_jobs,
    run_tagged,
    tag_results,
)
from sparktide.demo.report import write_tables
from sparktide.spark.stream_sinks import ForeachBatchSink

__all__ = [
    "STREAM_SCHEMA",
    "StreamComparison",
    "StreamDemo",
    "StreamFiles",
    "StreamRun",
    "compare_with_bounded",
    "default_batch_records",
    "first_days",
    "format_stream_report",
    "item_of_row",
    "run_bounded",
    "run_stream",
    "split_values",
    "stream_demo",
    "stream_departure_jobs",
    "write_stream_files",
]

_MINUTE = 60_000
MAX_WATERMARK = 2**63 - 1
_STREAM_FIELDS: list[tuple[str, pa.DataType]] = [
    ("split", pa.string()),
    ("pos", pa.int64()),
    ("ts", pa.int64()),
    ("tick", pa.bool_()),
    ("key", pa.string()),
    ("origin", pa.string()),
    ("dest", pa.string()),
    ("carrier", pa.string()),
    ("flight", pa.int64()),
    ("tailnum", pa.string()),
    ("sched_ms", pa.int64()),
    ("dep_ms", pa.int64()),
    ("seq", pa.int64()),
]
#: the columns of the stream files: the split (a name that Spark's hash partitioning sends to
#: the split's index, see :func:`split_values`), the item's position in its split, its event
#: time, whether it is a heartbeat, the flight's fields
STREAM_SCHEMA = pa.schema(_STREAM_FIELDS)
_SPARK_TYPES = {pa.bool_(): "boolean", pa.string(): "string", pa.int64(): "long"}
_SPARK_SCHEMA = ", ".join(f"{f.name} {_SPARK_TYPES[f.type]}" for f in STREAM_SCHEMA)
_MTIME_BASE = 1_700_000_000  # the file source orders files by modification time


def _row_of(item: Flight | Tick, split: str, pos: int, ts: int) -> tuple[Any, ...]:
    if type(item) is Tick:
        return (split, pos, ts, True, None, item.origin, None, None, None, None, None, None, None)
    return (
        split, pos, ts, False, item.key, item.origin, item.dest, item.carrier, item.flight,
        item.tailnum, item.sched_ms, item.dep_ms, item.seq,
    )  # fmt: skip


def item_of_row(row: Any) -> Flight | Tick:
    """A row of a stream file back as the replay's item: a :class:`Tick` or a :class:`Flight`."""
    if row.tick:
        return Tick(row.origin, row.ts)
    return Flight(
        row.key, row.origin, row.dest, row.carrier, row.flight, row.tailnum, row.sched_ms,
        row.dep_ms, row.seq,
    )  # fmt: skip


def first_days(flights: pd.DataFrame, days: int) -> pd.DataFrame:
    """The flights scheduled in the first ``days`` days of the table (local NYC dates, from
    the first flight's date on), in the table's order.

    >>> from sparktide.demo.flights import load_flights
    >>> len(first_days(load_flights(limit=2_000), 1))
    842
    """
    if type(days) is not int or days < 1:
        raise ValueError(f"days must be an int >= 1 (days of flights to replay), got {days!r}")
    if not len(flights):
        return flights
    local = pd.to_datetime(flights["sched_ms"], unit="ms", utc=True).dt.tz_convert(NYC_TIMEZONE)
    dates = local.dt.date
    first = dates.min()
    keep = dates.map(lambda d: (d - first).days < days)
    return flights[keep.to_numpy(dtype=bool)].copy()


def default_batch_records(replay: FlightReplay, days_per_batch: float = 7.0) -> int:
    """Items per split per micro-batch so that a batch covers about ``days_per_batch`` days of
    the replay's schedule (the splits of a paced replay have equal lengths)."""
    if replay.first_ms is None or replay.last_ms is None:
        return 1
    per_split = replay.split_length
    span_days = max((replay.last_ms - replay.first_ms) / (24 * 60 * _MINUTE), 1.0)
    return max(1, math.ceil(per_split * days_per_batch / span_days))


def split_values(spark: Any, splits: Sequence[str]) -> list[str]:
    """For split ``i`` of ``splits`` a value ``"<name>-<k>"`` that Spark's hash partitioning
    into ``len(splits)`` partitions (what ``split_by`` with ``num_splits`` does to a string
    column) sends to partition ``i``, so that the streamed split ``i`` is the replay's split
    ``i``, in the same order (the order in which a keyed operator takes the splits' records in
    a round)."""
    from pyspark.sql import functions as F

    n = len(splits)
    candidates = [(f"{name}-{k}",) for name in splits for k in range(64)]
    probe = spark.createDataFrame(candidates, "value string").select(
        "value", F.expr(f"pmod(hash(value), {n})").alias("p")
    )
    partition = {row["value"]: int(row["p"]) for row in probe.collect()}
    out = []
    for i, name in enumerate(splits):
        found = next((f"{name}-{k}" for k in range(64) if partition[f"{name}-{k}"] == i), None)
        if found is None:  # pragma: no cover - 64 candidates always hit every partition
            raise RuntimeError(f"no split value for split {name!r} (partition {i} of {n})")
        out.append(found)
    return out


@dataclass(frozen=True)
class StreamFiles:
    """The files of one replay: ``directory``, number of ``batches`` (files), the items per
    split in each (``batch_records``), the replay's ``splits`` and the watermark the stream
    has reached after its last batch (``final_watermark``)."""

    directory: Path
    batches: int
    batch_records: int
    splits: list[str]
    items: int
    final_watermark: int


def write_stream_files(
    replay: FlightReplay,
    directory: str | os.PathLike[str],
    batch_records: int,
    event_time: Callable[[Flight | Tick], int],
    out_of_orderness_ms: int,
    values: Sequence[str],
) -> StreamFiles:
    """Write the replay as Parquet files into ``directory`` (emptied first): file ``k`` holds
    items ``[k * batch_records, (k + 1) * batch_records)`` of every split, in split order,
    with ``split`` = ``values[i]`` for split ``i``; the files' modification times follow ``k``.

    ``event_time``: an item's event time (the ``ts`` column); ``out_of_orderness_ms``: the
    bound of the stream's watermark, to compute :attr:`StreamFiles.final_watermark`."""
    if type(batch_records) is not int or batch_records < 1:
        raise ValueError(
            f"batch_records must be an int >= 1 (items per split per micro-batch), got "
            f"{batch_records!r}"
        )
    splits = [s.split_id for s in replay.get_splits()]
    if len(values) != len(splits):
        raise ValueError(
            f"values must hold one split value per split ({len(splits)}: {splits}), got "
            f"{len(values)}"
        )
    target = Path(directory)
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    items = {split.split_id: list(replay.read_split(split)) for split in replay.get_splits()}
    longest = max((len(v) for v in items.values()), default=0)
    batches = math.ceil(longest / batch_records)
    final = MAX_WATERMARK
    for s in splits:
        if items[s]:
            final = min(final, max(event_time(i) for i in items[s]) - out_of_orderness_ms - 1)
    for k in range(batches):
        rows = []
        lo, hi = k * batch_records, (k + 1) * batch_records
        for value, s in zip(values, splits, strict=True):
            for pos, item in enumerate(items[s][lo:hi], start=lo):
                rows.append(_row_of(item, value, pos, event_time(item)))
        columns = zip(*rows, strict=True)
        table = pa.Table.from_arrays(
            [pa.array(c, type=f.type) for c, f in zip(columns, STREAM_SCHEMA, strict=True)],
            schema=STREAM_SCHEMA,
        )
        path = target / f"batch-{k:05d}.parquet"
        hidden = target / f".batch-{k:05d}.parquet.tmp"  # Spark skips names starting with "."
        pq.write_table(table, hidden)
        os.replace(hidden, path)
        os.utime(path, (_MTIME_BASE + k, _MTIME_BASE + k))
    total = sum(len(v) for v in items.values())
    return StreamFiles(target, batches, batch_records, splits, total, final)


def departure_time(item: Flight | Tick) -> int:
    """Event time of the departures stream: actual departure, a tick's scheduled time."""
    return item.at_ms if type(item) is Tick else item.dep_ms  # type: ignore[return-value]


def schedule_time(item: Flight | Tick) -> int:
    """Event time of the schedule stream: scheduled departure, a tick's scheduled time."""
    return item.at_ms if type(item) is Tick else item.sched_ms


@dataclass
class StreamRun:
    """What a streaming query produced: the tagged results ``(table, record)`` in batch
    order, the micro-batches run and the seconds it took."""

    collected: list[tuple[str, Any]]
    batches: int
    seconds: float


def stream_departure_jobs(
    spark: Any,
    files: StreamFiles,
    checkpoint: str | os.PathLike[str],
    settings: DemoSettings,
    jobs: str,
    parallelism: int | None = None,
    on_batch: Callable[[], None] | None = None,
) -> StreamRun:
    """Run jobs a and b (``jobs="departures"``, event time = actual departure) or job c
    (``jobs="schedule"``, event time = scheduled departure) on ``files`` as a Structured
    Streaming query, one micro-batch per file, with ``trigger="available_now"``.
    ``on_batch`` is called after each micro-batch's output has been collected."""
    if jobs == "departures":
        strategy = WatermarkStrategy.for_bounded_out_of_orderness(
            settings.out_of_orderness_minutes * _MINUTE
        )
    elif jobs == "schedule":
        strategy = WatermarkStrategy.for_monotonous_timestamps()
    else:
        raise ValueError(f"jobs must be 'departures' or 'schedule', got {jobs!r}")
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    if parallelism is not None:
        env.set_parallelism(parallelism)
    frame = (
        spark.readStream.schema(_SPARK_SCHEMA)
        .option("maxFilesPerTrigger", 1)
        .parquet(str(files.directory))
    )
    source = env.from_stream(
        frame, strategy, timestamp_column="ts", split_by="split", order_by="pos",
        num_splits=len(files.splits), source_name=jobs,
    )  # fmt: skip
    flights = source.map(item_of_row).filter(is_flight)
    if jobs == "departures":
        streams = departure_jobs(flights, settings)
    else:
        streams = {"alerts": alert_job(flights, settings)}
    collect = _Collector(on_batch)
    # each micro-batch reaches the driver as a DataFrame of pickled (table, record) pairs
    tag_results(streams, Types.PICKLED_BYTE_ARRAY()).sink_to(ForeachBatchSink(collect))
    started = time.perf_counter()
    env.execute(f"sparktide flights demo ({jobs} stream)", checkpoint_location=str(checkpoint),
                trigger="available_now")  # fmt: skip
    seconds = time.perf_counter() - started
    by_batch = collect.by_batch
    collected = [pair for b in sorted(by_batch) for pair in by_batch[b]]
    return StreamRun(collected, len(by_batch), seconds)


class _Collector:
    """The sink's function (run on the driver): keeps each micro-batch's tagged results by
    batch id (a replayed batch overwrites its entry) and calls ``on_batch``; pickled without
    ``on_batch``, which may hold a terminal stream."""

    def __init__(self, on_batch: Callable[[], None] | None) -> None:
        self.by_batch: dict[int, list[tuple[str, Any]]] = {}
        self.on_batch = on_batch

    def __call__(self, df: Any, batch_id: int) -> None:
        self.by_batch[batch_id] = [pickle.loads(row[0]) for row in df.collect()]
        if self.on_batch is not None:
            self.on_batch()

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "on_batch": None}


@dataclass
class StreamComparison:
    """The streamed tables against the bounded run's: per table the rows streamed, the rows
    the bounded run fired before its end of input, and whether they are identical."""

    counts: dict[str, tuple[int, int]] = field(default_factory=dict)
    identical: dict[str, bool] = field(default_factory=dict)

    @property
    def equal(self) -> bool:
        return all(self.identical.values())


def _canonical(table: pd.DataFrame) -> pd.DataFrame:
    out = table.reset_index(drop=True).astype(object)
    out[out.isna()] = None
    return out.sort_values(list(out.columns), key=lambda c: c.map(repr)).reset_index(drop=True)


def compare_with_bounded(
    streamed: dict[str, pd.DataFrame],
    bounded: dict[str, pd.DataFrame],
    departures_watermark: int | None,
    schedule_watermark: int | None = None,
) -> StreamComparison:
    """Compare the streamed tables with the bounded run's minus its end-of-input firings.

    ``windows`` and ``alerts`` record the watermark they fired at: those fired by the final
    ``MAX`` are left out; a session fired once the watermark passed its last millisecond, so
    those ending after ``departures_watermark`` (the stream's last watermark) are left out;
    ``late`` and ``trace`` are emitted on arrival and compared whole. ``None``: the stream did
    not run that job (its tables are not compared).
    """
    result = StreamComparison()
    expected: dict[str, pd.DataFrame] = {}
    if departures_watermark is not None:
        windows = bounded["windows"]
        sessions = bounded["sessions"]
        expected["windows"] = windows[windows["watermark"] != MAX_WATERMARK]
        expected["late"] = bounded["late"]
        expected["trace"] = bounded["trace"]
        expected["sessions"] = sessions[sessions["end_ms"] - 1 <= departures_watermark]
    if schedule_watermark is not None:
        alerts = bounded["alerts"]
        expected["alerts"] = alerts[alerts["watermark"] != MAX_WATERMARK]
    for name, want in expected.items():
        got = streamed[name]
        result.counts[name] = (len(got), len(want))
        result.identical[name] = len(got) == len(want) and _canonical(got).equals(_canonical(want))
    return result


def run_stream(
    spark: Any,
    flights: pd.DataFrame,
    out: str | os.PathLike[str],
    settings: DemoSettings,
    batch_records: int | None = None,
    alerts: bool = True,
    parallelism: int | None = None,
    log: Callable[[str], None] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[DemoResults, dict[str, Any]]:
    """Write the replays as files under ``out/stream-input``, run the streaming queries
    (checkpoints under ``out/stream-checkpoint``) and return the streamed results (jobs a, b
    and, with ``alerts``, c) and facts about the run: ``batch_records``, ``batches`` per
    query, ``files`` (:class:`StreamFiles` per query) and ``seconds`` per query.

    ``batch_records``: items per split per micro-batch (default: about a week of schedule,
    :func:`default_batch_records`); the bounded run to compare with uses it as
    ``watermark_every``. ``log`` gets a line of text per step, ``progress`` the micro-batches
    done and in all (over the queries) after each micro-batch.
    """
    say = log or (lambda text: None)
    root = Path(out)
    departures = FlightReplay(flights, departed_only=True, pace_minutes=settings.pace_minutes)
    n = batch_records if batch_records is not None else default_batch_records(departures)
    values = split_values(spark, [s.split_id for s in departures.get_splits()])
    bound = settings.out_of_orderness_minutes * _MINUTE
    queries: dict[str, tuple[FlightReplay, Callable[[Any], int], int]] = {
        "departures": (departures.padded(n), departure_time, bound)
    }
    if alerts:
        schedule = FlightReplay(flights, pace_minutes=settings.pace_minutes).padded(n)
        queries["schedule"] = (schedule, schedule_time, 0)
    facts: dict[str, Any] = {"batch_records": n, "batches": {}, "files": {}, "seconds": {}}
    collected: list[tuple[str, Any]] = []
    checkpoint_root = root / "stream-checkpoint"
    if checkpoint_root.exists():
        shutil.rmtree(checkpoint_root)
    for name, (replay, event_time, query_bound) in queries.items():
        files = write_stream_files(
            replay, root / "stream-input" / name, n, event_time, query_bound, values
        )
        say(f"{name}: {files.items:,} items in {files.batches} files of {n:,} items per split")
        facts["files"][name] = files
    total = sum(f.batches for f in facts["files"].values())
    done = [0]

    def batch_done() -> None:
        done[0] += 1
        if progress is not None:
            progress(done[0], total)

    for name, files in facts["files"].items():
        run = stream_departure_jobs(
            spark, files, checkpoint_root / name, settings, name, parallelism, batch_done
        )
        collected += run.collected
        facts["batches"][name] = run.batches
        facts["seconds"][name] = run.seconds
    items = sum(f.items for f in facts["files"].values())
    tables, session_late = collect_tables(collected)
    results = DemoResults(
        tables=tables,
        settings=replace(settings, watermark_every=n),
        flights=len(flights),
        departed=int(flights["dep_ms"].notna().sum()),
        session_late=session_late,
        seconds=sum(facts["seconds"].values()),
        items=items,
    )
    return results, facts


def run_bounded(
    flights: pd.DataFrame, settings: DemoSettings, batch_records: int, alerts: bool = True
) -> DemoResults:
    """The bounded run the stream is compared with: the same jobs on the same replays (padded
    to whole rounds, see :meth:`FlightReplay.padded`) on the local runtime with
    ``watermark_every=batch_records``, in one execution.

    >>> from sparktide.demo.flights import load_flights
    >>> results = run_bounded(load_flights(limit=300), DemoSettings(day="2013-01-01"), 50)
    >>> len(results.tables["windows"]) > 0, len(results.tables["weather"])
    (True, 0)
    """
    settings = replace(settings, watermark_every=batch_records)
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    env.get_config().set_watermark_every(batch_records)
    bound = settings.out_of_orderness_minutes * _MINUTE
    departures = FlightReplay(
        flights, departed_only=True, pace_minutes=settings.pace_minutes
    ).padded(batch_records)
    streams = departure_jobs(
        env.from_source(departures, departure_strategy(bound), "departures").filter(is_flight),
        settings,
    )
    items = departures.num_items
    if alerts:
        schedule = FlightReplay(flights, pace_minutes=settings.pace_minutes).padded(batch_records)
        streams["alerts"] = alert_job(
            env.from_source(schedule, schedule_strategy(), "schedule").filter(is_flight),
            settings,
        )
        items += schedule.num_items
    return run_tagged(
        tag_results(streams), "sparktide flights demo (bounded)", flights, settings, items
    )


@dataclass
class StreamDemo:
    """``sparktide demo --stream``: the streamed and the bounded results, their comparison,
    the facts of the streaming run (see :func:`run_stream`) and the tables written."""

    streamed: DemoResults
    bounded: DemoResults
    comparison: StreamComparison
    facts: dict[str, Any]
    written: dict[str, Path]
    seconds: float


STREAM_TABLES = ("windows", "late", "sessions", "alerts")


def stream_demo(
    spark: Any,
    flights: pd.DataFrame,
    settings: DemoSettings,
    out: str | os.PathLike[str],
    batch_records: int | None = None,
    parallelism: int | None = None,
    log: Callable[[str], None] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> StreamDemo:
    """Stream the flights through jobs a, b and c (:func:`run_stream`), write the streamed
    tables into ``out/stream``, run the same jobs bounded with ``watermark_every`` = the
    micro-batch size (:func:`run_bounded`) and compare (:func:`compare_with_bounded`)."""
    say = log or (lambda text: None)
    started = time.perf_counter()
    streamed, facts = run_stream(
        spark, flights, out, settings, batch_records, parallelism=parallelism, log=say,
        progress=progress,
    )  # fmt: skip
    written = write_tables(streamed, Path(out) / "stream", STREAM_TABLES)
    n = facts["batch_records"]
    say(f"bounded run of the same jobs on the local runtime, watermark_every={n:,} ...")
    bounded = run_bounded(flights, settings, n)
    files = facts["files"]
    comparison = compare_with_bounded(
        streamed.tables,
        bounded.tables,
        files["departures"].final_watermark,
        files["schedule"].final_watermark,
    )
    seconds = time.perf_counter() - started
    return StreamDemo(streamed, bounded, comparison, facts, written, seconds)


_LABELS = {
    "windows": "hourly window firings",
    "late": "late flights",
    "trace": "timeline rows",
    "sessions": "plane sessions",
    "alerts": "alerts",
}


def format_stream_report(demo: StreamDemo) -> str:
    """The text ``sparktide demo --stream`` prints: the micro-batches, the comparison and what
    only the bounded run's end of input fires.

    >>> comparison = StreamComparison({"windows": (3, 3)}, {"windows": True})
    >>> demo = StreamDemo(None, None, comparison, {}, {}, 1.0)
    >>> print(format_stream_report(demo).splitlines()[-2])
    stream output = bounded output: 3 hourly window firings (identical)
    """
    lines = []
    facts = demo.facts
    if facts:
        n = facts["batch_records"]
        lines.append(
            f"{demo.streamed.flights:,} flights ({demo.streamed.departed:,} departed) streamed "
            f"through Spark Structured Streaming in micro-batches of {n:,} items per split:"
        )
        jobs = {"departures": "jobs a and b", "schedule": "job c"}
        for name, count in facts["batches"].items():
            f = facts["files"][name]
            lines.append(
                f"   {name} ({jobs[name]}): {f.items:,} items in {f.batches} files, "
                f"{count} micro-batches in {facts['seconds'][name]:.1f} s"
            )
        lines.append(
            "   job d (the weather join of flights and weather) is not part of the streaming "
            "demo yet"
        )
        lines.append(
            f"bounded run (local runtime, watermark_every={n:,}, the same replays): "
            f"{demo.bounded.seconds:.1f} s"
        )
    c = demo.comparison
    parts = ", ".join(f"{c.counts[name][0]:,} {_LABELS.get(name, name)}" for name in c.counts)
    if c.equal:
        lines.append(f"stream output = bounded output: {parts} (identical)")
    else:
        differ = ", ".join(
            f"{name}: {got:,} streamed, {want:,} expected"
            for name, (got, want) in c.counts.items()
            if not c.identical[name]
        )
        lines.append(f"stream output != bounded output: {differ}")
    if demo.bounded is not None:
        t = demo.bounded.tables
        at_end = [
            f"{int((t['windows']['watermark'] == MAX_WATERMARK).sum()):,} window firings",
            f"{len(t['sessions']) - c.counts.get('sessions', (0, 0))[1]:,} sessions",
            f"{int((t['alerts']['watermark'] == MAX_WATERMARK).sum()):,} alerts",
        ]
        lines.append(
            "   fired only by the bounded run's end of input (a stream never ends), left out: "
            + ", ".join(at_end)
        )
    lines.append(f"in {demo.seconds:.1f} s")
    return "\n".join(lines)
