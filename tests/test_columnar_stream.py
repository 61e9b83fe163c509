"""The columnar path of a streaming window aggregate equals the per-record path, batch by
batch, order included, and restores from either path's checkpoint.

Each job runs over a file stream (one micro-batch per file) twice, with
``SPARKTIDE_COLUMNAR=off`` and on; the inputs are random, with late records, allowed lateness,
a late side output, two splits, parallelism 1 and 2.
"""

from __future__ import annotations

import json
import os
import random

import pytest

from sparktide.common import Duration, Time, Types
from sparktide.common.watermark_strategy import WatermarkStrategy
from sparktide.core.output_tag import OutputTag
from sparktide.core.window.aggregates import Agg
from sparktide.datastream import StreamExecutionEnvironment
from sparktide.datastream.window import SlidingEventTimeWindows, TumblingEventTimeWindows
from sparktide.spark.streaming import ForeachBatchSink

SCHEMA = "key string, part long, ts long, v long, x double"
EVENT = Types.ROW_NAMED(
    ["key", "part", "ts", "v", "x"],
    [Types.STRING(), Types.LONG(), Types.LONG(), Types.LONG(), Types.DOUBLE()],
)
LATE = OutputTag("late", EVENT)


def _batches(rng: random.Random, files: int, per_file: int) -> list[list[dict[str, object]]]:
    """Rows in rising time with jitter, some far behind (late), and null values."""
    out = []
    clock = 0
    for _ in range(files):
        rows = []
        for _ in range(per_file):
            clock += rng.randrange(0, 90)
            behind = rng.randrange(1_000, 4_000) if rng.random() < 0.15 else rng.randrange(300)
            ts = clock - behind
            rows.append(
                {
                    "key": f"k{rng.randrange(6)}",
                    "part": rng.randrange(4),
                    "ts": ts,
                    "v": None if rng.random() < 0.1 else rng.randrange(-50, 100),
                    "x": rng.randrange(0, 64) / 4,
                }
            )
        out.append(rows)
    return out


def _write(directory, batches, first: int = 0) -> None:
    os.makedirs(directory, exist_ok=True)
    for f, rows in enumerate(batches, start=first):
        path = os.path.join(directory, f"part-{f:04d}.json")
        with open(path + ".tmp", "w") as out:
            for row in rows:
                out.write(json.dumps(row) + "\n")
        os.replace(path + ".tmp", path)
        os.utime(path, (1_700_000_000 + f, 1_700_000_000 + f))  # the file source's order


@pytest.fixture
def paths(monkeypatch):
    """The path each run took: True for columnar (the driver's path choice, and the columnar
    run it built)."""
    import sparktide.spark.streaming as streaming
    from sparktide.runtime.execution.path import ExecutionPath

    taken: list[bool] = []
    build = streaming.columnar_stream

    def spy(plan, choice):
        found = build(plan, choice)
        assert (found is not None) == (choice.path is ExecutionPath.COLUMNAR_STREAM)
        taken.append(found is not None)
        return found

    monkeypatch.setattr(streaming, "columnar_stream", spy)
    return taken


def _run(
    spark, directory, ckpt, parallelism: int, sliding: bool, lateness: int, variant: str = "agg"
):
    """Run the stream until the files are done; per sink, batch id -> rows. ``variant``:
    ``agg`` (named aggregates over two splits with a late side output), ``plain`` (one split,
    monotonous timestamps, integer keys, a double field, no late side output), ``sum`` or
    ``max_by`` (Flink's record)."""
    plain = variant == "plain"
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(parallelism)
    frame = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(directory))
    if plain:
        strategy = WatermarkStrategy.for_monotonous_timestamps()
        stream = env.from_stream(frame, strategy, timestamp_column="ts")
    else:
        strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(300))
        stream = env.from_stream(
            frame, strategy, timestamp_column="ts", split_by="part", num_splits=2
        )
    window = (
        SlidingEventTimeWindows.of(Time.milliseconds(1_000), Time.milliseconds(250))
        if sliding
        else TumblingEventTimeWindows.of(Time.milliseconds(500))
    )
    if plain:
        windowed = stream.key_by("part").window(window)
        windowed = windowed.allowed_lateness(Time.milliseconds(lateness))
        counts = windowed.agg(
            n=Agg.count(), total=Agg.sum("x"), high=Agg.max("x"), mean=Agg.avg("x")
        )
    else:
        windowed = (
            stream.key_by("key")
            .window(window)
            .allowed_lateness(Time.milliseconds(lateness))
            .side_output_late_data(LATE)
        )
        if variant == "sum":
            counts = windowed.sum("part")
        elif variant == "max_by":
            counts = windowed.max_by("x")
        else:
            counts = windowed.agg(
                n=Agg.count(), total=Agg.sum("v"), low=Agg.min("v"), mean=Agg.avg("v")
            )
    out: dict[str, dict[int, list[tuple]]] = {"main": {}}

    def sink(name):
        def collect(df, batch_id):
            out[name][batch_id] = [tuple(r) for r in df.collect()]

        return ForeachBatchSink(collect)

    counts.sink_to(sink("main"))
    result = env.execute(checkpoint_location=str(ckpt), trigger="available_now")
    return out, result.metrics


@pytest.mark.parametrize(
    ("parallelism", "sliding", "lateness", "seed", "variant"),
    [
        (1, False, 400, 1, "agg"),
        (2, True, 700, 2, "agg"),
        (2, False, 0, 3, "plain"),
        (2, True, 400, 4, "sum"),
        (1, False, 300, 5, "max_by"),
    ],
)
def test_columnar_stream_equals_the_per_record_stream(
    spark, tmp_path, monkeypatch, paths, parallelism, sliding, lateness, seed, variant
) -> None:
    batches = _batches(random.Random(seed), 3, 80)
    _write(tmp_path / "in", batches)
    monkeypatch.setenv("SPARKTIDE_COLUMNAR", "off")
    general, general_metrics = _run(
        spark, tmp_path / "in", tmp_path / "c1", parallelism, sliding, lateness, variant
    )
    monkeypatch.setenv("SPARKTIDE_COLUMNAR", "on")
    columnar, columnar_metrics = _run(
        spark, tmp_path / "in", tmp_path / "c2", parallelism, sliding, lateness, variant
    )
    assert paths == [False, True]
    assert sorted(general["main"]) == [0, 1, 2]
    assert columnar == general  # x is a multiple of 1/4: its float sums are exact
    late = "late_records_dropped" if variant == "plain" else "late_records_side_output"
    assert general_metrics[late] > 0
    assert columnar_metrics == general_metrics


@pytest.mark.usefixtures("state_backend")  # on RocksDB: native chains, then heap ones
def test_paths_and_parallelism_switch_between_runs_on_one_checkpoint(
    spark, tmp_path, monkeypatch, paths
) -> None:
    batches = _batches(random.Random(5), 3, 80)  # a micro-batch per run
    _write(tmp_path / "all", batches)
    monkeypatch.setenv("SPARKTIDE_COLUMNAR", "off")
    reference, _ = _run(spark, tmp_path / "all", tmp_path / "c0", 2, True, 500)
    got: dict[int, list[tuple]] = {}
    runs = [("on", 1), ("off", 2), ("on", 2)]  # restarted twice: other path, rescaled
    for i, (switch, parallelism) in enumerate(runs):
        _write(tmp_path / "in", batches[i : i + 1], first=i)
        monkeypatch.setenv("SPARKTIDE_COLUMNAR", switch)
        out, _ = _run(spark, tmp_path / "in", tmp_path / "ckpt", parallelism, True, 500)
        assert sorted(out["main"]) == [i]
        got.update(out["main"])
    assert paths == [False, True, False, True]
    assert got == reference["main"]


_KILL_SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
import test_columnar_stream
from sparktide.spark.session import get_spark
test_columnar_stream.run_to_parquet(get_spark("local[2]"), {inp!r}, {ckpt!r}, {out!r})
"""


def run_to_parquet(spark, directory: str, ckpt: str, out: str) -> None:
    """The job of the kill test (also run by its subprocess): counts and sums per key and
    tumbling window, to Parquet, on the columnar path unless switched off."""
    from sparktide.spark.streaming import ParquetBatchSink

    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(2)
    frame = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(directory)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(300))
    stream = env.from_stream(frame, strategy, timestamp_column="ts", split_by="part", num_splits=2)
    windowed = stream.key_by("key").window(TumblingEventTimeWindows.of(Time.milliseconds(500)))
    windowed.agg(n=Agg.count(), total=Agg.sum("v")).sink_to(ParquetBatchSink(out))
    env.execute(checkpoint_location=ckpt, trigger="available_now")


def test_killed_columnar_runs_resume_without_loss_or_duplicates(
    spark, tmp_path, monkeypatch
) -> None:
    import signal
    import subprocess
    import sys
    import time

    # in order within the out-of-orderness bound: the output does not depend on where a
    # killed run's batches end (a batch Spark had not logged may take two files)
    rng = random.Random(9)
    batches = [
        [
            {"key": f"k{rng.randrange(4)}", "part": rng.randrange(4), "ts": t, "v": t % 7}
            for t in range(f * 1_000, (f + 1) * 1_000, 25)
        ]
        for f in range(6)
    ]
    _write(tmp_path / "in", batches)
    ckpt, out = tmp_path / "ckpt", tmp_path / "out"
    script = tmp_path / "job.py"
    tests = os.path.dirname(os.path.abspath(__file__))
    script.write_text(
        _KILL_SCRIPT.format(tests=tests, inp=str(tmp_path / "in"), ckpt=str(ckpt), out=str(out))
    )
    commits = ckpt / "commits"

    def last_commit() -> int:
        names = os.listdir(commits) if commits.exists() else []
        return max((int(n[:-5]) for n in names if n.endswith(".json")), default=-1)

    kills = 0
    env = {k: v for k, v in os.environ.items() if k != "SPARKTIDE_COLUMNAR"}
    for _ in range(2):  # SIGKILL at a random point after the run commits a batch (once)
        proc = subprocess.Popen([sys.executable, str(script)], start_new_session=True, env=env)
        before = last_commit()
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and proc.poll() is None:
            if last_commit() > before:
                break
            time.sleep(0.05)
        time.sleep(rng.uniform(0.0, 1.5))
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            kills += 1
        proc.wait()
        if kills:
            break
    assert kills == 1
    run_to_parquet(spark, str(tmp_path / "in"), str(ckpt), str(out))
    monkeypatch.setenv("SPARKTIDE_COLUMNAR", "off")  # the per-record path, uninterrupted
    run_to_parquet(spark, str(tmp_path / "in"), str(tmp_path / "c2"), str(tmp_path / "o2"))

    def rows(path) -> list[tuple]:  # without the batch directory's column: it may differ
        frame = spark.read.parquet(str(path)).select("key", "window_start", "n", "total")
        return sorted(tuple(r) for r in frame.collect())

    assert rows(out) == rows(tmp_path / "o2")
