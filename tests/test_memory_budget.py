"""A task's buffer budget (``ExecutionConfig.set_task_buffer``) bounds what it holds, never
what it computes: a round or micro-batch larger than the budget gives the same output."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparktide.common import Duration, Row, Time, Types
from sparktide.common.watermark_strategy import WatermarkStrategy
from sparktide.datastream import StreamExecutionEnvironment
from sparktide.datastream.window import TumblingEventTimeWindows
from test_dataframes import ALARM, Alarm
from test_streaming import (
    EVENT,
    _final_watermark,
    _fired_before_end,
    _flatten,
    _records,
    _reference,
    _stream,
    _write_files,
)

COUNTS = Types.ROW_NAMED(["key", "at", "count"], [Types.STRING(), Types.LONG(), Types.LONG()])


def _local_job(rows_per_source: list[list[tuple[str, int]]], parallelism: int, budget: int | None):
    """Keyed timers, then a window over their output: two exchange stages after a union of one
    split per source, read in one round (no ``watermark_every``)."""
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    env.set_parallelism(parallelism)
    env.get_config().set_task_buffer(budget)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(300)
    ).with_timestamp_assigner(lambda r, _: r.ts)
    streams = [
        env.from_collection(
            [Row(key=k, ts=t, v=i) for i, (k, t) in enumerate(rows)], type_info=EVENT
        ).assign_timestamps_and_watermarks(strategy)
        for rows in rows_per_source
    ]
    union = streams[0].union(*streams[1:]) if len(streams) > 1 else streams[0]
    alarms = union.key_by(lambda r: r.key).process(Alarm(), output_type=ALARM)
    counted = (
        alarms.key_by(lambda a: a.key)
        .window(TumblingEventTimeWindows.of(Time.milliseconds(2_000)))
        .reduce(
            lambda a, b: Row(key=a.key, at=max(a.at, b.at), count=a.count + b.count),
            output_type=COUNTS,
        )
    )
    return [tuple(r) for r in counted.execute_and_collect()]


@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    sources=st.integers(1, 3),
    parallelism=st.integers(1, 3),
    budget=st.integers(1, 50),
)
def test_local_round_larger_than_the_budget_gives_the_same_output(
    seed: int, sources: int, parallelism: int, budget: int
) -> None:
    rng = random.Random(seed)
    rows = [
        [(f"k{rng.randrange(6)}", i * 37 + rng.randrange(400)) for i in range(rng.randrange(120))]
        for _ in range(sources)
    ]
    expected = _local_job(rows, 1, None)
    assert _local_job(rows, parallelism, budget) == expected


def test_task_buffer_must_be_a_positive_int() -> None:
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    with pytest.raises(ValueError, match="entries must be an int >= 1 or None"):
        env.get_config().set_task_buffer(0)


@pytest.mark.parametrize("job", ["timers", "windows"])
def test_stream_batch_larger_than_the_budget_equals_the_bounded_run(
    spark, tmp_path, monkeypatch, job
) -> None:
    """Micro-batches of 30 records through tasks that hold 7 entries at a time: split tasks
    ship while reading and subtasks merge their input chunk by chunk."""
    from sparktide.datastream.environment import ExecutionConfig

    batches = _records(3)
    _write_files(tmp_path / "in", batches)
    with monkeypatch.context() as patched:
        patched.setattr(ExecutionConfig, "get_task_buffer", lambda self: 7)
        out, _ = _stream(spark, tmp_path / "in", job, 2, tmp_path / "ckpt")
    reference = _reference(job, batches)
    assert _flatten(out) == _fired_before_end(job, reference, _final_watermark(batches))
