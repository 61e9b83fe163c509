"""The same jobs on the local runtime and on Spark (parallelism 1, 2, 4): identical outputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparktide.common import Duration, Time
from sparktide.common.watermark_strategy import WatermarkStrategy
from sparktide.datastream import (
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    OutputTag,
    ProcessWindowFunction,
    StreamExecutionEnvironment,
)
from sparktide.datastream.source import CollectionSource
from sparktide.datastream.state import ValueStateDescriptor
from sparktide.datastream.window import (
    EventTimeSessionWindows,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
)
from tool_modules import load_tool

LATE = OutputTag("late")
REPO = Path(__file__).resolve().parents[1]
PARALLELISMS = (1, 2, 4)


@pytest.fixture(scope="module", autouse=True)
def _spark_session(spark):
    return spark


def events(n: int = 240, keys: int = 5, seed: int = 11) -> list[tuple[str, int, int]]:
    import random

    rng = random.Random(seed)
    return [(f"k{rng.randrange(keys)}", i * 10 + rng.randrange(0, 60), i) for i in range(n)]


def strategy(delay: int = 20) -> WatermarkStrategy:
    return WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(delay)
    ).with_timestamp_assigner(lambda e, _ts: e[1])


def source(env, splits: int = 3, seed: int = 11, delay: int = 20):
    src = CollectionSource(events(seed=seed), num_splits=splits)
    return env.from_source(src, strategy(delay), "s")


class Timers(KeyedProcessFunction):
    def open(self, rc):
        self.total = rc.get_state(ValueStateDescriptor("total", None))

    def process_element(self, value, ctx):
        if ctx.timestamp() <= ctx.timer_service().current_watermark():
            yield LATE, value
            return
        self.total.update((self.total.value() or 0) + value[2])
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 25)

    def on_timer(self, timestamp, ctx):
        yield ctx.get_current_key(), timestamp, self.total.value()


class Describe(ProcessWindowFunction):
    def process(self, key, context, elements):
        w = context.window()
        values = [e[2] for e in elements]
        yield key, w.start, w.end, len(values), sum(values)


class Join(KeyedCoProcessFunction):
    def open(self, rc):
        self.last = rc.get_state(ValueStateDescriptor("last", None))

    def process_element1(self, value, ctx):
        self.last.update(value[2])
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 5)

    def process_element2(self, value, ctx):
        yield "right", ctx.get_current_key(), value[2], self.last.value()

    def on_timer(self, timestamp, ctx):
        yield "timer", ctx.get_current_key(), timestamp


def job_timers(env):
    return source(env).key_by(lambda e: e[0]).process(Timers())


def job_timers_late(env):
    return job_timers(env).get_side_output(LATE)


def job_tumbling_late(env):
    windowed = (
        source(env, delay=0)
        .key_by(lambda e: e[0])
        .window(TumblingEventTimeWindows.of(Time.milliseconds(20)))
        .allowed_lateness(Time.milliseconds(5))
        .side_output_late_data(LATE)
    )
    return windowed.reduce(lambda a, b: (a[0], max(a[1], b[1]), a[2] + b[2]))


def job_tumbling_late_side(env):
    return job_tumbling_late(env).get_side_output(LATE)


def job_sliding(env):
    return (
        source(env)
        .key_by(lambda e: e[0])
        .window(SlidingEventTimeWindows.of(Time.milliseconds(200), Time.milliseconds(50)))
        .process(Describe())
    )


def job_sessions(env):
    return (
        source(env, splits=2)
        .key_by(lambda e: e[0])
        .window(EventTimeSessionWindows.with_gap(Time.milliseconds(40)))
        .process(Describe())
    )


def job_count_windows(env):
    return (
        source(env)
        .key_by(lambda e: e[0])
        .count_window(3)
        .reduce(lambda a, b: (a[0], b[1], a[2] + b[2]))
    )


def job_connect(env):
    left = source(env, splits=2, seed=1)
    right = source(env, splits=1, seed=2)
    return left.connect(right).key_by(lambda e: e[0], lambda e: e[0]).process(Join())


def job_two_stages(env):
    class Rekey(KeyedProcessFunction):
        def process_element(self, value, ctx):
            yield value[2] % 4, ctx.get_current_key(), value[2]

    return (
        source(env)
        .key_by(lambda e: e[0])
        .process(Rekey())
        .key_by(lambda v: v[0])
        .reduce(lambda a, b: (a[0], b[1], a[2] + b[2]))
    )


def job_union_of_keyed_operators(env):
    # two window operators fire at the same watermarks for the same key groups: their outputs
    # tie on position and meet in a union, then in a rebalanced stage
    events = source(env)
    tumbling = (
        events.key_by(lambda e: e[0])
        .window(TumblingEventTimeWindows.of(Time.milliseconds(200)))
        .reduce(lambda a, b: (a[0], max(a[1], b[1]), a[2] + b[2]))
    )
    longer = (
        events.key_by(lambda e: e[0])
        .window(TumblingEventTimeWindows.of(Time.milliseconds(300)))
        .reduce(lambda a, b: (a[0], max(a[1], b[1]), a[2] - b[2]))
    )
    return tumbling.map(lambda v: ("200", *v)).union(longer.map(lambda v: ("300", *v)))


JOBS = [
    job_union_of_keyed_operators,
    job_timers,
    job_timers_late,
    job_tumbling_late,
    job_tumbling_late_side,
    job_sliding,
    job_sessions,
    job_count_windows,
    job_connect,
    job_two_stages,
]


def run(job, runtime: str, parallelism: int, every: int | None) -> list:
    env = StreamExecutionEnvironment.get_execution_environment(runtime=runtime)
    env.set_parallelism(parallelism)
    env.get_config().set_watermark_every(every)
    return list(job(env).execute_and_collect())


@pytest.mark.parametrize("job", JOBS, ids=lambda j: j.__name__)
def test_spark_output_equals_local_at_parallelism_1_2_4(job):
    every = 7
    expected = run(job, "local", 1, every)
    assert expected, "the job produced nothing"
    for p in (1, 2, 4):
        assert run(job, "local", p, every) == expected, f"local, parallelism {p}"
        assert run(job, "spark", p, every) == expected, f"spark, parallelism {p}"


def test_late_records_are_the_same_with_watermark_every():
    for every in (3, 20):
        local = run(job_timers_late, "local", 2, every)
        assert run(job_timers_late, "spark", 3, every) == local
    assert run(job_timers_late, "local", 1, 3), "small rounds should make some records late"


def test_simulated_processing_time_on_spark():
    class Proc(KeyedProcessFunction):
        def process_element(self, value, ctx):
            now = ctx.timer_service().current_processing_time()
            ctx.timer_service().register_processing_time_timer(now + 150)
            yield "seen", value[2], now

        def on_timer(self, timestamp, ctx):
            yield "timer", ctx.get_current_key(), timestamp

    def job(env):
        env.get_config().use_simulated_processing_time(start=1000, advance_per_round=100)
        return source(env).key_by(lambda e: e[0]).process(Proc())

    expected = run(job, "local", 1, 9)
    assert any(r[0] == "timer" for r in expected)
    assert run(job, "spark", 3, 9) == expected


# ------------------------------------------------------------------------------ the examples


def _offline_ports() -> set[Path]:
    """The ports of PyFlink's examples that need no outside service (the others, Kafka,
    Elasticsearch, Pulsar and Table API ones, have tests/test_pyflink_examples.py)."""
    oracle = load_tool("pyflink_oracle/record.py")
    return {REPO / "examples" / "pyflink" / relative for relative in oracle.EXAMPLES.values()}


OFFLINE_PORTS = _offline_ports()
EXAMPLES = sorted(
    str(p.relative_to(REPO))
    for p in (REPO / "examples").rglob("*.py")
    if p.name != "__init__.py"
    # a stream: Spark only, resumed across runs (tests/test_streaming_example.py runs it)
    and p.name != "streaming_quickstart.py"
    and (not p.is_relative_to(REPO / "examples" / "pyflink") or p in OFFLINE_PORTS)
)


def _run_example(script: str, runtime: str, parallelism: int, monkeypatch, capsys) -> str:
    import runpy
    import sys

    monkeypatch.setenv("SPARKTIDE_RUNTIME", runtime)
    monkeypatch.setenv("SPARKTIDE_PARALLELISM", str(parallelism))
    monkeypatch.setattr(sys, "argv", [script])
    monkeypatch.syspath_prepend(str((REPO / script).parent))
    capsys.readouterr()
    runpy.run_path(str(REPO / script), run_name="__main__")
    return capsys.readouterr().out


@pytest.mark.parametrize("parallelism", PARALLELISMS)
@pytest.mark.parametrize("script", EXAMPLES)
def test_example_prints_the_same_on_spark(script, parallelism, monkeypatch, capsys) -> None:
    local = _run_example(script, "local", parallelism, monkeypatch, capsys)
    on_spark = _run_example(script, "spark", parallelism, monkeypatch, capsys)
    assert local.strip(), f"{script} printed nothing"
    assert on_spark == local


def job_order_seen(env):
    # one key sees every record and watermark of three splits: its output is the exact order
    class Seen(KeyedProcessFunction):
        def process_element(self, value, ctx):
            yield value[2], ctx.timer_service().current_watermark()

    return source(env).key_by(lambda e: 0).process(Seen())


@pytest.mark.parametrize(
    "job", [job_order_seen, job_union_of_keyed_operators, job_sessions, job_timers_late]
)
def test_small_chunks_and_early_flushes_change_nothing(job, monkeypatch):
    # a task ships its output every few items and merges its input chunk by chunk: the paths
    # that keep a worker's memory bounded on large inputs
    from sparktide.spark.executor import SparkExecutor

    expected = run(job, "local", 1, 7)
    monkeypatch.setattr(SparkExecutor, "chunk_items", 3)
    monkeypatch.setattr(SparkExecutor, "flush_items", 5)
    assert run(job, "spark", 2, 7) == expected
    assert run(job, "spark", 3, None) == run(job, "local", 3, None)


def test_a_bounded_run_restores_the_adaptive_execution_settings_of_the_session(spark) -> None:
    """The run turns adaptive execution off while it runs; the user's session gets its own
    values back afterwards, also when a user function fails."""
    keys = ("spark.sql.adaptive.enabled", "spark.sql.adaptive.coalescePartitions.enabled")
    before = {key: spark.conf.get(key, None) for key in keys}

    def fail(value: int) -> int:
        raise ValueError("bad record")

    try:
        for key in keys:
            spark.conf.set(key, "true")
        env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
        env.set_parallelism(2)
        stream = env.from_collection([("a", 1), ("b", 2)]).key_by(lambda r: r[0])
        assert sorted(stream.map(lambda r: r[1]).execute_and_collect()) == [1, 2]
        assert {key: spark.conf.get(key) for key in keys} == dict.fromkeys(keys, "true")
        env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
        env.from_collection([1]).map(fail).print()
        with pytest.raises(ValueError, match="bad record"):
            env.execute("failing")
        assert {key: spark.conf.get(key) for key in keys} == dict.fromkeys(keys, "true")
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
