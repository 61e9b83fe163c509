"""The built-in window aggregates on Spark (the general path): the same output as the local
runtime at parallelism 1, 2 and 4 (late records, lateness, side outputs, several splits), typed
columns in ``to_dataframe()``, a DataFrame source keyed by a column, and a streaming run."""

from __future__ import annotations

import json
import os
import random

import pytest

from sparktide.common import Duration
from sparktide.common.typeinfo import Types
from sparktide.common.types import Row
from sparktide.common.watermark_strategy import WatermarkStrategy
from sparktide.datastream import OutputTag, StreamExecutionEnvironment
from sparktide.datastream.source import CollectionSource
from sparktide.datastream.window import (
    Agg,
    EventTimeSessionWindows,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
)
from sparktide.spark.streaming import ForeachBatchSink

EVENT = Types.ROW_NAMED(["user", "ts", "price"], [Types.STRING(), Types.LONG(), Types.INT()])
PAIR = Types.TUPLE([Types.LONG(), Types.STRING()])
LATE = OutputTag("late")


@pytest.fixture(scope="module", autouse=True)
def _spark_session(spark):
    return spark


def events(n: int = 120, seed: int = 5) -> list[Row]:
    rng = random.Random(seed)
    return [
        Row(
            user=f"u{rng.randrange(4)}",
            ts=max(0, i * 10 - rng.choice([0, 0, 5, 30, 90, 250])),
            price=rng.choice([None, -3, 1, 7, 40]),
        )
        for i in range(n)
    ]


def strategy() -> WatermarkStrategy:
    return WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(10)
    ).with_timestamp_assigner(lambda v, _ts: v.ts)


def windowed(env, assigner):
    stream = env.from_source(CollectionSource(events(), num_splits=3), strategy(), "s", EVENT)
    return stream.key_by("user").window(assigner).allowed_lateness(40).side_output_late_data(LATE)


def job_tumbling_agg(env):
    return windowed(env, TumblingEventTimeWindows.of(50)).agg(
        n=Agg.count(), total=Agg.sum("price"), lo=Agg.min("price"), mean=Agg.avg("price")
    )


def job_sliding_count_of_tuples(env):
    stream = env.from_source(CollectionSource(events(), num_splits=3), strategy(), "s", EVENT)
    tuples = stream.map(lambda r: (r.ts, r.user), output_type=PAIR)
    assert tuples.key_by(1).get_key_type() == Types.STRING()
    return (
        tuples.key_by(1)
        .window(SlidingEventTimeWindows.of(100, 25))
        .allowed_lateness(40)
        .side_output_late_data(LATE)
        .count()
    )


def job_sliding_sum(env):
    return windowed(env, SlidingEventTimeWindows.of(60, 20)).sum("ts")


def job_session_agg(env):
    return windowed(env, EventTimeSessionWindows.with_gap(25)).agg(hi=Agg.max("price"))


JOBS = [job_tumbling_agg, job_sliding_count_of_tuples, job_sliding_sum, job_session_agg]


def run(job, runtime: str, parallelism: int) -> tuple[list, list, bool]:
    env = StreamExecutionEnvironment.get_execution_environment(runtime=runtime)
    env.set_parallelism(parallelism)
    env.get_config().set_watermark_every(7)
    result = job(env)
    late = list(result.get_side_output(LATE).execute_and_collect())
    columnar = result.get_transformation().window_aggregate is not None
    return list(result.execute_and_collect()), late, columnar


@pytest.mark.parametrize("job", JOBS, ids=lambda j: j.__name__)
def test_spark_output_equals_local(job) -> None:
    local = run(job, "local", 1)
    assert local[0] and local[1]  # results and late records
    assert local[2] == (job is not job_session_agg)  # the spec is set off sessions only
    for parallelism in (1, 4) if job is job_tumbling_agg else (2,):
        assert run(job, "spark", parallelism) == local


def test_to_dataframe_has_the_named_typed_columns(spark) -> None:
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(2)
    env.get_config().set_watermark_every(7)
    frame = job_tumbling_agg(env).to_dataframe()
    assert frame.columns == ["key", "window_start", "window_end", "n", "total", "lo", "mean"]
    assert [f.dataType.simpleString() for f in frame.schema.fields] == [
        "string", "bigint", "bigint", "bigint", "bigint", "bigint", "double",
    ]  # fmt: skip
    local = run(job_tumbling_agg, "local", 1)[0]
    assert [tuple(r) for r in frame.collect()] == [tuple(r) for r in local]


def test_a_dataframe_source_keyed_by_a_column(spark) -> None:
    rows = [("a", 1_000, 2), ("b", 2_000, 5), ("a", 61_000, 1), ("a", 3_000, 4)]
    df = spark.createDataFrame(rows, "user string, ts long, price int").coalesce(1)
    outputs = []
    for runtime in ("local", "spark"):
        env = StreamExecutionEnvironment.get_execution_environment(runtime=runtime)
        stream = env.from_dataframe(
            df, WatermarkStrategy.for_monotonous_timestamps(), timestamp_column="ts"
        )
        counts = stream.key_by("user").window(TumblingEventTimeWindows.of(60_000)).count()
        assert counts.get_type().get_field_types()[0] == Types.STRING()
        outputs.append(sorted(tuple(r) for r in counts.execute_and_collect()))
    assert (
        outputs[0]
        == outputs[1]
        == [
            ("a", 0, 60_000, 2),
            ("a", 60_000, 120_000, 1),
            ("b", 0, 60_000, 1),
        ]
    )


def test_streaming_count_fires_per_micro_batch_as_the_bounded_run(spark, tmp_path) -> None:
    batches = [events(30, seed=s) for s in range(3)]
    offset = 0
    for b, rows in enumerate(batches):  # later files hold later times
        for r in rows:
            r["ts"] = r.ts + offset
        offset = max(r.ts for r in rows) + 1
        path = tmp_path / "in" / f"part-{b:04d}.json"
        os.makedirs(path.parent, exist_ok=True)
        path.write_text("".join(json.dumps(r.as_dict()) + "\n" for r in rows))
        os.utime(path, (1_700_000_000 + b, 1_700_000_000 + b))

    def job(stream):
        return (
            stream.key_by("user")
            .window(TumblingEventTimeWindows.of(100))
            .agg(n=Agg.count(), s=Agg.sum("price"))
        )

    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(2)
    frame = (
        spark.readStream.schema("user string, ts long, price int")
        .option("maxFilesPerTrigger", 1)
        .json(str(tmp_path / "in"))
    )
    delay = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(10))
    out: dict[int, list[tuple]] = {}

    def collect(df, batch_id):
        out[batch_id] = [tuple(r) for r in df.collect()]

    job(env.from_stream(frame, delay, timestamp_column="ts")).sink_to(ForeachBatchSink(collect))
    env.execute(checkpoint_location=str(tmp_path / "ckpt"), trigger="available_now")

    reference_env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    reference_env.get_config().set_watermark_every(30)
    rows = [r for b in batches for r in b]
    reference = [
        tuple(r)
        for r in job(
            reference_env.from_collection(rows, type_info=EVENT).assign_timestamps_and_watermarks(
                strategy()
            )
        ).execute_and_collect()
    ]
    final_watermark = max(r.ts for r in rows) - 10 - 1
    streamed = [row for b in sorted(out) for row in out[b]]
    assert streamed == [r for r in reference if r[2] - 1 <= final_watermark]
    assert len(streamed) < len(reference)
