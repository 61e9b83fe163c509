"""Values as typed Arrow columns between stages: exact round trips, or the pickled form."""

from __future__ import annotations

import datetime as dt
import math
import pickle
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparktide.common import Duration, WatermarkStrategy
from sparktide.common.typeinfo import TypeInformation, Types
from sparktide.common.types import Row, RowKind
from sparktide.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from sparktide.datastream.state import ValueStateDescriptor
from sparktide.runtime.elements import StreamRecord, Watermark
from sparktide.runtime.execution.arrow_values import (
    ArrowValues,
    ValueCodec,
    arrow_pays,
    decode_values,
)
from sparktide.runtime.execution.protocol import (
    pack_collected,
    pack_entries,
    unpack_collected,
    unpack_entries,
)
from sparktide.spark import spark_job
from sparktide.spark.executor import SparkExecutor

INT64 = (-(2**63), 2**63 - 1)


def same(a: Any, b: Any) -> bool:
    """``a`` and ``b`` are the same value: equal, of the same types all the way down, rows
    with the same field names and kind, floats with the same bits (NaN, -0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1, a) == math.copysign(1, b)
        )
    if isinstance(a, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Row):
        (fa, va, ka), (fb, vb, kb) = a.__reduce__()[1], b.__reduce__()[1]
        return fa == fb and ka is kb and same(va, vb)
    if isinstance(a, (dt.time, dt.datetime)):
        return a == b and a.tzinfo is b.tzinfo and a.fold == b.fold
    return bool(a == b)


# ------------------------------------------------------------------ declared types, values

_SCALARS: list[tuple[TypeInformation, st.SearchStrategy[Any]]] = [
    (Types.BYTE(), st.integers(-128, 127)),
    (Types.SHORT(), st.integers(-(2**15), 2**15 - 1)),
    (Types.INT(), st.integers(-(2**31), 2**31 - 1)),
    (Types.LONG(), st.integers(*INT64)),
    (Types.BIG_INT(), st.integers(*INT64)),
    (Types.FLOAT(), st.floats(width=32)),
    (Types.DOUBLE(), st.floats()),
    (Types.BOOLEAN(), st.booleans()),
    # text UTF-8 can hold (a lone surrogate cannot: it stays pickled, see _MISMATCHES)
    (Types.STRING(), st.text(st.characters(codec="utf-8"))),
    (Types.CHAR(), st.characters(codec="utf-8")),
    (Types.SQL_DATE(), st.dates()),
    (Types.LOCAL_DATE(), st.dates()),
    (
        Types.SQL_TIME(),
        st.times().map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000, fold=0)),
    ),
    (Types.LOCAL_TIME(), st.times().map(lambda t: t.replace(fold=0))),
    (Types.SQL_TIMESTAMP(), st.datetimes().map(lambda t: t.replace(fold=0))),
    (Types.LOCAL_DATE_TIME(), st.datetimes().map(lambda t: t.replace(fold=0))),
]


@st.composite
def typed(draw: st.DrawFn, depth: int = 2) -> tuple[TypeInformation, st.SearchStrategy[Any]]:
    """A declared type and a strategy of values of exactly its shape (``None`` in scalar
    fields: an Arrow null comes back as ``None``)."""
    kind = draw(st.sampled_from(["scalar", "tuple", "row", "row_named"] if depth else ["scalar"]))
    if kind == "scalar":
        info, values = draw(st.sampled_from(_SCALARS))
        return info, st.none() | values if depth < 2 else values
    fields = draw(st.lists(typed(depth - 1), min_size=1, max_size=4))
    types = [t for t, _ in fields]
    field_values = st.tuples(*(v for _, v in fields))
    if kind == "tuple":
        return Types.TUPLE(types), field_values
    names = [f"n{i}" for i in range(len(types))]
    info = Types.ROW_NAMED(names, types) if kind == "row_named" else Types.ROW(types)
    row_names = draw(
        st.sampled_from(
            [names, None] if kind == "row_named" else [[f"f{i}" for i in range(len(types))], None]
        )
    )
    row_kind = draw(st.sampled_from(list(RowKind)))
    return info, field_values.map(lambda v: Row.of_values(list(v), row_names, row_kind))


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_values_of_their_declared_shape_round_trip_exactly(data: st.DataObject) -> None:
    info, values = data.draw(typed())
    chunk = data.draw(st.lists(values, min_size=1, max_size=20))
    codec = ValueCodec.of(info)
    assert codec is not None
    encoded = codec.encode(chunk)
    assert encoded is not None, (info, chunk)
    assert isinstance(encoded, ArrowValues)
    back = decode_values(pickle.loads(pickle.dumps(encoded, 5)))
    assert len(back) == len(chunk)
    assert all(same(a, b) for a, b in zip(back, chunk, strict=True)), (info, chunk, back)


_MISMATCHES: list[tuple[TypeInformation, list[Any]]] = [
    (Types.LONG(), [1, 2**63]),  # beyond int64
    (Types.LONG(), [1, -(2**63) - 1]),
    (Types.LONG(), [1, 1.0]),  # a float where an int is declared
    (Types.LONG(), [1, True]),  # a bool is not an int here
    (Types.INT(), [RowKind.INSERT]),  # an int subclass
    (Types.DOUBLE(), [1.0, 1]),  # an int where a float is declared: kept as it is
    (Types.STRING(), ["a", "\ud800"]),  # not encodable as UTF-8
    (Types.STRING(), ["a", b"a"]),
    (Types.TUPLE([Types.LONG(), Types.LONG()]), [(1, 2), [1, 2]]),  # a list
    (Types.TUPLE([Types.LONG(), Types.LONG()]), [(1, 2), (1, 2, 3)]),  # another arity
    (Types.TUPLE([Types.LONG(), Types.LONG()]), [(1, 2), None]),
    (Types.TUPLE([Types.LONG(), Types.ROW([Types.LONG()])]), [(1, Row(1)), (1, None)]),
    (Types.ROW_NAMED(["a"], [Types.LONG()]), [Row(a=1), Row(b=1)]),  # other names
    (Types.ROW_NAMED(["a"], [Types.LONG()]), [Row(a=1), Row.of_kind(RowKind.DELETE, 1)]),
    (Types.ROW_NAMED(["a"], [Types.LONG()]), [Row(a=1), (1,)]),
    (Types.SQL_DATE(), [dt.date(2020, 1, 1), dt.datetime(2020, 1, 1)]),
    (Types.SQL_TIMESTAMP(), [dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)]),
    (Types.LOCAL_TIME(), [dt.time(1, fold=1)]),
]


@pytest.mark.parametrize(("info", "values"), _MISMATCHES)
def test_a_value_off_its_declared_shape_keeps_the_chunk_pickled(
    info: TypeInformation, values: list[Any]
) -> None:
    codec = ValueCodec.of(info)
    assert codec is not None
    assert codec.encode(values) is None
    records = [
        ((0, 0, 0, i, 0), 0, 1, StreamRecord(v, i), None, None) for i, v in enumerate(values)
    ]
    back = unpack_entries(pack_entries(records, {1: codec}))
    assert all(same(a[3].value, b[3].value) for a, b in zip(back, records, strict=True))


def test_types_without_columns_stay_pickled() -> None:
    for info in (Types.PICKLED_BYTE_ARRAY(), Types.BIG_DEC(), Types.LIST(Types.LONG()), None):
        assert ValueCodec.of(info) is None
    assert (
        ValueCodec.of(Types.TUPLE([Types.LONG(), Types.MAP(Types.STRING(), Types.LONG())])) is None
    )


def test_only_rows_dates_and_times_travel_as_arrow_by_default() -> None:
    assert arrow_pays(Types.ROW([Types.LONG()]))
    assert arrow_pays(Types.TUPLE([Types.LONG(), Types.SQL_TIMESTAMP()]))
    assert not arrow_pays(Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG()]))
    assert ValueCodec.of(Types.LONG(), always=False) is None
    assert ValueCodec.of(Types.ROW([Types.LONG()]), always=False) is not None


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.tuples(st.text(max_size=3), st.integers(*INT64), st.none() | st.integers(*INT64)),
        min_size=1,
        max_size=30,
    ),
    st.sampled_from([1, 2]),
)
def test_chunks_of_entries_and_collected_records_round_trip(
    rows: list[tuple[str, int, int | None]], input_index: int
) -> None:
    info = Types.ROW_NAMED(["k", "v"], [Types.STRING(), Types.LONG()])
    codec = ValueCodec.of(info)
    values = [Row(k=k, v=v) for k, v, _ in rows]
    entries = [
        ((0, 0, 0, i, 0), i % 3, input_index, StreamRecord(v, ts), v["k"], i % 7)
        for i, (v, (_, _, ts)) in enumerate(zip(values, rows, strict=True))
    ]
    payload = pack_entries(entries, {input_index: codec})
    assert isinstance(pickle.loads(payload)[1], ArrowValues)
    back = unpack_entries(payload)
    assert back == entries
    assert all(same(a[3].value, b[3].value) for a, b in zip(back, entries, strict=True))
    other = pack_entries(entries, {3 - input_index: codec})  # no codec for this input
    assert type(pickle.loads(other)[1]) is list and unpack_entries(other) == entries
    collected = [(e[0], e[3]) for e in entries]
    assert unpack_collected(pack_collected(collected, codec)) == collected


def test_chunks_of_watermarks_and_of_two_inputs_stay_as_they_were() -> None:
    codec = ValueCodec.of(Types.ROW([Types.LONG()]))
    marks = [((0, 1, 0, 1, 1), 0, 1, Watermark(5), None, None)]
    assert unpack_entries(pack_entries(marks, {1: codec})) == marks  # type: ignore[arg-type]
    mixed = [
        ((0, 0, 0, 1, 0), 0, 1, StreamRecord(Row(1), 1), 1, 0),
        ((0, 0, 0, 2, 0), 0, 2, StreamRecord(Row(2), 2), 2, 0),
    ]
    payload = pack_entries(mixed, {1: codec, 2: codec})  # type: ignore[arg-type]
    assert type(pickle.loads(payload)[1]) is list
    assert unpack_entries(payload) == mixed


# ------------------------------------------------------------------ end to end on Spark

_EVENT = Types.ROW_NAMED(
    ["key", "n", "x", "at"], [Types.STRING(), Types.LONG(), Types.DOUBLE(), Types.SQL_TIMESTAMP()]
)
_OUT = Types.TUPLE([Types.STRING(), Types.LONG(), Types.ROW([Types.LONG(), Types.DOUBLE()])])


class _Summary(KeyedProcessFunction):
    """Per key: count and sum in state, a timer per record; emits rows and tuples."""

    def open(self, runtime_context: Any) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value: Any, ctx: Any) -> Any:
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 50)
        yield (value["key"], n, Row(value["n"], value["x"]))

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        yield (ctx.get_current_key(), timestamp, Row(self.count.value(), None))


def _event(record: tuple[str, int, float | None, int]) -> Row:
    key, n, x, ts = record
    at = dt.datetime(2024, 1, 1) + dt.timedelta(milliseconds=ts)
    return Row(key=key, n=n, x=x, at=at)


def _keyed_job(records: list[tuple[str, int, float | None, int]]) -> Any:
    env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
    env.set_parallelism(2)
    env.get_config().set_watermark_every(7)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(20)
    ).with_timestamp_assigner(lambda v, previous: v[3])
    events = (
        env.from_collection(records)
        .assign_timestamps_and_watermarks(strategy)
        .map(_event, output_type=_EVENT)
    )
    out = events.key_by(lambda r: r["key"]).process(_Summary(), output_type=_OUT)
    pairs = Types.TUPLE([Types.ROW([Types.LONG(), Types.DOUBLE()]), Types.STRING()])
    return env, out.key_by(lambda t: t[1] % 3).map(lambda t: (t[2], t[0]), output_type=pairs)


def test_a_keyed_job_gives_the_same_output_with_and_without_arrow_values(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    rnd = random.Random(15)
    records = [
        (
            rnd.choice(["a", "b", "ü", ""]),
            rnd.randrange(-(2**63), 2**63),
            rnd.choice([None, rnd.random()]),
            rnd.randrange(2000),
        )
        for _ in range(200)
    ]
    outputs = []
    for arrow in (True, False):
        monkeypatch.setattr(spark_job, "_ARROW_VALUES", arrow)
        env, out = _keyed_job(records)
        job = SparkExecutor(env.get_stream_graph(), env).job()  # the job the workers get
        codecs = [job.stage_codecs(s.index)[1] for s in job.plan.stages]
        assert all((c is not None) is arrow for c in codecs)
        outputs.append(list(out.execute_and_collect()))
    with_arrow, pickled = outputs
    assert len(with_arrow) == len(pickled) > 200
    assert all(same(a, b) for a, b in zip(with_arrow, pickled, strict=True))


def test_by_default_only_the_stages_of_rows_get_arrow_values(spark: Any) -> None:
    env, out = _keyed_job([("a", 1, 0.5, 1)])
    out.print()
    job = SparkExecutor(env.get_stream_graph(), env).job()
    codecs = [job.stage_codecs(s.index)[1] for s in job.plan.stages]
    assert [c is not None for c in codecs] == [True, True]  # the rows; the tuples hold a row
