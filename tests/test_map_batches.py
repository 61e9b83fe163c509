"""``DataStream.map_batches``: the vectorized map over Arrow batches (or pandas frames).

The contract (columns in, columns out, one row per row, timestamps kept), the batches (size,
ended by watermarks, statuses, the end of input), the errors, and the differential test: on
random out-of-order input with late records, a keyed event-time window after ``map_batches``
gives exactly the output of the same job with ``map`` and the per-record function, at
parallelism 1, 2 and 4, on the local runtime and on Spark.
"""

from __future__ import annotations

import datetime as dt
import decimal
import random

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from sparktide.common import Duration, Row, Time, Types
from sparktide.common.watermark_strategy import WatermarkStrategy
from sparktide.datastream import (
    KeyedProcessFunction,
    OutputTag,
    ProcessFunction,
    ProcessWindowFunction,
    StreamExecutionEnvironment,
)
from sparktide.datastream.source import CollectionSource
from sparktide.datastream.state import ValueStateDescriptor
from sparktide.datastream.window import TumblingEventTimeWindows
from sparktide.runtime.elements import StreamRecord, Watermark, WatermarkStatus
from sparktide.runtime.failures import notes
from sparktide.runtime.operators.batch_columns import BatchColumns
from sparktide.runtime.operators.map_batches import BatchFormat, MapBatchesOperator
from sparktide.testing import OneInputStreamOperatorTestHarness

EVENT = Types.ROW_NAMED(
    ["key", "ts", "v", "price"], [Types.STRING(), Types.LONG(), Types.LONG(), Types.DOUBLE()]
)
SIZE_KEY = "sparktide.execution.map-batches.size"
LATE = OutputTag("late", EVENT)


def local_env(parallelism: int = 1) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment(runtime="local")
    env.set_parallelism(parallelism)
    return env


def collect(stream) -> list:
    return list(stream.execute_and_collect())


# ------------------------------------------------------------------------------ the contract


def test_a_named_row_arrives_as_its_columns_and_rows_come_back_as_records():
    seen = []

    def euros(batch: pa.RecordBatch) -> pa.RecordBatch:
        seen.append(batch.schema.names)
        return batch.set_column(3, "price", pc.multiply(batch.column("price"), 0.908))

    env = local_env()
    rows = [Row(key="a", ts=1, v=2, price=10.0), Row(key="b", ts=2, v=3, price=None)]
    out = collect(env.from_collection(rows, type_info=EVENT).map_batches(euros, EVENT))
    assert out == [Row(key="a", ts=1, v=2, price=10.0 * 0.908), Row(key="b", ts=2, v=3, price=None)]
    assert seen == [["key", "ts", "v", "price"]]


def test_a_single_value_is_the_column_value_and_a_tuple_the_columns_f0_f1():
    env = local_env()
    longs = env.from_collection([1, 2, 3], type_info=Types.LONG())
    pairs = longs.map_batches(
        lambda b: pa.table(
            {
                "f0": pc.multiply(b.column("value"), 10),
                "f1": pc.cast(b.column("value"), pa.string()),
            }
        ),
        Types.TUPLE([Types.LONG(), Types.STRING()]),
    )
    assert collect(pairs) == [(10, "1"), (20, "2"), (30, "3")]


def test_pandas_frames_in_and_out():
    pd = pytest.importorskip("pandas")
    frames = []

    def double(df):
        frames.append(type(df))
        return pd.DataFrame({"value": df["value"] * 2.0})

    env = local_env()
    out = env.from_collection([1.5, 2.5], type_info=Types.DOUBLE()).map_batches(
        double, Types.DOUBLE(), batch_format="pandas"
    )
    assert collect(out) == [3.0, 5.0]
    assert frames == [pd.DataFrame]


def test_a_column_that_casts_keeping_its_values_is_taken():
    env = local_env()
    out = env.from_collection([1, 2], type_info=Types.LONG()).map_batches(
        lambda b: pa.record_batch({"value": pc.cast(b.column(0), pa.int32())}), Types.LONG()
    )
    assert collect(out) == [1, 2]
    floats = env.from_collection([1, 2], type_info=Types.LONG()).map_batches(
        lambda b: pa.record_batch({"value": b.column(0)}), Types.DOUBLE()
    )
    result = collect(floats)
    assert result == [1.0, 2.0] and all(type(v) is float for v in result)


def test_the_output_type_coerces_as_map_does():
    env = local_env()
    out = env.from_collection([0.1], type_info=Types.DOUBLE()).map_batches(
        lambda b: b, Types.FLOAT()
    )
    expected = collect(
        env.from_collection([0.1], type_info=Types.DOUBLE()).map(lambda v: v, Types.FLOAT())
    )
    assert collect(out) == expected != [0.1]


FLAT = {
    "LONG": (Types.LONG(), 5),
    "INT": (Types.INT(), -3),
    "SHORT": (Types.SHORT(), 7),
    "BYTE": (Types.BYTE(), 1),
    "FLOAT": (Types.FLOAT(), 0.1),
    "DOUBLE": (Types.DOUBLE(), 0.1),
    "BOOLEAN": (Types.BOOLEAN(), True),
    "STRING": (Types.STRING(), "é"),
    "CHAR": (Types.CHAR(), "c"),
    "BIG_INT": (Types.BIG_INT(), 2**40),
    "BIG_DEC": (Types.BIG_DEC(), decimal.Decimal("1.25")),
    "SQL_DATE": (Types.SQL_DATE(), dt.date(2020, 1, 2)),
    "SQL_TIME": (Types.SQL_TIME(), dt.time(1, 2, 3)),
    "SQL_TIMESTAMP": (Types.SQL_TIMESTAMP(), dt.datetime(2020, 1, 2, 3, 4, 5, 6000)),
    "LOCAL_DATE": (Types.LOCAL_DATE(), dt.date(2020, 1, 2)),
    "LOCAL_TIME": (Types.LOCAL_TIME(), dt.time(1, 2, 3, 4)),
    "LOCAL_DATE_TIME": (Types.LOCAL_DATE_TIME(), dt.datetime(2020, 1, 2, 3, 4, 5, 6)),
    "BYTES": (Types.PRIMITIVE_ARRAY(Types.BYTE()), b"ab"),
}


@pytest.mark.parametrize("fmt", ["pyarrow", "pandas"])
@pytest.mark.parametrize("name", sorted(FLAT))
def test_every_flat_type_comes_back_as_map_gives_it(name, fmt):
    if fmt == "pandas":
        pytest.importorskip("pandas")
    field, value = FLAT[name]
    row = Types.ROW_NAMED(["x", "n"], [field, Types.LONG()])
    env = local_env()
    stream = env.from_collection([Row(x=value, n=1), Row(x=None, n=None)], type_info=row)
    expected = collect(stream.map(lambda r: r, row))
    got = collect(stream.map_batches(lambda b: b, row, batch_format=fmt))
    assert got == expected
    assert [type(r.x) for r in got] == [type(r.x) for r in expected]


def test_an_instant_has_no_batch_column():
    env = local_env()
    stream = env.from_collection([1], type_info=Types.LONG())
    with pytest.raises(TypeError, match=r"column 'value' \(Instant\) is not flat.*LOCAL_DATE_TIME"):
        stream.map_batches(lambda b: b, Types.INSTANT())


def test_timestamps_are_kept_row_by_row():
    class Stamp(KeyedProcessFunction):
        def process_element(self, value, ctx):
            yield value, ctx.timestamp()

    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        lambda v, _: v * 100
    )
    env = local_env()
    out = (
        env.from_collection([3, 1, 2], type_info=Types.LONG())
        .assign_timestamps_and_watermarks(strategy)
        .map_batches(lambda b: pa.record_batch({"value": pc.add(b.column(0), 1)}), Types.LONG())
        .key_by(lambda v: 0)
        .process(Stamp())
    )
    assert collect(out) == [(4, 300), (2, 100), (3, 200)]


# ------------------------------------------------------------------------------ batches


def harness(
    function, size: int, fmt: BatchFormat = BatchFormat.PYARROW
) -> OneInputStreamOperatorTestHarness:
    columns = BatchColumns.of(Types.LONG())
    h = OneInputStreamOperatorTestHarness(MapBatchesOperator(function, columns, columns, fmt, size))
    h.open()
    return h


def test_a_batch_ends_at_its_size_at_watermarks_statuses_and_the_end_of_input():
    sizes: list[int] = []

    def identity(batch):
        sizes.append(batch.num_rows)
        return batch

    h = harness(identity, size=3)
    for i in range(7):
        h.process_element(StreamRecord(i, i))
    assert sizes == [3, 3] and h.operator.held == 1
    h.process_watermark(Watermark(6))
    assert sizes == [3, 3, 1]
    assert h.get_output()[-2:] == [StreamRecord(6, 6), Watermark(6)]
    h.process_element(StreamRecord(7, 7))
    h.operator.process_watermark_status(WatermarkStatus.IDLE)
    assert sizes == [3, 3, 1, 1] and h.get_output()[-2] == StreamRecord(7, 7)
    h.process_element(StreamRecord(8, 8))
    h.operator.finish()
    assert sizes == [3, 3, 1, 1, 1]
    assert [r.value for r in h.get_output() if isinstance(r, StreamRecord)] == list(range(9))


def test_the_batch_size_is_a_configuration_option():
    env = local_env()
    env.configure({SIZE_KEY: "2"})
    # the function is copied into the job: each row tells the size of its batch
    counted = collect(
        env.from_collection(range(5), type_info=Types.LONG()).map_batches(
            lambda b: pa.record_batch({"value": pa.array([b.num_rows] * b.num_rows, pa.int64())}),
            Types.LONG(),
        )
    )
    assert counted == [2, 2, 2, 2, 1]
    env.configure({SIZE_KEY: "0"})
    with pytest.raises(ValueError, match=f"{SIZE_KEY} must be an int >= 1, got 0"):
        env.from_collection([1], type_info=Types.LONG()).map_batches(lambda b: b, Types.LONG())
    with pytest.raises(ValueError, match=SIZE_KEY):
        env.configure({SIZE_KEY: "many"})


# ------------------------------------------------------------------------------ errors


def run_failing(function, output_type=None, name="Convert"):
    env = local_env()
    stream = (
        env.from_collection([1, 2, 3], type_info=Types.LONG())
        .map_batches(function, Types.LONG() if output_type is None else output_type)
        .name(name)
    )
    return collect(stream)


def test_another_row_count_is_refused_naming_the_operator():
    with pytest.raises(
        ValueError, match=r"map_batches: the function returned 2 rows for a batch of 3"
    ) as info:
        run_failing(lambda b: b.slice(0, 2))
    assert any("raised by operator 'Convert'" in note for note in notes(info.value))


def test_a_missing_or_extra_column_is_refused_naming_it():
    with pytest.raises(
        TypeError,
        match=r"map_batches.*columns \['value'\].*missing \['value'\], not declared \['x'\]",
    ):
        run_failing(lambda b: b.rename_columns(["x"]))


def test_a_column_of_the_wrong_type_is_refused_naming_it_and_the_expected_type():
    with pytest.raises(
        TypeError,
        match=r"map_batches: column 'value' is string, expected int64 \(the declared Long\)",
    ) as info:
        run_failing(
            lambda b: pa.record_batch({"value": pc.cast(b.column(0), pa.string())}), name="Parse"
        )
    assert any("raised by operator 'Parse'" in note for note in notes(info.value))
    with pytest.raises(TypeError, match=r"column 'value' is double, expected int64"):
        run_failing(
            lambda b: pa.record_batch({"value": pc.divide(pc.cast(b.column(0), pa.float64()), 2.0)})
        )
    with pytest.raises(
        TypeError, match=r"column 'value' \(int64\) does not fit int32 \(the declared Integer\)"
    ):
        run_failing(
            lambda b: pa.record_batch({"value": pc.multiply(b.column(0), 2**40)}), Types.INT()
        )


def test_a_result_that_is_no_batch_is_refused():
    with pytest.raises(
        TypeError, match=r"map_batches: the function must return a pyarrow.RecordBatch.*got list"
    ):
        run_failing(lambda b: [1, 2, 3])


def test_records_off_the_streams_type_are_refused_naming_the_column():
    pair = Types.TUPLE([Types.STRING(), Types.LONG()])

    def run_on(values):
        env = local_env()
        stream = env.from_source(
            CollectionSource(values), WatermarkStrategy.no_watermarks(), "s", type_info=pair
        )
        return collect(stream.map_batches(lambda b: b, pair))

    assert run_on([("a", 1)]) == [("a", 1)]
    with pytest.raises(
        TypeError, match=r"map_batches: the input column 'f1' is declared Long but holds str 'x'"
    ):
        run_on([("a", 1), ("b", "x")])
    with pytest.raises(
        TypeError,
        match=r"map_batches: the records must have the 2 fields \['f0', 'f1'\].*got \('c',\)",
    ):
        run_on([("a", 1), ("c",)])


def test_the_types_are_checked_when_the_step_is_built():
    env = local_env()
    untyped = env.from_collection([1, 2])
    with pytest.raises(
        TypeError, match="map_batches: the stream's type must be a declared type with columns"
    ):
        untyped.map_batches(lambda b: b, Types.LONG())
    typed = env.from_collection([1, 2], type_info=Types.LONG())
    nested = Types.ROW_NAMED(["a", "inner"], [Types.LONG(), Types.ROW([Types.LONG()])])
    with pytest.raises(TypeError, match=r"map_batches: output_type: column 'inner'.*is not flat"):
        typed.map_batches(lambda b: b, nested)
    with pytest.raises(
        ValueError, match="batch_format must be one of 'pyarrow', 'pandas', got 'polars'"
    ):
        typed.map_batches(lambda b: b, Types.LONG(), batch_format="polars")
    with pytest.raises(TypeError, match="func must be a callable"):
        typed.map_batches(None, Types.LONG())


def test_a_keyed_stream_refuses_it():
    env = local_env()
    keyed = env.from_collection([1], type_info=Types.LONG()).key_by(lambda v: v)
    with pytest.raises(TypeError, match=r"call it before key_by"):
        keyed.map_batches(lambda b: b, Types.LONG())


def test_with_failed_records_is_refused():
    env = local_env()
    stream = env.from_collection([1], type_info=Types.LONG()).map_batches(lambda b: b, Types.LONG())
    stream.with_failed_records(OutputTag("failed"))
    with pytest.raises(ValueError, match="not supported on the map_batches operator"):
        collect(stream)


# ------------------------------------------------------------------------------ differential


def events(n: int, seed: int) -> list[Row]:
    """Out-of-order events with some late ones (ts far behind), prices with None."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        ts = i * 10 + rng.randrange(0, 80)
        if rng.random() < 0.08:
            ts = max(0, ts - rng.randrange(150, 400))  # late behind a 30 ms bound
        price = None if rng.random() < 0.05 else round(rng.uniform(1, 500), 2)
        out.append(Row(key=f"k{rng.randrange(6)}", ts=ts, v=i, price=price))
    return out


def per_row(r):
    return Row(
        key=r.key.upper(),
        ts=r.ts,
        v=r.v * 3 + 1,
        price=None if r.price is None else r.price * 0.908,
    )


def per_batch(batch: pa.RecordBatch) -> pa.RecordBatch:
    return pa.record_batch(
        {
            "key": pc.utf8_upper(batch.column("key")),
            "ts": batch.column("ts"),
            "v": pc.add(pc.multiply(batch.column("v"), 3), 1),
            "price": pc.multiply(batch.column("price"), 0.908),
        }
    )


def per_frame(df):
    out = df.copy()
    out["key"] = df["key"].str.upper()
    out["v"] = df["v"] * 3 + 1
    out["price"] = df["price"] * 0.908
    return out


class Contents(ProcessWindowFunction):
    def process(self, key, context, elements):
        yield key, context.window().start, [(e.v, e.price) for e in elements]


class Seen(ProcessFunction):
    """What a chained step after the vectorized one sees: each record with the watermark."""

    def process_element(self, value, ctx):
        yield "seen", value.v, ctx.timer_service().current_watermark()


class Split(KeyedProcessFunction):
    """A keyed step before the vectorized one: two outputs per record, one more per timer."""

    def open(self, rc):
        self.count = rc.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        self.count.update((self.count.value() or 0) + 1)
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 25)
        yield value
        yield Row(key=value.key, ts=value.ts, v=-value.v, price=value.price)

    def on_timer(self, timestamp, ctx):
        yield Row(key=ctx.get_current_key(), ts=timestamp, v=self.count.value(), price=None)


def job(env, step, seed: int, keyed_first: bool):
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(30)
    ).with_timestamp_assigner(lambda e, _ts: e[1])
    stream = env.from_source(
        CollectionSource(events(160, seed), num_splits=3), strategy, "events", type_info=EVENT
    )
    if keyed_first:
        stream = stream.key_by(lambda e: e[0]).process(Split(), EVENT)
    else:  # several records of one input reach the step: numbered on from one another
        stream = stream.flat_map(lambda e: [e, e] if e[2] % 5 == 0 else [e], EVENT)
    stepped = step(stream)
    seen = stepped.process(Seen())  # chained: sees the watermarks where map's records do
    windowed = (
        stepped.key_by(lambda e: e.key)
        .window(TumblingEventTimeWindows.of(Time.milliseconds(50)))
        .side_output_late_data(LATE)
    )
    main = windowed.process(Contents())
    late = main.get_side_output(LATE).map(lambda e: ("late", e.key, e.v))
    return main.union(late, seen)


def run(runtime, parallelism, step, seed, keyed_first, size=None):
    env = StreamExecutionEnvironment.get_execution_environment(runtime=runtime)
    env.set_parallelism(parallelism)
    env.get_config().set_watermark_every(7)
    if size is not None:
        env.configure({SIZE_KEY: str(size)})
    return collect(job(env, step, seed, keyed_first))


def with_map(stream):
    return stream.map(per_row, EVENT)


def with_batches(fmt: str):
    function = per_frame if fmt == "pandas" else per_batch
    return lambda stream: stream.map_batches(function, EVENT, batch_format=fmt)


@pytest.mark.parametrize("keyed_first", [False, True], ids=["after-source", "after-keyed-process"])
def test_the_same_output_as_map_on_the_local_runtime(keyed_first):
    for seed in (1, 2):
        expected = run("local", 1, with_map, seed, keyed_first)
        assert any(r[0] == "late" for r in expected), "the input should make some records late"
        for p in (1, 2, 4):
            for size in (3, 4096):
                got = run("local", p, with_batches("pyarrow"), seed, keyed_first, size)
                assert got == expected, f"seed {seed}, parallelism {p}, batch size {size}"
    pytest.importorskip("pandas")
    assert run("local", 2, with_batches("pandas"), 3, keyed_first, 5) == run(
        "local", 2, with_map, 3, keyed_first
    )


@pytest.mark.parametrize("keyed_first", [False, True], ids=["after-source", "after-keyed-process"])
def test_the_same_output_as_map_on_spark(spark, keyed_first):
    seed = 4
    expected = run("local", 1, with_map, seed, keyed_first)
    for p in (1, 2, 4):
        assert run("spark", p, with_batches("pyarrow"), seed, keyed_first, 4) == expected, (
            f"parallelism {p}"
        )


class Forward(KeyedProcessFunction):
    def process_element(self, value, ctx):
        yield value


@pytest.mark.parametrize("vectorized_first", [True, False])
def test_a_stream_feeding_map_batches_and_another_step_keeps_maps_order(vectorized_first):
    """Records of one input reach the vectorized step and a synchronous one; their outputs
    meet again after an exchange in the order ``map`` gives them."""

    def fork(vectorized: bool, parallelism: int) -> list:
        env = local_env(parallelism)
        stream = env.from_collection(list(range(6)), type_info=Types.LONG()).flat_map(
            lambda v: [v, v + 10], Types.LONG()
        )
        if vectorized:
            plus = stream.map_batches(
                lambda b: pa.record_batch({"value": pc.add(b.column(0), 100)}), Types.LONG()
            )
        else:
            plus = stream.map(lambda v: v + 100, Types.LONG())
        plus = plus.flat_map(lambda v: [v, -v], Types.LONG())
        other = stream.map(lambda v: v + 1000, Types.LONG())
        both = plus.union(other) if vectorized_first else other.union(plus)
        return collect(both.key_by(lambda v: 0).process(Forward()))

    expected = fork(False, 1)
    for p in (1, 2, 4):
        assert fork(True, p) == expected, f"parallelism {p}"


def test_a_streaming_job_on_spark_gives_maps_micro_batches(spark, tmp_path):
    """Micro-batches of ``from_stream``: each batch's windows are the ones ``map`` fires."""
    from sparktide.spark.streaming import ParquetBatchSink
    from test_streaming import SCHEMA, _records, _strategy, _write_files

    _write_files(tmp_path / "in", _records(3))

    def times3(stream):
        return stream.map(lambda r: Row(key=r.key, ts=r.ts, v=r.v * 3 + 1), stream.get_type())

    def times3_batches(stream):
        def step(batch):
            return batch.set_column(2, "v", pc.add(pc.multiply(batch.column("v"), 3), 1))

        return stream.map_batches(step, stream.get_type())

    def run(step, name: str) -> dict[str, list]:
        env = StreamExecutionEnvironment.get_execution_environment(runtime="spark")
        env.set_parallelism(2)
        env.configure({SIZE_KEY: "7"})
        frame = (
            spark.readStream.schema(SCHEMA)
            .option("maxFilesPerTrigger", 1)
            .json(str(tmp_path / "in"))
        )
        stream = step(env.from_stream(frame, _strategy(), timestamp_column="ts"))
        (
            stream.key_by(lambda r: r.key)
            .window(TumblingEventTimeWindows.of(Time.milliseconds(2_000)))
            .reduce(
                lambda a, b: Row(key=a.key, ts=max(a.ts, b.ts), v=a.v + b.v),
                output_type=stream.get_type(),
            )
            .sink_to(ParquetBatchSink(str(tmp_path / name)))
        )
        client = env.execute_async(
            checkpoint_location=str(tmp_path / f"{name}-ckpt"), trigger="available_now"
        )
        client.await_termination()
        batches = sorted(p.name for p in (tmp_path / name).iterdir() if p.name.startswith("batch="))
        read = spark.read.parquet
        return {
            b: sorted(tuple(r) for r in read(str(tmp_path / name / b)).collect()) for b in batches
        }

    expected = run(times3, "map")
    assert len(expected) >= 2 and all(expected.values())
    assert run(times3_batches, "map_batches") == expected
