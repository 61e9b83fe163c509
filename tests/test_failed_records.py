"""``with_failed_records(tag)``: a record whose user function raised goes to a side output
with its error, counted in the metrics, and the keyed state and timers the failed call changed
are rolled back; without it the first error fails the job."""

from __future__ import annotations

import pytest

from conftest import csv_stream
from sparktide.common import Types
from sparktide.common.watermark_strategy import WatermarkStrategy
from sparktide.datastream import (
    KeyedProcessFunction,
    OutputTag,
    StreamExecutionEnvironment,
)
from sparktide.datastream.state import ValueStateDescriptor

FAILED = OutputTag("failed")


class CountAndTimer(KeyedProcessFunction):
    """Counts records per key in state, sets a timer per record, emits, then raises on 'bad'."""

    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.INT()))

    def process_element(self, value, ctx):
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        ctx.timer_service().register_event_time_timer(value[1] + 100)
        yield ("seen", value[0], n)
        if value[0] == "bad":
            raise ValueError(f"bad record {value[0]}")

    def on_timer(self, timestamp, ctx):
        yield ("timer", ctx.get_current_key(), timestamp, self.count.value())


def _job(runtime: str, policy: bool):
    env = StreamExecutionEnvironment.get_execution_environment(runtime=runtime)
    env.set_parallelism(2)
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        lambda v, previous: v[1]
    )
    records = [("a", 1000), ("bad", 2000), ("b", 3000), ("c", 1500)]
    keyed = (
        env.from_collection(records)
        .assign_timestamps_and_watermarks(strategy)
        .key_by(lambda v: "k" if v[0] != "c" else "other")
    )
    main = keyed.process(CountAndTimer()).name("counter")
    if policy:
        main = main.with_failed_records(FAILED)
    return env, main


def _describe(f):
    return ("failed", f.value, f.timestamp, f.operator, f.key, f.error_type, f.error_message)


@pytest.mark.parametrize("runtime", ["local", "spark"])
def test_failed_record_goes_to_the_side_output_and_is_rolled_back(runtime, request) -> None:
    if runtime == "spark":
        request.getfixturevalue("spark")
    _, main = _job(runtime, policy=True)
    side = main.get_side_output(FAILED).map(_describe)
    out = sorted(main.union(side).execute_and_collect(), key=repr)
    assert out == sorted(
        [
            ("seen", "a", 1),
            ("seen", "b", 2),  # the failed record's count is not in the state
            ("seen", "c", 1),
            ("timer", "k", 1100, 2),
            ("timer", "k", 3100, 2),  # no timer at 2100: the failed call's timer is gone
            ("timer", "other", 1600, 1),
            ("failed", ("bad", 2000), 2000, "counter", "k", "ValueError", "bad record bad"),
        ],
        key=repr,
    )


def test_failed_records_are_counted_in_the_metrics(capsys) -> None:
    env, main = _job("local", policy=True)
    main.get_side_output(FAILED).map(lambda f: f.value).print()
    result = env.execute()
    assert result.metrics["failed_records"] == 1
    assert "('bad', 2000)" in capsys.readouterr().out


def test_spark_metrics_count_failed_records(spark) -> None:
    env, main = _job("spark", policy=True)
    main.print()
    result = env.execute()
    assert result.metrics["failed_records"] == 1


@pytest.mark.parametrize("runtime", ["local", "spark"])
def test_default_stays_fail_fast(runtime, request) -> None:
    if runtime == "spark":
        request.getfixturevalue("spark")
    _, main = _job(runtime, policy=False)
    with pytest.raises(ValueError, match="bad record bad"):
        main.execute_and_collect()


def test_with_failed_records_needs_an_output_tag() -> None:
    _, main = _job("local", policy=False)
    with pytest.raises(TypeError, match="OutputTag"):
        main.with_failed_records("failed")


def test_spark_streaming_routes_failed_records_and_commits(spark, tmp_path) -> None:
    frame = csv_stream(
        spark, tmp_path / "in", "k string, ts long", "k,ts\na,1000\nbad,2000\nb,3000\n"
    )
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    stream = env.from_stream(frame, timestamp_column="ts").map(
        lambda r: (r.k, r.ts), output_type=Types.TUPLE([Types.STRING(), Types.LONG()])
    )
    main = stream.key_by(lambda v: "k").process(CountAndTimer()).name("counter")
    main = main.with_failed_records(FAILED)
    seen: dict[int, list] = {}
    failed: dict[int, list] = {}
    main.map(repr, output_type=Types.STRING()).foreach_batch(
        lambda df, b: seen.setdefault(b, []).extend(r[0] for r in df.collect())
    )
    main.get_side_output(FAILED).map(
        lambda f: f"{f.value} {f.error_type}", output_type=Types.STRING()
    ).foreach_batch(lambda df, b: failed.setdefault(b, []).extend(r[0] for r in df.collect()))
    client = env.execute_async(checkpoint_location=str(tmp_path / "ckpt"), trigger="available_now")
    client.await_termination()
    assert failed == {0: ["('bad', 2000) ValueError"]}
    assert sorted(seen[0]) == ["('seen', 'a', 1)", "('seen', 'b', 2)"]
    assert client.last_committed_batch() == 0
    assert client.recent_progress[0]["failed_records"] == 1


def test_a_stateless_map_routes_its_failed_records() -> None:
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    parsed = env.from_collection(["1", "x", "3"]).map(int).with_failed_records(FAILED)
    side = parsed.get_side_output(FAILED).map(lambda f: (f.value, f.key, f.error_type))
    out = parsed.map(lambda v: ("ok", v)).union(side).execute_and_collect()
    assert sorted(out, key=repr) == [("ok", 1), ("ok", 3), ("x", None, "ValueError")]


@pytest.mark.usefixtures("state_backend")
def test_a_window_reduce_that_raises_leaves_the_window_as_it_was() -> None:
    from sparktide.common import Time
    from sparktide.datastream.window import TumblingEventTimeWindows

    def add(a, b):
        if b[1] < 0:
            raise ValueError("negative")
        return (a[0], a[1] + b[1], max(a[2], b[2]))

    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        lambda v, previous: v[2]
    )
    records = [("k", 1, 100), ("k", -5, 200), ("k", 2, 300), ("k", 4, 1500)]
    summed = (
        env.from_collection(records)
        .assign_timestamps_and_watermarks(strategy)
        .key_by(lambda v: v[0])
        .window(TumblingEventTimeWindows.of(Time.seconds(1)))
        .reduce(add)
        .with_failed_records(FAILED)
    )
    failed = summed.get_side_output(FAILED).map(lambda f: ("failed", f.value))
    out = summed.union(failed).execute_and_collect()
    assert sorted(out, key=repr) == sorted(
        [("k", 3, 300), ("k", 4, 1500), ("failed", ("k", -5, 200))], key=repr
    )
