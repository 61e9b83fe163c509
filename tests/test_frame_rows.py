"""Typed ``to_dataframe()`` frames on Spark in one pass (:mod:`sparktide.spark.frame_rows`): the
task that produces a sink's records writes them as typed columns, and the frame is a filter and
select of its rows. The frames equal the local runtime's ``execute_and_collect`` (in order when
ordered) on random input with late data, a user function's failure fails them with its message,
and the plan holds one Python ``mapInArrow`` per producing stage."""

from __future__ import annotations

import contextlib
import io
import random
from functools import reduce

import pytest

from sparktide.common import Duration, Row, Time, Types
from sparktide.common.watermark_strategy import WatermarkStrategy
from sparktide.datastream import OutputTag, StreamExecutionEnvironment
from sparktide.datastream.window import TumblingEventTimeWindows

EVENT = Types.ROW_NAMED(["key", "ts", "v"], [Types.STRING(), Types.LONG(), Types.LONG()])
LATE = OutputTag("late", EVENT)


def _events(seed: int, n: int) -> list[tuple[str, int, int]]:
    """Keyed events, mostly in time order, some far behind the watermark (late)."""
    rng = random.Random(seed)
    events = []
    for i in range(n):
        late = rng.random() < 0.1
        ts = i * 50 + (rng.randrange(-6_000, -2_000) if late else rng.randrange(0, 800))
        events.append((f"k{rng.randrange(5)}", max(ts, 0), rng.randrange(-50, 50)))
    return events


def _env(runtime: str, parallelism: int) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment(runtime=runtime)
    env.set_parallelism(parallelism)
    env.get_config().set_watermark_every(17)
    return env


def _streams(env, df):
    """A map/filter chain, a keyed window's output and its late records, all of ``EVENT``."""
    source = env.from_dataframe(
        df,
        WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(1_000)),
        timestamp_column="ts",
    )
    chain = source.map(lambda r: Row(key=r.key, ts=r.ts, v=r.v * 3), EVENT).filter(
        lambda r: r.v % 2 == 0
    )
    windowed = (
        source.key_by(lambda r: r.key)
        .window(TumblingEventTimeWindows.of(Time.seconds(1)))
        .side_output_late_data(LATE)
        .reduce(lambda a, b: Row(key=a.key, ts=max(a.ts, b.ts), v=a.v + b.v), output_type=EVENT)
    )
    return {"chain": chain, "window": windowed, "late": windowed.get_side_output(LATE)}


@pytest.mark.parametrize("parallelism", [1, 2, 4])
def test_typed_frames_equal_the_local_runtime(spark, parallelism) -> None:
    from pyspark.sql import functions as F

    events = _events(seed=parallelism, n=400 + 37 * parallelism)
    df = spark.createDataFrame(events, "key string, ts long, v long").repartition(3)
    expected = {
        name: [tuple(r) for r in stream.execute_and_collect()]
        for name, stream in _streams(_env("local", parallelism), df).items()
    }
    assert expected["late"] and expected["window"]  # the input has late records
    frames = []
    got: dict[str, list[tuple]] = {}
    for name, stream in _streams(_env("spark", parallelism), df).items():
        for ordered in (True, False):
            case = f"{name} {'ordered' if ordered else 'unordered'}"
            frame = stream.to_dataframe(ordered=ordered)
            if name == "chain" and not ordered:
                # its rows are the source tasks' own output, whose task i runs split i: not in
                # a union, which would shift the task ids
                got[case] = [tuple(r) for r in frame.collect()]
            else:
                frames.append(frame.withColumn("case", F.lit(case)))
    for row in reduce(lambda a, b: a.unionByName(b), frames).collect():  # one Spark job
        got.setdefault(row["case"], []).append((row["key"], row["ts"], row["v"]))
    for name, records in expected.items():
        assert got.get(f"{name} ordered", []) == records, name
        assert sorted(got.get(f"{name} unordered", [])) == sorted(records), name


def _parse(v: int) -> int:
    if v == 3:
        raise ValueError(f"bad value {v}")
    return v


@pytest.mark.parametrize("ordered", [True, False])
def test_a_user_functions_failure_fails_the_frame(spark, ordered) -> None:
    env = _env("spark", 2)
    frame = (
        env.from_collection([1, 2, 3, 4])
        .map(_parse, Types.INT())  # in the task that produces the frame's records
        .to_dataframe(ordered=ordered)
    )
    with pytest.raises(Exception, match="bad value 3") as caught:
        frame.collect()
    assert "operator 'Map'" in str(caught.value)


def _python_passes(frame) -> int:
    """How many Python ``mapInArrow`` nodes the frame's physical plan holds."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        frame.explain()
    plan = out.getvalue()
    assert "Physical Plan" in plan
    return plan.count("MapInArrow")


def test_a_typed_frame_has_one_python_pass_per_producing_stage(spark) -> None:
    df = spark.createDataFrame(_events(seed=1, n=20), "key string, ts long, v long")
    streams = _streams(_env("spark", 2), df)
    for ordered in (True, False):
        assert _python_passes(streams["chain"].to_dataframe(ordered=ordered)) == 1
        assert _python_passes(streams["window"].to_dataframe(ordered=ordered)) == 2


def test_records_held_as_columns_are_written_as_they_are_or_as_their_values() -> None:
    """An unordered target's values and column batches, in their order; a batch of other Arrow
    types is written from its values (with the error a value that does not fit gets)."""
    import pyarrow as pa

    from sparktide.runtime.operators.simple import ColumnValues
    from sparktide.spark.frame_rows import FrameRows, FrameTarget

    pair = Types.ROW_NAMED(["w", "n"], [Types.STRING(), Types.LONG()])
    rows = FrameRows((FrameTarget(3, pair, False),), 0)
    typed = pa.record_batch({"w": ["b", None], "n": pa.array([2, 3], pa.int64())})
    narrow = pa.record_batch({"w": ["d"], "n": pa.array([5], pa.int32())})
    out = [Row(w="a", n=1), ColumnValues(typed), Row(w="c", n=4), ColumnValues(narrow)]
    batches = rows.collected(3, out)
    assert [b.num_rows for b in batches] == [1, 2, 1, 1]
    written = pa.Table.from_batches(batches).select(["_f0_0", "_f0_1"]).to_pydict()
    assert written == {"_f0_0": ["a", "b", None, "c", "d"], "_f0_1": [1, 2, 3, 4, 5]}
    assert rows.collected(3, [])[0].num_rows == 0
    wrong = pa.record_batch({"w": [1.5], "n": pa.array([5], pa.int64())})
    with pytest.raises(TypeError, match="w"):
        rows.collected(3, [ColumnValues(wrong)])
