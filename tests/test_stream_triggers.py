"""Triggers of streaming jobs, and batches without new data on classic and Spark Connect sessions.

- ``StreamTrigger``: its forms, their string forms, and what is refused (before any query
  starts) with an error naming the accepted forms;
- the batch lock, which one process holds while another cannot take it;
- every form runs the same micro-batches over the same files as ``available_now`` and gives
  the same output (``once`` one batch per run, resuming from the checkpoint);
- a processing-time timer a ``KeyedProcessFunction`` registers fires in a batch without new
  data, committed once, and idleness marks the splits idle without new data: on a classic
  session and on a Spark Connect session, where the client runs those batches while the server
  runs Spark's (the Connect driver runs in a subprocess, this file run as a script, as in
  ``test_spark_connect``).
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from dataclasses import FrozenInstanceError
from pathlib import Path
from typing import Any

import pytest

import sparktide
from conftest import wait_for
from sparktide.common import Duration, Row, Types
from sparktide.datastream import KeyedProcessFunction, StreamExecutionEnvironment, StreamTrigger
from sparktide.datastream.state import ValueStateDescriptor
from sparktide.spark.batch_lock import BatchLock
from sparktide.spark.checkpoint import CheckpointStore
from sparktide.spark.query_trigger import POLLING_DELAY, creation_settings, with_trigger
from sparktide.spark.streaming import ForeachBatchSink, ParquetBatchSink
from test_spark_connect import _connect_available, run_connect_driver
from test_streaming import SCHEMA, _records, _strategy, _timers, _write_files

ALARM = Types.ROW_NAMED(["key", "at", "count"], [Types.STRING(), Types.LONG(), Types.LONG()])

# ------------------------------------------------------------------------------ the value

FORMS = [
    StreamTrigger.processing_time(Duration.of_seconds(10)),
    StreamTrigger.continuous(),
    StreamTrigger.continuous(poll=Duration.of_millis(250)),
    StreamTrigger.available_now(),
    StreamTrigger.once(),
]


def test_each_form_reads_back_from_its_string_and_its_pickle() -> None:
    for trigger in FORMS:
        assert StreamTrigger.of(str(trigger)) == trigger
        assert pickle.loads(pickle.dumps(trigger)) == trigger
        assert StreamTrigger.of(trigger) is trigger
    assert [t.runs_until_stopped for t in FORMS] == [True, True, True, False, False]
    assert StreamTrigger.of("processing_time:2min") == StreamTrigger.processing_time(120_000)
    assert StreamTrigger.of(" continuous: 3 s ").interval_ms == 3_000
    assert StreamTrigger.of("once") == StreamTrigger.once() != StreamTrigger.available_now()
    assert StreamTrigger.of(None) is None
    with pytest.raises(FrozenInstanceError):
        FORMS[0].interval_ms = 5  # type: ignore[misc]


def test_no_trigger_runs_until_stopped_paced_by_the_checkpoint_interval() -> None:
    assert StreamTrigger.resolve(None, 5_000) == StreamTrigger.processing_time(5_000)
    assert StreamTrigger.resolve(None, None) == StreamTrigger.continuous()
    assert StreamTrigger.resolve("once", 5_000) == StreamTrigger.once()


@pytest.mark.parametrize(
    "text",
    [
        "every 10s",
        "processing_time",
        "processing_time:0s",
        "processing_time:10",
        "ONCE",
        "",
        "once:1s",
    ],
)
def test_a_bad_string_is_refused_naming_the_accepted_forms(text: str) -> None:
    with pytest.raises(ValueError, match=r"trigger must be StreamTrigger\.processing_time") as info:
        StreamTrigger.of(text)
    message = str(info.value)
    for form in ("'available_now'", "'once'", "'processing_time:<span>'", "continuous", "None"):
        assert form in message
    assert repr(text) in message


def test_bad_values_are_refused() -> None:
    with pytest.raises(TypeError, match=r"trigger must be .* got int \(10\)"):
        StreamTrigger.of(10)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="interval must be a positive duration"):
        StreamTrigger.processing_time(0)
    with pytest.raises(ValueError, match="poll must be a positive duration"):
        StreamTrigger.continuous(poll=Duration.of_millis(0))
    with pytest.raises(TypeError, match="interval must be a Duration"):
        StreamTrigger.processing_time("10s")  # type: ignore[arg-type]
    from sparktide.common.stream_trigger import TriggerKind

    with pytest.raises(ValueError, match="a once trigger cannot have interval_ms=5"):
        StreamTrigger(TriggerKind.ONCE, 5)
    with pytest.raises(ValueError, match="a processing_time trigger cannot have interval_ms=None"):
        StreamTrigger(TriggerKind.PROCESSING_TIME)


class _Writer:
    """What ``with_trigger`` calls on a DataStreamWriter."""

    def __init__(self) -> None:
        self.triggers: list[dict[str, object]] = []

    def trigger(self, **kwargs: object) -> _Writer:
        self.triggers.append(kwargs)
        return self


def test_each_form_is_the_spark_trigger_of_its_name() -> None:
    expected = [
        [{"processingTime": "10000 milliseconds"}],
        [],  # Spark's default trigger: a batch as soon as data arrives
        [],
        [{"availableNow": True}],
        [{"once": True}],
    ]
    for trigger, spark_triggers in zip(FORMS, expected, strict=True):
        writer = _Writer()
        assert with_trigger(writer, trigger) is writer  # type: ignore[arg-type]
        assert writer.triggers == spark_triggers
    assert [creation_settings(t) for t in FORMS] == [{}, {}, {POLLING_DELAY: "250ms"}, {}, {}]


# ------------------------------------------------------------------------------ the batch lock

_HOLDER = """
import sys
from sparktide.spark.batch_lock import BatchLock
from sparktide.spark.checkpoint import CheckpointStore
with BatchLock(CheckpointStore(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.readline()
"""


def test_the_batch_lock_excludes_another_process(tmp_path: Path) -> None:
    store = CheckpointStore(str(tmp_path / "ckpt"))
    lock = BatchLock(store)
    assert lock.excludes_processes()
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, store.location],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(sparktide.__file__).resolve().parents[1])},
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        assert not lock.acquire(blocking=False)  # a run of a version is in flight there
        assert not lock.acquire(timeout=0.1)
    finally:
        holder.communicate("done\n", timeout=60)
    assert lock.acquire(timeout=30)  # released by its holder
    lock.release()


# ------------------------------------------------------------------------------ on Spark


def _frame(spark: Any, directory: Path) -> Any:
    return spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(directory))


def _run(spark: Any, directory: Path, ckpt: Path, trigger: Any, last: int | None = None) -> dict:
    """The event-time timers of ``test_streaming`` over the files of ``directory``, one per
    micro-batch; each batch's output by batch id. ``last``: the batch id after which a query
    that runs until stopped is stopped."""
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(2)
    out: dict[int, list[tuple]] = {}

    def collect(df: Any, batch_id: int) -> None:
        out[batch_id] = sorted(tuple(r) for r in df.collect())

    stream = env.from_stream(_frame(spark, directory), _strategy(), timestamp_column="ts")
    _timers(stream).sink_to(ForeachBatchSink(collect))
    client = env.execute_async(checkpoint_location=str(ckpt), trigger=trigger)
    if last is None:
        assert client.await_termination(180)
        return out
    try:
        assert wait_for(lambda: client.last_committed_batch() == last, 180), client.recent_progress
    finally:
        client.stop()
    return out


def test_each_trigger_form_gives_the_output_of_available_now(spark, tmp_path: Path) -> None:
    records = _records(2)
    _write_files(tmp_path / "in", records)
    reference = _run(spark, tmp_path / "in", tmp_path / "available_now", "available_now")
    assert sorted(reference) == [0, 1] and reference[1], reference  # timers fired in batch 1
    # once: one batch of all there is (Spark ignores maxFilesPerTrigger), so a file per run;
    # the next run resumes from the checkpoint
    once: dict[int, list[tuple]] = {}
    for f, rows in enumerate(records):
        _write_files(tmp_path / "in-once", [rows], first=f)
        once.update(_run(spark, tmp_path / "in-once", tmp_path / "once", StreamTrigger.once()))
    assert once == reference
    polling = spark.conf.get(POLLING_DELAY, None)
    until_stopped = {
        "processing_time": StreamTrigger.processing_time(Duration.of_millis(300)),
        "continuous": "continuous:50ms",
    }
    for name, trigger in until_stopped.items():
        assert _run(spark, tmp_path / "in", tmp_path / name, trigger, last=1) == reference, name
    assert spark.conf.get(POLLING_DELAY, None) == polling  # set only while the query started


def test_a_bad_trigger_is_refused_before_the_query_starts(spark, tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    stream = env.from_stream(_frame(spark, tmp_path / "in"), _strategy(), timestamp_column="ts")
    _timers(stream).sink_to(ForeachBatchSink(lambda df, b: None))
    active = len(spark.streams.active)
    ckpt = tmp_path / "ckpt"
    with pytest.raises(ValueError, match=r"trigger must be .* got 'processing_time:10'"):
        env.execute(checkpoint_location=str(ckpt), trigger="processing_time:10")
    with pytest.raises(TypeError, match=r"trigger must be .* got float \(1\.5\)"):
        env.execute_async(checkpoint_location=str(ckpt), trigger=1.5)  # type: ignore[arg-type]
    assert not ckpt.exists() and len(spark.streams.active) == active


# ------------------------------------------------------------------------- batches without data


class Reminder(KeyedProcessFunction):
    """Per key: count records; a processing-time timer DELAY ms after the key's first record."""

    DELAY = 1_500

    def open(self, runtime_context: Any) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value: Any, ctx: Any) -> None:
        if self.count.value() is None:
            now = ctx.timer_service().current_processing_time()
            ctx.timer_service().register_processing_time_timer(now + self.DELAY)
        self.count.update((self.count.value() or 0) + 1)

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        yield Row(key=ctx.get_current_key(), at=timestamp, count=self.count.value())


IDLE_AFTER = 300
EVENTS = [("a", 100 * i, i) for i in range(6)] + [("b", 100 * i, 10 + i) for i in range(4)]


def without_new_data(spark: Any, work: Path, trigger: Any) -> dict[str, Any]:
    """One file of records of keys ``a`` and ``b`` (in splits of their own, idle after
    ``IDLE_AFTER`` ms without records), ``Reminder`` per key into a ``ParquetBatchSink``; the
    query runs until the timers fired and every split went idle, which only batches without
    new data can do. What the sink holds, the progress and the last commit."""
    _write_files(work / "in", [EVENTS])
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(2)
    env.get_config().set_auto_watermark_interval(100)  # how often a due batch is looked for
    strategy = _strategy().with_idleness(Duration.of_millis(IDLE_AFTER))
    stream = env.from_stream(
        _frame(spark, work / "in"), strategy, timestamp_column="ts", split_by="key", num_splits=2
    )
    out = work / "out"
    stream.key_by(lambda r: r.key).process(Reminder(), output_type=ALARM).sink_to(
        ParquetBatchSink(str(out))
    )
    client = env.execute_async(checkpoint_location=str(work / "ckpt"), trigger=trigger)

    def done() -> bool:
        progress = client.recent_progress
        fired = any(p["timers_fired"] for p in progress)
        return fired and any(set(p["split_watermarks"].values()) == {"idle"} for p in progress)

    try:
        finished = wait_for(done, 180)
    finally:
        client.stop()
    written = spark.read.parquet(str(out)).collect() if out.exists() else []
    return {
        "finished": finished,
        "rows": sorted([r["batch"], r["key"], r["at"], r["count"]] for r in written),
        "progress": [
            {k: p[k] for k in ("batch_id", "spark_batch", "processing_time", "timers_fired")}
            | {"pending": p["timers_pending"]["processing"], "splits": p["split_watermarks"]}
            for p in client.recent_progress
        ],
        "committed": client.last_committed_batch(),
    }


def check_without_new_data(report: dict[str, Any]) -> None:
    """The timers fired once, in a batch without new data, which committed their rows; the
    splits went idle in batches without new data; every version was reported once."""
    progress = report["progress"]
    assert report["finished"], progress
    assert [p["batch_id"] for p in progress] == list(range(report["committed"] + 1))
    first = progress[0]
    assert first["spark_batch"] == 0 and first["pending"] == 2  # a timer per key
    assert all(p["spark_batch"] is None for p in progress[1:])  # no new data after the file
    [fired] = [p for p in progress if p["timers_fired"]]
    assert fired["timers_fired"] == 2 and fired["pending"] == 0
    assert fired["processing_time"] >= first["processing_time"] + Reminder.DELAY
    at = first["processing_time"] + Reminder.DELAY
    assert report["rows"] == [[fired["batch_id"], "a", at, 6], [fired["batch_id"], "b", at, 4]]
    idle = [p for p in progress if set(p["splits"].values()) == {"idle"}]
    assert idle and idle[0]["processing_time"] - first["processing_time"] >= IDLE_AFTER


def test_timers_and_idleness_without_new_data_on_a_classic_session(spark, tmp_path) -> None:
    trigger = StreamTrigger.processing_time(Duration.of_millis(200))
    check_without_new_data(without_new_data(spark, tmp_path, trigger))


def test_timers_and_idleness_without_new_data_on_a_connect_session(tmp_path: Path) -> None:
    reason = _connect_available()
    if reason:
        pytest.skip(reason)
    # the driver imports this sparktide and the job's functions from this directory
    package_root = Path(sparktide.__file__).resolve().parents[1]
    report_path = tmp_path / "connect.json"
    (tmp_path / "work").mkdir()
    done = run_connect_driver(
        [__file__, str(report_path), str(tmp_path / "work")],
        tmp_path,
        [str(package_root), str(Path(__file__).parent)],
    )
    assert done.returncode == 0 and report_path.is_file(), done.stderr[-8000:]
    check_without_new_data(json.loads(report_path.read_text()))


def drive(out: str, work: str) -> None:
    """The Connect driver: :func:`without_new_data` on a local Spark Connect server."""
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.remote("local[2]").getOrCreate()
    try:
        assert type(spark).__module__.startswith("pyspark.sql.connect"), type(spark)
        report = without_new_data(spark, Path(work), StreamTrigger.continuous(poll=100))
    finally:
        spark.stop()
    Path(out).write_text(json.dumps(report))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    drive(*sys.argv[1:3])
