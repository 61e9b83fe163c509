"""The DataStream API on the local runtime: operators, exchanges, watermarks, determinism."""

from __future__ import annotations

import io
from collections import defaultdict
from contextlib import redirect_stdout

import pytest

from sparktide.common import Duration
from sparktide.common.watermark_strategy import WatermarkStrategy
from sparktide.datastream import (
    CoMapFunction,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    MapFunction,
    OutputTag,
    ProcessFunction,
    StreamExecutionEnvironment,
)
from sparktide.datastream.source import CollectionSource, SourceFunction
from sparktide.datastream.state import ValueStateDescriptor


def env_with(parallelism: int = 1, every: int | None = None) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    env.set_parallelism(parallelism)
    env.get_config().set_watermark_every(every)
    return env


def events(n: int = 300, keys: int = 7, seed: int = 3) -> list[tuple[str, int, int]]:
    """(key, timestamp, value) arriving out of order by up to ~40 ms."""
    import random

    rng = random.Random(seed)
    out = [(f"k{rng.randrange(keys)}", i * 10 + rng.randrange(0, 40), i) for i in range(n)]
    return out


def strategy(delay: int = 20) -> WatermarkStrategy:
    return WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(delay)
    ).with_timestamp_assigner(lambda e, _ts: e[1])


def test_map_filter_flat_map_keep_order():
    env = env_with()
    ds = env.from_collection(range(10))
    out = (
        ds.map(lambda v: v * 2)
        .filter(lambda v: v % 3 != 0)
        .flat_map(lambda v: [v, -v])
        .execute_and_collect()
    )
    assert list(out) == [2, -2, 4, -4, 8, -8, 10, -10, 14, -14, 16, -16]


def test_map_function_objects_get_open_and_close():
    calls = []

    class Plus(MapFunction):
        def open(self, runtime_context):
            calls.append("open")

        def map(self, value):
            return value + 1

        def close(self):
            calls.append("close")

    env = env_with()
    assert env.from_collection([1, 2]).map(Plus()).execute_and_collect(limit=5) == [2, 3]
    assert calls == ["open", "close"]


@pytest.mark.parametrize(
    ("agg", "position", "expected"),
    [
        ("sum", 1, [("a", 1, 9), ("b", 5, 1), ("a", 4, 9), ("a", 6, 9)]),
        ("min", 1, [("a", 1, 9), ("b", 5, 1), ("a", 1, 9), ("a", 1, 9)]),
        ("max", 1, [("a", 1, 9), ("b", 5, 1), ("a", 3, 9), ("a", 3, 9)]),
        ("min_by", 2, [("a", 1, 9), ("b", 5, 1), ("a", 3, 0), ("a", 3, 0)]),
        ("max_by", 2, [("a", 1, 9), ("b", 5, 1), ("a", 1, 9), ("a", 1, 9)]),
    ],
)
def test_rolling_aggregations_as_pyflink(agg, position, expected):
    env = env_with(parallelism=2)
    ds = env.from_collection([("a", 1, 9), ("b", 5, 1), ("a", 3, 0), ("a", 2, 5)])
    keyed = ds.key_by(lambda v: v[0])
    out = getattr(keyed, agg)(position).execute_and_collect()
    assert list(out) == expected


def test_reduce_on_plain_values():
    env = env_with()
    out = env.from_collection([1, 2, 3, 4]).key_by(lambda v: v % 2).reduce(lambda a, b: a + b)
    assert sorted(out.execute_and_collect()) == [1, 2, 4, 6]


class LastValueTimer(KeyedProcessFunction):
    """Keeps a running sum; fires an event-time timer 15 ms after each record; reports late."""

    LATE = OutputTag("late")

    def open(self, runtime_context):
        self.total = runtime_context.get_state(ValueStateDescriptor("total", None))

    def process_element(self, value, ctx):
        if ctx.timestamp() <= ctx.timer_service().current_watermark():
            yield self.LATE, value
            return
        self.total.update((self.total.value() or 0) + value[2])
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 15)

    def on_timer(self, timestamp, ctx):
        yield (
            ctx.get_current_key(),
            timestamp,
            self.total.value(),
            ctx.timer_service().current_watermark(),
        )


def run_timer_job(parallelism: int, every: int | None, splits: int = 3):
    env = env_with(parallelism, every)
    source = CollectionSource(events(), num_splits=splits)
    ds = env.from_source(source, strategy(), "events")
    out = ds.key_by(lambda e: e[0]).process(LastValueTimer())
    late = out.get_side_output(LastValueTimer.LATE).execute_and_collect()
    late = list(late)
    env2 = env_with(parallelism, every)
    ds2 = env2.from_source(CollectionSource(events(), num_splits=splits), strategy(), "events")
    main = list(ds2.key_by(lambda e: e[0]).process(LastValueTimer()).execute_and_collect())
    return main, late


@pytest.mark.parametrize("every", [None, 5, 17])
def test_output_is_identical_at_parallelism_1_2_4(every):
    results = {p: run_timer_job(p, every) for p in (1, 2, 4)}
    main1, late1 = results[1]
    assert main1, "the job produced nothing"
    for p in (2, 4):
        main, late = results[p]
        assert main == main1, f"parallelism {p} differs"
        assert late == late1
    if every == 5:
        assert late1, "rounds of a few records per split should make some records late"
    # per key, timers fire in timestamp order and each carries the watermark that fired it
    per_key = defaultdict(list)
    for key, ts, _total, wm in main1:
        per_key[key].append(ts)
        assert wm >= ts
    assert all(v == sorted(v) for v in per_key.values())


def test_one_round_fires_everything_at_the_end_with_max_watermark():
    main, late = run_timer_job(1, None)
    assert late == []
    assert {wm for *_, wm in main} == {2**63 - 1}
    n_keys = len({e[0] for e in events()})
    assert len({k for k, *_ in main}) == n_keys


@pytest.mark.usefixtures("state_backend")
def test_two_keyed_stages_are_deterministic_across_parallelism():
    class Rekey(KeyedProcessFunction):
        def process_element(self, value, ctx):
            yield (value[2] % 3, ctx.get_current_key(), value[2])

    class Collect(KeyedProcessFunction):
        def open(self, rc):
            self.seen = rc.get_state(ValueStateDescriptor("seen", None))

        def process_element(self, value, ctx):
            s = (self.seen.value() or ()) + (value[2],)
            self.seen.update(s)
            ctx.timer_service().register_event_time_timer(ctx.timestamp() + 100)

        def on_timer(self, timestamp, ctx):
            yield ctx.get_current_key(), timestamp, self.seen.value()

    def run(p):
        env = env_with(p, every=11)
        ds = env.from_source(CollectionSource(events(), num_splits=2), strategy(), "events")
        return list(
            ds.key_by(lambda e: e[0])
            .process(Rekey())
            .key_by(lambda v: v[0])
            .process(Collect())
            .execute_and_collect()
        )

    base = run(1)
    assert base
    assert run(2) == base
    assert run(3) == base


def test_side_outputs_and_print_format():
    tag = OutputTag("odd")

    class Split(ProcessFunction):
        def process_element(self, value, ctx):
            if value % 2:
                yield tag, value
            else:
                yield value

    env = env_with()
    main = env.from_collection(range(6)).process(Split())
    main.get_side_output(tag).map(lambda v: f"odd {v}").print()
    main.map(lambda v: ("even", v)).print()
    buf = io.StringIO()
    with redirect_stdout(buf):
        env.execute("print")
    lines = buf.getvalue().splitlines()
    assert sorted(lines) == sorted(
        ["odd 1", "odd 3", "odd 5", "('even', 0)", "('even', 2)", "('even', 4)"]
    )


def test_print_prefixes_subtask_when_parallel():
    env = env_with(parallelism=2)
    env.from_collection([("a", 1), ("b", 2)]).key_by(lambda v: v[0]).sum(1).print()
    buf = io.StringIO()
    with redirect_stdout(buf):
        env.execute()
    assert all(line[:3] in ("1> ", "2> ") for line in buf.getvalue().splitlines())


@pytest.mark.usefixtures("state_backend")
def test_union_and_connect_with_keyed_co_process_min_watermark():
    class Join(KeyedCoProcessFunction):
        def open(self, rc):
            self.left = rc.get_state(ValueStateDescriptor("left", None))

        def process_element1(self, value, ctx):
            self.left.update(value[2])
            ctx.timer_service().register_event_time_timer(ctx.timestamp())

        def process_element2(self, value, ctx):
            yield ("right", ctx.get_current_key(), value[2], self.left.value())

        def on_timer(self, timestamp, ctx):
            yield (
                "timer",
                ctx.get_current_key(),
                timestamp,
                ctx.timer_service().current_watermark(),
            )

    def run(p):
        env = env_with(p, every=4)
        left = env.from_source(CollectionSource(events(60, 3, 1), 2), strategy(0), "left")
        right = env.from_source(CollectionSource(events(60, 3, 2), 1), strategy(0), "right")
        other = env.from_source(CollectionSource(events(30, 3, 5), 1), strategy(0), "other")
        out = (
            left.connect(right.union(other)).key_by(lambda e: e[0], lambda e: e[0]).process(Join())
        )
        return list(out.execute_and_collect())

    base = run(1)
    assert run(2) == base and run(4) == base
    timers = [r for r in base if r[0] == "timer"]
    assert timers and all(wm >= ts for _, _, ts, wm in timers)
    assert len([r for r in base if r[0] == "right"]) == 90


def test_co_map_on_non_keyed_streams():
    class Tag(CoMapFunction):
        def map1(self, value):
            return ("one", value)

        def map2(self, value):
            return ("two", value)

    env = env_with(parallelism=2)
    a, b = env.from_collection([1, 2]), env.from_collection([3])
    out = a.connect(b).map(Tag()).execute_and_collect()
    assert sorted(out) == [("one", 1), ("one", 2), ("two", 3)]


def test_source_function_with_watermarks_and_idleness():
    class Emitter(SourceFunction):
        def run(self, ctx):
            for i in range(5):
                ctx.collect_with_timestamp(("k", i), i * 10)
                ctx.emit_watermark(i * 10)
            ctx.mark_as_temporarily_idle()

        def cancel(self):
            pass

    class Fire(KeyedProcessFunction):
        def process_element(self, value, ctx):
            ctx.timer_service().register_event_time_timer(ctx.timestamp() + 5)

        def on_timer(self, timestamp, ctx):
            yield timestamp, ctx.timer_service().current_watermark()

    env = env_with()
    out = list(
        env.add_source(Emitter()).key_by(lambda v: v[0]).process(Fire()).execute_and_collect()
    )
    # the source's own watermarks fire the timers before the end of input
    assert [ts for ts, _ in out] == [5, 15, 25, 35, 45]
    assert [wm for _, wm in out][:4] == [10, 20, 30, 40]


@pytest.mark.usefixtures("state_backend")
def test_simulated_processing_time_fires_at_round_boundaries():
    class Proc(KeyedProcessFunction):
        def process_element(self, value, ctx):
            now = ctx.timer_service().current_processing_time()
            ctx.timer_service().register_processing_time_timer(now + 150)
            yield ("seen", value, now)

        def on_timer(self, timestamp, ctx):
            yield ("timer", ctx.get_current_key(), timestamp)

    def run(p):
        env = env_with(p, every=2)
        env.get_config().use_simulated_processing_time(start=1000, advance_per_round=100)
        src = CollectionSource([("a", 1), ("b", 2), ("a", 3), ("c", 4), ("b", 5), ("a", 6)], 1)
        ds = env.from_source(src, WatermarkStrategy.no_watermarks(), "s")
        return list(ds.key_by(lambda v: v[0]).process(Proc()).execute_and_collect())

    base = run(1)
    assert run(3) == base
    assert ("seen", ("a", 1), 1000) in base
    assert ("timer", "a", 1150) in base  # fired when round 2 started at 1200


def test_records_without_timestamps_say_assign_timestamps():
    class Needs(KeyedProcessFunction):
        def process_element(self, value, ctx):
            ctx.timer_service().register_event_time_timer(ctx.timestamp())

    env = env_with()
    ds = env.from_collection([("a", 1)]).key_by(lambda v: v[0]).process(Needs())
    with pytest.raises(TypeError, match="assign_timestamps_and_watermarks"):
        ds.execute_and_collect(limit=1)


def test_execute_without_sinks_is_an_error():
    env = env_with()
    env.from_collection([1]).map(lambda v: v)
    with pytest.raises(RuntimeError, match="no sinks"):
        env.execute()


def test_batch_mode_reduce_emits_only_final_values():
    from sparktide.datastream import RuntimeExecutionMode

    env = env_with(parallelism=2)
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    words = env.from_collection(["a", "b", "a", "c", "b", "a"])
    out = (
        words.map(lambda w: (w, 1)).key_by(lambda t: t[0]).reduce(lambda x, y: (x[0], x[1] + y[1]))
    )
    assert sorted(out.execute_and_collect()) == [("a", 3), ("b", 2), ("c", 1)]


def test_second_execute_reruns_shared_sources_for_new_sinks_only():
    env = env_with()
    ds = env.from_collection([1, 2, 3])
    first = ds.map(lambda v: v * 10).execute_and_collect(limit=10)
    second = ds.filter(lambda v: v > 1).execute_and_collect(limit=10)
    assert (first, second) == ([10, 20, 30], [2, 3])


def test_user_functions_are_copied_per_subtask():
    class Counter(KeyedProcessFunction):
        def __init__(self):
            self.seen = 0

        def process_element(self, value, ctx):
            self.seen += 1
            yield ctx.get_current_key(), self.seen

    fn = Counter()
    env = env_with(parallelism=3)
    out = env.from_collection(list("abcabc")).key_by(lambda v: v).process(fn).execute_and_collect()
    assert fn.seen == 0  # the original is never used; each subtask has its own copy
    assert len(list(out)) == 6


@pytest.mark.usefixtures("state_backend")
def test_job_result_reports_rounds_late_drops_and_timers():
    from sparktide.datastream.window import TumblingEventTimeWindows

    env = env_with(every=3)
    ds = env.from_source(
        CollectionSource([("a", t, 1) for t in (5, 50, 7, 8, 90, 2)], 1), strategy(0), "s"
    )
    ds.key_by(lambda e: e[0]).window(TumblingEventTimeWindows.of(10)).reduce(
        lambda x, y: (x[0], x[1], x[2] + y[2])
    ).print()
    buf = io.StringIO()
    with redirect_stdout(buf):
        result = env.execute("metrics")
    metrics = result.get_all_accumulator_results()
    assert metrics["rounds"] == 3
    # round 0 ends with watermark 49, which closes [0, 10); round 1 brings 8 and 2 into it: late
    assert metrics["late_records_dropped"] == 2
    assert metrics["timers_fired"] >= 3


def test_parallelism_from_the_environment_variable(monkeypatch):
    monkeypatch.setenv("SPARKTIDE_PARALLELISM", "3")
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    assert env.get_parallelism() == 3
    monkeypatch.setenv("SPARKTIDE_PARALLELISM", "zero")
    with pytest.raises(ValueError, match="SPARKTIDE_PARALLELISM"):
        StreamExecutionEnvironment.get_execution_environment(runtime="local")


def test_env_execute_and_collect_takes_the_last_stream():
    env = env_with()
    env.from_collection([1, 2, 3]).map(lambda v: v + 1)
    assert env.execute_and_collect(limit=10) == [2, 3, 4]
    other = env.from_collection(["x"])
    env.from_collection([9]).map(str)
    assert list(env.execute_and_collect(stream=other)) == ["x"]


def test_fan_out_gives_each_branch_its_own_record() -> None:
    # map reuses the record it receives: the second branch must still see the source value
    for parallelism in (1, 2):
        env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
        env.set_parallelism(parallelism)
        numbers = env.from_collection([1, 2, 3])
        tens = numbers.map(lambda v: v * 10)
        plus_one = numbers.map(lambda v: v + 1)
        late = numbers.filter(lambda v: v > 1)
        assert sorted(tens.union(plus_one, late).execute_and_collect()) == [
            2, 2, 3, 3, 4, 10, 20, 30,
        ]  # fmt: skip
