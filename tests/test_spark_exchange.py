"""Entries cross Spark's exchanges by columns and are ordered by a vectorized sort: a keyed job
with late data, state, event-time timers, a window, a second exchange and a union of inputs of
two depths gives exactly the local runtime's output, order included, at parallelism 1, 2, 4."""

from __future__ import annotations

import random

import pytest

from sparktide.common import Time
from sparktide.common.typeinfo import Types
from sparktide.common.types import Row
from sparktide.common.watermark_strategy import WatermarkStrategy
from sparktide.datastream import KeyedProcessFunction, OutputTag, StreamExecutionEnvironment
from sparktide.datastream.source import CollectionSource
from sparktide.datastream.state import MapStateDescriptor, ValueStateDescriptor
from sparktide.datastream.window import TumblingEventTimeWindows

LATE = OutputTag(
    "late", Types.ROW_NAMED(["k", "t", "v"], [Types.STRING(), Types.LONG(), Types.LONG()])
)
EVENT = Types.ROW_NAMED(["k", "t", "v"], [Types.STRING(), Types.LONG(), Types.LONG()])


@pytest.fixture(scope="module", autouse=True)
def _spark_session(spark):
    return spark


def events(seed: int, n: int = 300) -> list[tuple[str, int, int]]:
    """Keyed events, a fifth of them far behind the others (late at the watermark)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        lag = rng.randrange(200, 400) if rng.random() < 0.2 else rng.randrange(30)
        out.append((f"k{rng.randrange(6)}", max(0, i * 10 - lag), i))
    return out


class Totals(KeyedProcessFunction):
    """Per key a map of counts per value class and an event-time timer; late records aside."""

    def open(self, rc):
        self.counts = rc.get_map_state(MapStateDescriptor("counts", Types.LONG(), Types.LONG()))
        self.fired = rc.get_state(ValueStateDescriptor("fired", Types.LONG()))

    def process_element(self, value, ctx):
        if ctx.timestamp() <= ctx.timer_service().current_watermark():
            yield LATE, value
            return
        c = value.v % 3
        self.counts.put(c, (self.counts.get(c) or 0) + 1)
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 40)

    def on_timer(self, timestamp, ctx):
        self.fired.update((self.fired.value() or 0) + 1)
        counts = sorted(self.counts.items())
        yield ctx.get_current_key(), timestamp, str(counts), self.fired.value()


def job(env, seed: int):
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        lambda e, _ts: e[1]
    )
    source = env.from_source(CollectionSource(events(seed), num_splits=3), strategy, "events")
    rows = source.map(lambda e: Row(k=e[0], t=e[1], v=e[2]), output_type=EVENT)
    totals = rows.key_by(lambda r: r.k).process(Totals(), output_type=Types.PICKLED_BYTE_ARRAY())
    late = totals.get_side_output(LATE)
    windowed = (
        rows.key_by(lambda r: r.k)
        .window(TumblingEventTimeWindows.of(Time.milliseconds(100)))
        .reduce(lambda a, b: Row(k=a.k, t=max(a.t, b.t), v=a.v + b.v), output_type=EVENT)
    )
    # a second exchange whose input mixes positions of two depths: rows of the source stage
    # and outputs of the keyed stages (late rows, window results)
    sampled = rows.filter(lambda r: r.v % 11 == 0)
    mixed = late.union(windowed, sampled).key_by(lambda r: r.v % 4)
    resummed = mixed.reduce(lambda a, b: Row(k=b.k, t=b.t, v=a.v + b.v))
    return totals.map(lambda t: ("totals", *t)).union(resummed.map(lambda r: ("window", *r)))


def run(seed: int, runtime: str, parallelism: int) -> list:
    env = StreamExecutionEnvironment.get_execution_environment(runtime=runtime)
    env.set_parallelism(parallelism)
    env.get_config().set_watermark_every(9)
    return list(job(env, seed).execute_and_collect())


@pytest.mark.parametrize("seed", [3])
def test_a_keyed_job_with_late_data_equals_the_local_runtime(seed: int, monkeypatch) -> None:
    from sparktide.spark.executor import SparkExecutor

    expected = run(seed, "local", 1)
    assert any(r[0] == "totals" for r in expected) and any(r[0] == "window" for r in expected)
    for p in (1, 2, 4):
        assert run(seed, "local", p) == expected, f"local, parallelism {p}"
        if p != 2:
            assert run(seed, "spark", p) == expected, f"spark, parallelism {p}"
    # small chunks and buffers: a subtask cuts overlapping runs chunk by chunk
    monkeypatch.setattr(SparkExecutor, "chunk_items", 7)
    monkeypatch.setattr(SparkExecutor, "flush_items", 40)
    assert run(seed, "spark", 2) == expected, "spark, parallelism 2"
