"""Batch time and end-to-end latency of a streaming run, and Spark's own floor beside them.

A latency run writes the input at a fixed cadence while the query runs (:class:`LiveFeed`): tick
``i`` (one Parquet file per kind) is put in place at ``start + i * interval``, written as a
hidden file and renamed, so a file source sees it whole. A tick *arrives* when its first file
is in place. The query reads one file per kind and micro-batch (``maxFilesPerTrigger=1``) and
starts a micro-batch as soon as data is there (the ``continuous`` trigger, Spark's default).

**End-to-end latency** of a result row: from the arrival of the newest input its micro-batch
read (the tick holding that batch's last input row, the files being read whole and in order;
for an event-time result, the input that moved the watermark far enough to emit it) to the
commit of the micro-batch that wrote the row to the sink (sparktide: when its commit file is
written, the moment its progress listeners are called; Spark: the end of the batch's
``triggerExecution``, after its commit log). Every result row of a batch has that batch's
latency; the percentiles are over result rows. **Batch time**: per micro-batch that read
input, its ``durationMs.triggerExecution`` in the Structured Streaming query's progress, for
both engines (:func:`trigger_ms`): the whole micro-batch, Spark's planning and its offset and
commit logs as well as the batch's work (sparktide's own ``duration_ms`` times only its work).

**Spark's floor** (:func:`spark_floor`): the same cadence and files (one kind) through a
trivial stateful Structured Streaming query, ``groupBy(key).count()`` in update mode (a state
store per shuffle partition), its rows counted in ``foreachBatch``.

>>> Percentiles.of([30.0, 10.0, 20.0, 40.0])
Percentiles(p50=25.0, p95=38.5, p99=39.7)
>>> arrivals = [Arrival(rows=10, at=100.0), Arrival(rows=10, at=101.0)]
>>> batches = [CommittedBatch(records=10, rows=2, duration_ms=300.0, committed_at=100.5),
...            CommittedBatch(records=10, rows=1, duration_ms=400.0, committed_at=101.75)]
>>> latencies_ms(arrivals, batches)
[500.0, 500.0, 750.0]
>>> figures = LatencyFigures.of("q", arrivals, batches)
>>> print(latency_table([figures]))
| run | batches | batch p50 ms | batch p95 ms | batch p99 ms | latency p50 ms | latency p95 ms | latency p99 ms |
|----:|--------:|-------------:|-------------:|-------------:|---------------:|---------------:|---------------:|
|   q |       2 |          350 |          395 |          399 |            500 |            725 |            745 |
"""  # noqa: E501

from __future__ import annotations

import datetime as _dt
import os
import threading
import time
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from sparktide.spark.session_conf import session_settings

_POLL_S = 0.05  # how often a latency run looks whether its query read everything

__all__ = [
    "Arrival",
    "CommittedBatch",
    "LatencyFigures",
    "LiveFeed",
    "Percentiles",
    "SparktideLatencyProbe",
    "every_progress",
    "latencies_ms",
    "latency_table",
    "markdown_table",
    "percentile",
    "spark_floor",
    "timed_batches",
]


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (``0 <= q <= 1``) of ``values``, interpolated linearly between the
    closest ranks (numpy's default).

    >>> percentile([1.0, 2.0, 3.0, 4.0], 0.5), percentile([5.0], 0.99)
    (2.5, 5.0)
    """
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    rank = q * (len(ordered) - 1)
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass(frozen=True)
class Percentiles:
    """p50, p95 and p99 of a set of values."""

    p50: float
    p95: float
    p99: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Percentiles | None:
        """The percentiles of ``values``; ``None`` when there are none."""
        if not values:
            return None
        return cls(*(round(percentile(values, q), 3) for q in (0.5, 0.95, 0.99)))


@dataclass(frozen=True)
class Arrival:
    """One tick of a :class:`LiveFeed`: its rows (all kinds) and when it arrived (epoch s)."""

    rows: int
    at: float


@dataclass(frozen=True)
class CommittedBatch:
    """One committed micro-batch: its input rows, the result rows it wrote, its duration and
    when it was committed (epoch s)."""

    records: int
    rows: int
    duration_ms: float
    committed_at: float
    spark_batch: int | None = None  # the Structured Streaming micro-batch (sparktide's runs)


def latencies_ms(
    arrivals: Sequence[Arrival], batches: Sequence[CommittedBatch], first_tick: int = 0
) -> list[float]:
    """The end-to-end latency of every result row (see the module), batches in commit order;
    rows of batches whose newest input is a tick before ``first_tick`` (a warm-up) left out."""
    ends = []  # the row count up to and including each tick
    total = 0
    for arrival in arrivals:
        total += arrival.rows
        ends.append(total)
    out: list[float] = []
    read = 0
    tick = 0
    for batch in batches:
        read += batch.records
        while tick < len(ends) - 1 and ends[tick] < read:
            tick += 1
        if read == 0 or batch.rows == 0 or tick < first_tick:
            continue
        out.extend([(batch.committed_at - arrivals[tick].at) * 1000] * batch.rows)
    return out


@dataclass(frozen=True)
class LatencyFigures:
    """One line of :func:`latency_table`: a run's batch times and latencies."""

    name: str
    batches: int
    batch_ms: Percentiles | None
    latency_ms: Percentiles | None

    @classmethod
    def of(
        cls,
        name: str,
        arrivals: Sequence[Arrival],
        batches: Sequence[CommittedBatch],
        first_tick: int = 0,
    ) -> LatencyFigures:
        with_input = [b for b in batches if b.records]
        skipped = _warmup_batches(arrivals, with_input, first_tick)
        timed = with_input[skipped:]
        return cls(
            name,
            len(timed),
            Percentiles.of([b.duration_ms for b in timed]),
            Percentiles.of(latencies_ms(arrivals, batches, first_tick)),
        )


def _warmup_batches(
    arrivals: Sequence[Arrival], batches: Sequence[CommittedBatch], first_tick: int
) -> int:
    """How many of ``batches`` read only ticks before ``first_tick``."""
    warmup_rows = sum(a.rows for a in arrivals[:first_tick])
    read = count = 0
    for batch in batches:
        read += batch.records
        if read > warmup_rows:
            break
        count += 1
    return count


def markdown_table(head: Sequence[str], lines: Sequence[Sequence[str]]) -> str:
    """A Markdown table of ``lines`` under ``head``, every column right-aligned.

    >>> print(markdown_table(["query", "events/s"], [["q1", "1,234"]]))
    | query | events/s |
    |------:|---------:|
    |    q1 |    1,234 |
    """
    widths = [max(len(x) for x in col) for col in zip(head, *lines, strict=True)]
    out = []
    for i, line in enumerate([head, *lines]):
        out.append("| " + " | ".join(c.rjust(w) for c, w in zip(line, widths, strict=True)) + " |")
        if i == 0:
            out.append("|" + "|".join("-" * (w + 1) + ":" for w in widths) + "|")
    return "\n".join(out)


LATENCY_COLUMNS = (
    "batch p50 ms",
    "batch p95 ms",
    "batch p99 ms",
    "latency p50 ms",
    "latency p95 ms",
    "latency p99 ms",
)


def percentile_cells(figures: Percentiles | None) -> list[str]:
    """p50, p95, p99 as table cells (``-`` when there are none)."""
    if figures is None:
        return ["-"] * 3
    return [f"{v:,.0f}" for v in (figures.p50, figures.p95, figures.p99)]


def latency_table(rows: Sequence[LatencyFigures]) -> str:
    """The runs' batch times and latencies as a Markdown table."""
    lines = [
        [r.name, str(r.batches), *percentile_cells(r.batch_ms), *percentile_cells(r.latency_ms)]
        for r in rows
    ]
    return markdown_table(["run", "batches", *LATENCY_COLUMNS], lines)


class LiveFeed:
    """Writes ``ticks`` (per kind a table: one Parquet file each) into ``folder/<kind>/`` at
    a cadence of ``interval_ms`` on a thread of its own, and records when each arrived.

    The first ``warm_up`` ticks do not follow the cadence: each is written once the run has
    read every row written before it (its follower calls :meth:`note_read`), and the cadence
    starts with tick ``warm_up``, once the warm-up is read. A warm-up slower than the cadence
    then leaves no backlog that would delay the ticks measured after it.

    >>> import pyarrow as pa, tempfile, pathlib
    >>> ticks = [{"in": pa.table({"v": [i]})} for i in range(3)]
    >>> feed = LiveFeed(ticks, pathlib.Path(tempfile.mkdtemp()), 10, warm_up=2)
    >>> feed.start()
    >>> while not feed.arrivals:
    ...     time.sleep(0.01)
    >>> time.sleep(0.2); len(feed.arrivals)  # tick 1 waits until tick 0 is read
    1
    >>> for read in range(1, 3):
    ...     feed.note_read(read)
    ...     while len(feed.arrivals) <= read:
    ...         time.sleep(0.01)
    >>> feed.join()
    >>> [a.rows for a in feed.arrivals]
    [1, 1, 1]
    >>> stuck = LiveFeed(ticks, pathlib.Path(tempfile.mkdtemp()), 10, warm_up=1)
    >>> stuck.start(); stuck.join()  # a run that reads nothing does not hold up the join
    >>> len(stuck.arrivals)
    1
    """

    def __init__(
        self,
        ticks: Sequence[Mapping[str, pa.Table]],
        folder: Path,
        interval_ms: int,
        warm_up: int = 0,
    ) -> None:
        if not ticks:
            raise ValueError("a live feed needs at least one tick")
        if type(interval_ms) is not int or interval_ms < 1:
            raise ValueError(f"interval_ms must be an int >= 1, got {interval_ms!r}")
        if type(warm_up) is not int or not 0 <= warm_up < len(ticks):
            raise ValueError(
                f"warm_up must be an int from 0 to {len(ticks) - 1} (ticks before the cadence), "
                f"got {warm_up!r}"
            )
        self.ticks = list(ticks)
        self.interval_ms = interval_ms
        self.warm_up = warm_up
        self.folders = {kind: folder / kind for kind in self.ticks[0]}
        for path in self.folders.values():
            path.mkdir(parents=True, exist_ok=True)
        self.arrivals: list[Arrival] = []
        self.total_rows = sum(t.num_rows for tick in self.ticks for t in tick.values())
        self._read = 0  # rows the run read, as its follower reports them
        self._closed = False
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._write, name="live-feed", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def note_read(self, rows: int) -> None:
        """The run has read ``rows`` rows of the feed so far."""
        with self._changed:
            self._read = rows
            self._changed.notify_all()

    def join(self) -> None:
        """Wait for the writing thread; a tick still waiting for the run is not written."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()
        self._thread.join()

    def _read_at_least(self, rows: int) -> bool:
        """Wait until the run read ``rows`` rows; ``False`` if the feed was closed first."""
        with self._changed:
            self._changed.wait_for(lambda: self._read >= rows or self._closed)
            return self._read >= rows

    def _write(self) -> None:
        start = time.monotonic()
        written = 0  # rows
        for i, tick in enumerate(self.ticks):
            if 0 < i <= self.warm_up:
                if not self._read_at_least(written):
                    return
                start = time.monotonic() - i * self.interval_ms / 1000
            time.sleep(max(0.0, start + i * self.interval_ms / 1000 - time.monotonic()))
            first: float | None = None
            for kind, table in tick.items():
                path = self.folders[kind] / f"part-{i:05d}.parquet"
                hidden = path.with_name(f".{path.name}.tmp")
                pq.write_table(table, str(hidden))
                os.replace(hidden, path)
                first = time.time() if first is None else first
            rows = sum(t.num_rows for t in tick.values())
            written += rows
            self.arrivals.append(Arrival(rows, first or 0.0))


class SparktideLatencyProbe:
    """Follows a sparktide streaming run: result rows per batch (call :meth:`count_rows` from
    the sink's ``foreach_batch`` function) and each batch's commit (:meth:`on_commit`, a
    progress listener of the client, added by :meth:`follow`)."""

    def __init__(self) -> None:
        self.rows: dict[int, int] = {}
        self.batches: list[CommittedBatch] = []
        self.expected = 0
        self._read = 0
        self.done = threading.Event()

    def count_rows(self, df: Any, batch_id: int) -> None:
        self.rows[batch_id] = int(df.count())

    def on_commit(self, metrics: Mapping[str, Any]) -> None:
        committed = time.time()
        records = int(metrics["records"])
        rows = self.rows.get(int(metrics["batch_id"]), 0)
        duration, spark_batch = float(metrics["duration_ms"]), metrics["spark_batch"]
        self.batches.append(CommittedBatch(records, rows, duration, committed, spark_batch))
        self._read += records
        if self._read >= self.expected:
            self.done.set()

    def follow(self, client: Any, feed: LiveFeed, timeout_s: float) -> list[CommittedBatch]:
        """Start ``feed``, wait until the run read all it writes and Spark reported its last
        micro-batch, stop the run; the committed batches, timed by Spark (:func:`trigger_ms`)."""
        self.expected = feed.total_rows
        client.add_listener(self.on_commit)
        client.add_listener(lambda _: feed.note_read(self._read))  # paces the feed's warm-up
        feed.start()
        deadline = time.monotonic() + timeout_s
        while not self.done.wait(_POLL_S):
            if not client.is_active or time.monotonic() > deadline:
                break  # failed, or too slow
        last = self.batches[-1].spark_batch if self.batches else None
        while (  # Spark reports a micro-batch after its commit log, once the batch returned
            self.done.is_set()
            and last not in trigger_ms(client.spark_query)
            and client.is_active
            and time.monotonic() < deadline
        ):
            time.sleep(_POLL_S)
        client.stop()
        feed.join()
        if not self.done.is_set():
            client.await_termination(_POLL_S)  # raises what failed the run, if something did
            raise TimeoutError(
                f"the streaming run read {self._read:,} of {feed.total_rows:,} rows in "
                f"{timeout_s:.0f} s"
            )
        return with_trigger_ms(self.batches, trigger_ms(client.spark_query))


def _epoch_seconds(timestamp: str) -> float:
    """A Structured Streaming progress's ``timestamp`` (ISO-8601, UTC) in epoch seconds."""
    return _dt.datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


_RECENT_PROGRESS = "spark.sql.streaming.numRecentProgressUpdates"


def every_progress(spark: Any) -> AbstractContextManager[None]:
    """While inside, a query that starts on ``spark`` keeps every micro-batch's progress (Spark
    keeps the last 100; the setting is read as a query starts)."""
    return session_settings(spark.conf, {_RECENT_PROGRESS: "1000000"})


def trigger_ms(query: Any) -> dict[int, float]:
    """Per micro-batch id of the Structured Streaming ``query`` (its ``recentProgress``), its
    ``durationMs.triggerExecution``: the whole micro-batch."""
    return {
        int(p["batchId"]): float(p["durationMs"].get("triggerExecution", 0))
        for p in query.recentProgress
    }


def with_trigger_ms(
    batches: Sequence[CommittedBatch], trigger: Mapping[int, float]
) -> list[CommittedBatch]:
    """``batches`` with the durations of their Structured Streaming micro-batches (``trigger``,
    :func:`trigger_ms`). A batch that read input must have one (its progress no longer kept is
    an error: the batch times would mix two measures); one without input keeps its own.

    >>> with_trigger_ms([CommittedBatch(5, 1, 10.0, 1.0, spark_batch=3)], {3: 80.0})
    [CommittedBatch(records=5, rows=1, duration_ms=80.0, committed_at=1.0, spark_batch=3)]
    """
    missing = [b.spark_batch for b in batches if b.records and b.spark_batch not in trigger]
    if missing:
        raise ValueError(
            f"no Structured Streaming progress for micro-batches {missing[:5]}: start the query "
            f"inside every_progress(spark)"
        )
    return [
        replace(b, duration_ms=trigger[b.spark_batch])
        if b.spark_batch is not None and b.spark_batch in trigger
        else b
        for b in batches
    ]


def timed_batches(client: Any) -> list[CommittedBatch]:
    """The committed batches of a finished sparktide run (its ``client``), each timed by its
    Structured Streaming micro-batch (:func:`with_trigger_ms`: start the run inside
    :func:`every_progress`)."""
    committed = [
        CommittedBatch(int(m["records"]), 0, float(m["duration_ms"]), 0.0, m["spark_batch"])
        for m in client.recent_progress
    ]
    return with_trigger_ms(committed, trigger_ms(client.spark_query))


def spark_floor(
    spark: Any, feed: LiveFeed, kind: str, key: str, checkpoint: Path, timeout_s: float
) -> list[CommittedBatch]:
    """Spark's floor: ``groupBy(key).count()`` over the files ``feed`` writes into its folder
    of ``kind`` (nothing else may feed it), in update mode into ``foreachBatch``, until it read
    them all; the committed batches (see the module)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    rows: dict[int, int] = {}

    def count(df: Any, batch_id: int) -> None:
        rows[batch_id] = df.count()

    frame = spark.readStream.schema(from_arrow_schema(feed.ticks[0][kind].schema))
    counts = frame.option("maxFilesPerTrigger", 1).parquet(str(feed.folders[kind]))
    writer = counts.groupBy(key).count().writeStream.outputMode("update").foreachBatch(count)
    with every_progress(spark):
        query = writer.option("checkpointLocation", str(checkpoint)).start()
    progress: dict[int, Any] = {}
    deadline = time.monotonic() + timeout_s
    try:
        feed.start()
        read = 0
        while read < feed.total_rows and time.monotonic() < deadline and query.isActive:
            time.sleep(_POLL_S)
            for p in query.recentProgress:
                progress[int(p["batchId"])] = p
            read = sum(int(p["numInputRows"]) for p in progress.values())
            feed.note_read(read)
    finally:
        query.stop()
        feed.join()
    if read < feed.total_rows:
        failure = query.exception()
        raise RuntimeError(
            f"Spark's floor query read {read:,} of {feed.total_rows:,} rows"
            + (f": {failure}" if failure is not None else f" in {timeout_s:.0f} s")
        )
    for p in query.recentProgress:
        progress[int(p["batchId"])] = p
    return [_spark_batch(progress[b], rows.get(b, 0)) for b in sorted(progress)]


def _spark_batch(progress: Mapping[str, Any], rows: int) -> CommittedBatch:
    took = float(progress["durationMs"].get("triggerExecution", 0))
    return CommittedBatch(
        int(progress["numInputRows"]),
        rows,
        took,
        _epoch_seconds(str(progress["timestamp"])) + took / 1000,
    )
