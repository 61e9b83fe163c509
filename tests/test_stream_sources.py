"""Structured Streaming sources and sinks end to end: the ``rate`` source with its Spark
timestamp as event time, file sources (Parquet, CSV), the socket source, Kafka-shaped input
split by partition and ordered by offset; the console sink, ``foreach_batch`` and the warning
for sinks that are not idempotent per batch id; ``execute()`` until stopped and
``await_termination(timeout)``."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import warnings

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import wait_for
from sparktide.common import Row, Time, Types
from sparktide.common.watermark_strategy import WatermarkStrategy
from sparktide.datastream import KeyedProcessFunction, ProcessFunction, StreamExecutionEnvironment
from sparktide.datastream.window import TumblingEventTimeWindows
from sparktide.spark.stream_sinks import (
    ConsoleBatchSink,
    ForeachBatchSink,
    ParquetBatchSink,
    StreamingExactlyOnceWarning,
    idempotence_warnings,
)
from sparktide.spark.stream_source import spark_hash_long, split_keys

SEEN = Types.ROW_NAMED(["value", "ts"], [Types.LONG(), Types.LONG()])
EVENT = Types.ROW_NAMED(["key", "ts", "v"], [Types.STRING(), Types.LONG(), Types.LONG()])
DEADLINE = 180.0  # seconds; only reached when something hangs


class EventTime(ProcessFunction):
    """Emits each record's value with the event time the source assigned it."""

    def process_element(self, value, ctx):
        yield Row(value=value.value, ts=ctx.timestamp())


def _env(parallelism: int = 1) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(parallelism)
    return env


def _collector() -> tuple[dict[int, list[tuple]], object]:
    out: dict[int, list[tuple]] = {}

    def collect(df, batch_id):
        out[batch_id] = [tuple(r) for r in df.collect()]

    return out, collect


def _flat(out: dict[int, list[tuple]]) -> list[tuple]:
    return [row for b in sorted(out) for row in out[b]]


def _monotonous() -> WatermarkStrategy:
    return WatermarkStrategy.for_monotonous_timestamps()


# ------------------------------------------------------------------------------ rate


def test_rate_source_timestamp_is_the_event_time(spark, tmp_path) -> None:
    # rate-micro-batch: deterministic rows; those of batch b have the timestamp
    # startTimestamp + b * advanceMillisPerBatch
    frame = (
        spark.readStream.format("rate-micro-batch")
        .option("rowsPerBatch", 10)
        .option("startTimestamp", 50_123)
        .option("advanceMillisPerBatch", 1_000)
        .load()
    )
    assert frame.columns == ["timestamp", "value"]
    env = _env()
    out, collect = _collector()
    env.from_stream(frame, _monotonous(), timestamp_column="timestamp", order_by="value").process(
        EventTime(), output_type=SEEN
    ).foreach_batch(collect)
    env.execute(checkpoint_location=str(tmp_path / "ckpt"), trigger="available_now")
    assert _flat(out) == [(v, 50_123) for v in range(10)]


def test_rate_source_across_runs(spark, tmp_path) -> None:
    # the rate source keeps its start time in the checkpoint: each available_now run takes
    # the rows of the seconds elapsed since then, continuing where the last run stopped
    frame = (
        spark.readStream.format("rate").option("rowsPerSecond", 10).option("numPartitions", 1)
    ).load()
    out: dict[int, list[tuple]] = {}
    started = time.time() * 1000
    for _ in range(2):
        env = _env()
        env.from_stream(frame, _monotonous(), timestamp_column="timestamp").process(
            EventTime(), output_type=SEEN
        ).foreach_batch(lambda df, b: out.__setitem__(b, [tuple(r) for r in df.collect()]))
        env.execute(checkpoint_location=str(tmp_path / "ckpt"), trigger="available_now")
        time.sleep(1.5)
    rows = _flat(out)
    assert len(rows) >= 10
    assert [v for v, _ in rows] == list(range(len(rows)))  # one split, nothing lost
    stamps = [ts for _, ts in rows]
    assert stamps == sorted(stamps)
    # the Spark timestamps became epoch milliseconds of this run (not shifted by a time zone)
    assert started - 5_000 <= stamps[0] and stamps[-1] <= time.time() * 1000


def _idle_after(query, batch_id: int) -> bool:
    progress = query.lastProgress
    status = query.status
    return (
        progress is not None
        and progress["batchId"] >= batch_id
        and not status["isTriggerActive"]
        and not status["isDataAvailable"]
    )


def test_execute_runs_until_stopped_from_another_thread(spark, tmp_path) -> None:
    for file in range(2):
        _write_file(tmp_path / "in", f"{file}.csv", "csv", _events(5, first=5 * file))
        os.utime(tmp_path / "in" / f"{file}.csv", (1_700_000_000 + file,) * 2)
    reader = spark.readStream.schema("key string, ts long, v long").option("header", True)
    frame = reader.option("maxFilesPerTrigger", 1).csv(str(tmp_path / "in"))
    env = _env()
    out, collect = _collector()
    env.from_stream(frame, _monotonous(), timestamp_column="ts").foreach_batch(collect)
    stopped: list[str] = []

    def stop_when_idle() -> None:
        def ours():
            return [q for q in spark.streams.active if (q.name or "").startswith("sparktide-")]

        wait_for(lambda: any(_idle_after(q, 1) for q in ours()), DEADLINE)
        for query in ours():  # execute() blocks: stop its query from here
            stopped.append(query.name)
            query.stop()

    stopper = threading.Thread(target=stop_when_idle, daemon=True)
    stopper.start()
    result = env.execute(checkpoint_location=str(tmp_path / "ckpt"))  # no trigger: until stopped
    stopper.join(10)
    assert len(stopped) == 1
    assert result.metrics["rounds"] == 2
    assert [r[2] for r in _flat(out)] == list(range(10))


# ------------------------------------------------------------------------------ files


def _events(n: int, first: int = 0) -> list[tuple[str, int, int]]:
    return [(f"k{i % 3}", i * 250, i) for i in range(first, first + n)]


def _window_sums(rows: list[tuple[str, int, int]], watermark: int) -> list[tuple]:
    sums: dict[tuple[str, int], list[int]] = {}
    for key, ts, v in rows:
        window = ts // 1_000
        if (window + 1) * 1_000 - 1 <= watermark:
            acc = sums.setdefault((key, window), [0, 0])
            acc[0] = max(acc[0], ts)
            acc[1] += v
    return sorted((key, ts, v) for (key, _), (ts, v) in sums.items())


def _write_file(directory, name: str, fmt: str, rows) -> None:
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, name)
    if fmt == "parquet":
        table = pa.table(
            {
                "key": [r[0] for r in rows],
                "ts": pa.array([r[1] for r in rows], pa.int64()),
                "v": pa.array([r[2] for r in rows], pa.int64()),
            }
        )
        pq.write_table(table, path + ".tmp")
    else:
        with open(path + ".tmp", "w") as f:
            f.write("key,ts,v\n")
            f.writelines(f"{k},{t},{v}\n" for k, t, v in rows)
    os.replace(path + ".tmp", path)


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_file_sources(spark, tmp_path, fmt) -> None:
    first, second = _events(12), _events(12, first=12)
    _write_file(tmp_path / "in", f"a.{fmt}", fmt, first)
    _write_file(tmp_path / "in", f"b.{fmt}", fmt, second)
    os.utime(tmp_path / "in" / f"a.{fmt}", (1_700_000_000, 1_700_000_000))
    reader = spark.readStream.schema("key string, ts long, v long").option("maxFilesPerTrigger", 1)
    if fmt == "csv":
        frame = reader.option("header", True).csv(str(tmp_path / "in"))
    else:
        frame = reader.parquet(str(tmp_path / "in"))
    env = _env()
    out, collect = _collector()
    sums = (
        env.from_stream(frame, _monotonous(), timestamp_column="ts")
        .key_by(lambda r: r.key)
        .window(TumblingEventTimeWindows.of(Time.seconds(1)))
        .reduce(lambda a, b: Row(key=a.key, ts=max(a.ts, b.ts), v=a.v + b.v), output_type=EVENT)
    )
    sums.foreach_batch(collect)
    sums.sink_to(ParquetBatchSink(str(tmp_path / "out")))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        env.execute(checkpoint_location=str(tmp_path / "ckpt"), trigger="available_now")
    # both sinks are idempotent per batch id: no warning
    assert not [w for w in caught if w.category is StreamingExactlyOnceWarning]
    assert sorted(out) == [0, 1]  # one file per micro-batch
    # the periodic watermark at the end of each batch (max timestamp - 1) fires windows
    expected = _window_sums(first + second, second[-1][1] - 1)
    assert sorted(_flat(out)) == expected
    written = spark.read.parquet(str(tmp_path / "out")).collect()
    assert sorted((r["key"], r["ts"], r["v"]) for r in written) == expected


# ------------------------------------------------------------------------------ socket


class _LineServer:
    """A TCP server on localhost that sends ``lines`` to its first client, then keeps the
    connection open until closed (Spark's socket source reads until the query stops)."""

    def __init__(self, lines: list[str]) -> None:
        self.server = socket.create_server(("localhost", 0))
        self.server.settimeout(DEADLINE)
        self.port = self.server.getsockname()[1]
        self.lines = lines
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            conn, _ = self.server.accept()
        except OSError:
            return
        with conn:
            conn.sendall("".join(line + "\n" for line in self.lines).encode())
            self.done.wait(DEADLINE)

    def close(self) -> None:
        self.done.set()
        self.server.close()
        self.thread.join(5)


def test_socket_source(spark, tmp_path) -> None:
    from pyspark.sql import functions as F

    rows = _events(20)
    server = _LineServer([f"{k},{t},{v}" for k, t, v in rows])
    try:
        lines = (
            spark.readStream.format("socket")
            .option("host", "localhost")
            .option("port", server.port)
            .load()
        )
        parts = F.split(F.col("value"), ",")
        frame = lines.select(
            parts[0].alias("key"),
            parts[1].cast("long").alias("ts"),
            parts[2].cast("long").alias("v"),
        )
        env = _env()
        out, collect = _collector()
        (
            # Spark slices a socket batch into partitions: order_by restores the line order
            env.from_stream(frame, _monotonous(), timestamp_column="ts", order_by="v")
            .map(lambda r: Row(value=r.v, ts=r.ts), output_type=SEEN)
            .process(EventTime(), output_type=SEEN)
            .foreach_batch(collect)
        )
        # socket does not support available_now: run until the lines arrived, then stop
        client = env.execute_async(checkpoint_location=str(tmp_path / "ckpt"))
        try:
            assert wait_for(lambda: len(_flat(out)) >= len(rows), DEADLINE)
            assert not client.await_termination(0.2)  # still running: timed out
        finally:
            client.stop()
        assert client.await_termination(30)
        assert not client.is_active
    finally:
        server.close()
    assert _flat(out) == [(v, t) for _, t, v in rows]


# ------------------------------------------------------------------------------ Kafka-shaped


KAFKA_SCHEMA = "key binary, value string, partition int, offset long, timestamp long"


class SeenInOrder(KeyedProcessFunction):
    """Per partition: the offsets in the order they arrive; an event-time timer at each
    record's timestamp reports the combined watermark that fired it."""

    def process_element(self, value, ctx):
        yield Row(partition=value.partition, kind="record", n=value.offset)
        ctx.timer_service().register_event_time_timer(ctx.timestamp())

    def on_timer(self, timestamp, ctx):
        yield Row(partition=ctx.get_current_key(), kind="timer", n=timestamp)


SEEN_IN_ORDER = Types.ROW_NAMED(
    ["partition", "kind", "n"], [Types.INT(), Types.STRING(), Types.LONG()]
)


def test_kafka_shaped_input_one_split_per_partition_in_offset_order(spark, tmp_path) -> None:
    # partition 0 is far ahead in event time, partition 1 lags; offsets are shuffled in the
    # files, so only order_by="offset" restores each partition's order
    def records(file: int) -> list[dict]:
        out = []
        for partition, base in ((0, 100_000), (1, 1_000)):
            for i in range(10):
                offset = file * 10 + i
                out.append(
                    {
                        "value": f"p{partition}-{offset}",
                        "partition": partition,
                        "offset": offset,
                        "timestamp": base + offset * 10,
                    }
                )
        return out[::-1]  # newest first within the file

    directory = tmp_path / "in"
    directory.mkdir()
    for file in range(2):
        path = directory / f"part-{file}.json"
        path.write_text("".join(json.dumps(r) + "\n" for r in records(file)))
        os.utime(path, (1_700_000_000 + file, 1_700_000_000 + file))
    frame = (
        spark.readStream.schema(KAFKA_SCHEMA).option("maxFilesPerTrigger", 1).json(str(directory))
    )
    env = _env(2)
    out, collect = _collector()
    (
        env.from_stream(
            frame,
            _monotonous(),
            timestamp_column="timestamp",
            split_by="partition",
            order_by="offset",
            num_splits=2,
        )
        .key_by(lambda r: r.partition)
        .process(SeenInOrder(), output_type=SEEN_IN_ORDER)
        .foreach_batch(collect)
    )
    env.execute(checkpoint_location=str(tmp_path / "ckpt"), trigger="available_now")
    assert sorted(out) == [0, 1]
    seen = _flat(out)
    for partition in (0, 1):
        offsets = [n for p, kind, n in seen if p == partition and kind == "record"]
        assert offsets == list(range(20))
    # each split has its own watermark: at the end of batch 1, split 0 is at 100_189 and
    # split 1 at 1_189, so the combined watermark is 1_189: every timer of partition 1 fired
    # and none of partition 0 (one generator for both would have been at 100_189)
    timers = sorted((p, n) for p, kind, n in seen if kind == "timer")
    assert timers == [(1, 1_000 + offset * 10) for offset in range(19)]


def test_integral_split_column_maps_value_to_split() -> None:
    # Spark's hash partitioning by the value itself puts Kafka partitions 0 and 1 together
    assert spark_hash_long(0) % 2 == spark_hash_long(1) % 2
    for n in (1, 2, 3, 8, 13):
        assert [spark_hash_long(k) % n for k in split_keys(n)] == list(range(n))


# ------------------------------------------------------------------------------ errors


def test_missing_columns_are_clear_errors(spark, tmp_path) -> None:
    frame = spark.readStream.schema(KAFKA_SCHEMA).json(str(tmp_path))
    env = _env()
    columns = r"\['key', 'value', 'partition', 'offset', 'timestamp'\]"
    for parameter, kwargs in (
        ("split_by", {"split_by": "part", "num_splits": 2}),
        ("order_by", {"order_by": ["partition", "part"]}),
        ("timestamp_column", {"timestamp_column": "part"}),
    ):
        with pytest.raises(ValueError, match=rf"^{parameter}: .*no column 'part'; .*{columns}"):
            env.from_stream(frame, **kwargs)


# ------------------------------------------------------------------------------ sinks


def _file_stream(spark, tmp_path, n: int = 6):
    _write_file(tmp_path / "in", "a.csv", "csv", _events(n))
    reader = spark.readStream.schema("key string, ts long, v long").option("header", True)
    return reader.csv(str(tmp_path / "in"))


def test_console_print_and_non_idempotent_sinks_warn_and_print(spark, tmp_path, capsys) -> None:
    env = _env()
    stream = env.from_stream(_file_stream(spark, tmp_path))
    stream.print()
    stream.map(lambda r: Row(key=r.key * 10, ts=r.ts, v=r.v), output_type=EVENT).sink_to(
        ConsoleBatchSink(num_rows=4, truncate=5)
    ).name("console")
    calls: list[int] = []
    stream.foreach_batch(lambda df, b: calls.append(b), idempotent=False)
    with pytest.warns(StreamingExactlyOnceWarning) as caught:
        client = env.execute_async(
            checkpoint_location=str(tmp_path / "ckpt"), trigger="available_now"
        )
    assert client.await_termination(DEADLINE)
    texts = [str(w.message) for w in caught if w.category is StreamingExactlyOnceWarning]
    assert len(texts) == 3
    assert "print()" in texts[0]
    assert texts[1].startswith("sink 'console' (ConsoleBatchSink)")
    assert "idempotent=False" in texts[2]
    assert caught[0].filename == __file__  # points at the execute_async() call
    assert calls == [0]
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert lines[:6] == [
        "+I[k0,0,0]",
        "+I[k1,250,1]",
        "+I[k2,500,2]",
        "+I[k0,750,3]",
        "+I[k1,1000,4]",
        "+I[k2,1250,5]",
    ]
    start = lines.index("Batch: 0")
    assert lines[start - 1] == lines[start + 1] == "-" * 43
    assert "|k0...|" in text.replace(" ", "")  # cut to 5 characters
    assert "only showing top 4 rows" in text


def test_idempotence_warnings_per_sink(spark, tmp_path) -> None:
    from sparktide.common.serialization import Encoder
    from sparktide.datastream.connectors.file_sink import FileSink

    env = _env()
    stream = env.from_stream(_file_stream(spark, tmp_path))
    stream.sink_to(ParquetBatchSink(str(tmp_path / "out"))).name("parquet")
    stream.foreach_batch(lambda df, b: None).name("idempotent")
    stream.foreach_batch(lambda df, b: None, idempotent=False).name("appends")
    stream.print("printed")
    stream.add_sink(lambda value: None).name("record sink")
    row_files = FileSink.for_row_format(str(tmp_path / "rows"), Encoder.simple_string_encoder())
    stream.sink_to(row_files.build()).name("row files")
    messages = idempotence_warnings(env.get_stream_graph().nodes)
    assert [m.split(" (")[0] for m in messages] == [
        "sink 'appends'",
        "sink 'printed'",
        "sink 'record sink'",
        "sink 'row files'",
    ]
    assert all("exactly-once does not hold" in m for m in messages)
    assert "idempotent=False" in messages[0] and "print()" in messages[1]
    assert all("ParquetBatchSink(path)" in m for m in messages)


def test_foreach_batch_checks_its_arguments() -> None:
    with pytest.raises(TypeError, match="fn must be a callable"):
        ForeachBatchSink(42)
    with pytest.raises(TypeError, match="idempotent must be a bool"):
        ForeachBatchSink(print, idempotent="yes")
    with pytest.raises(ValueError, match="truncate must be"):
        ConsoleBatchSink(truncate=0)
