"""``WindowedStream`` / ``AllWindowedStream`` in jobs on the local runtime: the PyFlink-style API,
field aggregations, count windows, late side outputs, and the same output at any parallelism."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from sparktide.common import Time, Types, WatermarkStrategy
from sparktide.datastream import AggregateFunction, OutputTag, StreamExecutionEnvironment
from sparktide.datastream.source import CollectionSource
from sparktide.datastream.window import (
    AllWindowFunction,
    EventTimeSessionWindows,
    ProcessAllWindowFunction,
    ProcessWindowFunction,
    SessionWindowTimeGapExtractor,
    SlidingEventTimeWindows,
    TimeWindow,
    TumblingEventTimeWindows,
    WindowFunction,
)
from sparktide.datastream.windowed_stream import (
    AllWindowedStream,
    WindowedStream,
    count_window,
    count_window_all,
)


def env(parallelism: int = 1) -> StreamExecutionEnvironment:
    e = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    e.set_parallelism(parallelism)
    return e


def timestamped(e: StreamExecutionEnvironment, data: list[Any], field: int = 1) -> Any:
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        lambda v, ts: v[field]
    )
    return e.from_collection(data).assign_timestamps_and_watermarks(strategy)


class CountWindowProcessFunction(ProcessWindowFunction[tuple, tuple, str, TimeWindow]):
    def process(
        self,
        key: str,
        context: ProcessWindowFunction.Context[TimeWindow],
        elements: Iterable[tuple],
    ) -> Iterable[tuple]:
        return [(key, context.window().start, context.window().end, len([e for e in elements]))]


SLIDING_INPUT = [
    ("hi", 1),
    ("hi", 2),
    ("hi", 3),
    ("hi", 4),
    ("hi", 5),
    ("hi", 8),
    ("hi", 9),
    ("hi", 15),
]


def test_pyflink_sliding_window_example_shape() -> None:
    ds = timestamped(env(), SLIDING_INPUT)
    out = WindowedStream(
        ds.key_by(lambda x: x[0], key_type=Types.STRING()),
        SlidingEventTimeWindows.of(Time.milliseconds(5), Time.milliseconds(2)),
    ).process(
        CountWindowProcessFunction(),
        Types.TUPLE([Types.STRING(), Types.INT(), Types.INT(), Types.INT()]),
    )
    assert sorted(out.execute_and_collect()) == [
        ("hi", -2, 3, 2),
        ("hi", 0, 5, 4),
        ("hi", 2, 7, 4),
        ("hi", 4, 9, 3),
        ("hi", 6, 11, 2),
        ("hi", 8, 13, 2),
        ("hi", 12, 17, 1),
        ("hi", 14, 19, 1),
    ]


def test_pyflink_dynamic_session_example_shape() -> None:
    class Gap(SessionWindowTimeGapExtractor):
        def extract(self, element: tuple) -> int:
            return element[1]

    data = [("hi", 1), ("hi", 2), ("hi", 3), ("hi", 4), ("hi", 8), ("hi", 9), ("hi", 15)]
    ds = timestamped(env(), data)
    out = WindowedStream(
        ds.key_by(lambda x: x[0]), EventTimeSessionWindows.with_dynamic_gap(Gap())
    ).process(CountWindowProcessFunction())
    assert list(out.execute_and_collect()) == [("hi", 1, 30, 7)]


def test_count_window_tumbling_like_the_pyflink_example() -> None:
    class SumWindowFunction(WindowFunction[tuple, tuple, str, Any]):
        def apply(self, key: str, window: Any, inputs: Iterable[tuple]) -> Any:
            return [(key, sum(i[0] for i in inputs))]

    data = [(1, "hi"), (2, "hello"), (3, "hi"), (4, "hello"), (5, "hi"), (6, "hello"), (6, "hello")]
    ds = env().from_collection(data)
    out = count_window(ds.key_by(lambda x: x[1]), 2).apply(SumWindowFunction())
    assert sorted(out.execute_and_collect()) == [("hello", 6), ("hello", 12), ("hi", 4)]


def test_count_window_sliding_fires_every_slide_over_the_last_size() -> None:
    ds = env().from_collection([("k", i) for i in range(1, 8)])
    out = count_window(ds.key_by(lambda x: x[0]), 3, 2).reduce(lambda a, b: (a[0], a[1] + b[1]))
    assert list(out.execute_and_collect()) == [("k", 3), ("k", 9), ("k", 15)]
    with pytest.raises(ValueError, match="size must be a positive int"):
        count_window(ds.key_by(lambda x: x[0]), 0)
    with pytest.raises(ValueError, match="slide must be an int >= 0"):
        count_window(ds.key_by(lambda x: x[0]), 2, -1)


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        ("sum", [("a", 6, 1), ("b", 5, 12)]),
        ("min", [("a", 1, 1), ("b", 5, 12)]),
        ("max", [("a", 3, 1), ("b", 5, 12)]),
        ("min_by", [("a", 1, 7), ("b", 5, 12)]),
        ("max_by", [("a", 3, 3), ("b", 5, 12)]),
    ],
)
def test_field_aggregations(method: str, expected: list[Any]) -> None:
    data = [("a", 2, 1), ("a", 3, 3), ("a", 1, 7), ("b", 5, 12)]
    ds = timestamped(env(), data, field=2)
    windowed = WindowedStream(ds.key_by(lambda v: v[0]), TumblingEventTimeWindows.of(10))
    assert sorted(getattr(windowed, method)(1).execute_and_collect()) == expected


def test_field_aggregation_on_lists_does_not_change_elements_in_other_windows() -> None:
    data = [["a", 1, 1], ["a", 2, 2], ["a", 4, 6]]
    ds = timestamped(env(), data, field=2)
    windowed = WindowedStream(ds.key_by(lambda v: v[0]), SlidingEventTimeWindows.of(10, 5))
    assert sorted(windowed.sum(1).execute_and_collect()) == [["a", 3, 1], ["a", 4, 6], ["a", 7, 1]]


def test_late_data_side_output_in_a_job() -> None:
    late = OutputTag("late")
    data = [("a", 1), ("a", 30), ("a", 2), ("a", 31)]
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(0).with_timestamp_assigner(
        lambda v, ts: v[1]
    )
    e = env()
    e.get_config().set_watermark_every(1)  # a periodic watermark after every record
    ds = e.from_source(CollectionSource(data), strategy, "events")
    main = (
        WindowedStream(ds.key_by(lambda v: v[0]), TumblingEventTimeWindows.of(10))
        .side_output_late_data(late)
        .reduce(lambda x, y: (x[0], x[1] + y[1]))
    )
    main.get_side_output(late).map(lambda v: ("late", v)).add_sink(lambda v, _: collected.append(v))
    results = list(main.execute_and_collect())
    assert results == [("a", 1), ("a", 61)]
    assert collected == [("late", ("a", 2))]


collected: list[Any] = []


class SumAgg(AggregateFunction):
    def create_accumulator(self) -> int:
        return 0

    def add(self, value: Any, accumulator: int) -> int:
        return accumulator + value[1]

    def get_result(self, accumulator: int) -> int:
        return accumulator

    def merge(self, a: int, b: int) -> int:
        return a + b


class AllCount(ProcessAllWindowFunction):
    def process(self, context: Any, elements: Any) -> Any:
        yield context.window().start, len(list(elements))


class AllTotal(AllWindowFunction):
    def apply(self, window: Any, inputs: Any) -> Any:
        yield window.start, sum(inputs)


def test_window_all_with_all_window_functions() -> None:
    data = [(k, ts) for ts in range(25) for k in "abc"]
    ds = timestamped(env(4), data)
    out = AllWindowedStream(ds, TumblingEventTimeWindows.of(10)).process(AllCount())
    assert sorted(out.execute_and_collect()) == [(0, 30), (10, 30), (20, 15)]
    assert out.get_parallelism() == 1
    out2 = AllWindowedStream(ds, TumblingEventTimeWindows.of(10)).aggregate(SumAgg(), AllTotal())
    assert sorted(out2.execute_and_collect()) == [(0, 135), (10, 435), (20, 330)]
    out3 = count_window_all(ds.map(lambda v: v[1]), 40).reduce(lambda a, b: a + b)
    assert list(out3.execute_and_collect()) == [sum(v[1] for v in data[:40])]


def test_windowed_stream_rejects_a_non_keyed_stream() -> None:
    ds = env().from_collection([1])
    with pytest.raises(TypeError, match="keyed_stream must be a KeyedStream"):
        WindowedStream(ds, TumblingEventTimeWindows.of(10))  # type: ignore[arg-type]


def _session_job(parallelism: int) -> list[Any]:
    data = [(f"k{i % 7}", (i * 37) % 500) for i in range(400)]
    ds = timestamped(env(parallelism), data)

    class Describe(ProcessWindowFunction):
        def process(self, key: Any, context: Any, elements: Any) -> Any:
            yield key, context.window().start, context.window().end, elements[0]

    return list(
        WindowedStream(ds.key_by(lambda v: v[0]), EventTimeSessionWindows.with_gap(20))
        .aggregate(SumAgg(), Describe())
        .execute_and_collect()
    )


def test_same_output_at_any_parallelism() -> None:
    expected = _session_job(1)
    assert expected
    assert _session_job(3) == expected
    assert _session_job(8) == expected
