"""Operator state and watermarks are restored by operator identity (``uid`` or the operator's
place in the job graph), never by process-wide node ids; a checkpointed operator without a
match stops the run unless ``allow_non_restored_state=True``."""

from __future__ import annotations

import json
import os

import pytest

from sparktide.common import Duration, Row, Time, Types
from sparktide.common.watermark_strategy import WatermarkStrategy
from sparktide.datastream import StreamExecutionEnvironment
from sparktide.datastream.window import TumblingEventTimeWindows
from sparktide.runtime.graph import OperatorNode
from sparktide.runtime.operator_identity import operator_identities
from sparktide.spark.checkpoint import CheckpointError
from sparktide.spark.streaming import ForeachBatchSink

EVENT = Types.ROW_NAMED(["key", "ts", "v"], [Types.STRING(), Types.LONG(), Types.LONG()])
SCHEMA = "key string, ts long, v long"
# batch 0 moves the watermark to 9_499; in batch 1, ("a", 1_000) is late (its window
# [0, 2_000) fired in batch 0) and must be dropped, and the watermark moves to 12_499
FILES = [
    [("a", 100, 1), ("a", 5_000, 2), ("b", 10_000, 3)],
    [("a", 1_000, 10), ("b", 10_500, 4), ("b", 13_000, 5)],
]


def _write(directory, index: int) -> None:
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"part-{index:04d}.json")
    with open(path + ".tmp", "w") as out:
        for key, ts, v in FILES[index]:
            out.write(json.dumps({"key": key, "ts": ts, "v": v}) + "\n")
    os.replace(path + ".tmp", path)
    os.utime(path, (1_700_000_000 + index, 1_700_000_000 + index))


def _windows(stream, size: int, name: str | None = None, uid: str | None = None):
    out = (
        stream.key_by(lambda r: r.key)
        .window(TumblingEventTimeWindows.of(Time.milliseconds(size)))
        .reduce(lambda a, b: Row(key=a.key, ts=max(a.ts, b.ts), v=a.v + b.v), output_type=EVENT)
    )
    if name is not None:
        out = out.name(name)
    if uid is not None:
        out = out.uid(uid)
    return out


def _strategy() -> WatermarkStrategy:
    return WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(500))


def _run(spark, tmp_path, branches, **options) -> dict[str, list[tuple]]:
    """One streaming run over the files written so far; ``branches``: (label, size, name,
    uid) of window branches over the same source, built in that order."""
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(2)
    frame = (
        spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(tmp_path / "in"))
    )
    stream = env.from_stream(frame, _strategy(), timestamp_column="ts")
    out: dict[str, list[tuple]] = {}
    for label, size, name, uid in branches:

        def collect(df, batch_id, label=label):
            out.setdefault(label, []).extend(tuple(r) for r in df.collect())

        _windows(stream, size, name, uid).sink_to(ForeachBatchSink(collect))
    env.execute(checkpoint_location=str(tmp_path / "ckpt"), trigger="available_now", **options)
    return {label: sorted(rows) for label, rows in out.items()}


def _reference(size: int) -> list[tuple]:
    """The local runtime, one round per file: what the two streamed batches must output."""
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    env.get_config().set_watermark_every(3)
    rows = [Row(key=k, ts=t, v=v) for batch in FILES for k, t, v in batch]
    strategy = _strategy().with_timestamp_assigner(lambda r, _: r.ts)
    stream = env.from_collection(rows, type_info=EVENT).assign_timestamps_and_watermarks(strategy)
    last = max(t for batch in FILES for _, t, _ in batch) - 500 - 1
    fired = [tuple(r) for r in _windows(stream, size).execute_and_collect()]
    return sorted(r for r in fired if (r[1] // size + 1) * size - 1 <= last)


def _both_runs(spark, tmp_path, first, second, **options):
    _write(tmp_path / "in", 0)
    before = _run(spark, tmp_path, first)
    _write(tmp_path / "in", 1)
    after = _run(spark, tmp_path, second, **options)
    labels = set(before) | set(after)
    return {k: sorted(before.get(k, []) + after.get(k, [])) for k in labels}, after


# ------------------------------------------------------------------------------ identities


def _graph(order):
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    stream = env.from_collection([Row(key="a", ts=1, v=1)], type_info=EVENT)
    sinks = {}
    for name in order:
        sinks[name] = _windows(stream, 1000, name=name).print()
    nodes = env.get_stream_graph().reachable_from_sinks()
    identities = operator_identities(nodes)
    return {n.name: identities[n.id] for n in nodes if isinstance(n, OperatorNode)}


def test_identities_do_not_depend_on_build_order_or_process_counters() -> None:
    first = _graph(["A", "B"])
    assert _graph(["A", "B"]) == first  # built again in this process: other node ids
    assert _graph(["B", "A"]) == first  # branches built in another order
    assert len(set(first.values())) == len(first)


def test_duplicate_uids_are_refused() -> None:
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    stream = env.from_collection([1, 2])
    stream.map(lambda x: x).uid("m").print()
    stream.map(lambda x: x + 1).uid("m").print()
    with pytest.raises(ValueError, match="uid 'm' is set on two operators"):
        operator_identities(env.get_stream_graph().reachable_from_sinks())


# ------------------------------------------------------------------------------ restores


def test_same_job_built_twice_in_one_process_restores_its_watermark(spark, tmp_path) -> None:
    job = [("w", 2_000, None, None)]
    out, _ = _both_runs(spark, tmp_path, job, job)
    assert out["w"] == _reference(2_000)
    assert ("a", 1_000, 10) not in out["w"]  # late after the restore: dropped


def test_branches_built_in_another_order_restore_their_own_state(spark, tmp_path) -> None:
    a, b = ("A", 2_000, "A", None), ("B", 4_000, "B", None)
    out, _ = _both_runs(spark, tmp_path, [a, b], [b, a])
    assert out["A"] == _reference(2_000)
    assert out["B"] == _reference(4_000)


def test_checkpointed_operator_without_a_match_is_refused(spark, tmp_path) -> None:
    with pytest.raises(CheckpointError) as info:
        _both_runs(spark, tmp_path, [("w", 2_000, None, "w1")], [("w", 2_000, None, "w2")])
    message = str(info.value)
    assert "uid 'w1'" in message
    assert "allow_non_restored_state=True" in message and ".uid(" in message


def test_allow_non_restored_state_drops_the_unmatched_state(spark, tmp_path) -> None:
    _, after = _both_runs(
        spark,
        tmp_path,
        [("w", 2_000, None, "w1")],
        [("w", 2_000, None, "w2")],
        allow_non_restored_state=True,
    )
    # the new operator starts empty, at no watermark: batch 1 alone
    assert after["w"] == [("a", 1_000, 10), ("b", 10_500, 4)]
