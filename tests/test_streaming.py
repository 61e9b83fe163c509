"""Streaming on Spark Structured Streaming: ``env.from_stream`` over a file stream, one round per
micro-batch, state and timers kept in a checkpoint directory across restarts.

The reference is the local runtime's bounded run of the same records with ``watermark_every``
equal to the records per micro-batch: its rounds are the micro-batches, so the streamed output
is exactly the bounded output minus what only the end of input fires (the final ``MAX``
watermark of a bounded run; a stream never ends).
"""

from __future__ import annotations

import json
import os
import random

import pytest

from sparktide.common import Duration, Row, Time, Types
from sparktide.common.watermark_strategy import WatermarkStrategy
from sparktide.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from sparktide.datastream.state_backend import EmbeddedRocksDBStateBackend, HashMapStateBackend
from sparktide.datastream.window import TumblingEventTimeWindows
from sparktide.spark.checkpoint import CheckpointError, CheckpointStore, pack_parts, unpack_parts
from sparktide.spark.checkpoint_inspect import describe_checkpoint
from sparktide.spark.streaming import ForeachBatchSink, JsonBatchSink, ParquetBatchSink
from test_dataframes import ALARM, Alarm

EVENT = Types.ROW_NAMED(["key", "ts", "v"], [Types.STRING(), Types.LONG(), Types.LONG()])
SCHEMA = "key string, ts long, v long"
PER_FILE = 30
OUT_OF_ORDER = 500
WINDOW = 2_000


def _records(files: int, seed: int = 7) -> list[list[tuple[str, int, int]]]:
    rng = random.Random(seed)
    out = []
    for f in range(files):
        rows = []
        for j in range(PER_FILE):
            i = f * PER_FILE + j
            rows.append((f"k{rng.randrange(5)}", i * 100 + rng.randrange(0, 1_500), i))
        out.append(rows)
    return out


def _write_files(directory, batches, first: int = 0) -> None:
    os.makedirs(directory, exist_ok=True)
    for f, rows in enumerate(batches, start=first):
        path = os.path.join(directory, f"part-{f:04d}.json")
        with open(path + ".tmp", "w") as out:
            for key, ts, v in rows:
                out.write(json.dumps({"key": key, "ts": ts, "v": v}) + "\n")
        os.replace(path + ".tmp", path)
        os.utime(path, (1_700_000_000 + f, 1_700_000_000 + f))  # the file source's order


def _strategy() -> WatermarkStrategy:
    return WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(OUT_OF_ORDER))


def _timers(stream):
    return stream.key_by(lambda r: r.key).process(Alarm(), output_type=ALARM)


def _windows(stream):
    return (
        stream.key_by(lambda r: r.key)
        .window(TumblingEventTimeWindows.of(Time.milliseconds(WINDOW)))
        .reduce(lambda a, b: Row(key=a.key, ts=max(a.ts, b.ts), v=a.v + b.v), output_type=EVENT)
    )


JOBS = {"timers": _timers, "windows": _windows}


def _reference(job: str, batches) -> list[tuple]:
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    env.get_config().set_watermark_every(PER_FILE)
    rows = [Row(key=k, ts=t, v=v) for batch in batches for k, t, v in batch]
    strategy = _strategy().with_timestamp_assigner(lambda r, _: r.ts)
    stream = env.from_collection(rows, type_info=EVENT).assign_timestamps_and_watermarks(strategy)
    return [tuple(r) for r in JOBS[job](stream).execute_and_collect()]


def _fired_before_end(job: str, output: list[tuple], watermark: int) -> list[tuple]:
    """The part of a bounded run's output fired by watermarks ``<= watermark``."""
    if job == "timers":
        return [o for o in output if o[1] <= watermark]
    return [o for o in output if (o[1] // WINDOW + 1) * WINDOW - 1 <= watermark]


def backend_named(name: str):
    """The state backend a test names: the heap, or RocksDB with incremental checkpoints."""
    if name == "hashmap":
        return HashMapStateBackend()
    return EmbeddedRocksDBStateBackend(enable_incremental_checkpointing=True)


def _stream(
    spark,
    directory,
    job: str,
    parallelism: int,
    ckpt,
    sink=None,
    backend=None,
    config=None,
    **options,
):
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(parallelism)
    if config is not None:
        env.configure(config)
    if backend is not None:
        env.set_state_backend(backend_named(backend))
    frame = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(directory))
    stream = env.from_stream(frame, _strategy(), timestamp_column="ts", **options)
    out: dict[int, list[tuple]] = {}

    def collect(df, batch_id):
        out[batch_id] = [tuple(r) for r in df.collect()]

    JOBS[job](stream).sink_to(sink or ForeachBatchSink(collect))
    result = env.execute(checkpoint_location=str(ckpt), trigger="available_now")
    return out, result


def _flatten(out: dict[int, list[tuple]]) -> list[tuple]:
    return [row for b in sorted(out) for row in out[b]]


def _final_watermark(batches) -> int:
    return max(t for batch in batches for _, t, _ in batch) - OUT_OF_ORDER - 1


# ------------------------------------------------------------------------------ equivalence


def _marker_jobs(spark) -> list[int]:
    """The ids of the Spark jobs of a marker job (ids count every job of the context)."""
    sc = spark.sparkContext
    group = f"marker-{random.random()}"
    sc.setJobGroup(group, "marker")
    try:
        spark.range(1).collect()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    return sc.statusTracker().getJobIdsForGroup(group)


def test_one_pass_batches_run_one_spark_job_and_write_what_persisted_frames_write(
    spark, tmp_path
) -> None:
    """A micro-batch per record hands its sinks their records from its one Spark job (the
    sink's ``collect()`` of the DataFrame made on the driver runs none; reading persisted
    frames, it is a second job): the same rows, in the same order, as sinks reading the
    batch's persisted frames, at parallelism 1 and 3."""
    batches = _records(2, seed=3)
    _write_files(tmp_path / "in", batches)
    expected = _fired_before_end("timers", _reference("timers", batches), _final_watermark(batches))
    for parallelism in (1, 3):
        outs, jobs = [], []
        for one_pass in ("true", "false"):
            before = max(_marker_jobs(spark))
            config = {"sparktide.execution.stream-sinks-one-pass": one_pass}
            ckpt = tmp_path / f"ckpt-{parallelism}-{one_pass}"
            out, _ = _stream(spark, tmp_path / "in", "timers", parallelism, ckpt, config=config)
            jobs.append(min(_marker_jobs(spark)) - before - 1)
            outs.append(out)
        assert outs[0] == outs[1]
        assert _flatten(outs[0]) == expected
        assert jobs == [len(batches), 2 * len(batches)], jobs


@pytest.mark.parametrize("job", ["timers", "windows"])
def test_stream_equals_bounded_run_with_rounds_per_batch(spark, tmp_path, job) -> None:
    batches = _records(4)
    _write_files(tmp_path / "in", batches)
    out, result = _stream(spark, tmp_path / "in", job, 2, tmp_path / "ckpt")
    assert sorted(out) == [0, 1, 2, 3]  # one micro-batch per file
    reference = _reference(job, batches)
    expected = _fired_before_end(job, reference, _final_watermark(batches))
    assert _flatten(out) == expected
    assert len(expected) < len(reference)  # the end of input fires more in the bounded run
    assert result.metrics["rounds"] == 4


@pytest.mark.usefixtures("state_backend")
def test_restart_continues_with_state_and_timers(spark, tmp_path, capsys) -> None:
    batches = _records(5)
    _write_files(tmp_path / "in", batches[:2])
    first, _ = _stream(spark, tmp_path / "in", "timers", 2, tmp_path / "ckpt")
    assert sorted(first) == [0, 1]
    _write_files(tmp_path / "in", batches[2:], first=2)
    # restart with another parallelism: the key groups are redistributed
    second, _ = _stream(spark, tmp_path / "in", "timers", 3, tmp_path / "ckpt")
    assert sorted(second) == [2, 3, 4]
    reference = _reference("timers", batches)
    expected = _fired_before_end("timers", reference, _final_watermark(batches))
    assert _flatten(first) + _flatten(second) == expected
    summary = describe_checkpoint(CheckpointStore(str(tmp_path / "ckpt")))
    assert summary["committed_batch"] == 4
    [stage] = summary["stages"]
    assert stage["parallelism"] == 3
    assert [s["key_groups"] for s in stage["subtasks"]] == [[0, 42], [43, 85], [86, 127]]
    keys = {k for batch in batches for k, _, _ in batch}
    assert sum(s["state_entries"] for s in stage["subtasks"]) == len(keys)
    pending = sum(s["event_timers"] for s in stage["subtasks"])
    assert pending == len(_reference("timers", batches)) - len(expected)
    # the same view from the command line
    from sparktide.cli import main

    assert main(["inspect", str(tmp_path / "ckpt")]) == 0
    text = capsys.readouterr().out
    assert "committed batch 4" in text
    rows = [line.split() for line in text.splitlines()[2:] if line.strip()[:1].isdigit()]
    assert [r[2] for r in rows] == ["0-42", "43-85", "86-127"]
    assert sum(int(r[4]) for r in rows) == pending
    assert main(["inspect", str(tmp_path / "no-such-checkpoint"), "--json"]) == 2
    assert "is not a sparktide checkpoint" in capsys.readouterr().err


@pytest.mark.parametrize("sink_class", [ParquetBatchSink, JsonBatchSink])
def test_file_sinks_write_one_directory_per_batch(spark, tmp_path, sink_class) -> None:
    batches = _records(2)
    _write_files(tmp_path / "in", batches)
    sink = sink_class(str(tmp_path / "out"))
    _stream(spark, tmp_path / "in", "windows", 1, tmp_path / "ckpt", sink=sink)
    assert sorted(os.listdir(tmp_path / "out")) == ["batch=0", "batch=1"]
    back = spark.read.format(sink.format).load(str(tmp_path / "out")).collect()
    expected = _fired_before_end(
        "windows", _reference("windows", batches), _final_watermark(batches)
    )
    assert sorted((r["key"], r["ts"], r["v"]) for r in back) == sorted(expected)


def test_split_by_keeps_a_generator_per_split(spark, tmp_path) -> None:
    batches = _records(3)
    _write_files(tmp_path / "in", batches)
    out, _ = _stream(
        spark, tmp_path / "in", "timers", 2, tmp_path / "ckpt", split_by="key", num_splits=2
    )
    assert sorted(out) == [0, 1, 2]
    flat = _flatten(out)
    # every output is a timer that fired: at most the smallest split watermark
    assert flat and all(o[1] <= _final_watermark(batches) for o in flat)


def _drop_spark_commit(ckpt, batch_id: int) -> None:
    for name in (str(batch_id), f".{batch_id}.crc"):
        (ckpt / "spark" / "commits" / name).unlink(missing_ok=True)


def test_replays_reload_the_previous_version_or_skip_committed_batches(spark, tmp_path) -> None:
    batches = _records(3)
    _write_files(tmp_path / "in", batches)
    ckpt = tmp_path / "ckpt"
    first, _ = _stream(spark, tmp_path / "in", "timers", 2, ckpt)
    assert sorted(first) == [0, 1, 2]
    # a crash after Spark logged batch 2 but before sparktide committed it: Spark replays it
    # and sparktide reprocesses it from version 1
    (ckpt / "commits" / "2.json").unlink()
    _drop_spark_commit(ckpt, 2)
    replayed, _ = _stream(spark, tmp_path / "in", "timers", 2, ckpt)
    assert replayed == {2: first[2]}
    # a crash after sparktide committed batch 2 but before Spark did: the replay is skipped
    _drop_spark_commit(ckpt, 2)
    skipped, _ = _stream(spark, tmp_path / "in", "timers", 2, ckpt)
    assert skipped == {}


def test_execute_async_runs_until_stopped(spark, tmp_path) -> None:
    import time

    _write_files(tmp_path / "in", _records(2))
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    frame = spark.readStream.schema(SCHEMA).json(str(tmp_path / "in"))
    _timers(env.from_stream(frame, _strategy(), timestamp_column="ts")).sink_to(
        ForeachBatchSink(lambda df, batch_id: None)
    )
    client = env.execute_async(checkpoint_location=str(tmp_path / "ckpt"))
    deadline = time.monotonic() + 120
    while not client.recent_progress and time.monotonic() < deadline:
        time.sleep(0.1)
    assert client.is_active
    assert not client.await_termination(0.5)  # no trigger: it waits for more files
    client.stop()
    assert client.await_termination(30)
    [progress] = client.recent_progress  # both files in one micro-batch
    assert progress["batch_id"] == 0 and progress["records"] == 2 * PER_FILE
    assert client.last_committed_batch() == 0


# ------------------------------------------------------------------------------ errors


def test_corrupt_checkpoint_files_are_clear_errors(spark, tmp_path) -> None:
    batches = _records(3)
    _write_files(tmp_path / "in", batches[:1])
    _stream(spark, tmp_path / "in", "timers", 1, tmp_path / "ckpt")
    _write_files(tmp_path / "in", batches[1:2], first=1)
    splits = tmp_path / "ckpt" / "splits" / "0.bin"
    good = splits.read_bytes()
    splits.write_bytes(good[:-3])
    with pytest.raises(CheckpointError, match=r"truncated|corrupt"):
        _stream(spark, tmp_path / "in", "timers", 1, tmp_path / "ckpt")
    splits.write_bytes(good)
    state = tmp_path / "ckpt" / "state" / "0" / "stage-0" / "sub-0.bin"
    data = bytearray(state.read_bytes())
    data[-1] ^= 0xFF
    state.write_bytes(bytes(data))
    # at another parallelism every subtask restores from the files: none can take the state a
    # Spark worker may still hold from the first run (kept warm when its file is the one the
    # commit names), so the damaged file is read
    with pytest.raises(Exception, match="checksum mismatch"):
        _stream(spark, tmp_path / "in", "timers", 2, tmp_path / "ckpt")


def test_checkpoint_of_another_job_is_refused(spark, tmp_path) -> None:
    _write_files(tmp_path / "in", _records(1))
    _stream(spark, tmp_path / "in", "timers", 1, tmp_path / "ckpt")
    with pytest.raises(CheckpointError, match=r"holds state of operator.* this job does not have"):
        _stream(spark, tmp_path / "in", "windows", 1, tmp_path / "ckpt")


def test_container_format_checks() -> None:
    data = pack_parts({"a": b"123", "b": b"45"}, {"x": 1})
    assert unpack_parts(data, "f") == ({"x": 1}, {"a": b"123", "b": b"45"})
    with pytest.raises(CheckpointError, match="truncated"):
        unpack_parts(data[:-1], "f")
    with pytest.raises(CheckpointError, match="bad magic"):
        unpack_parts(b"nonsense" * 4, "f")
    newer = data[:8] + (99).to_bytes(4, "big") + data[12:]
    with pytest.raises(CheckpointError, match="format version 99 is not supported"):
        unpack_parts(newer, "f")


def test_from_stream_argument_errors(spark, tmp_path) -> None:
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    frame = spark.readStream.schema(SCHEMA).json(str(tmp_path))
    with pytest.raises(ValueError, match="num_splits is required"):
        env.from_stream(frame, split_by="key")
    with pytest.raises(ValueError, match="no column 'nope'"):
        env.from_stream(frame, order_by="nope")
    with pytest.raises(TypeError, match=r"streaming pyspark\.sql\.DataFrame"):
        env.from_stream(spark.range(3))
    env.from_stream(frame).print()
    with pytest.raises(ValueError, match="checkpoint_location is required"):
        env.execute()
    local = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    with pytest.raises(ValueError, match='needs runtime="spark"'):
        local.from_stream(frame)


# ------------------------------------------------------------------------------ processing time


class Echo(KeyedProcessFunction):
    """Registers a processing-time timer 1 ms after the current processing time."""

    def process_element(self, value, ctx):
        now = ctx.timer_service().current_processing_time()
        ctx.timer_service().register_processing_time_timer(now + 1)

    def on_timer(self, timestamp, ctx):
        yield Row(key=ctx.get_current_key(), at=timestamp, count=0)


def test_processing_time_is_the_batch_time_and_timers_fire_at_batch_boundaries(
    spark, tmp_path
) -> None:
    batches = _records(3)
    _write_files(tmp_path / "in", batches)
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(2)
    frame = (
        spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(tmp_path / "in"))
    )
    out: dict[int, list[tuple]] = {}
    (
        env.from_stream(frame, _strategy(), timestamp_column="ts")
        .key_by(lambda r: r.key)
        .process(Echo(), output_type=ALARM)
        .sink_to(
            ForeachBatchSink(lambda df, b: out.__setitem__(b, [tuple(r) for r in df.collect()]))
        )
    )
    client = env.execute_async(checkpoint_location=str(tmp_path / "ckpt"), trigger="available_now")
    assert client.await_termination(120)
    times = {p["batch_id"]: p["processing_time"] for p in client.recent_progress}
    assert sorted(times) == [0, 1, 2]
    assert out[0] == []  # the timers of batch b fire when batch b + 1 starts
    for b in (1, 2):
        keys = {k for k, _, _ in batches[b - 1]}
        assert sorted(out[b]) == sorted((k, times[b - 1] + 1, 0) for k in keys)


# ------------------------------------------------------------------------------ killed runs
#
# After a crash Spark replays a logged micro-batch with the same input, but a batch it had not
# logged yet may be planned differently (its file source can put two files in one batch), so
# the round boundaries of a killed run can differ from an uninterrupted one. The kill test
# therefore uses a job whose output does not depend on the boundaries: tumbling windows over
# records that are never late (disorder below the out-of-orderness bound). Anything lost or
# processed twice would still change the window sums.

_KILL_SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
import test_streaming
from sparktide.spark.session import get_spark
test_streaming.run_to_parquet(get_spark("local[2]"), {inp!r}, {ckpt!r}, {out!r})
"""


def _in_order_records(files: int, seed: int = 11) -> list[list[tuple[str, int, int]]]:
    rng = random.Random(seed)
    return [
        [
            (f"k{rng.randrange(5)}", i * 100 + rng.randrange(0, OUT_OF_ORDER // 2), i)
            for i in range(f * PER_FILE, (f + 1) * PER_FILE)
        ]
        for f in range(files)
    ]


def run_to_parquet(spark, directory: str, ckpt: str, out: str, parallelism: int = 2) -> None:
    """The job of the kill test (also run by its subprocess, on the default state backend,
    which the ``state_backend`` fixture sets for both)."""
    _stream(spark, directory, "windows", parallelism, ckpt, sink=ParquetBatchSink(out))


def _read_parquet(spark, out) -> list[tuple]:
    return sorted((r["key"], r["ts"], r["v"]) for r in spark.read.parquet(str(out)).collect())


def _last_commit(commits) -> int:
    names = os.listdir(commits) if commits.exists() else []
    return max((int(n[:-5]) for n in names if n.endswith(".json")), default=-1)


@pytest.mark.usefixtures("state_backend")
def test_killed_runs_resume_without_loss_or_duplicates(spark, tmp_path) -> None:
    import signal
    import subprocess
    import sys
    import time

    batches = _in_order_records(6)
    _write_files(tmp_path / "in", batches)
    ckpt, out = tmp_path / "ckpt", tmp_path / "out"
    script = tmp_path / "job.py"
    tests = os.path.dirname(os.path.abspath(__file__))
    script.write_text(
        _KILL_SCRIPT.format(tests=tests, inp=str(tmp_path / "in"), ckpt=str(ckpt), out=str(out))
    )
    rng = random.Random(3)
    commits = ckpt / "commits"
    kills = 0
    for _ in range(2):  # SIGKILL at a random point after the run commits a batch
        proc = subprocess.Popen([sys.executable, str(script)], start_new_session=True)
        before = _last_commit(commits)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and proc.poll() is None:
            if _last_commit(commits) > before:
                break
            time.sleep(0.05)
        time.sleep(rng.uniform(0.0, 2.0))
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            kills += 1
        proc.wait()
    # the last run rescales (3 subtasks where the killed runs had 2)
    run_to_parquet(spark, str(tmp_path / "in"), str(ckpt), str(out), parallelism=3)
    assert kills >= 1
    expected = _fired_before_end(
        "windows", _reference("windows", batches), _final_watermark(batches)
    )
    assert _read_parquet(spark, out) == sorted(expected)
