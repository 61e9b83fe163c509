"""A sink with nothing to do per subtask (``ForeachBatchSink`` and the sinks built on it) runs
where its input runs: a stateless stream needs no Spark stage for its sink. Its micro-batches
give exactly what they gave with the sink in a stage of its own (rows, order, batches), at
parallelism 1, 2 and 4, and a checkpoint written with the sink in its own stage restores."""

from __future__ import annotations

import json
import os
import random

import pytest

from sparktide.common import Duration, Row, Types
from sparktide.common.serialization import Encoder
from sparktide.common.watermark_strategy import WatermarkStrategy
from sparktide.datastream import (
    KeyedProcessFunction,
    ProcessFunction,
    StreamExecutionEnvironment,
)
from sparktide.datastream.connectors.file_system import FileSink
from sparktide.datastream.state import ValueStateDescriptor
from sparktide.runtime.execution.planner import plan_job
from sparktide.spark.checkpoint import CheckpointError
from sparktide.spark.stream_sinks import ForeachBatchSink

SCHEMA = "k string, ts long, v long"
SEEN = Types.ROW_NAMED(
    ["k", "v", "ts", "watermark"], [Types.STRING(), Types.LONG(), Types.LONG(), Types.LONG()]
)


class Counted(KeyedProcessFunction):
    """Each record with the count of its key so far (keyed state a restore must bring back)."""

    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        yield Row(k=value.k, v=count, ts=ctx.timestamp(), watermark=value.v)


class Seen(ProcessFunction):
    """Each record with its timestamp and the watermark when it arrived (late ones included:
    the source's bound is below the input's disorder)."""

    def process_element(self, value, ctx):
        if value.v % 7:
            yield Row(
                k=value.k, v=value.v * 3, ts=ctx.timestamp(),
                watermark=ctx.timer_service().current_watermark(),
            )  # fmt: skip


def _files(seed: int, count: int = 3, rows: int = 40) -> list[list[dict]]:
    rng = random.Random(seed)
    out, ts = [], 1_000
    for _ in range(count):
        batch = []
        for _ in range(rows):
            ts += rng.randint(0, 50)
            late = rng.random() < 0.15  # behind the 100 ms bound: late for any window
            batch.append({"k": rng.choice("abcde"), "ts": ts - (400 if late else 0), "v": ts})
        out.append(batch)
    return out


def _write(folder, index: int, rows: list[dict]) -> None:
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"part-{index:04d}.json")
    with open(path + ".tmp", "w") as out:
        out.writelines(json.dumps(r) + "\n" for r in rows)
    os.replace(path + ".tmp", path)
    os.utime(path, (1_700_000_000 + index, 1_700_000_000 + index))


def _run(
    spark, folder, checkpoint, parallelism: int, keyed: bool = False
) -> dict[int, list[tuple]]:
    """A stream of the files in ``folder`` into a ``foreach_batch`` sink, its rows per batch;
    ``keyed``: through a keyed stage of parallelism 1 (the sink at the job's parallelism)."""
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(parallelism)
    frame = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(folder))
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(100))
    out: dict[int, list[tuple]] = {}

    def collect(df, batch_id):
        out[batch_id] = [tuple(r) for r in df.collect()]

    stream = env.from_stream(
        frame, strategy, timestamp_column="ts", split_by="k", num_splits=parallelism
    ).filter(lambda r: r.k != "e")
    if keyed:
        stream = stream.key_by(lambda r: r.k).process(Counted(), output_type=SEEN)
        stream.set_parallelism(1)
    else:
        stream = stream.process(Seen(), output_type=SEEN)
    stream.foreach_batch(collect)
    env.execute(checkpoint_location=str(checkpoint), trigger="available_now")
    return out


def _sinks_in_a_stage(monkeypatch: pytest.MonkeyPatch) -> None:
    """The layout before: the sink in a stage of its own, fed by a rebalance."""
    monkeypatch.setattr(ForeachBatchSink, "split_local", False)


def test_a_foreach_batch_sink_runs_where_its_input_runs(tmp_path) -> None:
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    env.set_parallelism(2)
    stream = env.from_collection([Row(k="a", v=1)]).map(lambda r: r)
    batch_sink = stream.foreach_batch(lambda df, batch_id: None)._node
    keyed = stream.key_by(lambda r: r.k).reduce(lambda a, b: a)
    after_keys = keyed.foreach_batch(print)._node
    lone = stream.key_by(lambda r: r.k).reduce(lambda a, b: b).set_parallelism(1)
    after_lone = lone.foreach_batch(print).set_parallelism(3)._node
    function_sink = lone.add_sink(print)._node
    file_sink = stream.sink_to(
        FileSink.for_row_format(str(tmp_path), Encoder.simple_string_encoder()).build()
    )._node
    plan = plan_job(env.get_stream_graph(), 2, None)
    assert batch_sink.id in plan.source_stage
    assert plan.stage_of[after_keys.id] is plan.stage_of[keyed._node.id]
    assert plan.stage_of[after_lone.id] is plan.stage_of[lone._node.id]  # at any parallelism
    # a sink function sees its subtask and a file sink writes files per subtask: their stages
    assert plan.stage_of[function_sink.id].parallelism == 2
    assert file_sink.id not in plan.source_stage
    assert [len(s.nodes) for s in plan.stages] == [2, 2, 1, 1]


def test_its_batches_are_those_of_the_sink_in_a_stage_of_its_own(
    spark, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = _files(seed=11)
    for i, rows in enumerate(files):
        _write(tmp_path / "in", i, rows)
    for parallelism in (1, 2, 4):
        here = _run(spark, tmp_path / "in", tmp_path / f"here-{parallelism}", parallelism)
        with monkeypatch.context() as patch:
            _sinks_in_a_stage(patch)
            before = _run(spark, tmp_path / "in", tmp_path / f"before-{parallelism}", parallelism)
        assert here == before, parallelism
        assert sorted(here) == [0, 1, 2]
        rows = [r for b in sorted(here) for r in here[b]]
        expected = [r for batch in files for r in batch if r["k"] != "e" and r["v"] % 7]
        assert sorted((k, v // 3) for k, v, _, _ in rows) == sorted(
            (r["k"], r["v"]) for r in expected
        )


@pytest.mark.parametrize("keyed", [False, True], ids=["stateless", "after-a-keyed-stage"])
def test_a_checkpoint_with_the_sink_in_a_stage_of_its_own_restores(
    spark, tmp_path, monkeypatch: pytest.MonkeyPatch, keyed: bool
) -> None:
    files = _files(seed=5)
    whole = tmp_path / "whole"
    for i, rows in enumerate(files):
        _write(whole, i, rows)
    straight = _run(spark, whole, tmp_path / "straight", 2, keyed)

    folder = tmp_path / "in"
    _write(folder, 0, files[0])
    with monkeypatch.context() as patch:
        _sinks_in_a_stage(patch)
        first = _run(spark, folder, tmp_path / "ckpt", 2, keyed)
    _write(folder, 1, files[1])
    _write(folder, 2, files[2])
    rest = _run(spark, folder, tmp_path / "ckpt", 2, keyed)
    assert {**first, **rest} == straight
    if keyed:  # the counts went on from the restored state
        assert max(v for rows in rest.values() for _, v, _, _ in rows) > max(
            v for rows in first.values() for _, v, _, _ in rows
        )


def test_a_stage_of_other_sinks_is_still_an_unmatched_operator(
    spark, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stage a dropped sink had is refused as before: only a sink the job runs where its
    input runs makes its old stage droppable."""
    folder = tmp_path / "in"
    _write(folder, 0, _files(seed=3, count=1)[0])
    with monkeypatch.context() as patch:
        _sinks_in_a_stage(patch)
        _run(spark, folder, tmp_path / "ckpt", 2)
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(2)
    frame = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(folder))
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(100))
    stream = env.from_stream(frame, strategy, timestamp_column="ts", split_by="k", num_splits=2)
    stream.filter(lambda r: r.k != "e").process(Seen(), output_type=SEEN).print()
    with pytest.raises(CheckpointError, match="does not have: 'Sink: Writer'"):
        env.execute(checkpoint_location=str(tmp_path / "ckpt"), trigger="available_now")
