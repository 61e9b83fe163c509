"""The window operator's fast path (tumbling / sliding event-time windows, EventTimeTrigger,
reduce or aggregate contents) against its general path: the same output with timestamps and
order, late side output, lateness counters, user calls, timers and snapshots, also across a
snapshot and restore."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sparktide.core.output_tag import OutputTag
from sparktide.datastream import AggregateFunction, ProcessWindowFunction
from sparktide.datastream.window import (
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
)
from sparktide.runtime.elements import MAX_TIMESTAMP, StreamRecord
from sparktide.runtime.operators.window import WindowOperator
from sparktide.runtime.operators.window_builder import WindowOperatorBuilder
from sparktide.testing import KeyedOneInputStreamOperatorTestHarness

LATE = OutputTag("late")


class CountingAverage(AggregateFunction):
    """Sum and count of field 1, recording every call in ``calls``."""

    def __init__(self, calls: list[Any]) -> None:
        self.calls = calls

    def create_accumulator(self) -> Any:
        self.calls.append("create")
        return (0, 0)

    def add(self, value: Any, acc: Any) -> Any:
        self.calls.append(("add", value, acc))
        return (acc[0] + value[1], acc[1] + 1)

    def get_result(self, acc: Any) -> Any:
        self.calls.append(("result", acc))
        return acc

    def merge(self, a: Any, b: Any) -> Any:  # never called for non-merging windows
        self.calls.append(("merge", a, b))
        return (a[0] + b[0], a[1] + b[1])


class Describe(ProcessWindowFunction):
    def __init__(self, calls: list[Any]) -> None:
        self.calls = calls

    def process(self, key: Any, context: Any, elements: Any) -> Any:
        w = context.window()
        yield key, w.start, w.end, list(elements), context.current_watermark()

    def clear(self, context: Any) -> None:
        self.calls.append(("clear", context.window()))


ASSIGNERS = {
    "tumbling": lambda: TumblingEventTimeWindows.of(30),
    "tumbling-offset": lambda: TumblingEventTimeWindows.of(30, 7),
    "sliding": lambda: SlidingEventTimeWindows.of(40, 10),
    "sliding-uneven": lambda: SlidingEventTimeWindows.of(35, 15, -4),
    "sliding-gaps": lambda: SlidingEventTimeWindows.of(10, 25, 3),
}


def _operator(spec: Any, calls: list[Any], fast: bool) -> WindowOperator:
    assigner, kind, lateness, with_function = spec
    b = WindowOperatorBuilder(ASSIGNERS[assigner]())
    b.set_allowed_lateness(lateness)
    b.set_late_data_output_tag(LATE)
    function = Describe(calls) if with_function else None

    def add(a: Any, c: Any) -> Any:
        calls.append(("reduce", a, c))
        return (a[0], a[1] + c[1])

    if kind == "reduce":
        op = b.reduce(add, function) if function else b.reduce(add)
    else:
        agg = CountingAverage(calls)
        op = b.aggregate(agg, function) if function else b.aggregate(agg)
    op.fast_path = fast  # the decision a job's path choice hands the operator
    return op


def _harness(op: WindowOperator, snapshot: bytes | None) -> Any:
    h = KeyedOneInputStreamOperatorTestHarness(op, lambda v: v[0])
    if snapshot is not None:
        h.initialize_state(snapshot)
    h.open()
    return h


def _observe(h: Any) -> Any:
    snap = h.operator.snapshot_state()
    return (
        [(r.value, r.timestamp) for r in h.get_output() if isinstance(r, StreamRecord)],
        [(r.value, r.timestamp) for r in h.get_side_output(LATE)],
        h.operator.num_late_records_dropped,
        h.operator.num_late_records_side_output,
        h.num_event_time_timers(),
        h.num_keyed_state_entries(),
        snap.state,
        snap.timers,
    )


def _run(spec: Any, steps: Any, restore_at: int | None, fast: bool) -> Any:
    calls: list[Any] = []
    op = _operator(spec, calls, fast)
    h = _harness(op, None)
    assert op.runs_fast_path == fast
    seen = []
    watermark = -(2**63)
    for i, (key, value, ts, advance) in enumerate(steps):
        if i == restore_at:
            seen.append(_observe(h))
            snapshot = h.snapshot()
            op = _operator(spec, calls, fast)
            op.restore_watermark(watermark)
            h = _harness(op, snapshot)
            op.timer_service.restore_watermark(watermark)
        h.process_element((key, value), ts)
        if advance is not None:
            watermark = max(watermark, advance)
            h.process_watermark(watermark)
            seen.append(_observe(h))
    seen.append(_observe(h))
    h.process_watermark(MAX_TIMESTAMP)
    seen.append(_observe(h))
    return seen, calls


steps = st.lists(
    st.tuples(
        st.sampled_from("abc"),
        st.integers(1, 9),
        st.integers(-30, 200),
        # watermarks often at window ends (multiples of 5 minus one)
        st.one_of(st.none(), st.integers(-1, 40).map(lambda i: 5 * i - 1), st.integers(-30, 200)),
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(
    steps=steps,
    assigner=st.sampled_from(sorted(ASSIGNERS)),
    kind=st.sampled_from(["reduce", "aggregate"]),
    # the last one saturates cleanup times at MAX_TIMESTAMP
    lateness=st.sampled_from([0, 0, 15, 100, MAX_TIMESTAMP - 100]),
    with_function=st.booleans(),
    restore_at=st.one_of(st.none(), st.integers(0, 40)),
)
def test_fast_path_equals_general_path(
    steps: Any, assigner: str, kind: str, lateness: int, with_function: bool, restore_at: Any
) -> None:
    spec = (assigner, kind, lateness, with_function)
    fast = _run(spec, steps, restore_at, True)
    general = _run(spec, steps, restore_at, False)
    assert fast == general
    assert not any(type(c) is tuple and c[0] == "merge" for c in fast[1])


def test_a_watermark_going_back_leaves_the_fast_path() -> None:
    # the window [90, 120) fires at 119; after the watermark goes back to -1, an element in it
    # registers its end-of-window timer again (so it fires a second time at the end)
    steps = [("a", 1, 90, 119), ("a", 1, 0, -1), ("a", 1, 90, None)]
    spec = ("tumbling", "reduce", 20, False)
    outputs = []
    for fast in (True, False):
        calls: list[Any] = []
        op = _operator(spec, calls, fast)
        h = _harness(op, None)
        for key, value, ts, watermark in steps:
            h.process_element((key, value), ts)
            if watermark is not None:
                h.process_watermark(watermark)
        assert not op.runs_fast_path
        h.process_watermark(MAX_TIMESTAMP)
        outputs.append([(r.value, r.timestamp) for r in h.get_records()])
    assert outputs[0] == outputs[1] == [(("a", 1), 119), (("a", 2), 119)]


class Average(AggregateFunction):
    def create_accumulator(self) -> Any:
        return (0, 0)

    def add(self, value: Any, acc: Any) -> Any:
        return (acc[0] + value[2], acc[1] + 1)

    def get_result(self, acc: Any) -> Any:
        return (acc[0], acc[1])

    def merge(self, a: Any, b: Any) -> Any:
        return (a[0] + b[0], a[1] + b[1])


def _job(
    data: list[Any], sliding: bool, lateness: int, parallelism: int, every: int, fast: bool
) -> Any:
    import json

    from sparktide.common import WatermarkStrategy
    from sparktide.datastream import StreamExecutionEnvironment
    from sparktide.datastream.source import CollectionSource
    from sparktide.datastream.windowed_stream import WindowedStream

    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    env.configure({"sparktide.execution.window-fast-path": str(fast).lower()})
    env.set_parallelism(parallelism)
    env.get_config().set_watermark_every(every)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(5).with_timestamp_assigner(
        lambda v, ts: v[1]
    )
    assigner = SlidingEventTimeWindows.of(30, 10) if sliding else TumblingEventTimeWindows.of(20)
    ds = env.from_source(CollectionSource(data), strategy, "events")
    late: list[Any] = []
    main = (
        WindowedStream(ds.key_by(lambda v: v[0]), assigner)
        .allowed_lateness(lateness)
        .side_output_late_data(LATE)
        .aggregate(Average())
    )
    main.get_side_output(LATE).add_sink(lambda v, _: late.append(v))
    nodes = json.loads(env.get_execution_plan())["nodes"]
    assert [n["window_fast_path"] for n in nodes if "window_fast_path" in n] == [fast]
    return list(main.execute_and_collect()), late


@settings(max_examples=25, deadline=None)
@given(
    data=st.lists(
        st.tuples(st.sampled_from("abcd"), st.integers(0, 150), st.integers(0, 9)), max_size=60
    ),
    sliding=st.booleans(),
    lateness=st.sampled_from([0, 12]),
    parallelism=st.sampled_from([1, 2]),
    every=st.sampled_from([1, 3, 10]),
)
def test_jobs_give_the_same_output_with_and_without_the_fast_path(
    data: Any, sliding: bool, lateness: int, parallelism: int, every: int
) -> None:
    fast = _job(data, sliding, lateness, parallelism, every, True)
    general = _job(data, sliding, lateness, parallelism, every, False)
    assert fast == general
