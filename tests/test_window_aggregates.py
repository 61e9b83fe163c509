"""Declarative keys (``key_by("field")``/``key_by(index)``) and the built-in window aggregates
(``count()``, ``agg(...)``, ``sum``/``min``/``max``/``min_by``/``max_by``) on the local runtime:
exact outputs, equality with the same job written with a lambda key and a process window
function (randomized), the spec set exactly when a runner may run it on columns, and errors."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparktide.common import Duration
from sparktide.common.typeinfo import Types
from sparktide.common.types import Row
from sparktide.common.watermark_strategy import WatermarkStrategy
from sparktide.core.window.aggregates import Agg, AggregateKind, NamedAggregate, named_aggregates
from sparktide.datastream import (
    KeyedProcessFunction,
    OutputTag,
    ProcessWindowFunction,
    StreamExecutionEnvironment,
)
from sparktide.datastream.source import CollectionSource
from sparktide.datastream.window import (
    CountEvictor,
    CountTrigger,
    EventTimeSessionWindows,
    EventTimeTrigger,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from sparktide.runtime.columnar.spec import (
    FieldAggregate,
    FieldKey,
    OutputForm,
    WindowAggregateSpec,
)
from sparktide.runtime.operators.window_aggregates import (
    NamedAggregatesFunction,
    build_window_aggregate,
    general_operator,
)
from sparktide.runtime.operators.window_builder import WindowOperatorBuilder
from sparktide.testing.harness import KeyedOneInputStreamOperatorTestHarness

EVENT = Types.ROW_NAMED(
    ["user", "ts", "price", "qty"], [Types.STRING(), Types.LONG(), Types.INT(), Types.DOUBLE()]
)
PAIR = Types.TUPLE([Types.STRING(), Types.LONG(), Types.INT()])
LATE = OutputTag("late")


def spec_of(stream):
    """The window aggregate spec a runner may run on columns (None: per record only)."""
    return stream.get_transformation().window_aggregate


def env(parallelism: int = 1, every: int | None = None) -> StreamExecutionEnvironment:
    e = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    e.set_parallelism(parallelism)
    e.get_config().set_watermark_every(every)
    return e


def strategy(delay: int) -> WatermarkStrategy:
    return WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(delay)
    ).with_timestamp_assigner(lambda v, _ts: v[1])


def rows_stream(e: StreamExecutionEnvironment, rows: list[Row], delay: int = 0, splits: int = 1):
    return e.from_source(CollectionSource(rows, num_splits=splits), strategy(delay), "s", EVENT)


def row(user: str, ts: int, price: int | None, qty: float | None = 1.0) -> Row:
    return Row(user=user, ts=ts, price=price, qty=qty)


# ------------------------------------------------------------------------------ exact outputs


def test_count_tumbling_with_lateness_and_late_side_output() -> None:
    data = [
        row("a", 1, 5),
        row("b", 4, 1),
        row("a", 12, 2),  # watermark 12: fires [0, 10)
        row("a", 8, 3),  # late but within lateness 5 (cleanup at 14): fires [0, 10) again
        row("a", 22, 1),  # watermark 22: fires [10, 20); [0, 10) expires
        row("b", 7, 9),  # too late: side output
    ]
    windowed = (
        rows_stream(env(every=1), data)
        .key_by("user")
        .window(TumblingEventTimeWindows.of(10))
        .allowed_lateness(5)
        .side_output_late_data(LATE)
    )
    counts = windowed.count()
    assert counts.get_type() == Types.ROW_NAMED(
        ["key", "window_start", "window_end", "count"],
        [Types.STRING(), Types.LONG(), Types.LONG(), Types.LONG()],
    )
    # both windows fire at watermark 11, in the runtime's order of keys (their key groups)
    assert [tuple(r) for r in counts.execute_and_collect()] == [
        ("b", 0, 10, 1),
        ("a", 0, 10, 1),
        ("a", 0, 10, 2),
        ("a", 10, 20, 1),
        ("a", 20, 30, 1),
    ]
    assert list(counts.get_side_output(LATE).execute_and_collect()) == [row("b", 7, 9)]


def test_agg_emits_named_rows_with_sql_null_handling() -> None:
    data = [row("a", 1, None, 2.5), row("a", 3, 4, None), row("a", 5, -2, 0.5)]
    data += [row("b", 2, None, None), row("a", 14, None, None)]
    result = (
        rows_stream(env(), data)
        .key_by("user")
        .window(TumblingEventTimeWindows.of(10))
        .agg(
            n=Agg.count(),
            total=Agg.sum("price"),
            lo=Agg.min("price"),
            hi=Agg.max(2),
            mean=Agg.avg("price"),
            q=Agg.sum("qty"),
            qmax=Agg.max("qty"),
        )
    )
    assert result.get_type().get_field_names() == [
        "key", "window_start", "window_end", "n", "total", "lo", "hi", "mean", "q", "qmax",
    ]  # fmt: skip
    assert result.get_type().get_field_types()[3:] == [
        Types.LONG(), Types.LONG(), Types.LONG(), Types.LONG(), Types.DOUBLE(), Types.DOUBLE(),
        Types.DOUBLE(),
    ]  # fmt: skip
    out = sorted(result.execute_and_collect(), key=lambda r: (r.window_start, r.key))
    assert [r.as_dict() for r in out] == [
        dict(key="a", window_start=0, window_end=10, n=3, total=2, lo=-2, hi=4, mean=1.0,
             q=3.0, qmax=2.5),
        dict(key="b", window_start=0, window_end=10, n=1, total=None, lo=None, hi=None,
             mean=None, q=None, qmax=None),
        dict(key="a", window_start=10, window_end=20, n=1, total=None, lo=None, hi=None,
             mean=None, q=None, qmax=None),
    ]  # fmt: skip


def test_sliding_count_and_session_agg_on_the_general_path() -> None:
    data = [row("a", 1, 1), row("a", 6, 2), row("a", 30, 3), row("b", 31, 4)]
    sliding = rows_stream(env(), data).key_by(0).window(SlidingEventTimeWindows.of(10, 5)).count()
    # one round: the end of input fires every window, key by key (in key-group order)
    assert [tuple(r) for r in sliding.execute_and_collect()] == [
        ("b", 25, 35, 1),
        ("b", 30, 40, 1),
        ("a", -5, 5, 1),
        ("a", 0, 10, 2),
        ("a", 5, 15, 1),
        ("a", 25, 35, 1),
        ("a", 30, 40, 1),
    ]
    sessions = rows_stream(env(), data).key_by("user").window(EventTimeSessionWindows.with_gap(5))
    assert spec_of(sessions.agg(n=Agg.count(), s=Agg.sum("price"))) is None
    out = sessions.agg(n=Agg.count(), s=Agg.sum("price")).execute_and_collect()
    assert [tuple(r) for r in out] == [("b", 31, 36, 1, 4), ("a", 1, 11, 2, 3), ("a", 30, 35, 1, 3)]


def test_agg_with_an_evictor_aggregates_what_the_evictor_keeps() -> None:
    data = [row("a", 1, 1), row("a", 2, 2), row("a", 3, 4), row("b", 4, 8)]
    windowed = rows_stream(env(), data).key_by("user").window(TumblingEventTimeWindows.of(10))
    result = windowed.evictor(CountEvictor.of(2)).agg(n=Agg.count(), s=Agg.sum("price"))
    assert [tuple(r) for r in result.execute_and_collect()] == [
        ("b", 0, 10, 1, 8),
        ("a", 0, 10, 2, 6),
    ]


def test_count_windows_and_window_all_have_no_bounds_or_no_key() -> None:
    data = [row("a", 1, 1), row("a", 2, 2), row("b", 3, 3), row("a", 4, 4)]
    counted = rows_stream(env(), data).key_by("user").count_window(2).agg(s=Agg.sum("price"))
    assert [tuple(r) for r in counted.execute_and_collect()] == [("a", None, None, 3)]
    all_windows = rows_stream(env(), data).window_all(TumblingEventTimeWindows.of(10)).count()
    assert [tuple(r) for r in all_windows.execute_and_collect()] == [(None, 0, 10, 4)]


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        ("sum", [("b", 4, 1, 1.0), ("a", 1, 7, 1.0), ("a", 12, 2, 1.0)]),
        ("min", [("b", 4, 1, 1.0), ("a", 1, 2, 1.0), ("a", 12, 2, 1.0)]),
        ("max", [("b", 4, 1, 1.0), ("a", 1, 5, 1.0), ("a", 12, 2, 1.0)]),
        ("min_by", [("b", 4, 1, 1.0), ("a", 3, 2, 1.0), ("a", 12, 2, 1.0)]),
        ("max_by", [("b", 4, 1, 1.0), ("a", 1, 5, 1.0), ("a", 12, 2, 1.0)]),
    ],
)
def test_field_aggregates_keep_flinks_record_and_set_the_spec(method: str, expected: list) -> None:
    data = [row("a", 1, 5), row("a", 3, 2), row("b", 4, 1), row("a", 12, 2)]
    windowed = rows_stream(env(), data).key_by("user").window(TumblingEventTimeWindows.of(10))
    result = getattr(windowed, method)("price")
    assert result.get_type() == EVENT
    assert [tuple(r) for r in result.execute_and_collect()] == expected
    spec = spec_of(result)
    assert spec.form is OutputForm.FLINK_RECORD
    assert spec.field_aggregate == FieldAggregate(method, "price")
    assert spec.aggregates == ()
    assert spec.output_type == EVENT


def test_general_operator_of_the_spec_equals_the_job() -> None:
    windowed = (
        rows_stream(env(), [row("a", 1, 1)])
        .key_by("user")
        .window(SlidingEventTimeWindows.of(10, 5, 2))
        .allowed_lateness(3)
        .side_output_late_data(LATE)
    )
    spec = spec_of(windowed.agg(n=Agg.count(), s=Agg.sum("price")))
    harness = KeyedOneInputStreamOperatorTestHarness(general_operator(spec), spec.key)
    harness.open()
    for ts, price in [(3, 1), (4, None), (9, 5)]:
        harness.process_element(row("a", ts, price), ts)
    harness.process_watermark(20)
    harness.process_element(row("a", 1, 7), 1)  # too late for every window
    values = [tuple(v) for v in harness.extract_output_values()]
    assert values == [("a", -3, 7, 2, 1), ("a", 2, 12, 3, 6), ("a", 7, 17, 1, 5)]
    assert [r.value for r in harness.get_side_output(LATE)] == [row("a", 1, 7)]


# ------------------------------------------------------------------------------ randomized


class Describe(ProcessWindowFunction):
    """The reference: every named aggregate computed from the window's elements."""

    def process(self, key: Any, context: Any, elements: Any) -> Any:
        w = context.window()
        prices = [e.price for e in elements if e.price is not None]
        qty = [e.qty for e in elements if e.qty is not None]
        total = sum(prices) if prices else None
        yield Row(
            key=key,
            window_start=w.start,
            window_end=w.end,
            n=len(list(elements)),
            total=total,
            lo=min(prices) if prices else None,
            hi=max(prices) if prices else None,
            mean=total / len(prices) if prices else None,
            q=sum(qty) if qty else None,
        )


def _events(draws: list[tuple[str, int, int | None, float | None]]) -> list[Row]:
    """Records about 15 ms apart, each ``back`` ms earlier than its slot: small values are
    in order, large ones late (for the window, for the lateness, or for both)."""
    return [row(k, max(0, i * 15 - back), p, q) for i, (k, back, p, q) in enumerate(draws)]


EVENTS = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "c"]),
        st.one_of(st.integers(0, 5), st.integers(0, 120)),
        st.one_of(st.none(), st.integers(-50, 50)),
        st.one_of(st.none(), st.sampled_from([0.5, 1.25, 3.0])),
    ),
    min_size=6,
    max_size=40,
).map(_events)
ASSIGNERS = st.sampled_from(
    [
        TumblingEventTimeWindows.of(25),
        SlidingEventTimeWindows.of(40, 10),
        SlidingEventTimeWindows.of(30, 20, 5),
        EventTimeSessionWindows.with_gap(15),
    ]
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=EVENTS,
    assigner=ASSIGNERS,
    delay=st.integers(0, 10),
    lateness=st.sampled_from([0, 30, 100]),
    splits=st.integers(1, 3),
    parallelism=st.sampled_from([1, 2]),
    every=st.sampled_from([None, 1, 1, 4]),
)
def test_agg_equals_a_process_window_function_with_a_lambda_key(
    data, assigner, delay, lateness, splits, parallelism, every
) -> None:
    def job(declarative: bool) -> tuple[list, list]:
        stream = rows_stream(env(parallelism, every), data, delay, splits)
        keyed = stream.key_by("user") if declarative else stream.key_by(lambda v: v.user)
        windowed = keyed.window(assigner).allowed_lateness(lateness).side_output_late_data(LATE)
        if declarative:
            result = windowed.agg(
                n=Agg.count(),
                total=Agg.sum("price"),
                lo=Agg.min("price"),
                hi=Agg.max("price"),
                mean=Agg.avg("price"),
                q=Agg.sum("qty"),
            )
        else:
            result = windowed.process(Describe())
        late = list(result.get_side_output(LATE).execute_and_collect())
        return list(result.execute_and_collect()), late

    assert job(True) == job(False)


@settings(max_examples=25, deadline=None)
@given(data=EVENTS, method=st.sampled_from(["sum", "min", "max", "min_by", "max_by"]))
def test_field_aggregates_equal_the_reduce_they_replace(data, method) -> None:
    from sparktide.datastream.aggregations import FieldAggregator

    data = [r for r in data if r.price is not None]

    def job(declarative: bool) -> list:
        keyed = rows_stream(env(2, 3), data, 10, 2).key_by(
            "user" if declarative else (lambda v: v.user)
        )
        windowed = keyed.window(SlidingEventTimeWindows.of(40, 20)).allowed_lateness(15)
        if declarative:
            return list(getattr(windowed, method)("price").execute_and_collect())
        return list(windowed.reduce(FieldAggregator("price", method)).execute_and_collect())

    assert job(True) == job(False)


ALL = (
    ("n", Agg.count()),
    ("s", Agg.sum("price")),
    ("lo", Agg.min("price")),
    ("hi", Agg.max("price")),
    ("m", Agg.avg("price")),
    ("q", Agg.avg("qty")),
)


@settings(max_examples=60, deadline=None)
@given(data=EVENTS, cut=st.integers(0, 40), order=st.permutations(range(len(ALL))))
def test_merged_accumulators_equal_one_accumulator_over_both_parts(data, cut, order) -> None:
    function = NamedAggregatesFunction(named_aggregates(dict(ALL[i] for i in order)))

    def accumulate(values: list[Row]) -> list:
        acc = function.create_accumulator()
        for v in values:
            acc = function.add(v, acc)
        return acc

    whole = function.get_result(accumulate(data))
    merged = function.merge(accumulate(data[:cut]), accumulate(data[cut:]))
    assert function.get_result(merged) == whole
    assert whole[next(i for i, j in enumerate(order) if ALL[j][0] == "n")] == len(data)


def test_a_record_bridging_two_sessions_merges_their_aggregates() -> None:
    data = [row("a", 0, 4, None), row("a", 20, None, 2.0), row("a", 10, 6, 1.0)]
    result = (
        rows_stream(env(every=1), data, delay=20)
        .key_by("user")
        .window(EventTimeSessionWindows.with_gap(12))
        .agg(n=Agg.count(), s=Agg.sum("price"), m=Agg.avg("price"), q=Agg.avg("qty"))
    )
    assert [tuple(r) for r in result.execute_and_collect()] == [("a", 0, 32, 3, 10, 5.0, 1.5)]


# ------------------------------------------------------------------------------ the spec


def _windowed(keyed_by: Any = "user", assigner: Any = None):
    stream = rows_stream(env(), [row("a", 1, 1)])
    return stream.key_by(keyed_by).window(assigner or TumblingEventTimeWindows.of(10))


def test_spec_describes_the_window_when_a_runner_may_run_it_on_columns() -> None:
    windowed = (
        _windowed(2, SlidingEventTimeWindows.of(60, 20, 5))
        .allowed_lateness(7)
        .side_output_late_data(LATE)
    )
    result = windowed.agg(n=Agg.count(), mean=Agg.avg("price"))
    spec = spec_of(result)
    assert spec.key == FieldKey(2)
    assert (spec.size_ms, spec.slide_ms, spec.offset_ms) == (60, 20, 5) and spec.sliding
    assert (spec.allowed_lateness_ms, spec.late_tag) == (7, LATE)
    assert spec.form is OutputForm.NAMED_ROW and spec.field_aggregate is None
    assert spec.aggregates == (
        NamedAggregate(AggregateKind.COUNT, None, "n"),
        NamedAggregate(AggregateKind.AVG, "price", "mean"),
    )
    assert spec.output_type == result.get_type()
    assert result.get_transformation().inputs[0].key_selector == FieldKey(2)
    tumbling = spec_of(_windowed().trigger(EventTimeTrigger.create()).count())
    assert (tumbling.size_ms, tumbling.slide_ms, tumbling.sliding) == (10, 10, False)


@pytest.mark.parametrize(
    "configure",
    [
        pytest.param(lambda: _windowed(lambda v: v.user), id="lambda-key"),
        pytest.param(lambda: _windowed("user", EventTimeSessionWindows.with_gap(5)), id="session"),
        pytest.param(
            lambda: _windowed("user", SlidingProcessingTimeWindows.of(10, 5)), id="processing"
        ),
        pytest.param(lambda: _windowed().trigger(CountTrigger.of(2)), id="trigger"),
        pytest.param(lambda: _windowed().evictor(CountEvictor.of(2)), id="evictor"),
        pytest.param(lambda: _windowed().allowed_lateness(3).evictor(CountEvictor.of(2)), id="e2"),
    ],
)
def test_spec_is_none_off_the_columnar_conditions(configure) -> None:
    for result in (configure().count(), configure().sum("price")):
        assert spec_of(result) is None
    all_windows = rows_stream(env(), []).window_all(TumblingEventTimeWindows.of(10))
    assert spec_of(all_windows.count()) is None
    assert spec_of(_windowed().reduce(lambda a, b: a)) is None


# ------------------------------------------------------------------------------ key_by


def test_key_by_field_name_and_index_on_rows_and_tuples() -> None:
    e = env()
    by_name = rows_stream(e, []).key_by("price")
    assert by_name.get_key_type() == Types.INT() and by_name.get_key_selector() == FieldKey("price")
    assert rows_stream(e, []).key_by(0).get_key_type() == Types.STRING()
    assert rows_stream(e, []).key_by(3, key_type=Types.FLOAT()).get_key_type() == Types.FLOAT()
    tuples = e.from_collection([("x", 1, 2), ("y", 3, 4), ("x", 5, 6)], type_info=PAIR)
    keyed = tuples.key_by(0)
    assert keyed.get_key_type() == Types.STRING()
    assert sorted(keyed.sum(2).execute_and_collect()) == [("x", 1, 2), ("x", 1, 8), ("y", 3, 4)]
    rekeyed = keyed.key_by(2)
    assert rekeyed.get_key_type() == Types.INT()
    untyped = e.from_collection([Row(k="a", v=1), Row(k="a", v=2)]).key_by("k")
    assert untyped.get_key_type() is None
    assert list(untyped.reduce(lambda a, b: Row(k=a.k, v=a.v + b.v)).execute_and_collect())[
        -1
    ] == Row(k="a", v=3)
    numbers = e.from_collection([3, 1, 3], type_info=Types.INT()).key_by(0)
    assert list(numbers.sum(0).execute_and_collect()) == [3, 1, 6]


def test_untyped_streams_key_and_aggregate_with_pickled_types() -> None:
    e = env()
    data = [("a", 1, 2), ("a", 3, 5)]
    stream = e.from_collection(data).assign_timestamps_and_watermarks(strategy(0))
    result = stream.key_by(0).window(TumblingEventTimeWindows.of(10)).agg(s=Agg.sum(2))
    assert result.get_type().get_field_types() == [
        Types.PICKLED_BYTE_ARRAY(), Types.LONG(), Types.LONG(), Types.PICKLED_BYTE_ARRAY(),
    ]  # fmt: skip
    assert [tuple(r) for r in result.execute_and_collect()] == [("a", 0, 10, 7)]


@pytest.mark.parametrize(
    ("selector", "error", "message"),
    [
        ("missing", ValueError, "has no field 'missing'; its fields are ['user', 'ts'"),
        (4, ValueError, "position 4 is out of range for the stream's type"),
        (-1, ValueError, "must be a position >= 0, got -1"),
        (True, TypeError, "must be an int position or a str field name, got bool True"),
        ("", ValueError, "must be a non-empty field name"),
    ],
)
def test_key_by_field_errors_on_a_row_stream(selector, error, message) -> None:
    with pytest.raises(error, match=message.replace("(", r"\(").replace("[", r"\[")):
        rows_stream(env(), []).key_by(selector)


def test_key_by_field_errors_on_tuples_and_plain_values() -> None:
    e = env()
    tuples = e.from_collection([("x", 1, 2)], type_info=PAIR)
    with pytest.raises(ValueError, match="is a tuple, whose fields have positions, not names"):
        tuples.key_by("user")
    with pytest.raises(ValueError, match=r"positions 0..2"):
        tuples.key_by(3)
    with pytest.raises(ValueError, match="only field 0"):
        e.from_collection([1], type_info=Types.INT()).key_by(1)
    untyped = e.from_collection([("x", 1)]).key_by("user").process(_Noop())
    with pytest.raises(TypeError, match="key_by\\('user'\\) cannot read field 'user' of tuple"):
        list(untyped.execute_and_collect())


class _Noop(KeyedProcessFunction):
    def process_element(self, value: Any, ctx: Any) -> Any:
        return iter(())


# ------------------------------------------------------------------------------ agg errors


@pytest.mark.parametrize(
    ("aggregates", "error", "message"),
    [
        ({}, ValueError, "agg\\(\\) needs at least one named aggregate"),
        ({"key": Agg.count()}, ValueError, "aggregate name 'key' clashes with the output field"),
        ({"window_end": Agg.max(2)}, ValueError, "'window_end' clashes"),
        ({"1x": Agg.count()}, ValueError, "'1x' is not a Python identifier"),
        ({"class": Agg.count()}, ValueError, "'class' is not a Python identifier"),
        ({"n": "count"}, TypeError, "aggregate 'n' must be an aggregate made by Agg"),
        ({"s": Agg.sum("user")}, TypeError, "field 'user' is String, not a number"),
        ({"m": Agg.avg("nope")}, ValueError, "has no field 'nope'"),
        ({"m": Agg.min(9)}, ValueError, "position 9 is out of range"),
    ],
)
def test_agg_errors_name_the_problem(aggregates, error, message) -> None:
    with pytest.raises(error, match=message):
        _windowed().agg(**aggregates)


def test_aggregate_and_field_aggregate_argument_errors() -> None:
    with pytest.raises(TypeError, match="got bool True"):
        Agg.sum(True)
    with pytest.raises(TypeError, match=r"got float 1\.5"):
        Agg.max(1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="has no field 'nope'"):
        _windowed().sum("nope")
    with pytest.raises(TypeError, match="got NoneType"):
        _windowed().min_by(None)  # type: ignore[arg-type]


def test_a_spec_that_contradicts_itself_is_refused() -> None:
    count = (NamedAggregate(AggregateKind.COUNT, None, "n"),)
    good = dict(
        key=FieldKey("user"), size_ms=10, slide_ms=5, offset_ms=0, allowed_lateness_ms=0,
        late_tag=None, form=OutputForm.NAMED_ROW, field_aggregate=None, aggregates=count,
        output_type=None,
    )  # fmt: skip
    assert WindowAggregateSpec(**good).panes_per_window == 2
    for change, message in [
        ({"key": lambda v: v}, "key must be a FieldKey"),
        ({"size_ms": 0}, "size_ms must be an int > 0"),
        ({"slide_ms": -5}, "slide_ms must be an int > 0"),
        ({"offset_ms": 5}, "abs\\(offset_ms\\) < slide_ms"),
        ({"allowed_lateness_ms": -1}, "allowed_lateness_ms must be an int >= 0"),
        ({"aggregates": ()}, "a NAMED_ROW spec needs named aggregates"),
        ({"form": OutputForm.FLINK_RECORD}, "a FLINK_RECORD spec needs a field_aggregate"),
    ]:
        with pytest.raises((TypeError, ValueError), match=message):
            WindowAggregateSpec(**{**good, **change})


def test_agg_on_processing_time_windows_keys_by_the_context() -> None:
    builder = WindowOperatorBuilder(TumblingProcessingTimeWindows.of(10))
    aggregates = named_aggregates({"n": Agg.count(), "hi": Agg.max("price")})
    operator = build_window_aggregate(builder, OutputForm.NAMED_ROW, None, aggregates)
    harness = KeyedOneInputStreamOperatorTestHarness(operator, lambda v: v.user.upper())
    harness.open()
    harness.set_processing_time(3)
    for r in [row("a", 0, 4), row("b", 0, None), row("a", 0, 9)]:
        harness.process_element(r, None)
    harness.set_processing_time(12)
    harness.process_element(row("a", 0, 1), None)
    harness.set_processing_time(25)
    assert [tuple(v) for v in harness.extract_output_values()] == [
        ("A", 0, 10, 2, 9),
        ("B", 0, 10, 1, None),
        ("A", 10, 20, 1, 1),
    ]


def test_a_named_aggregate_needs_a_field_exactly_unless_it_counts() -> None:
    from sparktide.core.window.aggregates import AggregateKind, NamedAggregate

    with pytest.raises(ValueError, match="'total': sum needs a field"):
        NamedAggregate(AggregateKind.SUM, None, "total")
    with pytest.raises(ValueError, match="'n': count takes no field"):
        NamedAggregate(AggregateKind.COUNT, "price", "n")
    assert NamedAggregate(AggregateKind.COUNT, None, "n").field is None


def test_field_key_reads_rows_of_every_schema_like_read_field() -> None:
    import pickle

    by_name, by_position = FieldKey("user"), FieldKey(1)
    values = [
        Row(user="a", n=1),
        Row(n=2, user="b"),  # the field elsewhere in another schema
        Row(user="c", n=3),
        Row("d", "e"),  # no names: by position only
        ("f", "g"),
        Row(user="h", user2="i", n=4),
    ]
    for _ in range(2):  # the second time from the remembered positions
        assert [by_name(v) for v in (values[0], values[1], values[2], values[5])] == list("abch")
        assert [by_position(v) for v in values] == [1, "b", 3, "e", "g", "i"]
    with pytest.raises(TypeError, match=r"key_by\('user'\) cannot read field 'user' of Row"):
        by_name(Row(name="x"))
    with pytest.raises(TypeError, match="a tuple has positions only"):
        by_name(("a", 1))
    assert FieldKey(0)(7) == 7  # a plain value is field 0
    copy = pickle.loads(pickle.dumps(by_name))
    assert copy == by_name and copy(Row(user="z", n=0)) == "z"
