"""Per-batch metrics of streaming runs, batches without new data (processing-time timers and
split idleness due between Spark's micro-batches), ``sparktide run``'s progress lines and
``sparktide inspect``'s view of watermarks and timers.

The input and jobs are those of ``test_streaming``: files of ``PER_FILE`` records, one per
micro-batch, compared with the local runtime's bounded run with rounds of the same size.
"""

from __future__ import annotations

import json
import logging
import os
import random
import subprocess
import sys

import pytest

from conftest import wait_for
from sparktide.cli import format_time
from sparktide.common import Duration, Row, Time, Types
from sparktide.datastream import (
    KeyedProcessFunction,
    OutputTag,
    StreamExecutionEnvironment,
)
from sparktide.datastream.state import ValueStateDescriptor
from sparktide.datastream.window import TumblingEventTimeWindows
from sparktide.spark.streaming import ForeachBatchSink
from test_streaming import (
    ALARM,
    EVENT,
    PER_FILE,
    SCHEMA,
    WINDOW,
    _records,
    _strategy,
    _write_files,
)

LATE = OutputTag("late", EVENT)


def _window_job(stream, late_to_side: bool):
    windowed = stream.key_by(lambda r: r.key).window(
        TumblingEventTimeWindows.of(Time.milliseconds(WINDOW))
    )
    if late_to_side:
        windowed = windowed.side_output_late_data(LATE)
    return windowed.reduce(
        lambda a, b: Row(key=a.key, ts=max(a.ts, b.ts), v=a.v + b.v), output_type=EVENT
    )


def _frame(spark, directory):
    return spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(directory))


def _local_metrics(batches, late_to_side: bool) -> dict:
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    env.get_config().set_watermark_every(PER_FILE)
    rows = [Row(key=k, ts=t, v=v) for batch in batches for k, t, v in batch]
    strategy = _strategy().with_timestamp_assigner(lambda r, _: r.ts)
    stream = env.from_collection(rows, type_info=EVENT).assign_timestamps_and_watermarks(strategy)
    _window_job(stream, late_to_side).print()
    return env.execute().get_all_accumulator_results()


def test_batch_metrics_count_what_each_batch_did(spark, tmp_path, caplog, capsys) -> None:
    batches = _records(4)
    _write_files(tmp_path / "in", batches)
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(2)
    stream = env.from_stream(
        _frame(spark, tmp_path / "in"),
        _strategy(),
        timestamp_column="ts",
        split_by="key",
        num_splits=2,
    )
    _window_job(stream, late_to_side=False).sink_to(ForeachBatchSink(lambda df, b: None))
    client = env.execute_async(checkpoint_location=str(tmp_path / "ckpt"), trigger="available_now")
    seen: list[dict] = []
    client.add_listener(seen.append)
    with caplog.at_level(logging.INFO, logger="sparktide.streaming"):
        assert client.await_termination(180)
    progress = client.recent_progress
    assert [p["batch_id"] for p in progress] == [0, 1, 2, 3]
    assert [p["spark_batch"] for p in progress] == [0, 1, 2, 3]
    assert [p["records"] for p in progress] == [len(b) for b in batches]
    # per-split watermarks: each split's own bounded-out-of-orderness watermark; the combined
    # watermark is the lowest of them
    split_of = _splits_of(spark, {k for batch in batches for k, _, _ in batch})
    for p, upto in zip(progress, range(1, 5), strict=True):
        seen_rows = [r for batch in batches[:upto] for r in batch]
        for g, watermark in p["split_watermarks"].items():
            mine = [t for k, t, _ in seen_rows if split_of[k] == int(g)]
            assert watermark == max(mine) - 500 - 1
        assert p["watermark"] == min(p["split_watermarks"].values())
    # pending timers and state: one window per key and window still open
    last = progress[-1]
    assert last["state_entries"] > 0
    assert last["timers_pending"]["event"] >= last["state_entries"]
    assert last["next_event_timer"] > last["watermark"]
    assert sum(p["timers_fired"] for p in progress) > 0
    assert seen == progress  # the listener saw every committed batch
    lines = [r.getMessage() for r in caplog.records if r.name == "sparktide.streaming"]
    assert len(lines) == 4 and lines[0].startswith("batch 0: 30 records in ")
    # Spark's view of the same micro-batches: each holds sparktide's work in it
    spark_progress = {int(p["batchId"]): p for p in client.spark_query.recentProgress}
    for p in progress:
        reported = spark_progress[p["spark_batch"]]
        assert int(reported["numInputRows"]) == p["records"]
        assert float(reported["durationMs"]["triggerExecution"]) >= p["duration_ms"]


def _splits_of(spark, keys: set[str]) -> dict[str, int]:
    """The split Spark's ``repartition(2, "key")`` puts each key in (one Spark job)."""
    from pyspark.sql import functions as F

    frame = spark.createDataFrame([(k,) for k in sorted(keys)], "key string")
    rows = frame.select("key", F.pmod(F.hash("key"), F.lit(2)).alias("p")).collect()
    return {row["key"]: int(row["p"]) for row in rows}


def _late_records(files: int, seed: int = 5) -> list[list[tuple[str, int, int]]]:
    """Like ``_records``, with one record in ten up to 4 s behind (late for 2 s windows)."""
    rng = random.Random(seed)
    out = []
    for batch in _records(files, seed):
        out.append([(k, max(0, t - 4_000) if rng.random() < 0.1 else t, v) for k, t, v in batch])
    return out


@pytest.mark.parametrize("late_to_side", [False, True], ids=["dropped", "side-output"])
def test_late_records_are_counted_as_in_the_bounded_run(spark, tmp_path, late_to_side) -> None:
    batches = _late_records(4)
    _write_files(tmp_path / "in", batches)
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    stream = env.from_stream(_frame(spark, tmp_path / "in"), _strategy(), timestamp_column="ts")
    windows = _window_job(stream, late_to_side)
    windows.sink_to(ForeachBatchSink(lambda df, b: None))
    if late_to_side:
        windows.get_side_output(LATE).sink_to(ForeachBatchSink(lambda df, b: None))
    client = env.execute_async(checkpoint_location=str(tmp_path / "ckpt"), trigger="available_now")
    assert client.await_termination(180)
    local = _local_metrics(batches, late_to_side)
    name = "late_records_side_output" if late_to_side else "late_records_dropped"
    other = "late_records_dropped" if late_to_side else "late_records_side_output"
    assert local[name] > 0 and local[other] == 0
    progress = client.recent_progress
    assert sum(p[name] for p in progress) == local[name]
    assert sum(p[other] for p in progress) == 0
    assert client.metrics()[name] == local[name]


# ------------------------------------------------------------------ batches without new data


class Reminder(KeyedProcessFunction):
    """Per key: count records; a processing-time timer DELAY ms after the first record."""

    DELAY = 1_500

    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        if self.count.value() is None:
            now = ctx.timer_service().current_processing_time()
            ctx.timer_service().register_processing_time_timer(now + self.DELAY)
        self.count.update((self.count.value() or 0) + 1)

    def on_timer(self, timestamp, ctx):
        yield Row(key=ctx.get_current_key(), at=timestamp, count=self.count.value())


def _rows(df) -> list[tuple]:
    return [tuple(r) for r in df.collect()]


def test_processing_time_timers_fire_without_new_data(spark, tmp_path) -> None:
    batches = _records(1)
    _write_files(tmp_path / "in", batches)
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(2)
    out: dict[int, list[tuple]] = {}
    (
        env.from_stream(_frame(spark, tmp_path / "in"), _strategy(), timestamp_column="ts")
        .key_by(lambda r: r.key)
        .process(Reminder(), output_type=ALARM)
        .sink_to(ForeachBatchSink(lambda df, b: out.__setitem__(b, _rows(df))))
    )
    client = env.execute_async(checkpoint_location=str(tmp_path / "ckpt"))  # until stopped
    try:
        assert wait_for(lambda: any(out.values()), 90), "the timers never fired"
    finally:
        client.stop()
    progress = client.recent_progress
    first = progress[0]
    assert first["spark_batch"] == 0 and first["timers_pending"]["processing"] == 5
    fired = [p for p in progress if p["timers_fired"]]
    assert fired[0]["spark_batch"] is None  # a batch without new data, run for the timers
    assert fired[0]["processing_time"] >= first["processing_time"] + Reminder.DELAY
    keys = {k for k, _, _ in batches[0]}
    counts = {k: sum(1 for r in batches[0] if r[0] == k) for k in keys}
    rows = [row for b in sorted(out) for row in out[b]]
    assert sorted(rows) == sorted(
        (k, first["processing_time"] + Reminder.DELAY, counts[k]) for k in keys
    )
    assert fired[0]["timers_pending"]["processing"] == 0
    assert len(progress) == 2  # nothing due after that: no more batches


def test_an_idle_split_stops_holding_back_the_watermark(spark, tmp_path) -> None:
    # key "b" (in one split) has records only in the first file, key "a" (in the other) in
    # both; with idleness, batches without data mark b's split idle, so a's watermark alone
    # closes the first window of both keys
    first = [("a", 100 * i, i) for i in range(10)] + [("b", 100 * i, i) for i in range(10)]
    _write_files(tmp_path / "in", [first])
    strategy = _strategy().with_idleness(Duration.of_millis(300))
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    out: dict[int, list[tuple]] = {}
    stream = env.from_stream(
        _frame(spark, tmp_path / "in"),
        strategy,
        timestamp_column="ts",
        split_by="key",
        num_splits=2,
    )
    _window_job(stream, late_to_side=False).sink_to(
        ForeachBatchSink(lambda df, b: out.__setitem__(b, _rows(df)))
    )
    split_a, split_b = (_splits_of(spark, {"a", "b"})[k] for k in "ab")
    assert split_a != split_b, "the test needs the keys in different splits"
    client = env.execute_async(checkpoint_location=str(tmp_path / "ckpt"))
    try:
        assert wait_for(lambda: client.recent_progress, 90)
        _write_files(tmp_path / "in", [[("a", 5_000 + 100 * i, 100 + i) for i in range(10)]], 1)
        fired = wait_for(lambda: len([r for rows in out.values() for r in rows]) == 2, 120)
    finally:
        client.stop()
    progress = client.recent_progress
    assert fired, f"the first windows never fired: {progress}"
    assert sorted(r for rows in out.values() for r in rows) == [("a", 900, 45), ("b", 900, 45)]
    assert [p["spark_batch"] for p in progress if p["spark_batch"] is not None] == [0, 1]
    [fired_in] = [p for p in progress if p["timers_fired"]]
    assert fired_in["split_watermarks"] == {str(split_a): 5_399, str(split_b): "idle"}
    assert fired_in["watermark"] == 5_399
    # the split went idle only through a batch without data (b's split got no record after
    # the first batch and needs a check that starts its inactivity timer, then one after it)
    assert any(p["spark_batch"] is None for p in progress if p["batch_id"] <= fired_in["batch_id"])


# ------------------------------------------------------------------ the command line

_JOB = """
import sys
from test_streaming import SCHEMA, _strategy, _windows
from sparktide.datastream import StreamExecutionEnvironment
from sparktide.spark.session import get_spark
from sparktide.spark.streaming import ForeachBatchSink

spark = get_spark("local[2]")
env = StreamExecutionEnvironment.get_execution_environment()
frame = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(sys.argv[1])
stream = env.from_stream(frame, _strategy(), timestamp_column="ts")
_windows(stream).sink_to(ForeachBatchSink(lambda df, b: None))
env.execute(checkpoint_location=sys.argv[2], trigger="available_now")
"""


def test_sparktide_run_shows_progress_and_inspect_shows_watermarks(tmp_path) -> None:
    batches = _records(2)
    _write_files(tmp_path / "in", batches)
    job = tmp_path / "job.py"
    job.write_text(_JOB)
    tests = os.path.dirname(__file__)
    env = {**os.environ, "PYTHONPATH": tests + os.pathsep + os.environ.get("PYTHONPATH", "")}
    ckpt = str(tmp_path / "ckpt")
    run = [sys.executable, "-m", "sparktide.cli", "run", str(job), "--", str(tmp_path / "in"), ckpt]
    done = subprocess.run(run, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith("[sparktide] batch")]
    assert [ln.split(":")[0] for ln in lines] == ["[sparktide] batch 0", "[sparktide] batch 1"]
    assert "30 records" in lines[0] and "watermark" in lines[0]

    inspect = [sys.executable, "-m", "sparktide.cli", "inspect", ckpt, "--json"]
    summary = json.loads(
        subprocess.run(inspect, capture_output=True, text=True, env=env, timeout=120).stdout
    )
    last_ts = max(t for batch in batches for _, t, _ in batch)
    assert summary["split_watermarks"] == {"0": last_ts - 500 - 1}
    assert summary["watermark"] == last_ts - 500 - 1
    [stage] = summary["stages"]
    assert stage["operators"][0].startswith("Window")
    for sub in stage["subtasks"]:
        if sub["event_timers"]:
            assert sub["next_event_timer"] <= sub["last_event_timer"]
    text = subprocess.run(inspect[:-1], capture_output=True, text=True, env=env, timeout=120).stdout
    watermark = format_time(last_ts - 501)  # ISO-8601 UTC in the text view
    assert watermark.startswith("1970-01-01T00:00:") and watermark.endswith("Z")
    assert f"watermark {watermark}; splits: 0={watermark}" in text
